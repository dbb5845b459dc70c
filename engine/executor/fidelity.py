"""Simulator fidelity: how well simulated makespans predict measured ones (issue #14).

DOPPLER App. G.1 reports the correlation between its simulator's makespans and the real
engine's over many placements (Pearson 0.79, Spearman 0.69); :func:`fidelity_stats` computes
the same two correlations (scipy.stats) plus the relative error of each prediction,
``|simulated − measured| / measured``, as its median and maximum.

:func:`load_measured_schedule` reads back a measured schedule a run stored with
:func:`engine.run_records.write_schedule_tables` (prefix ``measured``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.cluster import Cluster
from engine.graph import CompGraph
from engine.runs import Run
from engine.schedule import Schedule

__all__ = ["fidelity_stats", "load_measured_schedule"]


def fidelity_stats(measured: Sequence[float], predicted: Sequence[float]) -> dict[str, Any]:
    """Pearson and Spearman correlation, median and max relative error of ``predicted``.

    Correlations are ``None`` with fewer than 3 placements or when either side is constant
    (undefined); relative errors are defined for any positive ``measured``.
    """
    from scipy import stats

    m = np.asarray(measured, dtype=np.float64)
    p = np.asarray(predicted, dtype=np.float64)
    rel = np.abs(p - m) / m
    defined = len(m) >= 3 and np.ptp(m) > 0 and np.ptp(p) > 0
    return {
        "placements": len(m),
        "pearson": float(stats.pearsonr(m, p)[0]) if defined else None,
        "spearman": float(stats.spearmanr(m, p)[0]) if defined else None,
        "median_rel_error": float(np.median(rel)) if len(m) else None,
        "max_rel_error": float(rel.max()) if len(m) else None,
        "mean_ratio": float(np.mean(p / m)) if len(m) else None,
    }


def load_measured_schedule(run: Run, graph: CompGraph, cluster: Cluster, prefix: str = "measured") -> Schedule:
    """The measured schedule a run stored (op intervals and transfers; memory is not stored)."""
    ops = run.read_table(f"{prefix}_ops.csv")
    tr = run.read_table(f"{prefix}_transfers.csv")
    dev = np.array([cluster.device_index(d) for d in ops["device"]], dtype=np.int64)
    start, end = np.array(ops["start_s"], float), np.array(ops["end_s"], float)
    index = {name: i for i, name in enumerate(graph.op_names)}
    t_op = np.array([index[o] for o in tr["op"]], dtype=np.int64)
    t_src = np.array([cluster.device_index(d) for d in tr["src"]], dtype=np.int64)
    t_dst = np.array([cluster.device_index(d) for d in tr["dst"]], dtype=np.int64)
    t_start, t_end = np.array(tr["start_s"], float), np.array(tr["end_s"], float)
    nd = cluster.num_devices
    zeros = np.zeros(nd)
    return Schedule(
        makespan=float(max(end.max(initial=0.0), t_end.max(initial=0.0))), op_device=dev, op_start=start,
        op_end=end, transfer_op=t_op, transfer_src=t_src, transfer_dst=t_dst,
        transfer_bytes=np.array(tr["bytes"], float), transfer_start=t_start, transfer_end=t_end,
        compute_time=np.bincount(dev, weights=end - start, minlength=nd),
        memcpy_time=np.bincount(t_src, weights=t_end - t_start, minlength=nd), peak_memory=zeros,
        memory_capacity=cluster.memory.copy(), persistent_memory=zeros.copy(),
        transfer_primary=np.ones(len(t_op), dtype=bool), mode="measured")
