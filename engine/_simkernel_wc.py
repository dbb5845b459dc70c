"""The compiled kernel of the ``work_conserving`` mode of :mod:`engine.simulator` (numba).

DOPPLER §2, Algorithms 1–2 (Yao et al. 2025): a single-threaded event loop that starts an
op as soon as its inputs are on its device and its device is free, and a transfer as soon
as its data exists (and, with contention, its channel is free). The semantics, options and
their sources are in ``engine/simulator.py`` and ``docs/reference/simulation.md``; the plain-Python
reference that the property tests hold this kernel to is ``engine/reference_sim_wc.py``.

Events
------
Heap entries are ``(time, key)`` with ``key = seq << 32 | kind << 30 | payload``: ``seq``
counts the events created so far, so events at equal times are handled in the order they
were created (the tie rule of the authors' simulator). Kinds: an op ends (payload = op), a
transfer lands (payload = transfer row). An output reaches consumers on its own device at
once, while its op's end is handled: they ask for the device before it picks its next op.

Speed
-----
As in :mod:`engine._simkernel_placeto`: no reference counting, nothing allocated (a
:class:`Workspace` per graph and cluster), helpers inlined (~25 % faster than calls on
random placements), numpy's error model.

Queues
------
Each device's requests live in its own segment of ``q`` (segment sizes = ops placed there):
a FIFO ring for ``choose=FIFO``, a binary heap keyed by (−priority, request number) for
``choose=PRIORITY``. Each channel (one per device, or one per ordered device pair) is a
linked list of transfer rows through ``rnext``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine._simcore import HEAP_SIZE, MEM_RECORDS, ev_pop, ev_push, record

FIFO, PRIORITY = 0, 1
NO_CONTENTION, PER_DEVICE, PER_LINK = 0, 1, 2
END, LAND, FREE, COPIED = 0, 1, 2, 3
NO_SENDER_COPIES, SENDER_COPIES, SHARED_BUS = 0, 1, 2
_SEQ = 32
_KIND = 30
_PAYLOAD = (1 << _KIND) - 1

# per op, int64 [n, 3]: inputs still to come, holders of its output, request number
_REMAIN, _OUT_REF, _RSEQ = range(3)
# per device, float64 [D, 4]: memory in use, peak, compute seconds, channel seconds
_MEM, _PEAK, _BUSY, _MEMCPY = range(4)
# per device, int64 [D, 6]: queue offset, head, tail (FIFO) / size (heap), running op, stalled, count
_QOFF, _QHEAD, _QTAIL, _RUNNING, _STALLED, _CNT = range(6)
# transfer rows: int64 [m, 4] (op, src, dst, edge); float64 [m, 4] (bytes, start, end, duration)
_R_OP, _R_SRC, _R_DST, _R_EDGE = range(4)
_R_BYTES, _R_START, _R_END, _R_TIME = range(4)
# copies on the sender, per device: int64 [D, 3] (first and last queued row, row being copied or -1);
# float64 [D, 4] (its time still to go at full speed, when that was counted, when it ends, overhead after)
_C_HEAD, _C_TAIL, _C_ROW = range(3)
_C_LEFT, _C_SINCE, _C_END, _C_AFTER = range(4)


class Workspace:
    """Every array the kernel uses, sized for one graph and cluster (allocated once)."""

    def __init__(self, n: int, m: int, num_devices: int, record_memory: bool, shared_bus: bool = False) -> None:
        d = num_devices
        # a copy end is rescheduled whenever a copy on another device starts or ends (shared bus)
        events = n + m + d + 8 + (2 * d * m if shared_bus else 0)
        self.oi = np.zeros((n, 3), np.int64)
        self.of = np.zeros((n, 2))  # start, end
        self.q = np.zeros(n, np.int64)
        self.ri = np.zeros((max(m, 1), 4), np.int64)
        self.rf = np.zeros((max(m, 1), 4))
        self.rnext = np.zeros(max(m, 1), np.int64)
        self.row_of_edge = np.zeros(max(m, 1), np.int64)
        self.ch = np.zeros((d * d, 3), np.int64)  # head row, tail row, busy
        self.ev_t = np.zeros(events)  # ops, transfers, one FREE per device
        self.ev_k = np.zeros(events, np.int64)
        self.ci = np.zeros((d, 3), np.int64)
        self.cf = np.zeros((d, 4))
        self.mr = np.zeros(((3 * n + 2 * m + 8) if record_memory else 1, 3))
        self.df = np.zeros((d, 4))
        self.di = np.zeros((d, 6), np.int64)
        self.counts = np.zeros(3, np.int64)  # heap size, memory records, event sequence
        self.record_memory = record_memory


@njit(cache=True, _nrt=False, inline="always")
def _push(ev_t, ev_k, counts, t, kind, payload):
    seq = counts[2]
    counts[2] = seq + 1
    ev_push(ev_t, ev_k, counts, t, (seq << _SEQ) | (kind << _KIND) | payload)


@njit(cache=True, _nrt=False, inline="always")
def _alloc(t, d, b, df, mr, counts, rec):
    """Allocate ``b`` bytes on device ``d`` (``rec``: 0 memory not tracked, 1 peak only, 2 every change)."""
    if rec > 0 and b > 0:
        df[d, _MEM] += b
        if df[d, _MEM] > df[d, _PEAK]:
            df[d, _PEAK] = df[d, _MEM]
        if rec == 2:
            record(mr, counts, t, d, b)


@njit(cache=True, _nrt=False, inline="always")
def _free(t, d, b, df, mr, counts, rec):
    if rec > 0 and b > 0:
        df[d, _MEM] -= b
        if rec == 2:
            record(mr, counts, t, d, -b)


@njit(cache=True, _nrt=False, inline="always")
def _before(a, b, prio, oi):
    """True when op ``a`` is served before op ``b`` (higher priority, then earlier request)."""
    return prio[a] > prio[b] or (prio[a] == prio[b] and oi[a, _RSEQ] < oi[b, _RSEQ])


@njit(cache=True, _nrt=False, inline="always")
def _heap_fix(q, off, size, i, prio, oi):
    """Restore the heap order below slot ``i`` of a device's segment."""
    x = q[off + i]
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and _before(q[off + c + 1], q[off + c], prio, oi):
            c += 1
        if _before(q[off + c], x, prio, oi):
            q[off + i] = q[off + c]
            i = c
        else:
            break
    q[off + i] = x


