"""Adversarial pass (issue #34's acceptance: "a new adversarial pass of the same size finds >= 99 % clean").

About 670 hostile cases against the command line, the run store, Ray and the app, in the classes of
issue #34 and beyond: every count, budget, repeat, seed, size and parameter with huge, negative, zero,
NaN, infinite, non-numeric, 2^31 and 2^63 values; malformed and edge-case files of every graph format;
special files (directories, symlink loops, named pipes, ``/dev/zero`` behind a link, sparse files of
gigabytes); run store, checkpoint and policy corruption; a full disk; resume on a changed graph; racing
deletes; ``--json`` cleanliness of every command that has it; output paths; terminal escapes; unknown
names; commands without a subcommand; and the app's graph box, uploads, sidebar and Place form.

Each case runs ``placelab ...`` in a child process, in a fresh temporary folder (``PLACELAB_RUNS_DIR``,
the caches and ``XDG_*`` point there: the bundled ``runs/`` and the user's files are never touched),
with a timeout (a hang is a failure). A case is **clean** when

* it exits 0 with a correct-looking result: with ``--json``, stdout is one strict JSON object (no
  ``NaN``); no control character on stdout; stderr holds only placelab's notes (progress bars, steps,
  ``warning: ...`` lines: short, no control characters, no library's warnings or log lines); plus the
  case's own check where it has one (a makespan not below the lower bound, a good run still listed
  beside a corrupt one, no file written by a malicious pickle, ...); or
* it exits 2 with nothing on stdout and exactly one ``error: ...`` line on stderr of at most
  ``MAX_LINE`` (300) characters without control characters, "Traceback" or "internal error" (after,
  at most, the notes of work done before the failure: a disk that fills mid-training).

A case that must be refused (``expect="bad"``) fails on exit 0 (silent nonsense); one that must work
(``expect="ok"``) fails on exit 2. ``placelab`` or a command group without a command is clean when it
prints its help on stderr and exits 2 (``expect="usage"``). An app case is clean when the page raises
no exception and shows at most one short error alert.

Usage::

    .venv/bin/python benchmarks/adversarial_pass.py --quick           # about 1 case in 8 (each class)
    nice -n 10 .venv/bin/python benchmarks/adversarial_pass.py        # the whole pass (about an hour on 2 cores)
    .venv/bin/python benchmarks/adversarial_pass.py --classes store,checkpoint --keep /tmp/adv-fail
    .venv/bin/python benchmarks/adversarial_pass.py --match 'noise' --list   # the cases, not run
    .venv/bin/python benchmarks/adversarial_pass.py --json > pass.json   # one JSON object on stdout
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import math
import os
import pickle
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "fuzz"))
from harness import PLACELAB, TEXT_SEEDS, make_tf_seeds  # noqa: E402  (valid files of every importer format)

from engine.errors import MAX_LINE  # noqa: E402

G = "gen:random?ops=12&seed=1"  # small, fast
K = "k80x2"
#: Control characters (tab and newline aside), DEL, C1 controls and bidirectional overrides: never raw in output.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
#: stderr lines that are a library's noise, never placelab's notes: Python warnings and tracebacks, TensorFlow,
#: absl, glog and Ray log lines, indented continuation lines.
NOISE = re.compile(r"Warning:|Traceback|^\s|^\d{4}-\d\d-\d\d|^[IWEF]\d{4} |^(WARNING|INFO|ERROR|DEBUG)\b|^\*\*\*|"
                   r"^\((raylet|pid=)|^error|^internal error")
INT_VALUES = ["9223372036854775807", "-1", "0", "2147483648", "9223372036854775808", "1e3", "nan", "abc"]
INT_BAD = ["-1", "2147483648", "9223372036854775808", "nan", "abc"]
FLOAT_VALUES = ["nan", "1e308", "-1", "0", "inf", "-inf", "1e309", "abc"]
ESC = "\x1b]0;owned\x07\x1b[2J\u202e"  # a title change, a bell, clear screen, a bidi override



def some(values: list[str], i: int, k: int) -> list[str]:
    """``k`` of ``values``: the first two, then the others in turn from ``i`` (each option gets other extremes)."""
    rest = values[2:]
    return values[:2] + [rest[(i + j) % len(rest)] for j in range(k - 2)]


# ---- inputs ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Special:
    """A file that is not plain bytes: ``dir``, ``fifo``, ``symlink`` (to ``arg``), ``sparse`` (``arg`` bytes)."""
    kind: str
    arg: Any = None


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
#: Written in every case's folder: a valid graph (g.json), cluster (c.json) and placements (p.json for g.json
#: on c.json, pg.json for G on k80x2).
BASE_FILES = {"g.json": TEXT_SEEDS["placelab"], "c.json": jdump(CLUSTER), "p.json": jdump(PLACEMENT),
              "pg.json": jdump(G_PLACEMENT)}


def cluster_with(**changes: Any) -> str:
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
    return jdump(doc)


DELETE = object()


def malicious_pickle() -> bytes:
    """A pickle that, if unpickled, creates the file ``pwned`` in the current folder."""
    class Evil:
        def __reduce__(self):
            return (os.system, ("touch pwned",))
    return pickle.dumps(Evil())


def zip_bytes(entries: dict[str, bytes | str]) -> bytes:
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return buf.getvalue()


# ---- cases -------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    code: int | None  # None: killed after the timeout
    out: str
    err: str
    seconds: float


@dataclass
class Case:
    cls: str
    name: str
    argv: list[str]
    files: dict[str, Any] = field(default_factory=dict)
    store: tuple[str, ...] = ()  # fixture runs copied into runs/ (PLACE, TRAIN, RNN, SWEEP)
    expect: str = "any"  # any | ok | bad | usage
    check: Callable[[Outcome, Path, Any], str | None] | None = None  # after a clean verdict: a problem or None
    setup: Callable[[Path, dict], None] | None = None
    runner: Callable[[Case, Path, dict, float], list[Outcome]] | None = None  # several processes (races)
    timeout: float | None = None
    needs: tuple[str, ...] = ()  # "tf" (TensorFlow seed files), "local" (a calibrated local.json), "mount"
    app: dict | None = None  # an app case (run in a worker process)
    teardown: Callable[[Path, dict], None] | None = None

    @property
    def key(self) -> str:
        return f"{self.cls}/{self.name}"


CASES: list[Case] = []


def case(cls: str, name: str, argv: list[str], **kw: Any) -> None:
    CASES.append(Case(cls, name, [str(a) for a in argv], **kw))


def strict_json(text: str) -> Any:
    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")
    return json.loads(text, parse_constant=refuse)


# -- checks on a successful run (``data`` is the parsed --json object, or None)


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


FIXTURE_IDS: dict[str, str] = {}


# ==== 1. limits: counts, budgets, repeats, sizes, times ==============================================

def _limits() -> None:
    tr = ["train", "--placer", "placeto", "-g", G, "-c", K, "--param", "batch=2"]
    int_options = [
        ("place local-search", ["place", G, "-c", K, "--placer", "local-search"], "--budget"),
        ("place critical-path", ["place", G, "-c", K, "--placer", "critical-path"], "--budget"),
        ("compare", ["compare", G, "-c", K, "--placers", "heft,random", "--no-save"], "--repeats"),
        ("bench simulate", ["bench", "simulate", G, "-c", K, "--placement", "pg.json"], "--repeat"),
        ("train", tr, "--episodes"),
        ("train", [*tr, "--episodes", "4"], "--max-placements"),
        ("train", [*tr, "--episodes", "4"], "--stop-window"),
        ("sweep", ["sweep", "-g", G, "-c", K, "--placers", "random"], "--seeds"),
        ("graph info", ["graph", "info", "g.json"], "--unit-depth"),
        ("eval", ["eval", "{TRAIN}", "-g", G], "--threads"),
    ]
    for i, (label, argv, opt) in enumerate(int_options):
        for v in some(INT_VALUES, i, 4):
            store = ("TRAIN",) if "{TRAIN}" in argv else ()
            case("limits", f"{label} {opt} {v}", [*argv, opt, v], store=store)
    for i, opt in enumerate(("--episodes", "--optimized-episodes", "--random-samples", "--test-graphs")):
        for v in some(INT_BAD, i, 2):
            case("limits", f"experiment {opt} {v}", ["experiment", "--family", "cifar10", "-c", K, opt, v],
                 expect="bad")
    for v in ["-1", "3", "4096", "9223372036854775807", "nan"]:
        case("limits", f"calibrate --devices {v}", ["calibrate", "-o", "cal.json", "--devices", v], expect="bad")
    for i, opt in enumerate(("--placements", "--repeats")):
        for v in some(INT_BAD, i, 2):
            case("limits", f"validate {opt} {v}", ["validate", G, "-c", "local.json", opt, v], expect="bad",
                 needs=("local",))
    for v in some(INT_BAD, 2, 3):
        case("limits", f"execute --repeats {v}", ["execute", "g.json", "-c", "local.json", "--placement", "p.json",
                                                  "--repeats", v], expect="bad", needs=("local",))
    for v in some(FLOAT_VALUES, 0, 5):
        case("limits", f"train --max-seconds {v}", [*tr, "--episodes", "4", "--max-seconds", v])
    for v in some(FLOAT_VALUES, 3, 5):
        case("limits", f"train --stop-tolerance {v}", [*tr, "--episodes", "4", "--stop-tolerance", v])
    for v in ["-1", "nan", "1e308", "1e-320", "1e30"]:
        case("limits", f"place --execute --time-scale {v}",
             ["place", G, "-c", "local.json", "--placer", "round-robin", "--execute", "--repeats", "1",
              "--time-scale", v], needs=("local",), timeout=180)
    for v in ["nan", "1e308", "1e-320", "1e30"]:
        case("limits", f"execute --step-ms {v}", ["execute", G, "-c", "local.json", "--placement", "lp.json",
                                                  "--repeats", "1", "--step-ms", v],
             files={"lp.json": jdump({"schema": "placelab.placement/1",
                                      "devices": {f"op{i:07d}": f"cpu:{i % 2}" for i in range(12)}})},
             needs=("local",), timeout=180)
    for v in ["nan", "1e308"]:
        case("limits", f"validate --bytes-scale {v}", ["validate", G, "-c", "local.json", "--placements", "1",
                                                       "--repeats", "1", "--no-save", "--bytes-scale", v],
             needs=("local",), timeout=180)
    case("limits", "compare --execute --time-scale 1e308",
         ["compare", G, "-c", "local.json", "--placers", "round-robin", "--execute", "--repeats", "1",
          "--time-scale", "1e308", "--no-save"], needs=("local",), timeout=180)
    # each value within its own limit, their product beyond any patience
    wc = ["--mode", "work_conserving", "--sim-param", "runs=10000"]
    case("limits", "bench --repeat 10^6 x runs 10^4",
         ["bench", "simulate", G, "-c", K, "--placement", "pg.json", "--repeat", "1000000", *wc])
    case("limits", "local-search budget 10^6 x runs 10^4",
         ["place", G, "-c", K, "--placer", "local-search", "--budget", "1000000", *wc])
    case("limits", "train --episodes 10^6 --max-seconds 3", [*tr, "--episodes", "1000000", "--max-seconds", "3"],
         expect="ok")
    case("limits", "train --threads 1000000", [*tr, "--episodes", "2", "--threads", "1000000"])
    case("limits", "train --threads 0", [*tr, "--episodes", "2", "--threads", "0"], expect="bad")
    case("limits", "sweep 100001 tasks", ["sweep", "-g", G, "-c", K, "--placers", "random", "--seeds", "100001"],
         expect="bad")
    case("limits", "sweep budget 10^6 x runs 10^4", ["sweep", "-g", G, "-c", K, "--placers", "local-search",
                                                     "--budget", "1000000", *wc])
    case("limits", "sweep 2 x 10^6 tasks", ["sweep", "-g", G, "-c", K, "--placers", "random,heft",
                                            "--seeds", "1000000"], expect="bad")


# ==== 2. exhaustion: sizes that ask for more memory than there is =====================================

def _exhaustion() -> None:
    gens = [
        "gen:random?ops=10000000&degree=1e15", "gen:random?ops=10000000&degree=1000", "gen:random?ops=1e300",
        "gen:random?ops=100000000000", "gen:random?ops=-1", "gen:random?ops=10&degree=nan",
        "gen:random?ops=10&degree=inf", "gen:random?ops=10&window=1000000000", "gen:nmt?length=1000000000",
        "gen:nmt?layers=256&length=4096", "gen:nmt?units=2147483647&vocab=2147483647",
        "gen:nmt?batch=9223372036854775807", "gen:rnnlm?steps=4096&layers=256", "gen:chainmm?gpus=1000000",
        "gen:chainmm?size=1e200", "gen:ffnn?gpus=257", "gen:llama-block?seq=2147483647",
        "gen:family-ptb?nodes=1024&units=2147483647", "gen:family-cifar10?cells=1024&channels=2147483647",
        "gen:family-nmt?index=1000000000", "gen:inception-v3?batch=-1",
    ]
    for spec in gens:
        case("exhaustion", f"graph info {spec}", ["graph", "info", spec, "--json"])
    tr = ["train", "-g", G, "-c", K, "--episodes", "2"]
    for placer, param in [("rnn", "hidden=10000000000"), ("rnn", "hidden=4097"), ("placeto", "emb=1000000"),
                          ("placeto", "rounds=1000000"), ("doppler", "hidden=10000000000"),
                          ("placeto", "groups=1000000"), ("gdp", "hidden=1000000"), ("placeto", "batch=1000000"),
                          ("placeto", "lr=1e308"), ("placeto", "passes=1000000"), ("doppler", "batch=1000000"),
                          ("rnn", "samples=1000000")]:
        case("exhaustion", f"train {placer} --param {param}", [*tr, "--placer", placer, "--param", param])
    case("exhaustion", "sweep --seeds 1000000000", ["sweep", "-g", G, "-c", K, "--placers", "random",
                                                    "--seeds", "1000000000"], expect="bad")
    many = {**CLUSTER, "devices": [{"name": f"gpu:{i}", "kind": "gpu", "memory_bytes": 1e9} for i in range(4097)]}
    case("exhaustion", "cluster of 4097 devices", ["place", G, "-c", "big.json", "--placer", "round-robin", "--json"],
         files={"big.json": jdump(many)}, expect="bad")
    case("exhaustion", "JSON nested 10^6 deep", ["graph", "info", "deep.json"],
         files={"deep.json": '{"schema": "placelab.graph/1", "ops": ' + "[" * 1_000_000 + "]" * 1_000_000 + "}"})
    case("exhaustion", "cluster JSON nested 10^6 deep", ["place", G, "-c", "deep.json", "--placer", "heft"],
         files={"deep.json": '{"schema": "placelab.cluster/1", "devices": ' + "[" * 1_000_000 + "}"})
    case("exhaustion", "doppler text header 10^12 ops", ["graph", "info", "big.txt", "--json"],
         files={"big.txt": "1000000000000\n0,\n\n\n"})
    case("exhaustion", "dnn-partitioning maxFPGAs 10^12", ["place", "dnn.json", "-c", "dnn.json", "--placer",
                                                           "round-robin", "--json"],
         files={"dnn.json": jdump({**json.loads(TEXT_SEEDS["dnn-partitioning"]), "maxFPGAs": 10**12})})


# ==== 3. seeds ========================================================================================

PLACERS = ["enumerative", "expert", "doppler", "gdp", "placeto", "rnn", "critical-path", "heft", "m-etf", "m-topo",
           "m-sct", "metis", "kahip", "scotch", "mincut", "single-device", "cpu-only", "random", "round-robin",
           "local-search"]
CHEAP = ["critical-path", "heft", "m-etf", "m-topo", "m-sct", "metis", "kahip", "scotch", "mincut", "random",
         "round-robin", "local-search", "expert"]


def _seeds() -> None:
    for p in PLACERS[::2]:
        case("seeds", f"place {p} --seed 4294967295", ["place", G, "-c", K, "--placer", p, "--seed", "4294967295"],
             expect="bad")
    for p in CHEAP[::2]:
        case("seeds", f"place {p} --seed 2147483647", ["place", G, "-c", "cpu+k80x2", "--placer", p,
                                                       "--seed", "2147483647", "--json"], check=makespan_sane)
    for p in ("placeto", "doppler"):
        case("seeds", f"place {p} --seed 2147483647", ["place", G, "-c", K, "--placer", p, "--seed", "2147483647",
                                                       "--budget", "2", "--json"], check=makespan_sane)
    sw = ["sweep", "-g", G, "-c", K, "--placers", "random"]
    for seeds, seed, expect in [("3", "4294967295", "bad"), ("3", "2147483646", "bad"), ("2", "2147483646", "ok"),
                                ("0", "0", "any")]:
        case("seeds", f"sweep --seeds {seeds} --seed {seed}", [*sw, "--seeds", seeds, "--seed", seed, "--json"],
             expect=expect)
    for v, expect in [("2147483648", "bad"), ("2147483647", "ok")]:
        case("seeds", f"sim-param seed={v}", ["simulate", G, "-c", K, "--placement", "pg.json", "--mode",
                                              "work_conserving", "--sim-param", "noise=0.1", "--sim-param",
                                              f"seed={v}", "--json"], expect=expect)
    for spec in ("gen:random?ops=10&seed=4294967295", "gen:family-nmt?index=0&seed=4294967295"):
        case("seeds", f"graph info {spec}", ["graph", "info", spec, "--json"])
    case("seeds", "train --seed 2147483647", ["train", "--placer", "placeto", "-g", G, "-c", K, "--episodes", "2",
                                              "--param", "batch=2", "--seed", "2147483647", "--json"], expect="ok")
    case("seeds", "eval --seed 4294967295", ["eval", "{TRAIN}", "-g", G, "--seed", "4294967295"], store=("TRAIN",),
         expect="bad")
    case("seeds", "compare --seed 2147483647", ["compare", G, "-c", K, "--placers", "kahip,metis,scotch,random",
                                                "--seed", "2147483647", "--no-save", "--json"], expect="ok")
    case("seeds", "validate --seed 4294967295", ["validate", G, "-c", "local.json", "--seed", "4294967295"],
         needs=("local",), expect="bad")


# ==== 4. silent nonsense: settings that used to give exit 0 and a wrong answer ========================

def _nonsense() -> None:
    sim = ["simulate", G, "-c", K, "--placement", "pg.json", "--json"]
    wc = [*sim, "--mode", "work_conserving"]
    values = {"noise": ["1e300", "1.0000001", "-0.1", "1"],
              "runs": ["1000000000000", "10001", "0"],
              "op_overhead_s": ["1e308", "nan"], "transfer_gap_s": ["1e300"],
              "dispatch_s": ["1e300", "nan"], "copy_bus_capacity": ["0", "1e-300", "inf"],
              "choose": ["nosuch"], "memory_aware": ["maybe"], "nosuch": ["1"]}
    for key, vals in values.items():
        for v in vals:
            argv = [*(sim if key in ("op_overhead_s", "transfer_gap_s") else wc), "--sim-param", f"{key}={v}"]
            case("nonsense", f"simulate --sim-param {key}={v}", argv, check=makespan_sane)
    for pair in ("runs", " runs = 3 "):
        case("nonsense", f"simulate --sim-param {pair!r}", [*wc, "--sim-param", pair], check=makespan_sane)
    for key, v in [("noise", 1e300), ("runs", 10**12), ("op_overhead_s", 1e308), ("mode", "nosuch"),
                   ("runs", "ten")]:
        doc = {**CLUSTER, "simulation": {"mode": "work_conserving", key: v} if key != "mode" else {"mode": v}}
        case("nonsense", f"cluster file simulation.{key}={v}", ["place", "g.json", "-c", "s.json", "--placer",
                                                               "round-robin", "--json"],
             files={"s.json": jdump(doc)}, check=makespan_sane)
    for label, doc in [("device speed 1e-300", cluster_with(devices__1__speed=1e-300)),
                       ("device speed 0", cluster_with(devices__1__speed=0)),
                       ("device speed 1e300", cluster_with(devices__1__speed=1e300)),
                       ("bandwidth 1e-300", cluster_with(link__bandwidth_bytes_per_s=1e-300)),
                       ("memory 0", cluster_with(devices__1__memory_bytes=0, devices__2__memory_bytes=0))]:
        case("nonsense", f"simulate on {label}", ["simulate", "g.json", "-c", "s.json", "--placement", "p.json",
                                                  "--json"], files={"s.json": doc}, check=makespan_sane)
    for label, ops in [("compute 1e-320", [{"name": "a", "compute": 1e-320}, {"name": "b", "compute": 1e-320}]),
                       ("compute 1e99 x2", [{"name": "a", "compute": 1e99}, {"name": "b", "compute": 1e99}]),
                       ("bytes 1e300", [{"name": "a", "compute": 1, "output_bytes": 1e300},
                                        {"name": "b", "compute": 1}])]:
        case("nonsense", f"place on a graph of {label}", ["place", "x.json", "-c", K, "--placer", "heft", "--json"],
             files={"x.json": jdump(graph_doc(ops, [{"src": "a", "dst": "b"}]))}, check=makespan_sane)


# ==== 5. run store corruption =========================================================================

def _store() -> None:
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
            elif isinstance(mutation, Special):
                path.unlink()
                make_special(path, mutation)
            else:
                path.write_bytes(mutation if isinstance(mutation, bytes) else mutation.encode())
        return setup

    bad = "20260101-000000-place-bad-0000"
    mutations = {**values, **fields, "run.json a folder": Special("dir"), "run.json a fifo": Special("fifo"),
                 "run.json -> /dev/zero": Special("symlink", "/dev/zero"),
                 "run.json sparse 4 GB": Special("sparse", 4 * 2**30),
                 "run.json -> itself": Special("symlink", "run.json")}
    for i, (label, m) in enumerate(mutations.items()):
        case("store", f"runs list --json, {label}", ["runs", "list", "--json"], store=("PLACE",), setup=corrupt(m),
             check=lists(good), expect="ok")
        if i % 2:
            case("store", f"runs show --json, {label}", ["runs", "show", bad, "--json"], store=("PLACE",),
                 setup=corrupt(m))
    for label in ("makespan NaN", "name escape"):
        case("store", f"runs list (text), {label}", ["runs", "list"], store=("PLACE",), setup=corrupt(mutations[label]),
             expect="ok")
        case("store", f"runs delete, {label}", ["runs", "delete", bad], store=("PLACE",),
             setup=corrupt(mutations[label]))
    for name, text in [("schedule_ops.csv", "garbage\n1,2\n"), ("schedule_ops.csv", ""),
                       ("schedule_transfers.csv", "a,b,c\nx,y,z\n"), ("placement.json", "{"),
                       ("graph.json", '{"schema": "placelab.graph/1"}'), ("cluster.json", "[]")]:
        def setup(d: Path, env: dict, name: str = name, text: str = text) -> None:
            (d / "runs" / FIXTURE_IDS["PLACE"] / name).write_text(text)
        case("store", f"export-trace with {name} = {text[:12]!r}", ["runs", "export-trace", good, "-o", "t.json"],
             store=("PLACE",), setup=setup)
    for label, runs_dir in [("a file", "g.json"), ("missing", "nosuch/runs"), ("a fifo", "fifo"),
                            ("-> /dev/zero", "zero"), ("under a file", "g.json/runs"), ("escape", f"r{ESC}"),
                            ("empty string", "")]:
        files = {"fifo": Special("fifo"), "zero": Special("symlink", "/dev/zero")}
        if label in ("a file", "a fifo", "-> /dev/zero", "escape"):
            case("store", f"runs list --runs-dir {label}", ["runs", "list", "--json", "--runs-dir", runs_dir],
                 files=files)
        else:
            case("store", f"place --save --runs-dir {label}", ["place", G, "-c", K, "--placer", "heft", "--save",
                                                               "--runs-dir", runs_dir], files=files)
    for label, run in [("traversal", "../../etc"), ("empty", ""), ("100 KB", "r" * 100_000), ("escape", f"x{ESC}"),
                       ("absolute", "/tmp")]:
        case("store", f"runs show id {label}", ["runs", "show", run, "--json"], store=("PLACE",), expect="bad")
    for label, run in [("traversal", "../../x"), ("dot", "."), ("slash", "a/b")]:  # inside the case's folder
        case("store", f"runs delete id {label}", ["runs", "delete", run], store=("PLACE",), expect="bad")
    case("store", "runs list --kind nosuch", ["runs", "list", "--kind", "nosuch", "--json"], store=("PLACE",))
    case("store", "runs list --tag escape", ["runs", "list", "--tag", ESC], store=("PLACE",))
    case("store", "stray files in the store", ["runs", "list", "--json"], store=("PLACE",), check=lists(good),
         files={"runs/README": "hi", "runs/.git/x": "x", f"runs/odd {ESC}/run.json": "{}",
                "runs/loop": Special("symlink", "loop"), "runs/fifo": Special("fifo")}, expect="ok")


# ==== 6. checkpoints and policies ====================================================================

def _checkpoint() -> None:
    def damage(name: str, mutation: Any, run: str = "TRAIN") -> Callable[[Path, dict], None]:
        def setup(d: Path, env: dict) -> None:
            path = d / "runs" / FIXTURE_IDS[run] / name
            if callable(mutation):
                data = mutation(path)
                if data is None:
                    return
                path.write_bytes(data if isinstance(data, bytes) else data.encode())
            elif isinstance(mutation, Special):
                if path.is_dir():
                    shutil.rmtree(path)
                elif path.exists() or path.is_symlink():
                    path.unlink()
                make_special(path, mutation)
            else:
                path.write_bytes(mutation if isinstance(mutation, bytes) else mutation.encode())
        return setup

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
            "malicious pickle": malicious_pickle(), "malicious pickle in a zip": lambda p: _evil_zip(p),
            "wrong keys": torch_bytes("{'nothing': torch.zeros(2)}"),
            "wrong shapes": reshaped, "a folder": Special("dir"), "-> /dev/zero": Special("symlink", "/dev/zero"),
            "a fifo": Special("fifo"), "missing": Special("missing"), "sparse 4 GB": Special("sparse", 4 * 2**30)}
    for i, (label, m) in enumerate(ckpt.items()):
        setup = damage("checkpoint.pt", m)
        case("checkpoint", f"train --resume, checkpoint {label}", ["train", "--resume", "{TRAIN}", "--episodes", "4"],
             store=("TRAIN",), setup=setup, check=no_pwned)
        if i % 2 == 0:
            case("checkpoint", f"eval, checkpoint {label}", ["eval", "{TRAIN}", "-g", G], store=("TRAIN",),
                 setup=setup, check=no_pwned)
    for label in ("malicious pickle", "wrong shapes"):
        case("checkpoint", f"--init-from, checkpoint {label}",
             ["train", "--placer", "placeto", "-g", G, "-c", K, "--episodes", "2", "--init-from", "{TRAIN}"],
             store=("TRAIN",), setup=damage("checkpoint.pt", ckpt[label]), check=no_pwned)
    for label in ("random bytes", "-> /dev/zero"):
        case("checkpoint", f"place --param policy=RUN, checkpoint {label}",
             ["place", G, "-c", K, "--placer", "placeto", "--param", "policy={TRAIN}"], store=("TRAIN",),
             setup=damage("checkpoint.pt", ckpt[label]), check=no_pwned)
    case("checkpoint", "rnn eval, checkpoint random bytes", ["eval", "{RNN}", "-g", G], store=("RNN",),
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
        case("checkpoint", f"eval, policy {label}", ["eval", "{TRAIN}", "-g", G], store=("TRAIN",), setup=setup)
        if label in ("no config", "num_devices 10^12", "a folder"):
            case("checkpoint", f"train --resume, policy {label}", ["train", "--resume", "{TRAIN}", "--episodes", "4"],
                 store=("TRAIN",), setup=setup)
    for label, text in [("garbage", "x,y\n1,2\n"), ("NaN rows", None)]:
        def curve(path: Path, text: str | None = text) -> bytes:
            if text is not None:
                return text.encode()
            lines = path.read_text().splitlines()
            return "\n".join([lines[0], *(",".join("nan" for _ in line.split(",")) for line in lines[1:])]).encode()
        case("checkpoint", f"train --resume, learning curve {label}",
             ["train", "--resume", "{TRAIN}", "--episodes", "4"], store=("TRAIN",),
             setup=damage("learning_curve.csv", curve))


def _evil_zip(path: Path) -> bytes:
    """The real checkpoint zip with its ``data.pkl`` replaced by a pickle that runs code."""
    with zipfile.ZipFile(path) as z:
        entries = {n: z.read(n) for n in z.namelist()}
    for n in entries:
        if n.endswith("data.pkl"):
            entries[n] = malicious_pickle()
    return zip_bytes(entries)


# ==== 7. disk full ====================================================================================

def _mount(d: Path, env: dict, fill: bool) -> None:
    full = d / "full"
    full.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", str(full)], check=True, capture_output=True)
    if fill:
        fd = os.open(full / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:  # full
            pass
        finally:
            os.close(fd)


def _umount(d: Path, env: dict) -> None:
    subprocess.run(["umount", "-l", str(d / "full")], check=False, capture_output=True)


def _disk() -> None:
    cases = [
        ("train --save on 160 KB", ["train", "--placer", "placeto", "-g", G, "-c", K, "--episodes", "4", "--param",
                                    "batch=2", "--save", "--runs-dir", "full/runs"], False),
        ("train --save on a full disk", ["train", "--placer", "placeto", "-g", G, "-c", K, "--episodes", "4",
                                         "--save", "--runs-dir", "full/runs"], True),
        ("place --save on a full disk", ["place", G, "-c", K, "--placer", "heft", "--save", "--runs-dir", "full/runs"],
         True),
        ("compare --save on 160 KB", ["compare", "gen:random?ops=200&seed=1", "-c", K, "--placers",
                                      "heft,random,round-robin,critical-path", "--runs-dir", "full/runs"], False),
        ("sweep on 160 KB", ["sweep", "-g", "gen:random?ops=200&seed=1", "-c", K, "--placers", "random,heft",
                             "--seeds", "3", "--runs-dir", "full/runs"], False),
        ("place -o on a full disk", ["place", G, "-c", K, "--placer", "heft", "-o", "full/p.json"], True),
        ("export-trace on a full disk", ["runs", "export-trace", "{PLACE}", "-o", "full/t.json"], True),
        ("graph import on a full disk", ["graph", "import", "g.json", "-o", "full/g.json"], True),
        ("calibrate -o on a full disk", ["calibrate", "-o", "full/c.json", "--devices", "1"], True),
    ]
    for label, argv, fill in cases:
        case("disk", label, argv, store=("PLACE",) if "{PLACE}" in argv else (), needs=("mount",), expect="bad",
             setup=lambda d, env, fill=fill: _mount(d, env, fill), teardown=_umount, timeout=120,
             check=None)


# ==== 8. resume ========================================================================================

def _sweep_then_edit(d: Path, env: dict, edit: Callable[[Path], None]) -> None:
    proc = subprocess.run(placelab_argv(["sweep", "-g", "g.json", "-c", K, "--placers", "random,round-robin",
                                         "--json"]), cwd=d, env=env, capture_output=True, text=True, timeout=300)
    (d / "last_id").write_text(json.loads(proc.stdout)["run_id"] if proc.returncode == 0 else "none")
    edit(d)


def _train_then_edit(d: Path, env: dict, edit: Callable[[Path], None]) -> None:
    proc = subprocess.run(placelab_argv(["train", "--placer", "placeto", "-g", "g.json", "-c", K, "--episodes", "2",
                                         "--param", "batch=2", "--save", "--json"]),
                          cwd=d, env=env, capture_output=True, text=True, timeout=300)
    (d / "last_id").write_text(json.loads(proc.stdout)["run_id"] if proc.returncode == 0 else "none")
    edit(d)


def _resume() -> None:
    edits: dict[str, Callable[[Path], None]] = {
        "graph edited": lambda d: (d / "g.json").write_text(chain(5)),
        "graph deleted": lambda d: (d / "g.json").unlink(),
        "graph made garbage": lambda d: (d / "g.json").write_text("{"),
        "run interrupted, graph edited": lambda d: (_mark_interrupted(d), (d / "g.json").write_text(chain(5))),
    }
    for label, edit in edits.items():
        case("resume", f"sweep --resume, {label}", ["sweep", "--resume", "@LAST", "--json"],
             setup=lambda d, env, edit=edit: _sweep_then_edit(d, env, edit), timeout=120)
    for label in ("graph edited", "graph made garbage"):
        case("resume", f"train --resume, {label}", ["train", "--resume", "@LAST", "--episodes", "4"],
             setup=lambda d, env, edit=edits[label]: _train_then_edit(d, env, edit), timeout=120)
    case("resume", "sweep --resume of a place run", ["sweep", "--resume", "{PLACE}"], store=("PLACE",), expect="bad")
    case("resume", "sweep --resume nosuch", ["sweep", "--resume", "nosuch"], expect="bad")
    case("resume", "sweep --resume with -g", ["sweep", "--resume", "{SWEEP}", "-g", G], store=("SWEEP",))
    case("resume", "train --resume of a sweep", ["train", "--resume", "{SWEEP}"], store=("SWEEP",), expect="bad")
    case("resume", "train --resume with another placer", ["train", "--resume", "{TRAIN}", "--placer", "rnn"],
         store=("TRAIN",))
    case("resume", "train --resume --episodes 0", ["train", "--resume", "{TRAIN}", "--episodes", "0"],
         store=("TRAIN",))
    case("resume", "train --resume with -g", ["train", "--resume", "{TRAIN}", "-g", "g.json", "--episodes", "4"],
         store=("TRAIN",))
    case("resume", "train --init-from a place run", ["train", "--placer", "placeto", "-g", G, "-c", K,
                                                     "--init-from", "{PLACE}", "--episodes", "2"], store=("PLACE",),
         expect="bad")
    case("resume", "train --init-from an rnn run into placeto", ["train", "--placer", "placeto", "-g", G, "-c", K,
                                                                 "--init-from", "{RNN}", "--episodes", "2"],
         store=("RNN",))


def _mark_interrupted(d: Path) -> None:
    """Make the last sweep look killed half-way: status running (no live lock: interrupted), last row gone."""
    run = d / "runs" / (d / "last_id").read_text()
    doc = json.loads((run / "run.json").read_text())
    doc["status"] = "running"
    (run / "run.json").write_text(json.dumps(doc))
    for csv in run.glob("*.csv"):
        lines = csv.read_text().splitlines()
        csv.write_text("\n".join(lines[:-1]) + "\n")


# ==== 9. Ray ==========================================================================================

def _ray_stop(d: Path, env: dict) -> None:
    subprocess.run(placelab_argv(["ray", "stop"]), cwd=d, env=env, capture_output=True, timeout=120, check=False)


def _ray() -> None:
    sw = ["sweep", "-g", G, "-c", K, "--placers", "random", "--json"]
    for v in ("0", "2147483648"):
        case("ray", f"sweep --workers {v}", [*sw, "--workers", v])
    for addr in ("nosuch-host:6379", "ray://127.0.0.1:1", "auto", f"x{ESC}"):
        case("ray", f"sweep --address {addr!r}", [*sw, "--address", addr], timeout=120)
    case("ray", "compare --workers 0", ["compare", G, "-c", K, "--placers", "heft", "--workers", "0", "--no-save"])
    case("ray", "train --workers -1", ["train", "--placer", "placeto", "-g", G, "-c", K, "--workers", "-1"],
         expect="bad")
    case("ray", "ray stop, nothing to stop", ["ray", "stop"], expect="ok")
    case("ray", "ray stop --json", ["ray", "stop", "--json"], expect="ok")
    state = lambda env: Path(env["PLACELAB_CACHE_DIR"]) / "ray-local" / "999999.json"  # noqa: E731
    case("ray", "ray stop with a corrupt state file", ["ray", "stop", "--json"], expect="ok",
         setup=lambda d, env: (state(env).parent.mkdir(parents=True, exist_ok=True), state(env).write_text("{x")),
         teardown=lambda d, env: state(env).unlink(missing_ok=True))
    case("ray", "sweep --workers 1", [*sw, "--workers", "1"], expect="ok", timeout=240)
    for workers in (0, 2):  # issue #34, item 9: fuzz_soak.py's round (a sweep driver SIGKILLs itself, --resume)
        case("ray", f"kill -9 of a sweep driver, --workers {workers}", [], runner=_kill_round(workers), timeout=300)


def _kill_round(workers: int) -> Callable[[Case, Path, dict, float], list[Outcome]]:
    def run(c: Case, d: Path, env: dict, timeout: float) -> list[Outcome]:
        import random

        from fuzz_soak import kill_round  # this script's folder

        t = time.perf_counter()
        problem = kill_round(random.Random(workers), workers, timeout)["problem"]
        err = "" if problem is None else f"kill -9 round: {problem}\n"
        return [Outcome(0 if problem is None else 1, "", err, time.perf_counter() - t)]
    return run


# ==== 10. races =======================================================================================

def _concurrently(argvs: list[list[str]]) -> Callable[[Case, Path, dict, float], list[Outcome]]:
    def run(c: Case, d: Path, env: dict, timeout: float) -> list[Outcome]:
        results: list[Outcome | None] = [None] * len(argvs)

        def one(i: int) -> None:
            results[i] = run_process(substitute(argvs[i], d), d, env, timeout)
        threads = [threading.Thread(target=one, args=(i,)) for i in range(len(argvs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return [r for r in results if r is not None]
    return run


def _races() -> None:
    for n in (2, 4):
        case("race", f"{n} x runs delete of one run", [], store=("PLACE",),
             runner=_concurrently([["runs", "delete", "{PLACE}"]] * n), check=_one_deleted)
    case("race", "runs delete + runs show", [], store=("PLACE",),
         runner=_concurrently([["runs", "delete", "{PLACE}"], ["runs", "show", "{PLACE}", "--json"]]))
    case("race", "runs delete + export-trace", [], store=("PLACE",),
         runner=_concurrently([["runs", "delete", "{PLACE}"], ["runs", "export-trace", "{PLACE}", "-o", "t.json"]]))
    case("race", "2 x train --resume", [], store=("TRAIN",),
         runner=_concurrently([["train", "--resume", "{TRAIN}", "--episodes", "8"]] * 2))
    case("race", "3 x place --save, same name", [],
         runner=_concurrently([["place", G, "-c", K, "--placer", "heft", "--save", "--name", "same"]] * 3))
    case("race", "runs delete + runs list", [], store=("PLACE", "TRAIN"),
         runner=_concurrently([["runs", "delete", "{TRAIN}"], ["runs", "list", "--json"]]))


def _one_deleted(outcomes: Any, d: Path, data: Any) -> str | None:
    zero = sum(o.code == 0 for o in outcomes)
    return None if zero == 1 else f"{zero} of {len(outcomes)} deletes said they deleted the run"


# ==== 11. one line: megabytes, warnings, help ==========================================================

def _one_line() -> None:
    big = chain(100_000, cycle=True)
    case("one-line", "graph info on a 10^5-op cycle", ["graph", "info", "cyc.json"], files={"cyc.json": big},
         expect="bad")
    case("one-line", "place on a 10^5-op cycle", ["place", "cyc.json", "-c", K, "--placer", "heft"],
         files={"cyc.json": big}, expect="bad")
    long = "x" * 1_000_000
    case("one-line", "cycle of 1 MB op names", ["graph", "info", "c.json"],
         files={"c.json": chain(3, lambda i: f"{long}{i}", cycle=True)}, expect="bad")
    long = "x" * 100_000  # an argument: at most 128 KiB (Linux's MAX_ARG_STRLEN)
    for label, argv in [
        ("unknown placer 100 KB", ["place", G, "-c", K, "--placer", long]),
        ("unknown cluster 100 KB", ["place", G, "-c", long, "--placer", "heft"]),
        ("--param key 100 KB", ["place", G, "-c", K, "--placer", "heft", "--param", f"{long}=1"]),
        ("--sim-param key 100 KB", ["simulate", G, "-c", K, "--placement", "pg.json", "--sim-param", f"{long}=1"]),
        ("runs show 100 KB id", ["runs", "show", long]),
        ("graph path 5000 chars", ["graph", "info", "a" * 5000 + ".json"]),
        ("--placers list of 10^4", ["compare", G, "-c", K, "--placers", ",".join(["nosuch"] * 10_000)]),
        ("-g list of 10^4 missing files", ["train", "--placer", "placeto", "-c", K,
                                           "-g", ",".join(f"m{i}.json" for i in range(10_000))]),
    ]:
        case("one-line", label, argv, expect="bad")
    case("one-line", "placement naming an unknown 1 MB op", ["simulate", "g.json", "-c", "c.json", "--placement",
                                                             "x.json"],
         files={"x.json": jdump({"schema": "placelab.placement/1",
                                 "devices": {**PLACEMENT["devices"], long: "gpu:0"}})})
    case("one-line", "op name with newlines in a cycle", ["graph", "info", "n.json"],
         files={"n.json": chain(2, lambda i: f"line one\nline two\r\n{i}", cycle=True)}, expect="bad")
    doppler = "reading=app_e&flops_per_s="
    for v in ("1e-300", "0", "nan", "1e300"):
        case("one-line", f"doppler {doppler}{v}", ["graph", "info", f"d.txt?{doppler}{v}"],
             files={"d.txt": TEXT_SEEDS["doppler-text"]})
    for q in ("reading=nosuch", "unit_s=1e-320", "unit_s=1e308", "reading", "unit_s=1e308&unit_s=1"):
        case("one-line", f"doppler ?{q}", ["graph", "info", f"d.txt?{q}", "--json"],
             files={"d.txt": TEXT_SEEDS["doppler-text"]})
    for argv in (["reproduce", "nosuch", "--quick"], ["reproduce", ""], ["reproduce", ESC]):
        case("one-line", " ".join(argv), argv, expect="bad")
    case("one-line", "reproduce --list --json", ["reproduce", "--list", "--json"], expect="ok")
    for label, out in [("missing folder", "nosuch/c.json"), ("empty", ""), ("a folder", "."), ("a fifo", "f")]:
        case("one-line", f"calibrate -o {label}", ["calibrate", "-o", out], files={"f": Special("fifo")},
             expect="bad", check=None)
    case("one-line", "run --name with newlines", ["place", G, "-c", K, "--placer", "heft", "--save",
                                                  "--name", "a\nb\nc", "--json"])
    case("one-line", "runs list of a run named with newlines", ["runs", "list"], store=("PLACE",),
         setup=_rename("a\nb\x1b[2J"), expect="ok")


def _rename(name: str) -> Callable[[Path, dict], None]:
    def setup(d: Path, env: dict) -> None:
        path = d / "runs" / FIXTURE_IDS["PLACE"] / "run.json"
        doc = json.loads(path.read_text())
        doc["name"] = name
        doc["tags"] = [name]
        path.write_text(json.dumps(doc))
    return setup


# ==== 12. output paths ================================================================================

OUT_PATHS = {
    "empty": "", "a folder": ".", "missing folder": "nosuch/x.json", "a fifo": "fifo", "link to a fifo": "lfifo",
    "link to a folder": "ldir", "dangling link": "dangling", "trailing slash": "x.json/", "name 300 chars": "a" * 300,
    "path 5000 chars": "a/" * 2500 + "x", "newline in name": "a\nb.json", "escape in name": f"o{ESC}.json",
    "under a file": "g.json/x.json", "stdout dash": "-", "the input graph": "g.json", "/dev/full": "/dev/full",
}
OUT_FILES = {"fifo": Special("fifo"), "lfifo": Special("symlink", "fifo"), "ldir": Special("symlink", "."),
             "dangling": Special("symlink", "nowhere/x")}


def _outputs() -> None:
    for i, (label, path) in enumerate(OUT_PATHS.items()):
        if i % 4 != 3:
            case("outputs", f"place -o {label}", ["place", G, "-c", K, "--placer", "heft", "-o", path],
                 files=OUT_FILES)
        if i % 3 == 1:
            case("outputs", f"export-trace -o {label}", ["runs", "export-trace", "{PLACE}", "-o", path],
                 store=("PLACE",), files=OUT_FILES)
    for label in ("empty", "a fifo", "name 300 chars", "under a file"):
        case("outputs", f"graph import -o {label}", ["graph", "import", "g.json", "-o", OUT_PATHS[label]],
             files=OUT_FILES)
    for label in ("missing folder", "a fifo"):
        case("outputs", f"validate --refine-out {label}", ["validate", G, "-c", "local.json", "--placements", "1",
                                                           "--repeats", "1", "--no-save", "--refine-out",
                                                           OUT_PATHS[label]],
             files=OUT_FILES, needs=("local",), expect="bad", timeout=180)
    case("outputs", "graph import over an existing file", ["graph", "import", "g.json", "-o", "c.json"], expect="bad")


# ==== 13. terminal escapes ============================================================================

def _escapes() -> None:
    name = lambda i: f"op{i}{ESC}"  # noqa: E731
    files = {"e.json": chain(3, name), "ec.json": jdump({**CLUSTER, "name": f"cl{ESC}",
                                                         "devices": [{**dv, "name": dv["name"] + ESC}
                                                                     for dv in CLUSTER["devices"]]}),
             "ecyc.json": chain(3, name, cycle=True)}
    for label, argv in [
        ("graph info", ["graph", "info", "e.json"]), ("graph info -c", ["graph", "info", "e.json", "-c", "ec.json"]),
        ("place", ["place", "e.json", "-c", K, "--placer", "heft"]),
        ("place on escaped cluster", ["place", "e.json", "-c", "ec.json", "--placer", "round-robin"]),
        ("compare", ["compare", "e.json", "-c", K, "--placers", "heft,random", "--no-save"]),
        ("cycle error", ["graph", "info", "ecyc.json"]),
        ("unknown placer", ["place", "e.json", "-c", K, "--placer", f"p{ESC}"]),
        ("unknown cluster", ["place", "e.json", "-c", f"c{ESC}", "--placer", "heft"]),
        ("gen spec", ["graph", "info", f"gen:random?ops=5&name={ESC}"]),
        ("missing file", ["graph", "info", f"nofile{ESC}.json"]),
        ("placement unknown device", ["simulate", "e.json", "-c", K, "--placement", "ep.json"]),
        ("train progress", ["train", "--placer", "placeto", "-g", "e.json", "-c", K, "--episodes", "2"]),
        ("--name", ["place", "e.json", "-c", K, "--placer", "heft", "--save", "--name", ESC, "--tag", ESC]),
        ("runs show", ["runs", "show", "{PLACE}"]),
        ("sweep", ["sweep", "-g", "e.json", "-c", K, "--placers", "random"]),
        ("bench simulate", ["bench", "simulate", "e.json", "-c", K, "--placement", "ep.json"]),
        ("--param value", ["place", G, "-c", K, "--placer", "heft", "--param", f"x={ESC}"]),
        ("--sim-param value", ["simulate", G, "-c", K, "--placement", "pg.json", "--mode", "work_conserving",
                               "--sim-param", f"choose={ESC}"]),
        ("eval graph", ["eval", "{TRAIN}", "-g", "e.json"]),
        ("doppler text name", ["graph", "info", f"d{ESC}.txt"]),
    ]:
        extra = {"ep.json": jdump({"schema": "placelab.placement/1",
                                   "devices": {name(i): f"gpu:{i % 3}{ESC}" for i in range(3)}}),
                 f"d{ESC}.txt": TEXT_SEEDS["doppler-text"]}
        store = tuple(t for t in ("PLACE", "TRAIN") if "{" + t + "}" in argv)
        case("escapes", label, argv, files={**files, **extra}, store=store,
             setup=_rename(f"run{ESC}") if label == "runs show" else None)


# ==== 14. --json ======================================================================================

def _json() -> None:
    cmds = [
        ["placers"], ["clusters"], ["graph", "list"], ["graph", "info", G, "-c", K],
        ["graph", "info", "g.json", "-c", "c.json"], ["graph", "info", "bench:resnet50_inference"],
        ["simulate", G, "-c", K, "--placement", "pg.json"],
        ["simulate", G, "-c", K, "--placement", "pg.json", "--mode", "work_conserving", "--sim-param", "noise=0.5",
         "--sim-param", "runs=5"],
        ["place", G, "-c", K, "--placer", "heft"], ["place", G, "-c", K, "--placer", "m-sct"],
        ["place", G, "-c", "cpu+k80x2", "--placer", "m-sct", "--mode", "work_conserving"],
        ["place", "gen:chainmm?gpus=2", "-c", "p100x4", "--placer", "enumerative"],
        ["place", G, "-c", K, "--placer", "heft", "--save", "-o", "out.json"],
        ["compare", G, "-c", K, "--placers", "m-sct,heft,metis"],
        ["compare", G, "-c", K, "--placers", "m-sct,m-etf", "--mode", "work_conserving", "--no-save"],
        ["bench", "simulate", G, "-c", K, "--placement", "pg.json", "--repeat", "2"],
        ["runs", "list"], ["runs", "show", "{PLACE}"], ["runs", "show", "{TRAIN}"],
        ["runs", "export-trace", "{PLACE}", "-o", "t.json"], ["runs", "delete", "{PLACE}"],
        ["train", "--placer", "placeto", "-g", G, "-c", K, "--episodes", "2", "--param", "batch=2"],
        ["train", "--placer", "rnn", "-g", G, "-c", K, "--episodes", "2"],
        ["train", "--placer", "doppler", "-g", G, "-c", K, "--episodes", "2"],
        ["train", "--placer", "gdp", "-g", G, "-c", K, "--episodes", "2"],
        ["train", "--resume", "{TRAIN}", "--episodes", "4"],
        ["eval", "{TRAIN}", "-g", f"{G},g.json", "-c", K],
        ["sweep", "-g", G, "-c", K, "--placers", "random,m-sct", "--seeds", "2"],
        ["reproduce", "--list"], ["ray", "stop"], ["graph", "import", "g.json", "-o", "imp.json"],
    ]
    for argv in cmds:
        store = tuple(t for t in ("PLACE", "TRAIN", "SWEEP") if "{" + t + "}" in argv)
        case("json", " ".join(argv)[:90], [*argv, "--json"], store=store, expect="ok", check=makespan_sane)
    case("json", "graph import onnx", ["graph", "import", "m.onnx", "-o", "imp.json", "--json"], expect="ok",
         files={"m.onnx": lambda fx: fx.tf("onnx")}, needs=("tf",), timeout=180)
    case("json", "graph import keras", ["graph", "import", "m.keras", "-o", "imp.json", "--json"], expect="ok",
         files={"m.keras": lambda fx: fx.tf("keras")}, needs=("tf",), timeout=240)
    case("json", "calibrate --json", ["calibrate", "-o", "cal.json", "--devices", "1", "--json"], expect="ok",
         timeout=180)
    case("json", "execute --json", ["execute", G, "-c", "local.json", "--placement", "lp.json", "--repeats", "1",
                                    "--json"], expect="ok", needs=("local",), timeout=180,
         files={"lp.json": jdump({"schema": "placelab.placement/1",
                                  "devices": {f"op{i:07d}": f"cpu:{i % 2}" for i in range(12)}})})
    case("json", "validate --json", ["validate", G, "-c", "local.json", "--placements", "2", "--repeats", "1",
                                     "--json"], expect="ok", needs=("local",), timeout=240)
    case("json", "experiment --json", ["experiment", "--family", "cifar10", "-c", K, "--episodes", "2",
                                       "--optimized-episodes", "1", "--random-samples", "1", "--test-graphs", "1",
                                       "--param", "batch=2", "--json"], expect="ok", timeout=300)
    for argv in (["simulate", G, "-c", K, "--placement", "nosuch.json"], ["place", G, "-c", K, "--placer", "nosuch"],
                 ["runs", "show", "nosuch"], ["graph", "info", "gen:nosuch"], ["train", "--placer", "heft"],
                 ["compare", G, "-c", K, "--placers", "m-sct,nosuch"]):
        case("json", f"error: {' '.join(argv)[:70]}", [*argv, "--json"], expect="bad")


# ==== 15. graph formats ===============================================================================

def _formats() -> None:
    op = lambda n, **kw: {"name": n, "compute": 1e-3, **kw}  # noqa: E731
    placelab = {
        "zero ops": graph_doc([]), "one op": graph_doc([op("a")]),
        "duplicate op names": graph_doc([op("a"), op("a")]),
        "self-loop": graph_doc([op("a")], [{"src": "a", "dst": "a"}]),
        "compute string": graph_doc([{"name": "a", "compute": "fast"}]),
        "compute 1e308 x2": graph_doc([{"name": "a", "compute": 1e308}, {"name": "b", "compute": 1e308}]),
        "compute kind nan": graph_doc([{"name": "a", "compute": {"gpu": "NaN"}}]),
        "name empty": graph_doc([op("")]), "ops a dict": {**graph_doc([]), "ops": {"a": 1}},
        "phase bogus": graph_doc([op("a", phase="sideways")]),
        "unicode names": graph_doc([op("变量/权重"), op("\U0001f600")], [{"src": "变量/权重", "dst": "\U0001f600"}]),
    }
    for label, doc in placelab.items():
        text = json.dumps(doc).replace('"NaN"', "NaN")
        case("formats", f"placelab: {label}", ["graph", "info", "x.json", "--json"], files={"x.json": text})
    case("formats", "placelab: place on unicode names", ["place", "x.json", "-c", K, "--placer", "heft", "--json"],
         files={"x.json": jdump(placelab["unicode names"])}, expect="ok", check=makespan_sane)
    case("formats", "empty file", ["graph", "info", "x.json", "--json"], files={"x.json": b""})
    case("formats", "whitespace file", ["graph", "info", "x.json", "--json"], files={"x.json": b" \n\t\n"})
    for i, fmt in enumerate(("placelab", "node-link", "graphml", "doppler-text", "dnn-partitioning")):
        seed = TEXT_SEEDS[fmt]
        generic = {"BOM": b"\xef\xbb\xbf" + seed, "truncated": seed[: len(seed) // 2],
                   "CRLF": seed.replace(b"\n", b"\r\n"), "UTF-16": seed.decode().encode("utf-16"),
                   "NUL byte": seed[:40] + b"\x00" + seed[40:], "trailing garbage": seed + b"}}}garbage"}
        for label in some(list(generic), i, 2)[i % 2:][:2]:
            case("formats", f"{fmt}: {label}", ["graph", "info", f"x.{_ext(fmt)}", "--json"],
                 files={f"x.{_ext(fmt)}": generic[label]})
        for label, old, new in _number_swaps(fmt)[i % 5:][:1]:
            case("formats", f"{fmt}: {label}", ["graph", "info", f"x.{_ext(fmt)}", "--json"],
                 files={f"x.{_ext(fmt)}": seed.replace(old, new, 1)})
    nl = json.loads(TEXT_SEEDS["node-link"])
    for label, doc in [("undirected", {**nl, "directed": False}), ("multigraph", {**nl, "multigraph": True}),
                       ("cycle", {**nl, "edges": [*nl["edges"], {"source": 3, "target": "a"}]}),
                       ("node without id", {**nl, "nodes": [{"compute": 1}]}),
                       ("links key", {k: v for k, v in {**nl, "links": nl["edges"]}.items() if k != "edges"})]:
        case("formats", f"node-link: {label}", ["graph", "info", "x.json", "--json"], files={"x.json": jdump(doc)})
    gml = TEXT_SEEDS["graphml"].decode()
    laughs = ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;'
              '&lol;&lol;&lol;&lol;&lol;"><!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;'
              '&lol2;">]><graphml xmlns="http://graphml.graphdrawing.org/xmlns"><graph edgedefault="directed">'
              '<node id="&lol3;"/></graph></graphml>')
    xxe = ('<?xml version="1.0"?><!DOCTYPE g [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
           '<graphml xmlns="http://graphml.graphdrawing.org/xmlns"><graph edgedefault="directed">'
           '<node id="&x;"/></graph></graphml>')
    for label, text in [("billion laughs", laughs), ("external entity", xxe),
                        ("undirected", gml.replace('edgedefault="directed"', 'edgedefault="undirected"')),
                        ("cycle", gml.replace('<edge source="b" target="c"/>',
                                              '<edge source="b" target="c"/><edge source="c" target="a"/>')),
                        ("compute as string type", gml.replace('attr.type="double"', 'attr.type="string"', 1)
                         .replace(">0.00001<", ">fast<")),
                        ("hyperedge", gml.replace("</graph>", '<hyperedge><endpoint node="a"/></hyperedge></graph>')),
                        ("deep elements", "<graphml>" + "<a>" * 100_000 + "</a>" * 100_000 + "</graphml>")]:
        case("formats", f"graphml: {label}", ["graph", "info", "x.graphml", "--json"], files={"x.graphml": text})
    dt = TEXT_SEEDS["doppler-text"].decode()
    for label, text in [("glued 16,6", dt.replace("1 2,3,3", "16,6 2,3,3")),
                        ("count too big", dt.replace("6\n", "60\n", 1)),
                        ("count negative", dt.replace("6\n", "-6\n", 1)),
                        ("missing lines", "\n".join(dt.splitlines()[:3])),
                        ("cycle", dt.replace("0,0 1 2,", "0,5 1 2,")), ("letters", dt.replace("4, 5,", "x, y,"))]:
        case("formats", f"doppler-text: {label}", ["graph", "info", "x.txt", "--json"], files={"x.txt": text})
    dp = json.loads(TEXT_SEEDS["dnn-partitioning"])
    for label, doc in [("maxFPGAs 0", {**dp, "maxFPGAs": 0, "maxCPUs": 0}),
                       ("edge to unknown", {**dp, "edges": [*dp["edges"], {"sourceId": 1, "destId": 99, "cost": 1}]}),
                       ("cycle", {**dp, "edges": [*dp["edges"], {"sourceId": 3, "destId": 1, "cost": 1}]}),
                       ("latency string", {**dp, "nodes": [{**dp["nodes"][0], "cpuLatency": "slow"},
                                                           *dp["nodes"][1:]]}),
                       ]:
        case("formats", f"dnn-partitioning: {label}", ["place", "x.json", "-c", "x.json", "--placer", "round-robin",
                                                       "--json"], files={"x.json": jdump(doc)}, check=makespan_sane)
    for fmt, name in (("tf-graphdef", "x.pb"), ("onnx", "x.onnx"), ("keras", "x.keras")):
        for label, make in [("valid", lambda fx, f=fmt: fx.tf(f)), ("truncated", lambda fx, f=fmt: fx.tf(f)[:200]),
                            ("one bit flipped", lambda fx, f=fmt: _flip(fx.tf(f)))]:
            case("formats", f"{fmt}: {label}", ["graph", "info", name, "--json"], files={name: make}, needs=("tf",),
                 timeout=180, expect="ok" if label == "valid" else "any")
    for label, make in [("saved_model.pb random", lambda fx: os.urandom(500)),
                        ("saved_model.pb valid", lambda fx: fx.tf("tf-savedmodel"))]:
        case("formats", f"savedmodel: {label}", ["graph", "info", "sm", "--json"], files={"sm/saved_model.pb": make},
             needs=("tf",), timeout=180)
    lam = zip_bytes({"metadata.json": '{"keras_version": "3.0.0"}', "config.json": json.dumps(
        {"module": "keras.layers", "class_name": "Lambda",
         "config": {"name": "l", "function": {"class_name": "__lambda__", "config": {
             "code": base64.b64encode(b"import os; os.system('touch pwned')").decode(), "defaults": None,
             "closure": None}}}}), "model.weights.h5": b""})
    case("formats", "keras: Lambda layer with code", ["graph", "info", "x.keras", "--json"], files={"x.keras": lam},
         check=no_pwned, timeout=180)
    case("formats", "keras: empty zip", ["graph", "info", "x.keras", "--json"], files={"x.keras": zip_bytes({})},
         timeout=180)
    onnx_ext = _onnx_external
    case("formats", "onnx: external data /etc/passwd", ["graph", "info", "x.onnx", "--json"],
         files={"x.onnx": onnx_ext}, needs=("tf",), timeout=180)
    for label, data in [("PNG", b"\x89PNG\r\n\x1a\n" + os.urandom(64)), ("pickle", malicious_pickle()),
                        ("a .py file", b"import os\nos.system('touch pwned')\n")]:
        case("formats", f"unknown format: {label}", ["graph", "info", "x.bin", "--json"], files={"x.bin": data},
             check=no_pwned)
    for label, src, text in [("missing file", "nosuch.py:f", None), ("syntax error", "m.py:f", "def f(:\n"),
                             ("factory raises", "m.py:f", "def f():\n    raise ValueError('x\\ny\\nz')\n"),
                             ("factory returns an int", "m.py:f", "def f():\n    return 1\n"),
                             ]:
        case("formats", f"graph import code: {label}", ["graph", "import", src, "-o", "out.json"],
             files={"m.py": text} if text else {}, expect="bad", timeout=180)


def _ext(fmt: str) -> str:
    return {"graphml": "graphml", "doppler-text": "txt"}.get(fmt, "json")


def _number_swaps(fmt: str) -> list[tuple[str, bytes, bytes]]:
    """The seed's first number after the header replaced by extreme values."""
    anchor = {"placelab": b"0.0", "node-link": b"1e-05", "graphml": b"0.00001", "doppler-text": b"2000000000000",
              "dnn-partitioning": b"10.0"}[fmt]
    return [(f"number {v.decode()}", anchor, v) for v in (b"1e308", b"-1", b"NaN", b"1e999", b"99999999999999999999")]


