"""Compiled list-scheduling kernel (numba) shared by the placers of :mod:`policies.list_scheduling`.

Private. One kernel covers the select / place loop of every list scheduler (Kwok & Ahmad
1999): *select* a ready op (highest priority, or the ETF pair with the earliest start), then
*place* it by a device rule. Kernels are cached on disk (``cache=True``).

Times follow the cluster's simulation mode through :class:`engine.sim.estimator.PlanInputs` (issue 55: plan with
the executed semantics): an op holds its device for ``hold`` and its output is usable ``compute`` after its start;
a remote input arrives by the mode's transfer rule — one transfer per output, per (output, device) or per edge,
queued on no channel, the sender's channel, the pair's channel or the sender device itself, each channel held for
the transfer (+ δ2) — as :mod:`engine.sim._plankernels` works it out.

Memory bookkeeping (the "m-" variants of Baechi, SoCC'20), per device, in schedule order:
persistent bytes of every colocation unit committed there, the output of every placed op
until all its consumers are placed, and a received copy of a remote input until all of the
producer's consumers are placed. An op fits on a device when that total plus the op's
unit persistent bytes (when the unit is not committed yet), temp bytes, output and the
inputs it would receive stays within the device's capacity.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.sim import _plankernels as _p
from engine.sim.estimator import CHANNEL_SENDER, TIE_EVENT
from policies import _listsched_events as _events
from policies import _listsched_heaps as _h
from policies import _listsched_room as _room

#: select rules
SELECT_PRIORITY = 0  # highest priority ready op (ties: lower noise)
SELECT_ETF = 1  # ready (op, device) pair with the earliest start (ties: priority, then noise)
#: device rules (SELECT_PRIORITY only)
DEVICE_EST = 0  # earliest start time, no insertion
DEVICE_EFT_INSERT = 1  # earliest finish time with insertion into idle gaps (HEFT)
DEVICE_FILL = 2  # fill devices in order up to a memory cap (m-TOPO)

#: ETF pops at most this many ops that do not fit a device before it scans that device's heap once instead
ASIDE_LIMIT = 16

@njit(cache=True, _nrt=False)
def _insertion_start(istart, iend, cnt, ready, dur):
    """Earliest start >= ready in a gap of at least ``dur`` (HEFT insertion); returns (t, position)."""
    lo, hi = 0, cnt
    while lo < hi:  # first interval ending after ready (ends are sorted: intervals never overlap)
        mid = (lo + hi) // 2
        if iend[mid] > ready:
            hi = mid
        else:
            lo = mid + 1
    t = ready
    k = lo
    while k < cnt:
        if istart[k] - t >= dur:
            break
        if iend[k] > t:
            t = iend[k]
        k += 1
    return t, k




@njit(cache=True, _nrt=False)
def _fits(o, u, dd, mem, unit_persist, temp_bytes, out_bytes, need, capacity):
    """Whether op ``o`` (of unit ``u``) fits on device ``dd``'s memory (module docstring)."""
    return mem[dd] + unit_persist[u] + temp_bytes[o] + out_bytes[o] + need[o, dd] <= capacity[dd]


@njit(cache=True, _nrt=False)
def _etf_status(o, d, op_unit, fav_parent, unit_dev, dev, dur, memory_aware, mem, unit_persist, temp_bytes,
                out_bytes, need, capacity):
    """Whether ready op ``o`` can be ETF's pick on device ``d`` now: 0 never again (placed, or its unit went to
    another device), 1 yes, 2 not now (m-SCT's favourite child follows its parent elsewhere, or no room)."""
    if dev[o] >= 0:
        return 0
    u = op_unit[o]
    if unit_dev[u] >= 0:
        return 1 if unit_dev[u] == d else 0
    fp = fav_parent[o]
    if fp >= 0:  # m-SCT: a favourite child follows its parent if it can
        pd = dev[fp]
        if dur[o, pd] < np.inf and (not memory_aware or _fits(o, u, pd, mem, unit_persist, temp_bytes, out_bytes,
                                                              need, capacity)):
            return 1 if pd == d else 2
    if memory_aware and not _fits(o, u, d, mem, unit_persist, temp_bytes, out_bytes, need, capacity):
        return 2
    return 1


