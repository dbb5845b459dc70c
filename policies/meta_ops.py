"""DOPPLER's meta-ops (Yao et al. 2025, App. B) read from op tags, or inferred from a graph without them.

The EnumerativeOptimizer (:mod:`policies.enumerative`) walks a topologically ordered list of
meta-ops, each with its shard ops (the expensive kernels made by sharding one operation) and its
reduce ops (the cheaper ones that aggregate their results). Our generators tag every op
(``meta{id}/shard{k}``, :mod:`engine.workloads.doppler`); the authors' published text files do not.

The authors' code cannot tell us: it never knows shards or reduces. Their critical-path teacher
uses only the edge lists and the two costs (xinyuyao/Doppler@87dda0d ``cp_utils.py:14-32``, longest
paths), their environment only each node's predecessors (``env/env.py:18-21``), and their reader
keeps a node's op type only as a one-hot feature (``utils.py:233-240``, ``:190-210``) that GDP alone
reads (``utils.py:59-60``). So :func:`infer_meta_ops` follows the paper's own definitions instead:

* **Reduce ops.** When the graph carries op types (the ``gdp_*`` files), the ``formation`` ops:
  App. A.1, "a placeholder operation that forces aggregations in meta-ops groups … to form a single
  tensor". Without types (the other published files), an op is a reduce op when it has at least one
  predecessor, none of them a reduce op, and it costs strictly less than each of them — App. B's
  "less expensive operations needed to aggregate and/or recompose the results" of the shard ops.
  On the published CHAINMM and FFNN files this rule marks exactly the ops their ``gdp_*`` twins type
  ``formation``.
* **Stages.** In topological order, a shard op's stage is one more than the largest stage among its
  predecessors (0 without any); a reduce op's is the largest among its predecessors' (0 without any),
  so it joins the meta-op whose results it aggregates.
* **Meta-ops.** One per stage, numbered in stage order: its shard ops, then its reduce ops, each in
  op-index order. For every edge u → v, v's stage is above u's, or they share one and v is a reduce
  op — the order Alg. 4 needs ("we always know the assignment of the inputs … before placing them").

Deviation: independent operations sharded at the same depth (CHAINMM's ``A × B`` and ``D × E``)
fall into one meta-op; Alg. 4 then balances their shards together instead of one after the other.
"""

from __future__ import annotations

import re
import warnings

import numpy as np

from engine.errors import quote
from engine.graph.compgraph import CompGraph
from engine.workloads.doppler import MetaOp

__all__ = ["FORMATION", "META_OP_SOURCES", "infer_meta_ops", "meta_ops_of", "reduce_mask", "tagged_meta_ops"]

#: The op type of the authors' reduce ops (App. A.1).
FORMATION = "formation"
#: Where the EnumerativeOptimizer gets its meta-ops: ``auto`` (tags when any op has one, else inferred),
#: ``tags`` (refuse a graph without) or ``infer``.
META_OP_SOURCES = ("auto", "tags", "infer")
_SCOPE = re.compile(r"^meta(\d+)/(shard|reduce)(\d+)$")


def tagged_meta_ops(graph: CompGraph) -> tuple[list[MetaOp], np.ndarray]:
    """Meta-ops of the tagged ops (by id) and the indices of the untagged ops.

    Like :func:`engine.workloads.doppler.meta_ops`, but ops without a meta-op scope are
    returned apart instead of raising.
    """
    shards: dict[int, list[int]] = {}
    reduces: dict[int, list[int]] = {}
    loose = []
    for i, sc in enumerate(graph.scope):
        m = _SCOPE.match(sc)
        if m is None:
            loose.append(i)
            continue
        mid = int(m.group(1))
        shards.setdefault(mid, [])
        reduces.setdefault(mid, [])
        (shards if m.group(2) == "shard" else reduces)[mid].append(i)
    metas = [MetaOp(k, tuple(shards[k]), tuple(reduces[k])) for k in sorted(shards)]
    return metas, np.asarray(loose, dtype=np.int64)


def _cost(graph: CompGraph) -> np.ndarray:
    """Each op's compute: its one time, else its fastest kind's (NaN where it runs nowhere)."""
    if not graph.kinds:
        return graph.compute_any
    with warnings.catch_warnings():  # an op with no kind: all-NaN row, NaN is the answer
        warnings.simplefilter("ignore", RuntimeWarning)
        fastest = np.nanmin(graph.compute_by_kind, axis=1)
    return np.where(np.isnan(graph.compute_any), fastest, graph.compute_any)


def reduce_mask(graph: CompGraph) -> np.ndarray:
    """Which ops are reduce ops (see the module docstring): ``formation`` ops when the graph has op
    types, else the ops cheaper than each of their predecessors, none of which is a reduce op."""
    if any(graph.op_types):
        return np.array([t == FORMATION for t in graph.op_types], dtype=bool)
    cost = _cost(graph)
    out = np.zeros(graph.num_ops, dtype=bool)
    for v in graph.topo_order.tolist():
        preds = graph.predecessors(v)
        out[v] = len(preds) > 0 and not out[preds].any() and bool((cost[v] < cost[preds]).all())
    return out


def infer_meta_ops(graph: CompGraph) -> list[MetaOp]:
    """The meta-ops of a graph without tags, by the rules of the module docstring, in stage order."""
    red = reduce_mask(graph)
    stage = np.zeros(graph.num_ops, dtype=np.int64)
    for v in graph.topo_order.tolist():
        preds = graph.predecessors(v)
        top = int(stage[preds].max()) if len(preds) else -1
        stage[v] = max(top, 0) if red[v] else top + 1
    metas = []
    for k, s in enumerate(np.unique(stage).tolist()):
        ops = np.flatnonzero(stage == s)
        metas.append(MetaOp(k, tuple(ops[~red[ops]].tolist()), tuple(ops[red[ops]].tolist())))
    return metas


def meta_ops_of(graph: CompGraph, source: str = "auto") -> tuple[list[MetaOp], np.ndarray]:
    """The meta-ops the EnumerativeOptimizer walks and the ops left outside them (:data:`META_OP_SOURCES`).

    ``auto``: the tags when any op carries one (untagged ops are returned apart), else inferred.
    ``tags``: the tags only (empty when there are none). ``infer``: inferred, every op in a meta-op.
    """
    if source not in META_OP_SOURCES:
        raise ValueError(f"meta_ops must be one of {', '.join(META_OP_SOURCES)}, got {quote(source)}")
    if source != "infer":
        metas, loose = tagged_meta_ops(graph)
        if metas or source == "tags":
            return metas, loose
    return infer_meta_ops(graph), np.zeros(0, dtype=np.int64)
