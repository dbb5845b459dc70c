"""The compiled kernel of the ``default`` mode of :mod:`engine.sim.simulator` (numba, cached on disk).

The event loop of Placeto's simulator (App. A.5, Addanki et al. 2019) with per-pair links:
one transfer per (output, destination device), carrying the largest bytes among the edges
it serves, arriving ``latency + bytes / bandwidth`` after it starts; each device's sends are
serialized on one outgoing channel, busy for ``bytes / bandwidth + transfer_gap`` (latency
is pipelined). Ops ready at the same time on one device start by lower op index. Semantics
are those of CONTRACTS §4 and ``docs/reference/simulation.md`` (``default``); the plain-Python
reference the property tests hold this kernel to is ``engine/sim/reference.py``. The event
loop pieces, channel bookkeeping and memory accounting it shares with the ``placeto``
kernel, and the speed tricks of both, are in :mod:`engine.sim._core` and
:mod:`engine.sim._kernel_placeto`; arrays and columns are named in :mod:`engine.sim._layout`.

Events: an arrival's payload is ``producer * D + destination``; device starts come after
the arrivals of the same instant.
"""

from __future__ import annotations

from numba import njit

from engine.sim import _core as core
from engine.sim import _layout as L


@njit(cache=True, _nrt=False, inline="always")
def _transfer_time(d, dd, r, g, ws):
    """``(seconds on the channel, extra latency)`` of the transfer in row ``r`` from ``d`` to
    ``dd``. Bytes take bytes / bandwidth + latency; a given time holds the channel for all of
    it, with no latency; a transfer serving both kinds of edges takes the longer."""
    lat = g.latency[d, dd]
    if not g.has_times:
        return ws.row_f[r, L.R_BYTES] / g.bandwidth[d, dd], lat
    dgt, dbnt = ws.dev_f[dd, L.DGT], ws.dev_f[dd, L.DBNT]
    xfer = dbnt / g.bandwidth[d, dd] if dbnt >= 0 else 0.0
    if dbnt < 0:
        lat = 0.0
    if dgt > xfer + lat:
        xfer = dgt
        lat = 0.0
    elif dgt > xfer:
        lat -= dgt - xfer
        xfer = dgt
    return xfer, lat


@njit(cache=True, _nrt=False, inline="always")
def _on_arrival(t, key, g, dev, memory, ws):
    """The transfer of ``p``'s output to device ``dst`` lands: the copy is allocated there and
    each consumer on ``dst`` gets this input."""
    payload = key & L.PAYLOAD_MASK
    p = payload // g.num_devices
    dst = payload - p * g.num_devices
    core.arrival_popped(dev[p], key, ws)
    if memory != L.MEM_OFF:
        core.land_copies(t, p, dst, memory, ws)
    for k in range(g.succ_ptr[p], g.succ_ptr[p + 1]):
        x = g.succ_idx[k]
        if dev[x] == dst and core.input_arrives(x, p, t, ws):
            ws.op_i[x, L.TIE] = x
            core.enqueue(x, dst, t, ws)


@njit(cache=True, _nrt=False, inline="always")
def _consumers(t, c, d, e, g, dev, ws):
    """Op ``c`` started on ``d`` at ``t`` and ends at ``e``: its consumers on ``d`` get its
    output at ``e``; for every other device the largest bytes, given time and bytes without
    a given time among the edges there are kept. Returns ``(local consumers, remote devices)``."""
    dev_f = ws.dev_f
    local = n_remote_dev = 0
    for k in range(g.succ_ptr[c], g.succ_ptr[c + 1]):
        x = g.succ_idx[k]
        dx = dev[x]
        if dx == d:
            local += 1
            if core.input_arrives(x, c, e, ws):
                ws.op_i[x, L.TIE] = x
                core.enqueue(x, d, t, ws)
            continue
        n_remote_dev += core.remote_consumer(c, dx, ws)
        b = g.edge_bytes[g.succ_edge[k]]
        if b > dev_f[dx, L.DBYTES]:
            dev_f[dx, L.DBYTES] = b
        if g.has_times:
            te = g.edge_time[g.succ_edge[k]]
            if te != te:
                if b > dev_f[dx, L.DBNT]:
                    dev_f[dx, L.DBNT] = b
            elif te > dev_f[dx, L.DGT]:
                dev_f[dx, L.DGT] = te
    return local, n_remote_dev


@njit(cache=True, _nrt=False, inline="always")
def _on_device_start(t, d, g, dev, dur, memory, ws):
    """Device ``d`` starts the head of its ready FIFO; its output goes to its local consumers
    and, one transfer per reading device in device order, to the others on ``d``'s channel.
    Returns the latest time the device or its channel is busy until."""
    c, e, w = core.start_next(t, d, g, dur, ws)
    free_at_e = core.hold(t, c, d, e, g, dev, memory, ws) if memory != L.MEM_OFF else 0.0
    local, n_remote_dev = _consumers(t, c, d, e, g, dev, ws)
    if n_remote_dev > 0:
        row0, rows_end = core.open_rows(c, d, g.num_devices, ws)
        for r in range(row0, rows_end):
            dd = ws.row_i[r, L.R_DST]
            xfer, lat = _transfer_time(d, dd, r, g, ws)
            _, arrive = core.send(c, d, e, xfer, lat, g.transfer_gap, r, r + 1, ws)
            core.arrival_later(d, arrive, (L.ARRIVAL << L.KIND_SHIFT) | (c * g.num_devices + dd), ws)
    core.finish_start(c, d, e, w, local, free_at_e, g, memory, ws)
    return max(w, ws.dev_f[d, L.CH_FREE])


@njit(cache=True, _nrt=False, error_model="numpy")
def simulate_default(g, dev, dur, memory, ws):
    """Simulate one placement: ``g`` a :class:`~engine.sim._layout.QueueInputs`, ``ws`` a
    :class:`~engine.sim._layout.QueueWorkspace`, ``memory`` a memory level. Results are left in
    the workspace. Returns ``(makespan, transfer rows, memory records)``.

    SimPy's ``step()``: pop the earliest event and hand it to the handler of its kind.
    """
    core.reset(g, dev, 0, ws)  # sources by index
    makespan = 0.0  # the last event, the devices' trailing δ1 and the channels' trailing δ2 included
    while ws.counts[L.HEAP_SIZE] > 0:
        t, key = core.ev_pop(ws.ev_t, ws.ev_k, ws.counts)
        makespan = max(makespan, t)
        if key >> L.KIND_SHIFT == L.DEVICE:
            makespan = max(makespan, _on_device_start(t, key & L.PAYLOAD_MASK, g, dev, dur, memory, ws))
        else:
            _on_arrival(t, key, g, dev, memory, ws)
    if memory != L.MEM_OFF:
        core.settle_all(g.num_devices, memory, ws)
    return makespan, ws.counts[L.ROWS], ws.counts[L.MEM_RECORDS]
