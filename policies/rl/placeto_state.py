"""Placeto's MDP states as tensors: per-graph structure, node features and batched sparse matrices.

A state (Placeto §2.1) is the group graph with each group's features — run time, output size,
one-hot current device, "visited" flag, "current" flag — and the node being placed. This
module builds what :class:`policies.rl.placeto_net.PlacetoNet` reads:

* :class:`GraphStructure` — per graph, once (cached per task by :class:`policies.rl.agent.PerTask`):
  the static features (run time and output size divided by the graph's mean, log1p-scaled), the
  parent and child adjacency in CSR, and each node's parents, children and parallel nodes (the
  pooling sets of §2.2, Fig. 3c–d, from the task's reachability);
* :func:`node_features` — one state's (groups, 4 + devices) feature matrix;
* :func:`state_batch` — S states, possibly of different graphs, as one disjoint-union graph with
  row-averaging CSR matrices (and their transposes when a gradient will be taken).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from policies.rl.placeto_net import SparsePair, StateBatch
from policies.rl.task import PlacementTask

__all__ = ["GraphStructure", "graph_structure", "node_features", "state_batch"]


@dataclass
class GraphStructure:
    static: np.ndarray  # (N, 2) normalised run time and output size
    down: tuple[np.ndarray, np.ndarray]  # CSR (ptr, col): row v = v's parents
    up: tuple[np.ndarray, np.ndarray]  # CSR (ptr, col): row v = v's children
    sets: list[list[np.ndarray]]  # parents, children, parallel nodes of each node (for pooling)


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
    return GraphStructure(static, _csr_of(n, dst, src), _csr_of(n, src, dst), sets)


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
    pools = [_selection(np.concatenate([[0], pool_ptr[i]]).astype(np.int64), np.concatenate(pool_col[i]), (s, off),
                        grad) for i in range(3)]
    members = _selection(np.concatenate([[0], np.cumsum([len(m) for m in member_col])]).astype(np.int64),
                         np.concatenate(member_col), (s, off), grad)
    down = (np.concatenate([[0], *graph_ptr["down"]]).astype(np.int64), np.concatenate(graph_col["down"]))
    up = (np.concatenate([[0], *graph_ptr["up"]]).astype(np.int64), np.concatenate(graph_col["up"]))
    return StateBatch(torch.from_numpy(np.concatenate(xs)), _mean_adjacency(down, up, off),
                      _mean_adjacency(up, down, off), torch.tensor(current, dtype=torch.long), pools, members,
                      torch.from_numpy(np.stack(masks)))


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


def _selection(ptr: np.ndarray, col: np.ndarray, shape: tuple[int, int], grad: bool) -> SparsePair:
    """A row-averaging matrix (CSR ``ptr``, ``col``; row s = 1/|row| on its columns) and, when
    gradients are needed, its transpose."""
    counts = np.diff(ptr)
    vals = np.repeat((1.0 / np.maximum(counts, 1)).astype(np.float32), counts)
    a = _csr_tensor(ptr, col, shape, vals)
    if not grad:
        return SparsePair(a, None)
    rows = np.repeat(np.arange(shape[0]), counts)
    order = np.lexsort((rows, col))
    t_ptr = np.zeros(shape[1] + 1, dtype=np.int64)
    np.cumsum(np.bincount(col, minlength=shape[1]), out=t_ptr[1:])
    return SparsePair(a, _csr_tensor(t_ptr, rows[order].astype(np.int64), (shape[1], shape[0]), vals[order]))
