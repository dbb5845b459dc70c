"""Shared compiled pieces of the simulator kernels (numba, cached on disk).

For every kernel: the event heap and the memory accounting (allocations, frees and their log
at a memory level). For the ``placeto`` and ``default`` kernels
(``engine/sim/_kernel_placeto.py``, ``engine/sim/_kernel_default.py``): the pieces of their
shared event loop, channel bookkeeping and memory rules. Arrays, columns, event keys and
memory levels are named in :mod:`engine.sim._layout`; ``ws`` is a workspace of that module.

The event heap holds ``(time, key)`` pairs in two parallel arrays, ordered by time, then
key, so ties break deterministically (SimPy's ``(time, priority, counter)`` idea with the
priority and counter packed into one int64 key by each kernel). Every function runs without
numba's reference counting (``_nrt=False``): no allocation, and is inlined into the kernel
that calls it (``inline="always"``), so a call costs no more than the arithmetic in it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.sim import _layout as L


@njit(cache=True, _nrt=False, inline="always")
def ev_push(ev_t, ev_k, counts, t, k):
    """Add event ``(t, k)``."""
    i = counts[L.HEAP_SIZE]
    counts[L.HEAP_SIZE] = i + 1
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
    n = counts[L.HEAP_SIZE] - 1
    counts[L.HEAP_SIZE] = n
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
def record(t, d, b, ws):
    """Log one memory change: ``b`` bytes (negative: freed) on device ``d`` at time ``t``."""
    k = ws.counts[L.MEM_RECORDS]
    ws.mem_log[k, L.LOG_T] = t
    ws.mem_log[k, L.LOG_DEV] = d
    ws.mem_log[k, L.LOG_BYTES] = b
    ws.counts[L.MEM_RECORDS] = k + 1


@njit(cache=True, _nrt=False, inline="always")
def alloc(t, d, b, memory, ws):
    """Allocate ``b`` bytes on device ``d`` at ``t``: raise its peak (``memory`` >= MEM_PEAK),
    log the change (MEM_RECORD); nothing with MEM_OFF."""
    if memory != L.MEM_OFF:
        ws.dev_f[d, L.MEM] += b
        if ws.dev_f[d, L.MEM] > ws.dev_f[d, L.PEAK]:
            ws.dev_f[d, L.PEAK] = ws.dev_f[d, L.MEM]
        if memory == L.MEM_RECORD:
            record(t, d, b, ws)


@njit(cache=True, _nrt=False, inline="always")
def free(t, d, b, memory, ws):
    """Free ``b`` bytes on device ``d`` at ``t`` (log it with MEM_RECORD; nothing with MEM_OFF)."""
    if memory != L.MEM_OFF:
        ws.dev_f[d, L.MEM] -= b
        if memory == L.MEM_RECORD:
            record(t, d, -b, ws)


@njit(cache=True, _nrt=False, inline="always")
def clear(a, rows, value):
    """Set the first ``rows`` rows of the 2-d array ``a`` to ``value``."""
    for i in range(rows):
        for k in range(a.shape[1]):
            a[i, k] = value


# ==================================================================================================
# The event loop that ``placeto`` (engine/sim/_kernel_placeto.py) and ``default``
# (engine/sim/_kernel_default.py) share: per-device FIFO ready queues, one outgoing channel per
# device, and the memory accounting of CONTRACTS §4 (docs/reference/simulation.md, "What every
# mode shares").
#
# Heap keys are ``kind << KIND_SHIFT | payload``. At equal time arrivals (kind ARRIVAL) come
# before zero-time placeto transfers landing as their bus runs them (kind BUS) and before
# device starts (kind DEVICE, payload = device), as CONTRACTS §4 asks.
#
# Channels: a device's outgoing channel takes transfers in the order their producers started,
# which is the order their data becomes ready (ops on a device run one at a time), so a
# transfer starts at ``max(channel free, data ready)`` and needs no event of its own; its
# arrival does.
#
# Memory (skipped entirely with MEM_OFF): persistent bytes always; temp bytes over [start,
# end); an output over [start, max(end, ends of its consumers on that device, arrival of
# every transfer that reads it)); a received copy over [arrival, max end of its consumers
# there). A buffer whose last reader on device d is the op starting now is freed when that op
# ends; ops on d end in start order, so one pending "free at end" per device suffices. Only
# outputs still being sent when their last local reader ends go to a per-device FIFO of
# frees. Frees are applied before allocations at equal time.
# ==================================================================================================


@njit(cache=True, _nrt=False, inline="always")
def reset(g, dev, source_tie, ws):
    """Clear the workspace for one placement (input counts, device segments, persistent
    memory), then queue the sources in index order with ties ``index + source_tie``."""
    n = len(dev)
    D = g.num_devices
    op_i, op_f, dev_i, dev_f = ws.op_i, ws.op_f, ws.dev_i, ws.dev_f
    for i in range(n):
        op_i[i, L.REMAINING] = g.pred_ptr[i + 1] - g.pred_ptr[i]
        op_i[i, L.PRODUCER] = -1
        op_i[i, L.OUT_REF] = 0
        op_i[i, L.N_ROWS] = 0
        op_f[i, L.READY_AT] = 0.0
        op_f[i, L.OUT_LANDS] = 0.0
    clear(dev_f, D, 0.0)
    clear(dev_i, D + 1, 0)
    for d in range(D):
        dev_i[d, L.SEEN] = -1
    for k in range(len(ws.counts)):
        ws.counts[k] = 0
    for i in range(n):
        dev_i[dev[i], L.COUNT] += 1
        dev_i[dev[i] + 1, L.CQ_OFF] += g.succ_ptr[i + 1] - g.succ_ptr[i]  # room for its transfers
        dev_f[dev[i], L.MEM] += g.persistent[i]
    for d in range(D):
        dev_i[d + 1, L.Q_OFF] = dev_i[d, L.Q_OFF] + dev_i[d, L.COUNT]
        dev_i[d + 1, L.CQ_OFF] += dev_i[d, L.CQ_OFF]
        dev_f[d, L.PEAK] = dev_f[d, L.MEM]
    for i in range(n):
        if op_i[i, L.REMAINING] == 0:
            op_i[i, L.TIE] = i + source_tie
            enqueue(i, dev[i], 0.0, ws)


@njit(cache=True, _nrt=False, inline="always")
def free_later(d, t, b, ws):
    """Schedule a free of ``b`` bytes on device ``d`` at ``t``: device d's free FIFO, kept in
    time order by an insertion sort at the tail (pushes come almost in order)."""
    frees = ws.frees
    base = ws.dev_i[d, L.Q_OFF]
    head = base + ws.dev_i[d, L.FQ_HEAD]
    j = base + ws.dev_i[d, L.FQ_TAIL]
    ws.dev_i[d, L.FQ_TAIL] += 1
    while j > head and frees[j - 1, L.FREE_T] > t:
        frees[j, L.FREE_T] = frees[j - 1, L.FREE_T]
        frees[j, L.FREE_B] = frees[j - 1, L.FREE_B]
        j -= 1
    frees[j, L.FREE_T] = t
    frees[j, L.FREE_B] = b


@njit(cache=True, _nrt=False, inline="always")
def settle(now, d, memory, ws):
    """Apply device ``d``'s frees due by ``now``: its end-of-op free and its free FIFO."""
    dev_i, dev_f, frees = ws.dev_i, ws.dev_f, ws.frees
    if dev_f[d, L.PEND_B] != 0.0 and dev_f[d, L.PEND_T] <= now:
        free(dev_f[d, L.PEND_T], d, dev_f[d, L.PEND_B], memory, ws)
        dev_f[d, L.PEND_B] = 0.0
    base = dev_i[d, L.Q_OFF]
    while dev_i[d, L.FQ_HEAD] < dev_i[d, L.FQ_TAIL] and frees[base + dev_i[d, L.FQ_HEAD], L.FREE_T] <= now:
        k = base + dev_i[d, L.FQ_HEAD]
        free(frees[k, L.FREE_T], d, frees[k, L.FREE_B], memory, ws)
        dev_i[d, L.FQ_HEAD] += 1


