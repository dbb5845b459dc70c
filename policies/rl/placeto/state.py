"""Placeto's MDP states as tensors: per-graph structure, node features and batched sparse matrices.

A state (Placeto §2.1) is the group graph with each group's features — run time, output size,
one-hot current device, "visited" flag, "current" flag — and the node being placed. This
module builds what :class:`policies.rl.placeto.net.PlacetoNet` reads:

* :class:`GraphStructure` — per graph, once (cached per task by :class:`policies.rl.core.agent.PerTask`):
  the static features (run time and output size divided by the graph's mean, log1p-scaled), the
  parent and child adjacency in CSR, and each node's parents, children and parallel nodes (the
  pooling sets of §2.2, Fig. 3c–d, from the task's reachability);
* :func:`node_features` — one state's (groups, 4 + devices) feature matrix;
* :func:`state_batch` — S states, possibly of different graphs, as one disjoint-union graph with
  row-averaging CSR matrices (and their transposes when a gradient will be taken).

The authors' network (:mod:`policies.rl.placeto.sweep_net`, ``network=authors``) reads other
features — :func:`sweep_features`, as ``pgraph.py:46-80, 145-154`` of the authors' code builds them: run
time, output size, visit count, current flag, the group's simulated start time minus the current
group's, one-hot device; run time, output size and start time divided by their column's largest
value (for the start time, which is relative and can be negative, the largest absolute value) —
and :func:`sweep_batch` gives it 0/1 (summing) pooling matrices and the level-by-level sweeps.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import torch

from policies.rl.core.task import PlacementTask
from policies.rl.placeto.net import SparsePair, StateBatch
from policies.rl.placeto.sweep_net import GROUP_COLUMNS, Sweep, SweepBatch, SweepGroup

__all__ = ["GraphStructure", "graph_structure", "node_features", "selection", "state_batch",
           "sweep_batch", "sweep_features", "sweep_plan", "union_group"]


@dataclass
class GraphStructure:
    static: np.ndarray  # (N, 2) normalised run time and output size
    down: tuple[np.ndarray, np.ndarray]  # CSR (ptr, col): row v = v's parents
    up: tuple[np.ndarray, np.ndarray]  # CSR (ptr, col): row v = v's children
    sets: list[list[np.ndarray]]  # parents, children, parallel nodes of each node (for pooling)
    raw: np.ndarray  # (N, 2) run time and output size divided by their largest value (authors' network)
    down_sweep: Sweep  # the authors' top-down sweep, level by level (over the edges that follow ``order``)
    up_sweep: Sweep  # and bottom-up
    pool_masks: np.ndarray  # (3, N, N) bool: row v = v's ancestors, descendants, parallel nodes
    levels: tuple[np.ndarray, np.ndarray]  # each node's level in the top-down and the bottom-up sweep
    sweep_edges: tuple[np.ndarray, np.ndarray]  # (src, dst): the edges the sweeps follow
    devices: np.ndarray  # (D, 2) float32: each device's speed and memory over the cluster's largest


def graph_structure(task: PlacementTask) -> GraphStructure:
    """What every state of ``task`` shares (see the module docstring)."""
    t, b = task.group_time, task.group_out_bytes
    static = np.log1p(np.column_stack([t / max(t.mean(), 1e-30), b / max(b.mean(), 1e-30)]))
    n = task.num_groups
    r = task.reach.copy()
    np.fill_diagonal(r, False)
    par = ~(r | r.T)
    np.fill_diagonal(par, False)
    sets = [[np.flatnonzero(r[:, v]) for v in range(n)], [np.flatnonzero(r[v]) for v in range(n)],
            [np.flatnonzero(par[v]) for v in range(n)]]
    src, dst = task.edges
    raw = np.column_stack([t / max(t.max(), 1e-30), b / max(b.max(), 1e-30)])
    rank = np.empty(n, dtype=np.int64)
    rank[task.order] = np.arange(n)
    forward = rank[src] < rank[dst]
    fsrc, fdst = src[forward], dst[forward]
    down, up = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    by_src = np.argsort(rank[fsrc], kind="stable")
    for u, v in zip(fsrc[by_src].tolist(), fdst[by_src].tolist(), strict=True):
        down[v] = max(down[v], down[u] + 1)
    by_dst = np.argsort(-rank[fdst], kind="stable")
    for u, v in zip(fsrc[by_dst].tolist(), fdst[by_dst].tolist(), strict=True):
        up[u] = max(up[u], up[v] + 1)
    masks = np.stack([r.T, r, par])
    speed, memory = task.cluster.speed, task.cluster.memory
    devices = np.column_stack([speed / speed.max(), memory / memory.max()]).astype(np.float32)
    return GraphStructure(static, _csr_of(n, dst, src), _csr_of(n, src, dst), sets, raw,
                          sweep_plan(down, fsrc, fdst), sweep_plan(up, fdst, fsrc), masks, (down, up), (fsrc, fdst),
                          devices)


def node_features(structure: GraphStructure, devices: np.ndarray, visited: np.ndarray, current: int,
                  num_devices: int) -> np.ndarray:
    """(groups, 4 + devices) float32: static features, one-hot device, visited, current (§2.1)."""
    n = len(devices)
    x = np.zeros((n, 4 + num_devices), dtype=np.float32)
    x[:, :2] = structure.static
    x[np.arange(n), 2 + devices] = 1.0
    x[:, 2 + num_devices] = visited
    x[current, 3 + num_devices] = 1.0
    return x


def state_batch(items: list[tuple[GraphStructure, np.ndarray, np.ndarray, int]], grad: bool = False) -> StateBatch:
    """The states ``(structure, feasible (groups, devices), features, current node)`` as one :class:`StateBatch`."""
    xs, current, masks = [], [], []
    graph_ptr: dict[str, list[np.ndarray]] = {"down": [], "up": []}
    graph_col: dict[str, list[np.ndarray]] = {"down": [], "up": []}
    nnz = {"down": 0, "up": 0}
    pool_ptr: list[list[int]] = [[], [], []]
    pool_col: list[list[np.ndarray]] = [[], [], []]
    member_col = []
    off = 0
    for gs, feasible, x, v in items:
        n = len(x)
        xs.append(x)
        for name in ("down", "up"):
            ptr, col = getattr(gs, name)
            graph_ptr[name].append(ptr[1:] + nnz[name])
            graph_col[name].append(col + off)
            nnz[name] += len(col)
        current.append(off + v)
        masks.append(feasible[v])
        for i in range(3):
            idx = gs.sets[i][v]
            pool_col[i].append(idx + off)
            pool_ptr[i].append((pool_ptr[i][-1] if pool_ptr[i] else 0) + len(idx))
        member_col.append(np.arange(off, off + n))
        off += n
    s = len(items)
    pools = [selection(np.concatenate([[0], pool_ptr[i]]).astype(np.int64), np.concatenate(pool_col[i]), (s, off),
                       grad) for i in range(3)]
    members = selection(np.concatenate([[0], np.cumsum([len(m) for m in member_col])]).astype(np.int64),
                        np.concatenate(member_col), (s, off), grad)
    down = (np.concatenate([[0], *graph_ptr["down"]]).astype(np.int64), np.concatenate(graph_col["down"]))
    up = (np.concatenate([[0], *graph_ptr["up"]]).astype(np.int64), np.concatenate(graph_col["up"]))
    return StateBatch(torch.from_numpy(np.concatenate(xs)), _mean_adjacency(down, up, off),
                      _mean_adjacency(up, down, off), torch.tensor(current, dtype=torch.long), pools, members,
                      torch.from_numpy(np.stack(masks)))


def sweep_features(structure: GraphStructure, devices: np.ndarray, visits: np.ndarray, current: int,
                   start: np.ndarray | None, num_devices: int) -> np.ndarray:
    """(groups, 5 + devices) float32, the authors' features (module docstring): run time, output size,
    visit count, current flag, start time relative to the current group's, one-hot device.
    ``start``: each group's simulated start time (s), or None when the runtimes are not simulated."""
    n = len(devices)
    x = np.zeros((n, GROUP_COLUMNS + num_devices), dtype=np.float32)
    x[:, :2] = structure.raw
    x[:, 2] = visits
    x[current, 3] = 1.0
    if start is not None:
        rel = start - start[current]
        top = np.abs(rel).max()
        x[:, 4] = rel / top if top > 0 else 0.0
    x[np.arange(n), GROUP_COLUMNS + devices] = 1.0
    return x


