"""The compiled kernel of the ``placeto`` mode of :mod:`engine.sim.simulator` (numba, cached on disk).

Placeto App. A.5 as published (Addanki et al. 2019): per-device FIFO op queues, one
outgoing FIFO channel per device, and one transfer per output that serves every remote
consumer at the cluster's single bandwidth ``bw0``. Semantics are those of CONTRACTS §4 and
``docs/reference/simulation.md`` (``placeto``); the plain-Python reference the property tests
hold this kernel to is ``engine/sim/reference.py``. The event loop pieces, channel
bookkeeping and memory accounting it shares with the ``default`` kernel are in
:mod:`engine.sim._core`; arrays and columns are named in :mod:`engine.sim._layout` (``L``).

Speed tricks (the one place they are allowed: CONTRIBUTING.md, "The simulator")
-------------------------------------------------------------------------------
* Compiled with ``_nrt=False`` (no reference counting, so helper calls cost nothing) and
  numpy's error model (no division-by-zero checks: bandwidths are validated > 0); every
  helper and event handler is inlined. Nothing here allocates: a
  :class:`engine.sim._layout.QueueWorkspace` holds every array, allocated once per (graph,
  cluster) and reused for each placement.
* Only two kinds of heap events exist. Consumers on the producer's own device are served
  when it starts (their ready time is known then), idle devices get no wake-up events, and
  a device's outgoing channel needs no events at all. What is left is one event per op
  start and one per transfer.
* The makespan-only call (``memory=MEM_OFF``) keeps no memory and writes no transfer rows:
  about half the work of a schedule when every op sends to other devices.

Events
------
Arrival payload: the producer. A zero-time transfer lands as its bus runs it (kind BUS,
payload ``device * rows + row``), after the arrivals of the same instant.

Ties between ops ready at the same time on one device follow the order in which the
published simulator appends them to its FIFO device queue: its heap pops the per-edge
``remove_dependency`` events of an instant by (parent, child) name, but an event *created*
during that instant (by a zero-time op, or a zero-byte transfer) comes after every event
queued before it. So the tie is (producer, op) for inputs that were on their way before the
instant, and (n + processing counter, op) for inputs created within it; sources come first,
in index order.
"""

from __future__ import annotations

from numba import njit

from engine.sim import _core as core
from engine.sim import _layout as L


@njit(cache=True, _nrt=False, inline="always")
def _on_arrival(t, key, g, dev, memory, ws):
    """A transfer of producer ``p``'s output lands on every device that reads it: the copies
    are allocated there and each remote consumer gets this input."""
    n = len(dev)
    created_now = key >> L.KIND_SHIFT == L.BUS
    payload = key & L.PAYLOAD_MASK
    p = ws.row_i[payload % ws.row_i.shape[0], L.R_OP] if created_now else payload
    dp = dev[p]
    core.arrival_popped(dp, key, ws)
    if memory != L.MEM_OFF:
        core.land_copies(t, p, -1, memory, ws)
    for k in range(g.succ_ptr[p], g.succ_ptr[p + 1]):
        x = g.succ_idx[k]
        if dev[x] == dp:
            continue
        rkey = core.tie_now(n, ws) if created_now else p
        if core.input_arrives(x, rkey, t, ws):
            ws.op_i[x, L.TIE] = ws.op_i[x, L.PRODUCER] * n + x
            core.enqueue(x, dev[x], t, ws)


@njit(cache=True, _nrt=False, inline="always")
def _consumers(t, c, d, e, g, dev, memory, ws):
    """Op ``c`` started on ``d`` at ``t`` and ends at ``e``: its consumers on ``d`` get its
    output at ``e``; the others are counted per device. Returns ``(local consumers, remote
    devices, largest given time among remote edges, whether one of them has none)``."""
    n = len(dev)
    given = -1.0
    untimed = not g.has_times
    local = 0
    remote = 0
    for k in range(g.succ_ptr[c], g.succ_ptr[c + 1]):
        x = g.succ_idx[k]
        if dev[x] == d:
            local += 1
            # its remove_dependency was queued before time e (ordered by producer), or is created now
            rkey = c if e > t else core.tie_now(n, ws)
            if core.input_arrives(x, rkey, e, ws):
                ws.op_i[x, L.TIE] = ws.op_i[x, L.PRODUCER] * n + x
                core.enqueue(x, d, t, ws)
            continue
        if memory != L.MEM_OFF:
            remote += core.remote_consumer(c, dev[x], ws)
        else:
            remote = 1
        if g.has_times:
            te = g.edge_time[g.succ_edge[k]]
            if te != te:
                untimed = True
            elif te > given:
                given = te
    return local, remote, given, untimed


@njit(cache=True, _nrt=False, inline="always")
def _send_output(c, d, e, given, untimed, g, memory, ws):
    """One transfer of ``c``'s output on ``d``'s channel, landing on every reading device: it
    takes bytes / ``bw0`` if an edge it serves has no given time, and at least the largest
    given time (``docs/reference/simulation.md``, "Given transfer times")."""
    row0 = ws.counts[L.ROWS]
    if memory != L.MEM_OFF:  # one row per reading device, for the schedule
        row0, rows_end = core.open_rows(c, d, g.num_devices, ws)
        for r in range(row0, rows_end):
            ws.row_i[r, L.R_PRIMARY] = 1 if r == row0 else 0
            ws.row_f[r, L.R_BYTES] = g.out_bytes[c]
    else:  # only the row a BUS key names
        ws.row_i[row0, L.R_OP] = c
        ws.counts[L.ROWS] = row0 + 1
        rows_end = row0
    xfer = g.out_bytes[c] / g.bw0 if untimed else 0.0
    if given > xfer:
        xfer = given
    ts, arrive = core.send(c, d, e, xfer, 0.0, g.transfer_gap, row0, rows_end, ws)
    if arrive == ts:  # noqa: SIM108 (a zero-time transfer lands when its bus runs it, at ts)
        akey = (L.BUS << L.KIND_SHIFT) | (d * ws.row_i.shape[0] + row0)
    else:
        akey = (L.ARRIVAL << L.KIND_SHIFT) | c
    core.arrival_later(d, arrive, akey, ws)


@njit(cache=True, _nrt=False, inline="always")
def _on_device_start(t, d, g, dev, dur, memory, ws):
    """Device ``d`` starts the head of its ready FIFO; its output goes to its local consumers
    and, in one transfer, to every other device that reads it. Returns the latest time the
    device or its channel is busy until."""
    c, e, w = core.start_next(t, d, g, dur, ws)
    free_at_e = core.hold(t, c, d, e, g, dev, memory, ws) if memory != L.MEM_OFF else 0.0
    local, remote, given, untimed = _consumers(t, c, d, e, g, dev, memory, ws)
    if remote > 0:
        _send_output(c, d, e, given, untimed, g, memory, ws)
    core.finish_start(c, d, e, w, local, free_at_e, g, memory, ws)
    return max(w, ws.dev_f[d, L.CH_FREE])


@njit(cache=True, _nrt=False, error_model="numpy")
def simulate_placeto(g, dev, dur, memory, ws):
    """Simulate one placement: ``g`` a :class:`~engine.sim._layout.QueueInputs`, ``ws`` a
    :class:`~engine.sim._layout.QueueWorkspace`, ``memory`` a memory level. Results are left in
    the workspace. Returns ``(makespan, transfer rows, memory records)``.

    SimPy's ``step()``: pop the earliest event and hand it to the handler of its kind.
    """
    core.reset(g, dev, -len(dev), ws)  # sources in index order, before every other op (ties below 0)
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
