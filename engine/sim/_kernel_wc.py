"""The compiled kernel of the ``work_conserving`` mode of :mod:`engine.sim.simulator` (numba).

DOPPLER §2, Algorithms 1–2 (Yao et al. 2025): a single-threaded event loop that starts an
op as soon as its inputs are on its device and its device is free, and a transfer as soon
as its data exists (and, with contention, its channel is free). The semantics, options and
their sources are in ``engine/sim/simulator.py`` and ``docs/reference/simulation.md``
(``work_conserving``); the plain-Python reference that the property tests hold this kernel
to is ``engine/sim/reference_wc.py``. It runs on the shared core (:mod:`engine.sim._core`:
event heap, memory accounting) with the arrays, columns and codes of
:mod:`engine.sim._layout` (``L``); speed tricks as in :mod:`engine.sim._kernel_placeto`
(helpers and handlers inlined: faster than calls, docs/lab/2026-11-26-simulator-kernel-layout.md).

Events: heap keys are ``seq << SEQ_SHIFT | kind << WC_KIND_SHIFT | payload``; ``seq`` counts
the events created so far, so events at equal times are handled in the order they were
created (the tie rule of the authors' simulator). An op ends (OP_ENDS, payload = op), a
transfer lands (LANDS, row; INPUT_LANDS, consumer: a transfer without a row, in the makespan-only
call without contention or sender copies), a device is done with its copies and overhead
(DEVICE_FREE, device), a copy on its sender may be done (COPIED, row). An output reaches consumers on
its own device at once, while its op's end is handled: they ask for the device before it
picks its next op.

Queues (each device's requests, channels, copies): :mod:`engine.sim._kernel_wc_queues`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.sim import _core as core
from engine.sim import _kernel_wc_queues as queues
from engine.sim import _layout as L


@njit(cache=True, _nrt=False, inline="always")
def _push(t, kind, payload, ws):
    """Add an event of ``kind``; it comes after every event created before it at ``t``."""
    seq = ws.counts[L.EVENT_SEQ]
    ws.counts[L.EVENT_SEQ] = seq + 1
    core.ev_push(ws.ev_t, ws.ev_k, ws.counts, t, (seq << L.SEQ_SHIFT) | (kind << L.WC_KIND_SHIFT) | payload)


@njit(cache=True, _nrt=False, inline="always")
def _serve(t, d, g, dur, prio, memory, ws):
    """If device ``d`` is free, start the op it serves next at ``t`` (``choose``): its temp
    bytes and output are allocated, its end is an event."""
    if ws.dev_i[d, L.RUNNING] != -1:  # running an op (>= 0) or busy after one (-2)
        return
    c = queues.take_fifo(d, g, ws) if g.choose == L.FIFO else queues.take_priority(d, g, prio, ws)
    if c < 0:
        return
    ws.dev_i[d, L.RUNNING] = c
    ws.op_f[c, L.START] = t
    ws.op_f[c, L.END] = t + dur[c]
    ws.dev_f[d, L.BUSY] += dur[c]
    if memory != L.MEM_OFF:
        if g.temp[c] > 0:
            core.alloc(t, d, g.temp[c], memory, ws)
        if g.out_bytes[c] > 0:
            core.alloc(t, d, g.out_bytes[c], memory, ws)
    _push(t + dur[c], L.OP_ENDS, c, ws)


@njit(cache=True, _nrt=False, inline="always")
def _let_go(t, p, g, dev, memory, ws):
    """One holder of op ``p``'s output (itself, a local consumer, a transfer) let go of it;
    the last frees it."""
    ws.op_i[p, L.OUT_REF] -= 1
    if ws.op_i[p, L.OUT_REF] == 0 and g.out_bytes[p] > 0:
        core.free(t, dev[p], g.out_bytes[p], memory, ws)


@njit(cache=True, _nrt=False, inline="always")
def _free_held(t, c, d, g, dev, memory, ws):
    """Op ``c`` ended on ``d``: its temp bytes, its hold on its output and on its inputs (local
    outputs, received copies) are let go."""
    if g.temp[c] > 0:
        core.free(t, d, g.temp[c], memory, ws)
    _let_go(t, c, g, dev, memory, ws)
    for k in range(g.pred_ptr[c], g.pred_ptr[c + 1]):
        p = g.pred_src[k]
        if dev[p] == d:
            _let_go(t, p, g, dev, memory, ws)
        else:  # the copy along this in-edge: the edge's bytes (its row's R_BYTES)
            b = g.edge_bytes[g.pred_edge[k]]
            if b > 0:
                core.free(t, d, b, memory, ws)


@njit(cache=True, _nrt=False, inline="always")
def _edge_time(e, d, dx, g, noise):
    """The time of a transfer along edge ``e`` from ``d`` to ``dx``: the edge's given time, or
    latency + bytes / bandwidth (rule 3 of ``work_conserving``; without the latency when the
    sender copies: it is in flight then, ``copy_occupies_sender``), times the edge's noise."""
    tt = g.edge_given[e]
    if tt != tt:
        tt = g.edge_bytes[e] / g.bandwidth[d, dx] + (0.0 if g.sender_copies != L.NO_SENDER_COPIES else g.latency[d, dx])
    return tt * noise[e]


