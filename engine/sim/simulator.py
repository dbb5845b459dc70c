"""Discrete-event simulation of a placed graph on a cluster (CONTRACTS §4, ``docs/reference/simulation.md``).

One obvious entry point, :func:`simulate`; for loops that evaluate many placements of the
same graph (RL training, local search) build a :class:`Simulator` once and call
:meth:`Simulator.run` or :meth:`Simulator.makespan` per placement, which skips all
per-graph preparation. The mode and its options come from ``cluster.simulation``
(:meth:`engine.cluster.Cluster.with_simulation` changes them); :data:`KERNELS` maps each mode
to the class that prepares and calls its compiled kernel (one module per mode:
``engine/sim/_kernel_placeto.py``, ``engine/sim/_kernel_default.py``, ``engine/sim/_kernel_wc.py``; the
pieces they share are in ``engine/sim/_core.py``, their arrays and named columns in ``engine/sim/_layout.py``).

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
    DOPPLER §2, Algorithms 1–2 (Yao et al. 2025), in the configuration of the authors'
    published simulator: each device serves one op at a time in the order the ops asked for
    it (an op asks when its last input is on its device); when an op ends each out-edge, in
    the source's order, hands its output over at once on the same device or after the
    transfer time to another; transfers never wait for each other; no overheads; the
    makespan is the end of the last op. Options (``cluster.simulation``): ``choose``
    (``fifo`` | ``b_level``), ``contention`` (``none`` | ``per_device`` | ``per_link``),
    ``noise`` / ``seed`` / ``runs`` (log-normal durations, mean over seeded runs),
    ``memory_aware`` (an op waits until it fits; a deadlock is reported as OOM), and the
    executor's copies: ``dispatch_s``, ``copy_occupies_sender`` (the sender makes each copy,
    for bytes / bandwidth or the link's measured ``copy_curve``; the latency is in flight) and
    ``copy_bus_shared`` (copies in progress share one bus).

Given transfer times (``CompGraph.edge_transfer_s``) replace latency + bytes / bandwidth of
an edge in every mode; a placeto / default transfer that serves several edges takes the
longest of their times.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.cluster import Cluster, SimulationSettings, edge_transfer_cost
from engine.errors import SimulationError, quote
from engine.graph import _kernels as _dagkernels
from engine.graph._kernels import readonly
from engine.graph.compgraph import CompGraph
from engine.placement import Constraints, Placement
from engine.sim import _kernel_default, _kernel_placeto, _kernel_wc
from engine.sim import _layout as L
from engine.sim.estimator import given_transfer_times
from engine.sim.schedule import Schedule

__all__ = ["KERNELS", "MakespanStats", "Simulator", "simulate", "wc_durations"]


def wc_durations(settings: SimulationSettings, durations: np.ndarray, num_edges: int,
                 run: int = 0, ones: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Op durations and per-edge transfer-time factors of one seeded work-conserving run.

    Noise model (ours; DOPPLER §2 leaves P(⟨t_out, a⟩ | S, t_in) open): every op time and
    every transfer time is multiplied by an independent log-normal factor
    ``exp(σ·Z − σ²/2)`` with ``σ = settings.noise``: mean 1 (expected times are the graph's),
    always positive, coefficient of variation ≈ σ. ``Z`` are standard normals drawn by
    numpy's PCG64 from the seed ``(settings.seed, run)``: ops first, then edges. Without
    noise the factors are ``ones`` (a reusable array of 1.0) or new ones.
    """
    if settings.noise == 0:
        return durations, np.ones(num_edges) if ones is None else ones
    rng = np.random.default_rng([settings.seed, run])
    sigma = settings.noise
    op_f = np.exp(sigma * rng.standard_normal(len(durations)) - sigma * sigma / 2)
    edge_f = np.exp(sigma * rng.standard_normal(num_edges) - sigma * sigma / 2)
    return durations * op_f, edge_f


@dataclass(frozen=True)
class MakespanStats:
    """Makespans of ``runs`` seeded executions of one placement (s)."""

    mean: float
    std: float
    values: tuple[float, ...]


