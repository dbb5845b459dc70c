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
def _heap_push(heap, size, v, prio, noise):
    k = size
    heap[k] = v
    while k > 0:
        parent = (k - 1) // 2
        if _heap_less(heap[k], heap[parent], prio, noise):
            heap[k], heap[parent] = heap[parent], heap[k]
            k = parent
        else:
            break
    return size + 1


@njit(cache=True)
def _heap_pop(heap, size, prio, noise):
    top = heap[0]
    size -= 1
    heap[0] = heap[size]
    k = 0
    while True:
        left = 2 * k + 1
        if left >= size:
            break
        c = left
        if left + 1 < size and _heap_less(heap[left + 1], heap[left], prio, noise):
            c = left + 1
        if _heap_less(heap[c], heap[k], prio, noise):
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
def _select_etf(ready, nready, op_unit, fav_parent, unit_dev, dev, dur, memory_aware, mem, unit_persist,
                temp_bytes, out_bytes, need, capacity, avail, drt, prio, noise, dev_noise):
    """ETF's choice among the ready ops: ``(r, d)``, the ready slot and device of the pair with the
    earliest start (ties: priority, then noise); ``d = -1`` when nothing fits anywhere (then the
    highest-priority ready op, placed by the fallback rule)."""
    nd = dur.shape[1]
    best_t = np.inf
    best_r = -1
    d = -1
    for r in range(nready):
        o = ready[r]
        u = op_unit[o]
        fp = fav_parent[o]
        forced = unit_dev[u]
        if forced < 0 and fp >= 0:  # m-SCT: a favourite child follows its parent if it can
            pd = dev[fp]
            if dur[o, pd] < np.inf and (not memory_aware or _fits(o, u, pd, mem, unit_persist, temp_bytes,
                                                                  out_bytes, need, capacity)):
                forced = pd
        for dd in range(nd):
            if (forced >= 0 and dd != forced) or dur[o, dd] == np.inf:
                continue
            if forced < 0 and memory_aware and not _fits(o, u, dd, mem, unit_persist, temp_bytes, out_bytes,
                                                         need, capacity):
                continue
            t = max(avail[dd], drt[o, dd])
            better = False
            if best_r < 0 or t < best_t - _TOL:
                better = True
            elif t <= best_t + _TOL:
                bo = ready[best_r]
                if prio[o] > prio[bo]:
                    better = True
                elif prio[o] == prio[bo]:  # same op: device noise; else op noise
                    better = dev_noise[o, dd] < dev_noise[o, d] if o == bo else noise[o] < noise[bo]
            if better:
                best_t = t
                best_r = r
                d = dd
    if best_r < 0:  # nothing fits anywhere: the highest-priority ready op goes below
        best_r = 0
        for r in range(1, nready):
            if _heap_less(ready[r], ready[best_r], prio, noise):
                best_r = r
    return best_r, d


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
    heap, ready = np.empty(n, np.int64), np.empty(n, np.int64)
    hsize, nready, cur = 0, 0, 0
    for i in range(n):
        if indeg[i] == 0:
            if select_rule == SELECT_ETF:
                ready[nready] = i
                nready += 1
            else:
                hsize = _heap_push(heap, hsize, i, prio, noise)
    for _step in range(n):
        d = -1
        if select_rule == SELECT_ETF:  # select and place at once
            r, d = _select_etf(ready, nready, op_unit, fav_parent, unit_dev, dev, dur, memory_aware, mem,
                               unit_persist, temp_bytes, out_bytes, need, capacity, avail, drt, prio, noise,
                               dev_noise)
            i = ready[r]
            nready -= 1
            ready[r] = ready[nready]
        else:
            i, hsize = _heap_pop(heap, hsize, prio, noise)
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
                if select_rule == SELECT_ETF:
                    ready[nready] = s
                    nready += 1
                else:
                    hsize = _heap_push(heap, hsize, s, prio, noise)
    return dev, start, finish