def _flip(data: bytes) -> bytes:
    b = bytearray(data)
    b[len(b) // 3] ^= 0x10
    return bytes(b)


def _onnx_external(fx: Fixtures) -> bytes:
    import onnx
    from onnx import TensorProto, helper

    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4, 4], data_location=TensorProto.EXTERNAL)
    t.external_data.add(key="location", value="/etc/passwd")
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], initializer=[t])
    return onnx.helper.make_model(graph).SerializeToString()


# ==== 16. cluster files ===============================================================================

def _clusters() -> None:
    run = ["place", "g.json", "-c", "x.json", "--placer", "round-robin", "--json"]
    variants = {
        "not JSON": "{", "empty": "", "no schema": cluster_with(schema=DELETE),
        "wrong schema": cluster_with(schema="x"),
        "no devices": cluster_with(devices=[]),
        "device without name": cluster_with(devices__1__name=DELETE),
        "duplicate names": cluster_with(devices__2__name="gpu:0"),
        "kind tpu": cluster_with(devices__1__kind="tpu", devices__2__kind="tpu"),
        "memory -1": cluster_with(devices__1__memory_bytes=-1),
        "memory 1e308": cluster_with(devices__1__memory_bytes=1e308),
        "speed nan": cluster_with(devices__1__speed="NaN!"),
        "bandwidth 0": cluster_with(link__bandwidth_bytes_per_s=0),
        "bandwidth inf": cluster_with(link__bandwidth_bytes_per_s="1e999!"),
        "latency 1e308": cluster_with(link__latency_s=1e308),
        "link missing": cluster_with(link=DELETE),
        "links unknown device": cluster_with(links=[{"between": ["gpu:0", "nope"], "bandwidth_bytes_per_s": 1e9}]),
        "links same device": cluster_with(links=[{"between": ["gpu:0", "gpu:0"], "bandwidth_bytes_per_s": 1e9}]),
        "links a dict": cluster_with(links={"a": 1}), "simulation list": cluster_with(simulation=[1]),
        "simulation unknown key": cluster_with(simulation={"mode": "default", "zzz": 1}),
        "description 1 MB": cluster_with(description="d" * 1_000_000),
        "4096 devices": jdump({**CLUSTER, "devices": [{"name": f"gpu:{i}", "kind": "gpu", "memory_bytes": 1e9}
                                                      for i in range(4096)]}),
    }
    for label, text in variants.items():
        text = re.sub(r'"@?([^"]*)!"', r"\1", text) if "!" in text else text
        case("clusters", f"cluster file: {label}", run, files={"x.json": text}, check=makespan_sane)
    for label, spec, files in [("nosuch", "nosuch", {}), ("empty", "", {}), ("a folder", ".", {}),
                               ("a fifo", "f", {"f": Special("fifo")}),
                               ("-> /dev/zero", "z", {"z": Special("symlink", "/dev/zero")}),
                               ("sparse 4 GB", "s.json", {"s.json": Special("sparse", 4 * 2**30)}),
                               ("bench:nosuch", "bench:nosuch", {}), ("bench machine", "bench:resnet50_inference", {}),
                               ("a graph file", "g.json", {})]:
        case("clusters", f"-c {label}", ["place", G, "-c", spec, "--placer", "round-robin", "--json"], files=files,
             check=makespan_sane)