@njit(cache=True, _nrt=False, inline="always")
def _request(c, d, q, di, prio, oi, choose):
    """Op ``c`` asks for device ``d``: join its queue."""
    off = di[d, _QOFF]
    if choose == FIFO:
        q[off + di[d, _QTAIL]] = c
        di[d, _QTAIL] += 1
        return
    i = di[d, _QTAIL]
    di[d, _QTAIL] = i + 1
    while i > 0:
        par = (i - 1) >> 1
        if not _before(c, q[off + par], prio, oi):
            break
        q[off + i] = q[off + par]
        i = par
    q[off + i] = c


@njit(cache=True, _nrt=False, inline="always")
def _take(d, q, di, df, prio, oi, choose, fits_only, need, capacity):
    """Remove and return the op that device ``d`` serves next, or -1.

    With ``fits_only`` the first op in serving order whose temp + output bytes fit in the
    device's free memory (the others keep their places); without, the first op.
    """
    off = di[d, _QOFF]
    if choose == FIFO:
        h = di[d, _QHEAD]
        tail = di[d, _QTAIL]
        j = h
        if fits_only:
            while j < tail and df[d, _MEM] + need[q[off + j]] > capacity[d]:
                j += 1
        if j >= tail:
            return -1
        c = q[off + j]
        while j > h:  # close the gap: the ops it passed keep their order
            q[off + j] = q[off + j - 1]
            j -= 1
        di[d, _QHEAD] = h + 1
        return c
    size = di[d, _QTAIL]
    best = -1
    if fits_only:
        for j in range(size):
            x = q[off + j]
            if df[d, _MEM] + need[x] <= capacity[d] and (best < 0 or _before(x, q[off + best], prio, oi)):
                best = j
    elif size > 0:
        best = 0
    if best < 0:
        return -1
    c = q[off + best]
    size -= 1
    di[d, _QTAIL] = size
    if best < size:  # move the last entry into the hole, then sift it up or down
        q[off + best] = q[off + size]
        i = best
        while i > 0 and _before(q[off + i], q[off + ((i - 1) >> 1)], prio, oi):
            par = (i - 1) >> 1
            x = q[off + i]
            q[off + i] = q[off + par]
            q[off + par] = x
            i = par
        _heap_fix(q, off, size, i, prio, oi)
    return c


