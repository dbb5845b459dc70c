"""The compiled kernel of the ``placeto`` and ``default`` modes of :mod:`engine.simulator`
(numba, cached on disk; the event heap is :mod:`engine._simcore`'s).

This is the one place where speed tricks are allowed (STYLE.md). Semantics are those of
CONTRACTS §4; the public entry point, argument checking and the Schedule live in
``engine/simulator.py``.

Speed tricks
------------
* Every function is compiled with ``_nrt=False``: no reference counting, so helper calls
  cost nothing (with NRT each array argument costs two atomic operations per call, which
  made a heap push/pop 10x slower); helpers are inlined (``inline="always"``: no array
  structs passed per call, ~8 % faster on random placements) and the kernel uses numpy's
  error model (no division-by-zero checks: bandwidths are validated > 0). Nothing here
  allocates: :class:`Workspace` holds every array, allocated once per (graph, cluster) and
  reused for each placement.
* Only two kinds of heap events exist. Consumers on the producer's own device are served
  when it starts (their ready time is known then), idle devices get no wake-up events
  (``busy_until`` says when a device can start), and a device's outgoing channel needs no
  events at all (see below). What is left is one event per op start and one per transfer.

Event heap
----------
Entries are ``(time, key)``, ordered by time, then key; ``key = kind << 56 | payload``.
At equal time, arrivals (kind 0, payload ``producer * (D + 1) + slot``, slot = destination
device, or D for "every device but the producer's") come before zero-byte placeto transfers
landing as their bus runs (kind 1, payload ``device * rows + row``) and before device starts
(kind 2, payload = device), as CONTRACTS §4 asks.

An op becomes ready at its latest input's time. Ties between ops ready at the same time on
one device: in default mode the lower op index (sources too). In placeto mode the order in
which the published Placeto simulator appends them to its FIFO device queue: its heap pops
the per-edge ``remove_dependency`` events of an instant by (parent, child) name, but an event
*created* during that instant (by a zero-time op, or a zero-byte transfer) comes after every
event queued before it. So the tie is (producer, op) for inputs that were on their way before
the instant, and (n + processing counter, op) for inputs created within it; sources come
first, in index order.

Channels
--------
A device's outgoing channel takes transfers in the order their producers started, which is
the order their data becomes ready (ops on a device run one at a time). So a transfer
starts at ``max(channel free, data ready)``: what the published simulator's bus wake-ups,
including its "sleep until the head transfer is ready", amount to.

Memory (CONTRACTS §4)
---------------------
Persistent bytes always; temp bytes over [start, end); an output over [start, max(end, ends
of its consumers on that device, arrival of every transfer that reads it)); a received copy
over [arrival, max end of its consumers there). A buffer whose last reader on device d is
the op starting now is freed when that op ends; ops on d end in start order, so one
pending "free at end" per device suffices. Only outputs still being sent when their last
local reader ends go to a heap. Frees are applied before allocations at equal time.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine._simcore import HEAP_SIZE as _HS
from engine._simcore import MEM_RECORDS as _MS
from engine._simcore import ev_pop as _ev_pop
from engine._simcore import ev_push as _ev_push
from engine._simcore import record as _record

ARRIVAL = 0
BUS = 1  # placeto: a 0-byte transfer, landing when its bus runs it
DEVICE = 2
_SHIFT = 56
_MASK = (1 << _SHIFT) - 1

# columns of the workspace arrays (one row per op / transfer / device: its fields share a cache line)
_REMAINING, _PROD, _TIE, _OUT_REF, _FIRST_ROW, _N_ROWS, _RQ = range(7)  # wi: int64 [n, 7]
_FQ_T, _FQ_B = 4, 5  # wf columns 4-5: per-device FIFOs of frees (time, bytes), at the ready-queue offsets
_START, _END, _RT, _OUT_ARRIVE = range(4)  # wf: float64 [n, 6]
_R_OP, _R_SRC, _R_DST, _R_REF, _R_PRIMARY, _CQ_KEY = range(6)  # ri: int64 [m, 6]
_R_BYTES, _R_START, _R_END, _CQ_T = range(4)  # rf: float64 [m, 4]
# per device, float64 [D, 11]; _DGT / _DBNT: largest given transfer time / largest bytes without one
_BUSY, _MEMCPY, _PEAK, _MEM, _BUSY_UNTIL, _CH_FREE, _PEND_T, _PEND_B, _DBYTES, _DGT, _DBNT = range(11)
# per device, int64 [D + 1, 12]
(_CNT, _RQ_OFF, _RQ_HEAD, _RQ_TAIL, _EV_PENDING, _SEEN, _DCOUNT,
 _FQ_HEAD, _FQ_TAIL, _CQ_OFF, _CQ_HEAD, _CQ_TAIL) = range(12)


class Workspace:
    """Every array the kernel uses, sized for one graph and cluster (allocated once)."""

    def __init__(self, n: int, m: int, num_devices: int, record_memory: bool) -> None:
        d = num_devices
        self.wi = np.zeros((n, 7), np.int64)
        self.wf = np.zeros((n, 6))
        self.ri = np.zeros((max(m, 1), 6), np.int64)
        self.rf = np.zeros((max(m, 1), 4))
        self.ev_t = np.zeros(n + m + 2 * d + 8)
        self.ev_k = np.zeros(n + m + 2 * d + 8, np.int64)
        self.mr = np.zeros(((4 * n + 2 * m + 8) if record_memory else 1, 3))  # time, device, bytes
        self.df = np.zeros((d, 11))
        self.di = np.zeros((d + 1, 12), np.int64)
        self.counts = np.zeros(2, np.int64)
        self.record_memory = record_memory


@njit(cache=True, _nrt=False, inline="always")
def _free_later(d, t, b, wf, di):
    """Schedule a free of ``b`` bytes on device ``d`` at ``t``: device d's free FIFO, kept in
    time order by an insertion sort at the tail (pushes come almost in order)."""
    base = di[d, _RQ_OFF]
    head = base + di[d, _FQ_HEAD]
    j = base + di[d, _FQ_TAIL]
    di[d, _FQ_TAIL] += 1
    while j > head and wf[j - 1, _FQ_T] > t:
        wf[j, _FQ_T] = wf[j - 1, _FQ_T]
        wf[j, _FQ_B] = wf[j - 1, _FQ_B]
        j -= 1
    wf[j, _FQ_T] = t
    wf[j, _FQ_B] = b


@njit(cache=True, _nrt=False, inline="always")
def _arrival_later(d, t, key, ri, rf, di, ev_t, ev_k, counts):
    """Schedule a transfer arrival from device ``d``'s channel.

    A channel's arrivals come in increasing time order when its links share one latency
    (each transfer starts after the previous one arrived), so they wait in a per-channel
    FIFO with only its head in the event heap; an arrival out of that order (links with
    different latencies) goes to the heap directly. Either way the heap pops it in order.
    """
    base = di[d, _CQ_OFF]
    head = di[d, _CQ_HEAD]
    tail = di[d, _CQ_TAIL]
    if head == tail or t > rf[base + tail - 1, _CQ_T]:
        ri[base + tail, _CQ_KEY] = key
        rf[base + tail, _CQ_T] = t
        di[d, _CQ_TAIL] = tail + 1
        if head == tail:
            _ev_push(ev_t, ev_k, counts, t, key)
    else:
        _ev_push(ev_t, ev_k, counts, t, key)


@njit(cache=True, _nrt=False, inline="always")
def _settle(now, d, wf, df, di, mr, counts, rec):
    """Apply device ``d``'s frees due by ``now``: its end-of-op free and its free FIFO."""
    if df[d, _PEND_B] != 0.0 and df[d, _PEND_T] <= now:
        df[d, _MEM] -= df[d, _PEND_B]
        if rec:
            _record(mr, counts, df[d, _PEND_T], d, -df[d, _PEND_B])
        df[d, _PEND_B] = 0.0
    base = di[d, _RQ_OFF]
    while di[d, _FQ_HEAD] < di[d, _FQ_TAIL] and wf[base + di[d, _FQ_HEAD], _FQ_T] <= now:
        k = base + di[d, _FQ_HEAD]
        df[d, _MEM] -= wf[k, _FQ_B]
        if rec:
            _record(mr, counts, wf[k, _FQ_T], d, -wf[k, _FQ_B])
        di[d, _FQ_HEAD] += 1


