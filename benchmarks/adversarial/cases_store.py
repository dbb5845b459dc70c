"""Cases of the classes ``store`` (run store corruption) and ``checkpoint`` (checkpoints and policies), and
:func:`damage`, the setup that breaks one file of a fixture run."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from .fixtures import (
    DELETE,
    ESC,
    FIXTURE_IDS,
    Case,
    G,
    K,
    Special,
    evil_zip,
    lists,
    malicious_pickle,
    no_pwned,
    replace_with,
)


def damage(name: str, mutation: Any, run: str = "TRAIN") -> Callable[[Path, dict], None]:
    """A setup: the file ``name`` of the fixture run ``run`` replaced by ``mutation`` (text, bytes, a
    :class:`Special`, or a function of the file's path returning its new bytes, None to leave it)."""
    def setup(d: Path, env: dict) -> None:
        path = d / "runs" / FIXTURE_IDS[run] / name
        data = mutation(path) if callable(mutation) else mutation
        if data is not None:
            replace_with(path, data)
    return setup


def store() -> Iterator[Case]:
    """A corrupt run.json beside a good run in 30 ways, special files, bad run ids and run stores."""
    case = partial(Case, "store")
    good = "{PLACE}"
    values: dict[str, Any] = {
        "not JSON": "{", "empty": "", "a list": "[]",
        "invalid UTF-8": b"\xff\xfe\x00{", "nested 10^5": "[" * 100_000 + "]" * 100_000,
    }
    fields: dict[str, Any] = {
        "makespan fast": ("metrics", "makespan_s", "fast"), "makespan NaN": ("metrics", "makespan_s", "NaN!"),
        "makespan Infinity": ("metrics", "makespan_s", "Infinity!"),
        "makespan 1e999": ("metrics", "makespan_s", "1e999!"),
        "oom string": ("metrics", "oom", "yes"),
        "metrics list": (None, "metrics", []), "status weird": (None, "status", "weird"),
        "created garbage": (None, "created", "yesterday"), "tags string": (None, "tags", "t"),
        "graph null": (None, "graph", None),
        "schema v2": (None, "schema", "placelab.run/2"), "no schema": (None, "schema", DELETE),
        "id traversal": (None, "id", "../../x"),
        "name escape": (None, "name", ESC), "name 1 MB": (None, "name", "n" * 1_000_000),
    }

    def corrupt(mutation: Any) -> Callable[[Path, dict], None]:
        def setup(d: Path, env: dict) -> None:
            src = d / "runs" / FIXTURE_IDS["PLACE"]
            bad = d / "runs" / "20260101-000000-place-bad-0000"
            shutil.copytree(src, bad)
            path = bad / "run.json"
            if isinstance(mutation, tuple):
                doc = json.loads(path.read_text())
                doc["id"] = bad.name
                parent, key, value = mutation
                node = doc if parent is None else doc[parent]
                if value is DELETE:
                    node.pop(key, None)
                    text = json.dumps(doc)
                elif isinstance(value, str) and value.endswith("!"):  # a raw JSON token
                    node[key] = "@@"
                    text = json.dumps(doc).replace('"@@"', value[:-1])
                else:
                    node[key] = value
                    text = json.dumps(doc)
                path.write_text(text)
            else:
                replace_with(path, mutation)
        return setup

    bad = "20260101-000000-place-bad-0000"
    mutations = {**values, **fields, "run.json a folder": Special("dir"), "run.json a fifo": Special("fifo"),
                 "run.json -> /dev/zero": Special("symlink", "/dev/zero"),
                 "run.json sparse 4 GB": Special("sparse", 4 * 2**30),
                 "run.json -> itself": Special("symlink", "run.json")}
    for i, (label, m) in enumerate(mutations.items()):
        yield case(f"runs list --json, {label}", ["runs", "list", "--json"], store=("PLACE",), setup=corrupt(m),
                   check=lists(good), expect="ok")
        if i % 2:
            yield case(f"runs show --json, {label}", ["runs", "show", bad, "--json"], store=("PLACE",),
                       setup=corrupt(m))
    for label in ("makespan NaN", "name escape"):
        yield case(f"runs list (text), {label}", ["runs", "list"], store=("PLACE",), setup=corrupt(mutations[label]),
                   expect="ok")
        yield case(f"runs delete, {label}", ["runs", "delete", bad], store=("PLACE",),
                   setup=corrupt(mutations[label]))
    for name, text in [("schedule_ops.csv", "garbage\n1,2\n"), ("schedule_ops.csv", ""),
                       ("schedule_transfers.csv", "a,b,c\nx,y,z\n"), ("placement.json", "{"),
                       ("graph.json", '{"schema": "placelab.graph/1"}'), ("cluster.json", "[]")]:
        def setup(d: Path, env: dict, name: str = name, text: str = text) -> None:
            (d / "runs" / FIXTURE_IDS["PLACE"] / name).write_text(text)
        yield case(f"export-trace with {name} = {text[:12]!r}", ["runs", "export-trace", good, "-o", "t.json"],
                   store=("PLACE",), setup=setup)
    for label, runs_dir in [("a file", "g.json"), ("missing", "nosuch/runs"), ("a fifo", "fifo"),
                            ("-> /dev/zero", "zero"), ("under a file", "g.json/runs"), ("escape", f"r{ESC}"),
                            ("empty string", "")]:
        files = {"fifo": Special("fifo"), "zero": Special("symlink", "/dev/zero")}
        if label in ("a file", "a fifo", "-> /dev/zero", "escape"):
            yield case(f"runs list --runs-dir {label}", ["runs", "list", "--json", "--runs-dir", runs_dir],
                       files=files)
        else:
            yield case(f"place --save --runs-dir {label}", ["place", G, "-c", K, "--placer", "heft", "--save",
                                                            "--runs-dir", runs_dir], files=files)
    for label, run in [("traversal", "../../etc"), ("empty", ""), ("100 KB", "r" * 100_000), ("escape", f"x{ESC}"),
                       ("absolute", "/tmp")]:
        yield case(f"runs show id {label}", ["runs", "show", run, "--json"], store=("PLACE",), expect="bad")
    for label, run in [("traversal", "../../x"), ("dot", "."), ("slash", "a/b")]:  # inside the case's folder
        yield case(f"runs delete id {label}", ["runs", "delete", run], store=("PLACE",), expect="bad")
    yield case("runs list --kind nosuch", ["runs", "list", "--kind", "nosuch", "--json"], store=("PLACE",))
    yield case("runs list --tag escape", ["runs", "list", "--tag", ESC], store=("PLACE",))
    yield case("stray files in the store", ["runs", "list", "--json"], store=("PLACE",), check=lists(good),
               files={"runs/README": "hi", "runs/.git/x": "x", f"runs/odd {ESC}/run.json": "{}",
                      "runs/loop": Special("symlink", "loop"), "runs/fifo": Special("fifo")}, expect="ok")


def checkpoint() -> Iterator[Case]:
    """Damaged checkpoints (malicious pickles among them), policy.json files and learning curves."""
    case = partial(Case, "checkpoint")

    def torch_bytes(obj_code: str) -> Callable[[Path], bytes]:
        def make(path: Path) -> bytes:
            import io

            import torch

            buf = io.BytesIO()
            torch.save(eval(obj_code, {"torch": torch, "state": lambda: torch.load(path, weights_only=True)}), buf)
            return buf.getvalue()
        return make

    def reshaped(path: Path) -> bytes:
        import io

        import torch

        state = torch.load(path, weights_only=True)

        def grow(x: Any) -> Any:
            if isinstance(x, torch.Tensor):
                return torch.zeros(*(s + 3 for s in x.shape)) if x.dim() else x
            if isinstance(x, dict):
                return {k: grow(v) for k, v in x.items()}
            if isinstance(x, list):
                return [grow(v) for v in x]
            return x
        buf = io.BytesIO()
        torch.save(grow(state), buf)
        return buf.getvalue()

    ckpt = {"random bytes": os.urandom(4096), "empty": b"",
            "truncated": lambda p: p.read_bytes()[:len(p.read_bytes()) // 2],
            "malicious pickle": malicious_pickle(), "malicious pickle in a zip": evil_zip,
            "wrong keys": torch_bytes("{'nothing': torch.zeros(2)}"),
            "wrong shapes": reshaped, "a folder": Special("dir"), "-> /dev/zero": Special("symlink", "/dev/zero"),
            "a fifo": Special("fifo"), "missing": Special("missing"), "sparse 4 GB": Special("sparse", 4 * 2**30)}
    for i, (label, m) in enumerate(ckpt.items()):
        setup = damage("checkpoint.pt", m)
        yield case(f"train --resume, checkpoint {label}", ["train", "--resume", "{TRAIN}", "--episodes", "4"],
                   store=("TRAIN",), setup=setup, check=no_pwned)
        if i % 2 == 0:
            yield case(f"eval, checkpoint {label}", ["eval", "{TRAIN}", "-g", G], store=("TRAIN",),
                       setup=setup, check=no_pwned)
    for label in ("malicious pickle", "wrong shapes"):
        yield case(f"--init-from, checkpoint {label}",
                   ["train", "--placer", "placeto", "-g", G, "-c", K, "--episodes", "2", "--init-from", "{TRAIN}"],
                   store=("TRAIN",), setup=damage("checkpoint.pt", ckpt[label]), check=no_pwned)
    for label in ("random bytes", "-> /dev/zero"):
        yield case(f"place --param policy=RUN, checkpoint {label}",
                   ["place", G, "-c", K, "--placer", "placeto", "--param", "policy={TRAIN}"], store=("TRAIN",),
                   setup=damage("checkpoint.pt", ckpt[label]), check=no_pwned)
    yield case("rnn eval, checkpoint random bytes", ["eval", "{RNN}", "-g", G], store=("RNN",),
               setup=damage("checkpoint.pt", os.urandom(999), "RNN"))

    def policy_edit(edit: Callable[[dict], Any]) -> Callable[[Path], bytes]:
        def make(path: Path) -> bytes:
            doc = json.loads(path.read_text())
            out = edit(doc)
            return json.dumps(doc if out is None else out).encode()
        return make

    policies: dict[str, Any] = {
        **{f"no {k}": policy_edit(lambda d, k=k: d.pop(k)) for k in ("placer", "config", "cluster")},
        "placer heft": policy_edit(lambda d: d.update(placer="heft")),
        "placer nosuch": policy_edit(lambda d: d.update(placer="nosuch")),
        "num_devices 10^12": policy_edit(lambda d: d.update(num_devices=10**12)),
        "config list": policy_edit(lambda d: d.update(config=[1])),
        "config hidden 10^10": policy_edit(lambda d: d["config"].update(hidden=10**10)),
        "cluster garbage": policy_edit(lambda d: d.update(cluster={"schema": "x"})),
        "not JSON": "{", "a list": "[]", "a folder": Special("dir"),
    }
    for label, m in policies.items():
        setup = damage("policy.json", m)
        yield case(f"eval, policy {label}", ["eval", "{TRAIN}", "-g", G], store=("TRAIN",), setup=setup)
        if label in ("no config", "num_devices 10^12", "a folder"):
            yield case(f"train --resume, policy {label}", ["train", "--resume", "{TRAIN}", "--episodes", "4"],
                       store=("TRAIN",), setup=setup)
    for label, text in [("garbage", "x,y\n1,2\n"), ("NaN rows", None)]:
        def curve(path: Path, text: str | None = text) -> bytes:
            if text is not None:
                return text.encode()
            lines = path.read_text().splitlines()
            return "\n".join([lines[0], *(",".join("nan" for _ in line.split(",")) for line in lines[1:])]).encode()
        yield case(f"train --resume, learning curve {label}",
                   ["train", "--resume", "{TRAIN}", "--episodes", "4"], store=("TRAIN",),
                   setup=damage("learning_curve.csv", curve))