@njit(cache=True, _nrt=False, inline="always")
def _serve(t, d, dur, temp, out_bytes, q, di, df, oi, of, prio, choose, memory_aware, need, capacity,
           ev_t, ev_k, mr, counts, rec):
    """If device ``d`` is free, start the next op it serves at time ``t``."""
    if di[d, _RUNNING] != -1:  # running an op (>= 0) or busy after one (-2)
        return
    c = _take(d, q, di, df, prio, oi, choose, memory_aware, need, capacity)
    if c < 0:
        return
    di[d, _RUNNING] = c
    of[c, 0] = t
    of[c, 1] = t + dur[c]
    df[d, _BUSY] += dur[c]
    _alloc(t, d, temp[c], df, mr, counts, rec)
    _alloc(t, d, out_bytes[c], df, mr, counts, rec)
    _push(ev_t, ev_k, counts, t + dur[c], END, c)


@njit(cache=True, _nrt=False, inline="always")
def _start_transfer(t, r, ri, rf, df, ev_t, ev_k, counts):
    rf[r, _R_START] = t
    rf[r, _R_END] = t + rf[r, _R_TIME]
    df[ri[r, _R_SRC], _MEMCPY] += rf[r, _R_TIME]
    _push(ev_t, ev_k, counts, rf[r, _R_END], LAND, r)


@njit(cache=True, _nrt=False, inline="always")
def _release_output(t, p, dev, out_bytes, oi, df, mr, counts, rec):
    """One holder of op ``p``'s output let go of it; the last frees it."""
    if rec == 0:
        return
    oi[p, _OUT_REF] -= 1
    if oi[p, _OUT_REF] == 0:
        _free(t, dev[p], out_bytes[p], df, mr, counts, rec)


@njit(cache=True, _nrt=False, inline="always")
def _bus_rate(D, ci, shared, capacity):
    """The speed of each copy in progress: ``k`` copies on a bus of ``capacity`` move at ``capacity / k``, at most 1."""
    k = 0
    for a in range(D):
        if ci[a, _C_ROW] >= 0:
            k += 1
    return capacity / k if shared and k > capacity else 1.0


@njit(cache=True, _nrt=False, inline="always")
def _bus_share(t, D, ci, cf, shared, capacity):
    """Count the copies in progress up to ``t``, each at the bus's current rate."""
    rate = _bus_rate(D, ci, shared, capacity)
    for a in range(D):
        if ci[a, _C_ROW] >= 0:
            left = cf[a, _C_LEFT] - (t - cf[a, _C_SINCE]) * rate
            cf[a, _C_LEFT] = left if left > 0.0 else 0.0
            cf[a, _C_SINCE] = t


@njit(cache=True, _nrt=False, inline="always")
def _bus_reschedule(t, D, ci, cf, shared, capacity, ev_t, ev_k, counts):
    """Give every copy in progress its end at the current rate; push the ends that moved."""
    rate = _bus_rate(D, ci, shared, capacity)
    for a in range(D):
        r = ci[a, _C_ROW]
        if r >= 0:
            end = t + cf[a, _C_LEFT] / rate
            if end != cf[a, _C_END]:
                cf[a, _C_END] = end
                _push(ev_t, ev_k, counts, end, COPIED, r)


@njit(cache=True, _nrt=False, inline="always")
def _start_copy(t, d, ci, cf, rf, rnext):
    """Start device ``d``'s next queued copy at ``t`` (there is one); returns its row."""
    r = ci[d, _C_HEAD]
    ci[d, _C_HEAD] = rnext[r]
    if rnext[r] < 0:
        ci[d, _C_TAIL] = -1
    ci[d, _C_ROW] = r
    cf[d, _C_LEFT] = rf[r, _R_TIME]
    cf[d, _C_SINCE] = t
    rf[r, _R_START] = t
    return r


