"""What every case module shares: the :class:`Case` record, the values and files cases are built from, the
checks a case may add to its verdict, and the fixtures (runs, a calibrated cluster, TensorFlow-made model
files) built once per pass and copied into the cases that name them.

A case's folder always holds :data:`BASE_FILES`; a case names fixture runs as ``{PLACE}``, ``{TRAIN}``,
``{RNN}`` or ``{SWEEP}`` in its command (the runner copies them into ``runs/`` and writes their ids in),
the run its setup stored last as ``@LAST``, and its own folder as ``{DIR}``.
"""

from __future__ import annotations

import io
import json
import math
import os
import pickle
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import PLACELAB, TEXT_SEEDS, make_tf_seeds  # valid files of every importer format (tests/fuzz)

G = "gen:random?ops=12&seed=1"  # small, fast
K = "k80x2"
#: Control characters (tab and newline aside), DEL, C1 controls and bidirectional overrides: never raw in output.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
INT_VALUES = ["9223372036854775807", "-1", "0", "2147483648", "9223372036854775808", "1e3", "nan", "abc"]
INT_BAD = ["-1", "2147483648", "9223372036854775808", "nan", "abc"]
FLOAT_VALUES = ["nan", "1e308", "-1", "0", "inf", "-inf", "1e309", "abc"]
ESC = "\x1b]0;owned\x07\x1b[2J\u202e"  # a title change, a bell, clear screen, a bidi override
#: The fixture runs a case may name in its command (``{PLACE}`` ...), built by :meth:`Fixtures.build_runs`.
RUN_TOKENS = ("PLACE", "TRAIN", "RNN", "SWEEP")
#: ``{TOKEN}`` → the id of that fixture run in this pass (filled by :meth:`Fixtures.build_runs`).
FIXTURE_IDS: dict[str, str] = {}


def some(values: list[str], i: int, k: int) -> list[str]:
    """``k`` of ``values``: the first two, then the others in turn from ``i`` (each option gets other extremes)."""
    rest = values[2:]
    return values[:2] + [rest[(i + j) % len(rest)] for j in range(k - 2)]


# ---- cases -------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """One finished process: exit code (None: killed after the timeout), stdout, stderr, wall seconds."""
    code: int | None
    out: str
    err: str
    seconds: float


@dataclass
class Case:
    """One hostile case (``expect``: see :mod:`.runner`). The fixture runs its commands name (``{PLACE}`` ...)
    join ``store`` by themselves."""
    cls: str
    name: str
    argv: list[str]
    files: dict[str, Any] = field(default_factory=dict)  # name -> text, bytes, Special or fx -> bytes
    store: tuple[str, ...] = ()  # fixture runs copied into runs/ (PLACE, TRAIN, RNN, SWEEP)
    expect: str = "any"  # any | ok | bad | usage
    check: Callable[[Outcome, Path, Any], str | None] | None = None  # after a clean verdict: a problem or None
    setup: Callable[[Path, dict], None] | None = None
    concurrent: list[list[str]] = field(default_factory=list)  # commands run at once (races), instead of argv
    runner: Callable[[Case, Path, dict, float], list[Outcome]] | None = None  # its own processes
    timeout: float | None = None
    needs: tuple[str, ...] = ()  # "tf" (TensorFlow seed files), "local" (a calibrated local.json), "mount"
    app: dict | None = None  # an app case (run in a worker process: cases_app.play)
    teardown: Callable[[Path, dict], None] | None = None
    env: dict[str, str] = field(default_factory=dict)  # set for the command ({DIR}: the case's folder)

    def __post_init__(self) -> None:
        self.argv = [str(a) for a in self.argv]
        self.concurrent = [[str(a) for a in argv] for argv in self.concurrent]
        named = " ".join(self.argv + [a for argv in self.concurrent for a in argv])
        self.store = (*self.store, *(t for t in RUN_TOKENS if "{" + t + "}" in named and t not in self.store))

    @property
    def key(self) -> str:
        return f"{self.cls}/{self.name}"


@dataclass(frozen=True)
class Special:
    """A file that is not plain bytes: ``dir``, ``fifo``, ``symlink`` (to ``arg``), ``sparse`` (``arg`` bytes, or
    ``(bytes, head)``), ``missing`` (none)."""
    kind: str
    arg: Any = None


DELETE = object()  # cluster_with(key=DELETE), a corrupt run.json: the key removed


