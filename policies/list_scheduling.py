"""List schedulers (Kwok & Ahmad 1999): select a ready op, place it on a device, repeat.

* ``critical-path`` — DOPPLER §6.1's baseline: select the ready op with the largest b-level
  (average compute + average communication, DOPPLER App. E), place it on the device where
  it starts earliest; ties (equal b-levels, equally early devices) broken at random; the
  best of ``runs`` = 50 seeded assignments, each evaluated with the simulator ("we run 50
  assignments and report the best").
* ``heft`` — Topcuoglu et al. 2002: upward rank ``rank(i) = w̄_i + max_j (c̄_ij + rank(j))``
  with w̄ the op's mean compute over the devices that can run it and ``c̄ = L̄ + bytes / B̄``
  (mean latency and mean bandwidth over device pairs); ops in decreasing rank, each on the
  device with the earliest finish time, inserted into an idle gap when one is long enough.
* ``m-etf`` — Baechi (Jeon et al., SoCC'20) m-ETF: among all (ready op, device) pairs take
  the one that starts earliest (ties: larger static level = b-level of compute only, then
  lower op index).
* ``m-topo`` — Baechi m-TOPO: ops in topological order fill device 0, then 1, ... each up to
  ``(1 + slack) ·`` (total static memory / devices), capped by the device's memory; static
  memory of an op = persistent + output bytes, as Baechi counts it.
* ``m-sct`` — Baechi m-SCT (Hanen & Munier's Smallest Communication Time): favourite
  children from the LP relaxation below, solved with HiGHS, then ETF where a favourite
  child whose parent's device can run it and has room goes to that device.

  LP (Hanen & Munier 1995; Baechi §4.3): variables s_i ≥ 0 (start), x_ij ∈ [0, 1] per edge
  (0 = favourite child, no communication), w (makespan); minimise w subject to
  ``s_i + p_i + c_ij·x_ij ≤ s_j`` per edge, ``s_i + p_i ≤ w``, ``Σ_j x_ij ≥ outdeg(i) − 1``
  (at most one favourite child) and ``Σ_i x_ij ≥ indeg(j) − 1`` (at most one favourite
  parent), with p = mean compute and c = c̄ (HEFT's). j is i's favourite child when
  ``x_ij < ½`` (the constraints allow at most one per op and one per child).
  Simplification: Hanen & Munier's scheduler lets a processor idle while it waits for an
  urgent favourite child; here the child only *prefers* its parent's device (it is forced
  there when it fits) and the ETF rule decides when. If HiGHS does not reach an optimum
  within ``lp_time_limit_s``, favourite children come from a greedy rule instead: each op's
  child with the largest c̄ among children that have no favourite parent yet.

Common rules
------------
* Units: the ops of a colocation group form one unit (:class:`~policies.base.PlacementUnits`);
  scheduling is per op, and the first op of a unit to be placed commits the unit's device
  (its later ops are forced there). Pinned units and units only one device can run are
  committed before scheduling starts.
* Times as the cluster's simulation mode executes them (:mod:`engine.sim.estimator`, issue 55): an op holds its
  device for its compute plus the mode's per-op overhead (δ1, ``dispatch_s``); a remote input arrives by the
  mode's transfer rule — placeto's one transfer per output on the sender's one FIFO channel with δ2, default's one
  per (output, device), work-conserving's one per edge, uncontended or on a device's or a pair's channel, or
  copied by the sender. HEFT's mean communication cost ``c̄`` uses the mode's link and δ2. Deviation (declared in
  docs/reference/deviations.md): the papers estimate ``latency + bytes / bandwidth`` with no contention.
* Memory-aware (default for every scheduler here, ``memory_aware=False`` turns it off):
  per-device memory is tracked while scheduling (see :mod:`policies._listsched_kernels`)
  and a device without room for an op is skipped; when no device has room the op goes to
  the runnable device with the most free memory.
* Own estimate: the returned placement carries :meth:`ListScheduling.predict` of it as its
  ``predicted_makespan_s``: the estimator's pass over the placement in the order the devices will run it (FIFO,
  every output sent when it is ready), not the order the scheduler decided it in — HEFT's rank order with
  insertion is not an order a FIFO device runs. ``compare`` shows it beside the simulated makespan and warns
  beyond 5 %; where the mode has options a planner cannot model (noise, ``choose=b_level``, memory-aware waiting,
  a shared copy bus) they differ.
* Guard (``guard=True``, placelab's): where that estimate of the placement is longer than the estimate of
  running everything on the fastest device that can run every op, and everything fits there, that device is
  returned instead (with its estimate): a remote placement the heuristic's own estimate says does not pay is
  not taken. ``guard=False`` gives the heuristic's placement as the paper defines it.
"""