@njit(cache=True, _nrt=False, error_model="numpy")
def simulate_wc(
    num_devices, out_ptr, out_edge, pred_ptr, pred_edge, edge_src, edge_dst,
    edge_bytes, edge_given, edge_noise, bandwidth, latency, out_bytes, persistent, temp, need, capacity,
    dev, dur, prio, choose, contention, memory_aware, memory, overhead, sender_copies, bus_capacity,
    oi, of, q, ri, rf, rnext, row_of_edge, ch, ev_t, ev_k, mr, df, di, counts, ci, cf,
):
    """Simulate one placement; results are left in the workspace arrays.

    ``out_ptr`` / ``out_edge`` list each op's out-edges in the order the source listed them.
    A transfer along edge ``e`` takes ``edge_given[e]`` (NaN: latency + bytes / bandwidth of
    the link) times ``edge_noise[e]``. ``prio`` is only read with ``choose=PRIORITY``;
    ``need`` (temp + output bytes per op) only with ``memory_aware``. ``memory``: 0 = no
    memory tracking (op and transfer times only: the makespan-only call), 1 = peaks,
    2 = peaks and every change recorded (must be >= 1 with ``memory_aware``).
    ``overhead``: seconds a device stays busy after each op with non-zero time; ``sender_copies``
    (``SENDER_COPIES`` or ``SHARED_BUS``): transfers occupy their source device, one after another
    right after the producer ends, one per (producer, destination device) (further edges to the same
    device land with the first copy, which takes the longest of their times: bytes / bandwidth or
    the given time, without the latency); a copy's row is its time on the sender and it lands the
    link's latency later, in flight (further edges' rows: zero length at the landing); with
    ``SHARED_BUS`` the copies in progress on all devices share one bus: ``k`` of them each move at
    ``bus_capacity / k`` of their speed when ``k > bus_capacity``. Channels are then not used.
    Returns ``(makespan, transfer rows, memory records, ops run)``.
    """
    n = len(dur)
    D = num_devices
    rec = memory
    # ---------------------------------------------------------------- reset the workspace
    for d in range(D):
        for k in range(df.shape[1]):
            df[d, k] = 0.0
        for k in range(di.shape[1]):
            di[d, k] = 0
        di[d, _RUNNING] = -1
    for k in range(D * D):
        ch[k, 0] = -1
        ch[k, 1] = -1
        ch[k, 2] = 0
    for d in range(D):
        ci[d, _C_HEAD] = -1
        ci[d, _C_TAIL] = -1
        ci[d, _C_ROW] = -1
        cf[d, _C_END] = -1.0
    shared = sender_copies == SHARED_BUS
    counts[HEAP_SIZE] = 0
    counts[MEM_RECORDS] = 0
    counts[2] = 0
    for i in range(n):
        d = dev[i]
        di[d, _CNT] += 1
        df[d, _MEM] += persistent[i]
        oi[i, _REMAIN] = pred_ptr[i + 1] - pred_ptr[i]
        oi[i, _OUT_REF] = 1 + out_ptr[i + 1] - out_ptr[i]  # itself, and every consumer or transfer
        of[i, 0] = np.nan
        of[i, 1] = np.nan
    off = 0
    for d in range(D):
        di[d, _QOFF] = off
        off += di[d, _CNT]
        df[d, _PEAK] = df[d, _MEM]
    nrows = 0
    done = 0
    makespan = 0.0
    # ---------------------------------------------------------------- ops with no inputs, in op order
    for i in range(n):
        if oi[i, _REMAIN] == 0:
            oi[i, _RSEQ] = counts[2]
            counts[2] += 1
            _request(i, dev[i], q, di, prio, oi, choose)
            _serve(0.0, dev[i], dur, temp, out_bytes, q, di, df, oi, of, prio, choose, memory_aware,
                   need, capacity, ev_t, ev_k, mr, counts, rec)
    # ---------------------------------------------------------------- main loop
    while counts[HEAP_SIZE] > 0:
        t, key = ev_pop(ev_t, ev_k, counts)
        kind = (key >> _KIND) & 3
        payload = key & _PAYLOAD
        if kind == END:  # an op ends: free what it held, hand its output over, serve its device
            c = payload
            d = dev[c]
            done += 1
            if t > makespan:
                makespan = t
            di[d, _RUNNING] = -1
            _free(t, d, temp[c], df, mr, counts, rec)
            _release_output(t, c, dev, out_bytes, oi, df, mr, counts, rec)
            for k in range(pred_ptr[c], pred_ptr[c + 1] if rec > 0 else 0):  # inputs: copies, local outputs
                e = pred_edge[k]
                p = edge_src[e]
                if dev[p] == d:
                    _release_output(t, p, dev, out_bytes, oi, df, mr, counts, rec)
                else:
                    _free(t, d, rf[row_of_edge[e], _R_BYTES], df, mr, counts, rec)
            for k in range(out_ptr[c], out_ptr[c + 1]):  # its outputs, in the source's edge order
                e = out_edge[k]
                x = edge_dst[e]
                dx = dev[x]
                if dx == d:  # handed over at once; the device chooses once all have asked
                    oi[x, _REMAIN] -= 1
                    if oi[x, _REMAIN] == 0:
                        oi[x, _RSEQ] = counts[2]
                        counts[2] += 1
                        _request(x, d, q, di, prio, oi, choose)
                    continue
                r = nrows
                nrows += 1
                row_of_edge[e] = r
                ri[r, _R_OP] = c
                ri[r, _R_SRC] = d
                ri[r, _R_DST] = dx
                ri[r, _R_EDGE] = e
                rf[r, _R_BYTES] = edge_bytes[e]
                tt = edge_given[e]
                if tt != tt:  # with copies on the sender the latency is in flight, not in the row
                    tt = edge_bytes[e] / bandwidth[d, dx] + (0.0 if sender_copies else latency[d, dx])
                rf[r, _R_TIME] = tt * edge_noise[e]
                rnext[r] = -1
                if sender_copies:  # the row is the sender's copy; it lands the link's latency after
                    first = -1  # an earlier out-edge of c to the same device: its copy serves e too
                    for k2 in range(out_ptr[c], k):
                        e2 = out_edge[k2]
                        if dev[edge_dst[e2]] == dx:
                            first = row_of_edge[e2]
                            break
                    if first >= 0:  # lands with that copy (see COPIED)
                        rf[r, _R_TIME] = 0.0
                        continue
                    for k2 in range(k + 1, out_ptr[c + 1]):  # the copy carries the largest of them
                        e2 = out_edge[k2]
                        if dev[edge_dst[e2]] == dx:
                            t2 = edge_given[e2]
                            if t2 != t2:
                                t2 = edge_bytes[e2] / bandwidth[d, dx]
                            t2 *= edge_noise[e2]
                            if t2 > rf[r, _R_TIME]:
                                rf[r, _R_TIME] = t2
                    if ci[d, _C_TAIL] < 0:  # queue it behind the op's earlier copies
                        ci[d, _C_HEAD] = r
                    else:
                        rnext[ci[d, _C_TAIL]] = r
                    ci[d, _C_TAIL] = r
                    continue
                if contention == NO_CONTENTION:
                    _start_transfer(t, r, ri, rf, df, ev_t, ev_k, counts)
                    continue
                chan = d if contention == PER_DEVICE else d * D + dx
                if ch[chan, 2] == 0:
                    ch[chan, 2] = 1
                    _start_transfer(t, r, ri, rf, df, ev_t, ev_k, counts)
                elif ch[chan, 0] < 0:
                    ch[chan, 0] = r
                    ch[chan, 1] = r
                else:
                    rnext[ch[chan, 1]] = r
                    ch[chan, 1] = r
            if ci[d, _C_HEAD] >= 0:  # copies first, then the overhead (see COPIED)
                di[d, _RUNNING] = -2
                cf[d, _C_AFTER] = overhead if dur[c] > 0 else 0.0
                _bus_share(t, D, ci, cf, shared, bus_capacity)  # d copies nothing yet: the others' share
                _start_copy(t, d, ci, cf, rf, rnext)
                _bus_reschedule(t, D, ci, cf, shared, bus_capacity, ev_t, ev_k, counts)
                continue
            if dur[c] > 0 and overhead > 0:  # busy with its overhead: the device serves again after it
                di[d, _RUNNING] = -2
                _push(ev_t, ev_k, counts, t + overhead, FREE, d)
                continue
            _serve(t, d, dur, temp, out_bytes, q, di, df, oi, of, prio, choose, memory_aware,
                   need, capacity, ev_t, ev_k, mr, counts, rec)
            continue
        if kind == FREE:  # a device is done with its copies and overhead
            d = payload
            di[d, _RUNNING] = -1
            _serve(t, d, dur, temp, out_bytes, q, di, df, oi, of, prio, choose, memory_aware,
                   need, capacity, ev_t, ev_k, mr, counts, rec)
            continue
        if kind == COPIED:  # a copy on its sender may be done (its end may have moved since)
            r = payload
            d = ri[r, _R_SRC]
            if ci[d, _C_ROW] != r or cf[d, _C_END] != t:
                continue
            _bus_share(t, D, ci, cf, shared, bus_capacity)
            ci[d, _C_ROW] = -1
            cf[d, _C_END] = -1.0
            rf[r, _R_END] = t
            df[d, _MEMCPY] += t - rf[r, _R_START]
            dx = ri[r, _R_DST]
            land = t + latency[d, dx]
            _push(ev_t, ev_k, counts, land, LAND, r)
            c = ri[r, _R_OP]
            e = ri[r, _R_EDGE]
            for k in range(out_ptr[c], out_ptr[c + 1]):  # the op's later edges to dx land with it
                e2 = out_edge[k]
                if e2 != e and dev[edge_dst[e2]] == dx and row_of_edge[e2] > r:
                    r2 = row_of_edge[e2]
                    rf[r2, _R_START] = land
                    rf[r2, _R_END] = land
                    _push(ev_t, ev_k, counts, land, LAND, r2)
            more = ci[d, _C_HEAD] >= 0
            if more:  # the op's next copy
                _start_copy(t, d, ci, cf, rf, rnext)
            _bus_reschedule(t, D, ci, cf, shared, bus_capacity, ev_t, ev_k, counts)
            if more:
                continue
            if cf[d, _C_AFTER] > 0:
                _push(ev_t, ev_k, counts, t + cf[d, _C_AFTER], FREE, d)
                continue
            di[d, _RUNNING] = -1
            _serve(t, d, dur, temp, out_bytes, q, di, df, oi, of, prio, choose, memory_aware,
                   need, capacity, ev_t, ev_k, mr, counts, rec)
            continue
        # a transfer lands: its channel takes the next one, then the copy is handed over
        r = payload
        src = ri[r, _R_SRC]
        dx = ri[r, _R_DST]
        if contention != NO_CONTENTION and not sender_copies:
            chan = src if contention == PER_DEVICE else src * D + dx
            nxt = ch[chan, 0]
            if nxt < 0:
                ch[chan, 2] = 0
            else:
                ch[chan, 0] = rnext[nxt]
                if rnext[nxt] < 0:
                    ch[chan, 1] = -1
                _start_transfer(t, nxt, ri, rf, df, ev_t, ev_k, counts)
        _alloc(t, dx, rf[r, _R_BYTES], df, mr, counts, rec)
        _release_output(t, ri[r, _R_OP], dev, out_bytes, oi, df, mr, counts, rec)
        if memory_aware and out_bytes[ri[r, _R_OP]] > 0:  # memory freed on src: it may fit now
            _serve(t, src, dur, temp, out_bytes, q, di, df, oi, of, prio, choose, memory_aware,
                   need, capacity, ev_t, ev_k, mr, counts, rec)
        x = edge_dst[ri[r, _R_EDGE]]
        oi[x, _REMAIN] -= 1
        if oi[x, _REMAIN] == 0:
            oi[x, _RSEQ] = counts[2]
            counts[2] += 1
            _request(x, dev[x], q, di, prio, oi, choose)
            _serve(t, dev[x], dur, temp, out_bytes, q, di, df, oi, of, prio, choose, memory_aware,
                   need, capacity, ev_t, ev_k, mr, counts, rec)
    if done < n:  # ops left waiting for memory that is never freed: a deadlock
        for d in range(D):
            waiting = di[d, _QTAIL] - (di[d, _QHEAD] if choose == FIFO else 0)
            if waiting > 0:
                di[d, _STALLED] = 1
    return makespan, nrows, counts[MEM_RECORDS], done
