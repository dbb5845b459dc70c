"""Cases of the class ``pass3``: issue #54's third adversarial pass, one group per item of the issue.

App links to graphs too large to build; Ray and training options (an address nothing listens on, budgets
of 10^12 and 2^63 seconds, ``--init-from`` paths, ``--workers 100000``, a missing or folder token file);
``reproduce --only`` that names nothing; a reproduction's journal that is a named pipe, a folder or
tampered with, and a moved run store under ``--resume``; a run's live lock that is a named pipe; a graph
whose compute is all zero; ``graph import`` of code that prints, exits or asks for 10^18 elements; a
read-only run store; a run folder linked from outside the store; published-graph folders with the wrong
files; hostile cluster files and time scales; run ids that are ``/``, hold a control character or 5,000
characters; and malicious pickles that must be refused before they run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from .cases_app import refused
from .cases_runs import first_run, ray_stop
from .cases_store import damage
from .fixtures import (
    CLUSTER,
    FIXTURE_IDS,
    TEXT_SEEDS,
    Case,
    G,
    K,
    Outcome,
    Special,
    cluster_with,
    evil_zip,
    graph_doc,
    jdump,
    makespan_sane,
    malicious_pickle,
    no_pwned,
    replace_with,
    said,
)

BIG = "9223372036854775808"  # 2^63
#: A reproduction of one step of a second: it stores a run with a journal (steps.jsonl) to resume.
REPRODUCE = ["reproduce", "placeto-table1", "--quick", "--only", "cpu/NMT"]
#: A folder of the DOPPLER authors' file names (placelab.reproduce.doppler.AUTHORS_FILES).
AUTHORS_FILE = "authors/gdp_chain_mm_112nodes.txt"
#: The DOPPLER text seed with its first node's costs NaN (line 5).
DOPPLER_NAN = TEXT_SEEDS["doppler-text"].replace(b"2000000000000,8000000000000,", b"nan,nan,")
#: A read-only store: as root a tmpfs mounted read-only over runs/ (a mode is no bar to root), else modes.
READ_ONLY_NEEDS = ("mount",) if os.geteuid() == 0 else ()


def pass3() -> Iterator[Case]:
    """Every item of issue #54, each with its expected outcome (exit 2 with one line, or a clean exit 0)."""
    yield from _ray_and_training()
    yield from _journals()
    yield from _stores()
    yield from _imports()
    yield from _clusters()
    yield from _run_ids_and_pickles()


def _ray_and_training() -> Iterator[Case]:
    case = partial(Case, "pass3")
    for spec in ("gen:nasnet?variant=large&batch=1000000000", "gen:inception-v3?batch=2147483647"):
        yield case(f"app link graph={spec}", [], app={"kind": "link", "params": {"graph": spec}}, check=refused)
    tr = ["train", "--placer", "placeto", "-g", G, "-c", K, "--param", "batch=2"]
    yield case("train --address 127.0.0.1:1", [*tr, "--episodes", "2", "--address", "127.0.0.1:1"], expect="bad",
               timeout=30, teardown=ray_stop)
    for v in ("1e12", BIG):
        yield case(f"train --max-seconds {v}", [*tr, "--episodes", "2", "--max-seconds", v], expect="bad")
    victim = lambda d, env: shutil.copytree(d / "runs" / FIXTURE_IDS["TRAIN"], d / "victim")  # noqa: E731
    for label, ref in [("../victim", "../victim"), ("/abs", "{DIR}/victim"), ("..", ".."), ("''", ""), ("*", "*")]:
        yield case(f"train --init-from {label}", [*tr, "--episodes", "2", "--init-from", ref], store=("TRAIN",),
                   setup=victim, expect="bad")
    yield case("compare --workers 100000", ["compare", G, "-c", K, "--placers", "heft,random", "--workers", "100000",
                                            "--no-save"], expect="bad", timeout=120, teardown=ray_stop)
    sweep = ["sweep", "-g", G, "-c", K, "--placers", "random", "--workers", "2", "--json"]
    for label, path in [("missing", "{DIR}/nosuch"), ("a folder", "{DIR}/tokens")]:
        for mode in ("token", None):
            env = {"RAY_AUTH_TOKEN_PATH": path, **({"RAY_AUTH_MODE": mode} if mode else {})}
            yield case(f"sweep --workers 2, RAY_AUTH_TOKEN_PATH {label}" + (", RAY_AUTH_MODE=token" if mode else ""),
                       sweep, env=env, files={"tokens": Special("dir")}, expect="bad" if mode else "any",
                       timeout=180, teardown=ray_stop)
    for only in ("", ","):
        yield case(f"reproduce --only {only!r}", ["reproduce", "placeto-table1", "--quick", "--only", only],
                   expect="bad")


def _stopped(runs: str = "runs", journal: Callable[[Path], None] | None = None) -> Callable[[Path], None]:
    """An edit after :func:`first_run`: the reproduction in ``runs`` made to look stopped, then ``journal``
    given its journal's path."""
    def edit(d: Path) -> None:
        run = d / runs / (d / "last_id").read_text()
        doc = json.loads((run / "run.json").read_text())
        doc["status"] = "interrupted"
        (run / "run.json").write_text(json.dumps(doc))
        if journal is not None:
            journal(run / "steps.jsonl")
    return edit


