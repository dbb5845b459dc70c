"""Does Placeto learn? Issue #32's test, setting by setting.

For each setting (a graph, a cluster, Placeto parameters) one fresh policy trains for
``--episodes`` episodes (seed 0, one thread, no stopping rule) and the script prints the
learning-health figures of :mod:`policies.rl.core.health`:

* mean per-decision entropy over the first and the last ``--window`` episodes, and the last
  over ln(#devices) (the goal: at most 0.75);
* median sampled runtime over the first and the last window, and their ratio (goal: at most 0.92);
* the best placement found against the best of as many uniformly random placements as the
  training evaluated, on the same simulator.

    .venv/bin/python benchmarks/bench_placeto_learning.py                      # the two goal graphs
    .venv/bin/python benchmarks/bench_placeto_learning.py --settings chainmm --episodes 300
    .venv/bin/python benchmarks/bench_placeto_learning.py --param network=paper --param init=single
    .venv/bin/python benchmarks/bench_placeto_learning.py --quick        # chainmm, 100 episodes (~1 min)

``--settings`` picks from :data:`SETTINGS`; every ``--param`` applies to all of them.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time

import torch

from engine.specs import load_cluster, load_graph
from learning_runs import parse_params, train_alone
from policies.rl.core.health import random_search
from policies.rl.core.reinforce import Budget

#: name → (graph spec, cluster, simulation mode or None for the cluster's own)
SETTINGS = {
    "nmt": ("gen:nmt", "k80x2", None),
    "chainmm": ("gen:chainmm", "p100x4", "work_conserving"),
    "random200": ("gen:random?ops=200&seed=1", "p100x4", None),  # where γ = 0 once learned the wrong thing
    "random200-k80": ("gen:random?ops=200&seed=1", "k80x2", None),  # the app's browser test trains on it
}


def run(name: str, episodes: int, window: int, params: dict, seed: int) -> dict:
    spec, cluster_name, mode = SETTINGS[name]
    graph = load_graph(spec)
    cluster = load_cluster(cluster_name)
    if mode:
        cluster = cluster.with_simulation(mode=mode)
    t0 = time.perf_counter()
    trainer, task, rows = train_alone("placeto", graph, cluster, params, Budget(episodes=episodes), seed)
    wall = time.perf_counter() - t0
    first, last = rows[:window], rows[-window:]
    n_dev = cluster.num_devices
    best = trainer.best["g"]
    evaluated = trainer.placements  # every simulated placement, intermediate ones included
    rand = random_search(task, int(evaluated), seed=seed)
    return {
        "setting": name, "episodes": len(rows), "wall_s": round(wall, 1),
        "entropy_first": statistics.fmean(r["entropy"] for r in first),
        "entropy_last": statistics.fmean(r["entropy"] for r in last),
        "entropy_last_over_uniform": statistics.fmean(r["entropy"] for r in last) / math.log(n_dev),
        "sampled_first_ms": 1e3 * statistics.median(r["sampled_runtime"] for r in first),
        "sampled_last_ms": 1e3 * statistics.median(r["sampled_runtime"] for r in last),
        "best_ms": 1e3 * best.makespan, "simulations": int(evaluated),
        "random_best_ms": 1e3 * rand.makespan,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--settings", default="nmt,chainmm")
    ap.add_argument("--episodes", type=int, default=1000)
    ap.add_argument("--window", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--param", action="append", default=[], help="KEY=VALUE, a Placeto parameter")
    ap.add_argument("--quick", action="store_true", help="chainmm only, 100 episodes, windows of 20")
    ap.add_argument("--json", action="store_true", help="one JSON object per setting instead of the text")
    args = ap.parse_args()
    if args.quick:
        args.settings, args.episodes, args.window = "chainmm", 100, 20
    torch.set_num_threads(1)
    params = parse_params(args.param)
    if not args.json:
        print(f"params {params or 'defaults'}, {args.episodes} episodes, seed {args.seed}, window {args.window}")
    for name in args.settings.split(","):
        r = run(name, args.episodes, args.window, params, args.seed)
        if args.json:
            print(json.dumps({**r, "params": params, "seed": args.seed, "window": args.window}), flush=True)
            continue
        print(f"{r['setting']:>10}: entropy {r['entropy_first']:.3f} -> {r['entropy_last']:.3f} "
              f"({r['entropy_last_over_uniform']:.2f} of uniform), sampled median {r['sampled_first_ms']:.1f} -> "
              f"{r['sampled_last_ms']:.1f} ms (x{r['sampled_last_ms'] / r['sampled_first_ms']:.3f}), best "
              f"{r['best_ms']:.1f} ms vs random search {r['random_best_ms']:.1f} ms over {r['simulations']} "
              f"simulations, {r['wall_s']} s", flush=True)


if __name__ == "__main__":
    main()
