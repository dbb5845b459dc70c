"""Compiled DAG kernels (numba) over the CSR arrays of :class:`engine.graph.compgraph.CompGraph`.

Private: the public API is in :mod:`engine.graph.compgraph` and :mod:`engine.graph.dag`. Kernels are
cached on disk (``cache=True``) so only the first run on a machine pays for compilation.
"""

from __future__ import annotations

import numpy as np
from numba import njit


def readonly(a: np.ndarray) -> np.ndarray:
    """``a`` as a read-only array: itself when it is one, else a read-only view (no copy).

    numba compiles a kernel once per argument types, and a read-only array is another type than a
    writable one. A placement from :class:`~engine.placement.Placement` is read-only, one from an RL
    loop writable; a graph's arrays are read-only, a duration vector writable. Every array a kernel only
    reads goes in read-only, so each kernel has one compiled version: the one ``make setup`` puts in
    numba's cache (``placelab/warmup.py``), not a second compiled in the first process that needs it
    (docs/lab/2026-11-27-byte-code-and-kernel-versions.md).
    """
    if not a.flags.writeable:
        return a
    view = a.view()
    view.flags.writeable = False
    return view


@njit(cache=True)
def topo_order(n, succ_ptr, succ_idx, pred_ptr):
    """Kahn's algorithm, FIFO seeded with the sources in index order.

    Returns fewer than ``n`` ops when the graph has a cycle.
    """
    indeg = np.empty(n, np.int64)
    for i in range(n):
        indeg[i] = pred_ptr[i + 1] - pred_ptr[i]
    order = np.empty(n, np.int64)
    head = 0
    tail = 0
    for i in range(n):
        if indeg[i] == 0:
            order[tail] = i
            tail += 1
    while head < tail:
        u = order[head]
        head += 1
        for k in range(succ_ptr[u], succ_ptr[u + 1]):
            v = succ_idx[k]
            indeg[v] -= 1
            if indeg[v] == 0:
                order[tail] = v
                tail += 1
    return order[:tail]


@njit(cache=True)
def find_cycle(n, succ_ptr, succ_idx, partial_order):
    """One cycle (as op indices, first op repeated at the end) among ops not in ``partial_order``."""
    done = np.zeros(n, np.bool_)
    for i in partial_order:
        done[i] = True
    # every remaining op lies on or leads to a cycle; walk successors that are not done
    state = np.zeros(n, np.int8)  # 0 unseen, 1 on stack, 2 finished
    stack = np.empty(n, np.int64)
    ptrs = np.empty(n, np.int64)
    for s in range(n):
        if done[s] or state[s] != 0:
            continue
        top = 0
        stack[0] = s
        ptrs[0] = succ_ptr[s]
        state[s] = 1
        while top >= 0:
            u = stack[top]
            if ptrs[top] < succ_ptr[u + 1]:
                v = succ_idx[ptrs[top]]
                ptrs[top] += 1
                if done[v]:
                    continue
                if state[v] == 1:
                    start = 0
                    while stack[start] != v:
                        start += 1
                    cyc = np.empty(top - start + 2, np.int64)
                    for j in range(start, top + 1):
                        cyc[j - start] = stack[j]
                    cyc[top - start + 1] = v
                    return cyc
                if state[v] == 0:
                    top += 1
                    stack[top] = v
                    ptrs[top] = succ_ptr[v]
                    state[v] = 1
            else:
                state[u] = 2
                top -= 1
    return np.empty(0, np.int64)


@njit(cache=True)
def topo_levels(order, pred_ptr, pred_idx):
    """Level of each op: 0 for sources, else 1 + max level of its predecessors."""
    n = len(order)
    level = np.zeros(n, np.int64)
    for u in order:
        best = -1
        for k in range(pred_ptr[u], pred_ptr[u + 1]):
            lv = level[pred_idx[k]]
            if lv > best:
                best = lv
        level[u] = best + 1
    return level


@njit(cache=True)
def longest_from_sources(order, pred_ptr, pred_idx, pred_edge, node_cost, edge_cost):
    """t-level: longest path from an entry op to each op, excluding the op's own cost."""
    n = len(order)
    t = np.zeros(n, np.float64)
    for u in order:
        best = 0.0
        for k in range(pred_ptr[u], pred_ptr[u + 1]):
            p = pred_idx[k]
            c = t[p] + node_cost[p] + edge_cost[pred_edge[k]]
            if c > best:
                best = c
        t[u] = best
    return t


@njit(cache=True)
def longest_to_sinks(order, succ_ptr, succ_idx, succ_edge, node_cost, edge_cost):
    """b-level: longest path from each op to an exit op, including the op's own cost."""
    n = len(order)
    b = np.zeros(n, np.float64)
    for j in range(n - 1, -1, -1):
        u = order[j]
        best = 0.0
        for k in range(succ_ptr[u], succ_ptr[u + 1]):
            c = edge_cost[succ_edge[k]] + b[succ_idx[k]]
            if c > best:
                best = c
        b[u] = node_cost[u] + best
    return b


@njit(cache=True)
def descendant_bits(order, succ_ptr, succ_idx, words):
    """Bitset (uint64 words) of each op's descendants, op itself excluded."""
    n = len(order)
    bits = np.zeros((n, words), np.uint64)
    one = np.uint64(1)
    for j in range(n - 1, -1, -1):
        u = order[j]
        for k in range(succ_ptr[u], succ_ptr[u + 1]):
            v = succ_idx[k]
            bits[u, v >> 6] |= one << np.uint64(v & 63)
            for w in range(words):
                bits[u, w] |= bits[v, w]
    return bits
