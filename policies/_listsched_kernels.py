"""Compiled list-scheduling kernel (numba) shared by the placers of :mod:`policies.list_scheduling`.

Private. One kernel covers the select / place loop of every list scheduler (Kwok & Ahmad
1999): *select* a ready op (highest priority, or the ETF pair with the earliest start), then
*place* it by a device rule. Kernels are cached on disk (``cache=True``).

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

#: select rules
SELECT_PRIORITY = 0  # highest priority ready op (ties: lower noise)
SELECT_ETF = 1  # ready (op, device) pair with the earliest start (ties: priority, then noise)
#: device rules (SELECT_PRIORITY only)
DEVICE_EST = 0  # earliest start time, no insertion
DEVICE_EFT_INSERT = 1  # earliest finish time with insertion into idle gaps (HEFT)
DEVICE_FILL = 2  # fill devices in order up to a memory cap (m-TOPO)

_TOL = 1e-15
#: ETF pops at most this many ops that do not fit a device before it scans that device's heap once instead
ASIDE_LIMIT = 16


@njit(cache=True)
def _better(key, noise, best_key, best_noise):
    if key < best_key - _TOL:
        return True
    return key <= best_key + _TOL and noise < best_noise


@njit(cache=True)
def _heap_less(a, b, prio, noise):
    if prio[a] != prio[b]:
        return prio[a] > prio[b]
    return noise[a] < noise[b]


@njit(cache=True)
def _less(a, b, d, drt, prio, noise, by_time):
    """Heap order: with ``by_time``, earlier data-ready time on device ``d`` first; then higher priority, then
    lower noise (:func:`_heap_less`)."""
    if by_time and drt[a, d] != drt[b, d]:
        return drt[a, d] < drt[b, d]
    return _heap_less(a, b, prio, noise)


@njit(cache=True)
def _push(heap, size, v, d, drt, prio, noise, by_time):
    """Push ``v`` on the heap ``heap[:size]`` (order: :func:`_less`); returns the new size."""
    k = size
    heap[k] = v
    while k > 0:
        parent = (k - 1) // 2
        if _less(heap[k], heap[parent], d, drt, prio, noise, by_time):
            heap[k], heap[parent] = heap[parent], heap[k]
            k = parent
        else:
            break
    return size + 1


@njit(cache=True)
def _pop(heap, size, d, drt, prio, noise, by_time):
    """Pop the first of the heap ``heap[:size]`` (order: :func:`_less`); returns it and the new size."""
    top = heap[0]
    size -= 1
    heap[0] = heap[size]
    k = 0
    while True:
        left = 2 * k + 1
        if left >= size:
            break
        c = left
        if left + 1 < size and _less(heap[left + 1], heap[left], d, drt, prio, noise, by_time):
            c = left + 1
        if _less(heap[c], heap[k], d, drt, prio, noise, by_time):
            heap[c], heap[k] = heap[k], heap[c]
            k = c
        else:
            break
    return top, size


@njit(cache=True)
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


@njit(cache=True)
def _fits(o, u, dd, mem, unit_persist, temp_bytes, out_bytes, need, capacity):
    """Whether op ``o`` (of unit ``u``) fits on device ``dd``'s memory (module docstring)."""
    return mem[dd] + unit_persist[u] + temp_bytes[o] + out_bytes[o] + need[o, dd] <= capacity[dd]


@njit(cache=True)
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


@njit(cache=True)
def _etf_device_pick(d, pendh, pendn, relh, reln, aside, avail, drt, prio, noise, op_unit, fav_parent, unit_dev,
                     dev, dur, memory_aware, mem, unit_persist, temp_bytes, out_bytes, need, capacity):
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
            _, pendn[d] = _pop(pendh[d], pendn[d], d, drt, prio, noise, True)
        elif drt[top, d] <= avail[d]:
            _, pendn[d] = _pop(pendh[d], pendn[d], d, drt, prio, noise, True)
            reln[d] = _push(relh[d], reln[d], top, 0, drt, prio, noise, False)
        else:
            break
    pick, t, na = -1, np.inf, 0
    while reln[d] > 0 and na < ASIDE_LIMIT:
        top, reln[d] = _pop(relh[d], reln[d], 0, drt, prio, noise, False)
        status = _etf_status(top, d, op_unit, fav_parent, unit_dev, dev, dur, memory_aware, mem, unit_persist,
                             temp_bytes, out_bytes, need, capacity)
        if status == 1:
            pick, t = top, avail[d]
            reln[d] = _push(relh[d], reln[d], top, 0, drt, prio, noise, False)
            break
        if status == 2:
            aside[na] = top
            na += 1
    for k in range(na):
        reln[d] = _push(relh[d], reln[d], aside[k], 0, drt, prio, noise, False)
    if pick >= 0 or na == ASIDE_LIMIT:
        return pick, t, na == ASIDE_LIMIT
    na = 0
    while pendn[d] > 0 and na < ASIDE_LIMIT:
        top, pendn[d] = _pop(pendh[d], pendn[d], d, drt, prio, noise, True)
        status = _etf_status(top, d, op_unit, fav_parent, unit_dev, dev, dur, memory_aware, mem, unit_persist,
                             temp_bytes, out_bytes, need, capacity)
        if status == 1:
            pick, t = top, drt[top, d]
            pendn[d] = _push(pendh[d], pendn[d], top, d, drt, prio, noise, True)
            break
        if status == 2:
            aside[na] = top
            na += 1
    for k in range(na):
        pendn[d] = _push(pendh[d], pendn[d], aside[k], d, drt, prio, noise, True)
    return pick, t, na == ASIDE_LIMIT