from __future__ import annotations

import ctypes
import os
import sys
from dataclasses import replace

import numpy as np

from engine.cluster import Cluster
from engine.graph.compgraph import CompGraph
from engine.graph.dag import b_level
from engine.placement import Placement
from engine.sim import _plankernels as _p
from engine.sim.estimator import TIE_OP, PlanInputs, plan_inputs
from engine.sim.simulator import Simulator
from policies import _listsched_kernels as _k
from policies.base import PlacementUnits, Progress, placer, relieve_memory

__all__ = ["ListScheduling", "favourite_children", "mean_transfer_time", "memory_penalized"]

GB = 1e9


def memory_penalized(makespan: float, peak: np.ndarray, capacity: np.ndarray, c: float = 2.0) -> float:
    """Placeto A.7's memory-penalized runtime ``makespan + c·max(0, overflow_GB)`` (s).

    The overflow is taken per device (peak − that device's memory, the worst device), which
    equals Placeto's ``peak − M`` on clusters of equal devices.
    """
    return float(makespan) + c * max(0.0, float(np.max(peak - capacity)) / GB)


def mean_transfer_time(graph: CompGraph, plan: PlanInputs) -> np.ndarray:
    """HEFT's mean communication cost of every edge, ``c̄ = L̄ + bytes / B̄`` (Topcuoglu et al. 2002, §3), with
    the mode's link (placeto: its one bandwidth, no latency) plus its per-transfer gap δ2, or the edge's given
    transfer time; B̄ and L̄ are means over the ordered pairs of distinct devices."""
    off = ~np.eye(plan.bw.shape[0], dtype=bool)
    mean_bw = float(np.mean(plan.bw[off])) if np.isfinite(plan.bw[off]).all() else np.inf
    by_bytes = graph.edge_bytes / mean_bw + float(plan.latency[off].mean()) + plan.gap
    return np.where(np.isnan(plan.edge_given), by_bytes, plan.edge_given)


