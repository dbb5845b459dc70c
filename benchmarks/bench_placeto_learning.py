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
    .venv/bin/python benchmarks/bench_placeto_learning.py --settings chainmm --greedy-every 100 --samples 100
    .venv/bin/python benchmarks/bench_placeto_learning.py --settings chainmm --policy tabular --param lr=0.05

``--settings`` picks from :data:`SETTINGS`; every ``--param`` applies to all of them.

Diagnostics of the same training:

* ``--greedy-every N`` simulates the policy's greedy episode (argmax at every step) at the first update
  at or after every multiple of N episodes, and at the end; the end's device histogram is printed too.
  ``--samples S`` simulates S sampled episodes of the trained policy (their median and best).
* ``--policy tabular`` is a control: Placeto's MDP, rewards, baseline, loss and optimizer unchanged, its
  network replaced by one free logit per (group, device), zero at the start (uniform). What it learns is
  what REINFORCE's signal gives when no network stands in the way.
* ``--relabel K`` symmetrises each update over device relabellings (K − 1 random ones besides the
  identity, drawn per update): every visited state is also taken with its devices renamed, the action
  renamed alike, with the same advantage; the loss is averaged over the K copies. Valid only where the
  devices are interchangeable (same kind, speed and memory, one bandwidth and latency between any two);
  the script refuses the option elsewhere. This is data augmentation by the problem's symmetry (as board
  games' symmetries are used in training), not part of Placeto.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import time

import numpy as np
import torch

from engine.cluster import Cluster
from learning_runs import learning_setting, parse_params, train_agent
from policies.rl.core.health import random_search
from policies.rl.core.reinforce import Budget
from policies.rl.placeto.agent import PlacetoAgent
from policies.rl.placeto.net import NEG
from policies.rl.registry import make_agent

#: name → (graph spec, cluster, simulation mode or None for the cluster's own)
SETTINGS = {
    "nmt": ("gen:nmt", "k80x2", None),
    "chainmm": ("gen:chainmm", "p100x4", "work_conserving"),
    "random200": ("gen:random?ops=200&seed=1", "p100x4", None),  # where γ = 0 once learned the wrong thing
    "random200-k80": ("gen:random?ops=200&seed=1", "k80x2", None),  # the app's browser test trains on it
}


class TabularPlaceto(PlacetoAgent):
    """The control of ``--policy tabular``: Placeto's agent with one free logit per (group, device) for a
    network; the visited state's features are ignored, only the group in hand counts."""

    def __init__(self, num_devices: int, config, *, seed: int, num_groups: int) -> None:
        super().__init__(num_devices, config, seed=seed)
        self.model = torch.nn.Module()
        self.model.logits = torch.nn.Parameter(torch.zeros(num_groups, num_devices))

    def _logits(self, states, grad: bool = False):
        groups = torch.tensor([v for _, _, v in states])
        allowed = torch.from_numpy(np.stack([t.feasible[v] for t, _, v in states]))
        return self.model.logits[groups].masked_fill(~allowed, NEG)


def interchangeable(cluster: Cluster) -> bool:
    """Whether every renaming of the devices leaves every runtime unchanged: one kind, speed and memory,
    and one bandwidth and latency between any two devices."""
    off = ~np.eye(cluster.num_devices, dtype=bool)
    return all(len(np.unique(a)) == 1 for a in (cluster.speed, cluster.memory, cluster.bandwidth[off],
                                                cluster.latency[off])) and len(set(cluster.kinds)) == 1


def relabel_updates(agent: PlacetoAgent, copies: int, seed: int) -> None:
    """``--relabel``: the agent's gradient averaged over ``copies`` renamings of the devices (module
    docstring). The authors' features carry the device as a one-hot in their last columns."""
    accumulate, rng, d = agent.accumulate, np.random.default_rng(seed), agent.num_devices

    def symmetrised(data, advantages, tasks, *, entropy_coef):
        for perm in [np.arange(d)] + [rng.permutation(d) for _ in range(copies - 1)]:
            def rename(x, perm=perm):
                y = x.copy()
                y[:, -d + perm] = x[:, -d:]
                return y
            renamed = [dataclasses.replace(s, features=[rename(x) for x in s.features],
                                           actions=[int(perm[a]) for a in s.actions]) for s in data]
            share = dataclasses.replace(advantages, per_episode=[a / copies for a in advantages.per_episode])
            accumulate(renamed, share, tasks, entropy_coef=entropy_coef / copies)

    agent.accumulate = symmetrised


