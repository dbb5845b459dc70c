"""A plain ETF list scheduler (Hwang et al. 1989; Baechi's m-ETF and m-SCT) for the property test of the kernel.

Deliberately simple: every step scans every ready (op, device) pair, as the kernel did before issue 55 gave it
per-device heaps; the rules are the kernel's (``policies/_listsched_kernels.py``): the pair that starts earliest,
ties by higher priority, lower op noise, then (the same op) lower device noise; an op of a committed unit only on
its device; m-SCT's favourite child on its parent's device when it can run and (memory-aware) fits there; a device
without room is skipped; when nothing fits anywhere, the highest-priority ready op goes to the runnable device with
the most free memory. Transfers as in the work-conserving mode without contention (an input from another device
arrives latency + bytes / bandwidth after its producer's end), worked out here; memory uses the kernel's own
helpers, which the heaps do not change.
"""

from __future__ import annotations

import numpy as np

from policies import _listsched_kernels as _k


def _key(o: int, d: int, t: float, prio, noise, dev_noise) -> tuple:
    return (t, -prio[o], noise[o], dev_noise[o, d])


def etf_schedule(succ_ptr, succ_idx, succ_edge, pred_ptr, pred_idx, pred_edge, edge_bytes, dur, op_unit, unit_dev0,
                 unit_persist, out_bytes, temp_bytes, bw_inv, lat, capacity, prio, noise, dev_noise, memory_aware,
                 fav_parent) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(device, start, finish) per op, as ``_k.list_schedule(..., SELECT_ETF, DEVICE_EST, ...)`` returns them."""
    n, nd = dur.shape
    unit_dev = unit_dev0.copy()
    dev = np.full(n, -1, np.int64)
    start, finish = np.zeros(n), np.zeros(n)
    avail, mem = np.zeros(nd), np.zeros(nd)
    for u, d in enumerate(unit_dev):
        if d >= 0:
            mem[d] += unit_persist[u]
    indeg = pred_ptr[1:] - pred_ptr[:-1]
    rem = succ_ptr[1:] - succ_ptr[:-1]
    copies, drt, need = np.zeros((n, nd)), np.zeros((n, nd)), np.zeros((n, nd))
    ready = [i for i in range(n) if indeg[i] == 0]
    for _ in range(n):
        best = None
        for o in ready:
            u = op_unit[o]
            forced = unit_dev[u]
            fp = fav_parent[o]
            if forced < 0 and fp >= 0:
                pd = dev[fp]
                if dur[o, pd] < np.inf and (not memory_aware or _k._fits(o, u, pd, mem, unit_persist, temp_bytes,
                                                                           out_bytes, need, capacity)):
                    forced = pd
            for d in range(nd):
                if (forced >= 0 and d != forced) or dur[o, d] == np.inf:
                    continue
                if forced < 0 and memory_aware and not _k._fits(o, u, d, mem, unit_persist, temp_bytes, out_bytes,
                                                                 need, capacity):
                    continue
                key = _key(o, d, max(avail[d], drt[o, d]), prio, noise, dev_noise)
                if best is None or key < best[0]:
                    best = (key, o, d)
        if best is None:  # nothing fits anywhere
            i = max(ready, key=lambda o: (prio[o], -noise[o]))
            d = unit_dev[op_unit[i]]
            if d < 0:
                d = _k._most_free(i, dur, capacity, mem, need)
        else:
            _, i, d = best
        ready.remove(i)
        u = op_unit[i]
        if unit_dev[u] < 0:
            unit_dev[u] = d
            mem[d] += unit_persist[u]
        dev[i] = d
        start[i] = max(avail[d], drt[i, d])
        finish[i] = start[i] + dur[i, d]
        avail[d] = max(avail[d], finish[i])
        _k._account_memory(i, d, pred_ptr, pred_idx, pred_edge, edge_bytes, dev, copies, rem, mem, out_bytes)
        for k in range(succ_ptr[i], succ_ptr[i + 1]):
            s = succ_idx[k]
            indeg[s] -= 1
            if indeg[s] == 0:
                for dd in range(nd):
                    for kk in range(pred_ptr[s], pred_ptr[s + 1]):
                        p, b = pred_idx[kk], edge_bytes[pred_edge[kk]]
                        pd = dev[p]
                        arrive = finish[p] if pd == dd else finish[p] + b * bw_inv[pd, dd] + lat[pd, dd]
                        drt[s, dd] = max(drt[s, dd], arrive)
                        need[s, dd] += b if pd != dd and copies[p, dd] == 0.0 else 0.0
                ready.append(s)
    return dev, start, finish
