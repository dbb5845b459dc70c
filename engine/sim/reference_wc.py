"""A slow, plain reference of the ``work_conserving`` mode, to check and measure the kernel.

It follows the semantics in ``docs/reference/simulation.md`` (DOPPLER §2, Algorithms 1–2) the obvious
way — Python objects, ``heapq`` of ``(time, creation number, event)``, a ``deque`` per device
and per channel, a linear search for the op a device serves next — and shares no code
with :mod:`engine.sim._kernel_wc`. Durations (noise included) come from the caller, so both
see the same numbers: :func:`engine.sim.simulator.wc_durations` draws them. One execution is a
:class:`_Execution`: its state, and one method per event kind (``end``, ``free``, ``copied``,
``land``) called by :meth:`_Execution.run`, as SimPy's ``step()`` does.

Not for production use: it is two orders of magnitude slower than the kernel.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, field

from engine.cluster import Cluster
from engine.graph.compgraph import CompGraph

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
    return _Execution(graph, cluster, devices, durations, edge_noise, priority=priority, contention=contention,
                      memory_aware=memory_aware, op_overhead_s=op_overhead_s,
                      copy_occupies_sender=copy_occupies_sender, copy_bus_shared=copy_bus_shared,
                      copy_bus_capacity=copy_bus_capacity).run()


class _Execution:
    """One work-conserving execution: the state of ops, devices, channels, copies and memory."""

    def __init__(self, graph: CompGraph, cluster: Cluster, devices, durations, edge_noise, *, priority,
                 contention: str, memory_aware: bool, op_overhead_s: float, copy_occupies_sender: bool,
                 copy_bus_shared: bool, copy_bus_capacity: float) -> None:
        n, m, D = graph.num_ops, graph.num_edges, cluster.num_devices
        self.cluster, self.D = cluster, D
        self.priority, self.contention, self.memory_aware = priority, contention, memory_aware
        self.overhead, self.copy_occupies_sender = op_overhead_s, copy_occupies_sender
        self.copy_bus_shared, self.copy_bus_capacity = copy_bus_shared, copy_bus_capacity
        self.dev = [int(x) for x in devices]
        self.dur = [float(x) for x in durations]
        self.noise = [1.0] * m if edge_noise is None else [float(x) for x in edge_noise]
        self.src, self.dst = graph.edge_src.tolist(), graph.edge_dst.tolist()
        self.ebytes, self.given = graph.edge_bytes.tolist(), graph.edge_transfer_s.tolist()
        self.out_b, self.temp = graph.output_bytes.tolist(), graph.temp_bytes.tolist()
        self.cap = cluster.memory.tolist()
        self.outs: list[list[int]] = [[] for _ in range(n)]
        for e in sorted(range(m), key=lambda e: graph.edge_rank[e]):  # the source's edge order
            self.outs[self.src[e]].append(e)
        self.ins: list[list[int]] = [[] for _ in range(n)]
        for e in range(m):  # ordered by producer, as the kernel frees them (order does not matter)
            self.ins[self.dst[e]].append(e)
        self.mem = [0.0] * D
        for i in range(n):
            self.mem[self.dev[i]] += float(graph.persistent_bytes[i])
        self.peak = list(self.mem)
        self.events: list = []
        self.created = 0  # events and requests so far: the order of equal times
        self.waiting_inputs = [len(self.ins[i]) for i in range(n)]
        self.holders = [1 + len(self.outs[i]) for i in range(n)]
        self.queue: list[list[tuple[int, int]]] = [[] for _ in range(D)]  # (request number, op) in request order
        self.running: list = [None] * D
        self.start = [math.nan] * n
        self.end = [math.nan] * n
        self.makespan = 0.0
        self.transfers: list[list] = []  # op, src, dst, bytes, start, arrival, time, edge
        self.copy_bytes: dict[int, float] = {}
        self.channels: dict[int, deque] = {}
        self.channel_busy: dict[int, bool] = {}
        # copies on the sender: each device copies its queue one at a time; the copies in progress
        # on all devices share one bus with copy_bus_shared (k of them each move at 1 / k)
        self.to_copy: list[deque] = [deque() for _ in range(D)]
        self.copying: dict[int, list] = {}  # device -> [transfer, its time left at full speed, since, end]
        self.after = [0.0] * D  # the overhead a device owes after its copies
        self.row_of_edge: dict[int, int] = {}

    # ---------------------------------------------------------------- memory
    def alloc(self, d: int, b: float) -> None:
        if b > 0:
            self.mem[d] += b
            self.peak[d] = max(self.peak[d], self.mem[d])

    def free(self, d: int, b: float) -> None:
        if b > 0:
            self.mem[d] -= b

    def let_go(self, p: int) -> None:
        """One holder of ``p``'s output (itself, a consumer, a transfer) is done with it."""
        self.holders[p] -= 1
        if self.holders[p] == 0:
            self.free(self.dev[p], self.out_b[p])

    # ---------------------------------------------------------------- events and devices
    def push(self, t: float, what: tuple) -> None:
        heapq.heappush(self.events, (t, self.created, what))
        self.created += 1

    def serve(self, t: float, d: int) -> None:
        """A free device starts the op it chooses among those that asked (and fit)."""
        if self.running[d] is not None or not self.queue[d]:
            return
        candidates = self.queue[d]
        if self.memory_aware:
            candidates = [rq for rq in candidates if self.mem[d] + self.temp[rq[1]] + self.out_b[rq[1]] <= self.cap[d]]
            if not candidates:
                return
        prio = self.priority
        chosen = candidates[0] if prio is None else min(candidates, key=lambda rq: (-prio[rq[1]], rq[0]))
        self.queue[d].remove(chosen)
        c = chosen[1]
        self.running[d] = c
        self.start[c], self.end[c] = t, t + self.dur[c]
        self.alloc(d, self.temp[c])
        self.alloc(d, self.out_b[c])
        self.push(self.end[c], ("end", c))

    def request(self, t: float, c: int, now: bool = True) -> None:
        self.queue[self.dev[c]].append((self.created, c))
        self.created += 1
        if now:
            self.serve(t, self.dev[c])

    # ---------------------------------------------------------------- transfers and copies
    def edge_time(self, e: int, a: int, b: int) -> float:
        """A transfer's time; with copies on the sender, the sender's part: the latency is in flight."""
        if not math.isnan(self.given[e]):
            return self.given[e] * self.noise[e]
        wire = self.ebytes[e] / self.cluster.bandwidth[a, b]
        return (wire if self.copy_occupies_sender else self.cluster.latency[a, b] + wire) * self.noise[e]

    def begin_transfer(self, t: float, k: int) -> None:
        self.transfers[k][4] = t
        self.transfers[k][5] = t + self.transfers[k][6]
        self.push(self.transfers[k][5], ("land", k))

    def send(self, t: float, x: int, e: int, d: int, dd: int, copy_of: dict[int, int]) -> None:
        """Edge ``e`` of ``x`` crosses from ``d`` to ``dd``: a copy on the sender, or a transfer
        now or behind its channel's."""
        self.transfers.append([x, d, dd, self.ebytes[e], 0.0, 0.0, self.edge_time(e, d, dd), e])
        self.copy_bytes[e] = self.ebytes[e]
        k = len(self.transfers) - 1
        self.row_of_edge[e] = k
        if self.copy_occupies_sender:  # the row is the sender's copy; it lands the latency later
            if dd in copy_of:  # already copied there: lands with that copy, takes no time
                self.transfers[k][6] = 0.0
                return
            copy_of[dd] = k
            self.transfers[k][6] = max(self.edge_time(e2, d, dd) for e2 in self.outs[x] if self.dev[self.dst[e2]] == dd)
            self.to_copy[d].append(k)
            return
        if self.contention == "none":
            self.begin_transfer(t, k)
            return
        chan = d if self.contention == "per_device" else d * self.D + dd
        if self.channel_busy.get(chan):
            self.channels.setdefault(chan, deque()).append(k)
        else:
            self.channel_busy[chan] = True
            self.begin_transfer(t, k)

    def bus_rate(self) -> float:
        k = len(self.copying)
        return self.copy_bus_capacity / k if self.copy_bus_shared and k > self.copy_bus_capacity else 1.0

    def bus_settle(self, t: float) -> None:
        rate = self.bus_rate()
        for c in self.copying.values():
            c[1] = max(c[1] - (t - c[2]) * rate, 0.0)
            c[2] = t

    def start_copy(self, t: float, d: int) -> None:
        k = self.to_copy[d].popleft()
        self.copying[d] = [k, self.transfers[k][6], t, -1.0]
        self.transfers[k][4] = t

    def bus_ends(self, t: float) -> None:
        rate = self.bus_rate()
        for d in sorted(self.copying):
            c = self.copying[d]
            end = t + c[1] / rate
            if end != c[3]:
                c[3] = end
                self.push(end, ("copied", c[0]))

    # ---------------------------------------------------------------- one method per event kind
    def on_end(self, t: float, x: int) -> None:
        """Op ``x`` ends: it lets go of what it held, hands its output over edge by edge, then
        its device copies, owes its overhead or serves."""
        d = self.dev[x]
        self.makespan = max(self.makespan, t)
        self.running[d] = None
        self.free(d, self.temp[x])
        self.let_go(x)
        for e in self.ins[x]:
            if self.dev[self.src[e]] == d:
                self.let_go(self.src[e])
            else:
                self.free(d, self.copy_bytes[e])
        copy_of: dict[int, int] = {}  # destination device -> the transfer that copies x there
        for e in self.outs[x]:
            dd = self.dev[self.dst[e]]
            if dd == d:  # at once; the device picks after all of them have asked
                self.waiting_inputs[self.dst[e]] -= 1
                if self.waiting_inputs[self.dst[e]] == 0:
                    self.request(t, self.dst[e], now=False)
                continue
            self.send(t, x, e, d, dd, copy_of)
        if self.to_copy[d]:  # the copies first, then the overhead
            self.running[d] = "busy"
            self.after[d] = self.overhead if self.dur[x] > 0 else 0.0
            self.bus_settle(t)
            self.start_copy(t, d)
            self.bus_ends(t)
        elif self.dur[x] > 0 and self.overhead > 0:
            self.running[d] = "busy"
            self.push(t + self.overhead, ("free", d))
        else:
            self.serve(t, d)

    def on_free(self, t: float, d: int) -> None:
        self.running[d] = None
        self.serve(t, d)

    def on_copied(self, t: float, x: int) -> None:
        """Copy ``x`` may be done on its sender (unless its end has moved since): it lands the
        latency later with the producer's further edges to that device."""
        producer, s, dd, _size, _t0, _t1, _time, e = self.transfers[x]
        if s not in self.copying or self.copying[s][0] != x or self.copying[s][3] != t:
            return
        self.bus_settle(t)
        del self.copying[s]
        self.transfers[x][5] = t
        land = t + self.cluster.latency[s, dd]
        self.push(land, ("land", x))
        for e2 in self.outs[producer]:  # the producer's further edges to dd land with this copy
            if e2 != e and self.dev[self.dst[e2]] == dd:
                self.transfers[self.row_of_edge[e2]][4:6] = [land, land]
                self.push(land, ("land", self.row_of_edge[e2]))
        more = bool(self.to_copy[s])
        if more:
            self.start_copy(t, s)
        self.bus_ends(t)
        if more:
            return
        if self.after[s] > 0:
            self.push(t + self.after[s], ("free", s))
            return
        self.running[s] = None
        self.serve(t, s)

    def on_land(self, t: float, x: int) -> None:
        """Transfer ``x`` lands: its channel starts the next one, its consumer gets the input."""
        producer, s, dd, size, _t0, _t1, _time, e = self.transfers[x]
        if self.contention != "none" and not self.copy_occupies_sender:
            chan = s if self.contention == "per_device" else s * self.D + dd
            if self.channels.get(chan):
                self.begin_transfer(t, self.channels[chan].popleft())
            else:
                self.channel_busy[chan] = False
        self.alloc(dd, size)
        self.let_go(producer)
        if self.memory_aware:
            self.serve(t, s)
        consumer = self.dst[e]
        self.waiting_inputs[consumer] -= 1
        if self.waiting_inputs[consumer] == 0:
            self.request(t, consumer)

    def run(self) -> WCReferenceResult:
        """Sources ask at time 0 in op order; then every event, earliest first, to its method."""
        for i in range(len(self.dev)):
            if self.waiting_inputs[i] == 0:
                self.request(0.0, i)
        handlers = {"end": self.on_end, "free": self.on_free, "copied": self.on_copied, "land": self.on_land}
        while self.events:
            t, _, (kind, x) = heapq.heappop(self.events)
            handlers[kind](t, x)
        stalled = [bool(self.queue[d]) for d in range(self.D)]
        rows = [(r[0], r[1], r[2], r[3], r[4], r[5]) for r in self.transfers]
        return WCReferenceResult(self.makespan, self.start, self.end, rows, self.peak, stalled)
