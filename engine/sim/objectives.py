"""Objectives over a simulated :class:`~engine.sim.schedule.Schedule` (CONTRACTS §4).

* :func:`makespan` — seconds for one step.
* :func:`memory_penalized_runtime` — Placeto App. A.7: ``R = makespan + c·max(0, peak_GB − M)``.
* :func:`sqrt_runtime` — Mirhoseini et al. 2017 §3.1: ``R(P) = sqrt(r(P))``, replaced by a
  *failing signal* when the placement does not fit in memory.
* :func:`penalized_runtime`, :func:`sqrt_reward` — the same two objectives from a makespan and
  per-device peaks, without a Schedule: the learned placers' simulator fast path reports only
  those, and this module stays the one place that defines the objectives.
* :func:`lower_bound` — no placement can beat it: the larger of the critical path with every
  op on its fastest device and free communication, and the total work spread perfectly
  over all devices.
"""

from __future__ import annotations

import math

import numpy as np

from engine.cluster import Cluster
from engine.graph.compgraph import CompGraph
from engine.graph.dag import critical_path
from engine.placement import compute_matrix
from engine.sim.schedule import Schedule

__all__ = [
    "default_failing_signal",
    "lower_bound",
    "makespan",
    "memory_penalized_runtime",
    "penalized_runtime",
    "sqrt_reward",
    "sqrt_runtime",
]

GB = 1e9


def makespan(schedule: Schedule) -> float:
    """The step time (s)."""
    return schedule.makespan


def memory_penalized_runtime(schedule: Schedule, *, c: float = 2.0, memory_gb: float | None = None) -> float:
    """Placeto App. A.7: ``makespan + c·max(0, peak_GB − M)``.

    Parameters
    ----------
    c : float
        Penalty in seconds per GB over the limit (default 2 s/GB).
    memory_gb : float, optional
        The limit M in GB; default the tightest device's memory.
    """
    return penalized_runtime(schedule.makespan, schedule.peak_memory, schedule.memory_capacity, c=c,
                             memory_gb=memory_gb)


def penalized_runtime(makespan_s: float, peak_bytes: np.ndarray, memory_bytes: np.ndarray, *, c: float = 2.0,
                      memory_gb: float | None = None) -> float:
    """Placeto App. A.7 from a makespan (s) and per-device peaks and capacities (bytes).

    ``makespan + c·max(0, max peak_GB − M)`` with M = ``memory_gb``, default the tightest
    device's memory (CONTRACTS §4) — not the memory of the device with the peak.
    """
    limit = float(np.min(memory_bytes)) / GB if memory_gb is None else memory_gb
    peak_gb = float(np.max(peak_bytes)) / GB
    return float(makespan_s) + c * max(0.0, peak_gb - limit)


def default_failing_signal(graph: CompGraph) -> float:
    """Failing signal when none is given: ``sqrt`` of 10× the graph's total fastest compute.

    Mirhoseini §3.1 sets it "manually depending on the input graph"; ten times the
    sequential step time is worse than any placement that runs, which is all it must be.
    """
    return math.sqrt(10.0 * float(graph.min_compute().sum()))


def sqrt_runtime(schedule: Schedule, failing_signal: float) -> float:
    """Mirhoseini §3.1: ``sqrt(makespan)``, or ``failing_signal`` if any device is out of memory."""
    return sqrt_reward(schedule.makespan, schedule.any_oom, failing_signal)


def sqrt_reward(makespan_s: float, oom: bool, failing_signal: float) -> float:
    """Mirhoseini §3.1 from a makespan (s) and whether any device ran out of memory."""
    return failing_signal if oom else math.sqrt(makespan_s)


def lower_bound(graph: CompGraph, cluster: Cluster) -> float:
    """A makespan no placement of ``graph`` on ``cluster`` can beat (s).

    ``max(critical path, total work / total throughput)``: the critical path with each op on
    its fastest device of the cluster (device speed included) and free communication; the
    work term is the larger of (fastest times + ``op_overhead_s`` per non-zero op, which
    placeto mode charges) / devices and, on a cluster of one kind and model, total compute / total
    speed.
    """
    fastest = np.nanmin(compute_matrix(graph, cluster), axis=1)
    cp = critical_path(graph, node_cost=fastest).length_s
    overhead = cluster.simulation.op_overhead_s * float(np.count_nonzero(fastest > 0))
    work = (float(fastest.sum()) + overhead) / cluster.num_devices
    if len({(d.kind, d.model) for d in cluster.devices}) == 1:
        # one kind and model: op i takes c_i / s_d on device d, so the devices together do at most
        # sum(s_d) reference-seconds of work per second ("total work / total throughput")
        c = graph.compute_on(cluster.devices[0].kind, cluster.devices[0].model)
        work = max(work, float(c.sum()) / float(cluster.speed.sum()))
    return max(cp, work)
