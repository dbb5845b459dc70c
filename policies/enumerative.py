"""DOPPLER's EnumerativeOptimizer (Yao et al. 2025, App. B, Algorithm 4).

Meta-ops (:mod:`policies.meta_ops`): the graph's DOPPLER meta-op tags, op scopes
``meta{id}/shard{k}`` and ``meta{id}/reduce{k}`` (as :mod:`engine.workloads.doppler` emits), with
meta-op ids in a topological order of the meta-ops; a graph without tags (the DOPPLER authors'
published files) gets them inferred from App. A.1/B's definitions (``meta_ops=auto``, the default;
``tags`` refuses such a graph, ``infer`` ignores the tags). Alg. 4 walks the meta-ops in id order; for
each it picks the best assignment of its shard ops, then of its reduce ops (``getBestAssign``),
greedily, without lookahead.

Cost of an assignment (App. B): the time to move every input of the ops being placed to the
device that consumes it, ``Σ_edges bytes / bandwidth[src, dst] + latency[src, dst]`` (zero on
the same device), or the edge's own transfer time where the graph gives one (DOPPLER's text files,
``CompGraph.edge_transfer_s``); producers are the ops placed earlier, or ops of the same set at their
candidate device (a reduce tree's additions feeding its formation). No link contention.

Candidate assignments of a set of ``k`` ops on ``n`` devices:

* ``n^k ≤ max_enumerate`` — every assignment (the brief's exhaustive search).
* otherwise — Alg. 4's own ``allPerms(D)``: op ``j`` goes to ``D[j mod n]`` for every
  permutation ``D`` of the device list (the doppler generator's note: a meta-op with more
  shard ops than devices takes ``D_whichDev`` modulo ``n``), so every device gets an equal
  share; when even ``n!`` exceeds ``max_enumerate``, only the ``n`` rotations of the device
  list are tried (deviation: the paper does not bound its enumeration).

Ties: the paper's cost has no load term; it balances load by never putting two shard ops on
one device. Where exhaustive search loses that guarantee, ties in cost (relative 1e-9) are
broken by the smallest busiest-device compute (this set plus everything placed before),
then by the fewest ops of the set on one device, then by enumeration order (deterministic).

Deviations (the paper assumes every op is in a meta-op, ids topologically ordered):

* An input whose producer is not placed yet (untagged, or in a later meta-op) costs nothing.
* Untagged ops are placed after the meta-ops, in reverse topological order, on the device of
  their first consumer (topological order) that can run them; a sink goes with its first
  producer; an isolated op goes to the least-loaded device that can run it.
* Colocation groups and pins (:class:`~policies.base.PlacementUnits`): a unit that is pinned
  or runnable on one device only is committed first; candidates that put an op on a device
  that cannot run its unit, away from its unit's committed device, or split a unit within the
  set are dropped. If no candidate is left, the ops are placed one by one, each on its
  cheapest feasible device (same cost and tie-breaks).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from engine.cluster import Cluster
from engine.errors import PlacementError, SpecError, quote
from engine.graph.compgraph import CompGraph
from engine.placement import Placement, compute_matrix
from policies.base import PlacementUnits, Progress, placer
from policies.meta_ops import META_OP_SOURCES, meta_ops_of

__all__ = ["Enumerative"]

_REL_TIE = 1e-9


class _Assigner:
    """Alg. 4's state: the partial assignment, per-device load and the transfer-time model."""

    def __init__(self, graph: CompGraph, cluster: Cluster, max_enumerate: int) -> None:
        self.graph = graph
        self.n = cluster.num_devices
        self.max_enumerate = max_enumerate
        self.units = PlacementUnits(graph, cluster)
        self.compute = np.nan_to_num(compute_matrix(graph, cluster), nan=0.0)
        bw = cluster.bandwidth
        self.bw_inv = np.where(np.isinf(bw), 0.0, 1.0 / bw)
        np.fill_diagonal(self.bw_inv, 0.0)
        self.lat = np.array(cluster.latency, dtype=np.float64)
        np.fill_diagonal(self.lat, 0.0)
        self.op_dev = np.full(graph.num_ops, -1, dtype=np.int64)
        self.load = np.zeros(self.n)
        single = self.units.feasible.sum(axis=1) == 1
        self.unit_dev = np.where(single, np.argmax(self.units.feasible, axis=1), -1).astype(np.int64)

    def candidates(self, k: int) -> np.ndarray:
        """Candidate assignments of ``k`` ops, shape (candidates, k), in enumeration order."""
        n = self.n
        if n ** k <= self.max_enumerate:
            idx = np.arange(n ** k)
            return np.stack([(idx // n ** (k - 1 - p)) % n for p in range(k)], axis=1)
        if math.factorial(n) <= self.max_enumerate:
            perms = np.array(list(itertools.permutations(range(n))), dtype=np.int64)
        else:
            perms = (np.arange(n)[None, :] + np.arange(n)[:, None]) % n
        return perms[:, np.arange(k) % n]

    def place_set(self, ops: tuple[int, ...]) -> None:
        """``getBestAssign``: the cheapest feasible candidate for ``ops`` (App. B, Alg. 4)."""
        if not ops:
            return
        cand = self.candidates(len(ops))
        ok = self._feasible(ops, cand)
        if ok.any():
            cand = cand[ok]
            self._commit(ops, cand[self._best(ops, cand)])
            return
        for v in ops:  # no candidate honours the constraints: one op at a time
            c = self.candidates(1)
            c = c[self._feasible((v,), c)]
            self._commit((v,), c[self._best((v,), c)])

    def _feasible(self, ops: tuple[int, ...], cand: np.ndarray) -> np.ndarray:
        u = self.units.op_unit[list(ops)]
        ok = self.units.feasible[u[None, :], cand].all(axis=1)
        fixed = self.unit_dev[u]
        ok &= ((fixed[None, :] < 0) | (cand == fixed[None, :])).all(axis=1)
        for p, q in itertools.combinations(range(len(ops)), 2):
            if u[p] == u[q]:
                ok &= cand[:, p] == cand[:, q]
        return ok

    def _best(self, ops: tuple[int, ...], cand: np.ndarray) -> int:
        g = self.graph
        pos = {v: p for p, v in enumerate(ops)}
        cost = np.zeros(len(cand))
        for p, v in enumerate(ops):
            for k in range(g.pred.ptr[v], g.pred.ptr[v + 1]):
                u, e = int(g.pred.idx[k]), int(g.pred.edge[k])
                if u in pos:
                    src = cand[:, pos[u]]
                elif self.op_dev[u] >= 0:
                    src = np.full(len(cand), self.op_dev[u])
                else:
                    continue
                given = float(g.edge_transfer_s[e])
                if given == given:  # the graph's own transfer time, on any link (engine.cluster.edge_transfer_cost)
                    cost += np.where(src != cand[:, p], given, 0.0)
                else:
                    cost += float(g.edge_bytes[e]) * self.bw_inv[src, cand[:, p]] + self.lat[src, cand[:, p]]
        near = cost <= cost.min() * (1.0 + _REL_TIE) + 1e-300
        set_load = np.zeros((len(cand), self.n))
        crowd = np.zeros((len(cand), self.n))
        rows = np.arange(len(cand))
        for p, v in enumerate(ops):
            np.add.at(set_load, (rows, cand[:, p]), self.compute[v, cand[:, p]])
            np.add.at(crowd, (rows, cand[:, p]), 1.0)
        busiest = (self.load[None, :] + set_load).max(axis=1)
        order = np.lexsort((rows, crowd.max(axis=1), busiest, ~near))
        return int(order[0])

    def _commit(self, ops: tuple[int, ...], devs: np.ndarray) -> None:
        for v, d in zip(ops, devs.tolist(), strict=True):
            self.op_dev[v] = d
            self.unit_dev[self.units.op_unit[v]] = d
            self.load[d] += self.compute[v, d]

    def place_loose(self, loose: np.ndarray) -> None:
        """Untagged ops: first consumer's device, else first producer's, else least loaded (see module doc)."""
        if len(loose) == 0:
            return
        g = self.graph
        topo_pos = np.empty(g.num_ops, dtype=np.int64)
        topo_pos[g.topo_order] = np.arange(g.num_ops)
        is_loose = np.zeros(g.num_ops, dtype=bool)
        is_loose[loose] = True
        for v in g.topo_order[::-1].tolist():
            if not is_loose[v]:
                continue
            unit = self.units.op_unit[v]
            if self.unit_dev[unit] >= 0:
                self._commit((v,), np.array([self.unit_dev[unit]]))
                continue
            prefs = [int(s) for s in sorted(g.successors(v).tolist(), key=topo_pos.__getitem__)]
            prefs += [int(s) for s in sorted(g.predecessors(v).tolist(), key=topo_pos.__getitem__)]
            devs = [int(self.op_dev[s]) for s in prefs if self.op_dev[s] >= 0]
            devs += np.argsort(self.load, kind="stable").tolist()
            d = next(d for d in devs if self.units.feasible[unit, d])
            self._commit((v,), np.array([d]))

    def placement(self) -> Placement:
        return self.units.to_placement(self.unit_dev)


@placer("enumerative", "DOPPLER EnumerativeOptimizer: meta-op by meta-op, the shard and reduce assignment with "
          "the least input transfer time (DOPPLER App. B, Alg. 4)", family="search")
class Enumerative:
    """DOPPLER App. B, Alg. 4 (see the module docstring for the cost, candidates and deviations).

    Parameters
    ----------
    max_enumerate : int
        Largest number of assignments ``n^k`` tried exhaustively for a set of ``k`` ops on
        ``n`` devices; larger sets try Alg. 4's device-list permutations instead.
    meta_ops : {"auto", "tags", "infer"}
        Where the meta-ops come from (:func:`policies.meta_ops.meta_ops_of`): the graph's tags, else
        inferred (``auto``); the tags only; inferred only.
    """


    def __init__(self, max_enumerate: int = 50_000, meta_ops: str = "auto") -> None:
        if meta_ops not in META_OP_SOURCES:
            raise SpecError(f"placer 'enumerative': meta_ops must be one of {', '.join(META_OP_SOURCES)}, "
                            f"got {quote(meta_ops)}")
        self.max_enumerate = max_enumerate
        self.meta_ops = meta_ops

    def place(self, graph: CompGraph, cluster: Cluster, *, seed: int = 0, budget: int | None = None,
              progress: Progress | None = None) -> Placement:
        metas, loose = meta_ops_of(graph, self.meta_ops)
        if not metas:
            raise PlacementError("enumerative with meta_ops=tags needs a graph with DOPPLER meta-op tags (scope "
                                 "meta{id}/shard{k}); this graph has none (meta_ops=auto infers them)")
        state = _Assigner(graph, cluster, self.max_enumerate)
        for i, m in enumerate(metas):
            state.place_set(m.shard_ops)
            state.place_set(m.reduce_ops)
            if progress is not None:
                progress(i + 1, len(metas), f"meta-op {m.id}")
        state.place_loose(loose)
        return state.placement()
