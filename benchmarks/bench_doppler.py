"""DOPPLER (Yao et al. 2025): its training speed, and its Table 2/3/4 reproductions.

* ``speed`` — DOPPLER Stage II episodes per minute on one core (``torch.set_num_threads(1)``):
  the shared trainer runs one untimed update, then ``--speed-episodes`` timed ones,
  ``--repeat`` times; the median, per wall-clock minute and per CPU minute of the process
  (the latter is what one core delivers when the machine is shared). Goal (issue #13):
  ≥ 600 episodes/min on gen:chainmm (the authors' code needs 1.5–3 s per episode on a CPU).
* ``table2`` / ``transfer`` — ``placelab reproduce doppler-table2`` / ``doppler-table4``
  (:mod:`placelab.reproduce.doppler`, the one place the methods, budgets and the 10 noisy
  executions are declared), run into a temporary run store: critical-path, EnumerativeOptimizer,
  Placeto, DOPPLER-SIM/-SEL/-PLC per graph, and zero-shot / k-shot transfer, each as mean ± std
  (ms) with the wall time of the whole reproduction. The quick setting by default, ``--paper``
  for §6.1's budgets.

Usage::

    .venv/bin/python benchmarks/bench_doppler.py speed
    .venv/bin/python benchmarks/bench_doppler.py table2 --graphs gen:chainmm,gen:ffnn
    .venv/bin/python benchmarks/bench_doppler.py transfer
    .venv/bin/python benchmarks/bench_doppler.py all --json     # one JSON object on stdout
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from typing import Any

import torch

from engine.cluster import Cluster
from engine.presets import PRESETS
from engine.specs import load_graph
from placelab.cli import run_command
from placelab.reproduce.doppler import GRAPHS as ROWS
from placelab.reproduce.runner import reproduce
from policies.rl.core.reinforce import Budget, StoppingRule
from policies.rl.core.task import make_task
from policies.rl.core.trainer import Trainer
from policies.rl.doppler.agent import DopplerAgent
from policies.rl.doppler.config import DopplerConfig

GRAPHS = tuple(ROWS.values())


def speed(graphs: list[str], cluster: Cluster, episodes: int, repeat: int) -> list[dict[str, Any]]:
    rows = []
    for spec in graphs:
        task = make_task(load_graph(spec), cluster, groups=None)
        rates = []
        for r in range(repeat):
            agent = DopplerAgent(cluster.num_devices, DopplerConfig(stage="sim"), seed=r)
            trainer = Trainer(agent, {"g": task}, seed=r, budget=Budget(episodes=10**9), stopping=StoppingRule(0),
                              tensorboard=False)
            trainer.step()
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(episodes):
                trainer.step()
            rates.append((60.0 * episodes / (time.perf_counter() - t0), 60.0 * episodes / (time.process_time() - c0)))
        wall, cpu = statistics.median(r[0] for r in rates), statistics.median(r[1] for r in rates)
        rows.append({"graph": spec, "ops": task.graph.num_ops, "episodes_per_min": wall,
                     "episodes_per_cpu_min": cpu})
    return rows


def reproduction(name: str, graphs: list[str], paper: bool) -> dict[str, Any]:
    """Run reproduction ``name`` into a temporary store; its table rows (ms) and wall time."""
    rows = [row for row, spec in ROWS.items() if spec in graphs]
    with tempfile.TemporaryDirectory(prefix="bench-doppler-") as tmp:
        res = reproduce(name, command=run_command, quick=not paper, runs_dir=tmp, keep_step_runs=False,
                        only=",".join(rows) or None)
    table = [{"row": r["row"], "column": r["column"], "mean_ms": r["ours"], "std_ms": r["ours_std"],
              "paper_ms": r["paper"], "paper_std_ms": r["paper_std"], "note": r["note"]}
             for r in res["table"] if r["ours"] is not None]
    for r in table:
        paper = f"{r['paper_ms']:.1f} ± {r['paper_std_ms']:.1f}" if r["paper_ms"] is not None else "-"
        print(f"  {r['row']:<24} {r['column']:<14} {r['mean_ms']:9.2f} ± {r['std_ms']:6.2f} ms   paper {paper}",
              file=sys.stderr)
    print(f"  {name} ({res['setting']}): {res['wall_s']:.0f} s", file=sys.stderr)
    return {"setting": res["setting"], "wall_s": res["wall_s"], "rows": table}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("part", choices=("speed", "table2", "transfer", "all"))
    ap.add_argument("--graphs", default=",".join(GRAPHS))
    ap.add_argument("--cluster", default="p100x4")
    ap.add_argument("--speed-episodes", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--paper", action="store_true", help="table2/transfer: the full setting, §6.1's budgets")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    cluster = PRESETS[args.cluster]() if args.cluster in PRESETS else None
    if cluster is None:
        print(f"unknown cluster preset '{args.cluster}'", file=sys.stderr)
        return 2
    graphs = [g for g in args.graphs.split(",") if g]
    out: dict[str, Any] = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                       "load_avg_1m": os.getloadavg()[0], "torch_threads": 1},
                           "cluster": cluster.name, "mode": cluster.simulation.mode}
    if args.part in ("speed", "all"):
        out["speed"] = speed(graphs, cluster, args.speed_episodes, args.repeat)
        for r in out["speed"]:
            print(f"  {r['graph']:<16} {r['ops']:>4} ops  {r['episodes_per_min']:8.0f} episodes/min (wall), "
                  f"{r['episodes_per_cpu_min']:8.0f} per CPU-minute", file=sys.stderr)
    if args.part in ("table2", "all"):
        out["table2"] = reproduction("doppler-table2", graphs, args.paper)
    if args.part in ("transfer", "all"):
        out["transfer"] = reproduction("doppler-table4", list(ROWS.values()), args.paper)
    if args.json:
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
