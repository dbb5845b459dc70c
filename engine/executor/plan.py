"""What each worker runs, and how its measurements become a :class:`~engine.sim.schedule.Schedule`.

Pure numpy/Python (no torch): the parent process builds one :class:`WorkerPlan` per device
from a placed graph, ships it to the worker, and assembles the workers' timestamps into the
same ``Schedule`` type the simulator returns.

Transfers follow the ``default`` simulation mode (CONTRACTS §4): one transfer per
(producer, destination device), carrying the largest ``bytes`` among the producer's edges
to consumers there; consumers on the producer's own device get the output at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.cluster import Cluster
from engine.errors import SpecError, quote
from engine.graph.compgraph import CompGraph
from engine.sim.schedule import Schedule

__all__ = ["WorkerPlan", "build_plans", "measured_schedule", "scale_graph"]


@dataclass(frozen=True)
class WorkerPlan:
    """The ops of one device, in op order, and where their outputs go.

    ``ops[k]`` is the global op index of local op ``k``; ``durations[k]`` its compute time
    (s); ``num_inputs[k]`` the number of distinct producers it waits for; ``local_succ[k]``
    the local positions of its consumers on this device; ``sends[k]`` a list of
    ``(destination device, bytes)`` copies it makes when it ends; ``remote_consumers`` maps
    a producer's global index on another device to the local positions it feeds.
    ``slabs`` maps a destination device to the shared-memory block name copies go into.
    """

    device: int
    ops: list[int]
    durations: list[float]
    num_inputs: list[int]
    local_succ: list[list[int]]
    sends: list[list[tuple[int, int]]]
    remote_consumers: dict[int, list[int]]
    slabs: dict[int, str]


def scale_graph(graph: CompGraph, time_scale: float = 1.0, bytes_scale: float | None = None, *,
                kind: str | None = None) -> CompGraph:
    """``graph`` made executable here: one compute time per op, × ``time_scale``; sizes × ``bytes_scale``.

    The executor's devices are this machine's cores, whatever kind a graph was profiled
    on, so every op gets one compute time valid on every kind: its time on ``kind``, or
    by default its time on its fastest kind (a graph profiled for GPUs runs its GPU times).
    ``bytes_scale`` defaults to ``time_scale`` so that transfer time keeps its ratio to
    compute time on a link of the same bandwidth; memory sizes (persistent, temp, outputs)
    scale with the bytes. The name records the scales so runs of a scaled graph say so.
    """
    bs = time_scale if bytes_scale is None else bytes_scale
    for what, v in (("time_scale", time_scale), ("bytes_scale", bs)):
        if not np.isfinite(v) or v <= 0:
            raise SpecError(f"{what} must be a finite number > 0, got {quote(v)}")
    compute = graph.min_compute() if kind is None else graph.compute_for_kind(kind)
    if np.isnan(compute).any():
        i = int(np.argmax(np.isnan(compute)))
        raise SpecError(f"op {quote(graph.op_names[i])} has no compute time for kind {quote(kind)}")
    suffix = "" if time_scale == 1.0 and bs == 1.0 else f"@t{time_scale:g}" + (f",b{bs:g}" if bs != time_scale else "")
    return CompGraph(
        graph.name + suffix, graph.op_names, compute_any=compute * time_scale,
        output_bytes=graph.output_bytes * bs, persistent_bytes=graph.persistent_bytes * bs,
        temp_bytes=graph.temp_bytes * bs, edge_src=graph.edge_src, edge_dst=graph.edge_dst,
        edge_bytes=graph.edge_bytes * bs, op_types=graph.op_types, colocate=graph.colocate, pin=graph.pin,
        phase=graph.phase, scope=graph.scope)


def transfer_table(graph: CompGraph, devices: np.ndarray) -> dict[tuple[int, int], int]:
    """``(producer op, destination device) -> bytes`` of every transfer a placement needs."""
    out: dict[tuple[int, int], int] = {}
    src, dst, nbytes = graph.edge_src, graph.edge_dst, graph.edge_bytes
    for e in np.flatnonzero(devices[src] != devices[dst]).tolist():
        key = (int(src[e]), int(devices[dst[e]]))
        out[key] = max(out.get(key, 0), round(nbytes[e]))
    return out


def build_plans(graph: CompGraph, cluster: Cluster, devices: np.ndarray, durations: np.ndarray,
                slabs: dict[tuple[int, int], str]) -> list[WorkerPlan]:
    """One :class:`WorkerPlan` per cluster device for a validated placement."""
    devices = np.asarray(devices, dtype=np.int64)
    transfers = transfer_table(graph, devices)
    plans = []
    for d in range(cluster.num_devices):
        ops = np.flatnonzero(devices == d).tolist()
        pos = {op: k for k, op in enumerate(ops)}
        num_inputs, local_succ, sends = [], [], []
        remote: dict[int, list[int]] = {}
        for op in ops:
            preds = set(graph.predecessors(op).tolist())
            num_inputs.append(len(preds))
            for p in sorted(preds):
                if devices[p] != d:
                    remote.setdefault(p, []).append(pos[op])
            succ = dict.fromkeys(graph.successors(op).tolist())  # graph order, no duplicates
            local_succ.append([pos[s] for s in succ if devices[s] == d])
            dsts = dict.fromkeys(int(devices[s]) for s in succ if devices[s] != d)
            sends.append([(t, transfers[(op, t)]) for t in dsts])
        plans.append(WorkerPlan(d, ops, [float(durations[o]) for o in ops], num_inputs, local_succ, sends,
                                remote, {t: slabs[(d, t)] for (s, t) in slabs if s == d}))
    return plans


def measured_schedule(graph: CompGraph, cluster: Cluster, devices: np.ndarray, plans: list[WorkerPlan],
                      records: list[dict[str, np.ndarray]], t0_ns: int) -> Schedule:
    """Assemble workers' timestamps (ns on the shared monotonic clock) into a Schedule.

    Times are seconds from ``t0_ns``, the moment all workers were released. A transfer's
    end is the moment its copy finished (the data is in the destination's memory).
    Memory is not allocated by the executor; the peaks reported are the CONTRACTS §4 memory
    rules evaluated on the *measured* intervals.
    """
    n, nd = graph.num_ops, cluster.num_devices
    start, end = np.zeros(n), np.zeros(n)
    t_op, t_src, t_dst, t_bytes, t_start, t_end = [], [], [], [], [], []
    for plan, rec in zip(plans, records, strict=True):
        idx = np.asarray(plan.ops, dtype=np.int64)
        start[idx] = (rec["op_ns"][:, 0] - t0_ns) / 1e9
        end[idx] = (rec["op_ns"][:, 1] - t0_ns) / 1e9
        tr = rec["transfers"]
        if len(tr):
            t_op.append(tr[:, 0])
            t_src.append(np.full(len(tr), plan.device))
            t_dst.append(tr[:, 1])
            t_bytes.append(tr[:, 2].astype(np.float64))
            t_start.append((tr[:, 3] - t0_ns) / 1e9)
            t_end.append((tr[:, 4] - t0_ns) / 1e9)

    def cat(parts, dtype):
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)

    tr_op, tr_src, tr_dst = cat(t_op, np.int64), cat(t_src, np.int64), cat(t_dst, np.int64)
    tr_bytes, tr_start, tr_end = cat(t_bytes, np.float64), cat(t_start, np.float64), cat(t_end, np.float64)
    order = np.lexsort((tr_dst, tr_op, tr_start))
    tr_op, tr_src, tr_dst, tr_bytes, tr_start, tr_end = (a[order] for a in (tr_op, tr_src, tr_dst, tr_bytes,
                                                                             tr_start, tr_end))
    makespan = float(max(end.max(initial=0.0), tr_end.max(initial=0.0)))
    compute = np.bincount(devices, weights=end - start, minlength=nd)
    memcpy = np.bincount(tr_src, weights=tr_end - tr_start, minlength=nd)
    persistent = np.bincount(devices, weights=graph.persistent_bytes, minlength=nd)
    peak = _peak_memory(graph, devices, start, end, tr_op, tr_dst, tr_bytes, tr_end, persistent)
    return Schedule(makespan=makespan, op_device=devices.copy(), op_start=start, op_end=end,
                    transfer_op=tr_op, transfer_src=tr_src, transfer_dst=tr_dst, transfer_bytes=tr_bytes,
                    transfer_start=tr_start, transfer_end=tr_end, compute_time=compute, memcpy_time=memcpy,
                    peak_memory=peak, memory_capacity=cluster.memory.copy(), persistent_memory=persistent,
                    transfer_primary=np.ones(len(tr_op), dtype=bool), mode="measured")


def _peak_memory(graph: CompGraph, devices: np.ndarray, start: np.ndarray, end: np.ndarray,
                 tr_op: np.ndarray, tr_dst: np.ndarray, tr_bytes: np.ndarray, tr_end: np.ndarray,
                 persistent: np.ndarray) -> np.ndarray:
    """Peak bytes per device under the CONTRACTS §4 memory rules, on measured intervals."""
    events: list[tuple[float, int, int, float]] = []  # (time, order: frees first, device, delta)

    def hold(dev: int, t0: float, t1: float, nbytes: float) -> None:
        if nbytes > 0:
            events.append((t0, 1, dev, nbytes))
            events.append((t1, 0, dev, -nbytes))

    last_use: dict[tuple[int, int], float] = {}  # (producer, device) -> last consumer end there
    for e in range(graph.num_edges):
        s, t = int(graph.edge_src[e]), int(graph.edge_dst[e])
        key = (s, int(devices[t]))
        last_use[key] = max(last_use.get(key, 0.0), float(end[t]))
    for op in range(graph.num_ops):
        d = int(devices[op])
        hold(d, start[op], end[op], graph.temp_bytes[op])
        hold(d, start[op], max(end[op], last_use.get((op, d), end[op])), graph.output_bytes[op])
    for op, dst, nbytes, arrive in zip(tr_op.tolist(), tr_dst.tolist(), tr_bytes.tolist(), tr_end.tolist(),
                                       strict=True):
        hold(dst, arrive, max(arrive, last_use.get((op, dst), arrive)), nbytes)
    level = persistent.astype(np.float64).copy()
    peak = level.copy()
    for _, _, dev, delta in sorted(events):
        level[dev] += delta
        peak[dev] = max(peak[dev], level[dev])
    return peak
