"""Does Placeto *learn* on ``gen:nmt`` (2 layers, ``k80x2``) within Placeto Table 1's 20.4 K placements?

Issue #16 asks for Placeto's best NMT placement within Table 1's 20,400 placements (NMT / 2
GPUs). Table 1 counts placements *sampled*, one per episode (``docs/budgets.md``: its "4.7×
fewer episodes" is its NASNet ratio of placements, 16.3 K / 3.5 K); until issue #32 this
benchmark counted every placement Placeto's intermediate rewards simulate (one at the start and
one per step that moves a group: about 64 per episode at 128 groups on two devices), so its
"20,400 placements" were about 320 episodes (40 updates). The
budget is now 20,400 episodes. A best found early can come from a policy that learned or from the
random placements of one that did not, so this benchmark reports both, per hyper-parameter
setting and seed:

1. **Coin-flip placements.** From Placeto's start (every group on its first device, our default
   ``init=single``), each group moves to the other device with probability *p*; the mean and
   median runtime of ``--flips`` such placements per *p*. Where it is lowest is where the
   component of the policy gradient that every group shares (how often the policy moves a group
   at all) vanishes.
2. **Toward a good placement.** The best of ``10 × --flips`` uniformly random placements, *b*,
   and policies that put each group on *b*'s device with probability 1/2 + *e* (the other with
   1/2 − *e*; the same random draws for every *e*): *e* = 0 is the uniform policy, 1/2 is *b*
   itself. On identical devices a placement
   and its relabelling take the same time (``test_identical_devices_are_interchangeable``), so
   *e* and −*e* give the same mean runtime: the curve is even in *e*, its slope at the uniform
   policy is zero, and the policy gradient along any direction that depends on the group alone
   vanishes there. Where the curve stays flat around *e* = 0 (each row prints its change from
   *e* = 0), the uniform policy sits on a plateau in the direction of a good placement: the
   gradient is zero there by symmetry and stays near zero until the policy is already far from
   uniform, so a policy leaves it only as far as its first steps happen to break the symmetry.
3. **Following the parents.** The simplest policy that depends on where the other groups are:
   in the traversal order, a group goes where one of its already placed parents (drawn at
   random) went with probability *c*, elsewhere otherwise (a group without a placed parent: a
   fair coin). *c* = 1/2 is the uniform policy; if its runtime falls as *c* grows, co-locating
   with the parents is a direction in which the policy could leave uniform.
4. **Training runs.** For each setting (``name:key=value,...``, Placeto parameters over the
   registered defaults) and seed, a fresh policy trains on the graph until ``--placements``
   placements have been sampled — one per episode, as Table 1 counts them — (or ``--episodes``,
   no limit by default), the learning rate and entropy weight decaying over that budget
   (Placeto App. A.7), no stopping rule. Reported: the median entropy per decision and sampled
   runtime over the first and the last ``--window`` episodes (at most a quarter of the run's
   episodes each), the best runtime and after how many placements sampled (and evaluated) it
   was first found, and *learned* (yes when the last window's entropy is below 0.9 × ln D *and*
   its sampled runtime below the first's).

Usage::

    .venv/bin/python benchmarks/bench_placeto_budget.py                  # 18 settings × 3 seeds (a day and more)
    .venv/bin/python benchmarks/bench_placeto_budget.py --quick          # 3 settings, seed 0, 64 placements
    .venv/bin/python benchmarks/bench_placeto_budget.py --settings "default:;ent0:entropy=0,entropy_final=0" \\
        --seeds 0,1 --workers 2 --json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

SETTINGS = ("default:", "discount=0:discount=0", "discount=0.9:discount=0.9", "entropy=0:entropy=0,entropy_final=0",
            "entropy=1e-3:entropy=1e-3", "lr=5e-3:lr=5e-3,lr_final=5e-4", "lr=1e-2:lr=1e-2,lr_final=1e-3",
            "batch=4:batch=4", "batch=16:batch=16", "groups=32:groups=32", "groups=64:groups=64",
            "passes=2:passes=2", "paper (random start, lr 1e-3):init=random,lr=1e-3,lr_final=1e-4",
            "discount=0.97:discount=0.97", "discount=0.99:discount=0.99", "baseline_window=50:baseline_window=50",
            "entropy=0,lr=5e-3:entropy=0,entropy_final=0,lr=5e-3,lr_final=5e-4",
            "entropy=0,batch=16:entropy=0,entropy_final=0,batch=16")
QUICK_SETTINGS = ("default:", "entropy=0:entropy=0,entropy_final=0", "groups=32:groups=32")
QUICK_PLACEMENTS = 64  # placements sampled (episodes): 8 updates of the default batch of 8


def parse_setting(text: str) -> tuple[str, dict[str, Any]]:
    """``name:key=value,key=value`` → (name, params); values are numbers where they parse as numbers."""
    from placelab.cli_common import parse_params

    name, _, rest = text.partition(":")
    return name, parse_params([p for p in rest.split(",") if p])


def placeto_task(graph_spec: str, cluster_name: str):
    """The graph grouped as Placeto's defaults group it, on the preset ``cluster_name``."""
    from engine.presets import PRESETS
    from engine.specs import load_graph
    from policies.rl.core.task import task_for
    from policies.rl.registry import make_config

    return task_for(load_graph(graph_spec), PRESETS[cluster_name](), make_config("placeto", {}))