@njit(cache=True, _nrt=False)
def _etf_device_pick(d, pendh, pendn, relh, reln, aside, avail, drt, prio, noise, op_unit, fav_parent, unit_dev,
                     dev, dur, memory_aware, mem, unit_persist, temp_bytes, out_bytes, need, capacity, fifo):
    """ETF's best ready op on device ``d``: ``(op, start)``, or ``(-1, inf)``.

    A device keeps its ready ops in two heaps: *pending* ones, whose inputs arrive there after the device is free
    (by arrival time), and *released* ones, which would start the moment it is free (by priority). Ops move from
    pending to released as the device's free time passes their arrival; an op placed elsewhere is dropped when it
    reaches the top; one that cannot go here now (no room) is set aside for this pick and put back. ``(op,
    start, tight)``: tight when ``ASIDE_LIMIT`` ops did not fit (a graph larger than the cluster's memory), for
    :func:`_select_etf` to scan instead."""
    while pendn[d] > 0:
        top = pendh[d, 0]
        if _etf_status(top, d, op_unit, fav_parent, unit_dev, dev, dur, False, mem, unit_persist, temp_bytes,
                       out_bytes, need, capacity) == 0:
            _, pendn[d] = _h.pop(pendh[d], pendn[d], d, drt, prio, noise, True)
        elif drt[top, d] <= avail[d]:
            _, pendn[d] = _h.pop(pendh[d], pendn[d], d, drt, prio, noise, True)
            reln[d] = _h.push(relh[d], reln[d], top, d, drt, prio, noise, fifo)
        else:
            break
    args = (op_unit, fav_parent, unit_dev, dev, dur, memory_aware, mem, unit_persist, temp_bytes, out_bytes, need,
            capacity)
    pick, reln[d], tight = _first_placeable(relh[d], reln[d], d, fifo, aside, drt, prio, noise, *args)
    if pick >= 0 or tight:
        return pick, avail[d] if pick >= 0 else np.inf, tight
    pick, pendn[d], tight = _first_placeable(pendh[d], pendn[d], d, True, aside, drt, prio, noise, *args)
    return pick, drt[pick, d] if pick >= 0 else np.inf, tight


@njit(cache=True, _nrt=False)
def _first_placeable(heap, size, d, by_time, aside, drt, prio, noise, op_unit, fav_parent, unit_dev, dev, dur,
                     memory_aware, mem, unit_persist, temp_bytes, out_bytes, need, capacity):
    """Pop one of device ``d``'s heaps (``heap[:size]``, ordered with ``by_time``) to its first op that can go on
    ``d`` now, setting aside the ones that cannot now (at most ``ASIDE_LIMIT``) and pushing them, and the pick,
    back: ``(op or -1, the heap's size, whether ASIDE_LIMIT were set aside)``. Ops that can never go on ``d`` are
    dropped."""
    pick, na = -1, 0
    while size > 0 and na < ASIDE_LIMIT:
        top, size = _h.pop(heap, size, d, drt, prio, noise, by_time)
        status = _etf_status(top, d, op_unit, fav_parent, unit_dev, dev, dur, memory_aware, mem, unit_persist,
                             temp_bytes, out_bytes, need, capacity)
        if status == 1:
            pick = top
            size = _h.push(heap, size, top, d, drt, prio, noise, by_time)
            break
        if status == 2:
            aside[na] = top
            na += 1
    for k in range(na):
        size = _h.push(heap, size, aside[k], d, drt, prio, noise, by_time)
    return pick, size, na == ASIDE_LIMIT


