"""The compiled kernel of the ``placeto`` mode of :mod:`engine.simulator` (numba, cached on disk).

Placeto App. A.5 as published (Addanki et al. 2019): per-device FIFO op queues, one
outgoing FIFO channel per device, and one transfer per output that serves every remote
consumer at the cluster's single bandwidth ``bw0``. Semantics are those of CONTRACTS §4 and
``docs/reference/simulation.md``; the plain-Python reference the property tests hold this kernel to is
``engine/reference_sim.py``. The event loop pieces, channel bookkeeping and memory
accounting it shares with the ``default`` kernel are in :mod:`engine._simcore`.

Speed tricks (the one place they are allowed, STYLE.md)
-------------------------------------------------------
* Compiled with ``_nrt=False`` (no reference counting, so helper calls cost nothing) and
  numpy's error model (no division-by-zero checks: bandwidths are validated > 0); every
  helper is inlined. Nothing here allocates: a :class:`engine._simcore.QueueWorkspace` holds
  every array, allocated once per (graph, cluster) and reused for each placement.
* Only two kinds of heap events exist. Consumers on the producer's own device are served
  when it starts (their ready time is known then), idle devices get no wake-up events, and
  a device's outgoing channel needs no events at all. What is left is one event per op
  start and one per transfer.

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

from engine import _simcore as core


@njit(cache=True, _nrt=False, error_model="numpy")
def simulate_placeto(
    num_devices,
    succ_ptr, succ_idx, succ_edge, pred_ptr, pred_idx,
    edge_time, has_times, out_bytes, persistent, temp,
    dev, dur, bw0, op_overhead, transfer_gap, record_memory,
    wi, wf, ri, rf, ev_t, ev_k, mr, df, di, counts,
):
    """Simulate one placement; results are left in the workspace arrays.

    An output's transfer takes its bytes / ``bw0`` if some edge it serves has no given time
    (``edge_time`` NaN, read only when ``has_times``), and at least the largest given time
    among its edges. Returns ``(makespan, transfer rows, memory records)``.
    """
    n = len(dur)
    D = num_devices
    rec = record_memory
    # sources in index order, before every other op (ties below 0)
    core.reset(D, succ_ptr, pred_ptr, dev, persistent, -n, wi, wf, df, di, ev_t, ev_k, counts)
    nrows = 0
    makespan = 0.0
    seq = 0  # events created while their instant is processed, in creation order
    n_row_cap = ri.shape[0]
    while counts[core.HEAP_SIZE] > 0:
        t, key = core.ev_pop(ev_t, ev_k, counts)
        if t > makespan:
            makespan = t
        payload = key & core.MASK
        kind = key >> core.SHIFT
        if kind != core.DEVICE:  # p's output lands on every device that reads it
            created_now = kind == core.BUS
            p = ri[payload % n_row_cap, core.R_OP] if created_now else payload
            dp = dev[p]
            core.arrival_popped(dp, key, ri, rf, di, ev_t, ev_k, counts)
            core.land_copies(t, p, -1, wi, ri, rf, wf, df, di, mr, counts, rec)
            for k in range(succ_ptr[p], succ_ptr[p + 1]):
                x = succ_idx[k]
                if dev[x] == dp:
                    continue
                if created_now:
                    rkey = n + seq
                    seq += 1
                else:
                    rkey = p
                if core.input_arrives(x, rkey, t, wi, wf):
                    wi[x, core.TIE] = wi[x, core.PROD] * n + x
                    core.enqueue(x, dev[x], t, wi, wf, di, df, ev_t, ev_k, counts)
            continue
        # ------------------------------------------------------------ device d starts its next op
        d = payload
        given = -1.0  # the largest given time among remote edges, and whether one has none
        untimed = not has_times
        c, e, w, free_at_e = core.start_next(t, d, dur, op_overhead, temp, out_bytes, dev, pred_ptr, pred_idx,
                                             wi, wf, ri, rf, df, di, mr, counts, rec)
        if w > makespan:
            makespan = w
        local = 0
        n_remote_dev = 0
        for k in range(succ_ptr[c], succ_ptr[c + 1]):  # consumers: local now, remote by transfer
            x = succ_idx[k]
            if dev[x] == d:
                local += 1
                if e > t:  # its remove_dependency was queued before time e: ordered by producer
                    rkey = c
                else:  # created while time t is processed: after every earlier one
                    rkey = n + seq
                    seq += 1
                if core.input_arrives(x, rkey, e, wi, wf):
                    wi[x, core.TIE] = wi[x, core.PROD] * n + x
                    core.enqueue(x, d, t, wi, wf, di, df, ev_t, ev_k, counts)
                continue
            n_remote_dev += core.remote_consumer(c, dev[x], df, di)
            if has_times:
                te = edge_time[succ_edge[k]]
                if te != te:
                    untimed = True
                elif te > given:
                    given = te
        if n_remote_dev > 0:  # one transfer on d's channel, landing on every reading device
            row0 = nrows
            nrows = core.open_rows(c, d, D, nrows, wi, ri, rf, df, di)
            for r in range(row0, nrows):
                ri[r, core.R_PRIMARY] = 1 if r == row0 else 0
                rf[r, core.R_BYTES] = out_bytes[c]
            xfer = out_bytes[c] / bw0 if untimed else 0.0
            if given > xfer:
                xfer = given
            ts, arrive, makespan = core.send(c, d, e, xfer, 0.0, transfer_gap, row0, nrows, wf, rf, df, makespan)
            if arrive == ts:  # noqa: SIM108 (a zero-time transfer lands when its bus runs it, at ts)
                akey = (core.BUS << core.SHIFT) | (d * n_row_cap + row0)
            else:
                akey = (core.ARRIVAL << core.SHIFT) | c
            core.arrival_later(d, arrive, akey, ri, rf, di, ev_t, ev_k, counts)
        core.finish_start(c, d, e, w, local, free_at_e, out_bytes, wi, wf, df, di, ev_t, ev_k, counts)
    core.settle_all(D, wf, df, di, mr, counts, rec)
    return makespan, nrows, counts[core.MEM_RECORDS]
