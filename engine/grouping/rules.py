"""Grouping algorithms: op → group arrays that :func:`engine.grouping.contract` turns into a graph.

* :func:`mirhoseini_groups` — Mirhoseini et al. 2017 §3.3: start from TensorFlow's colocation
  groups; if the output of X is consumed only by Y, co-locate X and Y; repeat on the groups
  until nothing merges (or, ours, until ``min_groups`` remain).
* :func:`scope_groups` — Mirhoseini §4.1's manual rule for RNNs ("treat each LSTM cell, each
  embedding lookup, each attention step and each softmax prediction step as a group"): ops
  with the same scope (cut to ``depth`` parts) and phase form one group.
* :func:`unit_groups` — Mirhoseini §4.1's manual groups of a training step: each layer unit
  (LSTM cell, embedding lookup, attention or softmax step; a convolution branch) holds its
  forward, backward and update ops, as TF's colocation of gradients with their ops does.
  Unlike the others these groups are not convex: place them, do not contract them.
* :func:`merge_and_colocate` — Placeto App. A.6: repeatedly merge the node with the lowest
  cost (output tensor size, bytes) into a neighbour until N groups remain or no node costs
  less than a threshold C.

Every function returns groups numbered by their first op's index (a deterministic order).
Except for :func:`unit_groups`, the contracted graph stays a DAG; see each function for how it
guarantees that.
"""

from __future__ import annotations

import heapq
import re
from functools import partial

import numpy as np

from engine.graph.compgraph import CompGraph
from engine.grouping.contract import colocation_groups
from engine.grouping.dynamic_order import TopologicalOrder, reaches

__all__ = ["find_root", "forward_scope", "layer_scopes", "merge_and_colocate", "mirhoseini_groups", "renumber",
           "scope_groups", "unit_groups"]