@njit(cache=True, _nrt=False)
def _scan_pairs(ready, nready, avail, drt, prio, noise, dev_noise, op_unit, fav_parent, unit_dev, dev, dur,
                memory_aware, mem, unit_persist, temp_bytes, out_bytes, need, capacity):
    """ETF's choice by one scan of every ready (op, device) pair, for a step where memory is tight and the
    devices' heaps would be popped through: ``(op, device)``, device -1 when nothing fits anywhere."""
    nd = dur.shape[1]
    best_o, best_d, best_t = -1, -1, np.inf
    for r in range(nready):
        o = ready[r]
        u = op_unit[o]
        forced = unit_dev[u]
        fp = fav_parent[o]
        if forced < 0 and fp >= 0:  # m-SCT: a favourite child follows its parent if it can
            pd = dev[fp]
            if dur[o, pd] < np.inf and (not memory_aware or _fits(o, u, pd, mem, unit_persist, temp_bytes,
                                                                  out_bytes, need, capacity)):
                forced = pd
        for d in range(nd):
            if (forced >= 0 and d != forced) or dur[o, d] == np.inf:
                continue
            if forced < 0 and memory_aware and not _fits(o, u, d, mem, unit_persist, temp_bytes, out_bytes, need,
                                                         capacity):
                continue
            t = max(avail[d], drt[o, d])
            better = best_o < 0 or t < best_t
            if not better and t == best_t:
                better = dev_noise[o, d] < dev_noise[o, best_d] if o == best_o else _h.heap_less(o, best_o, prio, noise)
            if better:
                best_o, best_d, best_t = o, d, t
    return best_o, best_d


@njit(cache=True, _nrt=False)
def _select_etf(pendh, pendn, relh, reln, aside, ready, nready, avail, drt, prio, noise, dev_noise, op_unit,
                fav_parent, unit_dev, dev, dur, memory_aware, mem, unit_persist, temp_bytes, out_bytes, need, capacity,
                fifo, least, forced, cand_o, cand_t):
    """ETF's choice (Hwang et al. 1989; Baechi's m-ETF): the ready (op, device) pair that starts earliest; ties
    by higher priority, then lower op noise, then (the same op) lower device noise. ``(op, device)``, with
    device -1 when no ready op fits anywhere. One pick per device from its
    heaps (:func:`_etf_device_pick`), so a step costs O(devices · log ops), not O(ready ops · devices) — except
    where memory is tight and a device's heaps hold more than ``ASIDE_LIMIT`` ops that do not fit: then one scan
    of every ready pair (:func:`_scan_pairs`), as before the heaps. A device that can take no ready op
    (:mod:`policies._listsched_room`) is skipped. Each device's pick and its start are left in ``cand_o`` and
    ``cand_t`` (-1: none), for :func:`policies._listsched_events.event_order`."""
    best_o, best_d, best_t = -1, -1, np.inf
    cand_o[:] = -1
    for d in range(dur.shape[1]):
        if memory_aware and _room.nothing_for(d, mem, capacity, least, forced):
            continue
        o, t, tight = _etf_device_pick(d, pendh, pendn, relh, reln, aside, avail, drt, prio, noise, op_unit,
                                       fav_parent, unit_dev, dev, dur, memory_aware, mem, unit_persist, temp_bytes,
                                       out_bytes, need, capacity, fifo)
        if tight:
            _room.rescan(ready, nready, unit_dev, op_unit, dur, unit_persist, temp_bytes, out_bytes, need, least)
            return _scan_pairs(ready, nready, avail, drt, prio, noise, dev_noise, op_unit, fav_parent, unit_dev, dev,
                               dur, memory_aware, mem, unit_persist, temp_bytes, out_bytes, need, capacity)
        if o < 0:
            continue
        cand_o[d], cand_t[d] = o, t
        better = best_o < 0 or t < best_t
        if not better and t == best_t:  # the same op on two devices: device noise; two ops: priority, noise
            better = dev_noise[o, d] < dev_noise[o, best_d] if o == best_o else _h.heap_less(o, best_o, prio, noise)
        if better:
            best_o, best_d, best_t = o, d, t
    return best_o, best_d


