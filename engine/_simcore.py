"""Shared compiled pieces of the simulator kernels (numba, cached on disk): the event heap
and the memory records every kernel uses, and the event loop pieces, workspace layout,
channel bookkeeping and memory accounting that the ``placeto`` and ``default`` kernels share
(``engine/_simkernel_placeto.py``, ``engine/_simkernel_default.py``).

The event heap holds ``(time, key)`` pairs in two parallel arrays, ordered by time, then
key, so ties break deterministically (SimPy's ``(time, priority, counter)`` idea with the
priority and counter packed into one int64 key by each kernel). ``counts[HEAP_SIZE]`` is
the heap's size and ``counts[MEM_RECORDS]`` the number of memory records written so far.
Every function runs without numba's reference counting (``_nrt=False``): no allocation, and
is inlined into the kernel that calls it (``inline="always"``), so a call costs no more than
the arithmetic in it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

HEAP_SIZE, MEM_RECORDS = range(2)


@njit(cache=True, _nrt=False, inline="always")
def ev_push(ev_t, ev_k, counts, t, k):
    """Add event ``(t, k)``."""
    i = counts[HEAP_SIZE]
    counts[HEAP_SIZE] = i + 1
    while i > 0:
        par = (i - 1) >> 1
        pt = ev_t[par]
        pk = ev_k[par]
        if pt < t or (pt == t and pk < k):
            break
        ev_t[i] = pt
        ev_k[i] = pk
        i = par
    ev_t[i] = t
    ev_k[i] = k


@njit(cache=True, _nrt=False, inline="always")
def ev_pop(ev_t, ev_k, counts):
    """Remove and return the earliest event ``(t, k)`` (the heap must not be empty)."""
    t0 = ev_t[0]
    k0 = ev_k[0]
    n = counts[HEAP_SIZE] - 1
    counts[HEAP_SIZE] = n
    if n > 0:
        t = ev_t[n]
        k = ev_k[n]
        i = 0
        while True:
            c = 2 * i + 1
            if c >= n:
                break
            if c + 1 < n and (ev_t[c + 1] < ev_t[c] or (ev_t[c + 1] == ev_t[c] and ev_k[c + 1] < ev_k[c])):
                c += 1
            if ev_t[c] < t or (ev_t[c] == t and ev_k[c] < k):
                ev_t[i] = ev_t[c]
                ev_k[i] = ev_k[c]
                i = c
            else:
                break
        ev_t[i] = t
        ev_k[i] = k
    return t0, k0


@njit(cache=True, _nrt=False, inline="always")
def record(mr, counts, t, d, b):
    """Append one memory change: ``b`` bytes (negative: freed) on device ``d`` at time ``t``."""
    k = counts[MEM_RECORDS]
    mr[k, 0] = t
    mr[k, 1] = d
    mr[k, 2] = b
    counts[MEM_RECORDS] = k + 1


# ==================================================================================================
# The event loop that ``placeto`` (engine/_simkernel_placeto.py) and ``default``
# (engine/_simkernel_default.py) share: per-device FIFO ready queues, one outgoing channel per
# device, and the memory accounting of CONTRACTS §4.
#
# Heap keys are ``kind << SHIFT | payload``. At equal time arrivals (kind ARRIVAL) come before
# zero-time placeto transfers landing as their bus runs them (kind BUS) and before device
# starts (kind DEVICE, payload = device), as CONTRACTS §4 asks.
#
# Channels: a device's outgoing channel takes transfers in the order their producers started,
# which is the order their data becomes ready (ops on a device run one at a time), so a
# transfer starts at ``max(channel free, data ready)`` and needs no event of its own; its
# arrival does.
#
# Memory: persistent bytes always; temp bytes over [start, end); an output over [start,
# max(end, ends of its consumers on that device, arrival of every transfer that reads it)); a
# received copy over [arrival, max end of its consumers there). A buffer whose last reader on
# device d is the op starting now is freed when that op ends; ops on d end in start order, so
# one pending "free at end" per device suffices. Only outputs still being sent when their last
# local reader ends go to a per-device FIFO of frees. Frees are applied before allocations at
# equal time.
# ==================================================================================================

ARRIVAL, BUS, DEVICE = range(3)
SHIFT = 56
MASK = (1 << SHIFT) - 1

# columns of the workspace arrays (one row per op / transfer / device: its fields share a cache line)
REMAINING, PROD, TIE, OUT_REF, FIRST_ROW, N_ROWS, RQ = range(7)  # wi: int64 [n, 7]
FQ_T, FQ_B = 4, 5  # wf columns 4-5: per-device FIFOs of frees (time, bytes), at the ready-queue offsets
START, END, RT, OUT_ARRIVE = range(4)  # wf: float64 [n, 6]
R_OP, R_SRC, R_DST, R_REF, R_PRIMARY, CQ_KEY = range(6)  # ri: int64 [m, 6]
R_BYTES, R_START, R_END, CQ_T = range(4)  # rf: float64 [m, 4]
# per device, float64 [D, 11]; DGT / DBNT: largest given transfer time / largest bytes without one
BUSY, MEMCPY, PEAK, MEM, BUSY_UNTIL, CH_FREE, PEND_T, PEND_B, DBYTES, DGT, DBNT = range(11)
# per device, int64 [D + 1, 12]
(CNT, RQ_OFF, RQ_HEAD, RQ_TAIL, EV_PENDING, SEEN, DCOUNT,
 FQ_HEAD, FQ_TAIL, CQ_OFF, CQ_HEAD, CQ_TAIL) = range(12)


class QueueWorkspace:
    """Every array the placeto / default kernels use, sized for one graph and cluster."""

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
def reset(D, succ_ptr, pred_ptr, dev, persistent, source_tie, wi, wf, df, di, ev_t, ev_k, counts):
    """Clear the workspace for one placement (input counts, device segments, persistent
    memory), then queue the sources in index order with ties ``index + source_tie``."""
    n = len(dev)
    for i in range(n):
        wi[i, REMAINING] = pred_ptr[i + 1] - pred_ptr[i]
        wi[i, PROD] = -1
        wi[i, OUT_REF] = 0
        wi[i, N_ROWS] = 0
        wf[i, RT] = 0.0
        wf[i, OUT_ARRIVE] = 0.0
    for k in range(df.shape[1]):
        for d in range(D):
            df[d, k] = 0.0
    for k in range(di.shape[1]):
        for d in range(D + 1):
            di[d, k] = 0
    for d in range(D):
        di[d, SEEN] = -1
    counts[HEAP_SIZE] = 0
    counts[MEM_RECORDS] = 0
    for i in range(n):
        di[dev[i], CNT] += 1
        di[dev[i] + 1, CQ_OFF] += succ_ptr[i + 1] - succ_ptr[i]  # room for its transfers
        df[dev[i], MEM] += persistent[i]
    for d in range(D):
        di[d + 1, RQ_OFF] = di[d, RQ_OFF] + di[d, CNT]
        di[d + 1, CQ_OFF] += di[d, CQ_OFF]
        df[d, PEAK] = df[d, MEM]
    for i in range(n):
        if wi[i, REMAINING] == 0:
            wi[i, TIE] = i + source_tie
            enqueue(i, dev[i], 0.0, wi, wf, di, df, ev_t, ev_k, counts)


@njit(cache=True, _nrt=False, inline="always")
def free_later(d, t, b, wf, di):
    """Schedule a free of ``b`` bytes on device ``d`` at ``t``: device d's free FIFO, kept in
    time order by an insertion sort at the tail (pushes come almost in order)."""
    base = di[d, RQ_OFF]
    head = base + di[d, FQ_HEAD]
    j = base + di[d, FQ_TAIL]
    di[d, FQ_TAIL] += 1
    while j > head and wf[j - 1, FQ_T] > t:
        wf[j, FQ_T] = wf[j - 1, FQ_T]
        wf[j, FQ_B] = wf[j - 1, FQ_B]
        j -= 1
    wf[j, FQ_T] = t
    wf[j, FQ_B] = b


@njit(cache=True, _nrt=False, inline="always")
def settle(now, d, wf, df, di, mr, counts, rec):
    """Apply device ``d``'s frees due by ``now``: its end-of-op free and its free FIFO."""
    if df[d, PEND_B] != 0.0 and df[d, PEND_T] <= now:
        df[d, MEM] -= df[d, PEND_B]
        if rec:
            record(mr, counts, df[d, PEND_T], d, -df[d, PEND_B])
        df[d, PEND_B] = 0.0
    base = di[d, RQ_OFF]
    while di[d, FQ_HEAD] < di[d, FQ_TAIL] and wf[base + di[d, FQ_HEAD], FQ_T] <= now:
        k = base + di[d, FQ_HEAD]
        df[d, MEM] -= wf[k, FQ_B]
        if rec:
            record(mr, counts, wf[k, FQ_T], d, -wf[k, FQ_B])
        di[d, FQ_HEAD] += 1


