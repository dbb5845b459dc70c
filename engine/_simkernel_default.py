"""The compiled kernel of the ``default`` mode of :mod:`engine.simulator` (numba, cached on disk).

The event loop of Placeto's simulator (App. A.5, Addanki et al. 2019) with per-pair links:
one transfer per (output, destination device), carrying the largest bytes among the edges
it serves, arriving ``latency + bytes / bandwidth`` after it starts; each device's sends are
serialized on one outgoing channel, busy for ``bytes / bandwidth + transfer_gap`` (latency
is pipelined). Ops ready at the same time on one device start by lower op index. Semantics
are those of CONTRACTS §4 and ``docs/reference/simulation.md``; the plain-Python reference the
property tests hold this kernel to is ``engine/reference_sim.py``. The event loop pieces,
channel bookkeeping and memory accounting it shares with the ``placeto`` kernel, and the
speed tricks of both, are in :mod:`engine._simcore` and :mod:`engine._simkernel_placeto`.

Events: an arrival's payload is ``producer * D + destination``; device starts come after
the arrivals of the same instant.
"""

from __future__ import annotations

from numba import njit

from engine import _simcore as core


@njit(cache=True, _nrt=False, inline="always")
def _transfer_time(d, dd, has_times, bandwidth, latency, rf, r, df):
    """``(seconds on the channel, extra latency)`` of the transfer in row ``r`` from ``d`` to
    ``dd``. Bytes take bytes / bandwidth + latency; a given time holds the channel for all of
    it, with no latency; a transfer serving both kinds of edges takes the longer."""
    lat = latency[d, dd]
    if not has_times:
        return rf[r, core.R_BYTES] / bandwidth[d, dd], lat
    xfer = df[dd, core.DBNT] / bandwidth[d, dd] if df[dd, core.DBNT] >= 0 else 0.0
    if df[dd, core.DBNT] < 0:
        lat = 0.0
    if df[dd, core.DGT] > xfer + lat:
        xfer = df[dd, core.DGT]
        lat = 0.0
    elif df[dd, core.DGT] > xfer:
        lat -= df[dd, core.DGT] - xfer
        xfer = df[dd, core.DGT]
    return xfer, lat


@njit(cache=True, _nrt=False, error_model="numpy")
def simulate_default(
    num_devices,
    succ_ptr, succ_idx, succ_edge, pred_ptr, pred_idx,
    edge_bytes, edge_time, has_times, out_bytes, persistent, temp,
    dev, dur, bandwidth, latency, op_overhead, transfer_gap, record_memory,
    wi, wf, ri, rf, ev_t, ev_k, mr, df, di, counts,
):
    """Simulate one placement; results are left in the workspace arrays.

    ``edge_time`` holds each edge's given transfer time (NaN: none; read only when
    ``has_times``). Returns ``(makespan, transfer rows, memory records)``.
    """
    D = num_devices
    rec = record_memory
    core.reset(D, succ_ptr, pred_ptr, dev, persistent, 0, wi, wf, df, di, ev_t, ev_k, counts)  # sources by index
    nrows = 0
    makespan = 0.0
    while counts[core.HEAP_SIZE] > 0:
        t, key = core.ev_pop(ev_t, ev_k, counts)
        if t > makespan:
            makespan = t
        payload = key & core.MASK
        if key >> core.SHIFT != core.DEVICE:  # p's output lands on device dst
            p = payload // D
            dst = payload - p * D
            core.arrival_popped(dev[p], key, ri, rf, di, ev_t, ev_k, counts)
            core.land_copies(t, p, dst, wi, ri, rf, wf, df, di, mr, counts, rec)
            for k in range(succ_ptr[p], succ_ptr[p + 1]):
                x = succ_idx[k]
                if dev[x] == dst and core.input_arrives(x, p, t, wi, wf):
                    wi[x, core.TIE] = x
                    core.enqueue(x, dst, t, wi, wf, di, df, ev_t, ev_k, counts)
            continue
        # ------------------------------------------------------------ device d starts its next op
        d = payload
        c, e, w, free_at_e = core.start_next(t, d, dur, op_overhead, temp, out_bytes, dev, pred_ptr, pred_idx,
                                             wi, wf, ri, rf, df, di, mr, counts, rec)
        makespan = makespan if makespan >= w else w
        local = n_remote_dev = 0
        for k in range(succ_ptr[c], succ_ptr[c + 1]):  # consumers: local now, remote by transfer
            x = succ_idx[k]
            dx = dev[x]
            if dx == d:
                local += 1
                if core.input_arrives(x, c, e, wi, wf):
                    wi[x, core.TIE] = x
                    core.enqueue(x, d, t, wi, wf, di, df, ev_t, ev_k, counts)
                continue
            n_remote_dev += core.remote_consumer(c, dx, df, di)
            b = edge_bytes[succ_edge[k]]
            if b > df[dx, core.DBYTES]:
                df[dx, core.DBYTES] = b
            if has_times:
                te = edge_time[succ_edge[k]]
                if te != te:
                    if b > df[dx, core.DBNT]:
                        df[dx, core.DBNT] = b
                elif te > df[dx, core.DGT]:
                    df[dx, core.DGT] = te
        if n_remote_dev > 0:  # one transfer per reading device, in device order, on d's channel
            row0 = nrows
            nrows = core.open_rows(c, d, D, nrows, wi, ri, rf, df, di)
            for r in range(row0, nrows):
                dd = ri[r, core.R_DST]
                xfer, lat = _transfer_time(d, dd, has_times, bandwidth, latency, rf, r, df)
                _, arrive, makespan = core.send(c, d, e, xfer, lat, transfer_gap, r, r + 1, wf, rf, df, makespan)
                akey = (core.ARRIVAL << core.SHIFT) | (c * D + dd)
                core.arrival_later(d, arrive, akey, ri, rf, di, ev_t, ev_k, counts)
        core.finish_start(c, d, e, w, local, free_at_e, out_bytes, wi, wf, df, di, ev_t, ev_k, counts)
    core.settle_all(D, wf, df, di, mr, counts, rec)
    return makespan, nrows, counts[core.MEM_RECORDS]
