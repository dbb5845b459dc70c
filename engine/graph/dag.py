"""DAG helpers on :class:`~engine.graph.compgraph.CompGraph`: levels, critical paths, reachability.

* t-level / b-level follow DOPPLER App. E (Yao et al. 2025): the t-level of v is the sum of
  computation and communication costs on the longest path from an entry op to v (v's own
  cost excluded); the b-level is the same from v to an exit op, v's cost included.
* ancestors / descendants / parallel sets are Placeto §2.2's pooling sets: the nodes that
  can reach v, that v can reach, and those that neither reach nor are reached by v.

All costs are in seconds; by default an op costs its time on its fastest device kind and an
edge costs nothing (communication-free), which is the usual list-scheduling convention
when no cluster is fixed. :func:`engine.cluster.edge_transfer_cost` gives the edge costs of a cluster (and
of a placement): pass it as ``edge_cost`` for DOPPLER's t-/b-levels with communication.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.graph import _kernels as _k
from engine.graph._kernels import readonly
from engine.graph.compgraph import CompGraph

__all__ = [
    "CriticalPath",
    "ancestors",
    "b_level",
    "critical_path",
    "descendants",
    "levels",
    "parallel",
    "parallelism_profile",
    "reachability",
    "t_level",
]


def _costs(g: CompGraph, node_cost, edge_cost) -> tuple[np.ndarray, np.ndarray]:
    nc = g.min_compute() if node_cost is None else np.asarray(node_cost, dtype=np.float64)
    ec = np.zeros(g.num_edges) if edge_cost is None else np.asarray(edge_cost, dtype=np.float64)
    if nc.shape != (g.num_ops,) or ec.shape != (g.num_edges,):
        raise ValueError("node_cost must have one entry per op and edge_cost one per edge")
    return readonly(np.ascontiguousarray(nc)), readonly(np.ascontiguousarray(ec))



def levels(g: CompGraph) -> np.ndarray:
    """Topological level of each op (sources are level 0)."""
    return _k.topo_levels(g.topo_order, g.pred.ptr, g.pred.idx)


def parallelism_profile(g: CompGraph) -> np.ndarray:
    """Number of ops on each topological level (index = level)."""
    return np.bincount(levels(g))


def t_level(g: CompGraph, node_cost=None, edge_cost=None) -> np.ndarray:
    """Longest path length (s) from an entry op to each op, the op's own cost excluded."""
    nc, ec = _costs(g, node_cost, edge_cost)
    return _k.longest_from_sources(g.topo_order, g.pred.ptr, g.pred.idx, g.pred.edge, nc, ec)


def b_level(g: CompGraph, node_cost=None, edge_cost=None) -> np.ndarray:
    """Longest path length (s) from each op to an exit op, the op's own cost included."""
    nc, ec = _costs(g, node_cost, edge_cost)
    return _k.longest_to_sinks(g.topo_order, g.succ.ptr, g.succ.idx, g.succ.edge, nc, ec)


@dataclass(frozen=True)
class CriticalPath:
    """The longest entry-to-exit path: its length (s) and its ops in order."""

    length_s: float
    ops: np.ndarray


def critical_path(g: CompGraph, node_cost=None, edge_cost=None) -> CriticalPath:
    """The critical path under the given costs (fastest-kind compute, free communication by default).

    Ties are broken towards the lower op index, so the result is deterministic.
    """
    nc, ec = _costs(g, node_cost, edge_cost)
    b = _k.longest_to_sinks(g.topo_order, g.succ.ptr, g.succ.idx, g.succ.edge, nc, ec)
    entries = np.flatnonzero(g.pred.ptr[1:] == g.pred.ptr[:-1])
    u = int(entries[np.argmax(b[entries])])
    path = [u]
    while g.succ.ptr[u + 1] > g.succ.ptr[u]:
        lo, hi = g.succ.ptr[u], g.succ.ptr[u + 1]
        vals = ec[g.succ.edge[lo:hi]] + b[g.succ.idx[lo:hi]]
        u = int(g.succ.idx[lo + int(np.argmax(vals))])
        path.append(u)
    return CriticalPath(float(b[path[0]]), np.asarray(path, dtype=np.int64))


def reachability(g: CompGraph) -> np.ndarray:
    """Boolean matrix ``R[u, v]`` = v is reachable from u (u excluded). O(n²/64) words of memory."""
    n = g.num_ops
    words = (n + 63) // 64
    bits = _k.descendant_bits(g.topo_order, g.succ.ptr, g.succ.idx, words)
    unpacked = np.unpackbits(bits.view(np.uint8), axis=1, bitorder="little")
    return unpacked[:, :n].astype(bool)


def descendants(g: CompGraph, v: int, reach: np.ndarray | None = None) -> np.ndarray:
    """Indices of the ops reachable from op ``v`` (Placeto's *children* pooling set)."""
    r = reachability(g) if reach is None else reach
    return np.flatnonzero(r[v])


def ancestors(g: CompGraph, v: int, reach: np.ndarray | None = None) -> np.ndarray:
    """Indices of the ops that can reach op ``v`` (Placeto's *parents* pooling set)."""
    r = reachability(g) if reach is None else reach
    return np.flatnonzero(r[:, v])


def parallel(g: CompGraph, v: int, reach: np.ndarray | None = None) -> np.ndarray:
    """Indices of ops that neither reach nor are reached by ``v`` (Placeto's *parallel* set)."""
    r = reachability(g) if reach is None else reach
    related = r[v] | r[:, v]
    related[v] = True
    return np.flatnonzero(~related)