@njit(cache=True, _nrt=False, inline="always")
def alloc(now, d, b, df, mr, counts, rec):
    """Allocate ``b`` bytes on device ``d`` at ``now`` and raise its peak."""
    df[d, MEM] += b
    if df[d, MEM] > df[d, PEAK]:
        df[d, PEAK] = df[d, MEM]
    if rec:
        record(mr, counts, now, d, b)


@njit(cache=True, _nrt=False, inline="always")
def enqueue(c, d, now, wi, wf, di, df, ev_t, ev_k, counts):
    """Append ready op ``c`` to device ``d``'s FIFO in (ready time, tie) order; wake ``d`` for it.

    Ready times mostly arrive in order, so ``c`` usually stays last; it moves back past ops
    that are ready later, or at the same time with a larger tie (an insertion sort at the
    tail that never passes the head: popped slots hold -1).
    """
    base = di[d, RQ_OFF]
    j = base + di[d, RQ_TAIL]
    di[d, RQ_TAIL] += 1
    rtc = wf[c, RT]
    tc = wi[c, TIE]
    while j > base:
        q = wi[j - 1, RQ]
        if q < 0 or wf[q, RT] < rtc or (wf[q, RT] == rtc and wi[q, TIE] < tc):
            break
        wi[j, RQ] = q
        j -= 1
    wi[j, RQ] = c
    if di[d, EV_PENDING] == 0:
        di[d, EV_PENDING] = 1
        w = df[d, BUSY_UNTIL]
        ev_push(ev_t, ev_k, counts, w if w > now else now, (DEVICE << SHIFT) | d)


