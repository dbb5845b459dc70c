"""Compile the numba kernels into numba's on-disk cache, one process per kernel group, in parallel.

The simulator's kernels and the list schedulers' are ``@njit(cache=True)``: the first process on a
machine compiles them (the development VM's time per kernel group:
docs/lab/2026-11-26-model-size-and-test-time.md) and writes them beside their sources
(``__pycache__/*.nbi``, ``*.nbc``); every later process loads them. On a fresh clone every process
that simulates before the cache exists compiles them again: the app's first simulation, and each
worker and subprocess of the test suite. ``make setup`` runs this module once (``python -m
placelab.warmup``), so both start warm; it takes the time of the slowest group, not their sum.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor

#: One job per group of kernels, each compiled in its own process: the three simulation modes
#: (``engine.sim.simulator.KERNELS``), the list schedulers (``policies/_listsched_kernels.py``) and the DAG helpers
#: (``engine/graph/_kernels.py``: levels, t-/b-levels, reachability, the cycle finder), DOPPLER's ASSIGN loop
#: (``policies/rl/doppler/_assign_kernel.py``). All run at once, also on two
#: cores: the wall time is then about their CPU time over the cores, or the slowest job. Each kernel gets the
#: argument types every caller passes (read-only input arrays, ``engine.graph._kernels.readonly``), so the cache
#: holds the one version that later processes load.
JOBS = ("work_conserving", "placeto", "default", "list-scheduling", "dag", "doppler")

#: The list-scheduling placers whose kernels the last job compiles.
LIST_SCHEDULERS = ("heft", "critical-path", "m-etf", "m-topo", "m-sct")


def _tiny():
    from engine.generators import random_dag
    from engine.presets import PRESETS

    return random_dag(ops=12, seed=0), PRESETS["k80x2"]()


def compile_job(name: str) -> float:
    """Compile one group's kernels by using them on a tiny graph; the seconds it took."""
    import numpy as np

    start = time.perf_counter()
    graph, cluster = _tiny()
    if name == "list-scheduling":
        from policies.registry import make_placer

        for placer in LIST_SCHEDULERS:
            make_placer(placer).place(graph, cluster, seed=0)
    elif name == "dag":
        _dag_helpers(graph)
    elif name == "doppler":
        _doppler_assign(graph, cluster)
    else:
        from engine.sim.simulator import Simulator

        devices = np.arange(graph.num_ops, dtype=np.int64) % cluster.num_devices
        sim = Simulator(graph, cluster, mode=name)
        sim.run(devices, record_memory=True)
        sim.makespan_peak_and_start(devices, start=True)
        sim.makespan(devices)
    return time.perf_counter() - start


def _doppler_assign(graph, cluster) -> None:
    """Run DOPPLER's ASSIGN kernel once, with the argument types of every caller (``owned`` arrays)."""
    import numpy as np

    from policies.rl.doppler.features import DopplerGraph
    from policies.rl.doppler.rollout import assign

    dg = DopplerGraph.build(graph, cluster)
    n, nd = dg.duration.shape
    assign(dg, np.ones((n, nd), bool), np.arange(n), None, None, np.random.default_rng(0), 0.0, record=False)


def _dag_helpers(graph) -> None:
    """Use every DAG kernel (``engine/graph/_kernels.py``): ``engine.graph.dag``'s helpers and the cycle check."""
    import numpy as np

    from engine.errors import GraphError
    from engine.graph import dag
    from engine.graph.compgraph import CompGraph

    dag.levels(graph)
    dag.t_level(graph)
    dag.critical_path(graph)
    dag.reachability(graph)
    with contextlib.suppress(GraphError):  # its cycle check runs the cycle finder
        CompGraph("cycle", ["a", "b"], compute_any=np.ones(2), edge_src=[0, 1], edge_dst=[1, 0])


def main() -> int:
    start = time.perf_counter()
    workers = len(JOBS)
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        took = dict(zip(JOBS, pool.map(compile_job, JOBS), strict=True))
    slowest = max(took, key=took.get)
    print(f"numba kernels ready in {time.perf_counter() - start:.0f} s (slowest: {slowest}, {took[slowest]:.0f} s)",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