@njit(cache=True, _nrt=False)
def _place_fill(i, u, cur, dur, filled, static_mem, fill_cap, memory_aware, mem, unit_persist, temp_bytes,
                out_bytes, need, capacity):
    """m-TOPO: the first device from ``cur`` on within the fill cap, else within memory only;
    ``(d, cur)`` with the current device moved on when it was full (never back)."""
    nd = dur.shape[1]
    d = -1
    for pass_ in range(2):
        for step in range(nd):
            dd = (cur + step) % nd
            if dur[i, dd] == np.inf:
                continue
            if pass_ == 0 and filled[dd] + static_mem[i] > fill_cap[dd]:
                continue
            if memory_aware and not _fits(i, u, dd, mem, unit_persist, temp_bytes, out_bytes, need, capacity):
                continue
            d = dd
            break
        if d >= 0:
            break
    if d > cur and dur[i, cur] < np.inf:
        cur = d
    return d, cur


@njit(cache=True, _nrt=False)
def _place_best(i, u, device_rule, dur, avail, drt, istart, iend, icnt, dev_noise, memory_aware, mem,
                unit_persist, temp_bytes, out_bytes, need, capacity):
    """The device with the earliest start (EST) or finish with insertion (HEFT) that fits; -1 if none."""
    d = -1
    best_key = np.inf
    best_noise = np.inf
    for dd in range(dur.shape[1]):
        if dur[i, dd] == np.inf:
            continue
        if memory_aware and not _fits(i, u, dd, mem, unit_persist, temp_bytes, out_bytes, need, capacity):
            continue
        if device_rule == DEVICE_EFT_INSERT:
            t, _pos = _insertion_start(istart[dd], iend[dd], icnt[dd], drt[i, dd], dur[i, dd])
            key = t + dur[i, dd]
        else:
            key = max(avail[dd], drt[i, dd])
        if d < 0 or _h.better(key, dev_noise[i, dd], best_key, best_noise):
            best_key = key
            best_noise = dev_noise[i, dd]
            d = dd
    return d


@njit(cache=True, _nrt=False)
def _most_free(i, dur, capacity, mem, need):
    """No device has room: the runnable device with the most free memory."""
    d = -1
    best_free = -np.inf
    for dd in range(dur.shape[1]):
        if dur[i, dd] == np.inf:
            continue
        free = capacity[dd] - mem[dd] - need[i, dd]
        if free > best_free:
            best_free = free
            d = dd
    return d


@njit(cache=True, _nrt=False)
def _start_on(i, d, ready_t, device_rule, avail, dur, istart, iend, icnt):
    """Op ``i``'s start on device ``d`` once its inputs are there at ``ready_t`` (HEFT: inserted into the first
    idle gap it fits, recorded)."""
    if device_rule != DEVICE_EFT_INSERT:
        return max(avail[d], ready_t)
    t, pos = _insertion_start(istart[d], iend[d], icnt[d], ready_t, dur[i, d])
    for k in range(icnt[d], pos, -1):
        istart[d, k] = istart[d, k - 1]
        iend[d, k] = iend[d, k - 1]
    istart[d, pos] = t
    iend[d, pos] = t + dur[i, d]
    icnt[d] += 1
    return t


@njit(cache=True, _nrt=False)
def _account_memory(i, d, pred_ptr, pred_idx, pred_edge, edge_bytes, dev, copies, rem, mem, out_bytes):
    """Op ``i`` placed on ``d``: its remote inputs' copies held there, inputs whose consumers are all
    placed released (with their copies), its own output held while it has consumers."""
    for k in range(pred_ptr[i], pred_ptr[i + 1]):
        p = pred_idx[k]
        if dev[p] != d and copies[p, d] == 0.0:
            b = edge_bytes[pred_edge[k]]
            copies[p, d] = b if b > 0 else 1e-300
            mem[d] += b
        rem[p] -= 1
        if rem[p] == 0:  # every consumer placed: the output and its copies are released
            mem[dev[p]] -= out_bytes[p]
            for dd in range(copies.shape[1]):
                if copies[p, dd] > 0:
                    mem[dd] -= copies[p, dd]
    if rem[i] > 0:
        mem[d] += out_bytes[i]