@njit(cache=True, _nrt=False, inline="always")
def input_arrives(x, p, t, wi, wf):
    """Input from producer key ``p`` reaches op ``x`` at ``t``; True when ``x`` has all its
    inputs. ``wi[x, PROD]`` keeps the largest key among the latest inputs."""
    if t > wf[x, RT]:
        wf[x, RT] = t
        wi[x, PROD] = p
    elif t == wf[x, RT] and p > wi[x, PROD]:
        wi[x, PROD] = p
    wi[x, REMAINING] -= 1
    return wi[x, REMAINING] == 0


@njit(cache=True, _nrt=False, inline="always")
def arrival_later(d, t, key, ri, rf, di, ev_t, ev_k, counts):
    """Schedule a transfer arrival from device ``d``'s channel.

    A channel's arrivals come in increasing time order when its links share one latency
    (each transfer starts after the previous one arrived), so they wait in a per-channel
    FIFO with only its head in the event heap; an arrival out of that order (links with
    different latencies) goes to the heap directly. Either way the heap pops it in order.
    """
    base = di[d, CQ_OFF]
    head = di[d, CQ_HEAD]
    tail = di[d, CQ_TAIL]
    if head == tail or t > rf[base + tail - 1, CQ_T]:
        ri[base + tail, CQ_KEY] = key
        rf[base + tail, CQ_T] = t
        di[d, CQ_TAIL] = tail + 1
        if head == tail:
            ev_push(ev_t, ev_k, counts, t, key)
    else:
        ev_push(ev_t, ev_k, counts, t, key)