@njit(cache=True, _nrt=False, inline="always")
def _open_row(r, c, d, dx, x, e, g, noise, ws):
    """Row ``r`` is the transfer of cross-device edge ``e`` (from ``c`` on ``d`` to ``x`` on ``dx``)."""
    ws.row_of_edge[e] = r
    ws.row_i[r, L.R_OP] = c
    ws.row_i[r, L.R_SRC] = d
    ws.row_i[r, L.R_DST] = dx
    ws.row_i[r, L.R_CONSUMER] = x
    ws.row_f[r, L.R_BYTES] = g.edge_bytes[e]
    ws.row_f[r, L.R_TIME] = _edge_time(e, d, dx, g, noise)


@njit(cache=True, _nrt=False, inline="always")
def _start_transfer(t, r, ws):
    """Transfer row ``r`` starts at ``t``; it lands after its time."""
    ws.row_f[r, L.R_START] = t
    ws.row_f[r, L.R_END] = t + ws.row_f[r, L.R_TIME]
    ws.dev_f[ws.row_i[r, L.R_SRC], L.MEMCPY] += ws.row_f[r, L.R_TIME]
    _push(ws.row_f[r, L.R_END], L.LANDS, r, ws)


@njit(cache=True, _nrt=False, inline="always")
def _route(t, r, d, dx, g, ws):
    """Send row ``r`` (``d`` to ``dx``) now, or queue it behind its channel's transfers (the
    ``contention`` option of ``work_conserving``: one channel per device or per device pair)."""
    if g.contention == L.NO_CONTENTION:
        _start_transfer(t, r, ws)
        return
    ch = d if g.contention == L.PER_DEVICE else d * g.num_devices + dx
    if ws.chan[ch, L.CH_BUSY] == 0:
        ws.chan[ch, L.CH_BUSY] = 1
        _start_transfer(t, r, ws)
    else:
        queues.append_row(ws.chan, ch, L.CH_HEAD, L.CH_TAIL, r, ws)


@njit(cache=True, _nrt=False, inline="always")
def _queue_copy(c, d, dx, k, r, g, dev, noise, ws):
    """With sender copies: the first out-edge of ``c`` to device ``dx`` (``k``, row ``r``) gets a
    copy of the longest time among those edges (without latency), queued behind ``c``'s
    earlier copies; a later edge to ``dx`` takes no time and lands with it (see
    :func:`_on_copied`)."""
    for k2 in range(g.out_ptr[c], k):
        if dev[g.out_dst[k2]] == dx:
            ws.row_f[r, L.R_TIME] = 0.0
            return
    for k2 in range(k + 1, g.out_ptr[c + 1]):
        if dev[g.out_dst[k2]] == dx:
            e2 = g.out_edge[k2]
            t2 = g.edge_given[e2]
            if t2 != t2:
                t2 = g.edge_bytes[e2] / g.bandwidth[d, dx]
            t2 *= noise[e2]
            if t2 > ws.row_f[r, L.R_TIME]:
                ws.row_f[r, L.R_TIME] = t2
    queues.append_row(ws.dev_i, d, L.C_HEAD, L.C_TAIL, r, ws)


