"""DOPPLER's graph and device features (Yao et al. 2025, §4.1 and App. E), and the critical-path
estimates its teacher and its ablations use.

Costs (seconds), App. E:

* **compute** of op v: its mean compute time over the devices that can run it (plus the
  cluster's per-op overhead for non-zero ops, as the list schedulers count it).
* **transfer cost** of an edge u → w: the edge's own ``transfer_s`` where the graph gives one
  (DOPPLER's text files), else latency + bytes / bandwidth of the cluster's default link
  (:func:`engine.cluster.edge_transfer_cost`; an edge carries its producer's output). The paper
  multiplies the bytes by a "communication factor" fitted to its machine; here the cluster's
  link gives the time. It is also the *edge feature*.

Static node features X_V (n × 5, App. E.1), each column z-scored over the ops:
compute, b-level, t-level, transfer in (Σ of the in-edges' costs), transfer out (Σ of the
out-edges' costs: out-degree × the output's transfer cost). b- and t-levels are :func:`engine.graph.dag.b_level` /
:func:`engine.graph.dag.t_level` with those node and edge costs: the longest path to an exit
(v's compute included) and from an entry (v's compute excluded), computation and
communication counted.

Paths (§4.2, used by SEL's eq. 3): v's **b-level path** follows, from v, the successor that
realises the b-level until an exit; its **t-level path** follows the predecessor that realises
the t-level back to an entry. Both contain v. Ties go to the lower op index. (The paper's
text swaps the words "entry" and "exit" in the definition; we use the standard list-scheduling
meaning, which its App. E costs also use.)

Dynamic device features X_D (D × 5, App. E.2) for the op v being placed, from a running
list-scheduling estimate of the partial placement (each placed op starts at its earliest
start on its device, no link contention — the critical-path heuristic's own estimate):
total compute already placed on d; compute of v's predecessors placed on d; earliest start and
latest end among those predecessors (0 where none); and v's earliest start on d (inputs'
arrival there — an edge's ``transfer_s``, else latency + bytes / bandwidth of the link between
the two devices — and when d frees). Each column z-scored over the devices.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np

from engine.cluster import Cluster, edge_transfer_cost
from engine.graph.compgraph import CompGraph
from engine.graph.dag import b_level, t_level
from engine.placement import compute_matrix
from policies.rl.doppler import _assign_kernel as _k

__all__ = ["DopplerGraph", "EstimatedSchedule", "graph_tensors", "owned", "path_members", "zscore"]


def owned(a: np.ndarray, dtype: type = np.float64) -> np.ndarray:
    """A C-ordered, writable copy of ``a``: the one argument type the compiled ASSIGN kernels are built
    for (numba compiles once per type, and a read-only or strided array is another type)."""
    return np.array(a, dtype=dtype, order="C", copy=True)


def zscore(x: np.ndarray, axis: int = 0) -> np.ndarray:
    """``(x − mean) / std`` along ``axis``; a constant column becomes 0."""
    x = np.asarray(x, dtype=np.float64)
    dev = x - x.mean(axis=axis, keepdims=True)
    sd = np.sqrt((dev * dev).mean(axis=axis, keepdims=True))
    return np.where(sd > 0, dev / np.where(sd > 0, sd, 1.0), 0.0)


def path_members(graph: CompGraph, level: np.ndarray, node_cost: np.ndarray, edge_cost: np.ndarray,
                 towards: str) -> tuple[np.ndarray, np.ndarray]:
    """The ops on each op's b-level path (``towards="exit"``) or t-level path (``"entry"``).

    ``level`` is the b-level (resp. t-level) computed with ``node_cost`` and ``edge_cost``.
    Returns ``(rows, cols)``: op ``rows[k]``'s path contains op ``cols[k]`` (the op itself included).
    """
    n = graph.num_ops
    nxt = np.full(n, -1, dtype=np.int64)
    adj = graph.succ if towards == "exit" else graph.pred
    for v in range(n):
        lo, hi = adj.ptr[v], adj.ptr[v + 1]
        if hi == lo:
            continue
        nb, e = adj.idx[lo:hi], adj.edge[lo:hi]
        # the neighbour that realises the level: b(v) = c(v) + max(ec + b(w)); t(v) = max(t(u) + c(u) + ec)
        val = edge_cost[e] + level[nb] + (0.0 if towards == "exit" else node_cost[nb])
        best = np.flatnonzero(val >= val.max() - 1e-12 * max(1.0, abs(val.max())))
        nxt[v] = int(nb[best[np.argmin(nb[best])]])
    order = graph.topo_order[::-1] if towards == "exit" else graph.topo_order
    members: list[np.ndarray] = [np.empty(0, np.int64)] * n
    for v in order.tolist():  # successors (predecessors) are done before v
        members[v] = np.concatenate([[v], members[nxt[v]]]) if nxt[v] >= 0 else np.array([v])
    rows = np.repeat(np.arange(n), [len(m) for m in members])
    return rows, np.concatenate(members).astype(np.int64)


class KernelArrays(NamedTuple):
    """What the compiled ASSIGN kernels read of a :class:`DopplerGraph` (:mod:`policies.rl.doppler._assign_kernel`),
    in the order of :func:`~policies.rl.doppler._assign_kernel.assign_episode`'s first arguments."""

    pred_ptr: np.ndarray
    pred_idx: np.ndarray
    pred_edge: np.ndarray
    succ_ptr: np.ndarray
    succ_idx: np.ndarray
    given: np.ndarray  # each edge's given transfer time (s), NaN: none
    edge_bytes: np.ndarray
    bw_inv: np.ndarray  # (D × D) 1 / bandwidth of each link, 0 within a device
    latency: np.ndarray
    duration: np.ndarray
    b_level: np.ndarray