# ==== 17. placement files =============================================================================

def _placements() -> None:
    dev = PLACEMENT["devices"]
    variants: dict[str, Any] = {
        "not JSON": "{", "{}": "{}",
        "wrong schema": jdump({"schema": "x", "devices": dev}),
        "devices a list": jdump({**PLACEMENT, "devices": ["gpu:0"]}),
        "op missing": jdump({**PLACEMENT, "devices": dict(list(dev.items())[1:])}),
        "extra op": jdump({**PLACEMENT, "devices": {**dev, "zz": "gpu:0"}}),
        "unknown device": jdump({**PLACEMENT, "devices": {**dev, "mm": "tpu:9"}}),
        "device null": jdump({**PLACEMENT, "devices": {**dev, "mm": None}}),
        "device index": jdump({**PLACEMENT, "devices": {**dev, "mm": 0}}),
        "cpu-only op on gpu": jdump({**PLACEMENT, "devices": {k: "cpu:0" for k in dev}}),
        "10^5 extra ops": jdump({**PLACEMENT, "devices": {**dev, **{f"x{i}": "gpu:0" for i in range(100_000)}}}),
        "a folder": Special("dir"), "a fifo": Special("fifo"), "-> /dev/zero": Special("symlink", "/dev/zero"),
        "sparse 4 GB": Special("sparse", 4 * 2**30),
        "a graph file": TEXT_SEEDS["placelab"],
    }
    for label, data in variants.items():
        case("placements", f"simulate --placement {label}", ["simulate", "g.json", "-c", "c.json", "--placement",
                                                             "x.json", "--json"], files={"x.json": data},
             check=makespan_sane)
    for label in ("unknown device", "a fifo"):
        case("placements", f"bench simulate --placement {label}", ["bench", "simulate", "g.json", "-c", "c.json",
                                                                   "--placement", "x.json"],
             files={"x.json": variants[label]})
        case("placements", f"execute --placement {label}", ["execute", "g.json", "-c", "local.json", "--placement",
                                                            "x.json"], files={"x.json": variants[label]},
             needs=("local",), expect="bad")
    case("placements", "simulate a run's placement folder", ["simulate", G, "-c", K, "--placement", "runs/{PLACE}",
                                                             "--json"], store=("PLACE",))