@njit(cache=True, _nrt=False)
def _data_ready(s, tp, pi, tr, dev, unit_dev, op_unit, out_t, avail, copies, drt, need, prio, noise, fifo,
                event_ties, start):
    """A newly ready op ``s``: on every device it may go to, when its inputs would be there (transfers already
    made, or started when their channels are next free) and the bytes it would receive; with ``fifo`` its tie
    key on its committed device: ``noise`` by :func:`engine.sim._plankernels.tie`, or with ``event_ties`` (the
    simulator orders by events: :func:`list_schedule`), ``prio`` = − the time its last input's event was made and
    ``noise`` its order then (:func:`policies._listsched_events.last_input`)."""
    forced = unit_dev[op_unit[s]]
    for dd in range(drt.shape[1]):
        if (forced >= 0 and dd != forced) or pi.hold[s, dd] == np.inf:
            continue
        drt[s, dd] = _p.inputs_on(s, dd, False, tp, pi, tr, dev, unit_dev, op_unit, out_t, avail)
        r_b = 0.0
        for kk in range(tp.pred_ptr[s], tp.pred_ptr[s + 1]):
            p = tp.pred_idx[kk]
            if dev[p] != dd and copies[p, dd] == 0.0:
                r_b += pi.edge_bytes[tp.pred_edge[kk]]
        need[s, dd] = r_b
    if event_ties and forced >= 0:
        ct, sq = _events.last_input(s, forced, drt[s, forced], tp, pi, tr, dev, unit_dev, op_unit, out_t, avail, start)
        prio[s] = -ct
        noise[s] = float(sq) * len(dev) + s
    elif fifo and forced >= 0:
        noise[s] = _p.tie(s, forced, drt[s, forced], tp, pi, tr, dev, unit_dev, op_unit, out_t, avail)


@njit(cache=True, _nrt=False)
def _etf_ready(o, ready, pos, nready, byprio, byprio_n, pendh, pendn, unit_dev, op_unit, dur, unit_persist, temp_bytes,
               out_bytes, need, least, forced, inready, counted, drt, prio, noise):
    """ETF: op ``o`` is ready: in the ready list, the by-priority heap and the pending heap of every device it may
    go to, and counted by :mod:`policies._listsched_room`. Returns the ready list's and the heap's new sizes."""
    ready[nready], pos[o] = o, nready
    byprio_n = _h.push(byprio, byprio_n, o, 0, drt, prio, noise, False)
    _room.became_ready(o, unit_dev, op_unit, dur, unit_persist, temp_bytes, out_bytes, need, least, forced, inready,
                       counted)
    to = unit_dev[op_unit[o]]
    for dd in range(dur.shape[1]):
        if dur[o, dd] < np.inf and (to < 0 or dd == to):
            pendn[dd] = _h.push(pendh[dd], pendn[dd], o, dd, drt, prio, noise, True)
    return nready + 1, byprio_n


@njit(cache=True, _nrt=False)
def _commit(i, d, device_rule, tp, pi, tr, dev, unit_dev, op_unit, out_t, avail, istart, iend, icnt):
    """Place op ``i`` on ``d``: its inputs' transfers made, its start (returned), its output's time, the device's
    next free time (after the sender's eager copies and its overhead) and its output sent where it is awaited."""
    dur = pi.hold
    tr.seq[i] = tr.seq[len(dev)]
    tr.seq[len(dev)] += 1
    ready_t = _p.inputs_on(i, d, True, tp, pi, tr, dev, unit_dev, op_unit, out_t, avail)
    t = _start_on(i, d, ready_t, device_rule, avail, dur, istart, iend, icnt)
    dev[i] = d
    out_t[i] = t + pi.compute[i, d]
    if out_t[i] >= avail[d]:  # at the end of the device's schedule (not inserted into a gap)
        avail[d] = out_t[i]
        _p.send_eagerly(i, d, tp, pi, tr, dev, unit_dev, op_unit, out_t, avail)
        avail[d] += dur[i, d] - pi.compute[i, d]
    else:
        _p.send_eagerly(i, d, tp, pi, tr, dev, unit_dev, op_unit, out_t, avail)
    return t