def _tampered(change: Callable[[dict], None]) -> Callable[[Path], None]:
    """A journal edit: ``change`` applied to the ``out`` of every line."""
    def edit(path: Path) -> None:
        entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        for e in entries:
            change(e["out"])
        path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return edit


def _moved(d: Path) -> None:
    (d / "old-runs").rename(d / "runs")


def _no(word: str) -> Callable[[Outcome, Path, Any], str | None]:
    """A check: ``word`` (a tampered value) does not reach stdout."""
    return lambda o, d, data: f"{word!r} reached stdout" if word in o.out else None


def _journals() -> Iterator[Case]:
    case = partial(Case, "pass3", timeout=120)
    resume = [*REPRODUCE, "--resume", "@LAST", "--json"]
    journals = {"a named pipe": lambda p: replace_with(p, Special("fifo")),
                "a folder": lambda p: replace_with(p, Special("dir")),
                "makespan_s 'fast'": _tampered(lambda out: [r.update(makespan_s="fast") for r in out["results"]]),
                "results {}": _tampered(lambda out: out.update(results={}))}
    for label, journal in journals.items():
        yield case(f"reproduce --resume, steps.jsonl {label}", resume,
                   setup=first_run([*REPRODUCE, "--json"], _stopped(journal=journal)), check=_no("fast"))
    yield case("reproduce --resume of a moved store", resume, expect="ok", check=said("taken from the journal"),
               setup=first_run([*REPRODUCE, "--json"], lambda d: (_stopped("old-runs")(d), _moved(d)),
                               {"PLACELAB_RUNS_DIR": "{DIR}/old-runs"}))
    yield case("runs delete, .live.lock a named pipe", ["runs", "delete", "{PLACE}"],
               setup=damage(".live.lock", Special("fifo"), "PLACE"))


def read_only_runs(d: Path, env: dict) -> None:
    """A setup: the case's run store read-only (see :data:`READ_ONLY_NEEDS`)."""
    runs = d / "runs"
    if os.geteuid() != 0:
        for p in [*runs.rglob("*"), runs]:
            p.chmod(0o555 if p.is_dir() else 0o444)
        return
    kept = d / "runs.kept"
    runs.rename(kept)
    runs.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(runs)], check=True, capture_output=True)
    shutil.copytree(kept, runs, symlinks=True, dirs_exist_ok=True)
    subprocess.run(["mount", "-o", "remount,ro", str(runs)], check=True, capture_output=True)


def _one_line_only(o: Outcome, d: Path, data: Any) -> str | None:
    """A check: refused before any work (no progress line before the error)."""
    lines = o.err.splitlines()
    return None if o.code != 2 or len(lines) == 1 else f"{len(lines) - 1} lines of work before the refusal"


def _outside(d: Path, env: dict) -> None:
    """The run {PLACE} moved out of the store, a symlink to it left in its place."""
    run = d / "runs" / FIXTURE_IDS["PLACE"]
    shutil.move(run, d / "outside")
    run.symlink_to(d / "outside", target_is_directory=True)


def _outside_kept(deleting: bool) -> Callable[[Outcome, Path, Any], str | None]:
    """A check: the folder behind the link is still there; a delete that said yes removed the link."""
    def check(o: Outcome, d: Path, data: Any) -> str | None:
        if not (d / "outside" / "run.json").is_file():
            return "the folder outside the store, behind the link, was deleted"
        gone = not (d / "runs" / FIXTURE_IDS["PLACE"]).is_symlink()
        return "exit 0 but the link is still in the store" if deleting and o.code == 0 and not gone else None
    return check


def _stores() -> Iterator[Case]:
    case = partial(Case, "pass3")
    zero = graph_doc([{"name": f"z{i}", "compute": 0.0, "output_bytes": 100} for i in range(6)],
                     [{"src": f"z{i}", "dst": f"z{i + 1}"} for i in range(5)])
    for tail in ([], ["--json"]):
        yield case(f"compare on a graph of zero compute{', --json' if tail else ''}",
                   ["compare", "z.json", "-c", K, "--no-save", *tail], files={"z.json": jdump(zero)}, expect="ok",
                   check=makespan_sane, timeout=180)
    ro = partial(case, setup=read_only_runs, needs=READ_ONLY_NEEDS, expect="bad")
    yield ro("compare on a read-only store", ["compare", G, "-c", K, "--placers", "heft,random"], store=("PLACE",),
             check=_one_line_only)
    yield ro("runs delete on a read-only store", ["runs", "delete", "{PLACE}"])
    yield ro("train --resume on a read-only store", ["train", "--resume", "{TRAIN}", "--episodes", "4"])
    for label, argv, expect in [("runs list --json", ["runs", "list", "--json"], "ok"),
                                ("runs show", ["runs", "show", "{PLACE}", "--json"], "any"),
                                ("runs delete", ["runs", "delete", "{PLACE}"], "any")]:
        yield case(f"{label}, run folder a link to outside the store", argv, store=("PLACE",), setup=_outside,
                   expect=expect, check=_outside_kept(label == "runs delete"))
    for label, data in [("a placelab JSON", TEXT_SEEDS["placelab"]), ("DOPPLER text with NaN costs", DOPPLER_NAN)]:
        yield case(f"reproduce --graphs-dir, {label} named like the authors' file",
                   ["reproduce", "doppler-table4", "--quick", "--graphs-dir", "authors"], files={AUTHORS_FILE: data},
                   expect="bad", check=said(r"line \d") if b"nan" in data else None)
    yield case("graph info, DOPPLER text with NaN costs", ["graph", "info", "d.txt", "--json"],
               files={"d.txt": DOPPLER_NAN}, expect="bad", check=said(r"line \d"))