@njit(cache=True)
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
                better = dev_noise[o, d] < dev_noise[o, best_d] if o == best_o else _heap_less(o, best_o, prio, noise)
            if better:
                best_o, best_d, best_t = o, d, t
    return best_o, best_d


@njit(cache=True)
def _select_etf(pendh, pendn, relh, reln, aside, ready, nready, avail, drt, prio, noise, dev_noise, op_unit,
                fav_parent, unit_dev, dev, dur, memory_aware, mem, unit_persist, temp_bytes, out_bytes, need, capacity):
    """ETF's choice (Hwang et al. 1989; Baechi's m-ETF): the ready (op, device) pair that starts earliest; ties
    by higher priority, then lower op noise, then (the same op) lower device noise. ``(op, device)``, with
    device -1 when no ready op fits anywhere. One pick per device from its
    heaps (:func:`_etf_device_pick`), so a step costs O(devices · log ops), not O(ready ops · devices) — except
    where memory is tight and a device's heaps hold more than ``ASIDE_LIMIT`` ops that do not fit: then one scan
    of every ready pair (:func:`_scan_pairs`), as before the heaps."""
    best_o, best_d, best_t = -1, -1, np.inf
    for d in range(dur.shape[1]):
        o, t, tight = _etf_device_pick(d, pendh, pendn, relh, reln, aside, avail, drt, prio, noise, op_unit,
                                       fav_parent, unit_dev, dev, dur, memory_aware, mem, unit_persist, temp_bytes,
                                       out_bytes, need, capacity)
        if tight:
            return _scan_pairs(ready, nready, avail, drt, prio, noise, dev_noise, op_unit, fav_parent, unit_dev, dev,
                               dur, memory_aware, mem, unit_persist, temp_bytes, out_bytes, need, capacity)
        if o < 0:
            continue
        better = best_o < 0 or t < best_t
        if not better and t == best_t:  # the same op on two devices: device noise; two ops: priority, noise
            better = dev_noise[o, d] < dev_noise[o, best_d] if o == best_o else _heap_less(o, best_o, prio, noise)
        if better:
            best_o, best_d, best_t = o, d, t
    return best_o, best_d


@njit(cache=True)
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


@njit(cache=True)
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
        if d < 0 or _better(key, dev_noise[i, dd], best_key, best_noise):
            best_key = key
            best_noise = dev_noise[i, dd]
            d = dd
    return d


@njit(cache=True)
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


@njit(cache=True)
def _start_on(i, d, device_rule, avail, drt, dur, istart, iend, icnt):
    """Op ``i``'s start on device ``d`` (HEFT: inserted into the first idle gap it fits, recorded)."""
    if device_rule != DEVICE_EFT_INSERT:
        return max(avail[d], drt[i, d])
    t, pos = _insertion_start(istart[d], iend[d], icnt[d], drt[i, d], dur[i, d])
    for k in range(icnt[d], pos, -1):
        istart[d, k] = istart[d, k - 1]
        iend[d, k] = iend[d, k - 1]
    istart[d, pos] = t
    iend[d, pos] = t + dur[i, d]
    icnt[d] += 1
    return t


@njit(cache=True)
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


@njit(cache=True)
def _data_ready(s, pred_ptr, pred_idx, pred_edge, edge_bytes, dev, finish, copies, bw_inv, lat, drt, need):
    """A newly ready op ``s``: on every device, when its inputs arrive and the bytes it would receive."""
    for dd in range(drt.shape[1]):
        r_t = 0.0
        r_b = 0.0
        for kk in range(pred_ptr[s], pred_ptr[s + 1]):
            p = pred_idx[kk]
            pd = dev[p]
            if pd == dd:
                a = finish[p]
            else:
                b = edge_bytes[pred_edge[kk]]
                a = finish[p] + b * bw_inv[pd, dd] + lat[pd, dd]
                if copies[p, dd] == 0.0:
                    r_b += b
            if a > r_t:
                r_t = a
        drt[s, dd] = r_t
        need[s, dd] = r_b