@njit(cache=True)
def list_schedule(tp, pi, tr, op_unit, unit_dev0, unit_persist, out_bytes, temp_bytes, capacity, prio, noise,
                  dev_noise, select_rule, device_rule, memory_aware, fav_parent, fill_cap, static_mem, fifo):
    """Schedule every op; returns (device, start, output time, makespan): ``tp`` an
    :class:`engine.sim._plankernels.Topology`, ``pi`` an :class:`engine.sim.estimator.PlanInputs`, ``tr`` a fresh
    :class:`engine.sim._plankernels.Transfers`.

    ``pi.hold[i, d]`` is +inf where op i's unit cannot run on d. ``unit_dev0[u]`` is the committed
    device of unit u or -1. ``fav_parent[i]`` (m-SCT) is the op whose favourite child i is, or -1.
    Each step selects a ready op, places it by the device rule, commits it and readies its successors.
    With ``fifo`` (ETF only) ops that could start at once on a device go in the order their inputs got there,
    then by priority: how a FIFO device serves them (the pass over a finished placement, :func:`predict`).
    The makespan is the mode's (``pi.trailing``: the last device, channel or arrival time; else the last output).
    """
    dur = pi.hold
    n, nd = dur.shape
    unit_dev = unit_dev0.copy()
    dev = np.full(n, -1, np.int64)
    start, out_t = np.zeros(n), np.zeros(n)
    avail, mem, filled = np.zeros(nd), np.zeros(nd), np.zeros(nd)
    for u in range(len(unit_dev)):
        if unit_dev[u] >= 0:
            mem[unit_dev[u]] += unit_persist[u]
    indeg = tp.pred_ptr[1:] - tp.pred_ptr[:-1]
    rem = tp.succ_ptr[1:] - tp.succ_ptr[:-1]
    copies, drt, need = np.zeros((n, nd)), np.zeros((n, nd)), np.zeros((n, nd))
    slots = n if device_rule == DEVICE_EFT_INSERT else 0  # HEFT's busy intervals per device
    istart, iend = np.zeros((nd, slots)), np.zeros((nd, slots))
    icnt = np.zeros(nd, np.int64)
    heap = np.empty(n, np.int64)  # ready ops by priority (not ETF)
    hsize, cur = 0, 0
    etf = select_rule == SELECT_ETF
    m = n if etf else 0
    ready, pos = np.empty(m, np.int64), np.empty(m, np.int64)  # ETF: the ready ops, each one's slot
    nready = 0
    byprio, byprio_n = np.empty(m, np.int64), 0  # ETF: the ready ops by priority, for when nothing fits anywhere
    pendh, relh = np.empty((nd, m), np.int64), np.empty((nd, m), np.int64)
    pendn, reln = np.zeros(nd, np.int64), np.zeros(nd, np.int64)
    aside = np.empty(m, np.int64)
    least, forced = np.full(nd, np.inf), np.zeros(nd, np.int64)  # policies/_listsched_room.py
    inready, counted = np.zeros(m, np.bool_), np.zeros(m, np.bool_)
    uptr, uops = _room.unit_members(op_unit, len(unit_dev))
    cand_o, cand_t = np.full(nd, -1, np.int64), np.zeros(nd)  # each device's ETF pick and its start
    event_ties = etf and fifo and pi.tie == TIE_EVENT and pi.channel != CHANNEL_SENDER  # sender copies: not modelled
    last_op = np.full(nd, -1, np.int64)  # the op placed last on each device
    for i in range(n):
        if indeg[i] == 0:
            if not etf:
                hsize = _h.push(heap, hsize, i, 0, drt, prio, noise, False)
                continue
            nready, byprio_n = _etf_ready(i, ready, pos, nready, byprio, byprio_n, pendh, pendn, unit_dev, op_unit, dur,
                                          unit_persist, temp_bytes, out_bytes, need, least, forced, inready, counted,
                                          drt, prio, noise)
    for _step in range(n):
        d = -1
        if etf:  # select and place at once
            i, d = _select_etf(pendh, pendn, relh, reln, aside, ready, nready, avail, drt, prio, noise, dev_noise,
                               op_unit, fav_parent, unit_dev, dev, dur, memory_aware, mem, unit_persist, temp_bytes,
                               out_bytes, need, capacity, fifo, least, forced, cand_o, cand_t)
            if event_ties and i >= 0:
                i, d = _events.event_order(i, d, cand_o, cand_t, prio, noise, tp, pi, tr, dev, unit_dev, op_unit,
                                           out_t, avail, start, last_op)
            if i < 0:  # nothing fits anywhere: the highest-priority ready op goes below (placed ones dropped)
                i, byprio_n = _h.pop(byprio, byprio_n, 0, drt, prio, noise, False)
                while dev[i] >= 0:
                    i, byprio_n = _h.pop(byprio, byprio_n, 0, drt, prio, noise, False)
            nready -= 1  # out of the ready list: the last one takes its slot
            ready[pos[i]], pos[ready[nready]] = ready[nready], pos[i]
        else:
            i, hsize = _h.pop(heap, hsize, 0, drt, prio, noise, False)
        u = op_unit[i]
        if d < 0 and unit_dev[u] >= 0:
            d = unit_dev[u]
        if d < 0 and device_rule == DEVICE_FILL and select_rule != SELECT_ETF:
            d, cur = _place_fill(i, u, cur, dur, filled, static_mem, fill_cap, memory_aware, mem, unit_persist,
                                 temp_bytes, out_bytes, need, capacity)
        elif d < 0 and select_rule != SELECT_ETF:
            d = _place_best(i, u, device_rule, dur, avail, drt, istart, iend, icnt, dev_noise, memory_aware, mem,
                            unit_persist, temp_bytes, out_bytes, need, capacity)
        if d < 0:
            d = _most_free(i, dur, capacity, mem, need)
        if unit_dev[u] < 0:  # commit
            unit_dev[u] = d
            mem[d] += unit_persist[u]
            if etf:
                _room.unit_committed(u, d, uptr, uops, forced, inready, counted)
        if etf:
            _room.placed(i, d, forced, inready, counted)
        start[i] = _commit(i, d, device_rule, tp, pi, tr, dev, unit_dev, op_unit, out_t, avail, istart, iend, icnt)
        last_op[d] = i
        filled[d] += static_mem[i]
        _account_memory(i, d, tp.pred_ptr, tp.pred_idx, tp.pred_edge, pi.edge_bytes, dev, copies, rem, mem,
                        out_bytes)
        for k in range(tp.succ_ptr[i], tp.succ_ptr[i + 1]):
            s = tp.succ_idx[k]
            indeg[s] -= 1
            if indeg[s] == 0:
                _data_ready(s, tp, pi, tr, dev, unit_dev, op_unit, out_t, avail, copies, drt, need, prio, noise, fifo,
                            event_ties, start)
                if not etf:
                    hsize = _h.push(heap, hsize, s, 0, drt, prio, noise, False)
                else:
                    nready, byprio_n = _etf_ready(s, ready, pos, nready, byprio, byprio_n, pendh, pendn, unit_dev,
                                                  op_unit, dur, unit_persist, temp_bytes, out_bytes, need, least,
                                                  forced, inready, counted, drt, prio, noise)
    if not pi.trailing:
        return dev, start, out_t, out_t.max() if n else 0.0
    last = tr.last[0]
    for dd in range(nd):
        last = max(last, avail[dd])
    return dev, start, out_t, last