# ==== 18. unknown names ===============================================================================

def _names() -> None:
    for label, argv in [
        ("placer nosuch", ["place", G, "-c", K, "--placer", "nosuch"]),
        ("placer empty", ["place", G, "-c", K, "--placer", ""]),
        ("placer 'heft '", ["place", G, "-c", K, "--placer", "heft "]),
        ("placer list", ["place", G, "-c", K, "--placer", "heft,random"]),
        ("compare --placers nosuch,heft", ["compare", G, "-c", K, "--placers", "nosuch,heft"]),
        ("sweep --placers nosuch", ["sweep", "-g", G, "-c", K, "--placers", "nosuch"]),
        ("sweep -c nosuch", ["sweep", "-g", G, "-c", "k80x2,nosuch", "--placers", "heft"]),
        ("train --placer heft", ["train", "--placer", "heft", "-g", G, "-c", K]),
        ("train without --placer", ["train", "-g", G, "-c", K]),
        ("train --stage nosuch", ["train", "--placer", "doppler", "-g", G, "-c", K, "--stage", "nosuch"]),
        ("train --reward nosuch", ["train", "--placer", "placeto", "-g", G, "-c", K, "--reward", "nosuch"]),
        ("train --reward measured on k80x2", ["train", "--placer", "placeto", "-g", G, "-c", K,
                                              "--reward", "measured"]),
        ("train --param nosuch", ["train", "--placer", "placeto", "-g", G, "-c", K, "--param", "nosuch=1"]),
        ("train --param network=nosuch", ["train", "--placer", "placeto", "-g", G, "-c", K, "--param", "network=x"]),
        ("train -g family:nosuch", ["train", "--placer", "placeto", "-g", "family:nosuch", "-c", K]),
        ("train -g family:nmt:nosuch", ["train", "--placer", "placeto", "-g", "family:nmt:nosuch", "-c", K]),
        ("eval nosuch", ["eval", "nosuch", "-g", G]),
        ("eval a place run", ["eval", "{PLACE}", "-g", G]),
        ("train --resume nosuch", ["train", "--resume", "nosuch"]),
        ("train --init-from nosuch", ["train", "--placer", "placeto", "-g", G, "-c", K, "--init-from", "nosuch"]),
        ("experiment --family nosuch", ["experiment", "--family", "nosuch", "-c", K]),
        ("calibrate --kind nosuch", ["calibrate", "-o", "c2.json", "--kind", "nosuch"]),
        ("calibrate --kind gpu", ["calibrate", "-o", "c2.json", "--kind", "gpu"]),
        ("validate --sample nosuch", ["validate", G, "-c", K, "--sample", "nosuch"]),
        ("validate on k80x2", ["validate", G, "-c", K, "--placements", "1"]),
        ("place --param nosuch", ["place", G, "-c", K, "--placer", "heft", "--param", "nosuch=1"]),
        ("place --param policy=nosuch", ["place", G, "-c", K, "--placer", "placeto", "--param", "policy=nosuch"]),
        ("place --mode nosuch", ["place", G, "-c", K, "--placer", "heft", "--mode", "nosuch"]),
        ("place --mode PLACETO", ["place", G, "-c", K, "--placer", "heft", "--mode", "PLACETO"]),
    ]:
        store = tuple(t for t in ("PLACE", "TRAIN", "SWEEP") if "{" + t + "}" in argv)
        case("names", label, argv, store=store, expect="bad")
    for spec in ("gen:nosuch", "bench:nosuch", "gen:", "gen:random?ops", "gen:random?=5", "gen:random?ops=5&ops=6",
                 "gen:random?ops=5&&", "gen:random?ops=0x10", "", "nosuch.json", "gen:random?ops=5#frag", "family:nmt"):
        case("names", f"graph spec {spec!r}", ["graph", "info", spec, "--json"])