@njit(cache=True)
def list_schedule(succ_ptr, succ_idx, succ_edge, pred_ptr, pred_idx, pred_edge, edge_bytes,
                  dur, op_unit, unit_dev0, unit_persist, out_bytes, temp_bytes,
                  bw_inv, lat, capacity, prio, noise, dev_noise,
                  select_rule, device_rule, memory_aware, fav_parent, fill_cap, static_mem):
    """Schedule every op; returns (device, start, finish) per op.

    ``dur[i, d]`` is +inf where op i's unit cannot run on d. ``unit_dev0[u]`` is the committed
    device of unit u or -1. ``fav_parent[i]`` (m-SCT) is the op whose favourite child i is, or -1.
    Each step selects a ready op, places it by the device rule, commits it and readies its successors.
    """
    n, nd = dur.shape
    unit_dev = unit_dev0.copy()
    dev = np.full(n, -1, np.int64)
    start, finish = np.zeros(n), np.zeros(n)
    avail, mem, filled = np.zeros(nd), np.zeros(nd), np.zeros(nd)
    for u in range(len(unit_dev)):
        if unit_dev[u] >= 0:
            mem[unit_dev[u]] += unit_persist[u]
    indeg = pred_ptr[1:] - pred_ptr[:-1]
    rem = succ_ptr[1:] - succ_ptr[:-1]
    copies, drt, need = np.zeros((n, nd)), np.zeros((n, nd)), np.zeros((n, nd))
    istart, iend = np.zeros((nd, n)), np.zeros((nd, n))
    icnt = np.zeros(nd, np.int64)
    heap = np.empty(n, np.int64)  # ready ops by priority (not ETF)
    hsize, cur = 0, 0
    etf = select_rule == SELECT_ETF
    m = n if etf else 0
    ready, pos = np.empty(m, np.int64), np.empty(m, np.int64)  # ETF: the ready ops, each one's slot
    nready = 0
    pendh, relh = np.empty((nd, m), np.int64), np.empty((nd, m), np.int64)
    pendn, reln = np.zeros(nd, np.int64), np.zeros(nd, np.int64)
    aside = np.empty(m, np.int64)
    for i in range(n):
        if indeg[i] == 0:
            if not etf:
                hsize = _push(heap, hsize, i, 0, drt, prio, noise, False)
                continue
            ready[nready], pos[i] = i, nready
            nready += 1
            for dd in range(nd):
                if dur[i, dd] < np.inf:
                    pendn[dd] = _push(pendh[dd], pendn[dd], i, dd, drt, prio, noise, True)
    for _step in range(n):
        d = -1
        if etf:  # select and place at once
            i, d = _select_etf(pendh, pendn, relh, reln, aside, ready, nready, avail, drt, prio, noise, dev_noise,
                               op_unit, fav_parent, unit_dev, dev, dur, memory_aware, mem, unit_persist, temp_bytes,
                               out_bytes, need, capacity)
            if i < 0:  # nothing fits anywhere: the highest-priority ready op goes below
                i = ready[0]
                for r in range(1, nready):
                    if _heap_less(ready[r], i, prio, noise):
                        i = ready[r]
            nready -= 1  # out of the ready list: the last one takes its slot
            ready[pos[i]], pos[ready[nready]] = ready[nready], pos[i]
        else:
            i, hsize = _pop(heap, hsize, 0, drt, prio, noise, False)
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
        dev[i] = d
        start[i] = _start_on(i, d, device_rule, avail, drt, dur, istart, iend, icnt)
        finish[i] = start[i] + dur[i, d]
        avail[d] = max(avail[d], finish[i])
        filled[d] += static_mem[i]
        _account_memory(i, d, pred_ptr, pred_idx, pred_edge, edge_bytes, dev, copies, rem, mem, out_bytes)
        for k in range(succ_ptr[i], succ_ptr[i + 1]):
            s = succ_idx[k]
            indeg[s] -= 1
            if indeg[s] == 0:
                _data_ready(s, pred_ptr, pred_idx, pred_edge, edge_bytes, dev, finish, copies, bw_inv, lat, drt,
                            need)
                if not etf:
                    hsize = _push(heap, hsize, s, 0, drt, prio, noise, False)
                else:
                    ready[nready], pos[s] = s, nready
                    nready += 1
                    for dd in range(nd):
                        if dur[s, dd] < np.inf:
                            pendn[dd] = _push(pendh[dd], pendn[dd], s, dd, drt, prio, noise, True)
    return dev, start, finish
