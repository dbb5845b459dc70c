"""Does this machine carry two large copies at once at full speed, and does that stay put?

The calibrated ``work_conserving`` mode models the workers' copies as sharing one memory bus
that carries ``copy_bus_capacity`` copies at full speed (``engine.executor.calibration``). On
the 2-core development VM that capacity is not a constant of the machine: it sits near 1.15
or near 2 and jumps between the two, which is what keeps copy-bound graphs (``gen:ffnn`` in
``bench_executor.py`` spends about 85 % of its time in copies) from a stable median error
(docs/lab/2026-11-24-noise-ceiling-and-copy-bus.md).

This benchmark reads the bus every ``--interval`` seconds for ``--minutes`` minutes with 2
calibrated-style workers (:func:`engine.executor.calibration.probe_bus`: ``--hops`` copies of
``--bytes`` alone, then the same by both workers at once) and, as a control, the same for
compute: a chain of ``--ops`` matmul ops of 1 ms on one worker, then one such chain on each
worker at once (the ratio of the two makespans; 1 when the cores do not disturb each other).
It prints the share of readings in each state, the switches between consecutive readings, the
longest stretch in one state, and per state the median capacity, alone copy bandwidth and
compute ratio.

With ``--graph SPEC`` (e.g. ``gen:ffnn``) it then calibrates 2 workers, scales the graph as
``bench_executor.py`` does (``--step-ms``, ``--link-gbps``), and executes ``--placements``
random placements in ``--rounds`` rounds, reading the bus right before every run. Per state of
that reading it prints the median of simulated / measured makespan over the runs, simulated on
the calibrated cluster (one capacity for all runs) and on it with the capacity the reading gave.
Run it on an otherwise idle machine.

Usage::

    .venv/bin/python benchmarks/bench_copy_bus.py                  # 10 minutes, a reading every 3 s
    .venv/bin/python benchmarks/bench_copy_bus.py --minutes 1 --verbose
    .venv/bin/python benchmarks/bench_copy_bus.py --json
    .venv/bin/python benchmarks/bench_copy_bus.py --minutes 0 --graph gen:ffnn   # runs by bus state
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

from engine.cluster import cluster_from_dict
from engine.executor import Executor
from engine.executor.calibration import bus_states, calibrate, machine_cluster, probe_bus
from engine.graph.compgraph import CompGraph


def _compute_chains(ops: int, op_s: float, both: bool) -> tuple[CompGraph, np.ndarray]:
    """One chain of ``ops`` ops of ``op_s`` on device 0, or one such chain on each of devices 0 and 1."""
    k = 2 if both else 1
    src = np.concatenate([c * ops + np.arange(ops - 1) for c in range(k)])
    g = CompGraph("compute-chains", [f"op{i}" for i in range(k * ops)], compute_any=np.full(k * ops, op_s),
                  edge_src=src, edge_dst=src + 1)
    return g, np.repeat(np.arange(k), ops)


def _monitor(args, say) -> list[dict]:
    """A reading of the bus and of the compute control every ``--interval`` s for ``--minutes`` min."""
    one, one_dev = _compute_chains(args.ops, 1e-3, both=False)
    two, two_dev = _compute_chains(args.ops, 1e-3, both=True)
    readings: list[dict] = []
    if args.minutes <= 0:
        return readings
    t_start = time.monotonic()
    with Executor(machine_cluster(2)) as ex:
        probe_bus(ex, int(args.bytes), args.hops)  # first touch of the shared memory
        while time.monotonic() - t_start < args.minutes * 60:
            t = time.monotonic() - t_start
            bus = probe_bus(ex, int(args.bytes), args.hops)
            c1 = float(ex.run(one, one_dev, warmup=0).makespans[0])
            c2 = float(ex.run(two, two_dev, warmup=0).makespans[0])
            readings.append({"t_s": t, **bus, "compute_ratio": c2 / c1})
            if args.verbose:
                r = readings[-1]
                say(f"{t:7.1f} s  copy alone {r['alone_s'] * 1e3:6.2f} ms, both {r['both_s'] * 1e3:6.2f} ms, "
                    f"capacity {r['capacity']:.2f}  |  compute both / alone {r['compute_ratio']:.2f}")
            time.sleep(max(0.0, args.interval - (time.monotonic() - t_start - t)))
    return readings


def _runs_by_state(ex, cluster, args, say) -> dict:
    """Random placements of ``args.graph`` executed in rounds, each run after a bus reading (module docstring)."""
    from bench_executor import _scaled

    from engine.sim.simulator import Simulator
    from policies.registry import make_placer

    g = _scaled(args.graph, cluster, args)
    rand = make_placer("random")
    placements = [rand.place(g, cluster, seed=k).devices for k in range(args.placements)]
    runs = []  # (placement, capacity read before the run, measured makespan)
    for r in range(args.rounds):
        for i, dev in enumerate(placements):
            cap = probe_bus(ex, int(args.bytes), args.hops)["capacity"]
            runs.append((i, cap, float(ex.run(g, dev, warmup=1).makespans[0])))
        say(f"round {r + 1}/{args.rounds} done")
    cache: dict[tuple[int, float], float] = {}

    def simulated(i: int, capacity: float) -> float:
        key = (i, round(capacity, 2))
        if key not in cache:
            cache[key] = Simulator(g, cluster.with_simulation(copy_bus_capacity=key[1])).makespan(placements[i])
        return cache[key]

    fixed = cluster.simulation.copy_bus_capacity
    out = {"graph": g.name, "calibrated_capacity": fixed, "placements": args.placements, "rounds": args.rounds,
           "runs": [{"placement": i, "capacity": c, "measured_s": m} for i, c, m in runs], "per_state": {}}
    say(f"{g.name}: {args.placements} random placements × {args.rounds} rounds, calibrated capacity {fixed:.2f}")
    for name, inside in (("shared", lambda c: c < args.split), ("full", lambda c: c >= args.split)):
        sel = [(i, c, m) for i, c, m in runs if inside(c)]
        if not sel:
            continue
        calibrated = float(np.median([simulated(i, fixed) / m for i, _, m in sel]))
        tracked = float(np.median([simulated(i, c) / m for i, c, m in sel]))
        out["per_state"][name] = {"runs": len(sel), "simulated_over_measured_calibrated": calibrated,
                                  "simulated_over_measured_read_capacity": tracked}
        say(f"  {name:6s} bus: {len(sel):4d} runs, simulated / measured (median) {calibrated:.3f} on the calibrated "
            f"cluster, {tracked:.3f} with the capacity read before the run")
    return out


def _summary(readings: list[dict], args, say) -> dict:
    """The readings split into the two states (:func:`bus_states`), with per-state medians; printed."""
    cap = np.array([r["capacity"] for r in readings])
    alone = np.array([r["alone_s"] for r in readings])
    compute = np.array([r["compute_ratio"] for r in readings])
    states = bus_states(cap.tolist(), args.split)
    per_state = {}
    for name, mask in (("shared", cap < args.split), ("full", cap >= args.split)):
        if mask.any():
            per_state[name] = {"readings": int(mask.sum()), "capacity_median": states[f"{name}_median"],
                               "alone_gb_per_s_median": float(np.median(args.bytes / alone[mask]) / 1e9),
                               "compute_ratio_median": float(np.median(compute[mask]))}
    n = states["switches"]
    say(f"{states['readings']} readings over {args.minutes:g} min ({args.bytes / 1e6:.0f} MB copies): {n} "
        f"switch{'' if n == 1 else 'es'} between states, longest stretch {states['longest_stretch']} readings "
        f"({states['longest_stretch'] * args.interval:.0f} s)")
    for name, s in per_state.items():
        say(f"  {name:6s} bus: {s['readings']:4d} readings ({s['readings'] / len(readings):.0%}), capacity "
            f"{s['capacity_median']:.2f}, alone copy {s['alone_gb_per_s_median']:.1f} GB/s, "
            f"compute both / alone {s['compute_ratio_median']:.2f}")
    return {"states": states, "per_state": per_state}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--interval", type=float, default=3.0, help="seconds between readings")
    ap.add_argument("--bytes", type=float, default=64e6, help="bytes per probe copy")
    ap.add_argument("--hops", type=int, default=4, help="copies per probe chain")
    ap.add_argument("--ops", type=int, default=20, help="1-ms ops per compute chain")
    ap.add_argument("--split", type=float, default=1.5, help="capacity that separates the two states")
    ap.add_argument("--graph", default=None, help="also execute random placements of this graph (module docstring)")
    ap.add_argument("--placements", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--step-ms", type=float, default=50.0)
    ap.add_argument("--link-gbps", type=float, default=20.0)
    ap.add_argument("--verbose", action="store_true", help="print every reading")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if len(os.sched_getaffinity(0)) < 2:
        print("needs 2 usable cores", file=sys.stderr)
        return 2
    say = (lambda m: print(m, file=sys.stderr)) if args.json else print
    load = os.getloadavg()
    say(f"host {platform.node()}, {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    readings = _monitor(args, say)
    out = {"host": platform.node(), "load_average": load, "bytes": args.bytes, "hops": args.hops,
           "minutes": args.minutes, "interval_s": args.interval, "split": args.split,
           **(_summary(readings, args, say) if readings else {}), "readings": readings, "runs_by_state": None}
    if args.graph:
        cluster = cluster_from_dict(calibrate(2))
        with Executor(cluster) as ex:
            out["runs_by_state"] = _runs_by_state(ex, cluster, args, say)
    if args.json:
        print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
