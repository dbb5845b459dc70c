"""How fast is the simulator? Seconds per simulation of random graphs, 1k to 100k ops.

For every random graph (``random_dag``, seed 1, 1k / 10k / 100k ops, degree 1 and 2), on
``k80x4`` (placeto mode) and ``p100x4`` (default mode, and work_conserving, its preset mode),
with two placements (uniform random over the four devices, seed 0; and "blocked": op i on
device i*4//n), it measures

* ``Simulator.makespan``: a prepared simulator, the call an RL or search loop makes;
* ``Simulator.run``: the full :class:`~engine.sim.schedule.Schedule` (op intervals, transfers,
  per-device peak memory);
* the one-off cost of building the :class:`~engine.sim.simulator.Simulator` (prepare);
* on the 1k and 10k graphs, the plain-Python reference of the mode and the speed-up of
  ``Simulator.run`` over it: ``engine.sim.reference.reference_simulate`` (placeto, default),
  written the way Placeto's published simulator is (Python dicts + heapq, one event per
  edge), and ``engine.sim.reference_wc.reference_simulate_wc`` (work_conserving). The
  reference, ``Simulator.run`` and ``Simulator.makespan`` must give the same makespan: a
  mismatch is reported and makes the script exit with status 1.

One more cell, the hard case of issue #36: a random DAG of 10k ops with three inputs per op
(``random_dag`` degree 3, seed 1) on ``k80x4`` in placeto mode (Placeto's published δ1 and
δ2), uniformly random placement over the four devices (seed 0), so nearly every op sends to
other devices. The footer restates the goals: the placeto hard cases (random 10k d2 and d3,
k80x4, random placement) against the published simulator's reference (``Simulator.run`` and
``Simulator.makespan``), and work_conserving on the d2 graph (p100x4, random placement):
milliseconds per ``makespan()`` call and speed-up over its reference. ``--goal-only`` runs
just those three cells (for paired before/after runs).

Every figure is the median of R timed calls (``time.perf_counter``, garbage collector off
during the loop as in ``timeit``), after one untimed warm-up call (numba loads its compiled
kernel from the on-disk cache there). R is chosen so one measurement takes about
``--seconds`` (default 1 s), and is never below 5; the reference gets 3 repeats. The
simulator is single-threaded, so everything runs on one core; ``--pin CPU`` pins the process
to that CPU (steadier figures on an otherwise idle machine). The footer prints the process's
CPU time over wall time: well below 100 % means other processes competed for the core and
the figures are inflated.

Usage::

    .venv/bin/python benchmarks/bench_simulator.py            # a table
    .venv/bin/python benchmarks/bench_simulator.py --json     # one JSON object on stdout
    .venv/bin/python benchmarks/bench_simulator.py --goal-only --pin 1   # the goal cells only
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numba
import numpy as np

from engine.generators import random_dag
from engine.graph.compgraph import CompGraph
from engine.presets import PRESETS
from engine.sim.reference import reference_simulate
from engine.sim.reference_wc import reference_simulate_wc
from engine.sim.simulator import Simulator

CELLS = (("k80x4", "placeto"), ("p100x4", "default"), ("p100x4", "work_conserving"))
PLACEMENTS = ("random", "blocked")
DEGREES = (1.0, 2.0)
HARD_CASE = (10_000, 3.0, "k80x4", "placeto", "random")  # issue #36: three inputs per op, every op sends
GOAL_CELLS = ((10_000, 2.0, "k80x4", "placeto", "random"), (10_000, 2.0, "p100x4", "work_conserving", "random"),
              HARD_CASE)
REFERENCE_REPEATS = 3
MIN_REPEATS = 5
MAX_REPEATS = 100_000


def median_seconds(fn: Callable[[], object], *, seconds: float | None,
                   repeats: int = MIN_REPEATS) -> tuple[float, int]:
    """Median wall time of ``fn()`` and the repeat count used.

    With ``seconds``, the repeat count is picked from one probe call so that the loop takes
    about ``seconds`` (at least ``repeats``); without it, exactly ``repeats`` calls.
    """
    fn()  # warm-up: numba cache load, workspace allocation, caches
    if seconds is not None:
        t0 = time.perf_counter()
        fn()
        probe = time.perf_counter() - t0
        repeats = int(min(MAX_REPEATS, max(repeats, round(seconds / max(probe, 1e-9)))))
    times = []
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    finally:
        if gc_was_enabled:
            gc.enable()
    return statistics.median(times), repeats


def placement(kind: str, n: int, num_devices: int) -> np.ndarray:
    if kind == "random":
        return np.random.default_rng(0).integers(0, num_devices, size=n)
    return np.arange(n, dtype=np.int64) * num_devices // n


def reference_makespan(sim: Simulator, devices: np.ndarray) -> float:
    """The mode's plain-Python reference simulation of one placement."""
    if sim.mode == "work_conserving":
        return reference_simulate_wc(sim.graph, sim.cluster, devices, sim.constraints.check(devices)).makespan
    return reference_simulate(sim.graph, sim.cluster, devices).makespan