@dataclass
class DopplerGraph:
    """Everything DOPPLER needs of one graph on one cluster, computed once (static per graph).

    Attributes
    ----------
    compute : (n,) mean compute (s); ``duration`` (n, D) compute on each device (inf: cannot run).
    edge_cost : (m,) transfer cost of every edge (s); ``b_level``, ``t_level`` (n,) in seconds.
    x_v : (n, 5) z-scored static features; ``edge_index`` (2, 2m) the bidirected edges with
    ``edge_attr`` (2m, 1) the z-scored edge cost.
    b_path, t_path : (rows, cols) path memberships (see :func:`path_members`).
    """

    graph: CompGraph
    compute: np.ndarray
    duration: np.ndarray
    edge_cost: np.ndarray
    b_level: np.ndarray
    t_level: np.ndarray
    x_v: np.ndarray
    edge_index: np.ndarray
    edge_attr: np.ndarray
    b_path: tuple[np.ndarray, np.ndarray]
    t_path: tuple[np.ndarray, np.ndarray]
    bw_inv: np.ndarray
    latency: np.ndarray

    @classmethod
    def build(cls, graph: CompGraph, cluster: Cluster) -> DopplerGraph:
        cm = compute_matrix(graph, cluster)
        cm = cm + np.where(cm > 0, cluster.simulation.op_overhead_s, 0.0)
        finite = ~np.isnan(cm)
        duration = np.where(finite, cm, np.inf)
        compute = np.where(finite, cm, 0.0).sum(axis=1) / np.maximum(finite.sum(axis=1), 1)
        ec = edge_transfer_cost(graph, cluster)
        bl = b_level(graph, node_cost=compute, edge_cost=ec)
        tl = t_level(graph, node_cost=compute, edge_cost=ec)
        t_in = np.bincount(graph.edge_dst, weights=ec, minlength=graph.num_ops)
        t_out = np.bincount(graph.edge_src, weights=ec, minlength=graph.num_ops)
        x_v = zscore(np.column_stack([compute, bl, tl, t_in, t_out]))
        src, dst = graph.edge_src.astype(np.int64), graph.edge_dst.astype(np.int64)
        edge_index = np.stack([np.concatenate([src, dst]), np.concatenate([dst, src])])
        attr = np.tile(zscore(ec), 2)[:, None] if len(ec) else np.zeros((0, 1))
        bw = cluster.bandwidth
        return cls(graph, compute, duration, ec, bl, tl, x_v.astype(np.float32), edge_index,
                   attr.astype(np.float32), path_members(graph, bl, compute, ec, "exit"),
                   path_members(graph, tl, compute, ec, "entry"), np.where(np.isinf(bw), 0.0, 1.0 / bw),
                   np.asarray(cluster.latency, dtype=np.float64))

    @property
    def num_ops(self) -> int:
        return self.graph.num_ops

    @cached_property
    def kernel_arrays(self) -> KernelArrays:
        """The graph and cluster arrays the compiled ASSIGN kernels read, computed once."""
        g = self.graph
        return KernelArrays(owned(g.pred.ptr, np.int64), owned(g.pred.idx, np.int64), owned(g.pred.edge, np.int64),
                            owned(g.succ.ptr, np.int64), owned(g.succ.idx, np.int64), owned(g.edge_transfer_s),
                            owned(g.edge_bytes), owned(self.bw_inv), owned(self.latency), owned(self.duration),
                            owned(self.b_level))