def coin_flips(task, flips: int, seed: int) -> list[dict[str, float]]:
    """Mean / median / min runtime of placements moving each group off its start with probability p."""
    start = np.argmax(task.feasible, axis=1)
    other = (start + 1) % task.num_devices
    rng = np.random.default_rng(seed)
    rows = []
    for p in np.linspace(0.0, 1.0, 11):
        runs = [task.evaluate(np.where(rng.random(task.num_groups) < p, other, start)).makespan
                for _ in range(flips)]
        rows.append({"p": float(p), "mean_s": float(np.mean(runs)), "median_s": float(np.median(runs)),
                     "min_s": float(np.min(runs))})
    return rows


def toward_curve(task, flips: int, seed: int) -> dict[str, Any]:
    """Mean / median runtime of policies biased by e towards the best of ``10 · flips`` random placements."""
    rng = np.random.default_rng(seed)
    tries = [task.random_placement(rng) for _ in range(10 * flips)]
    times = [task.evaluate(p).makespan for p in tries]
    best = tries[int(np.argmin(times))]
    # common random numbers: every e uses the same draws, so the curve's differences are not noise
    u = rng.random((flips, task.num_groups))
    other = (best + rng.integers(1, task.num_devices, (flips, task.num_groups))) % task.num_devices
    rows = []
    for e in (0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.45, 0.5):
        runs = [task.evaluate(np.where(u[i] < 0.5 + e, best, other[i])).makespan for i in range(flips)]
        rows.append({"e": e, "mean_s": float(np.mean(runs)), "median_s": float(np.median(runs))})
    return {"best_of": 10 * flips, "best_s": float(min(times)), "rows": rows}


def follow_parents(task, flips: int, seed: int) -> list[dict[str, float]]:
    """Mean / median runtime of policies that put a group with a random placed parent with probability c."""
    parents: list[list[int]] = [[] for _ in range(task.num_groups)]
    for u, v in task.edges.T:
        parents[v].append(int(u))
    rng = np.random.default_rng(seed)
    d = task.num_devices
    # common random numbers for every c, as in toward_curve
    u, pick, shift = rng.random((flips, task.num_groups)), rng.integers(0, 1 << 30, (flips, task.num_groups)), \
        rng.integers(1, d, (flips, task.num_groups))
    coin = rng.integers(0, d, (flips, task.num_groups))
    rows = []
    for c in (0.5, 0.6, 0.7, 0.8, 0.9, 1.0):
        runs = []
        for i in range(flips):
            dev = np.full(task.num_groups, -1)
            for g in task.order:
                placed = [q for q in parents[g] if dev[q] >= 0]
                if not placed:
                    dev[g] = coin[i, g]
                else:
                    near = dev[placed[pick[i, g] % len(placed)]]
                    dev[g] = near if u[i, g] < c else (near + shift[i, g]) % d
            runs.append(task.evaluate(dev).makespan)
        rows.append({"c": c, "mean_s": float(np.mean(runs)), "median_s": float(np.median(runs))})
    return rows


