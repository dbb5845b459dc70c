"""How does each baseline placer scale? Seconds to place a random DAG of 1k to 1M ops on 4 devices, one core.

Issue #55, item 3: every baseline places a 100k-op random DAG on 4 devices in under 60 s on one core, and 1M ops
where memory allows. For each placer × size (``random_dag(ops=N, seed=0)``, its default degree, on ``p100x4``)
one child process, pinned to one core (``sched_setaffinity``) with numba, BLAS and torch held to one thread,
builds the graph, warms the placer up on a 200-op graph (loads the numba kernels from their on-disk cache),
then times one ``place()`` call. A child still running after ``--timeout`` seconds is killed and reported as
``> timeout``; a size whose placer timed out is not tried at the next size. The growth exponent ``k`` in
``t ∝ n^k`` is fitted (least squares in log–log) over the sizes that took at least 5 ms.

Usage::

    .venv/bin/python benchmarks/bench_placer_scale.py --quick            # 1k and 10k ops
    nice -n 10 .venv/bin/python benchmarks/bench_placer_scale.py         # 1k, 10k, 100k ops
    .venv/bin/python benchmarks/bench_placer_scale.py --sizes 1000,100000,1000000 --placers m-etf,heft --json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Every baseline but the learned placers; ``search`` ones with a small budget (their budget bounds their time).
BASELINES = ("single-device", "round-robin", "random", "metis", "kahip", "scotch", "mincut", "critical-path", "heft",
             "m-etf", "m-topo", "m-sct", "local-search")
PARAMS = {"local-search": {"evaluations": 200}, "critical-path": {}}
ONE_THREAD = {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def child(placer: str, ops: int, cluster: str) -> None:
    """In the child: time one ``place()`` of ``placer`` on ``random_dag(ops, seed=0)``; one JSON line on stdout."""
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    sys.path.insert(0, str(ROOT))
    from engine.generators import random_dag
    from engine.presets import PRESETS
    from policies.registry import make_placer

    c = PRESETS[cluster]()
    t0 = time.perf_counter()
    g = random_dag(ops=ops, seed=0)
    build_s = time.perf_counter() - t0
    make_placer(placer, **PARAMS.get(placer, {})).place(random_dag(ops=200, seed=1), c, seed=0)
    p = make_placer(placer, **PARAMS.get(placer, {}))
    t0 = time.perf_counter()
    p.place(g, c, seed=0)
    print(json.dumps({"placer": placer, "ops": ops, "edges": g.num_edges, "seconds": time.perf_counter() - t0,
                      "build_s": build_s}))


def run_one(placer: str, ops: int, cluster: str, timeout: float) -> dict:
    env = {**os.environ, **ONE_THREAD}
    cmd = [sys.executable, __file__, "--child", placer, str(ops), cluster]
    t0 = time.perf_counter()
    try:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout + 120, check=False)
    except subprocess.TimeoutExpired:
        return {"placer": placer, "ops": ops, "seconds": None, "status": "timeout"}
    if out.returncode != 0:
        return {"placer": placer, "ops": ops, "seconds": None, "status": "failed",
                "error": (out.stderr.strip().splitlines() or ["?"])[-1][:200]}
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row["status"] = "ok" if row["seconds"] <= timeout else "over"
    row["wall_s"] = time.perf_counter() - t0
    return row


def exponent(rows: list[dict]) -> float | None:
    pts = [(math.log(r["ops"]), math.log(r["seconds"])) for r in rows if r.get("seconds") and r["seconds"] >= 0.005]
    if len(pts) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", nargs=3, metavar=("PLACER", "OPS", "CLUSTER"), help=argparse.SUPPRESS)
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--placers", default=",".join(BASELINES))
    ap.add_argument("--cluster", default="p100x4")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds a place() may take before it is stopped")
    ap.add_argument("--quick", action="store_true", help="1k and 10k ops only")
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = ap.parse_args(argv)
    if args.child:
        child(args.child[0], int(args.child[1]), args.child[2])
        return 0
    sizes = [1000, 10_000] if args.quick else [int(s) for s in args.sizes.split(",")]
    placers = [p.strip() for p in args.placers.split(",") if p.strip()]
    table: dict[str, list[dict]] = {}
    for placer in placers:
        rows = []
        for ops in sizes:
            row = run_one(placer, ops, args.cluster, args.timeout)
            rows.append(row)
            took = "" if row["seconds"] is None else f"{row['seconds']:.2f} s"
            print(f"{placer:14s} {ops:>9,} ops: {row['status']:8s} {took}", file=sys.stderr, flush=True)
            if row["status"] != "ok":
                break
        table[placer] = rows
    if args.json:
        print(json.dumps({"cluster": args.cluster, "timeout_s": args.timeout, "sizes": sizes,
                          "results": {p: {"rows": r, "exponent": exponent(r)} for p, r in table.items()}}))
        return 0
    head = f"{'placer':14s} " + " ".join(f"{s:>11,}" for s in sizes) + "   exponent"
    print(f"seconds to place a random DAG on {args.cluster}, one core (issue 55's goal: < 60 s at 100k ops; "
          f"a placer was stopped after {args.timeout:g} s)")
    print(head)
    for placer, rows in table.items():
        cells = []
        for ops in sizes:
            r = next((r for r in rows if r["ops"] == ops), None)
            cells.append("—" if r is None else f"> {args.timeout:g}" if r["status"] in ("timeout", "over")
                         else r["status"] if r["seconds"] is None else f"{r['seconds']:.3f}")
        k = exponent(rows)
        print(f"{placer:14s} " + " ".join(f"{c:>11s}" for c in cells) + f"   {'—' if k is None else f'{k:.2f}'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
