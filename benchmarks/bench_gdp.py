"""GDP (Zhou et al. 2019, ``policies/rl/gdp``): its training speed against DOPPLER's on the same graphs.

For every graph (by default DOPPLER's four App. D graphs on ``p100x4``) and each placer, a fresh
policy at its defaults (GDP: the simulation stage, ε-greedy, PPO window of 4; DOPPLER: Stage II),
one thread (``torch.set_num_threads(1)``): the shared trainer runs one untimed update, then
``--episodes`` timed episodes, ``--repeat`` times; the median episodes per wall-clock minute and per
CPU minute of the process (the latter is what one core delivers when the machine is shared), and
GDP's over DOPPLER's. ``--stage imitation`` times both placers' imitation stages instead.

DOPPLER §6.2 (Q6, Fig. 6) reports GDP's training slower than DOPPLER's; here GDP runs one network
pass per episode and PPO's window re-runs it for the previous batches (``ppo_epochs`` passes with
autograd per update), DOPPLER its two MPNNs once per rollout and once for the gradient.

Usage::

    .venv/bin/python benchmarks/bench_gdp.py
    .venv/bin/python benchmarks/bench_gdp.py --graphs gen:chainmm --episodes 50 --repeat 1
    .venv/bin/python benchmarks/bench_gdp.py --param ppo_epochs=1 --json   # GDP's update without PPO's window
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from typing import Any

import torch

from engine.cluster import Cluster
from engine.presets import PRESETS
from engine.specs import load_graph
from placelab.cli_common import parse_params
from placelab.reproduce.doppler import GRAPHS as ROWS
from policies.rl.core.reinforce import Budget, StoppingRule
from policies.rl.core.task import make_task
from policies.rl.core.trainer import Trainer
from policies.rl.registry import make_agent

GRAPHS = tuple(ROWS.values())
PLACERS = ("gdp", "doppler")


def rate(placer: str, task: Any, params: dict[str, Any], episodes: int, seed: int) -> tuple[float, float]:
    """Episodes per wall minute and per CPU minute of ``episodes`` timed episodes after one untimed update."""
    agent = make_agent(placer, task.num_devices, params, seed=seed)
    trainer = Trainer(agent, {"g": task}, seed=seed, budget=Budget(episodes=10**9), stopping=StoppingRule(0),
                      tensorboard=False)
    trainer.step()
    t0, c0, done = time.perf_counter(), time.process_time(), 0
    while done < episodes:
        done += len(trainer.step())
    return 60.0 * done / (time.perf_counter() - t0), 60.0 * done / (time.process_time() - c0)


def speed(graphs: list[str], cluster: Cluster, stage: str, episodes: int, repeat: int,
          gdp_params: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for spec in graphs:
        task = make_task(load_graph(spec), cluster, groups=None)
        row: dict[str, Any] = {"graph": spec, "ops": task.graph.num_ops}
        for placer in PLACERS:
            params = {"stage": stage, **(gdp_params if placer == "gdp" else {})}
            rates = [rate(placer, task, params, episodes, r) for r in range(repeat)]
            row[f"{placer}_episodes_per_min"] = statistics.median(r[0] for r in rates)
            row[f"{placer}_episodes_per_cpu_min"] = statistics.median(r[1] for r in rates)
        row["gdp_over_doppler_cpu"] = row["gdp_episodes_per_cpu_min"] / row["doppler_episodes_per_cpu_min"]
        rows.append(row)
        print(f"  {spec:<16} {row['ops']:>4} ops  GDP {row['gdp_episodes_per_cpu_min']:7.0f}, DOPPLER "
              f"{row['doppler_episodes_per_cpu_min']:7.0f} episodes per CPU-minute (GDP ×"
              f"{row['gdp_over_doppler_cpu']:.2f}); wall {row['gdp_episodes_per_min']:.0f} / "
              f"{row['doppler_episodes_per_min']:.0f} per minute", file=sys.stderr)
    return rows


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", default=",".join(GRAPHS))
    ap.add_argument("--cluster", default="p100x4")
    ap.add_argument("--stage", choices=("sim", "imitation"), default="sim")
    ap.add_argument("--episodes", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--param", action="append", default=[], help="GDP config key=value (policies/rl/gdp/config.py)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    if args.cluster not in PRESETS:
        print(f"unknown cluster preset '{args.cluster}'", file=sys.stderr)
        return 2
    cluster = PRESETS[args.cluster]()
    graphs = [g for g in args.graphs.split(",") if g]
    gdp_params = parse_params(args.param)
    out = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                       "load_avg_1m": os.getloadavg()[0], "torch_threads": 1},
           "cluster": cluster.name, "mode": cluster.simulation.mode, "stage": args.stage, "gdp_params": gdp_params,
           "speed": speed(graphs, cluster, args.stage, args.episodes, args.repeat, gdp_params)}
    if args.json:
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