def train_run(job: tuple[str, str, str, dict[str, Any], int, int, int, int]) -> dict[str, Any]:
    """One training run (in a worker process, one torch thread)."""
    import torch

    from engine.presets import PRESETS
    from engine.specs import load_graph
    from learning_runs import train_alone, window_medians
    from policies.rl.core.reinforce import Budget

    graph_spec, cluster_name, name, params, seed, placements, episodes, window = job
    torch.set_num_threads(1)
    cluster = PRESETS[cluster_name]()
    t0 = time.perf_counter()
    trainer, task, rows = train_alone("placeto", load_graph(graph_spec), cluster, params,
                                      Budget(episodes=episodes, placements=placements), seed)
    med = window_medians(rows, ("entropy", "sampled_runtime"), window, most=0.25)
    best = trainer.best["g"]
    out = {"setting": name, "params": params, "seed": seed, "groups": task.num_groups, "episodes": len(rows),
           "placements_sampled": trainer.sampled, "placements_evaluated": trainer.placements,
           "entropy_first": med["entropy_first"],
           "entropy_last": med["entropy_last"], "sampled_first_s": med["sampled_runtime_first"],
           "sampled_last_s": med["sampled_runtime_last"], "best_s": best.makespan,
           "found_after": best.placements_sampled, "found_after_evaluated": best.placements_evaluated,
           "wall_s": time.perf_counter() - t0}
    out["learned"] = bool(out["entropy_last"] < 0.9 * math.log(cluster.num_devices)
                          and out["sampled_last_s"] < out["sampled_first_s"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graph", default="gen:nmt")
    ap.add_argument("--cluster", default="k80x2")
    ap.add_argument("--settings", default=None, help="'name:key=value,...' separated by ';'")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--placements", type=int, default=20_400,
                    help="placements sampled, one per episode (Placeto Table 1, NMT / 2 GPUs; docs/budgets.md)")
    ap.add_argument("--episodes", type=int, default=None, help="episode limit (default: none)")
    ap.add_argument("--window", type=int, default=50)
    ap.add_argument("--flips", type=int, default=200)
    ap.add_argument("--curve-seed", type=int, default=0, help="seed of the coin-flip and toward-a-good-placement draws")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--quick", action="store_true",
                    help=f"3 settings, seed 0, {QUICK_PLACEMENTS} placements sampled, 50 flips")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    settings = args.settings.split(";") if args.settings else list(QUICK_SETTINGS if args.quick else SETTINGS)
    seeds = [0] if args.quick else [int(s) for s in args.seeds.split(",")]
    placements, flips = (QUICK_PLACEMENTS, 50) if args.quick else (args.placements, args.flips)
    t0 = time.perf_counter()
    task = placeto_task(args.graph, args.cluster)
    curve = coin_flips(task, flips, args.curve_seed)
    toward = toward_curve(task, flips, args.curve_seed)
    follow = follow_parents(task, flips, args.curve_seed)
    if not args.json:
        print(f"{args.graph} on {args.cluster}: coin-flip placements from the single-device start "
              f"({flips} per p), runtime in ms")
        for r in curve:
            print(f"  p = {r['p']:.1f}  mean {r['mean_s'] * 1e3:7.1f}  median {r['median_s'] * 1e3:7.1f}"
                  f"  min {r['min_s'] * 1e3:7.1f}")
        print(f"toward the best of {toward['best_of']} random placements ({toward['best_s'] * 1e3:.1f} ms): each "
              f"group on its device with probability 1/2 + e ({flips} per e), runtime in ms")
        for r in toward["rows"]:
            print(f"  e = {r['e']:.2f}  mean {r['mean_s'] * 1e3:7.1f}  median {r['median_s'] * 1e3:7.1f}"
                  f"  mean - mean(e = 0) {(r['mean_s'] - toward['rows'][0]['mean_s']) * 1e3:+7.1f}")
        print(f"following a placed parent with probability c ({flips} per c), runtime in ms")
        for r in follow:
            print(f"  c = {r['c']:.1f}  mean {r['mean_s'] * 1e3:7.1f}  median {r['median_s'] * 1e3:7.1f}")
        limit = f" or {args.episodes:,} episodes" if args.episodes else ""
        print(f"training runs: budget {placements:,} placements sampled (one per episode){limit}, "
              f"first / last {args.window} episodes", flush=True)
    jobs = [(args.graph, args.cluster, *parse_setting(s), seed, placements, args.episodes, args.window)
            for s in settings for seed in seeds]
    runs = []
    with ProcessPoolExecutor(args.workers) as pool:
        for r in pool.map(train_run, jobs):
            runs.append(r)
            if not args.json:
                print(f"  {r['setting']:32s} seed {r['seed']}  {r['groups']:3d} groups {r['episodes']:5d} ep"
                      f"  entropy {r['entropy_first']:.3f} -> {r['entropy_last']:.3f}"
                      f"  sampled {r['sampled_first_s'] * 1e3:6.1f} -> {r['sampled_last_s'] * 1e3:6.1f} ms"
                      f"  best {r['best_s'] * 1e3:6.1f} ms after {r['found_after']:6,} sampled"
                      f" ({r['found_after_evaluated']:,} evaluated)"
                      f"  learned {'yes' if r['learned'] else 'no '}  {r['wall_s']:4.0f} s", flush=True)
    meta = {"graph": args.graph, "cluster": args.cluster, "placements": placements, "episodes": args.episodes,
            "cpus": os.cpu_count(), "python": platform.python_version(), "load_avg": os.getloadavg()[0],
            "wall_s": time.perf_counter() - t0}
    if args.json:
        json.dump({"meta": meta, "coin_flips": curve, "toward": toward, "follow_parents": follow, "runs": runs},
                  sys.stdout)
        print()
    else:
        learned = sum(r["learned"] for r in runs)
        print(f"{learned} of {len(runs)} runs learned; {meta['wall_s']:.0f} s "
              f"(load average {meta['load_avg']:.1f} on {meta['cpus']} CPUs)")


if __name__ == "__main__":
    main()