def bench_cell(graph: CompGraph, cluster_name: str, mode: str, kind: str, *, seconds: float,
               reference: bool) -> dict[str, Any]:
    cluster = PRESETS[cluster_name]().with_simulation(mode=mode)
    devices = placement(kind, graph.num_ops, cluster.num_devices)
    prepare_s, _ = median_seconds(lambda: Simulator(graph, cluster), seconds=None)
    sim = Simulator(graph, cluster)
    makespan_call_s, makespan_repeats = median_seconds(lambda: sim.makespan(devices), seconds=seconds)
    run_s, run_repeats = median_seconds(lambda: sim.run(devices), seconds=seconds)
    schedule = sim.run(devices)
    row: dict[str, Any] = {
        "graph": graph.name, "ops": graph.num_ops, "edges": graph.num_edges,
        "cluster": cluster_name, "mode": sim.mode, "placement": kind,
        "transfer_rows": len(schedule.transfer_op), "makespan_s": schedule.makespan,
        "prepare_s": prepare_s,
        "makespan_call_s": makespan_call_s, "makespan_call_repeats": makespan_repeats,
        "run_s": run_s, "run_repeats": run_repeats,
        "ops_per_s_makespan": graph.num_ops / makespan_call_s,
        "ops_per_s_run": graph.num_ops / run_s,
        "reference_s": None, "speedup": None, "speedup_makespan": None, "same_makespan": None,
    }
    if reference:
        ref_s, _ = median_seconds(lambda: reference_makespan(sim, devices), seconds=None, repeats=REFERENCE_REPEATS)
        ref_makespan = reference_makespan(sim, devices)
        row.update(reference_s=ref_s, speedup=ref_s / run_s, speedup_makespan=ref_s / makespan_call_s,
                   same_makespan=bool(abs(ref_makespan - schedule.makespan)
                                      <= 1e-9 * max(1.0, schedule.makespan)
                                      and sim.makespan(devices) == schedule.makespan))
    return row


def pin_to_cpu(cpu: int | None) -> int | None:
    """Pin this process to ``cpu`` (Linux only); the CPU pinned to, or None."""
    if cpu is None or not hasattr(os, "sched_setaffinity"):
        return None
    os.sched_setaffinity(0, {cpu})
    return cpu


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info(pinned: int | None) -> dict[str, Any]:
    return {
        "python": platform.python_version(), "numpy": np.__version__, "numba": numba.__version__,
        "cpu_count": os.cpu_count(), "cpu": cpu_model(), "platform": platform.platform(),
        "pinned_cpu": pinned,
        "load_average_1min": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
    }


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e3:.3f}"


def _count(x: float) -> str:
    return f"{x / 1e6:.2f}M" if x >= 1e6 else f"{x / 1e3:.0f}k"


HEADER = (f"{'graph':<16} {'cluster':<7} {'mode':<15} {'placement':<9} {'edges':>7} {'rows':>7} "
          f"{'prepare ms':>10} {'makespan() ms':>13} {'run() ms':>9} {'ops/s':>7} "
          f"{'ref ms':>9} {'speed-up':>8} {'same':>4}")


def format_row(r: dict[str, Any]) -> str:
    same = {None: "-", True: "yes", False: "NO"}[r["same_makespan"]]
    speedup = "-" if r["speedup"] is None else f"{r['speedup']:.0f}x"
    return (f"{r['graph']:<16} {r['cluster']:<7} {r['mode']:<15} {r['placement']:<9} "
            f"{r['edges']:>7} {r['transfer_rows']:>7} {_ms(r['prepare_s']):>10} "
            f"{_ms(r['makespan_call_s']):>13} {_ms(r['run_s']):>9} "
            f"{_count(r['ops_per_s_makespan']):>7} {_ms(r['reference_s']):>9} {speedup:>8} {same:>4}")