@njit(cache=True, _nrt=False, inline="always")
def settle_all(D, memory, ws):
    """Apply every free still pending (the end of the simulation)."""
    for d in range(D):
        settle(np.inf, d, memory, ws)


@njit(cache=True, _nrt=False, inline="always")
def enqueue(c, d, now, ws):
    """Append ready op ``c`` to device ``d``'s FIFO in (ready time, tie) order; wake ``d`` for it.

    Ready times mostly arrive in order, so ``c`` usually stays last; it moves back past ops
    that are ready later, or at the same time with a larger tie (an insertion sort at the
    tail that never passes the head: popped slots hold -1).
    """
    ready, op_i, op_f, dev_i = ws.ready, ws.op_i, ws.op_f, ws.dev_i
    base = dev_i[d, L.Q_OFF]
    j = base + dev_i[d, L.Q_TAIL]
    dev_i[d, L.Q_TAIL] += 1
    rtc = op_f[c, L.READY_AT]
    tc = op_i[c, L.TIE]
    while j > base:
        q = ready[j - 1]
        if q < 0 or op_f[q, L.READY_AT] < rtc or (op_f[q, L.READY_AT] == rtc and op_i[q, L.TIE] < tc):
            break
        ready[j] = q
        j -= 1
    ready[j] = c
    if dev_i[d, L.EV_PENDING] == 0:
        dev_i[d, L.EV_PENDING] = 1
        w = ws.dev_f[d, L.BUSY_UNTIL]
        ev_push(ws.ev_t, ws.ev_k, ws.counts, w if w > now else now, (L.DEVICE << L.KIND_SHIFT) | d)