def _imports() -> Iterator[Case]:
    case = partial(Case, "pass3", timeout=180)
    factories = {"printer.py": "import torch\n\ndef f():\n    print('building the model')\n"
                               "    return torch.nn.Sequential(torch.nn.Linear(8, 4))\n",
                 "exits.py": "import sys\n\ndef f():\n    sys.exit(3)\n",
                 "relu.py": "import torch\n\ndef f():\n    return torch.nn.Sequential(torch.nn.ReLU())\n"}
    imp = ["graph", "import", "-o", "out.json"]
    yield case("graph import of a factory that prints, --json", [*imp, "printer.py:f", "--input-shape", "8", "--json"],
               files=factories, expect="ok")
    yield case("graph import of a factory calling sys.exit(3)", [*imp, "exits.py:f", "--input-shape", "8"],
               files=factories, expect="bad")
    yield case("graph import --input-shape 1000000000,1000000000",
               [*imp, "relu.py:f", "--input-shape", "1000000000,1000000000"], files=factories, expect="bad")


def _clusters() -> Iterator[Case]:
    case = partial(Case, "pass3", check=makespan_sane)

    def devices(n: int) -> Callable[[Any], str]:
        return lambda fx: jdump({**CLUSTER, "devices": [{"name": f"gpu:{i}", "kind": "gpu", "memory_bytes": 1e9}
                                                        for i in range(n)]})
    for n in (0, 4097, 10**6):
        yield case(f"cluster file of {n:,} devices", ["place", G, "-c", "x.json", "--placer", "round-robin", "--json"],
                   files={"x.json": devices(n)}, expect="bad", timeout=120)
    fields = {"memory": "devices__1__memory_bytes", "speed": "devices__1__speed",
              "bandwidth": "link__bandwidth_bytes_per_s"}
    for label, path in fields.items():
        for value in ("NaN", "Infinity", "0"):
            expect = "bad" if value == "NaN" or (value == "0" and label != "memory") else "any"
            files = {"x.json": cluster_with(**{path: f"{value}!"})}
            yield case(f"place, cluster file {label} {value}", ["place", "g.json", "-c", "x.json", "--placer",
                                                                "round-robin", "--json"], files=files, expect=expect)
            yield case(f"simulate, cluster file {label} {value}", ["simulate", "g.json", "-c", "x.json", "--placement",
                                                                   "p.json", "--json"], files=files, expect=expect)
    for label, argv in [("place", ["place", G, "-c", "local.json", "--placer", "round-robin"]),
                        ("compare", ["compare", G, "-c", "local.json", "--placers", "round-robin", "--no-save"])]:
        yield case(f"{label} --execute --time-scale 2^63", [*argv, "--execute", "--repeats", "1", "--time-scale", BIG],
                   needs=("local",), expect="bad", timeout=180)


def _run_ids_and_pickles() -> Iterator[Case]:
    case = partial(Case, "pass3", store=("PLACE",), expect="bad")
    commands = {"runs show": ["runs", "show", "ID", "--json"], "runs delete": ["runs", "delete", "ID"],
                "export-trace": ["runs", "export-trace", "ID", "-o", "t.json"],
                "train --resume": ["train", "--resume", "ID"], "sweep --resume": ["sweep", "--resume", "ID"],
                "reproduce --resume": ["reproduce", "placeto-table1", "--quick", "--resume", "ID"]}
    for label, run_id in [("'/'", "/"), ("with a control character", "run\x01id"), ("of 5,000 characters", "r" * 5000)]:
        for name, argv in commands.items():
            yield case(f"{name}, run id {label}", [run_id if a == "ID" else a for a in argv])
    for label, data in [("a malicious pickle", malicious_pickle()), ("a malicious pickle in its zip", evil_zip)]:
        setup = damage("checkpoint.pt", data)
        for name, argv in [("train --resume", ["train", "--resume", "{TRAIN}", "--episodes", "4"]),
                           ("eval", ["eval", "{TRAIN}", "-g", G]),
                           ("train --init-from", ["train", "--placer", "placeto", "-g", G, "-c", K, "--episodes", "2",
                                                  "--init-from", "{TRAIN}"]),
                           ("place --param policy=RUN", ["place", G, "-c", K, "--placer", "placeto", "--param",
                                                         "policy={TRAIN}"])]:
            yield case(f"{name}, checkpoint.pt {label}", argv, store=(), setup=setup, check=no_pwned)