class _Kernel:
    """What every kernel class shares: the workspace layout (:mod:`engine.sim._layout`) and the
    schedule read from it."""

    graph: CompGraph
    cluster: Cluster

    @staticmethod
    def memory_level(record_memory: bool, memory: bool) -> int:
        """The kernel's ``memory`` argument: every change, peaks only, or nothing."""
        return L.MEM_RECORD if record_memory else L.MEM_PEAK if memory else L.MEM_OFF

    def peak(self, ws) -> np.ndarray:
        return ws.dev_f[:, L.PEAK]

    def op_start(self, ws) -> np.ndarray:
        return ws.op_f[:, L.START]

    def schedule_fields(self, ws, nrows: int) -> dict:
        row_i, row_f, dev_f = ws.row_i[:nrows], ws.row_f[:nrows], ws.dev_f
        return dict(op_start=ws.op_f[:, L.START].copy(), op_end=ws.op_f[:, L.END].copy(),
                    transfer_op=row_i[:, L.R_OP].copy(), transfer_src=row_i[:, L.R_SRC].copy(),
                    transfer_dst=row_i[:, L.R_DST].copy(), transfer_bytes=row_f[:, L.R_BYTES].copy(),
                    transfer_start=row_f[:, L.R_START].copy(), transfer_end=row_f[:, L.R_END].copy(),
                    compute_time=dev_f[:, L.BUSY].copy(), memcpy_time=dev_f[:, L.MEMCPY].copy(),
                    peak_memory=dev_f[:, L.PEAK].copy())


class _QueueKernel(_Kernel):
    """What the ``placeto`` and ``default`` kernels share: their inputs and workspace
    (:class:`engine.sim._layout.QueueInputs`, :class:`engine.sim._layout.QueueWorkspace`)."""

    kernel = None

    def __init__(self, graph: CompGraph, cluster: Cluster) -> None:
        self.graph, self.cluster = graph, cluster
        self.workspaces: dict[bool, L.QueueWorkspace] = {}
        g, s = graph, cluster.simulation
        self.inputs = L.QueueInputs(
            num_devices=cluster.num_devices, succ_ptr=g.succ.ptr, succ_idx=g.succ.idx, succ_edge=g.succ.edge,
            pred_ptr=g.pred.ptr, pred_idx=g.pred.idx, edge_bytes=g.edge_bytes, edge_time=g.edge_transfer_s,
            has_times=bool(g.has_transfer_times), out_bytes=g.output_bytes, persistent=g.persistent_bytes,
            temp=g.temp_bytes, bandwidth=np.ascontiguousarray(cluster.bandwidth),
            latency=np.ascontiguousarray(cluster.latency), bw0=float(cluster.link.bandwidth_bytes_per_s),
            op_overhead=float(s.op_overhead_s), transfer_gap=float(s.transfer_gap_s))

    def __call__(self, dev: np.ndarray, dur: np.ndarray, record_memory: bool, run: int = 0, memory: bool = True):
        """``memory=False``: the makespan and op times only (no memory, no transfer rows)."""
        ws = self.workspaces.get(record_memory)
        if ws is None:
            ws = self.workspaces[record_memory] = L.queue_workspace(
                self.graph.num_ops, self.graph.num_edges, self.cluster.num_devices, record_memory)
        makespan, nrows, nmem = self.kernel(self.inputs, dev, dur, self.memory_level(record_memory, memory), ws)
        return ws, float(makespan), int(nrows), int(nmem)

    def schedule_fields(self, ws, nrows: int) -> dict:
        return dict(super().schedule_fields(ws, nrows), transfer_primary=ws.row_i[:nrows, L.R_PRIMARY].astype(bool))


class _PlacetoKernel(_QueueKernel):
    """``placeto``: :func:`engine.sim._kernel_placeto.simulate_placeto`."""

    kernel = staticmethod(_kernel_placeto.simulate_placeto)


class _DefaultKernel(_QueueKernel):
    """``default``: :func:`engine.sim._kernel_default.simulate_default`."""

    kernel = staticmethod(_kernel_default.simulate_default)


