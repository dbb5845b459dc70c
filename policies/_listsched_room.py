"""Which devices can take no ready op at all: m-ETF's shortcut when memory is exhausted. Private.

The ETF kernel (``policies/_listsched_kernels.py``) asks every device for its best ready op. Where a graph needs
more memory than the cluster has, most ready ops fit nowhere, and each device's heaps were popped through, then
every ready (op, device) pair scanned: O(ready ops · devices) a step, most of m-ETF's and m-SCT's time on a
100k-op random DAG. A device can take a ready op only if the op's colocation unit is committed there (such ops
ignore memory) or the op fits in its free memory. This module keeps, per device, the number of ready ops whose
unit is committed there and a lower bound on the memory any other ready op needs there — exact after each full
scan, lowered when an op becomes ready — so a device with neither is skipped without touching its heaps. The
choice is unchanged: a skipped device had nothing to offer. Kernels cached on disk (``cache=True``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: A device is skipped only when the bound misses its free memory by more than this share of its capacity, so
#: that rounding in a different order than :func:`policies._listsched_kernels._fits` never skips a fit.
SLACK = 1e-9


@njit(cache=True)
def unit_members(op_unit, num_units):
    """The ops of each unit as CSR: ``ops[ptr[u]:ptr[u + 1]]``."""
    ptr = np.zeros(num_units + 1, np.int64)
    for i in range(len(op_unit)):
        ptr[op_unit[i] + 1] += 1
    for u in range(num_units):
        ptr[u + 1] += ptr[u]
    fill = ptr[:-1].copy()
    ops = np.empty(len(op_unit), np.int64)
    for i in range(len(op_unit)):
        ops[fill[op_unit[i]]] = i
        fill[op_unit[i]] += 1
    return ptr, ops


@njit(cache=True, _nrt=False)
def need_on(o, d, op_unit, unit_persist, temp_bytes, out_bytes, need):
    """The memory op ``o`` needs on device ``d`` beyond what is in use there (as ``_fits`` counts it)."""
    return unit_persist[op_unit[o]] + temp_bytes[o] + out_bytes[o] + need[o, d]


@njit(cache=True, _nrt=False)
def became_ready(s, unit_dev, op_unit, dur, unit_persist, temp_bytes, out_bytes, need, least, forced, inready,
                 counted):
    """Op ``s`` is ready: counted on its unit's device, or its needs lower the bound of every device it runs on."""
    inready[s] = True
    d = unit_dev[op_unit[s]]
    if d >= 0:
        forced[d] += 1
        counted[s] = True
        return
    for dd in range(dur.shape[1]):
        if dur[s, dd] < np.inf:
            least[dd] = min(least[dd], need_on(s, dd, op_unit, unit_persist, temp_bytes, out_bytes, need))


@njit(cache=True, _nrt=False)
def unit_committed(u, d, ptr, ops, forced, inready, counted):
    """Unit ``u`` is committed to ``d``: its ready ops are now counted there."""
    for k in range(ptr[u], ptr[u + 1]):
        x = ops[k]
        if inready[x] and not counted[x]:
            forced[d] += 1
            counted[x] = True


@njit(cache=True, _nrt=False)
def placed(i, d, forced, inready, counted):
    """Op ``i`` left the ready ops, placed on ``d``."""
    inready[i] = False
    if counted[i]:
        forced[d] -= 1


@njit(cache=True, _nrt=False)
def nothing_for(d, mem, capacity, least, forced):
    """Whether device ``d`` can take no ready op: none is committed there and none other fits."""
    return forced[d] == 0 and mem[d] + least[d] > capacity[d] * (1.0 + SLACK)


@njit(cache=True, _nrt=False)
def rescan(ready, nready, unit_dev, op_unit, dur, unit_persist, temp_bytes, out_bytes, need, least):
    """The bound, exact: the least any ready op of an uncommitted unit needs on each device it runs on."""
    least[:] = np.inf
    for r in range(nready):
        o = ready[r]
        if unit_dev[op_unit[o]] >= 0:
            continue
        for dd in range(dur.shape[1]):
            if dur[o, dd] < np.inf:
                least[dd] = min(least[dd], need_on(o, dd, op_unit, unit_persist, temp_bytes, out_bytes, need))