def sweep_batch(items: list[tuple[GraphStructure, np.ndarray, np.ndarray, int]]) -> SweepBatch:
    """The states ``(structure, feasible, features, current node)`` as one :class:`SweepBatch`,
    grouped by graph: 0/1 (summing) pooling masks and each graph's sweeps.

    States of several graphs with at most two states per graph on average (a rollout over a family's
    graphs: one episode per graph) become one disjoint union instead (:func:`union_group`): the sweeps
    then step through the deepest graph's levels once, not through every graph's in turn."""
    by_graph: dict[int, list[int]] = {}
    for i, (gs, *_) in enumerate(items):
        by_graph.setdefault(id(gs), []).append(i)
    if len(by_graph) > 1 and len(items) <= 2 * len(by_graph):
        return SweepBatch([union_group(items)], len(items))
    groups = []
    for rows in by_graph.values():
        gs = items[rows[0]][0]
        current = np.array([items[i][3] for i in rows], dtype=np.int64)
        x = torch.from_numpy(np.stack([items[i][2] for i in rows]))
        pools = torch.from_numpy(gs.pool_masks[:, current].astype(np.float32))
        mask = torch.from_numpy(np.stack([items[i][1][items[i][3]] for i in rows]))
        groups.append(SweepGroup(gs.down_sweep, gs.up_sweep, x, pools, torch.from_numpy(current), mask,
                                 torch.tensor(rows, dtype=torch.long), devices=torch.from_numpy(gs.devices)))
    return SweepBatch(groups, len(items))


