"""Discrete-event simulation of a placed graph on a cluster (CONTRACTS §4).

One obvious entry point, :func:`simulate`; for loops that evaluate many placements of the
same graph (RL training, local search) build a :class:`Simulator` once and call
:meth:`Simulator.run` or :meth:`Simulator.makespan` per placement, which skips all
per-graph preparation.

Modes
-----
``placeto``
    Placeto App. A.5 exactly as published (Addanki et al. 2019): per-device FIFO op queues,
    one outgoing FIFO channel per device, one transfer per output serving every remote
    consumer, δ1 = ``op_overhead_s`` after every non-zero op, δ2 = ``transfer_gap_s`` after
    every transfer, a single bandwidth (the cluster's default link).
    Deviation: an op whose compute time is exactly 0 gets no δ1 (CONTRACTS §4); the
    published code's identity test ``compute_cost is 0`` skips δ1 only for the integer 0.
``default``
    One transfer per (tensor, destination device); per-pair bandwidth and latency
    (arrival = start + latency + bytes / bandwidth); each device's sends are serialized on
    one outgoing channel, busy for bytes / bandwidth + ``transfer_gap_s`` (latency is
    pipelined, it does not hold the channel). A tensor sent to a device carries the largest
    ``bytes`` among the edges from its producer to consumers there. Ready ops start in the
    order they became ready, ties by lower op index; ``op_overhead_s`` applies as in placeto.
``work_conserving``
    DOPPLER Algorithm 1 (stochastic); not available in this module yet: asking for it
    raises :class:`~engine.errors.SimulationError`.
"""

from __future__ import annotations

import numpy as np

from engine import _simkernel
from engine.cluster import Cluster
from engine.errors import SimulationError
from engine.graph import CompGraph
from engine.placement import Constraints, Placement
from engine.schedule import Schedule

__all__ = ["Simulator", "simulate"]

_KERNEL_MODES = ("placeto", "default")


class Simulator:
    """A graph and a cluster prepared for many simulations.

    Parameters
    ----------
    graph : CompGraph
    cluster : Cluster
    mode : str, optional
        Overrides ``cluster.simulation.mode``.

    Examples
    --------
    >>> from engine.presets import PRESETS
    >>> sim = Simulator(graph, PRESETS["k80x2"]())      # doctest: +SKIP
    >>> sim.makespan(np.zeros(graph.num_ops, int))       # doctest: +SKIP
    """

    def __init__(self, graph: CompGraph, cluster: Cluster, *, mode: str | None = None) -> None:
        self.graph = graph
        self.cluster = cluster
        self.mode = mode or cluster.simulation.mode
        if self.mode not in _KERNEL_MODES:
            raise SimulationError(f"simulation mode '{self.mode}' is not available here "
                                  f"(choose one of {', '.join(_KERNEL_MODES)})")
        self.constraints = Constraints(graph, cluster)
        s = cluster.simulation
        self._args = (self.mode == "placeto", cluster.num_devices,
                      graph.succ.ptr, graph.succ.idx, graph.succ.edge, graph.pred.ptr, graph.pred.idx,
                      graph.edge_bytes, graph.edge_transfer_s, graph.has_transfer_times,
                      graph.output_bytes, graph.persistent_bytes, graph.temp_bytes)
        self._links = (np.ascontiguousarray(cluster.bandwidth), np.ascontiguousarray(cluster.latency),
                       float(cluster.link.bandwidth_bytes_per_s), float(s.op_overhead_s),
                       float(s.transfer_gap_s))
        self._workspaces: dict[bool, _simkernel.Workspace] = {}

    def _kernel(self, devices: np.ndarray, record_memory: bool) -> tuple[_simkernel.Workspace, float, int, int]:
        dev = np.ascontiguousarray(devices, dtype=np.int64)
        dur = self.constraints.check(dev)
        ws = self._workspaces.get(record_memory)
        if ws is None:
            ws = self._workspaces[record_memory] = _simkernel.Workspace(
                self.graph.num_ops, self.graph.num_edges, self.cluster.num_devices, record_memory)
        makespan, nrows, nmem = _simkernel.simulate_kernel(
            *self._args, dev, dur, *self._links, record_memory,
            ws.wi, ws.wf, ws.ri, ws.rf, ws.ev_t, ws.ev_k, ws.mr, ws.df, ws.di, ws.counts)
        return ws, float(makespan), int(nrows), int(nmem)

    def run(self, devices: np.ndarray | Placement, *, record_memory: bool = False) -> Schedule:
        """Simulate one placement (a :class:`Placement` or an int array of device indices)."""
        dev = np.asarray(devices.devices if isinstance(devices, Placement) else devices, dtype=np.int64)
        ws, makespan, nrows, nmem = self._kernel(dev, record_memory)
        k = _simkernel
        ri, rf, df = ws.ri[:nrows], ws.rf[:nrows], ws.df
        persistent = np.bincount(dev, weights=self.graph.persistent_bytes, minlength=self.cluster.num_devices)
        memory_events = None
        if record_memory:
            mr = ws.mr[:nmem]
            memory_events = (mr[:, 0].copy(), mr[:, 1].astype(np.int64), mr[:, 2].copy())
        return Schedule(
            makespan=makespan, op_device=dev.copy(), op_start=ws.wf[:, k._START].copy(),
            op_end=ws.wf[:, k._END].copy(),
            transfer_op=ri[:, k._R_OP].copy(), transfer_src=ri[:, k._R_SRC].copy(), transfer_dst=ri[:, k._R_DST].copy(),
            transfer_bytes=rf[:, k._R_BYTES].copy(), transfer_start=rf[:, k._R_START].copy(),
            transfer_end=rf[:, k._R_END].copy(), transfer_primary=ri[:, k._R_PRIMARY].astype(bool),
            compute_time=df[:, k._BUSY].copy(), memcpy_time=df[:, k._MEMCPY].copy(), peak_memory=df[:, k._PEAK].copy(),
            memory_capacity=self.cluster.memory.copy(), persistent_memory=persistent, mode=self.mode,
            _memory_events=memory_events,
        )

    def makespan(self, devices: np.ndarray | Placement) -> float:
        """Makespan (s) of one placement: the cheapest call for search and RL loops."""
        dev = devices.devices if isinstance(devices, Placement) else devices
        return self._kernel(dev, False)[1]

    def makespan_and_peak(self, devices: np.ndarray | Placement) -> tuple[float, np.ndarray]:
        """Makespan (s) and per-device peak memory (bytes) of one placement."""
        dev = devices.devices if isinstance(devices, Placement) else devices
        ws, makespan, _, _ = self._kernel(dev, False)
        return makespan, ws.df[:, _simkernel._PEAK].copy()


def simulate(graph: CompGraph, cluster: Cluster, placement: Placement | np.ndarray, *,
             mode: str | None = None, record_memory: bool = False) -> Schedule:
    """Simulate ``placement`` of ``graph`` on ``cluster`` and return its :class:`Schedule`.

    Parameters
    ----------
    graph, cluster : CompGraph, Cluster
    placement : Placement or int array of device indices (one per op)
    mode : {"placeto", "default"}, optional
        Overrides the cluster's ``simulation.mode``.
    record_memory : bool
        Keep every allocation and free so :meth:`Schedule.memory_timeline` can draw memory
        over time (the peak is always computed).

    Raises
    ------
    PlacementError
        If the placement does not fit the graph and cluster.
    SimulationError
        For an unavailable mode.
    """
    return Simulator(graph, cluster, mode=mode).run(placement, record_memory=record_memory)