@njit(cache=True, _nrt=False, inline="always")
def input_arrives(x, p, t, ws):
    """Input from producer key ``p`` reaches op ``x`` at ``t``; True when ``x`` has all its
    inputs. ``op_i[x, PRODUCER]`` keeps the largest key among the latest inputs."""
    op_i, op_f = ws.op_i, ws.op_f
    if t > op_f[x, L.READY_AT]:
        op_f[x, L.READY_AT] = t
        op_i[x, L.PRODUCER] = p
    elif t == op_f[x, L.READY_AT] and p > op_i[x, L.PRODUCER]:
        op_i[x, L.PRODUCER] = p
    op_i[x, L.REMAINING] -= 1
    return op_i[x, L.REMAINING] == 0


@njit(cache=True, _nrt=False, inline="always")
def arrival_later(d, t, key, ws):
    """Schedule a transfer arrival from device ``d``'s channel.

    A channel's arrivals come in increasing time order when its links share one latency
    (each transfer starts after the previous one arrived), so they wait in a per-channel
    FIFO with only its head in the event heap; an arrival out of that order (links with
    different latencies) goes to the heap directly. Either way the heap pops it in order.
    """
    dev_i = ws.dev_i
    base = dev_i[d, L.CQ_OFF]
    head = dev_i[d, L.CQ_HEAD]
    tail = dev_i[d, L.CQ_TAIL]
    if head == tail or t > ws.chan_t[base + tail - 1]:
        ws.chan_key[base + tail] = key
        ws.chan_t[base + tail] = t
        dev_i[d, L.CQ_TAIL] = tail + 1
        if head == tail:
            ev_push(ws.ev_t, ws.ev_k, ws.counts, t, key)
    else:
        ev_push(ws.ev_t, ws.ev_k, ws.counts, t, key)


@njit(cache=True, _nrt=False, inline="always")
def arrival_popped(d, key, ws):
    """An arrival from device ``d``'s channel left the heap: if it was its FIFO's head, the
    next one in the FIFO enters the heap."""
    dev_i = ws.dev_i
    cq = dev_i[d, L.CQ_OFF] + dev_i[d, L.CQ_HEAD]
    if dev_i[d, L.CQ_HEAD] < dev_i[d, L.CQ_TAIL] and ws.chan_key[cq] == key:
        dev_i[d, L.CQ_HEAD] += 1
        if dev_i[d, L.CQ_HEAD] < dev_i[d, L.CQ_TAIL]:
            ev_push(ws.ev_t, ws.ev_k, ws.counts, ws.chan_t[cq + 1], ws.chan_key[cq + 1])


