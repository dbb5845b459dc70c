"""How much does running independent tasks on Ray buy on this machine? (issue "Scale out on Ray")

Three figures, each against the in-process (sequential) path in the same run:

* **Ray start-up** — ``ray.init`` of a local runtime with ``--workers`` CPUs, and the warm-up
  of its workers (imports and compiled simulator kernels, paid by the first task on each).
* **Sweep** — ``placelab sweep``'s code path (:func:`placelab.sweep.run_sweep`, every result
  stored in a temporary run store) over 8 Placeto family graphs (the first 4 test graphs of
  ``cifar10`` and of ``nmt``) × 6 placers × 2 seeds = 96 tasks on ``k80x2``: wall time
  sequential vs on Ray, with and without the start-up. Goal: ≥ 1.7× with 2 workers.
  The results are checked to be identical.
* **Per-task overhead** — a no-op task, and a trivial placement task (``single-device`` on a
  20-op graph, stored), each ``--tasks`` times: seconds per task in-process and on Ray. A task
  is worth distributing when it takes clearly longer than Ray's per-task overhead.

* **Training** (``--training``) — Placeto training episodes per minute on a 128-group graph
  (cifar10 family graph 0, ``batch`` = ``--batch``, default 8, ``k80x2``) in this process and
  with 1 and 2 rollout workers (:mod:`policies.rl.core.workers`), after one untimed update. Goal:
  ≥ 1.6× with 2 workers over 1.

Timings are medians of ``--repeat`` runs. Usage::

    .venv/bin/python benchmarks/bench_parallel.py                 # a table
    .venv/bin/python benchmarks/bench_parallel.py --json          # one JSON object on stdout
    .venv/bin/python benchmarks/bench_parallel.py --workers 2 --repeat 3
    .venv/bin/python benchmarks/bench_parallel.py --training --updates 8 --repeat 3 --batch 16
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

from engine.parallel.tasks import ParallelMap
from engine.specs import expand_graph_specs
from engine.store.runs import RunStore
from placelab.sweep import SweepSpec, run_sweep

PLACERS = "single-device,random,m-etf,heft,critical-path,metis"
GRAPHS = ",".join(expand_graph_specs("family:cifar10:test")[:4] + expand_graph_specs("family:nmt:test")[:4])
WARM_UP = SweepSpec.from_specs("gen:random?ops=200&seed=9", "k80x2", "critical-path,metis", seeds=4)
TRIVIAL = SweepSpec.from_specs("gen:random?ops=20&seed=1", "k80x2", "single-device", seeds=1)


def _noop(x: int) -> int:
    return x


def _strip(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in ("run_id", "seconds_to_place")} for r in rows]


def _sweep_seconds(spec: SweepSpec, ex: ParallelMap) -> tuple[float, list[dict]]:
    with tempfile.TemporaryDirectory(prefix="bench-parallel-") as tmp:
        t0 = time.perf_counter()
        out = run_sweep(RunStore(tmp), spec, executor=ex)
        return time.perf_counter() - t0, out["results"]


def _per_task(ex: ParallelMap, tasks: int) -> tuple[float, float]:
    """Seconds per no-op task and per trivial stored placement task."""
    t0 = time.perf_counter()
    ex.map(_noop, [(i,) for i in range(tasks)])
    noop = (time.perf_counter() - t0) / tasks
    spec = SweepSpec(TRIVIAL.graphs, TRIVIAL.clusters, TRIVIAL.placers, tuple(range(tasks)))
    seconds, _ = _sweep_seconds(spec, ex)
    return noop, seconds / tasks


def measure(workers: int, repeat: int, tasks: int) -> dict:
    spec = SweepSpec.from_specs(GRAPHS, "k80x2", PLACERS, seeds=2)
    seq_ex = ParallelMap()
    _sweep_seconds(WARM_UP, seq_ex)  # this process's own imports and kernels, not timed
    seq = [_sweep_seconds(spec, seq_ex) for _ in range(repeat)]
    seq_task = [_per_task(seq_ex, tasks) for _ in range(repeat)]

    t0 = time.perf_counter()
    ray_ex = ParallelMap(workers=workers)
    ray_ex.start()
    start_s = time.perf_counter() - t0
    try:
        t0 = time.perf_counter()
        _sweep_seconds(WARM_UP, ray_ex)
        warm_s = time.perf_counter() - t0
        par = [_sweep_seconds(spec, ray_ex) for _ in range(repeat)]
        par_task = [_per_task(ray_ex, tasks) for _ in range(repeat)]
    finally:
        ray_ex.shutdown()

    reference = _strip(seq[0][1])
    for _, rows in seq + par:  # a difference is a bug: say where it is
        for a, b in zip(reference, _strip(rows), strict=True):
            if a != b:
                print(f"differs: {a} vs {b}", file=sys.stderr)
    seq_s = statistics.median(s for s, _ in seq)
    par_s = statistics.median(s for s, _ in par)
    return {
        "workers": workers, "repeat": repeat, "cpus": os.cpu_count(), "loadavg_1min": os.getloadavg()[0],
        "python": platform.python_version(), "tasks": len(spec.plan()), "graphs": list(spec.graphs),
        "placers": list(spec.placers),
        "ray_start_s": start_s, "ray_warm_up_s": warm_s,
        "sweep_sequential_s": seq_s, "sweep_ray_s": par_s, "speedup": seq_s / par_s,
        "speedup_with_start_up": seq_s / (par_s + start_s + warm_s),
        "identical": all(_strip(r) == reference for _, r in seq + par),
        "noop_task_s": {"in_process": statistics.median(n for n, _ in seq_task),
                        "ray": statistics.median(n for n, _ in par_task)},
        "trivial_placement_task_s": {"in_process": statistics.median(t for _, t in seq_task),
                                     "ray": statistics.median(t for _, t in par_task)},
        "per_task_tasks": tasks,
    }


def _training_rate(task, workers: int | None, updates: int, batch: int) -> float:
    """Placeto episodes per minute over ``updates`` updates (rollouts in-process, or on ``workers``)."""
    from policies.rl.core.reinforce import Budget, StoppingRule
    from policies.rl.core.trainer import Trainer
    from policies.rl.core.workers import RolloutWorkers
    from policies.rl.registry import make_agent, make_config

    config = make_config("placeto", {"groups": 128, "batch": batch})
    agent = make_agent("placeto", task.num_devices, config.to_dict(), seed=0, tasks=[task])
    pool = RolloutWorkers("placeto", agent, {"g": task}, workers=workers) if workers else None
    trainer = Trainer(agent, {"g": task}, seed=0, budget=Budget(episodes=10**9), stopping=StoppingRule(0),
                      rollouts=pool, tensorboard=False)
    try:
        trainer.step()  # untimed: Ray start-up, the workers' imports and first rollouts
        e0, t0 = trainer.episodes, time.perf_counter()
        for _ in range(updates):
            trainer.step()
        return 60.0 * (trainer.episodes - e0) / (time.perf_counter() - t0)
    finally:
        trainer.close()


def measure_training(updates: int, repeat: int, batch: int = 8) -> dict:
    import torch

    from engine.presets import PRESETS
    from engine.specs import load_graph
    from policies.rl.core.task import make_task

    torch.set_num_threads(1)  # the learner, like each worker, on one CPU
    task = make_task(load_graph("gen:family-cifar10?index=0&seed=0"), PRESETS["k80x2"](), groups=128)
    rates = {name: statistics.median(_training_rate(task, w, updates, batch) for _ in range(repeat))
             for name, w in (("in_process", None), ("workers_1", 1), ("workers_2", 2))}
    return {"updates": updates, "repeat": repeat, "batch": batch, "cpus": os.cpu_count(),
            "loadavg_1min": os.getloadavg()[0], "episodes_per_min": rates,
            "speedup_2_over_1": rates["workers_2"] / rates["workers_1"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=2, help="Ray CPUs (default 2)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per figure; medians (default 1)")
    ap.add_argument("--tasks", type=int, default=100, help="tasks for the per-task overhead (default 100)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--training", action="store_true", help="measure Placeto training with rollout workers instead")
    ap.add_argument("--updates", type=int, default=4, help="timed updates per training figure (default 4)")
    ap.add_argument("--batch", type=int, default=8, help="Placeto episodes per update, split across the workers "
                                                          "(default 8)")
    args = ap.parse_args(argv)
    if args.training:
        res = measure_training(args.updates, args.repeat, args.batch)
        print(json.dumps(res) if args.json else
              f"Placeto training, 128 groups, batch {res['batch']}, {res['cpus']} CPUs, "
              f"load {res['loadavg_1min']:.1f}: "
              + ", ".join(f"{k} {v:.0f} episodes/min" for k, v in res["episodes_per_min"].items())
              + f"; 2 workers / 1 worker = {res['speedup_2_over_1']:.2f}x")
        return 0
    res = measure(args.workers, args.repeat, args.tasks)
    if args.json:
        print(json.dumps(res))
        return 0
    ms = 1e3
    print(f"sweep: {res['tasks']} tasks (8 family graphs x {len(res['placers'])} placers x 2 seeds, k80x2), "
          f"{res['cpus']} CPUs, load {res['loadavg_1min']:.1f}, median of {res['repeat']}")
    print(f"  sequential           {res['sweep_sequential_s']:8.1f} s")
    print(f"  ray, {res['workers']} workers       {res['sweep_ray_s']:8.1f} s   speedup {res['speedup']:.2f}x "
          f"({res['speedup_with_start_up']:.2f}x counting start-up and warm-up)")
    print(f"  results identical    {'yes' if res['identical'] else 'NO'}")
    print(f"ray start-up           {res['ray_start_s']:8.1f} s   (+ {res['ray_warm_up_s']:.1f} s warm-up of the "
          "workers: imports, simulator kernels)")
    print(f"per task ({res['per_task_tasks']} tasks)  in-process        ray")
    for what, key in (("no-op", "noop_task_s"), ("trivial placement", "trivial_placement_task_s")):
        d = res[key]
        print(f"  {what:<18} {d['in_process'] * ms:9.2f} ms   {d['ray'] * ms:9.2f} ms")
    return 0 if res["identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
