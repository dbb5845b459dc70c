"""Simulator fidelity: how well simulated makespans predict measured ones (issue #14).

DOPPLER App. G.1 reports the correlation between its simulator's makespans and the real
engine's over many placements (Pearson 0.79, Spearman 0.69); :func:`fidelity_stats` computes
the same two correlations (scipy.stats) plus the relative error of each prediction,
``|simulated − measured| / measured``, as its median and maximum.

:func:`replay_graph` splits a prediction's error in two: it gives each op the duration it was
measured at and each cross-device edge the duration its copy was measured at, so simulating it
(the calibrated cluster: its dispatch order, per-op cost and copy rule) reproduces a measured
run insofar as the simulator's *rules* are right; what is left of the error then comes from the
*durations* the cost model predicts (calibrated matmul throughput and copy bandwidth).

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

__all__ = ["fidelity_stats", "load_measured_schedule", "replay_graph"]


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


def replay_graph(graph: CompGraph, devices: np.ndarray, measured: Schedule) -> CompGraph:
    """``graph`` with the durations of one measured run of placement ``devices``.

    Each op's compute time (on every kind) is its measured interval; each edge across devices
    carries as ``edge_transfer_s`` the measured duration of the copy of its producer's output to
    its consumer's device (the executor makes one per producer and destination device, CONTRACTS
    §4). Edges within a device keep no transfer time. Bytes and memory are unchanged.
    """
    devices = np.asarray(devices, dtype=np.int64)
    copy_s: dict[tuple[int, int], float] = {}
    for o, d, b, e in zip(measured.transfer_op.tolist(), measured.transfer_dst.tolist(),
                          measured.transfer_start.tolist(), measured.transfer_end.tolist(), strict=True):
        # the longest: a simulated schedule lists the edges that land with a copy at zero length
        copy_s[o, d] = max(copy_s.get((o, d), 0.0), e - b)
    src, dst = graph.edge_src, graph.edge_dst
    transfer = np.full(len(src), np.nan)
    for e in np.flatnonzero(devices[src] != devices[dst]).tolist():
        key = (int(src[e]), int(devices[dst[e]]))
        if key not in copy_s:
            raise ValueError(f"the measured run has no copy of op '{graph.op_names[key[0]]}' to device {key[1]}: "
                             "it is not a run of this placement")
        transfer[e] = copy_s[key]
    return CompGraph(
        graph.name + "@replay", graph.op_names, compute_any=measured.op_end - measured.op_start,
        output_bytes=graph.output_bytes, persistent_bytes=graph.persistent_bytes, temp_bytes=graph.temp_bytes,
        edge_src=src, edge_dst=dst, edge_bytes=graph.edge_bytes, edge_transfer_s=transfer, op_types=graph.op_types,
        colocate=graph.colocate, pin=graph.pin, phase=graph.phase, scope=graph.scope)