def goal_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The speed goals, from the random 10k cells with random placement: placeto (d2 and the
    d3 hard case of issue #36) and work_conserving (d2)."""
    out = []
    for mode, degree, goal in (("placeto", 2.0, "speed-up >= 50x over the published simulator's reference"),
                               ("placeto", 3.0, "makespan() >= 50x faster than the published simulator's "
                                                "reference, issue #36"),
                               ("work_conserving", 2.0, "<= 2 ms per makespan(), speed-up >= 30x over its reference")):
        cell = next((r for r in rows if r["mode"] == mode and r["ops"] == 10_000 and r["degree"] == degree
                     and r["placement"] == "random" and r["speedup"] is not None), None)
        if cell is not None:
            out.append(f"{mode} on random 10k d{degree:g}, random placement: makespan() "
                       f"{cell['makespan_call_s'] * 1e3:.3f} ms, run() {cell['run_s'] * 1e3:.3f} ms, reference "
                       f"{cell['reference_s'] * 1e3:.1f} ms: {cell['speedup_makespan']:.1f}x (makespan()) / "
                       f"{cell['speedup']:.1f}x (run()) (goal: {goal})")
    return out


def planned_cells(sizes: list[int], goal_only: bool) -> list[tuple[int, float, str, str, str]]:
    """(ops, degree, cluster, mode, placement) of every cell to measure, in order."""
    if goal_only:
        return list(GOAL_CELLS)
    cells = [(n, degree, cluster_name, mode, kind) for n in sizes for degree in DEGREES
             for cluster_name, mode in CELLS for kind in PLACEMENTS]
    return [*cells, HARD_CASE]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument("--sizes", default="1000,10000,100000",
                        help="comma-separated op counts (default: 1000,10000,100000)")
    parser.add_argument("--reference-max-ops", type=int, default=10_000,
                        help="run the reference simulator on graphs up to this many ops")
    parser.add_argument("--seconds", type=float, default=1.0,
                        help="target time of one measurement (repeats >= 5)")
    parser.add_argument("--pin", type=int, default=None, metavar="CPU",
                        help="pin the process to this CPU (Linux)")
    parser.add_argument("--goal-only", action="store_true",
                        help="only the cells of the goal lines (10k d2 placeto and work_conserving, 10k d3 placeto)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    out = sys.stderr if args.json else sys.stdout
    pinned = pin_to_cpu(args.pin)
    machine = machine_info(pinned)
    print(f"python {machine['python']}, numpy {machine['numpy']}, numba {machine['numba']}; "
          f"os.cpu_count() = {machine['cpu_count']} ({machine['cpu']}); "
          f"{'not pinned' if pinned is None else f'pinned to CPU {pinned}'}; "
          f"1-min load average {machine['load_average_1min']}", file=out)
    print(f"{machine['platform']}; medians over R repeats (R ~ {args.seconds:g} s per "
          f"measurement, >= {MIN_REPEATS}; reference: {REFERENCE_REPEATS})\n", file=out)
    print(HEADER, file=out, flush=True)
    rows = []
    graphs: dict[tuple[int, float], CompGraph] = {}
    t_start, cpu_start = time.perf_counter(), time.process_time()
    for n, degree, cluster_name, mode, kind in planned_cells(sizes, args.goal_only):
        if (n, degree) not in graphs:
            graphs = {(n, degree): random_dag(ops=n, degree=degree, seed=1,
                                              name=f"random {n // 1000}k d{degree:g}" if n >= 1000 else "")}
        row = bench_cell(graphs[(n, degree)], cluster_name, mode, kind, seconds=args.seconds,
                         reference=n <= args.reference_max_ops)
        row["degree"] = degree
        rows.append(row)
        print(format_row(row), file=out, flush=True)
    wall = time.perf_counter() - t_start
    cpu_share = (time.process_time() - cpu_start) / wall
    mismatches = [r for r in rows if r["same_makespan"] is False]
    print(f"\n{len(rows)} cells in {wall:.0f} s (process CPU time / wall: {cpu_share:.0%}); "
          f"reference and Simulator.run agree on the "
          f"makespan in {sum(r['same_makespan'] is True for r in rows)} of "
          f"{sum(r['same_makespan'] is not None for r in rows)} cells", file=out)
    goals = goal_lines(rows)
    for line in goals:
        print(line, file=out)
    if args.json:
        print(json.dumps({"benchmark": "simulator", "machine": machine, "wall_s": wall,
                          "cpu_share": cpu_share, "results": rows, "goals": goals}))
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