@njit(cache=True, _nrt=False, inline="always")
def _hand_over(t, c, d, g, dev, prio, noise, memory, ws):
    """Op ``c`` ended on ``d``: each out-edge, in the source's order (rule 2 of
    ``work_conserving``), hands its output to a consumer on ``d`` at once (it asks for ``d``
    once all its inputs are there) or opens a transfer to the consumer's device (makespan
    only, without contention or sender copies: the event of its landing is all it needs)."""
    r = ws.counts[L.ROWS]  # the next transfer row
    rows = memory != L.MEM_OFF or g.contention != L.NO_CONTENTION or g.sender_copies != L.NO_SENDER_COPIES
    for k in range(g.out_ptr[c], g.out_ptr[c + 1]):
        x = g.out_dst[k]
        dx = dev[x]
        if dx == d:
            ws.op_i[x, L.REMAINING] -= 1
            if ws.op_i[x, L.REMAINING] == 0:
                queues.ask(x, d, g, prio, ws)
            continue
        e = g.out_edge[k]
        if not rows:
            _push(t + _edge_time(e, d, dx, g, noise), L.INPUT_LANDS, x, ws)
            continue
        _open_row(r, c, d, dx, x, e, g, noise, ws)
        if g.sender_copies != L.NO_SENDER_COPIES:
            _queue_copy(c, d, dx, k, r, g, dev, noise, ws)
        else:
            _route(t, r, d, dx, g, ws)
        r += 1
    ws.counts[L.ROWS] = r


@njit(cache=True, _nrt=False, inline="always")
def _bus_rate(g, ws):
    """The speed of each copy in progress: ``k`` copies on a bus of ``capacity`` move at
    ``capacity / k``, at most 1 (``copy_bus_shared``)."""
    k = 0
    for a in range(g.num_devices):
        if ws.dev_i[a, L.C_ROW] >= 0:
            k += 1
    return g.bus_capacity / k if g.sender_copies == L.SHARED_BUS and k > g.bus_capacity else 1.0


@njit(cache=True, _nrt=False, inline="always")
def _bus_share(t, g, ws):
    """Count the copies in progress up to ``t``, each at the bus's current rate."""
    rate = _bus_rate(g, ws)
    for a in range(g.num_devices):
        if ws.dev_i[a, L.C_ROW] >= 0:
            left = ws.dev_f[a, L.C_LEFT] - (t - ws.dev_f[a, L.C_SINCE]) * rate
            ws.dev_f[a, L.C_LEFT] = left if left > 0.0 else 0.0
            ws.dev_f[a, L.C_SINCE] = t


@njit(cache=True, _nrt=False, inline="always")
def _bus_reschedule(t, g, ws):
    """Give every copy in progress its end at the current rate; push the ends that moved."""
    rate = _bus_rate(g, ws)
    for a in range(g.num_devices):
        r = ws.dev_i[a, L.C_ROW]
        if r >= 0:
            end = t + ws.dev_f[a, L.C_LEFT] / rate
            if end != ws.dev_f[a, L.C_END]:
                ws.dev_f[a, L.C_END] = end
                _push(end, L.COPIED, r, ws)


@njit(cache=True, _nrt=False, inline="always")
def _start_copy(t, d, ws):
    """Start device ``d``'s next queued copy at ``t`` (there is one)."""
    r = queues.pop_row(ws.dev_i, d, L.C_HEAD, L.C_TAIL, ws)
    ws.dev_i[d, L.C_ROW] = r
    ws.dev_f[d, L.C_LEFT] = ws.row_f[r, L.R_TIME]
    ws.dev_f[d, L.C_SINCE] = t
    ws.row_f[r, L.R_START] = t


@njit(cache=True, _nrt=False, inline="always")
def _on_op_end(t, c, g, dev, dur, prio, noise, memory, ws):
    """Op ``c`` ends: free what it held, hand its output over, then its device copies
    (``copy_occupies_sender``), stays busy for its overhead (``dispatch_s``) or serves its
    next op. Returns the device to serve now, or -1."""
    d = dev[c]
    ws.dev_i[d, L.RUNNING] = -1
    if memory != L.MEM_OFF:
        _free_held(t, c, d, g, dev, memory, ws)
    _hand_over(t, c, d, g, dev, prio, noise, memory, ws)
    if ws.dev_i[d, L.C_HEAD] >= 0:  # copies first, then the overhead (see _on_copied)
        ws.dev_i[d, L.RUNNING] = -2
        ws.dev_f[d, L.C_AFTER] = g.overhead if dur[c] > 0 else 0.0
        _bus_share(t, g, ws)  # d copies nothing yet: the others' share
        _start_copy(t, d, ws)
        _bus_reschedule(t, g, ws)
        return -1
    if dur[c] > 0 and g.overhead > 0:  # busy with its overhead: the device serves again after it
        ws.dev_i[d, L.RUNNING] = -2
        _push(t + g.overhead, L.DEVICE_FREE, d, ws)
        return -1
    return d