@njit(cache=True, _nrt=False, inline="always")
def land_copies(t, p, dst, memory, ws):
    """The copies of ``p``'s output for device ``dst`` (-1: every destination) land at ``t``."""
    first = ws.op_i[p, L.FIRST_ROW]
    for r in range(first, first + ws.op_i[p, L.N_ROWS]):
        dd = ws.row_i[r, L.R_DST]
        if dst < 0 or dd == dst:
            settle(t, dd, memory, ws)
            alloc(t, dd, ws.row_f[r, L.R_BYTES], memory, ws)


@njit(cache=True, _nrt=False, inline="always")
def start_next(t, d, g, dur, ws):
    """Device ``d`` starts the head of its ready FIFO at ``t``. Returns ``(op, end, free at)``:
    free at = end + δ1 for a non-zero op (Placeto App. A.5)."""
    dev_i = ws.dev_i
    dev_i[d, L.EV_PENDING] = 0
    slot = dev_i[d, L.Q_OFF] + dev_i[d, L.Q_HEAD]
    c = ws.ready[slot]
    ws.ready[slot] = -1
    dev_i[d, L.Q_HEAD] += 1
    e = t + dur[c]
    w = e + g.op_overhead if dur[c] > 0 else e
    ws.op_f[c, L.START] = t
    ws.op_f[c, L.END] = e
    ws.dev_f[d, L.BUSY] += dur[c]
    ws.dev_f[d, L.BUSY_UNTIL] = w
    return c, e, w


@njit(cache=True, _nrt=False, inline="always")
def hold(t, c, d, e, g, dev, memory, ws):
    """Memory as ``c`` starts on ``d`` at ``t`` (ending at ``e``): frees due, then its temp
    bytes and output allocated. Returns the bytes freed when it ends (:func:`release_inputs`)."""
    settle(t, d, memory, ws)
    if g.temp[c] > 0:
        alloc(t, d, g.temp[c], memory, ws)
    if g.out_bytes[c] > 0:
        alloc(t, d, g.out_bytes[c], memory, ws)
    return release_inputs(c, d, e, g, dev, ws)


@njit(cache=True, _nrt=False, inline="always")
def release_inputs(c, d, e, g, dev, ws):
    """Op ``c`` (on ``d``, ending at ``e``) is the last reader of some inputs: local outputs
    and received copies. Returns the bytes freed when ``c`` ends (its temp bytes first);
    outputs still being sent then are freed when their last transfer lands."""
    op_i, row_i = ws.op_i, ws.row_i
    free_at_e = g.temp[c]
    for k in range(g.pred_ptr[c], g.pred_ptr[c + 1]):
        p = g.pred_idx[k]
        if dev[p] == d:
            op_i[p, L.OUT_REF] -= 1
            if op_i[p, L.OUT_REF] == 0:
                if ws.op_f[p, L.OUT_LANDS] > e:
                    free_later(d, ws.op_f[p, L.OUT_LANDS], g.out_bytes[p], ws)
                else:
                    free_at_e += g.out_bytes[p]
        else:
            for r in range(op_i[p, L.FIRST_ROW], op_i[p, L.FIRST_ROW] + op_i[p, L.N_ROWS]):
                if row_i[r, L.R_DST] == d:
                    row_i[r, L.R_REF] -= 1
                    if row_i[r, L.R_REF] == 0:
                        free_at_e += ws.row_f[r, L.R_BYTES]
                    break
    return free_at_e


