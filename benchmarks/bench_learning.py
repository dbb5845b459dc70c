"""How fast do the learned placers train? Episodes per minute on 128-group graphs.

For each graph (Placeto family graphs grouped to 128 groups on ``k80x2``) and each learned
placer, the training loop (:class:`policies.rl.core.trainer.Trainer`) runs one untimed update,
then ``--updates`` timed updates, ``--repeat`` times; the figure is the median episodes per
minute. Placeto uses intermediate rewards (every step's placement simulated on the op graph)
and ``batch`` episodes (8 by default) rolled out together through one GNN call per step; the
reference in the same run is Placeto with ``batch=1`` (one episode per GNN call, as a plain
implementation does). The RNN placer's episode is one sampled placement (K = 8 per update).
Goal (issue "Learned placers"): Placeto ≥ 200 episodes/min on a 128-group graph.

Usage::

    .venv/bin/python benchmarks/bench_learning.py             # a table
    .venv/bin/python benchmarks/bench_learning.py --json      # one JSON object on stdout
    .venv/bin/python benchmarks/bench_learning.py --placers placeto --grouping ops --graphs gen:llama-layer

``--grouping ops`` places every op (as the DOPPLER reproductions run Placeto) instead of 128 groups.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

import torch

from engine.presets import PRESETS
from engine.specs import load_graph
from policies.rl.core.reinforce import Budget, StoppingRule
from policies.rl.core.task import make_task
from policies.rl.core.trainer import Trainer
from policies.rl.registry import make_agent, make_config

GRAPHS = ("gen:family-cifar10?index=0&seed=0", "gen:family-nmt?index=0&seed=0", "gen:family-ptb?index=0&seed=0")
SETUPS = (("placeto", {"batch": 8}), ("placeto", {"batch": 16}), ("placeto", {"batch": 1}), ("rnn", {}))


def episodes_per_minute(placer: str, params: dict, task, updates: int, repeat: int) -> tuple[float, float, float]:
    """Median episodes per minute of wall time and per minute of this process's CPU time (what one
    core delivers when the machine is busy with something else; with ``--threads 1`` the two agree
    on an idle machine), and placements evaluated per episode."""
    config = make_config(placer, {"groups": 128, **params})
    rates, cpu_rates, per_episode = [], [], []
    for r in range(repeat):
        agent = make_agent(placer, task.num_devices, config.to_dict(), seed=r, tasks=[task])
        trainer = Trainer(agent, {"g": task}, seed=r, budget=Budget(episodes=10**9), stopping=StoppingRule(0))
        trainer.step()  # warm-up: first-call costs, caches
        e0, p0, t0, c0 = trainer.episodes, trainer.placements, time.perf_counter(), time.process_time()
        for _ in range(updates):
            trainer.step()
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        rates.append(60.0 * (trainer.episodes - e0) / dt)
        cpu_rates.append(60.0 * (trainer.episodes - e0) / dc)
        per_episode.append((trainer.placements - p0) / (trainer.episodes - e0))
    return statistics.median(rates), statistics.median(cpu_rates), statistics.median(per_episode)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--updates", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    ap.add_argument("--graphs", default=",".join(GRAPHS[:2]))
    ap.add_argument("--placers", default="placeto,rnn", help="comma-separated: the setups of these placers only")
    ap.add_argument("--grouping", default="merge", choices=("merge", "ops"), help="merge: 128 groups; ops: every op")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    cluster = PRESETS["k80x2"]()
    rows = []
    for spec in args.graphs.split(","):
        g = load_graph(spec)
        task = make_task(g, cluster, groups=128, grouping=args.grouping)
        for placer, params in (s for s in SETUPS if s[0] in args.placers.split(",")):
            if args.grouping != "merge":
                params = {**params, "grouping": args.grouping}
            rate, cpu_rate, evals = episodes_per_minute(placer, params, task, args.updates, args.repeat)
            rows.append({"graph": spec, "ops": g.num_ops, "groups": task.num_groups, "placer": placer,
                         "params": params, "episodes_per_minute": rate, "episodes_per_cpu_minute": cpu_rate,
                         "placements_per_episode": evals})
    info = {"machine": platform.machine(), "cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(),
            "rows": rows}
    if args.json:
        print(json.dumps(info))
        return 0
    print(f"{info['cpus']} CPUs, torch threads {info['torch_threads']}; medians of {args.repeat} × {args.updates} "
          "updates")
    print(f"{'graph':40} {'ops':>6} {'groups':>6} {'placer':8} {'setup':24} {'episodes/min':>12} "
          f"{'per CPU-min':>11} {'evals/episode':>13}")
    for r in rows:
        setup = ",".join(f"{k}={v}" for k, v in r["params"].items()) or "K=8"
        print(f"{r['graph']:40} {r['ops']:6d} {r['groups']:6d} {r['placer']:8} {setup:24} "
              f"{r['episodes_per_minute']:12.0f} {r['episodes_per_cpu_minute']:11.0f} "
              f"{r['placements_per_episode']:13.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