class _WorkConservingKernel(_Kernel):
    """``work_conserving``: :func:`engine.sim._kernel_wc.simulate_wc`."""

    def __init__(self, graph: CompGraph, cluster: Cluster) -> None:
        s = self.settings = cluster.simulation
        self.graph, self.cluster = graph, cluster
        order = np.lexsort((graph.edge_rank, graph.edge_src))  # out-edges in the source's order
        given = given_transfer_times(graph, cluster)  # with sender copies, the link's measured curve
        self.choose = L.PRIORITY if s.choose == "b_level" else L.FIFO
        self.sender_copies = (L.NO_SENDER_COPIES if not s.copy_occupies_sender else
                              L.SHARED_BUS if s.copy_bus_shared else L.SENDER_COPIES)
        self.inputs = L.WCInputs(
            num_devices=cluster.num_devices, out_ptr=graph.succ.ptr, out_edge=order.astype(np.int64),
            out_dst=graph.edge_dst[order], pred_ptr=graph.pred.ptr, pred_edge=graph.pred.edge, pred_src=graph.pred.idx,
            edge_bytes=graph.edge_bytes, edge_given=readonly(given),
            bandwidth=np.ascontiguousarray(cluster.bandwidth), latency=np.ascontiguousarray(cluster.latency),
            out_bytes=graph.output_bytes,
            persistent=graph.persistent_bytes, temp=graph.temp_bytes, need=graph.temp_bytes + graph.output_bytes,
            capacity=cluster.memory, choose=self.choose,
            contention={"none": L.NO_CONTENTION, "per_device": L.PER_DEVICE, "per_link": L.PER_LINK}[s.contention],
            memory_aware=bool(s.memory_aware), overhead=float(s.dispatch_s), sender_copies=self.sender_copies,
            bus_capacity=float(s.copy_bus_capacity))
        self.no_priority = np.zeros(graph.num_ops)
        self.no_noise = np.ones(graph.num_edges)
        self.workspaces: dict[bool, L.WCWorkspace] = {}

    def priority(self, dev: np.ndarray, dur: np.ndarray, edge_noise: np.ndarray) -> np.ndarray:
        """b-level of every op under this placement: its own time, then the longest path of op
        and transfer times to an exit (DOPPLER App. E's b-level with placed costs)."""
        if self.choose == L.FIFO:
            return self.no_priority
        g = self.graph
        ec = edge_transfer_cost(g, self.cluster, dev) * edge_noise
        return _dagkernels.longest_to_sinks(g.topo_order, g.succ.ptr, g.succ.idx, g.succ.edge, readonly(dur),
                                            readonly(ec))

    def __call__(self, dev: np.ndarray, dur: np.ndarray, record_memory: bool, run: int = 0, memory: bool = True):
        """``memory=False``: op and transfer times only (peaks not computed), unless memory-aware."""
        ws = self.workspaces.get(record_memory)
        if ws is None:
            ws = self.workspaces[record_memory] = L.wc_workspace(
                self.graph.num_ops, self.graph.num_edges, self.cluster.num_devices, record_memory,
                self.sender_copies == L.SHARED_BUS)
        dur, edge_noise = wc_durations(self.settings, dur, self.graph.num_edges, run, self.no_noise)
        level = self.memory_level(record_memory, memory or self.settings.memory_aware)
        makespan, nrows, nmem, _done = _kernel_wc.simulate_wc(
            self.inputs, dev, dur, self.priority(dev, dur, edge_noise), edge_noise, level, ws)
        return ws, float(makespan), int(nrows), int(nmem)

    def schedule_fields(self, ws, nrows: int) -> dict:
        return dict(super().schedule_fields(ws, nrows), transfer_primary=np.ones(nrows, dtype=bool),
                    stalled=ws.dev_i[:, L.STALLED].astype(bool))


#: Simulation mode -> the kernel that runs it.
KERNELS: dict[str, type] = {
    "placeto": _PlacetoKernel,
    "default": _DefaultKernel,
    "work_conserving": _WorkConservingKernel,
}


