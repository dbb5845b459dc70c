"""How fast and how good are the baseline placers? Seconds to place and simulated makespan.

For a random graph (``random_dag``, seed 0, ``--ops`` ops, default 10,000) on a cluster
(``--cluster``, default ``v100x8``), every list scheduler (``critical-path``, ``heft``,
``m-etf``, ``m-topo``, ``m-sct``), ``local-search`` (``--search-evals`` simulator
evaluations) and ``single-device`` for reference: the seconds ``place()`` takes (median of
``--repeat`` calls after one untimed warm-up on a 200-op graph, which loads the numba
kernels from their on-disk cache), the simulated makespan, its ratio to the lower bound,
the peak memory and whether any device runs out of memory. Targets (issue "Baseline
placers"): every list scheduler under 10 s on 10k ops / 8 devices, m-etf under 2 s.

Usage::

    .venv/bin/python benchmarks/bench_placers.py            # a table
    .venv/bin/python benchmarks/bench_placers.py --json     # one JSON object on stdout
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

from engine.generators import random_dag
from engine.presets import PRESETS
from engine.sim.objectives import lower_bound
from engine.sim.simulator import Simulator
from policies.registry import make_placer

PLACERS = ("single-device", "critical-path", "heft", "m-etf", "m-topo", "m-sct", "local-search")
TARGET_S = {"m-etf": 2.0, "critical-path": 10.0, "heft": 10.0, "m-topo": 10.0, "m-sct": 10.0}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=10_000)
    ap.add_argument("--cluster", default="v100x8")
    ap.add_argument("--repeat", type=int, default=3, help="timed place() calls per placer (median)")
    ap.add_argument("--search-evals", type=int, default=500, help="local-search budget (simulator evaluations)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    g = random_dag(ops=args.ops, seed=0)
    c = PRESETS[args.cluster]()
    sim = Simulator(g, c)
    lb = lower_bound(g, c)
    small = random_dag(ops=200, seed=1)
    rows = []
    for name in PLACERS:
        params = {"evaluations": args.search_evals} if name == "local-search" else {}
        placer = make_placer(name, **params)
        placer.place(small, c)  # warm-up: numba kernels load from the on-disk cache
        repeat = 1 if name == "local-search" else args.repeat
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            p = placer.place(g, c, seed=0)
            times.append(time.perf_counter() - t)
        s = sim.run(p)
        secs = statistics.median(times)
        target = TARGET_S.get(name)
        rows.append({"placer": name, "seconds_to_place": secs, "makespan_s": s.makespan,
                     "vs_lower_bound": s.makespan / lb, "peak_memory_gb": float(s.peak_memory.max()) / 1e9,
                     "oom": bool(s.any_oom), "target_s": target,
                     "meets_target": None if target is None else secs < target})
    cpu = time.process_time()
    if args.json:
        print(json.dumps({"graph": g.name, "ops": g.num_ops, "edges": g.num_edges, "cluster": c.name,
                          "lower_bound_s": lb, "results": rows}))
        return 0
    print(f"# placers on {g.name} ({g.num_ops} ops, {g.num_edges} edges), cluster {c.name}; "
          f"lower bound {lb * 1e3:.2f} ms")
    print(f"# python {platform.python_version()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; "
          f"local-search budget {args.search_evals} evaluations")
    print(f"{'placer':<15}{'place s':>9}{'target':>8}{'makespan ms':>13}{'x LB':>7}{'peak GB':>9}{'OOM':>5}")
    for r in rows:
        tgt = "" if r["target_s"] is None else f"<{r['target_s']:g}" + ("" if r["meets_target"] else "!")
        print(f"{r['placer']:<15}{r['seconds_to_place']:>9.3f}{tgt:>8}{r['makespan_s'] * 1e3:>13.2f}"
              f"{r['vs_lower_bound']:>7.2f}{r['peak_memory_gb']:>9.2f}{'yes' if r['oom'] else 'no':>5}")
    print(f"# CPU time {cpu:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
