"""GDP's inputs for one placement task (numpy, torch-free): per op group its op types, four z-scored
numbers and its place in the placement order, and the graph's neighbourhoods.

Mirhoseini et al. §3.2 describe an op by its type, its output shape and its adjacency; the DOPPLER
authors' GDP feeds an op-type one-hot, the summed compute of its successors as the "output shape", and
its predecessors' ids (``utils.py:52-83`` at 87dda0d). Ours, per op group:

* **op types**: every member op's type name hashed into ``type_buckets`` rows (CRC-32), averaged
  by the network's embedding bag — a graph never seen needs no vocabulary;
* **numbers**, each z-scored over the graph's groups (a constant column is 0): compute (the mean over
  feasible devices of the members' summed compute), output bytes leaving the group (the output
  "shape"), in- and out-degree in the group graph, and the position in the placement order
  (0 … 1);
* **adjacency** is GraphSAGE's neighbourhood, predecessors and successors alike (the authors'
  ``gdp_agent.py:50``), not node ids, which mean nothing on another graph.

The placement order is the task's traversal order (topological on the condensation,
:attr:`~policies.rl.core.task.PlacementTask.order`); the authors' code keeps its files' node order.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from policies.rl.core.task import PlacementTask

__all__ = ["NUMERIC", "GdpInputs", "type_bucket", "zscore"]

NUMERIC = 5  #: numbers per group: compute, output bytes, in-degree, out-degree, order position


def zscore(x: np.ndarray) -> np.ndarray:
    """Each column's ``(x − mean) / std``; a constant column becomes 0."""
    x = np.asarray(x, dtype=np.float64)
    dev = x - x.mean(axis=0, keepdims=True)
    sd = np.sqrt((dev * dev).mean(axis=0, keepdims=True))
    return np.where(sd > 0, dev / np.where(sd > 0, sd, 1.0), 0.0)


def type_bucket(op_type: str, buckets: int) -> int:
    """The embedding row of an op type: its name's CRC-32 modulo ``buckets`` (stable across runs)."""
    return zlib.crc32(op_type.encode("utf-8")) % buckets


@dataclass
class GdpInputs:
    """What the network reads of one task (see the module docstring).

    numeric (groups × 5, float32); type_ids (ops,) the members' type rows sorted by group, with
    type_offsets (groups,) where each group's run starts (an embedding bag's input); src, dst the
    directed neighbour pairs (both directions of every group edge: a message from src to dst);
    order (groups,) the placement order; infeasible (groups × devices) the masked devices.
    """

    numeric: np.ndarray
    type_ids: np.ndarray
    type_offsets: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    order: np.ndarray
    infeasible: np.ndarray

    @classmethod
    def build(cls, task: PlacementTask, buckets: int) -> GdpInputs:
        k = task.num_groups
        members = np.argsort(task.op_group, kind="stable")
        table = {t: type_bucket(t, buckets) for t in set(task.graph.op_types)}
        type_ids = np.array([table[task.graph.op_types[i]] for i in members.tolist()], dtype=np.int64)
        offsets = np.searchsorted(task.op_group[members], np.arange(k)).astype(np.int64)
        e_src, e_dst = task.edges[0].astype(np.int64), task.edges[1].astype(np.int64)
        position = np.empty(k)
        position[task.order] = np.arange(k) / max(k - 1, 1)
        numeric = zscore(np.column_stack([task.group_time, task.group_out_bytes,
                                          np.bincount(e_dst, minlength=k), np.bincount(e_src, minlength=k), position]))
        return cls(numeric.astype(np.float32), type_ids, offsets, np.concatenate([e_src, e_dst]),
                   np.concatenate([e_dst, e_src]), task.order.astype(np.int64), ~task.feasible)