@njit(cache=True, _nrt=False, inline="always")
def _alloc(now, d, b, df, mr, counts, rec):
    df[d, _MEM] += b
    if df[d, _MEM] > df[d, _PEAK]:
        df[d, _PEAK] = df[d, _MEM]
    if rec:
        _record(mr, counts, now, d, b)


@njit(cache=True, _nrt=False, inline="always")
def _enqueue(c, d, now, wi, wf, di, df, ev_t, ev_k, counts):
    """Append ready op ``c`` to device ``d``'s FIFO in (ready time, tie) order; wake ``d`` for it.

    Ready times mostly arrive in order, so ``c`` usually stays last; it moves back past ops
    that are ready later, or at the same time with a larger tie (an insertion sort at the
    tail that never passes the head: popped slots hold -1).
    """
    base = di[d, _RQ_OFF]
    j = base + di[d, _RQ_TAIL]
    di[d, _RQ_TAIL] += 1
    rtc = wf[c, _RT]
    tc = wi[c, _TIE]
    while j > base:
        q = wi[j - 1, _RQ]
        if q < 0 or wf[q, _RT] < rtc or (wf[q, _RT] == rtc and wi[q, _TIE] < tc):
            break
        wi[j, _RQ] = q
        j -= 1
    wi[j, _RQ] = c
    if di[d, _EV_PENDING] == 0:
        di[d, _EV_PENDING] = 1
        w = df[d, _BUSY_UNTIL]
        _ev_push(ev_t, ev_k, counts, w if w > now else now, (DEVICE << _SHIFT) | d)