# ==== 19. usage: commands without a subcommand, help, missing arguments ================================

def _usage() -> None:
    for argv in ([], ["graph"], ["bench"], ["runs"], ["ray"]):
        case("usage", "placelab " + " ".join(argv) if argv else "placelab", argv, expect="usage")
    for argv in (["--help"], ["place", "--help"], ["graph", "import", "--help"]):
        case("usage", " ".join(argv), argv, expect="ok")
    for argv in (["nosuch"], ["--nosuch"], ["place"], ["graph", "info"], ["simulate", G], ["place", G, "-c"],
                 ["graph", "nosuch"], ["place", G, "-c", K, "--placer", "heft", "--json", "extra"],
                 ["help"]):
        case("usage", " ".join(argv) or "(none)", argv, expect="bad")


# ==== 20. special files as inputs =====================================================================

def _paths() -> None:
    specials = {
        "a folder": ("dir.json", {"dir.json": Special("dir")}), "a fifo": ("f.json", {"f.json": Special("fifo")}),
        "symlink loop": ("a.json", {"a.json": Special("symlink", "b.json"), "b.json": Special("symlink", "a.json")}),
        "-> /dev/zero": ("z.json", {"z.json": Special("symlink", "/dev/zero")}),
        "sparse 4 GB": ("s.json", {"s.json": Special("sparse", 4 * 2**30)}),
        "sparse 4 GB, a JSON head": ("s.json", {"s.json": Special("sparse", (4 * 2**30, b'{"schema": "placelab'))}),
        "newline in the name": ("a\nb.json", {"a\nb.json": TEXT_SEEDS["placelab"]}),
        "escape in the name": (f"e{ESC}.json", {f"e{ESC}.json": TEXT_SEEDS["placelab"]}),
        "unicode name": ("图 ✓.json", {"图 ✓.json": TEXT_SEEDS["placelab"]}),
        "name with ?": ("a?ops=1.json", {"a?ops=1.json": TEXT_SEEDS["placelab"]}),
        "name like a spec": ("gen:random", {"gen:random": TEXT_SEEDS["placelab"]}),
        "/dev/null": ("/dev/null", {}), "/proc/self/status": ("/proc/self/status", {}),
        "a SavedModel folder without the model": ("sm", {"sm/variables/x": b""}),
    }
    for label, (path, files) in specials.items():
        case("paths", f"graph info: {label}", ["graph", "info", path, "--json"], files=files)
        if label in ("a fifo", "-> /dev/zero", "sparse 4 GB", "symlink loop"):
            case("paths", f"-c {label}", ["place", G, "-c", path, "--placer", "heft"], files=files)
        if label in ("a fifo", "-> /dev/zero"):
            case("paths", f"--placement {label}", ["simulate", G, "-c", K, "--placement", path], files=files)
            case("paths", f"train -g {label}", ["train", "--placer", "placeto", "-g", path, "-c", K], files=files)
    case("paths", "graph info on a file without read permission (as root: readable)", ["graph", "info", "r.json"],
         files={"r.json": TEXT_SEEDS["placelab"]}, setup=lambda d, env: os.chmod(d / "r.json", 0))