class Simulator:
    """A graph and a cluster prepared for many simulations.

    Parameters
    ----------
    graph : CompGraph
    cluster : Cluster
        Its ``simulation`` settings choose the mode and options.
    mode : str, optional
        Overrides ``cluster.simulation.mode`` (same as ``cluster.with_simulation(mode=mode)``).

    Raises
    ------
    SimulationError
        For an unknown mode.

    Examples
    --------
    >>> from engine.presets import PRESETS
    >>> sim = Simulator(graph, PRESETS["k80x2"]())      # doctest: +SKIP
    >>> sim.makespan(np.zeros(graph.num_ops, int))       # doctest: +SKIP
    """

    def __init__(self, graph: CompGraph, cluster: Cluster, *, mode: str | None = None) -> None:
        if mode is not None:
            if mode not in KERNELS:
                raise SimulationError(f"unknown simulation mode {quote(mode)} (choose one of {', '.join(KERNELS)})")
            cluster = cluster.with_simulation(mode=mode)
        self.graph = graph
        self.cluster = cluster
        self.mode = cluster.simulation.mode
        self.runs = cluster.simulation.runs if self.mode == "work_conserving" else 1
        self.constraints = Constraints(graph, cluster)
        self._kernel = KERNELS[self.mode](graph, cluster)

    def _prepare(self, devices: np.ndarray | Placement) -> tuple[np.ndarray, np.ndarray]:
        dev = devices.devices if isinstance(devices, Placement) else devices
        dev = readonly(np.ascontiguousarray(dev, dtype=np.int64))
        return dev, self.constraints.check(dev)

    def run(self, devices: np.ndarray | Placement, *, record_memory: bool = False, run: int = 0) -> Schedule:
        """Simulate one placement (a :class:`Placement` or an int array of device indices).

        ``run`` picks the seeded execution in work-conserving mode with ``noise`` (0: the first).
        """
        dev, dur = self._prepare(devices)
        ws, makespan, nrows, nmem = self._kernel(dev, dur, record_memory, run)
        persistent = np.bincount(dev, weights=self.graph.persistent_bytes, minlength=self.cluster.num_devices)
        memory_events = None
        if record_memory:
            log = ws.mem_log[:nmem]
            memory_events = (log[:, L.LOG_T].copy(), log[:, L.LOG_DEV].astype(np.int64), log[:, L.LOG_BYTES].copy())
        return Schedule(makespan=makespan, op_device=dev.copy(), memory_capacity=self.cluster.memory.copy(),
                        persistent_memory=persistent, mode=self.mode, _memory_events=memory_events,
                        **self._kernel.schedule_fields(ws, nrows))

    def makespan_stats(self, devices: np.ndarray | Placement) -> MakespanStats:
        """Makespans of the ``runs`` seeded executions (one unless work-conserving with runs > 1)."""
        dev, dur = self._prepare(devices)
        values = tuple(self._kernel(dev, dur, False, r, memory=False)[1] for r in range(self.runs))
        return MakespanStats(float(np.mean(values)), float(np.std(values)), values)

    def makespan(self, devices: np.ndarray | Placement) -> float:
        """Makespan (s) of one placement, the mean over ``runs`` seeded executions: the
        cheapest call for search and RL loops."""
        if self.runs > 1:
            return self.makespan_stats(devices).mean
        dev, dur = self._prepare(devices)
        return self._kernel(dev, dur, False, memory=False)[1]

    def makespan_and_peak(self, devices: np.ndarray | Placement) -> tuple[float, np.ndarray]:
        """Makespan (s, mean over runs) and per-device peak memory (bytes, the largest over runs)."""
        makespan, peak, _ = self.makespan_peak_and_start(devices, start=False)
        return makespan, peak

    def makespan_peak_and_start(self, devices: np.ndarray | Placement, *,
                                start: bool = True) -> tuple[float, np.ndarray, np.ndarray | None]:
        """:meth:`makespan_and_peak` and every op's start time (s, the mean over runs; NaN for an op
        that never ran), or None with ``start=False``."""
        dev, dur = self._prepare(devices)
        total, peak, starts = 0.0, None, None
        for r in range(self.runs):
            ws, makespan, _, _ = self._kernel(dev, dur, False, r)
            total += makespan
            p = self._kernel.peak(ws)
            peak = p.copy() if peak is None else np.maximum(peak, p)
            if start:
                s = self._kernel.op_start(ws)
                starts = s.copy() if starts is None else starts + s
        return total / self.runs, peak, None if starts is None else starts / self.runs


def simulate(graph: CompGraph, cluster: Cluster, placement: Placement | np.ndarray, *,
             mode: str | None = None, record_memory: bool = False) -> Schedule:
    """Simulate ``placement`` of ``graph`` on ``cluster`` and return its :class:`Schedule`.

    Parameters
    ----------
    graph, cluster : CompGraph, Cluster
    placement : Placement or int array of device indices (one per op)
    mode : {"placeto", "default", "work_conserving"}, optional
        Overrides the cluster's ``simulation.mode``.
    record_memory : bool
        Keep every allocation and free so :meth:`Schedule.memory_timeline` can draw memory
        over time (the peak is always computed).

    Raises
    ------
    PlacementError
        If the placement does not fit the graph and cluster.
    SimulationError
        For an unknown mode.
    """
    return Simulator(graph, cluster, mode=mode).run(placement, record_memory=record_memory)