def make_special(path: Path, s: Special) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if s.kind == "dir":
        path.mkdir()
    elif s.kind == "fifo":
        os.mkfifo(path)
    elif s.kind == "symlink":
        os.symlink(s.arg, path)
    elif s.kind == "sparse":
        size, head = s.arg if isinstance(s.arg, tuple) else (s.arg, b"")
        with open(path, "wb") as f:
            f.write(head)
            f.truncate(size)
    elif s.kind != "missing":
        raise ValueError(s.kind)


def replace_with(path: Path, data: Any) -> None:
    """Put ``data`` (text, bytes or a :class:`Special`) where ``path`` is, whatever is there now."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    if isinstance(data, Special):
        make_special(path, data)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogateescape"))


# ---- inputs ------------------------------------------------------------------------------------------


def jdump(obj: Any) -> str:
    return json.dumps(obj)


def graph_doc(ops: list[dict], edges: list[dict] | None = None, **extra: Any) -> dict:
    return {"schema": "placelab.graph/1", "name": "adv", "ops": ops, "edges": edges or [], **extra}


def chain(n: int, name: Callable[[int], str] = "op{}".format, cycle: bool = False) -> str:
    ops = [{"name": name(i), "compute": 1e-3, "output_bytes": 100} for i in range(n)]
    edges = [{"src": name(i), "dst": name(i + 1)} for i in range(n - 1)]
    if cycle:
        edges.append({"src": name(n - 1), "dst": name(0)})
    return jdump(graph_doc(ops, edges))


CLUSTER = {"schema": "placelab.cluster/1", "name": "adv",
           "devices": [{"name": "cpu:0", "kind": "cpu", "memory_bytes": 5e10},
                       {"name": "gpu:0", "kind": "gpu", "memory_bytes": 1.1e10},
                       {"name": "gpu:1", "kind": "gpu", "memory_bytes": 1.1e10}],
           "link": {"bandwidth_bytes_per_s": 7.6e9, "latency_s": 0.0}}
OP_NAMES = [op["name"] for op in PLACELAB["ops"]]
PLACEMENT = {"schema": "placelab.placement/1", "devices": dict(zip(OP_NAMES, ["gpu:0", "gpu:0", "gpu:1", "gpu:1"],
                                                                    strict=True))}
G_PLACEMENT = {"schema": "placelab.placement/1", "devices": {f"op{i:07d}": f"gpu:{i % 2}" for i in range(12)}}
#: G's ops on the two CPUs of a calibrated local.json.
LOCAL_PLACEMENT = jdump({"schema": "placelab.placement/1",
                         "devices": {f"op{i:07d}": f"cpu:{i % 2}" for i in range(12)}})
#: Written in every case's folder: a valid graph (g.json), cluster (c.json) and placements (p.json for g.json
#: on c.json, pg.json for G on k80x2).
BASE_FILES = {"g.json": TEXT_SEEDS["placelab"], "c.json": jdump(CLUSTER), "p.json": jdump(PLACEMENT),
              "pg.json": jdump(G_PLACEMENT)}


def cluster_with(**changes: Any) -> str:
    """:data:`CLUSTER` with ``a__b__0__c=value`` changed (or removed: :data:`DELETE`), as JSON text; a string
    value ending in ``!`` is written as a raw JSON token (``"NaN!"``: ``NaN``)."""
    doc = json.loads(jdump(CLUSTER))
    for path, value in changes.items():
        *parents, last = path.split("__")
        node = doc
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node[p]
        if value is DELETE:
            del node[int(last) if isinstance(node, list) else last]
        elif isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return re.sub(r'"([^"]*)!"', r"\1", jdump(doc))


def malicious_pickle() -> bytes:
    """A pickle that, if unpickled, creates the file ``pwned`` in the current folder."""
    class Evil:
        def __reduce__(self):
            return (os.system, ("touch pwned",))
    return pickle.dumps(Evil())


def zip_bytes(entries: dict[str, bytes | str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return buf.getvalue()


def evil_zip(path: Path) -> bytes:
    """The real checkpoint zip at ``path`` with its ``data.pkl`` replaced by a pickle that runs code."""
    with zipfile.ZipFile(path) as z:
        entries = {n: z.read(n) for n in z.namelist()}
    for n in entries:
        if n.endswith("data.pkl"):
            entries[n] = malicious_pickle()
    return zip_bytes(entries)


def renamed(name: str) -> Callable[[Path, dict], None]:
    """A setup: the fixture run {PLACE} named and tagged ``name``."""
    def setup(d: Path, env: dict) -> None:
        path = d / "runs" / FIXTURE_IDS["PLACE"] / "run.json"
        doc = json.loads(path.read_text())
        doc["name"] = name
        doc["tags"] = [name]
        path.write_text(json.dumps(doc))
    return setup


# ---- checks on a clean outcome (``data``: the parsed --json object, or None) ----------------------------


def strict_json(text: str) -> Any:
    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")
    return json.loads(text, parse_constant=refuse)


def makespan_sane(o: Outcome, d: Path, data: Any) -> str | None:
    """Finite makespan, not below the lower bound when the simulation has no noise."""
    if not isinstance(data, dict) or "makespan_s" not in data:
        return None
    m, lb = data.get("makespan_s"), data.get("lower_bound_s")
    if not isinstance(m, int | float) or not math.isfinite(m) or m < 0:
        return f"makespan {m!r}"
    noisy = (data.get("simulation") or {}).get("noise", 0.0)
    if isinstance(lb, int | float) and not noisy and m < lb * (1 - 1e-9):
        return f"makespan {m:g} below the lower bound {lb:g}"
    return None


def lists(run_token: str) -> Callable[[Outcome, Path, Any], str | None]:
    """``runs list --json`` still lists the good run ``run_token`` (a corrupt neighbour hides nothing)."""
    def check(o: Outcome, d: Path, data: Any) -> str | None:
        ids = [r.get("id") for r in (data or {}).get("runs", [])]
        want = FIXTURE_IDS.get(run_token.strip("{}"), run_token)
        return None if want in ids else f"the good run {want} is not listed ({len(ids)} listed)"
    return check


def no_pwned(o: Outcome, d: Path, data: Any) -> str | None:
    return "the pickle ran code: ./pwned exists" if (d / "pwned").exists() else None


def said(pattern: str, stream: str = "err") -> Callable[[Outcome, Path, Any], str | None]:
    """The output (``err`` or ``out``) matches the regular expression ``pattern``."""
    def check(o: Outcome, d: Path, data: Any) -> str | None:
        text = o.err if stream == "err" else o.out
        return None if re.search(pattern, text) else f"{stream} does not match {pattern!r}: {text.strip()[:120]!r}"
    return check


# ---- fixtures: runs and files built once per pass ----------------------------------------------------


def placelab_argv(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "placelab.cli", *args]


def run_placelab(args: list[str], d: Path, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    """``placelab ARGS`` run to its end in the folder ``d`` (a case's setup: the runs it works on)."""
    return subprocess.run(placelab_argv(args), cwd=d, env=env, capture_output=True, text=True, timeout=timeout)


class Fixtures:
    """Runs every case may copy (a placement, two trainings, a sweep), a calibrated local cluster and
    TensorFlow-made model files, each built on first use."""

    def __init__(self, base: Path, env: dict) -> None:
        self.base, self.env = base / "fixtures", env
        self.base.mkdir(parents=True, exist_ok=True)
        self._tf: dict[str, bytes] | None = None

    def run(self, argv: list[str], timeout: float = 600) -> subprocess.CompletedProcess:
        proc = run_placelab(argv, self.base, {**self.env, "PLACELAB_RUNS_DIR": str(self.base / "runs")}, timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"fixture {' '.join(argv)} failed: {proc.stderr[-500:]}")
        return proc

    def build_runs(self, names: set[str]) -> None:
        commands = {
            "PLACE": ["place", G, "-c", K, "--placer", "heft", "--save", "--json"],
            "TRAIN": ["train", "--placer", "placeto", "-g", G, "-c", K, "--episodes", "2", "--param", "batch=2",
                      "--save", "--json"],
            "RNN": ["train", "--placer", "rnn", "-g", G, "-c", K, "--episodes", "2", "--save", "--json"],
            "SWEEP": ["sweep", "-g", G, "-c", K, "--placers", "random,round-robin", "--json"],
        }
        for name in sorted(names - set(FIXTURE_IDS)):
            FIXTURE_IDS[name] = json.loads(self.run(commands[name]).stdout)["run_id"]

    def local(self) -> Path:
        path = self.base / "local.json"
        if not path.exists():
            self.run(["calibrate", "-o", str(path), "--devices", "2"])
        return path

    def tf(self, fmt: str) -> bytes:
        if self._tf is None:
            folder = self.base / "tf"
            folder.mkdir(exist_ok=True)
            self._tf = make_tf_seeds(folder)
        return self._tf[fmt]


def write_files(d: Path, files: dict[str, Any], fx: Fixtures) -> None:
    for name, data in files.items():
        path = d / name
        if isinstance(data, Special):
            make_special(path, data)
            continue
        if callable(data):
            data = data(fx)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogateescape"))