_UNIONS: OrderedDict[tuple[int, ...], tuple[tuple[weakref.ref, ...], Sweep, Sweep]] = OrderedDict()
_UNIONS_KEPT = 8  # a rollout's batch of graphs, and the smaller ones left as its shorter episodes end


def _union_sweeps(structures: tuple[GraphStructure, ...], offsets: np.ndarray) -> tuple[Sweep, Sweep]:
    """The two sweeps over the disjoint union of ``structures`` (in order; a graph may repeat), kept
    for the next steps of the same rollout; ``offsets``: each copy's first row. Keyed by the structures'
    ids, checked through weak references (an id can be reused once its structure is gone; the cache keeps
    no structure alive)."""
    key = tuple(map(id, structures))
    hit = _UNIONS.get(key)
    if hit is not None and all(ref() is gs for ref, gs in zip(hit[0], structures, strict=True)):
        _UNIONS.move_to_end(key)
        return hit[1], hit[2]
    down, up = (np.concatenate([gs.levels[k] for gs in structures]) for k in (0, 1))
    src, dst = (np.concatenate([gs.sweep_edges[k] + o for gs, o in zip(structures, offsets, strict=True)])
                for k in (0, 1))
    sweeps = sweep_plan(down, src, dst), sweep_plan(up, dst, src)
    _UNIONS[key] = (tuple(weakref.ref(gs) for gs in structures), *sweeps)
    if len(_UNIONS) > _UNIONS_KEPT:
        _UNIONS.popitem(last=False)
    return sweeps


def union_group(items: list[tuple[GraphStructure, np.ndarray, np.ndarray, int]]) -> SweepGroup:
    """The states as one :class:`SweepGroup` over the disjoint union of one copy of its graph per
    state: features (1, ΣN, F), pooling masks and membership (S, ΣN), current nodes as union rows.
    The same logits as one group per graph (the sums run over the same rows; other copies add zeros)."""
    structures = tuple(gs for gs, *_ in items)
    offsets = np.cumsum([0, *(len(gs.raw) for gs in structures)])
    down, up = _union_sweeps(structures, offsets[:-1])
    s, total = len(items), int(offsets[-1])
    pools = np.zeros((3, s, total), dtype=np.float32)
    members = np.zeros((s, total), dtype=np.float32)
    for i, (gs, _, _, v) in enumerate(items):
        lo, hi = offsets[i], offsets[i + 1]
        pools[:, i, lo:hi] = gs.pool_masks[:, v]
        members[i, lo:hi] = 1.0
    x = torch.from_numpy(np.concatenate([x for _, _, x, _ in items]))[None]
    current = torch.from_numpy(offsets[:-1] + np.array([v for *_, v in items], dtype=np.int64))
    mask = torch.from_numpy(np.stack([feasible[v] for _, feasible, _, v in items]))
    return SweepGroup(down, up, x, torch.from_numpy(pools), current, mask, torch.arange(s),
                      torch.from_numpy(members), torch.from_numpy(structures[0].devices))  # one cluster per rollout