class EstimatedSchedule:
    """The running list-scheduling estimate of a partial placement (see the module docstring)."""

    def __init__(self, dg: DopplerGraph) -> None:
        self.dg = dg
        n, nd = dg.duration.shape
        self.device = np.full(n, -1, dtype=np.int64)
        self.start = np.zeros(n)
        self.finish = np.zeros(n)
        self.free = np.zeros(nd)
        self.load = np.zeros(nd)

    def earliest_start(self, v: int) -> np.ndarray:
        """(D,) when v could start on each device: its inputs have arrived and the device is free."""
        k, out = self.dg.kernel_arrays, np.empty(len(self.free))
        _k.earliest_start(v, k.pred_ptr, k.pred_idx, k.pred_edge, k.given, k.edge_bytes, k.bw_inv, k.latency,
                          self.device, self.finish, self.free, out)
        return out

    def features(self, v: int) -> tuple[np.ndarray, np.ndarray]:
        """X_D for op v (raw, D × 5) and v's earliest start per device (the teacher's PLC signal)."""
        k, nd = self.dg.kernel_arrays, len(self.free)
        x, est = np.empty((nd, 5)), np.empty(nd)
        _k.device_features(v, k.pred_ptr, k.pred_idx, k.pred_edge, k.given, k.edge_bytes, k.bw_inv, k.latency,
                           k.duration, self.device, self.start, self.finish, self.free, self.load, x, est)
        return x, est

    def place(self, v: int, d: int, est_d: float) -> None:
        """Commit v to device d, starting at its earliest start ``est_d`` there."""
        _k.place_op(v, d, float(est_d), self.dg.kernel_arrays.duration, self.device, self.start, self.finish,
                    self.free, self.load)


def graph_tensors(dg: DopplerGraph) -> dict:
    """The networks' static inputs as torch tensors; edges typed by their distinct feature values
    (:class:`policies.rl.doppler.net.EdgeNetworkConv` evaluates the edge network once per type)."""
    import torch

    types, edge_type = np.unique(dg.edge_attr[:, 0], return_inverse=True)
    return {"x": torch.from_numpy(dg.x_v), "edge_index": torch.from_numpy(dg.edge_index),
            "edge_type": torch.from_numpy(edge_type.astype(np.int64)),
            "type_attr": torch.from_numpy(types.astype(np.float32)[:, None]),
            "b_rows": torch.from_numpy(dg.b_path[0]), "b_cols": torch.from_numpy(dg.b_path[1]),
            "t_rows": torch.from_numpy(dg.t_path[0]), "t_cols": torch.from_numpy(dg.t_path[1])}
