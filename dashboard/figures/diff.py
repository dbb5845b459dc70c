"""Placement diff: which ops two placements of the same graph put on different devices."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from engine.graph.compgraph import CompGraph

__all__ = ["moved_ops", "placement_diff"]


def moved_ops(left: np.ndarray, right: np.ndarray, left_names: Sequence[str],
              right_names: Sequence[str]) -> np.ndarray:
    """Bool per op: placed on differently named devices by ``left`` and ``right`` (device indices)."""
    lname = np.asarray(list(left_names), dtype=object)[np.asarray(left, dtype=np.int64)]
    rname = np.asarray(list(right_names), dtype=object)[np.asarray(right, dtype=np.int64)]
    return lname != rname


def placement_diff(graph: CompGraph, left: np.ndarray, right: np.ndarray, left_names: Sequence[str],
                   right_names: Sequence[str], compute: np.ndarray | None = None) -> pd.DataFrame:
    """One row per op placed differently: op, type, scope, device on the left and on the right, compute (ms).

    Devices are compared by name (two clusters with the same device names compare op by op);
    rows are ordered by compute time, heaviest first, as those moves matter most. ``compute`` (s per op)
    is the time shown, e.g. each op's duration in a schedule of the right placement; by default each op's
    time on its fastest device kind (:meth:`CompGraph.min_compute`).
    """
    left, right = np.asarray(left, dtype=np.int64), np.asarray(right, dtype=np.int64)
    if len(left) != graph.num_ops or len(right) != graph.num_ops:
        raise ValueError("both placements must have one device per op of the graph")
    lname = np.asarray(list(left_names), dtype=object)[left]
    rname = np.asarray(list(right_names), dtype=object)[right]
    moved = np.flatnonzero(moved_ops(left, right, left_names, right_names))
    compute = graph.min_compute() if compute is None else np.asarray(compute, dtype=np.float64)
    order = moved[np.argsort(-compute[moved], kind="stable")]
    return pd.DataFrame({"op": [graph.op_names[i] for i in order.tolist()],
                         "type": [graph.op_types[i] or "" for i in order.tolist()],
                         "scope": [graph.scope[i] or "" for i in order.tolist()],
                         "left device": lname[order], "right device": rname[order],
                         "compute (ms)": compute[order] * 1e3})
