"""Do the learned placers' defaults learn on graphs and clusters other than the ones they were tuned on?

For each cell (graph × cluster) and learned placer, a fresh policy with the registered default
hyper-parameters (plus ``--param`` overrides) trains on the graph alone for ``--episodes``
episodes (:class:`policies.rl.core.trainer.Trainer`, stopping rule off). Reported per cell:

* ``first``, ``last`` — the median sampled runtime (the makespan of the episode's final
  placement, the learning curve's ``sampled_runtime``) over the first and the last ``--window``
  episodes; learning means ``last < first`` (``trend`` = last / first − 1, negative is good);
* ``best`` — the best runtime found during training;
* ``baseline`` — the best of the heuristic placers ``--baselines`` on the same cell, and
  ``best / baseline``.

Usage::

    .venv/bin/python benchmarks/bench_learning_matrix.py                      # the default matrix
    .venv/bin/python benchmarks/bench_learning_matrix.py --placers placeto --episodes 200 \\
        --param discount=1 --json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from typing import Any

import torch

from engine.presets import PRESETS
from engine.sim.simulator import Simulator
from engine.specs import load_graph
from learning_runs import parse_params, train_alone, window_medians
from policies.registry import make_placer
from policies.rl.core.reinforce import Budget

GRAPHS = ("gen:random?ops=200&seed=1", "gen:family-cifar10?index=0&seed=0",
          "gen:rnnlm?steps=4&units=64&batch=4&vocab=100")
CLUSTERS = ("k80x2", "p100x4", "v100x8")
BASELINES = ("single-device", "round-robin", "heft", "m-etf", "metis")


def best_baseline(graph, cluster, names: list[str]) -> tuple[str, float]:
    """The heuristic placer with the lowest makespan on ``graph`` and ``cluster``."""
    sim = Simulator(graph, cluster)
    results = []
    for name in names:
        placement = make_placer(name).place(graph, cluster, seed=0)
        results.append((sim.run(placement.devices).makespan, name))
    ms, name = min(results)
    return name, ms


def learning_cell(placer: str, graph, cluster, params: dict[str, Any], episodes: int, window: int,
                  seed: int) -> dict[str, Any]:
    """Train on one cell; the sampled runtime's first/last-window medians, the best, wall time."""
    t0 = time.perf_counter()
    trainer, task, rows = train_alone(placer, graph, cluster, params, Budget(episodes=episodes), seed)
    wall = time.perf_counter() - t0
    med = window_medians(rows, ("sampled_runtime",), window)
    first, last = med["sampled_runtime_first"], med["sampled_runtime_last"]
    return {"groups": task.num_groups, "episodes": len(rows), "first_s": first, "last_s": last,
            "trend": last / first - 1.0, "best_s": trainer.best["g"].makespan, "wall_s": wall}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", default=",".join(GRAPHS), help="graph specs separated by ';'")
    ap.add_argument("--clusters", default=",".join(CLUSTERS))
    ap.add_argument("--placers", default="placeto,rnn")
    ap.add_argument("--episodes", type=int, default=200)
    ap.add_argument("--window", type=int, default=50)
    ap.add_argument("--param", action="append", default=[], help="key=value (JSON value) for every placer")
    ap.add_argument("--baselines", default=",".join(BASELINES))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    params = parse_params(args.param)
    graphs = [g for g in args.graphs.replace(";", ",").split(",") if g]
    rows = []
    for spec in graphs:
        graph = load_graph(spec)
        for cname in args.clusters.split(","):
            cluster = PRESETS[cname]()
            base_name, base_ms = best_baseline(graph, cluster, args.baselines.split(","))
            for placer in args.placers.split(","):
                cell = learning_cell(placer, graph, cluster, params, args.episodes, args.window, args.seed)
                row = {"graph": spec, "cluster": cname, "placer": placer, **cell, "baseline": base_name,
                       "baseline_s": base_ms, "best_over_baseline": cell["best_s"] / base_ms}
                rows.append(row)
                if not args.json:
                    print(f"{spec:36} {cname:7} {placer:8} {cell['groups']:4d} groups"
                          f"  first {cell['first_s'] * 1e3:8.2f}  last {cell['last_s'] * 1e3:8.2f} ms"
                          f" ({cell['trend']:+6.1%})  best {cell['best_s'] * 1e3:8.2f}"
                          f"  {base_name} {base_ms * 1e3:8.2f} ms (×{row['best_over_baseline']:.2f})"
                          f"  {cell['wall_s']:5.0f} s", flush=True)
    meta = {"cpus": os.cpu_count(), "threads": args.threads, "python": platform.python_version(),
            "episodes": args.episodes, "window": args.window, "params": params, "load_avg": os.getloadavg()[0]}
    learned = sum(r["trend"] < 0 for r in rows)
    if args.json:
        json.dump({"meta": meta, "rows": rows, "cells_learning": learned}, sys.stdout)
        print()
    else:
        print(f"{learned} of {len(rows)} cells: last-{args.window} median below first-{args.window} median "
              f"(load average {meta['load_avg']:.1f} on {meta['cpus']} CPUs)")


if __name__ == "__main__":
    main()