@njit(cache=True, _nrt=False, inline="always")
def _on_copied(t, r, g, dev, ws):
    """The copy in row ``r`` may be done on its sender (its end may have moved since the event
    was made): it lands the link's latency later, with the op's later edges to the same
    device; the sender starts its next copy, or owes its overhead, or serves: returns the
    device to serve now, or -1."""
    d = ws.row_i[r, L.R_SRC]
    if ws.dev_i[d, L.C_ROW] != r or ws.dev_f[d, L.C_END] != t:
        return -1
    _bus_share(t, g, ws)
    ws.dev_i[d, L.C_ROW] = -1
    ws.dev_f[d, L.C_END] = -1.0
    ws.row_f[r, L.R_END] = t
    ws.dev_f[d, L.MEMCPY] += t - ws.row_f[r, L.R_START]
    dx = ws.row_i[r, L.R_DST]
    land = t + g.latency[d, dx]
    _push(land, L.LANDS, r, ws)
    c = ws.row_i[r, L.R_OP]
    for k in range(g.out_ptr[c], g.out_ptr[c + 1]):  # the op's later edges to dx (rows after r) land with it
        if dev[g.out_dst[k]] == dx and ws.row_of_edge[g.out_edge[k]] > r:
            r2 = ws.row_of_edge[g.out_edge[k]]
            ws.row_f[r2, L.R_START] = land
            ws.row_f[r2, L.R_END] = land
            _push(land, L.LANDS, r2, ws)
    more = ws.dev_i[d, L.C_HEAD] >= 0
    if more:  # the op's next copy
        _start_copy(t, d, ws)
    _bus_reschedule(t, g, ws)
    if more:
        return -1
    if ws.dev_f[d, L.C_AFTER] > 0:
        _push(t + ws.dev_f[d, L.C_AFTER], L.DEVICE_FREE, d, ws)
        return -1
    ws.dev_i[d, L.RUNNING] = -1
    return d


@njit(cache=True, _nrt=False, inline="always")
def _input_arrives(x, g, dev, prio, ws):
    """An input of op ``x`` is on its device; with all of them there, ``x`` asks for its device.
    Returns the device to serve now, or -1."""
    ws.op_i[x, L.REMAINING] -= 1
    if ws.op_i[x, L.REMAINING] != 0:
        return -1
    queues.ask(x, dev[x], g, prio, ws)
    return dev[x]


@njit(cache=True, _nrt=False, inline="always")
def _on_land(t, r, g, dev, dur, prio, memory, ws):
    """Transfer row ``r`` lands: its channel takes its next transfer, the copy is allocated on
    the destination (memory-aware, the source may now fit an op). Returns the edge's consumer,
    to which the copy is handed."""
    src = ws.row_i[r, L.R_SRC]
    dx = ws.row_i[r, L.R_DST]
    if g.contention != L.NO_CONTENTION and g.sender_copies == L.NO_SENDER_COPIES:
        ch = src if g.contention == L.PER_DEVICE else src * g.num_devices + dx
        if ws.chan[ch, L.CH_HEAD] < 0:
            ws.chan[ch, L.CH_BUSY] = 0
        else:
            _start_transfer(t, queues.pop_row(ws.chan, ch, L.CH_HEAD, L.CH_TAIL, ws), ws)
    p = ws.row_i[r, L.R_OP]
    if memory != L.MEM_OFF:
        if ws.row_f[r, L.R_BYTES] > 0:
            core.alloc(t, dx, ws.row_f[r, L.R_BYTES], memory, ws)
        _let_go(t, p, g, dev, memory, ws)
    if g.memory_aware and g.out_bytes[p] > 0:  # memory freed on src: it may fit now
        _serve(t, src, g, dur, prio, memory, ws)
    return ws.row_i[r, L.R_CONSUMER]


