"""A slow, plain reference simulator used to check :mod:`engine.sim.simulator` and to measure it.

It is written the way Placeto's published simulator is (App. A.5: Python dicts, one heap
event per edge dependency, per-device FIFO queues of ``((time, counter), item)``, event
ties broken by the event-type name — ``remove_dependency`` < ``run_bus`` < ``run_dev`` — and
then by names), so it runs at the published simulator's speed and follows its order of
events, but it shares no code with the compiled kernel. Memory is computed independently
of the kernel too: from the finished intervals with a sorted sweep (CONTRACTS §4 rules).

Memory at equal times: buffers released at time t (by an op that ran for a positive time
and ended at t, or by a transfer landing at t) are freed before anything is allocated at t;
allocations at t (copies landing, ops starting) then happen in the order the simulation
processed them. An op that takes no time still allocates its temp bytes and output at its
start and releases what it frees right after, before the next allocation: a zero-time
op's buffers count towards the peak for that instant.

Not for production use: it is ~50x slower than :class:`engine.sim.simulator.Simulator`.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from engine.cluster import Cluster
from engine.graph.compgraph import CompGraph
from engine.placement import Constraints

__all__ = ["ReferenceResult", "reference_simulate"]


@dataclass
class ReferenceResult:
    makespan: float
    start: dict[int, float]
    end: dict[int, float]
    transfers: list[tuple[int, int, int, float, float, float]]  # op, src, dst, bytes, start, arrival
    peak: list[float]


def reference_simulate(graph: CompGraph, cluster: Cluster, devices, mode: str | None = None) -> ReferenceResult:
    """Simulate with per-edge events; see the module docstring."""
    mode = mode or cluster.simulation.mode
    placeto = mode == "placeto"
    dev = [int(x) for x in devices]
    dur = Constraints(graph, cluster).check(np.asarray(dev)).tolist()
    n = graph.num_ops
    children: dict[int, list[int]] = defaultdict(list)
    parents: dict[int, set[int]] = defaultdict(set)
    ebytes: dict[tuple[int, int], float] = {}
    etime: dict[tuple[int, int], float] = {}  # given transfer times only
    for s, d, b, tt in zip(graph.edge_src.tolist(), graph.edge_dst.tolist(), graph.edge_bytes.tolist(),
                           graph.edge_transfer_s.tolist(), strict=True):
        children[s].append(d)
        parents[d].add(s)
        ebytes[(s, d)] = b
        if tt == tt:
            etime[(s, d)] = tt
    out = graph.output_bytes.tolist()
    sim = cluster.simulation
    delta1, delta2 = sim.op_overhead_s, sim.transfer_gap_s
    bw = cluster.bandwidth
    lat = cluster.latency
    bw0 = cluster.link.bandwidth_bytes_per_s

    events: list = []
    counter = 0
    dev_queue: dict[str, list] = defaultdict(list)
    busy: dict[str, bool] = defaultdict(bool)
    waiting = {c: set(ps) for c, ps in parents.items()}
    start: dict[int, float] = {}
    end: dict[int, float] = {}
    transfers: list[tuple[int, int, int, float, float, float]] = []

    def enqueue(t: float, kind: str, queue: str, prio: tuple, item) -> None:
        nonlocal counter
        counter += 1
        heapq.heappush(dev_queue[queue], (prio, counter, item))
        if not busy[queue]:
            busy[queue] = True
            heapq.heappush(events, (t, kind, queue))

    def make_ready(t: float, child: int) -> None:
        prio = (t, 0) if placeto else (t, child)
        enqueue(t, "run_dev", f"dev{dev[child]:04d}", prio, child)

    for i in range(n):
        if not parents.get(i):
            make_ready(0.0, i)

    makespan = 0.0
    seq = 0  # events processed so far: orders the allocations made at one instant
    start_seq: dict[int, int] = {}
    arrival_seq: dict[tuple[int, int], int] = {}  # (producer, destination device) -> seq
    while events:
        t, kind, what = heapq.heappop(events)
        makespan = max(makespan, t)
        seq += 1
        if kind == "remove_dependency":
            parent, child = what
            if dev[parent] != dev[child]:
                arrival_seq.setdefault((parent, dev[child]), seq)
            waiting[child].discard(parent)
            if not waiting[child]:
                make_ready(t, child)
            continue
        queue = dev_queue[what]
        if not queue:
            busy[what] = False
            continue
        if kind == "run_dev":
            _, _, op = heapq.heappop(queue)
            d = dev[op]
            start[op], end[op] = t, t + dur[op]
            start_seq[op] = seq
            heapq.heappush(events, (end[op] + (delta1 if dur[op] > 0 else 0.0), "run_dev", what))
            remote: dict[int, list[int]] = defaultdict(list)
            for c in children[op]:
                if dev[c] == d:
                    heapq.heappush(events, (end[op], "remove_dependency", (op, c)))
                else:
                    remote[dev[c]].append(c)
            if remote and placeto:
                kids = [c for dd in sorted(remote) for c in remote[dd]]
                enqueue(end[op], "run_bus", f"bus{d:04d}", (end[op], 0), (op, out[op], sorted(kids), -1))
            elif remote:
                for dd in sorted(remote):
                    size = max(ebytes[(op, c)] for c in remote[dd])
                    enqueue(end[op], "run_bus", f"bus{d:04d}", (end[op], 0), (op, size, remote[dd], dd))
        else:  # run_bus
            prio, _, item = queue[0]
            if prio[0] > t:
                heapq.heappush(events, (prio[0], "run_bus", what))
                continue
            heapq.heappop(queue)
            op, size, kids, dst = item
            src = dev[op]
            given = [etime[(op, c)] for c in kids if (op, c) in etime]
            untimed = [ebytes[(op, c)] for c in kids if (op, c) not in etime]
            if placeto:  # one transfer: the slowest of its edges, untimed ones at out / bw0
                xfer = max(given + ([size / bw0] if untimed else []))
                arrive = t + xfer
                for dd in sorted({dev[c] for c in kids}):
                    transfers.append((op, src, dd, size, t, arrive))
            else:  # held for the slowest edge's time; latency (untimed edges only) is pipelined
                by_bytes = max(untimed) / bw[src, dst] if untimed else 0.0
                xfer = max([*given, by_bytes])
                arrive = t + max(given + ([lat[src, dst] + by_bytes] if untimed else []))
                transfers.append((op, src, dst, size, t, arrive))
            for c in kids:
                heapq.heappush(events, (arrive, "remove_dependency", (op, c)))
            heapq.heappush(events, (t + xfer + delta2, "run_bus", what))
    peak = _peak_memory(graph, cluster, dev, start, end, transfers, children, start_seq, arrival_seq)
    return ReferenceResult(makespan, start, end, transfers, peak)


def _peak_memory(graph, cluster, dev, start, end, transfers, children, start_seq, arrival_seq) -> list[float]:
    """Peak bytes per device from the finished schedule: a sweep over allocations and frees.

    Every point is keyed ``(time, phase, order)``: frees at a time when an op of positive
    duration ends or a transfer lands have phase 0 (before any allocation then);
    allocations have phase 1 and the simulation's processing order; what a zero-time op
    releases is freed right after its own allocations (order + 0.5).
    """
    D = cluster.num_devices
    base = [0.0] * D
    for i in range(graph.num_ops):
        base[dev[i]] += float(graph.persistent_bytes[i])

    def end_key(op: int) -> tuple:
        return (end[op], 0, 0.0) if end[op] > start[op] else (start[op], 1, start_seq[op] + 0.5)

    points: list[list[tuple[tuple, float]]] = [[] for _ in range(D)]

    def interval(d: int, alloc: tuple, free: tuple, size: float) -> None:
        if size > 0:
            points[d].append((alloc, size))
            points[d].append((free, -size))

    last_arrival: dict[int, tuple] = {}
    for op, _s, _d, _b, _t, arrive in transfers:
        last_arrival[op] = max((arrive, 0, 0.0), last_arrival.get(op, (0.0, 0, 0.0)))
    for i in range(graph.num_ops):
        d = dev[i]
        begin = (start[i], 1, float(start_seq[i]))
        interval(d, begin, end_key(i), float(graph.temp_bytes[i]))
        release = max([end_key(i)] + ([last_arrival[i]] if i in last_arrival else [])
                      + [end_key(c) for c in children[i] if dev[c] == d])
        interval(d, begin, release, float(graph.output_bytes[i]))
    for op, _src, dst, size, _t, arrive in transfers:
        last = max(end_key(c) for c in children[op] if dev[c] == dst)
        interval(dst, (arrive, 1, float(arrival_seq[(op, dst)])), last, size)
    peak = list(base)
    for d in range(D):
        cur = base[d]
        for _key, delta in sorted(points[d], key=lambda x: x[0]):
            cur += delta
            peak[d] = max(peak[d], cur)
    return peak