class ListScheduling:
    """A graph and a cluster prepared for list scheduling (costs, units, ranks)."""

    def __init__(self, graph: CompGraph, cluster: Cluster) -> None:
        self.graph = graph
        self.cluster = cluster
        self.units = units = PlacementUnits(graph, cluster)
        nd = cluster.num_devices
        self.plan = plan = plan_inputs(graph, cluster, feasible=units.feasible[units.op_unit])
        self.dur = plan.hold
        self.topology = _p.Topology(graph.succ.ptr, graph.succ.idx, graph.succ.edge, graph.pred.ptr, graph.pred.idx,
                                    graph.pred.edge)
        single = units.feasible.sum(axis=1) == 1
        self.unit_dev0 = np.where(single, np.argmax(units.feasible, axis=1), -1).astype(np.int64)
        self.unit_persist = np.bincount(units.op_unit, weights=graph.persistent_bytes, minlength=units.num_units)
        finite = np.isfinite(self.dur)
        self.mean_compute = np.where(finite, self.dur, 0.0).sum(axis=1) / finite.sum(axis=1)
        self.edge_comm = mean_transfer_time(graph, plan) if nd > 1 else np.zeros(graph.num_edges)
        self.rank = b_level(graph, node_cost=self.mean_compute, edge_cost=self.edge_comm)
        self.static_level = b_level(graph, node_cost=self.mean_compute)
        self.capacity = cluster.memory.astype(np.float64)
        # writable copies, as plan_inputs makes them: the kernel is compiled for one set of array types
        self.out_bytes = np.array(graph.output_bytes, dtype=np.float64)
        self.temp_bytes = np.array(graph.temp_bytes, dtype=np.float64)

    def run(self, prio: np.ndarray, noise: np.ndarray, dev_noise: np.ndarray, *, select: int, device: int,
            memory_aware: bool = True, fav_parent: np.ndarray | None = None,
            fill_cap: np.ndarray | None = None, unit_dev: np.ndarray | None = None,
            fifo: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """One list-scheduling pass: (device, start, output time) per op and the schedule's makespan, under the
        cluster's simulation mode (:mod:`engine.sim.estimator`). ``unit_dev`` commits units up front (-1: free)."""
        g = self.graph
        n, nd = g.num_ops, self.cluster.num_devices
        fav = np.full(n, -1, np.int64) if fav_parent is None else fav_parent
        cap = np.full(nd, np.inf) if fill_cap is None else fill_cap
        static_mem = g.persistent_bytes + g.output_bytes
        dev, start, out_t, makespan = _k.list_schedule(
            self.topology, self.plan, _p.transfers(n, g.num_edges, nd), self.units.op_unit,
            self.unit_dev0 if unit_dev is None else np.asarray(unit_dev, np.int64), self.unit_persist,
            self.out_bytes, self.temp_bytes, self.capacity, np.asarray(prio, np.float64), np.asarray(noise, np.float64),
            np.ascontiguousarray(dev_noise, np.float64), select, device, memory_aware, fav, cap, static_mem, fifo)
        return dev, start, out_t, float(makespan)

    def predict(self, op_dev: np.ndarray) -> float:
        """This estimator's makespan of a finished placement: one ETF pass with every unit committed to its
        device, each device serving its ops in the order their inputs got there (FIFO, ties as the mode orders
        simultaneous events: ``policies/_listsched_kernels.py``, :func:`engine.sim._plankernels.tie`) and
        every output sent the moment it is ready — the order the simulator runs it in, not the order a
        scheduler decided it in (HEFT's ranks, m-TOPO's topological order)."""
        n = self.graph.num_ops
        unit_dev = np.full(self.units.num_units, -1, np.int64)
        unit_dev[self.units.op_unit] = op_dev
        sources_first = n if self.plan.tie != TIE_OP else 0  # placeto and work-conserving: sources first
        _, _, _, makespan = self.run(np.zeros(n), np.arange(n, dtype=np.float64) - sources_first * n,
                                     np.zeros((n, self.cluster.num_devices)), select=_k.SELECT_ETF,
                                     device=_k.DEVICE_EST, memory_aware=False, unit_dev=unit_dev, fifo=True)
        return makespan

    def deterministic_noise(self) -> tuple[np.ndarray, np.ndarray]:
        """Tie-breaks by lower op index, then lower device index."""
        n, nd = self.graph.num_ops, self.cluster.num_devices
        return np.arange(n, dtype=np.float64), np.tile(np.arange(nd, dtype=np.float64), (n, 1))

    def single_device(self) -> tuple[int, float] | None:
        """The fastest device that can run every op and this estimator's makespan of everything there (the sum
        of the hold times); None where no device runs them all."""
        every = np.flatnonzero(self.units.feasible.all(axis=0))
        if not len(every):
            return None
        d = int(every[np.argmin(self.dur[:, every].sum(axis=0))])
        return d, self.predict(np.full(self.graph.num_ops, d, np.int64))

    def placement(self, op_dev: np.ndarray, *, repair_memory: bool = False, guard: bool = True) -> Placement:
        """The op devices as a placement, its ``predicted_makespan_s`` this estimator's (:meth:`predict`).

        With ``repair_memory`` the simulator-checked memory post-pass (:func:`policies.base.relieve_memory`)
        first fixes what the schedule's own memory estimate missed (it tracks memory in scheduling order, not in
        simulated time). With ``guard`` (placelab's, declared in docs/reference/deviations.md): where the
        estimate of the fastest single device is lower and everything fits there, that device is returned
        instead — a remote placement the heuristic's own estimate says does not pay is not taken."""
        unit_dev = np.zeros(self.units.num_units, dtype=np.int64)
        unit_dev[self.units.op_unit] = op_dev
        if repair_memory:
            unit_dev = relieve_memory(self.graph, self.cluster, self.units, unit_dev)
        op_dev = unit_dev[self.units.op_unit]
        predicted = self.predict(op_dev)
        single = self.single_device() if guard else None
        if single is not None and single[1] < predicted and not (op_dev == single[0]).all():
            alone = self.units.to_placement(np.full(self.units.num_units, single[0]))
            if not Simulator(self.graph, self.cluster).run(alone).any_oom:
                note = (f"guard: everything on {self.cluster.devices[single[0]].name} ({single[1] * 1e3:.4g} ms by its "
                        f"own estimate; its schedule {predicted * 1e3:.4g} ms)")
                return replace(alone, predicted_makespan_s=single[1], note=note)
        return replace(self.units.to_placement(unit_dev), predicted_makespan_s=predicted)


# ---------------------------------------------------------------------------------------- placers


@placer("critical-path", "largest b-level first, earliest-start device, random ties; best of 50 runs "
          "(DOPPLER §6.1)", family="list scheduling")
class CriticalPath:
    """DOPPLER §6.1 baseline. ``budget`` (if given) replaces ``runs``."""


    def __init__(self, runs: int = 50, memory_aware: bool = True, guard: bool = True) -> None:
        self.runs = runs
        self.memory_aware = memory_aware
        self.guard = guard

    def place(self, graph: CompGraph, cluster: Cluster, *, seed: int = 0, budget: int | None = None,
              progress: Progress | None = None) -> Placement:
        ls = ListScheduling(graph, cluster)
        sim = Simulator(graph, cluster)
        rng = np.random.default_rng(seed)
        runs = max(1, int(budget if budget is not None else self.runs))
        n, nd = graph.num_ops, cluster.num_devices
        best, best_cost = None, np.inf
        for r in range(runs):
            dev = ls.run(ls.rank, rng.random(n), rng.random((n, nd)), select=_k.SELECT_PRIORITY,
                         device=_k.DEVICE_EST, memory_aware=self.memory_aware)[0]
            p = Placement(dev)
            cost = memory_penalized(*sim.makespan_and_peak(p), ls.capacity)
            if cost < best_cost:
                best, best_cost = p, cost
            if progress is not None:
                progress(r + 1, runs, f"best {best_cost:.6g} s")
        return ls.placement(best.devices, repair_memory=self.memory_aware, guard=self.guard)


class _OnePass:
    """One deterministic list-scheduling pass: an op priority, a selection rule and a device rule."""

    name: str
    priority: str  # attribute of ListScheduling holding the per-op priority
    select: int
    device: int

    def __init__(self, memory_aware: bool = True, guard: bool = True) -> None:
        self.memory_aware = memory_aware
        self.guard = guard

    def place(self, graph: CompGraph, cluster: Cluster, *, seed: int = 0, budget: int | None = None,
              progress: Progress | None = None) -> Placement:
        ls = ListScheduling(graph, cluster)
        noise, dev_noise = ls.deterministic_noise()
        dev = ls.run(getattr(ls, self.priority), noise, dev_noise, select=self.select, device=self.device,
                     memory_aware=self.memory_aware)[0]
        return ls.placement(dev, repair_memory=self.memory_aware, guard=self.guard)


@placer("heft", "HEFT: upward rank with mean costs, earliest finish time with insertion (Topcuoglu 2002)",
          family="list scheduling")
class Heft(_OnePass):
    priority = "rank"
    select = _k.SELECT_PRIORITY
    device = _k.DEVICE_EFT_INSERT


@placer("m-etf", "memory-aware earliest task first: the ready op and device that start soonest (Baechi)",
          family="list scheduling")
class MEtf(_OnePass):
    priority = "static_level"
    select = _k.SELECT_ETF
    device = _k.DEVICE_EST


@placer("m-topo", "memory-aware topological order: fill devices in turn up to a balanced memory share (Baechi)",
          family="list scheduling")
class MTopo:

    def __init__(self, slack: float = 0.05, memory_aware: bool = True, guard: bool = True) -> None:
        self.slack = slack
        self.memory_aware = memory_aware
        self.guard = guard

    def place(self, graph: CompGraph, cluster: Cluster, *, seed: int = 0, budget: int | None = None,
              progress: Progress | None = None) -> Placement:
        ls = ListScheduling(graph, cluster)
        n = graph.num_ops
        prio = np.empty(n)
        prio[graph.topo_order] = -np.arange(n, dtype=np.float64)  # the heap pops the topological order
        noise, dev_noise = ls.deterministic_noise()
        share = (1.0 + self.slack) * float((graph.persistent_bytes + graph.output_bytes).sum()) / cluster.num_devices
        fill_cap = np.minimum(ls.capacity, share)
        dev = ls.run(prio, noise, dev_noise, select=_k.SELECT_PRIORITY, device=_k.DEVICE_FILL,
                     memory_aware=self.memory_aware, fill_cap=fill_cap)[0]
        return ls.placement(dev, repair_memory=self.memory_aware, guard=self.guard)


@placer("m-sct", "memory-aware smallest communication time: LP favourite children (HiGHS) + ETF (Baechi)",
          family="list scheduling")
class MSct:

    def __init__(self, memory_aware: bool = True, lp_time_limit_s: float = 5.0, guard: bool = True) -> None:
        self.memory_aware = memory_aware
        self.lp_time_limit_s = lp_time_limit_s
        self.guard = guard

    def place(self, graph: CompGraph, cluster: Cluster, *, seed: int = 0, budget: int | None = None,
              progress: Progress | None = None) -> Placement:
        ls = ListScheduling(graph, cluster)
        child = favourite_children(graph, ls.mean_compute, ls.edge_comm, time_limit_s=self.lp_time_limit_s)
        fav_parent = np.full(graph.num_ops, -1, np.int64)
        has = child >= 0
        fav_parent[child[has]] = np.flatnonzero(has)
        noise, dev_noise = ls.deterministic_noise()
        dev = ls.run(ls.static_level, noise, dev_noise, select=_k.SELECT_ETF, device=_k.DEVICE_EST,
                     memory_aware=self.memory_aware, fav_parent=fav_parent)[0]
        return ls.placement(dev, repair_memory=self.memory_aware, guard=self.guard)


def favourite_children(graph: CompGraph, p: np.ndarray, c: np.ndarray, *, time_limit_s: float = 5.0) -> np.ndarray:
    """Favourite child of every op (-1 = none) from Hanen & Munier's LP relaxation (see module doc).

    ``p`` (s) is the per-op compute, ``c`` (s) the per-edge communication estimate.
    """
    import highspy

    n, m = graph.num_ops, graph.num_edges
    if m == 0:
        return np.full(n, -1, np.int64)
    src, dst = graph.edge_src, graph.edge_dst
    scale = float(max(p.mean(), 1e-30))  # O(1) numbers for the solver's absolute tolerances
    ps, cs = p / scale, c / scale
    w = n + m
    # rows: edges, makespan, out-sums (outdeg >= 2), in-sums (indeg >= 2)
    e = np.arange(m)
    rows = [np.repeat(e, 3)]
    cols = [np.column_stack([src, dst, n + e]).ravel()]
    vals = [np.column_stack([np.ones(m), -np.ones(m), cs]).ravel()]
    lower = [np.full(m, -np.inf)]
    upper = [-ps[src]]
    r0 = m
    rows.append(np.repeat(r0 + np.arange(n), 2))
    cols.append(np.column_stack([np.arange(n), np.full(n, w)]).ravel())
    vals.append(np.tile([1.0, -1.0], n))
    lower.append(np.full(n, -np.inf))
    upper.append(-ps)
    r0 += n
    for key, deg in ((src, np.diff(graph.succ.ptr)), (dst, np.diff(graph.pred.ptr))):
        ops = np.flatnonzero(deg >= 2)
        row_of = np.full(n, -1)
        row_of[ops] = r0 + np.arange(len(ops))
        sel = deg[key] >= 2
        rows.append(row_of[key[sel]])
        cols.append(n + e[sel])
        vals.append(np.ones(int(sel.sum())))
        lower.append((deg[ops] - 1).astype(np.float64))
        upper.append(np.full(len(ops), np.inf))
        r0 += len(ops)
    rows_a, cols_a, vals_a = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    order = np.lexsort((cols_a, rows_a))
    rows_a, cols_a, vals_a = rows_a[order], cols_a[order], vals_a[order]
    lp = highspy.HighsLp()
    lp.num_col_ = n + m + 1
    lp.num_row_ = r0
    lp.col_cost_ = np.r_[np.zeros(n + m), 1.0]
    lp.col_lower_ = np.zeros(n + m + 1)
    lp.col_upper_ = np.r_[np.full(n, np.inf), np.ones(m), np.inf]
    lp.row_lower_ = np.concatenate(lower)
    lp.row_upper_ = np.concatenate(upper)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.start_ = np.r_[0, np.cumsum(np.bincount(rows_a, minlength=r0))].astype(np.int32)
    lp.a_matrix_.index_ = cols_a.astype(np.int32)
    lp.a_matrix_.value_ = vals_a
    h = _quiet_highs()
    h.setOptionValue("time_limit", float(time_limit_s))
    h.passModel(lp)
    h.run()
    child = np.full(n, -1, np.int64)
    if h.getModelStatus() == highspy.HighsModelStatus.kOptimal:
        x = np.asarray(h.getSolution().col_value)[n:n + m]
        fav = np.flatnonzero(x < 0.5)
        child[src[fav]] = dst[fav]
        return child
    return _greedy_favourite_children(graph, c)


def _quiet_highs():
    """A HiGHS solver that prints nothing.

    HiGHS writes its banner ("Running HiGHS 1.16.0 ...") from C++ straight to the process's stdout when the
    first solver is made, before any option can turn output off: ``placelab compare --json`` printed it
    before its JSON object. The solver is made with file descriptor 1 pointed at /dev/null (C's buffers
    flushed before it is restored); ``output_flag`` keeps the solve itself quiet.
    """
    import highspy

    sys.stdout.flush()  # Python's own pending output goes to the real stdout first
    try:
        saved = os.dup(1)
    except OSError:  # no stdout to protect
        h = highspy.Highs()
    else:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, 1)
            h = highspy.Highs()
            ctypes.CDLL(None).fflush(None)  # the banner, if C buffered it, goes to /dev/null too
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            os.close(devnull)
    h.setOptionValue("output_flag", False)
    return h


def _greedy_favourite_children(graph: CompGraph, c: np.ndarray) -> np.ndarray:
    child = np.full(graph.num_ops, -1, np.int64)
    taken = np.zeros(graph.num_ops, dtype=bool)
    for i in graph.topo_order.tolist():
        lo, hi = graph.succ.ptr[i], graph.succ.ptr[i + 1]
        best, best_c = -1, -1.0
        for k in range(lo, hi):
            j = int(graph.succ.idx[k])
            if not taken[j] and c[graph.succ.edge[k]] > best_c:
                best, best_c = j, float(c[graph.succ.edge[k]])
        if best >= 0:
            child[i] = best
            taken[best] = True
    return child