# ==== 21. the app =====================================================================================

def _app() -> None:
    specs = ["gen:random?ops=10000000&degree=1e15", "gen:nmt?length=1000000000", "", "/etc/passwd",
             f"gen:random?ops=5&name={ESC}", "gen:random?ops=" + "9" * 5000, "upload:nosuch",
             "gen:random?ops=10&seed=4294967295"]
    for s in specs:
        case("app", f"graph spec {s[:50]!r}", [], app={"kind": "spec", "spec": s})
    uploads = {
        "empty.json": b"", "random.bin": os.urandom(3000),
        "cycle.json": chain(100_000, cycle=True).encode(), "long-names.json": chain(3, lambda i: "n" * 300_000 + str(i),
                                                                                     cycle=True).encode(),
        "glued.txt": TEXT_SEEDS["doppler-text"].replace(b"1 2,3,3", b"16,6 2,3,3"),
        "laughs.graphml": b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">'
                          b'<!ENTITY b "&a;&a;&a;&a;&a;&a;">]>'
                          b'<graphml><graph edgedefault="directed"><node id="&b;"/></graph></graphml>',
        "pickle.pt": malicious_pickle(), f"../../{ESC}.json": TEXT_SEEDS["placelab"], "nested.json":
            b'{"schema": "placelab.graph/1", "ops": ' + b"[" * 200_000 + b"]" * 200_000 + b"}",
    }
    for name, data in uploads.items():
        case("app", f"upload {name[:40]!r}", [], app={"kind": "upload", "name": name,
                                                       "data": base64.b64encode(data).decode()}, check=no_pwned)
    for placer, seed, budget, params in [("local-search", 0, 2**63 - 1, {}), ("critical-path", 0, 2_000_000_000, {}),
                                         ("kahip", 2**32 - 1, 0, {}), ("rnn", 0, 2, {"hidden": 10**10}),
                                         ("local-search", 0, 0, {"evaluations": 10**11})]:
        case("app", f"place form {placer} seed {seed} budget {budget} {params}", [],
             app={"kind": "place", "placer": placer, "seed": seed, "budget": budget, "params": params})
    for setting, value in [("noise", 1e300), ("runs", 10**12), ("copy_bus_capacity", 0.0)]:
        case("app", f"sidebar {setting}={value}", [], app={"kind": "sim", "setting": setting, "value": value})