@njit(cache=True, _nrt=False, inline="always")
def arrival_popped(d, key, ri, rf, di, ev_t, ev_k, counts):
    """An arrival from device ``d``'s channel left the heap: if it was its FIFO's head, the
    next one in the FIFO enters the heap."""
    cq = di[d, CQ_OFF] + di[d, CQ_HEAD]
    if di[d, CQ_HEAD] < di[d, CQ_TAIL] and ri[cq, CQ_KEY] == key:
        di[d, CQ_HEAD] += 1
        if di[d, CQ_HEAD] < di[d, CQ_TAIL]:
            ev_push(ev_t, ev_k, counts, rf[cq + 1, CQ_T], ri[cq + 1, CQ_KEY])


@njit(cache=True, _nrt=False, inline="always")
def land_copies(t, p, dst, wi, ri, rf, wf, df, di, mr, counts, rec):
    """The copies of ``p``'s output for device ``dst`` (-1: every destination) land at ``t``."""
    for r in range(wi[p, FIRST_ROW], wi[p, FIRST_ROW] + wi[p, N_ROWS]):
        if dst < 0 or ri[r, R_DST] == dst:
            dd = ri[r, R_DST]
            settle(t, dd, wf, df, di, mr, counts, rec)
            alloc(t, dd, rf[r, R_BYTES], df, mr, counts, rec)


@njit(cache=True, _nrt=False, inline="always")
def start_next(t, d, dur, op_overhead, temp, out_bytes, dev, pred_ptr, pred_idx,
               wi, wf, ri, rf, df, di, mr, counts, rec):
    """Device ``d`` starts the head of its ready FIFO at ``t``. Returns ``(op, end, free at,
    bytes freed at end)``: free at = end + δ1 for a non-zero op; the bytes are those of
    :func:`release_inputs`."""
    di[d, EV_PENDING] = 0
    slot_c = di[d, RQ_OFF] + di[d, RQ_HEAD]
    c = wi[slot_c, RQ]
    wi[slot_c, RQ] = -1
    di[d, RQ_HEAD] += 1
    e = t + dur[c]
    w = e + op_overhead if dur[c] > 0 else e
    wf[c, START] = t
    wf[c, END] = e
    df[d, BUSY] += dur[c]
    df[d, BUSY_UNTIL] = w
    settle(t, d, wf, df, di, mr, counts, rec)
    if temp[c] > 0:
        alloc(t, d, temp[c], df, mr, counts, rec)
    if out_bytes[c] > 0:
        alloc(t, d, out_bytes[c], df, mr, counts, rec)
    return c, e, w, release_inputs(c, d, e, dev, pred_ptr, pred_idx, out_bytes, temp, wi, wf, ri, rf, di)


@njit(cache=True, _nrt=False, inline="always")
def release_inputs(c, d, e, dev, pred_ptr, pred_idx, out_bytes, temp, wi, wf, ri, rf, di):
    """Op ``c`` (on ``d``, ending at ``e``) is the last reader of some inputs: local outputs
    and received copies. Returns the bytes freed when ``c`` ends (its temp bytes first);
    outputs still being sent then are freed when their last transfer lands."""
    free_at_e = temp[c]
    for k in range(pred_ptr[c], pred_ptr[c + 1]):
        p = pred_idx[k]
        if dev[p] == d:
            wi[p, OUT_REF] -= 1
            if wi[p, OUT_REF] == 0:
                if wf[p, OUT_ARRIVE] > e:
                    free_later(d, wf[p, OUT_ARRIVE], out_bytes[p], wf, di)
                else:
                    free_at_e += out_bytes[p]
        else:
            for r in range(wi[p, FIRST_ROW], wi[p, FIRST_ROW] + wi[p, N_ROWS]):
                if ri[r, R_DST] == d:
                    ri[r, R_REF] -= 1
                    if ri[r, R_REF] == 0:
                        free_at_e += rf[r, R_BYTES]
                    break
    return free_at_e