@njit(cache=True, _nrt=False, inline="always")
def _input_arrives(x, p, t, n, placeto_mode, wi, wf):
    """Producer ``p``'s output reaches op ``x`` at ``t``; True when ``x`` has all its inputs."""
    if t > wf[x, _RT]:
        wf[x, _RT] = t
        wi[x, _PROD] = p
    elif t == wf[x, _RT] and p > wi[x, _PROD]:
        wi[x, _PROD] = p
    wi[x, _REMAINING] -= 1
    if wi[x, _REMAINING] == 0:
        wi[x, _TIE] = wi[x, _PROD] * n + x if placeto_mode else x
        return True
    return False


@njit(cache=True, _nrt=False, error_model="numpy")
def simulate_kernel(
    placeto_mode, num_devices,
    succ_ptr, succ_idx, succ_edge, pred_ptr, pred_idx,
    edge_bytes, edge_time, has_times, out_bytes, persistent, temp,
    dev, dur, bandwidth, latency, bw0, op_overhead, transfer_gap, record_memory,
    wi, wf, ri, rf, ev_t, ev_k, mr, df, di, counts,
):
    """Simulate one placement; results are left in the workspace arrays.

    ``edge_time`` holds each edge's given transfer time (NaN: none; read only when
    ``has_times``). A transfer's time is the largest over its edges of the given time, or of
    bytes / bandwidth for an edge without one (+ latency in default mode, which does not hold
    the channel); see ``engine/simulator.py``.

    Returns ``(makespan, transfer rows, memory records)``.
    """
    n = len(dur)
    D = num_devices
    slot_all = D
    # ---------------------------------------------------------------- reset the workspace
    for i in range(n):
        wi[i, _REMAINING] = pred_ptr[i + 1] - pred_ptr[i]
        wi[i, _PROD] = -1
        wi[i, _OUT_REF] = 0
        wi[i, _N_ROWS] = 0
        wf[i, _RT] = 0.0
        wf[i, _OUT_ARRIVE] = 0.0
    for k in range(df.shape[1]):
        for d in range(D):
            df[d, k] = 0.0
    for k in range(di.shape[1]):
        for d in range(D + 1):
            di[d, k] = 0
    for d in range(D):
        di[d, _SEEN] = -1
    counts[_HS] = 0
    counts[_MS] = 0
    for i in range(n):
        di[dev[i], _CNT] += 1
        di[dev[i] + 1, _CQ_OFF] += succ_ptr[i + 1] - succ_ptr[i]  # room for its transfers
        df[dev[i], _MEM] += persistent[i]
    for d in range(D):
        di[d + 1, _RQ_OFF] = di[d, _RQ_OFF] + di[d, _CNT]
        di[d + 1, _CQ_OFF] += di[d, _CQ_OFF]
        df[d, _PEAK] = df[d, _MEM]
    nrows = 0
    makespan = 0.0
    seq = 0
    n_row_cap = ri.shape[0]
    # ---------------------------------------------------------------- sources, in index order
    for i in range(n):
        if wi[i, _REMAINING] == 0:
            wi[i, _TIE] = i - n if placeto_mode else i
            _enqueue(i, dev[i], 0.0, wi, wf, di, df, ev_t, ev_k, counts)
    # ---------------------------------------------------------------- main loop
    while counts[_HS] > 0:
        t, key = _ev_pop(ev_t, ev_k, counts)
        if t > makespan:
            makespan = t
        payload = key & _MASK
        kind = key >> _SHIFT
        if kind != DEVICE:  # a transfer from p lands on one or all remote devices
            if kind == BUS:
                p = ri[payload % n_row_cap, _R_OP]
                slot = slot_all
            else:
                p = payload // (D + 1)
                slot = payload - p * (D + 1)
            dp = dev[p]
            cq = di[dp, _CQ_OFF] + di[dp, _CQ_HEAD]
            if di[dp, _CQ_HEAD] < di[dp, _CQ_TAIL] and ri[cq, _CQ_KEY] == key:
                di[dp, _CQ_HEAD] += 1
                if di[dp, _CQ_HEAD] < di[dp, _CQ_TAIL]:
                    _ev_push(ev_t, ev_k, counts, rf[cq + 1, _CQ_T], ri[cq + 1, _CQ_KEY])
            for r in range(wi[p, _FIRST_ROW], wi[p, _FIRST_ROW] + wi[p, _N_ROWS]):
                if slot == slot_all or ri[r, _R_DST] == slot:
                    dd = ri[r, _R_DST]
                    _settle(t, dd, wf, df, di, mr, counts, record_memory)
                    _alloc(t, dd, rf[r, _R_BYTES], df, mr, counts, record_memory)
            for k in range(succ_ptr[p], succ_ptr[p + 1]):
                x = succ_idx[k]
                dx = dev[x]
                if dx == dp or (slot != slot_all and dx != slot):
                    continue
                if kind == BUS:
                    rkey = n + seq
                    seq += 1
                else:
                    rkey = p
                if _input_arrives(x, rkey, t, n, placeto_mode, wi, wf):
                    _enqueue(x, dx, t, wi, wf, di, df, ev_t, ev_k, counts)
            continue
        # ------------------------------------------------------------ a device starts its next op
        d = payload
        di[d, _EV_PENDING] = 0
        slot_c = di[d, _RQ_OFF] + di[d, _RQ_HEAD]
        c = wi[slot_c, _RQ]
        wi[slot_c, _RQ] = -1
        di[d, _RQ_HEAD] += 1
        e = t + dur[c]
        w = e + op_overhead if dur[c] > 0 else e
        wf[c, _START] = t
        wf[c, _END] = e
        df[d, _BUSY] += dur[c]
        df[d, _BUSY_UNTIL] = w
        if w > makespan:
            makespan = w
        _settle(t, d, wf, df, di, mr, counts, record_memory)
        if temp[c] > 0:
            _alloc(t, d, temp[c], df, mr, counts, record_memory)
        if out_bytes[c] > 0:
            _alloc(t, d, out_bytes[c], df, mr, counts, record_memory)
        free_at_e = temp[c]
        for k in range(pred_ptr[c], pred_ptr[c + 1]):  # inputs whose last reader here is c
            p = pred_idx[k]
            if dev[p] == d:
                wi[p, _OUT_REF] -= 1
                if wi[p, _OUT_REF] == 0:
                    if wf[p, _OUT_ARRIVE] > e:
                        _free_later(d, wf[p, _OUT_ARRIVE], out_bytes[p], wf, di)
                    else:
                        free_at_e += out_bytes[p]
            else:
                for r in range(wi[p, _FIRST_ROW], wi[p, _FIRST_ROW] + wi[p, _N_ROWS]):
                    if ri[r, _R_DST] == d:
                        ri[r, _R_REF] -= 1
                        if ri[r, _R_REF] == 0:
                            free_at_e += rf[r, _R_BYTES]
                        break
        local = 0
        n_remote_dev = 0
        p_given = -1.0  # placeto, with given times: the largest one, and whether an edge has none
        p_untimed = not has_times
        for k in range(succ_ptr[c], succ_ptr[c + 1]):  # consumers: local now, remote by transfer
            x = succ_idx[k]
            dx = dev[x]
            if dx == d:
                local += 1
                if e > t:  # its remove_dependency was queued before time e: ordered by producer
                    rkey = c
                else:  # created while time t is processed: after every earlier one
                    rkey = n + seq
                    seq += 1
                if _input_arrives(x, rkey, e, n, placeto_mode, wi, wf):
                    _enqueue(x, d, t, wi, wf, di, df, ev_t, ev_k, counts)
            else:
                if di[dx, _SEEN] != c:
                    di[dx, _SEEN] = c
                    df[dx, _DBYTES] = 0.0
                    df[dx, _DGT] = -1.0
                    df[dx, _DBNT] = -1.0
                    di[dx, _DCOUNT] = 0
                    n_remote_dev += 1
                di[dx, _DCOUNT] += 1
                b = edge_bytes[succ_edge[k]]
                if b > df[dx, _DBYTES]:
                    df[dx, _DBYTES] = b
                if has_times:
                    te = edge_time[succ_edge[k]]
                    if te == te:
                        if te > df[dx, _DGT]:
                            df[dx, _DGT] = te
                        if te > p_given:
                            p_given = te
                    else:
                        p_untimed = True
                        if b > df[dx, _DBNT]:
                            df[dx, _DBNT] = b
        wi[c, _OUT_REF] = local
        if n_remote_dev > 0:
            wi[c, _FIRST_ROW] = nrows
            wi[c, _N_ROWS] = n_remote_dev
            row0 = nrows
            for dd in range(D):
                if di[dd, _SEEN] == c and dd != d:
                    ri[nrows, _R_OP] = c
                    ri[nrows, _R_SRC] = d
                    ri[nrows, _R_DST] = dd
                    ri[nrows, _R_REF] = di[dd, _DCOUNT]
                    ri[nrows, _R_PRIMARY] = 1 if (nrows == row0 or not placeto_mode) else 0
                    rf[nrows, _R_BYTES] = out_bytes[c] if placeto_mode else df[dd, _DBYTES]
                    nrows += 1
            n_items = 1 if placeto_mode else n_remote_dev
            for j in range(n_items):
                if placeto_mode:
                    xfer = out_bytes[c] / bw0 if p_untimed else 0.0
                    if p_given > xfer:
                        xfer = p_given
                    lat = 0.0
                    slot = slot_all
                    r_lo = row0
                    r_hi = row0 + n_remote_dev
                else:
                    slot = ri[row0 + j, _R_DST]
                    lat = latency[d, slot]
                    if has_times:  # given times hold the channel for all their time, no latency
                        xfer = df[slot, _DBNT] / bandwidth[d, slot] if df[slot, _DBNT] >= 0 else 0.0
                        if df[slot, _DBNT] < 0:
                            lat = 0.0
                        if df[slot, _DGT] > xfer + lat:
                            xfer = df[slot, _DGT]
                            lat = 0.0
                        elif df[slot, _DGT] > xfer:
                            lat -= df[slot, _DGT] - xfer
                            xfer = df[slot, _DGT]
                    else:
                        xfer = rf[row0 + j, _R_BYTES] / bandwidth[d, slot]
                    r_lo = row0 + j
                    r_hi = r_lo + 1
                free = df[d, _CH_FREE]
                ts = free if free > e else e
                arrive = ts + lat + xfer
                df[d, _CH_FREE] = ts + xfer + transfer_gap
                if df[d, _CH_FREE] > makespan:
                    makespan = df[d, _CH_FREE]
                df[d, _MEMCPY] += xfer
                for r in range(r_lo, r_hi):
                    rf[r, _R_START] = ts
                    rf[r, _R_END] = arrive
                if arrive > wf[c, _OUT_ARRIVE]:
                    wf[c, _OUT_ARRIVE] = arrive
                if placeto_mode and arrive == ts:  # lands when its bus runs it, at ts
                    akey = (BUS << _SHIFT) | (d * n_row_cap + row0)
                else:
                    akey = (ARRIVAL << _SHIFT) | (c * (D + 1) + slot)
                _arrival_later(d, arrive, akey, ri, rf, di, ev_t, ev_k, counts)
        if local == 0:  # no local reader: the output lives until c ends or its last transfer lands
            if wf[c, _OUT_ARRIVE] > e:
                _free_later(d, wf[c, _OUT_ARRIVE], out_bytes[c], wf, di)
            else:
                free_at_e += out_bytes[c]
        df[d, _PEND_T] = e
        df[d, _PEND_B] = free_at_e
        if di[d, _RQ_HEAD] < di[d, _RQ_TAIL] and di[d, _EV_PENDING] == 0:
            di[d, _EV_PENDING] = 1
            _ev_push(ev_t, ev_k, counts, w, (DEVICE << _SHIFT) | d)
    for d in range(D):
        _settle(np.inf, d, wf, df, di, mr, counts, record_memory)
    return makespan, nrows, counts[_MS]