# ---- fixtures: runs and files built once per pass ----------------------------------------------------

def placelab_argv(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "placelab.cli", *args]


class Fixtures:
    """Runs every case may copy (a placement, two trainings, a sweep), a calibrated local cluster and
    TensorFlow-made model files, each built on first use."""

    def __init__(self, base: Path, env: dict) -> None:
        self.base, self.env = base / "fixtures", env
        self.base.mkdir(parents=True, exist_ok=True)
        self._tf: dict[str, bytes] | None = None

    def run(self, argv: list[str], timeout: float = 600) -> subprocess.CompletedProcess:
        env = {**self.env, "PLACELAB_RUNS_DIR": str(self.base / "runs")}
        proc = subprocess.run(placelab_argv(argv), cwd=self.base, env=env, capture_output=True, text=True,
                              timeout=timeout)
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


# ---- running a case ---------------------------------------------------------------------------------

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


def substitute(argv: list[str], d: Path) -> list[str]:
    out = []
    for a in argv:
        for token, run_id in FIXTURE_IDS.items():
            a = a.replace("{" + token + "}", run_id)
        if "@LAST" in a and (d / "last_id").exists():
            a = a.replace("@LAST", (d / "last_id").read_text())
        out.append(a)
    return out


def run_process(argv: list[str], d: Path, env: dict, timeout: float) -> Outcome:
    """``placelab ARGV`` (app cases: ARGV as it is) in its own session, killed with its children after ``timeout``."""
    cmd = argv if argv and argv[0] == sys.executable else placelab_argv(argv)
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=d, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        code = None
    return Outcome(code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), time.perf_counter() - t)


def judge(c: Case, o: Outcome, d: Path, argv: list[str], check: Callable | None = None) -> tuple[str, str]:
    """``("clean" | "failed" | "hung", detail)`` of one finished process (module docstring)."""
    if o.code is None:
        return "hung", f"no exit within {o.seconds:.0f} s"
    text = o.out + o.err
    if "Traceback (most recent call last)" in text:
        return "failed", f"traceback: {o.err.strip().splitlines()[-1][:200] if o.err.strip() else ''}"
    if "internal error" in o.err:
        return "failed", first_line(o.err)
    if o.code == 2:
        lines = o.err.splitlines()
        if c.expect == "usage":
            return ("clean", "help on stderr") if not o.out and "Usage" in o.err else (
                "failed", f"exit 2 without help on stderr (stdout {len(o.out)} chars)")
        if c.expect == "ok":
            return "failed", f"refused a valid input: {first_line(o.err)}"
        if o.out.strip():
            return "failed", f"exit 2 with {len(o.out)} characters on stdout"
        while len(lines) > 1 and is_note(lines[0]):
            lines = lines[1:]  # progress of the work done before the failure (a full disk mid-training)
        if len(lines) != 1 or not o.err.endswith("\n"):
            return "failed", f"exit 2 with {len(lines)} stderr lines: {first_line(o.err)}"
        if len(lines[0]) > MAX_LINE:
            return "failed", f"error line of {len(lines[0]):,} characters"
        if CONTROL.search(lines[0]):
            return "failed", f"control character in the error line: {lines[0][:120]!r}"
        if not lines[0].startswith("error: "):
            return "failed", f"not an error line: {lines[0][:120]!r}"
        return "clean", lines[0]
    if o.code != 0:
        return "failed", f"exit {o.code}: {first_line(o.err) or first_line(o.out)}"
    if c.expect in ("bad", "usage"):
        return "failed", f"accepted (exit 0) where a refusal was due: {o.out[:120]!r}"
    data = None
    if "--json" in argv:
        try:
            data = strict_json(o.out)
        except ValueError as exc:
            return "failed", f"--json output is not one JSON object ({exc}): {o.out[:120]!r}"
        if not isinstance(data, dict):
            return "failed", f"--json output is a {type(data).__name__}, not an object"
    if CONTROL.search(o.out):
        return "failed", f"control character on stdout: {CONTROL.search(o.out).group()!r}"
    for line in o.err.splitlines():
        if line.strip() and not is_note(line):
            return "failed", f"unexpected stderr line on success: {line[:160]!r}"
    problem = check(o, d, data) if check else None
    return ("failed", problem) if problem else ("clean", "exit 0")


def is_note(line: str) -> bool:
    """A line placelab prints on stderr besides its result: a progress bar, a step, a ``warning: ...``."""
    return len(line) <= MAX_LINE and not CONTROL.search(line) and (line.startswith("warning: ")
                                                                   or not NOISE.search(line))


def first_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[0][:300] if lines else ""


def prepare(c: Case, d: Path, env: dict, fx: Fixtures) -> str | None:
    """Write the case's files; the reason when it cannot run here (``skipped``)."""
    write_files(d, BASE_FILES, fx)
    if "local" in c.needs:
        shutil.copy(fx.local(), d / "local.json")
    if c.store:
        fx.build_runs(set(c.store))
        for name in c.store:
            shutil.copytree(fx.base / "runs" / FIXTURE_IDS[name], d / "runs" / FIXTURE_IDS[name], symlinks=True)
    write_files(d, c.files, fx)
    if "mount" in c.needs and not _can_mount(d):
        return "mounting a tmpfs is not allowed here"
    if c.setup:
        c.setup(d, env)
    return None


_MOUNT_OK: bool | None = None


def _can_mount(d: Path) -> bool:
    global _MOUNT_OK
    if _MOUNT_OK is None:
        probe = d / "mount-probe"
        probe.mkdir()
        _MOUNT_OK = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(probe)],
                                   capture_output=True, check=False).returncode == 0
        if _MOUNT_OK:
            subprocess.run(["umount", str(probe)], check=False)
        probe.rmdir()
    return _MOUNT_OK