@njit(cache=True, _nrt=False, inline="always")
def remote_consumer(c, dx, df, di):
    """Count a consumer of ``c`` on device ``dx``; returns 1 for the first one there, else 0
    (then the device's per-output maxima DBYTES / DGT / DBNT are reset)."""
    new = 0
    if di[dx, SEEN] != c:
        di[dx, SEEN] = c
        df[dx, DBYTES] = 0.0
        df[dx, DGT] = -1.0
        df[dx, DBNT] = -1.0
        di[dx, DCOUNT] = 0
        new = 1
    di[dx, DCOUNT] += 1
    return new


@njit(cache=True, _nrt=False, inline="always")
def open_rows(c, d, D, nrows, wi, ri, rf, df, di):
    """One transfer row per device that holds consumers of ``c`` (by device index), with the
    largest bytes among its edges; returns the next free row."""
    wi[c, FIRST_ROW] = nrows
    for dd in range(D):
        if di[dd, SEEN] == c and dd != d:
            ri[nrows, R_OP] = c
            ri[nrows, R_SRC] = d
            ri[nrows, R_DST] = dd
            ri[nrows, R_REF] = di[dd, DCOUNT]
            ri[nrows, R_PRIMARY] = 1
            rf[nrows, R_BYTES] = df[dd, DBYTES]
            nrows += 1
    wi[c, N_ROWS] = nrows - wi[c, FIRST_ROW]
    return nrows


@njit(cache=True, _nrt=False, inline="always")
def send(c, d, e, xfer, lat, gap, r_lo, r_hi, wf, rf, df, makespan):
    """Device ``d``'s channel sends rows ``r_lo:r_hi`` of ``c``'s output (ready at ``e``) as one
    transfer: it starts when the channel is free, holds it ``xfer + gap`` and lands ``lat +
    xfer`` after its start. Returns ``(start, arrival, makespan)``, the makespan raised to
    the channel's free time."""
    free = df[d, CH_FREE]
    ts = free if free > e else e
    arrive = ts + lat + xfer
    df[d, CH_FREE] = ts + xfer + gap
    df[d, MEMCPY] += xfer
    for r in range(r_lo, r_hi):
        rf[r, R_START] = ts
        rf[r, R_END] = arrive
    if arrive > wf[c, OUT_ARRIVE]:
        wf[c, OUT_ARRIVE] = arrive
    return ts, arrive, makespan if makespan >= df[d, CH_FREE] else df[d, CH_FREE]


@njit(cache=True, _nrt=False, inline="always")
def finish_start(c, d, e, w, local, free_at_e, out_bytes, wi, wf, df, di, ev_t, ev_k, counts):
    """Close the start of ``c`` on ``d``: its output's lifetime, the frees due when it ends,
    and the device's next wake-up at ``w`` if more ops are ready."""
    wi[c, OUT_REF] = local
    if local == 0:  # no local reader: the output lives until c ends or its last transfer lands
        if wf[c, OUT_ARRIVE] > e:
            free_later(d, wf[c, OUT_ARRIVE], out_bytes[c], wf, di)
        else:
            free_at_e += out_bytes[c]
    df[d, PEND_T] = e
    df[d, PEND_B] = free_at_e
    if di[d, RQ_HEAD] < di[d, RQ_TAIL] and di[d, EV_PENDING] == 0:
        di[d, EV_PENDING] = 1
        ev_push(ev_t, ev_k, counts, w, (DEVICE << SHIFT) | d)


@njit(cache=True, _nrt=False, inline="always")
def settle_all(D, wf, df, di, mr, counts, rec):
    """Apply every free still pending (the end of the simulation)."""
    for d in range(D):
        settle(np.inf, d, wf, df, di, mr, counts, rec)