def sweep_plan(level: np.ndarray, src: np.ndarray, dst: np.ndarray) -> Sweep:
    """The :class:`Sweep` of the nodes at ``level`` with edges ``src → dst`` (level[src] < level[dst])."""
    perm = np.argsort(level, kind="stable")
    pos = np.empty_like(perm)
    pos[perm] = np.arange(len(perm))
    counts = np.bincount(level, minlength=1)
    bounds = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    rows, cols = pos[dst], pos[src]
    order = np.lexsort((cols, rows))
    rows, cols = rows[order], cols[order]
    steps, gathers, compact = [], [], []
    for lv in range(1, len(counts)):
        lo, hi = bounds[lv], bounds[lv + 1]
        a, b = np.searchsorted(rows, [lo, hi])
        r = rows[a:b] - lo
        ptr = np.zeros(hi - lo + 1, dtype=np.int64)
        np.cumsum(np.bincount(r, minlength=hi - lo), out=ptr[1:])
        steps.append(selection(ptr, cols[a:b], (int(hi - lo), int(lo)), False, mean=False))
        used = np.unique(cols[a:b])  # the positions this level reads, in order: grouped by their level
        src_level = np.searchsorted(bounds, used, side="right") - 1
        gathers.append([(int(j), torch.from_numpy(used[src_level == j] - bounds[j])) for j in np.unique(src_level)])
        compact.append(selection(ptr, np.searchsorted(used, cols[a:b]), (int(hi - lo), len(used)), True, mean=False))
    return Sweep(torch.from_numpy(perm), torch.from_numpy(pos), bounds.tolist(), steps, gathers, compact)


def _csr_of(n: int, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.lexsort((cols, rows))
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=ptr[1:])
    return ptr, cols[order].astype(np.int64)


def _csr_tensor(crow: np.ndarray, col: np.ndarray, shape: tuple[int, int],
                values: np.ndarray | None = None) -> torch.Tensor:
    vals = torch.ones(len(col), dtype=torch.float32) if values is None else torch.from_numpy(values)
    return torch.sparse_csr_tensor(torch.from_numpy(crow), torch.from_numpy(col), vals, size=shape,
                                   check_invariants=False)


def _mean_adjacency(a: tuple[np.ndarray, np.ndarray], a_t: tuple[np.ndarray, np.ndarray], n: int) -> SparsePair:
    """Row-normalised adjacency (mean over in-neighbours) from CSR ``a`` and the CSR of its pattern's transpose."""
    (ptr, col), (t_ptr, t_col) = a, a_t
    inv = (1.0 / np.maximum(np.diff(ptr), 1)).astype(np.float32)
    vals = np.repeat(inv, np.diff(ptr))
    return SparsePair(_csr_tensor(ptr, col, (n, n), vals), _csr_tensor(t_ptr, t_col, (n, n), inv[t_col]))


def selection(ptr: np.ndarray, col: np.ndarray, shape: tuple[int, int], grad: bool, mean: bool = True) -> SparsePair:
    """A CSR matrix (``ptr``, ``col``) whose row s holds 1/|row| (``mean``) or 1 on its columns and,
    when gradients are needed, its transpose."""
    counts = np.diff(ptr)
    vals = np.repeat((1.0 / np.maximum(counts, 1) if mean else np.ones(len(counts))).astype(np.float32), counts)
    a = _csr_tensor(ptr, col, shape, vals)
    if not grad:
        return SparsePair(a, None)
    rows = np.repeat(np.arange(shape[0]), counts)
    order = np.lexsort((rows, col))
    t_ptr = np.zeros(shape[1] + 1, dtype=np.int64)
    np.cumsum(np.bincount(col, minlength=shape[1]), out=t_ptr[1:])
    return SparsePair(a, _csr_tensor(t_ptr, rows[order].astype(np.int64), (shape[1], shape[0]), vals[order]))
