"""Fuzz soak: the CI fuzz cases (``tests/fuzz``) for as long as asked; prints cases/minute and failures.

Each case mutates a valid file of one importer format (formats taken in turn) and runs
``placelab graph info FILE --json`` on it in a worker process; a case fails on exit 1, a
traceback, more than one stderr line, a crash (signal) or no answer within the timeout. The
failing inputs are kept under ``--keep DIR`` (default: not kept) for reproduction.

``--kill-rounds N`` adds N rounds of ``kill -9`` (issue #34, item 9), alternately in-process and
on a local Ray runtime (``--workers 2``): a sweep driver SIGKILLs itself at a random result, either
before that result's row is appended or while its run is being stored; then ``placelab sweep --resume``
must leave exactly one run and one row per combination, and (on Ray) no state file and no process of the
killed driver's Ray session (its agents ignore SIGTERM and used to survive). A Ray round takes about a
minute on 2 cores.

Usage::

    .venv/bin/python benchmarks/fuzz_soak.py --minutes 5
    .venv/bin/python benchmarks/fuzz_soak.py --minutes 1 --formats graphml,tf-graphdef --json
    .venv/bin/python benchmarks/fuzz_soak.py --minutes 0.1 --kill-rounds 4
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fuzz"))
from harness import EXTREMES, MUTATION_KINDS, TEXT_SEEDS, Worker, file_name, make_tf_seeds, mutate


def random_ops(rng: random.Random) -> list[tuple]:
    """1-4 mutations, drawn like the CI test's hypothesis strategy."""
    return [(rng.choice(MUTATION_KINDS), rng.random(), rng.random(),
             rng.choice([rng.randbytes(rng.randrange(25)), rng.choice(EXTREMES)]))
            for _ in range(rng.randint(1, 4))]


ROOT = Path(__file__).resolve().parents[1]
KILL_SWEEP = ("gen:random?ops=20&seed=1,gen:random?ops=30&seed=2", "k80x2", "single-device,random,critical-path", 2)
#: The kill -9 tests' sweep driver, which SIGKILLs itself at its N-th row or stored run (its docstring).
KILL_DRIVER = ROOT / "tests" / "policies" / "sweep_kill_driver.py"


