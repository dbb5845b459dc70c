"""A slow, plain reference of the ``work_conserving`` mode, to check and measure the kernel.

It follows the semantics in ``docs/reference/simulation.md`` (DOPPLER §2, Algorithms 1–2) the obvious
way — Python objects, ``heapq`` of ``(time, creation number, event)``, a ``deque`` per device
and per channel, a linear search for the op a device serves next — and shares no code
with :mod:`engine._simkernel_wc`. Durations (noise included) come from the caller, so both
see the same numbers: :func:`engine.simulator.wc_durations` draws them.

Not for production use: it is two orders of magnitude slower than the kernel.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, field

from engine.cluster import Cluster
from engine.graph import CompGraph

__all__ = ["WCReferenceResult", "reference_simulate_wc"]


@dataclass
class WCReferenceResult:
    makespan: float
    start: list[float]
    end: list[float]
    transfers: list[tuple[int, int, int, float, float, float]]  # op, src, dst, bytes, start, arrival
    peak: list[float]
    stalled: list[bool] = field(default_factory=list)


def reference_simulate_wc(graph: CompGraph, cluster: Cluster, devices, durations, edge_noise=None, *,
                          priority=None, contention: str = "none", memory_aware: bool = False,
                          op_overhead_s: float = 0.0, copy_occupies_sender: bool = False,
                          copy_bus_shared: bool = False, copy_bus_capacity: float = 1.0) -> WCReferenceResult:
    """Work-conserving execution of one placement.

    ``durations`` are the ops' times on their devices (noise included); ``edge_noise``
    multiplies each edge's transfer time; ``priority`` (one number per op, higher first)
    replaces FIFO service at the devices. ``op_overhead_s`` keeps a device busy after each
    op with non-zero time; with ``copy_occupies_sender`` the copies of an op's output run on
    its device right after it, one per destination device, before the overhead; the device is
    busy for a copy's bytes / bandwidth (or given time), and the copy lands the link's latency
    after that; with ``copy_bus_shared`` the copies in progress on all devices share one bus
    (``k`` at once, more than ``copy_bus_capacity``, each move at ``copy_bus_capacity / k``).
    """
    n, m, D = graph.num_ops, graph.num_edges, cluster.num_devices
    dev = [int(x) for x in devices]
    dur = [float(x) for x in durations]
    noise = [1.0] * m if edge_noise is None else [float(x) for x in edge_noise]
    src, dst = graph.edge_src.tolist(), graph.edge_dst.tolist()
    ebytes, given = graph.edge_bytes.tolist(), graph.edge_transfer_s.tolist()
    out_b, temp = graph.output_bytes.tolist(), graph.temp_bytes.tolist()
    cap = cluster.memory.tolist()
    outs: list[list[int]] = [[] for _ in range(n)]
    for e in sorted(range(m), key=lambda e: graph.edge_rank[e]):  # the source's edge order
        outs[src[e]].append(e)
    ins: list[list[int]] = [[] for _ in range(n)]
    for e in range(m):  # ordered by producer, as the kernel frees them (order does not matter)
        ins[dst[e]].append(e)

    mem = [0.0] * D
    for i in range(n):
        mem[dev[i]] += float(graph.persistent_bytes[i])
    peak = list(mem)

    def alloc(d: int, b: float) -> None:
        if b > 0:
            mem[d] += b
            peak[d] = max(peak[d], mem[d])

    def free(d: int, b: float) -> None:
        if b > 0:
            mem[d] -= b

    events: list = []
    created = 0

    def push(t: float, what: tuple) -> None:
        nonlocal created
        heapq.heappush(events, (t, created, what))
        created += 1

    waiting_inputs = [len(ins[i]) for i in range(n)]
    holders = [1 + len(outs[i]) for i in range(n)]
    queue: list[list[tuple[int, int]]] = [[] for _ in range(D)]  # (request number, op) in request order
    running = [None] * D
    start = [math.nan] * n
    end = [math.nan] * n
    transfers: list[list] = []
    copy_bytes: dict[int, float] = {}
    channels: dict[int, deque] = {}
    channel_busy: dict[int, bool] = {}

    def serve(t: float, d: int) -> None:
        if running[d] is not None or not queue[d]:
            return
        candidates = queue[d]
        if memory_aware:
            candidates = [rq for rq in candidates if mem[d] + temp[rq[1]] + out_b[rq[1]] <= cap[d]]
            if not candidates:
                return
        by_priority = (lambda rq: (-priority[rq[1]], rq[0])) if priority is not None else None
        chosen = candidates[0] if by_priority is None else min(candidates, key=by_priority)
        queue[d].remove(chosen)
        c = chosen[1]
        running[d] = c
        start[c], end[c] = t, t + dur[c]
        alloc(d, temp[c])
        alloc(d, out_b[c])
        push(end[c], ("end", c))

    def request(t: float, c: int, now: bool = True) -> None:
        nonlocal created
        queue[dev[c]].append((created, c))
        created += 1
        if now:
            serve(t, dev[c])

    def let_go(p: int) -> None:
        holders[p] -= 1
        if holders[p] == 0:
            free(dev[p], out_b[p])

    def edge_time(e: int, a: int, b: int) -> float:
        """A transfer's time; with copies on the sender, the sender's part: the latency is in flight."""
        if not math.isnan(given[e]):
            return given[e] * noise[e]
        wire = ebytes[e] / cluster.bandwidth[a, b]
        return (wire if copy_occupies_sender else cluster.latency[a, b] + wire) * noise[e]

    # copies on the sender: each device copies its queue one at a time; the copies in progress
    # on all devices share one bus with copy_bus_shared (k of them each move at 1 / k)
    to_copy: list[deque] = [deque() for _ in range(D)]
    copying: dict[int, list] = {}  # device -> [transfer, its time left at full speed, since, end]
    after = [0.0] * D  # the overhead a device owes after its copies
    row_of_edge: dict[int, int] = {}

    def bus_rate() -> float:
        k = len(copying)
        return copy_bus_capacity / k if copy_bus_shared and k > copy_bus_capacity else 1.0

    def bus_settle(t: float) -> None:
        rate = bus_rate()
        for c in copying.values():
            c[1] = max(c[1] - (t - c[2]) * rate, 0.0)
            c[2] = t

    def start_copy(t: float, d: int) -> None:
        k = to_copy[d].popleft()
        copying[d] = [k, transfers[k][6], t, -1.0]
        transfers[k][4] = t

    def bus_ends(t: float) -> None:
        rate = bus_rate()
        for d in sorted(copying):
            c = copying[d]
            end = t + c[1] / rate
            if end != c[3]:
                c[3] = end
                push(end, ("copied", c[0]))

    def begin_transfer(t: float, k: int) -> None:
        transfers[k][4] = t
        transfers[k][5] = t + transfers[k][6]
        push(transfers[k][5], ("land", k))

    for i in range(n):
        if waiting_inputs[i] == 0:
            request(0.0, i)
    makespan = 0.0
    while events:
        t, _, (kind, x) = heapq.heappop(events)
        if kind == "end":
            d = dev[x]
            makespan = max(makespan, t)
            running[d] = None
            free(d, temp[x])
            let_go(x)
            for e in ins[x]:
                if dev[src[e]] == d:
                    let_go(src[e])
                else:
                    free(d, copy_bytes[e])
            copy_of: dict[int, int] = {}  # destination device -> the transfer that copies x there
            for e in outs[x]:
                dd = dev[dst[e]]
                if dd == d:  # at once; the device picks after all of them have asked
                    waiting_inputs[dst[e]] -= 1
                    if waiting_inputs[dst[e]] == 0:
                        request(t, dst[e], now=False)
                    continue
                transfers.append([x, d, dd, ebytes[e], 0.0, 0.0, edge_time(e, d, dd), e])
                copy_bytes[e] = ebytes[e]
                k = len(transfers) - 1
                row_of_edge[e] = k
                if copy_occupies_sender:  # the row is the sender's copy; it lands the latency later
                    if dd in copy_of:  # already copied there: lands with that copy, takes no time
                        transfers[k][6] = 0.0
                        continue
                    copy_of[dd] = k
                    transfers[k][6] = max(edge_time(e2, d, dd) for e2 in outs[x] if dev[dst[e2]] == dd)
                    to_copy[d].append(k)
                    continue
                if contention == "none":
                    begin_transfer(t, k)
                    continue
                chan = d if contention == "per_device" else d * D + dd
                if channel_busy.get(chan):
                    channels.setdefault(chan, deque()).append(k)
                else:
                    channel_busy[chan] = True
                    begin_transfer(t, k)
            if to_copy[d]:  # the copies first, then the overhead
                running[d] = "busy"
                after[d] = op_overhead_s if dur[x] > 0 else 0.0
                bus_settle(t)
                start_copy(t, d)
                bus_ends(t)
                continue
            if dur[x] > 0 and op_overhead_s > 0:
                running[d] = "busy"
                push(t + op_overhead_s, ("free", d))
                continue
            serve(t, d)
            continue
        if kind == "free":
            running[x] = None
            serve(t, x)
            continue
        if kind == "copied":
            producer, s, dd, _size, _t0, _t1, _time, e = transfers[x]
            if s not in copying or copying[s][0] != x or copying[s][3] != t:
                continue  # its end has moved since this event was made
            bus_settle(t)
            del copying[s]
            transfers[x][5] = t
            land = t + cluster.latency[s, dd]
            push(land, ("land", x))
            for e2 in outs[producer]:  # the producer's further edges to dd land with this copy
                if e2 != e and dev[dst[e2]] == dd:
                    transfers[row_of_edge[e2]][4:6] = [land, land]
                    push(land, ("land", row_of_edge[e2]))
            more = bool(to_copy[s])
            if more:
                start_copy(t, s)
            bus_ends(t)
            if more:
                continue
            if after[s] > 0:
                push(t + after[s], ("free", s))
                continue
            running[s] = None
            serve(t, s)
            continue
        producer, s, dd, size, _t0, _t1, _time, e = transfers[x]  # a transfer lands
        if contention != "none" and not copy_occupies_sender:
            chan = s if contention == "per_device" else s * D + dd
            if channels.get(chan):
                begin_transfer(t, channels[chan].popleft())
            else:
                channel_busy[chan] = False
        alloc(dd, size)
        let_go(producer)
        if memory_aware:
            serve(t, s)
        consumer = dst[e]
        waiting_inputs[consumer] -= 1
        if waiting_inputs[consumer] == 0:
            request(t, consumer)
    stalled = [bool(queue[d]) for d in range(D)]
    rows = [(r[0], r[1], r[2], r[3], r[4], r[5]) for r in transfers]
    return WCReferenceResult(makespan, start, end, rows, peak, stalled)