@njit(cache=True, _nrt=False, inline="always")
def _reset(g, dev, ws):
    """Clear the workspace for one placement: idle devices with their persistent memory and
    ready segments, idle channels, every op waiting for all its inputs."""
    n = len(dev)
    D = g.num_devices
    dev_i, dev_f = ws.dev_i, ws.dev_f
    core.clear(dev_f, D, 0.0)
    core.clear(dev_i, D, 0)
    for d in range(D):  # idle, copying nothing
        for k in (L.RUNNING, L.C_HEAD, L.C_TAIL, L.C_ROW):
            dev_i[d, k] = -1
        dev_f[d, L.C_END] = -1.0
    core.clear(ws.chan, D * D, -1)  # no waiting rows ...
    for k in range(D * D):
        ws.chan[k, L.CH_BUSY] = 0  # ... and nothing running
    for k in range(len(ws.counts)):
        ws.counts[k] = 0
    for i in range(n):
        d = dev[i]
        dev_i[d, L.COUNT] += 1
        dev_f[d, L.MEM] += g.persistent[i]
        ws.op_i[i, L.REMAINING] = g.pred_ptr[i + 1] - g.pred_ptr[i]
        ws.op_i[i, L.OUT_REF] = 1 + g.out_ptr[i + 1] - g.out_ptr[i]  # itself, and every consumer or transfer
        ws.op_f[i, L.START] = np.nan
        ws.op_f[i, L.END] = np.nan
    off = 0
    for d in range(D):
        dev_i[d, L.Q_OFF] = off
        off += dev_i[d, L.COUNT]
        dev_f[d, L.PEAK] = dev_f[d, L.MEM]


@njit(cache=True, _nrt=False, error_model="numpy")
def simulate_wc(g, dev, dur, prio, noise, memory, ws):
    """Simulate one placement; results are left in the workspace arrays.

    ``g`` is a :class:`~engine.sim._layout.WCInputs`: each op's out-edges in the order the
    source listed them; a transfer along edge ``e`` takes ``edge_given[e]`` (NaN: latency +
    bytes / bandwidth of the link) times ``noise[e]``. ``prio`` is only read with
    ``choose=PRIORITY``; ``need`` (temp + output bytes per op) only when memory-aware.
    ``memory``: a memory level (at least MEM_PEAK when memory-aware). With
    ``sender_copies`` (``SENDER_COPIES`` or ``SHARED_BUS``) transfers occupy their source
    device right after the producer ends, one copy per (producer, destination device); a
    copy's row is its time on the sender and it lands the link's latency later; with
    ``SHARED_BUS`` the copies in progress on all devices share one bus. Channels are then not
    used. Returns ``(makespan, transfer rows, memory records, ops run)``.

    SimPy's ``step()``: ops with no inputs ask for their devices at time 0 in op order; then
    pop the earliest event and hand it to the handler of its kind.
    """
    n = len(dur)
    makespan = 0.0  # the end of the last op
    done = 0  # ops run
    _reset(g, dev, ws)
    for i in range(n):
        if ws.op_i[i, L.REMAINING] == 0:
            queues.ask(i, dev[i], g, prio, ws)
            _serve(0.0, dev[i], g, dur, prio, memory, ws)
    while ws.counts[L.HEAP_SIZE] > 0:
        t, key = core.ev_pop(ws.ev_t, ws.ev_k, ws.counts)
        kind = (key >> L.WC_KIND_SHIFT) & L.WC_KIND_MASK
        payload = key & L.WC_PAYLOAD_MASK
        if kind == L.OP_ENDS:
            makespan = max(makespan, t)
            done += 1
            serve = _on_op_end(t, payload, g, dev, dur, prio, noise, memory, ws)
        elif kind == L.DEVICE_FREE:  # done with its copies and overhead
            ws.dev_i[payload, L.RUNNING] = -1
            serve = payload
        elif kind == L.COPIED:
            serve = _on_copied(t, payload, g, dev, ws)
        else:  # a transfer lands (INPUT_LANDS: one without a row) and hands its input over
            x = _on_land(t, payload, g, dev, dur, prio, memory, ws) if kind == L.LANDS else payload
            serve = _input_arrives(x, g, dev, prio, ws)
        if serve >= 0:  # every handler's last step: the device it names serves if it is free
            _serve(t, serve, g, dur, prio, memory, ws)
    if done < n:  # ops left waiting for memory that is never freed: a deadlock
        for d in range(g.num_devices):
            if ws.dev_i[d, L.Q_TAIL] - (ws.dev_i[d, L.Q_HEAD] if g.choose == L.FIFO else 0) > 0:
                ws.dev_i[d, L.STALLED] = 1
    return makespan, ws.counts[L.ROWS], ws.counts[L.MEM_RECORDS], done