def kill_round(rng: random.Random, workers: int, timeout: float) -> dict:
    """One kill -9 and resume (see the module docstring); ``problem`` is None when every check held."""
    import psutil

    from engine.store.runs import RunStore
    from placelab.sweep import SweepSpec, sweep_rows

    graphs, clusters, placers, seeds = KILL_SWEEP
    plan = SweepSpec.from_specs(graphs, clusters, placers, seeds=seeds).plan()
    where, nth = rng.choice(["row", "finish"]), rng.randint(1, len(plan))
    case = {"workers": workers, "where": where, "nth": nth, "problem": None}
    with tempfile.TemporaryDirectory(prefix="placelab-kill-") as tmp:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PLACELAB_CACHE_DIR": str(Path(tmp) / "cache")}
        runs = str(Path(tmp) / "runs")
        t = time.perf_counter()
        driver = subprocess.run([sys.executable, str(KILL_DRIVER), where, str(nth), runs, str(workers), graphs,
                                 clusters, placers, str(seeds)], env=env, capture_output=True, text=True,
                                timeout=timeout, check=False)
        if driver.returncode != -signal.SIGKILL:
            case["problem"] = f"the driver ended with {driver.returncode}, not SIGKILL: {driver.stderr[-300:]}"
            return case
        store = RunStore(runs)
        (sweep,) = store.list(kind="sweep")
        state_file = Path(tmp) / "cache" / "ray-local" / f"{sweep.meta.get('pid')}.json"
        state = json.loads(state_file.read_text()) if state_file.is_file() else {"processes": []}
        resume = [sys.executable, "-m", "placelab.cli", "sweep", "--resume", sweep.id, "--runs-dir", runs, "--json"]
        resumed = subprocess.run(resume + (["--workers", str(workers)] if workers else []), env=env,
                                 capture_output=True, text=True, timeout=timeout, check=False)
        case["seconds"] = time.perf_counter() - t
        rows = sweep_rows(store.load(sweep.id))
        tagged = store.list(tag=f"sweep:{sweep.id}")
        alive = []
        for rec in state["processes"]:
            try:
                p = psutil.Process(rec["pid"])
                if abs(p.create_time() - rec["create_time"]) < 0.01 and p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(rec["name"])
            except psutil.Error:
                continue
        left = sorted(f.name for f in (Path(tmp) / "cache" / "ray-local").glob("*.json"))
        if resumed.returncode != 0:
            case["problem"] = f"resume exited {resumed.returncode}: {resumed.stderr.strip()[-300:]}"
        elif [r["task"] for r in rows] != list(range(len(plan))):
            case["problem"] = f"the table's tasks are {[r['task'] for r in rows]}"
        elif sorted(r.id for r in tagged) != sorted(r["run_id"] for r in rows if r["run_id"]):
            case["problem"] = f"{len(tagged)} runs tagged with the sweep for {len(rows)} rows"
        elif {r.status for r in tagged} != {"done"}:
            case["problem"] = f"run statuses {sorted({r.status for r in tagged})}"
        elif alive or left:
            case["problem"] = f"left behind: processes {alive}, state files {left}"
    return case


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=5.0, help="how long to run (default 5)")
    ap.add_argument("--formats", default="", help="comma-separated formats (default: all)")
    ap.add_argument("--seed", type=int, default=0, help="random seed of the mutations")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds before a case counts as a hang")
    ap.add_argument("--keep", type=Path, default=None, help="folder for the failing inputs")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--kill-rounds", type=int, default=0,
                    help="kill -9 rounds of a sweep driver, then --resume, alternately in-process and on Ray")
    args = ap.parse_args(argv)
    if not args.minutes > 0 or not args.timeout > 0 or args.kill_rounds < 0:
        ap.error("--minutes and --timeout must be positive, --kill-rounds at least 0")

    seeds = dict(TEXT_SEEDS)
    with tempfile.TemporaryDirectory(prefix="placelab-soak-") as tmp:
        try:
            seeds.update(make_tf_seeds(Path(tmp)))
        except (RuntimeError, OSError) as exc:
            print(f"skipping the TensorFlow formats: {exc}", file=sys.stderr)
    formats = [f for f in (args.formats.split(",") if args.formats else seeds) if f]
    unknown = [f for f in formats if f not in seeds]
    if unknown:
        ap.error(f"unknown format {unknown[0]!r} (formats: {', '.join(seeds)})")

    rng = random.Random(args.seed)
    worker = Worker(timeout_s=args.timeout)
    for fmt in formats:  # warm up (imports, TensorFlow) outside the timed loop; every seed must be a graph
        verdict = worker.run(seeds[fmt], file_name(fmt))
        if verdict.kind != "ok":
            print(f"the {fmt} seed is not a valid graph: {verdict.detail}", file=sys.stderr)
            worker.close()
            return 1
    cases, verdicts, failures = Counter(), Counter(), []
    busy = Counter()
    t0 = time.perf_counter()
    deadline = t0 + 60 * args.minutes
    try:
        while time.perf_counter() < deadline:
            for fmt in formats:
                ops = random_ops(rng)
                data = mutate(seeds[fmt], ops)
                t = time.perf_counter()
                verdict = worker.run(data, file_name(fmt))
                busy[fmt] += time.perf_counter() - t
                cases[fmt] += 1
                verdicts[(fmt, verdict.kind)] += 1
                if verdict.kind == "failure":
                    failures.append({"format": fmt, "mutations": repr(ops), "detail": verdict.detail})
                    print(f"FAILURE {fmt}: {verdict.detail}", file=sys.stderr, flush=True)
                    if args.keep:
                        args.keep.mkdir(parents=True, exist_ok=True)
                        (args.keep / f"failure-{len(failures):04d}-{fmt}").write_bytes(data)
    finally:
        worker.close()
    minutes = (time.perf_counter() - t0) / 60
    kills = [kill_round(rng, 2 if k % 2 else 0, 10 * args.timeout) for k in range(args.kill_rounds)]
    for k in kills:
        if k["problem"]:
            failures.append({"format": "kill -9", "mutations": repr(k), "detail": k["problem"]})
            print(f"FAILURE kill -9 ({k['where']} #{k['nth']}, workers {k['workers']}): {k['problem']}",
                  file=sys.stderr, flush=True)
    total = sum(cases.values())
    rows = [{"format": f, "cases": cases[f], "ok": verdicts[(f, "ok")], "bad_input": verdicts[(f, "bad input")],
             "failures": verdicts[(f, "failure")], "ms_per_case": 1e3 * busy[f] / max(cases[f], 1)} for f in formats]
    result = {"minutes": minutes, "cases": total, "cases_per_minute": total / minutes, "failures": len(failures),
              "per_format": rows, "kill_rounds": kills, "failure_details": failures[:50]}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{total} cases in {minutes:.1f} min ({total / minutes:.0f} cases/min), {len(failures)} failures")
        print(f"{'format':18} {'cases':>7} {'ok':>6} {'exit 2':>7} {'fail':>5} {'ms/case':>8}")
        for r in rows:
            print(f"{r['format']:18} {r['cases']:>7} {r['ok']:>6} {r['bad_input']:>7} {r['failures']:>5} "
                  f"{r['ms_per_case']:>8.1f}")
        if kills:
            bad = sum(1 for k in kills if k["problem"])
            print(f"kill -9 rounds: {len(kills)} ({sum(1 for k in kills if k['workers'])} on Ray), {bad} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
