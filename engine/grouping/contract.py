"""Grouping: collapse ops into groups that are placed as one unit, and map back.

A :class:`Grouping` keeps the op → group map, the contracted graph (groups as ops) for
policies that decide per group, and :meth:`Grouping.expand` to turn a group placement into
an op placement. Contraction rules (seconds and bytes):

* compute on a kind = sum of the members' times (a kind some member cannot run on is absent);
* persistent bytes add up; temp bytes = the largest member temp plus the outputs consumed
  only inside the group (they live while the group runs); output bytes = the outputs of
  members that have a consumer outside the group or none at all (sinks);
* an edge between two groups carries, per producer, its largest edge to that group: a
  tensor crosses once per destination group;
* a group is pinned when a member is (conflicting pins are an error) and its phase is the
  members' common phase, else none.

Grouping algorithms (TF colocation here; Mirhoseini §3.3 and Placeto A.6 in
``engine/grouping/rules.py``) produce the op → group array this module contracts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.errors import GraphError, quote
from engine.graph.compgraph import CompGraph

__all__ = ["Grouping", "colocation_groups", "contract"]


@dataclass(frozen=True)
class Grouping:
    """An op → group map and the contracted graph of the groups."""

    op_group: np.ndarray
    graph: CompGraph

    @property
    def num_groups(self) -> int:
        return self.graph.num_ops

    def expand(self, group_devices: np.ndarray) -> np.ndarray:
        """Per-op device array from a per-group device array."""
        gd = np.asarray(group_devices, dtype=np.int64)
        if gd.shape != (self.num_groups,):
            raise ValueError(f"expected {self.num_groups} group devices, got {gd.shape}")
        return gd[self.op_group]

    def members(self, group: int) -> np.ndarray:
        return np.flatnonzero(self.op_group == group)


def colocation_groups(g: CompGraph) -> np.ndarray:
    """Op → group array where each colocation group is one group and every other op its own.

    Groups are numbered by their first op's index.
    """
    ids = g.colocation_ids
    key = np.where(ids >= 0, g.num_ops + ids, np.arange(g.num_ops))
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return rank[inverse]


def _common_prefix(scopes: list[str]) -> str:
    """Longest common leading path of ``a/b/c``-style scopes."""
    prefix = scopes[0].split("/")
    for s in scopes[1:]:
        parts = s.split("/")
        n = 0
        while n < min(len(prefix), len(parts)) and prefix[n] == parts[n]:
            n += 1
        prefix = prefix[:n]
    return "/".join(prefix)


def contract(g: CompGraph, op_group: np.ndarray, names: list[str] | None = None) -> Grouping:
    """Contract ``g`` by ``op_group`` (group ids 0..k-1, every id used).

    Raises
    ------
    GraphError
        If groups conflict on pins or the contracted graph has a cycle (a group that is not
        convex: some path leaves it and comes back).
    """
    grp = np.asarray(op_group, dtype=np.int64)
    if grp.shape != (g.num_ops,) or (len(grp) and grp.min() < 0):
        raise ValueError("op_group must give a group id >= 0 for every op")
    k = int(grp.max()) + 1
    if len(np.unique(grp)) != k:
        raise ValueError("group ids must be 0..k-1 with every id used")
    members: list[list[int]] = [[] for _ in range(k)]
    for i, gi in enumerate(grp.tolist()):
        members[gi].append(i)
    if names is None:
        names = [g.op_names[m[0]] if len(m) == 1 else f"group{j}:{g.op_names[m[0]]}" for j, m in enumerate(members)]

    scalar = ~np.isnan(g.compute_any)
    any_sum = np.bincount(grp, weights=np.where(scalar, g.compute_any, 0.0), minlength=k)
    all_scalar = np.bincount(grp, weights=(~scalar).astype(float), minlength=k) == 0
    compute_any = np.where(all_scalar, any_sum, np.nan)
    by_kind = np.full((k, len(g.kinds)), np.nan)
    for j, kind in enumerate(g.kinds):
        t = g.compute_for_kind(kind)
        sums = np.bincount(grp, weights=np.nan_to_num(t, nan=0.0), minlength=k)
        missing = np.bincount(grp, weights=np.isnan(t).astype(float), minlength=k) > 0
        by_kind[:, j] = np.where(missing | all_scalar, np.nan, sums)

    src_g, dst_g = grp[g.edge_src], grp[g.edge_dst]
    crossing = src_g != dst_g
    has_external = np.zeros(g.num_ops, dtype=bool)
    has_external[g.edge_src[crossing]] = True
    has_external |= g.succ.ptr[1:] == g.succ.ptr[:-1]  # a sink's output outlives the group too
    has_internal_only = np.zeros(g.num_ops, dtype=bool)
    has_internal_only[g.edge_src[~crossing]] = True
    has_internal_only &= ~has_external
    output = np.bincount(grp, weights=np.where(has_external, g.output_bytes, 0.0), minlength=k)
    inner = np.bincount(grp, weights=np.where(has_internal_only, g.output_bytes, 0.0), minlength=k)
    temp_max = np.zeros(k)
    np.maximum.at(temp_max, grp, g.temp_bytes)
    persistent = np.bincount(grp, weights=g.persistent_bytes, minlength=k)

    # per (producer, destination group) the largest edge, then summed per group pair
    e_src, e_dg, e_b = g.edge_src[crossing], dst_g[crossing], g.edge_bytes[crossing]
    per_tensor: dict[tuple[int, int], float] = {}
    for s, dg, b in zip(e_src.tolist(), e_dg.tolist(), e_b.tolist(), strict=True):
        key = (s, dg)
        if b > per_tensor.get(key, -1.0):
            per_tensor[key] = b
    pair_bytes: dict[tuple[int, int], float] = {}
    for (s, dg), b in per_tensor.items():
        pk = (int(grp[s]), dg)
        pair_bytes[pk] = pair_bytes.get(pk, 0.0) + b

    pins: list[str | None] = []
    phases: list[str | None] = []
    scopes: list[str] = []
    types: list[str] = []
    for j, m in enumerate(members):
        pset = {g.pin[i] for i in m if g.pin[i] is not None}
        if len(pset) > 1:
            raise GraphError(f"group {quote(names[j])} has ops pinned to different devices: {', '.join(sorted(pset))}")
        pins.append(next(iter(pset)) if pset else None)
        ph = {g.phase[i] for i in m}
        phases.append(ph.pop() if len(ph) == 1 else None)
        scopes.append(g.scope[m[0]] if len(m) == 1 else _common_prefix([g.scope[i] for i in m]))
        types.append(g.op_types[m[0]] if len(m) == 1 else "Group")
    edges = sorted(pair_bytes.items())
    try:
        contracted = CompGraph(
            f"{g.name}/grouped", names, compute_any=compute_any, compute_by_kind=by_kind, kinds=g.kinds,
            output_bytes=output, persistent_bytes=persistent, temp_bytes=temp_max + inner,
            edge_src=[a for (a, _), _ in edges], edge_dst=[b for (_, b), _ in edges],
            edge_bytes=[b for _, b in edges], op_types=types, pin=pins, phase=phases, scope=scopes,
        )
    except GraphError as exc:
        raise GraphError(f"grouping of {quote(g.name)} is not acyclic: {exc}") from None
    return Grouping(grp, contracted)