def renumber(labels: np.ndarray) -> np.ndarray:
    """Relabel any per-op labels as group ids 0..k-1 ordered by each group's first op."""
    _, first, inverse = np.unique(np.asarray(labels), return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return rank[inverse.reshape(-1)].astype(np.int64)


def find_root(parent: np.ndarray, x: int) -> int:
    """Union-find: the root of ``x`` in the forest ``parent`` (with path compression)."""
    root = x
    while parent[root] != root:
        root = parent[root]
    while parent[x] != root:
        parent[x], x = root, parent[x]
    return root


def mirhoseini_groups(g: CompGraph, colocation: bool = True, min_groups: int = 1) -> np.ndarray:
    """Mirhoseini §3.3 co-location: merge a group into the only group that consumes its outputs.

    Each pass finds every group whose outputs go to exactly one other group and merges it into
    that group; passes repeat until none merges. Merging X into its only consumer Y cannot create
    a cycle (every path out of X starts in Y), and merging many such X at once forms trees
    rooted at their consumers, which are convex for the same reason; the result is therefore
    independent of merge order — unless ``min_groups`` stops it.

    ``min_groups`` (ours, not the paper's): stop merging when that many groups remain, within a pass
    in the order of X's index. The paper applies the rule "recursively" to TensorFlow graphs of
    thousands of ops, where it ends far above a learned placer's group count; on a small graph its
    recursion can swallow everything (the DOPPLER authors' transformer block: 182 ops, one group,
    so every placement put the whole graph on one device). Each single merge is valid at any point
    of a pass: X's consumers stay inside one group however the others merge.

    Parameters
    ----------
    g : CompGraph
    colocation : bool
        Start from TF colocation groups (ops sharing ``colocate`` in one group). Those groups
        must be convex, else :func:`engine.grouping.contract` rejects the result.
    min_groups : int
        Merge no further once this many groups remain (1: the paper's rule to its end).

    Returns
    -------
    numpy.ndarray of int64, shape (num_ops,)
        Group id per op, numbered by each group's first op.
    """
    start = colocation_groups(g) if colocation else np.arange(g.num_ops)
    k0 = int(start.max()) + 1
    parent = np.arange(k0)
    src0, dst0 = start[g.edge_src], start[g.edge_dst]
    left = k0
    while left > min_groups:
        roots = np.array([find_root(parent, x) for x in range(k0)])
        s, d = roots[src0], roots[dst0]
        cross = s != d
        pairs = np.unique(np.stack([s[cross], d[cross]], axis=1), axis=0) if cross.any() else np.zeros((0, 2), int)
        if not len(pairs):
            break
        outdeg = np.bincount(pairs[:, 0], minlength=k0)
        single = pairs[outdeg[pairs[:, 0]] == 1]
        if not len(single):
            break
        for x, y in single.tolist():
            if left <= min_groups:
                break
            rx, ry = find_root(parent, x), find_root(parent, y)
            if rx != ry:
                parent[rx] = ry
                left -= 1
    roots = np.array([find_root(parent, x) for x in range(k0)])
    return renumber(roots[start])


def scope_groups(g: CompGraph, depth: int | None = None, split_phase: bool = True) -> np.ndarray:
    """Group ops by scope (first ``depth`` path parts; all of it if None) and, by default, phase.

    A cell's forward and backward ops cannot share a group in an acyclic contraction (the
    forward cell feeds later cells whose gradients come back to it), so ``split_phase`` is on
    by default. Ops with an empty scope stay alone.
    """
    keys = []
    for i in range(g.num_ops):
        sc = g.scope[i]
        if not sc:
            keys.append(f"\x00{i}")
            continue
        if depth is not None:
            sc = "/".join(sc.split("/")[:depth])
        keys.append(f"{sc}\x00{g.phase[i] if split_phase else ''}")
    return renumber(np.asarray(keys, dtype=object).astype(str))


#: A gradient name scope inside an op's scope (TF1 ``gradients``/``gradients_1``, TF2 ``gradient_tape``).
_GRADIENT_SCOPE = re.compile(r"(^|/)(gradient_tape|gradients(_\d+)?)(/|$)")


def forward_scope(scope: str, depth: int | None = None) -> str:
    """``scope`` without its gradient scope, cut to ``depth`` parts (all of it if None).

    ``gradient_tape/model/conv2d_3/Conv2DBackpropInput`` → ``model/conv2d_3`` at depth 2.
    """
    sc = _GRADIENT_SCOPE.sub(lambda m: m.group(1), scope).strip("/")
    return "/".join(sc.split("/")[:depth]) if depth is not None and sc else sc


def layer_scopes(g: CompGraph, depth: int | None = None) -> list[str]:
    """Each op's layer scope: the unit :func:`unit_groups` puts it in ("" for none).

    With ``depth``, :func:`forward_scope` cut to ``depth`` parts. Without, the shortest prefix of
    the op's forward scope that directly holds a computing forward op (one with inputs), else
    the whole forward scope. A layer's call scope holds its ops and TF adds sub-scopes below it
    (Keras batch norm: ``…/batch_normalization_3/moments``), which this folds into the layer;
    scopes that only name a family of units (``lm/layer1`` above ``lm/layer1/step3``) hold no
    forward computation of their own, so the steps stay apart.
    """
    scopes = [forward_scope(s) for s in g.scope]
    if depth is not None:
        return [forward_scope(s, depth) for s in scopes]
    indeg = np.diff(g.pred.ptr)
    holders = {scopes[i] for i in range(g.num_ops) if g.phase[i] == "forward" and indeg[i] > 0}
    out = []
    for sc in scopes:
        parts = sc.split("/") if sc else []
        out.append(next(("/".join(parts[:k]) for k in range(1, len(parts)) if "/".join(parts[:k]) in holders), sc))
    return out


def unit_groups(g: CompGraph, depth: int | None = None, branches: bool = True) -> np.ndarray:
    """Mirhoseini et al. 2017 §4.1 manual co-location groups of a training-step graph.

    "For RNNLM and NMT, we treat each LSTM cell, each embedding lookup, each attention step and
    each softmax prediction step as a group; for Inception-V3, we treat each branch as a group."
    A *unit* is a layer scope (:func:`layer_scopes`); it holds every forward and backward op of
    that scope, as TF's ``colocate_gradients_with_ops`` places a gradient with its op. The
    rules, in order:

    1. forward and backward ops (not variables, not updates) with the same layer scope form a unit;
       TF colocation sets are united with whatever they touch;
    2. a variable (a source with persistent bytes) joins the unit of its consumers when, updates
       aside, they all lie in one unit (a layer's own weights); a variable shared by several
       units (an RNN's kernel, read at every step) joins the unit of its own scope (or forms it);
       a variable with neither is left to rule 4;
    3. an update op joins the variable it writes (an input variable, or its colocation set);
    4. every op left over (reads, casts, an optimizer's scaled gradient) joins its consumers'
       group when they are all in one — Mirhoseini §3.3's rule, applied to the leftovers only so
       that an embedding lookup is not swallowed by the cell that reads it;
    5. ``branches``: a unit whose only forward successor unit has it as its only forward
       predecessor is merged into it, until none is. Chains of layers between a fork and a
       join become one group: an Inception branch (conv → batch norm → activation → …). RNN
       units never form such chains (each cell also reads the previous step and its weights).

    A unit holds a layer's forward and backward ops, so the quotient graph is cyclic: these
    groups are for placing (:mod:`policies.rl.core.task`), not for :func:`engine.grouping.contract`.

    Parameters
    ----------
    g : CompGraph
    depth : int, optional
        Scope parts that name a layer (``model/conv2d_5``: 2); None finds the layer scopes as
        :func:`layer_scopes` describes, which gives the papers' units for our recurrent
        generators (``lm/layer0/step3``) and Keras imports (``inception_v3_1/conv2d_5``).
    branches : bool
        Apply rule 5.

    Returns
    -------
    numpy.ndarray of int64, shape (num_ops,)
    """
    if depth is not None and depth < 1:
        raise ValueError(f"unit depth must be at least 1, got {depth}")
    n = g.num_ops
    parent = np.arange(n)

    def union(a: int, b: int) -> None:
        parent[find_root(parent, a)] = find_root(parent, b)

    indeg = np.diff(g.pred.ptr)
    variable = (indeg == 0) & (g.persistent_bytes > 0)
    update = np.array([p == "update" for p in g.phase])
    keyed = np.zeros(n, dtype=bool)
    first_of: dict[str, int] = {}
    layer = layer_scopes(g, depth)
    for i in np.flatnonzero(~variable & ~update).tolist():
        key = layer[i]
        if key:
            keyed[i] = True
            union(i, first_of.setdefault(key, i))
    ids = g.colocation_ids
    first_coloc: dict[int, int] = {}
    for i in np.flatnonzero(ids >= 0).tolist():
        union(i, first_coloc.setdefault(int(ids[i]), i))
    keyed |= ids >= 0
    for v in np.flatnonzero(variable).tolist():  # rule 2
        users = {find_root(parent, int(w)) for w in g.successors(v) if not update[w] and keyed[w]}
        if len(users) == 1:
            union(v, users.pop())
        elif layer[v]:
            union(v, first_of.setdefault(layer[v], v))
        else:
            continue  # no layer to join: rule 4 treats it as any other op
        keyed[v] = True
    for u in np.flatnonzero(update).tolist():  # rule 3
        for v in g.predecessors(u).tolist():
            if variable[v]:
                union(u, v)
                keyed[u] = True
    for i in g.topo_order[::-1].tolist():  # rule 4: consumers are settled before their producers
        if keyed[i]:
            continue
        own = find_root(parent, i)
        users = {find_root(parent, int(w)) for w in g.successors(i)} - {own}
        if len(users) == 1:
            union(i, users.pop())
    if branches:
        _merge_chains(g, parent)
    return renumber(np.array([find_root(parent, x) for x in range(n)]))


def _merge_chains(g: CompGraph, parent: np.ndarray) -> None:
    """Rule 5 of :func:`unit_groups`: merge single-successor / single-predecessor chains of units.

    Only edges between forward ops count; merging X into its chain successor Y keeps every
    other unit's forward neighbours unchanged, so the merges are done in one sweep over the
    chain links.
    """
    fwd = np.array([p == "forward" for p in g.phase])
    keep = fwd[g.edge_src] & fwd[g.edge_dst]
    roots = np.array([find_root(parent, x) for x in range(g.num_ops)])
    s, d = roots[g.edge_src[keep]], roots[g.edge_dst[keep]]
    cross = s != d
    if not cross.any():
        return
    pairs = np.unique(np.stack([s[cross], d[cross]], axis=1), axis=0)
    outdeg = np.bincount(pairs[:, 0], minlength=g.num_ops)
    indeg = np.bincount(pairs[:, 1], minlength=g.num_ops)
    for x, y in pairs[(outdeg[pairs[:, 0]] == 1) & (indeg[pairs[:, 1]] == 1)].tolist():
        parent[find_root(parent, x)] = find_root(parent, y)


def merge_and_colocate(g: CompGraph, num_groups: int | None = None, threshold_bytes: float = float("inf"),
                       op_group: np.ndarray | None = None, *, prune: bool = True) -> np.ndarray:
    """Placeto App. A.6 Merge-and-Colocate.

    Repeatedly take the node with the lowest cost — the size of its output tensor; for a merged
    node the sum of its members' outputs (bytes) — and merge it into a neighbour: a **successor**
    (a consumer of its output), or, when it has no successor, a **predecessor** (our reading of
    "if the node has no neighbors, then its predecessor is used instead"). Stop when
    ``num_groups`` nodes remain or no node costs less than ``threshold_bytes``.

    Deterministic: ties in cost break towards the node with the lower first-op index, and
    neighbours are tried in order of their first-op index. A merge that would make the
    contracted graph cyclic (another path joins the two nodes) is skipped and the next
    neighbour tried; a node with no acyclic merge is left as it is and not retried.

    Parameters
    ----------
    g : CompGraph
    num_groups : int, optional
        Target size N (None: merge on cost alone).
    threshold_bytes : float
        C: only nodes whose cost is below it are merged (default: any).
    op_group : array, optional
        Initial grouping (e.g. :func:`mirhoseini_groups`, as Placeto §4 does); default one op each.
    prune : bool
        Search for the other paths only up to the target's place in a topological order kept
        valid across the merges (:class:`engine.grouping.dynamic_order.TopologicalOrder`; the
        same answers, found without exploring everything downstream). False, or an initial
        grouping whose contracted graph has a cycle: a plain search.

    Returns
    -------
    numpy.ndarray of int64, shape (num_ops,)
    """
    grp = np.arange(g.num_ops) if op_group is None else renumber(op_group)
    k = int(grp.max()) + 1
    cost = np.bincount(grp, weights=g.output_bytes, minlength=k).tolist()
    first = np.full(k, g.num_ops, dtype=np.int64)
    np.minimum.at(first, grp, np.arange(g.num_ops))
    first = first.tolist()
    succ: dict[int, set[int]] = {v: set() for v in range(k)}
    pred: dict[int, set[int]] = {v: set() for v in range(k)}
    for s, d in zip(grp[g.edge_src].tolist(), grp[g.edge_dst].tolist(), strict=True):
        if s != d:
            succ[s].add(d)
            pred[d].add(s)
    order = None
    if prune:
        try:
            order = TopologicalOrder(succ, pred)
        except ValueError:  # a cyclic quotient: every search unbounded
            order = None
    search = order.reaches if order is not None else partial(reaches, succ)
    parent = list(range(k))
    alive = k
    heap = [(cost[v], first[v], v) for v in range(k)]
    heapq.heapify(heap)
    target = 0 if num_groups is None else max(int(num_groups), 1)
    while heap and alive > target:
        c, f, v = heapq.heappop(heap)
        if parent[v] != v or c != cost[v] or f != first[v]:
            continue  # stale entry
        if c >= threshold_bytes:
            break
        into = None
        for w in sorted(succ[v], key=first.__getitem__):
            if not search(succ[v] - {w}, w):
                into = w
                break
        if into is None and not succ[v]:
            for w in sorted(pred[v], key=first.__getitem__):
                if not search(succ[w] - {v}, v):
                    into = w
                    break
        if into is None:
            continue  # no acyclic merge: leave v alone
        # merge v into `into`
        new_in, new_out = pred[v] - {into} - pred[into], succ[v] - {into} - succ[into]
        for s in pred[v]:
            succ[s].discard(v)
            if s != into:
                succ[s].add(into)
                pred[into].add(s)
        for d in succ[v]:
            pred[d].discard(v)
            if d != into:
                pred[d].add(into)
                succ[into].add(d)
        succ[into].discard(v)
        pred[into].discard(v)
        del succ[v], pred[v]
        # the merged node keeps into's place; repair what points backwards now, one edge at a time: those all
        # start at `into` (v merged into a successor; its in-edges come from before v) or all end at it (v, a
        # sink, into a predecessor), so no repair's search crosses another edge still to repair
        if order is not None:
            for s in new_in:
                order.add_edge(s, into)
            for d in new_out:
                order.add_edge(into, d)
        parent[v] = into
        cost[into] += cost[v]
        first[into] = min(first[into], first[v])
        alive -= 1
        heapq.heappush(heap, (cost[into], first[into], into))
    roots = [_find_list(parent, x) for x in range(k)]
    return renumber(np.asarray(roots)[grp])


def _find_list(parent: list[int], x: int) -> int:
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x