@njit(cache=True, _nrt=False, inline="always")
def remote_consumer(c, dx, ws):
    """Count a consumer of ``c`` on device ``dx``; returns 1 for the first one there, else 0
    (then the device's per-output maxima DBYTES / DGT / DBNT are reset)."""
    dev_i, dev_f = ws.dev_i, ws.dev_f
    new = 0
    if dev_i[dx, L.SEEN] != c:
        dev_i[dx, L.SEEN] = c
        dev_f[dx, L.DBYTES] = 0.0
        dev_f[dx, L.DGT] = -1.0
        dev_f[dx, L.DBNT] = -1.0
        dev_i[dx, L.DCOUNT] = 0
        new = 1
    dev_i[dx, L.DCOUNT] += 1
    return new


@njit(cache=True, _nrt=False, inline="always")
def open_rows(c, d, D, ws):
    """One transfer row per device that holds consumers of ``c`` (by device index), with the
    largest bytes among its edges. Returns the rows ``(first, end)``."""
    row_i, dev_i = ws.row_i, ws.dev_i
    row0 = nrows = ws.counts[L.ROWS]
    for dd in range(D):
        if dev_i[dd, L.SEEN] == c and dd != d:
            row_i[nrows, L.R_OP] = c
            row_i[nrows, L.R_SRC] = d
            row_i[nrows, L.R_DST] = dd
            row_i[nrows, L.R_REF] = dev_i[dd, L.DCOUNT]
            row_i[nrows, L.R_PRIMARY] = 1
            ws.row_f[nrows, L.R_BYTES] = ws.dev_f[dd, L.DBYTES]
            nrows += 1
    ws.op_i[c, L.FIRST_ROW] = row0
    ws.op_i[c, L.N_ROWS] = nrows - row0
    ws.counts[L.ROWS] = nrows
    return row0, nrows


@njit(cache=True, _nrt=False, inline="always")
def send(c, d, e, xfer, lat, gap, r_lo, r_hi, ws):
    """Device ``d``'s channel sends rows ``r_lo:r_hi`` of ``c``'s output (ready at ``e``) as one
    transfer: it starts when the channel is free, holds it ``xfer + gap`` (δ2) and lands
    ``lat + xfer`` after its start. Returns ``(start, arrival)``."""
    dev_f = ws.dev_f
    free_at = dev_f[d, L.CH_FREE]
    ts = free_at if free_at > e else e
    arrive = ts + lat + xfer
    dev_f[d, L.CH_FREE] = ts + xfer + gap
    dev_f[d, L.MEMCPY] += xfer
    for r in range(r_lo, r_hi):
        ws.row_f[r, L.R_START] = ts
        ws.row_f[r, L.R_END] = arrive
    if arrive > ws.op_f[c, L.OUT_LANDS]:
        ws.op_f[c, L.OUT_LANDS] = arrive
    return ts, arrive


@njit(cache=True, _nrt=False, inline="always")
def finish_start(c, d, e, w, local, free_at_e, g, memory, ws):
    """Close the start of ``c`` on ``d``: its output's lifetime and the frees due when it ends
    (unless MEM_OFF), and the device's next wake-up at ``w`` if more ops are ready."""
    if memory != L.MEM_OFF:
        ws.op_i[c, L.OUT_REF] = local
        if local == 0:  # no local reader: the output lives until c ends or its last transfer lands
            if ws.op_f[c, L.OUT_LANDS] > e:
                free_later(d, ws.op_f[c, L.OUT_LANDS], g.out_bytes[c], ws)
            else:
                free_at_e += g.out_bytes[c]
        ws.dev_f[d, L.PEND_T] = e
        ws.dev_f[d, L.PEND_B] = free_at_e
    dev_i = ws.dev_i
    if dev_i[d, L.Q_HEAD] < dev_i[d, L.Q_TAIL] and dev_i[d, L.EV_PENDING] == 0:
        dev_i[d, L.EV_PENDING] = 1
        ev_push(ws.ev_t, ws.ev_k, ws.counts, w, (L.DEVICE << L.KIND_SHIFT) | d)


@njit(cache=True, _nrt=False, inline="always")
def tie_now(n, ws):
    """The producer key of an input created while its instant is processed: ``n`` + a counter
    of such inputs, so it comes after every input queued before (placeto's tie rule)."""
    k = ws.counts[L.TIE_SEQ]
    ws.counts[L.TIE_SEQ] = k + 1
    return n + k