def run_case(c: Case, base: Path, env0: dict, fx: Fixtures, timeout: float, keep: Path | None) -> dict:
    d = Path(tempfile.mkdtemp(prefix="case-", dir=base))
    env = {**env0, "PLACELAB_RUNS_DIR": str(d / "runs")}
    result: dict[str, Any] = {"class": c.cls, "case": c.name}
    t0 = time.perf_counter()
    try:
        why = prepare(c, d, env, fx)
        if why:
            return {**result, "verdict": "skipped", "detail": why, "command": ""}
        limit = c.timeout or timeout
        if c.app is not None:
            (d / "app_case.json").write_text(json.dumps(c.app))
            env = {**env, "PLACELAB_EXAMPLE_RUNS_DIR": str(d / "no-examples")}
            argv = [sys.executable, str(Path(__file__).resolve()), "--app-case", str(d / "app_case.json")]
            o = run_process(argv, d, env, limit)
            verdict, detail = judge_app(o)
            if verdict == "clean" and c.check:
                problem = c.check(o, d, None)
                verdict, detail = ("failed", problem) if problem else (verdict, detail)
            result.update(command=f"app: {json.dumps({k: v for k, v in c.app.items() if k != 'data'})[:200]}")
        elif c.runner:
            outcomes = c.runner(c, d, env, limit)
            verdicts = [judge(c, o, d, ["--json"] if o.out.startswith("{") else []) for o in outcomes]
            bad = [v for v in verdicts if v[0] != "clean"]
            verdict, detail = bad[0] if bad else ("clean", f"{len(outcomes)} processes")
            if verdict == "clean" and c.check:
                problem = c.check(outcomes, d, None)
                verdict, detail = ("failed", problem) if problem else (verdict, detail)
            result.update(command=f"{len(outcomes)} at once: placelab ...")
        else:
            argv = substitute(c.argv, d)
            o = run_process(argv, d, env, limit)
            verdict, detail = judge(c, o, d, argv, c.check)
            result.update(command="placelab " + shlex.join(_short(a) for a in argv))
        result.update(verdict=verdict, detail=detail)
    except Exception as exc:  # the benchmark's own setup failed: count it, say so
        result.update(verdict="failed", detail=f"setup: {type(exc).__name__}: {str(exc)[:200]}",
                      command="placelab " + shlex.join(_short(a) for a in c.argv))
    finally:
        if c.teardown:
            c.teardown(d, env)
        if c.cls == "ray":
            _ray_stop(d, env)
        result["seconds"] = round(time.perf_counter() - t0, 2)
        if keep is not None and result.get("verdict") in ("failed", "hung"):
            dest = keep / re.sub(r"[^A-Za-z0-9._-]+", "_", c.key)[:120]
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(d, dest, symlinks=True, ignore=_skip_special)
            (dest / "command.txt").write_text(result.get("command", "") + "\n")
        _remove(d)
    return result


def _short(a: str) -> str:
    return a if len(a) <= 120 else f"{a[:60]}...<{len(a):,} chars>...{a[-20:]}"


def _skip_special(folder: str, names: list[str]) -> list[str]:
    skip = []
    for n in names:
        p = Path(folder) / n
        try:
            st = p.lstat()
        except OSError:
            continue
        if not (p.is_symlink() or p.is_dir() or p.is_file()) or (p.is_file() and st.st_blocks * 512 < st.st_size // 2
                                                                 and st.st_size > 2**26):
            skip.append(n)
    return skip


def _remove(d: Path) -> None:
    for p in sorted(d.rglob("*"), reverse=True):
        if p.is_dir() and not p.is_symlink() and os.path.ismount(p):
            subprocess.run(["umount", "-l", str(p)], check=False, capture_output=True)
    for p in d.rglob("*"):
        if p.is_dir() and not p.is_symlink():
            with contextlib.suppress(OSError):
                os.chmod(p, 0o755)
    shutil.rmtree(d, ignore_errors=True)


# ---- the app worker ----------------------------------------------------------------------------------

def judge_app(o: Outcome) -> tuple[str, str]:
    if o.code is None:
        return "hung", f"no answer within {o.seconds:.0f} s"
    lines = [ln for ln in o.out.splitlines() if ln.startswith("{")]
    if o.code != 0 or not lines:
        return "failed", f"app worker exit {o.code}: {first_line(o.err)[:200]}"
    r = json.loads(lines[-1])
    if r["exceptions"]:
        return "failed", f"exception: {r['exceptions'][0][:200]}"
    if len(r["errors"]) > 1:
        return "failed", f"{len(r['errors'])} error alerts: {r['errors'][0][:150]!r}"
    for e in r["errors"]:
        if len(e) > MAX_LINE or CONTROL.search(e) or "Traceback" in e:
            return "failed", f"alert of {len(e):,} characters or with control characters: {e[:120]!r}"
    return "clean", r["errors"][0][:200] if r["errors"] else "no alert"


def click(app: Any, key: str) -> None:
    """Click the button ``key`` unless the page disabled it (a visitor could not click it either)."""
    button = app.button(key=key)
    if not button.disabled:
        button.click().run()


def app_worker(path: str) -> None:
    """Run one app case (``--app-case FILE``) and print one JSON line: exceptions and error alerts."""
    from streamlit.testing.v1 import AppTest

    spec = json.loads(Path(path).read_text())
    timeout = 240
    kind = spec["kind"]
    if kind in ("spec", "upload"):
        app = AppTest.from_string("from dashboard.app_pages import graphs\ngraphs.page()\n",
                                  default_timeout=timeout).run()
        if kind == "spec":
            app.radio(key="graphs_source").set_value("Generator spec").run()
            app.text_input(key="graphs_spec").set_value(spec["spec"]).run()
            click(app, "graphs_use")
        else:
            app.radio(key="graphs_source").set_value("Upload a file").run()
            data = base64.b64decode(spec["data"])
            app.file_uploader(key="graphs_upload").set_value((spec["name"], data, "application/octet-stream")).run()
    elif kind == "place":
        from dashboard import state as keys
        from engine.specs import load_graph

        app = AppTest.from_string("from dashboard.app_pages import place\nplace.page()\n", default_timeout=timeout)
        app.session_state[keys.GRAPH] = load_graph(G)
        app.run()
        name = spec["placer"]
        app.multiselect(key=keys.PLACE_PLACERS).set_value([name]).run()
        app.number_input(key=keys.place_seed(name)).set_value(spec["seed"])
        app.number_input(key=keys.place_budget(name)).set_value(spec["budget"])
        for k, v in spec["params"].items():
            widget = keys.place_param(name, k)
            try:
                app.number_input(key=widget).set_value(v)
            except KeyError:
                app.text_input(key=widget).set_value(str(v))
        app.run()
        click(app, keys.PLACE_RUN)
    else:
        from dashboard import state as keys
        from engine.specs import load_graph

        app = AppTest.from_string("from dashboard.context import sidebar\nfrom dashboard.app_pages import place\n"
                                  "sidebar()\nplace.page()\n", default_timeout=timeout)
        app.session_state[keys.GRAPH] = load_graph(G)
        app.run()
        app.selectbox(key=keys.SIM_MODE).set_value("work_conserving").run()
        app.number_input(key=keys.sim_setting(spec["setting"])).set_value(spec["value"]).run()
        click(app, keys.PLACE_RUN)
    errors = [str(e.value) for e in app.error]
    exceptions = [str(getattr(e, "message", e.value))[:500] for e in app.exception]
    print(json.dumps({"errors": errors, "exceptions": exceptions}))


# ---- the pass -----------------------------------------------------------------------------------------

CLASSES = {"limits": _limits, "exhaustion": _exhaustion, "seeds": _seeds, "nonsense": _nonsense, "store": _store,
           "checkpoint": _checkpoint, "disk": _disk, "resume": _resume, "ray": _ray, "race": _races,
           "one-line": _one_line, "outputs": _outputs, "escapes": _escapes, "json": _json, "formats": _formats,
           "clusters": _clusters, "placements": _placements, "names": _names, "usage": _usage, "paths": _paths,
           "app": _app}


def build_cases() -> list[Case]:
    CASES.clear()
    for make in CLASSES.values():
        make()
    return list(CASES)


def select(cases: list[Case], args: argparse.Namespace) -> list[Case]:
    if args.classes:
        wanted = set(args.classes.split(","))
        cases = [c for c in cases if c.cls in wanted]
    if args.match:
        cases = [c for c in cases if re.search(args.match, c.key)]
    if args.quick:
        by_class: dict[str, list[Case]] = {}
        for c in cases:
            by_class.setdefault(c.cls, []).append(c)
        cases = [c for group in by_class.values() for c in group[:: max(1, min(8, len(group) // 2))]]
    return cases


def summarize(results: list[dict]) -> dict:
    classes: dict[str, dict[str, int]] = {}
    for r in results:
        row = classes.setdefault(r["class"], {"cases": 0, "clean": 0, "failed": 0, "hung": 0, "skipped": 0})
        row[r["verdict"]] += 1
        row["cases"] += r["verdict"] != "skipped"
    cases = sum(r["cases"] for r in classes.values())
    clean = sum(r["clean"] for r in classes.values())
    return {"cases": cases, "clean": clean, "failed": sum(r["failed"] for r in classes.values()),
            "hung": sum(r["hung"] for r in classes.values()),
            "skipped": sum(r["skipped"] for r in classes.values()),
            "clean_percent": round(100.0 * clean / cases, 2) if cases else None, "classes": classes,
            "failures": [r for r in results if r["verdict"] in ("failed", "hung")]}


def print_report(s: dict) -> None:
    print(f"{'class':<12} {'cases':>6} {'clean':>6} {'failed':>7} {'hung':>5} {'skipped':>8}")
    for name, row in s["classes"].items():
        print(f"{name:<12} {row['cases']:>6} {row['clean']:>6} {row['failed']:>7} {row['hung']:>5} {row['skipped']:>8}")
    print(f"{'all':<12} {s['cases']:>6} {s['clean']:>6} {s['failed']:>7} {s['hung']:>5} {s['skipped']:>8}")
    print(f"\nclean: {s['clean_percent']} % of {s['cases']} cases")
    if s["failures"]:
        print("\nfailures:")
        for r in s["failures"]:
            print(f"- [{r['class']}] {r['case']} ({r['verdict']}, {r['seconds']} s)\n    {r['command'][:300]}\n"
                  f"    {r['detail'][:300]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="about one case in eight of each class")
    ap.add_argument("--classes", default="", help=f"comma-separated classes (default: all): {', '.join(CLASSES)}")
    ap.add_argument("--match", default="", help="only the cases whose class/name matches this regular expression")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds before a case counts as hung (default 60)")
    ap.add_argument("--keep", type=Path, default=None, help="copy the folders of failing cases here")
    ap.add_argument("--json", action="store_true", help="print one JSON object (the summary and every case)")
    ap.add_argument("--list", action="store_true", help="list the selected cases, run nothing")
    ap.add_argument("--app-case", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.app_case:
        app_worker(args.app_case)
        return
    cases = select(build_cases(), args)
    if args.list:
        for c in cases:
            print(f"{c.key}\t{shlex.join(_short(a) for a in c.argv) if c.argv else c.app or 'several processes'}")
        print(f"{len(cases)} cases", file=sys.stderr)
        return
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="placelab-adversarial-"))
    env = {k: v for k, v in os.environ.items() if k not in ("PLACELAB_DEBUG", "PLACELAB_RUNS_DIR")}
    env.update(PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), COLUMNS="120",
               PLACELAB_CACHE_DIR=str(base / "cache"), PLACELAB_CACHE=str(base / "graph-cache"),
               XDG_CACHE_HOME=str(base / "xdg-cache"), XDG_DATA_HOME=str(base / "xdg-data"))
    fx = Fixtures(base, env)
    results = []
    t0 = time.perf_counter()
    try:
        for i, c in enumerate(cases, 1):
            r = run_case(c, base, env, fx, args.timeout, args.keep)
            results.append(r)
            print(f"[{i}/{len(cases)}] {r['verdict']:<7} {r['seconds']:>6.1f} s  {c.key}"
                  + ("" if r["verdict"] == "clean" else f"\n    {r['detail'][:200]}"), file=sys.stderr, flush=True)
    finally:
        _remove(base)
    s = summarize(results)
    s["seconds"] = round(time.perf_counter() - t0, 1)
    if args.json:
        print(json.dumps({**s, "results": results}))
    else:
        print_report(s)
        print(f"\n{len(results)} cases in {s['seconds'] / 60:.1f} min")


if __name__ == "__main__":
    main()