def run(name: str, episodes: int, window: int, params: dict, seed: int, *, greedy_every: int = 0,
        samples: int = 0, policy: str = "network", relabel: int = 1) -> dict:
    _, cluster, config, task = learning_setting("placeto", *SETTINGS[name], params)
    if policy == "tabular":
        agent = TabularPlaceto(cluster.num_devices, config, seed=seed, num_groups=task.num_groups)
    else:
        agent = make_agent("placeto", cluster.num_devices, config.to_dict(), seed=seed, tasks=[task])
    if relabel > 1:
        if not interchangeable(cluster) or config.network != "authors":
            raise SystemExit(f"--relabel needs interchangeable devices and network=authors ({name})")
        relabel_updates(agent, relabel, seed)
    probe_rng = np.random.default_rng(seed + 1)
    greedy: list[tuple[int, float]] = []
    due = [0]  # the next multiple of greedy_every to probe at (updates come every ``batch`` episodes)

    def probe(done: int) -> None:
        if greedy_every and done >= due[0]:
            greedy.append((done, round(1e3 * task.evaluate(agent.place(task, probe_rng)).makespan, 1)))
            due[0] = (done // greedy_every + 1) * greedy_every

    t0 = time.perf_counter()
    trainer, rows = train_agent(agent, task, Budget(episodes=episodes), seed, each=probe)
    wall = time.perf_counter() - t0
    first, last = rows[:window], rows[-window:]
    n_dev = cluster.num_devices
    best = trainer.best["g"]
    evaluated = trainer.placements  # every simulated placement, intermediate ones included
    rand = random_search(task, int(evaluated), seed=seed)
    extra: dict = {}
    if greedy_every:
        final = agent.place(task, probe_rng)
        greedy.append((len(rows), round(1e3 * task.evaluate(final).makespan, 1)))
        extra |= {"greedy_ms": greedy, "greedy_devices": np.bincount(final, minlength=n_dev).tolist()}
    if samples:
        sampled = [1e3 * task.evaluate(agent.place(task, probe_rng, greedy=False)).makespan for _ in range(samples)]
        extra |= {"trained_samples_median_ms": statistics.median(sampled), "trained_samples_best_ms": min(sampled)}
    return extra | {
        "setting": name, "episodes": len(rows), "wall_s": round(wall, 1),
        "entropy_first": statistics.fmean(r["entropy"] for r in first),
        "entropy_last": statistics.fmean(r["entropy"] for r in last),
        "entropy_last_over_uniform": statistics.fmean(r["entropy"] for r in last) / math.log(n_dev),
        "sampled_first_ms": 1e3 * statistics.median(r["sampled_runtime"] for r in first),
        "sampled_last_ms": 1e3 * statistics.median(r["sampled_runtime"] for r in last),
        "best_ms": 1e3 * best.makespan, "simulations": int(evaluated),
        "random_best_ms": 1e3 * rand.makespan, "policy": policy, "relabel": relabel,
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
    ap.add_argument("--greedy-every", type=int, default=0, help="simulate the greedy episode every N episodes")
    ap.add_argument("--samples", type=int, default=0, help="sampled episodes of the trained policy to simulate")
    ap.add_argument("--policy", choices=("network", "tabular"), default="network",
                    help="tabular: one free logit per (group, device) instead of the network (a control)")
    ap.add_argument("--relabel", type=int, default=1, help="device relabellings per visited state in the update")
    args = ap.parse_args()
    if args.quick:
        args.settings, args.episodes, args.window = "chainmm", 100, 20
    torch.set_num_threads(1)
    params = parse_params(args.param)
    if not args.json:
        print(f"params {params or 'defaults'}, {args.episodes} episodes, seed {args.seed}, window {args.window}")
    for name in args.settings.split(","):
        r = run(name, args.episodes, args.window, params, args.seed, greedy_every=args.greedy_every,
                samples=args.samples, policy=args.policy, relabel=args.relabel)
        if args.json:
            print(json.dumps({**r, "params": params, "seed": args.seed, "window": args.window}), flush=True)
            continue
        print(f"{r['setting']:>10}: entropy {r['entropy_first']:.3f} -> {r['entropy_last']:.3f} "
              f"({r['entropy_last_over_uniform']:.2f} of uniform), sampled median {r['sampled_first_ms']:.1f} -> "
              f"{r['sampled_last_ms']:.1f} ms (x{r['sampled_last_ms'] / r['sampled_first_ms']:.3f}), best "
              f"{r['best_ms']:.1f} ms vs random search {r['random_best_ms']:.1f} ms over {r['simulations']} "
              f"simulations, {r['wall_s']} s", flush=True)
        if "greedy_ms" in r:
            print(f"{'':>10}  greedy episode (ms) by episode: {r['greedy_ms']}; at the end on devices "
                  f"{r['greedy_devices']}")
        if "trained_samples_median_ms" in r:
            print(f"{'':>10}  {args.samples} sampled episodes of the trained policy: median "
                  f"{r['trained_samples_median_ms']:.1f} ms, best {r['trained_samples_best_ms']:.1f} ms")


if __name__ == "__main__":
    main()
