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
:func:`refine_cluster` corrects those from measured runs: each device's speed and the copy
link's bandwidth and latency, fitted by least squares to what the runs measured.

:func:`repeat_agreement` measures the executor against itself (one repeat's makespans
predicting another's): how much of a mode's error the run-to-run noise could explain.
:func:`noise_ceiling` turns the same noise into a bound: the Spearman correlation that even an
error-free prediction could reach against the mean of the measured repeats.

:func:`load_measured_schedule` reads back a measured schedule a run stored with
:func:`engine.store.records.write_schedule_tables` (prefix ``measured``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.cluster import Cluster, Link
from engine.errors import quote
from engine.graph.compgraph import CompGraph
from engine.placement import compute_matrix
from engine.sim.schedule import Schedule
from engine.store.runs import Run

__all__ = ["fidelity_stats", "load_measured_schedule", "noise_ceiling", "refine_cluster", "repeat_agreement",
           "replay_graph", "replay_makespan"]


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


def repeat_agreement(makespans: Sequence[Sequence[float]]) -> dict[str, Any] | None:
    """The executor against itself: :func:`fidelity_stats` of one repeat's makespans predicting
    another's, over the placements, for every pair of repeats; each figure is its median over
    the pairs (``None`` if undefined for every pair). ``makespans[i][r]`` is placement *i*'s
    makespan in repeat *r*. ``None`` with fewer than 2 repeats.

    A mode is scored against the mean of all repeats, which is steadier than one run, so it can
    score above these figures; a mode far below them is limited by its model, not by the noise.
    """
    runs = np.asarray(makespans, dtype=np.float64)
    if runs.ndim != 2 or runs.shape[1] < 2:
        return None
    pairs = [fidelity_stats(runs[:, a], runs[:, b])
             for a in range(runs.shape[1]) for b in range(a + 1, runs.shape[1])]
    out: dict[str, Any] = {"placements": runs.shape[0], "repeat_pairs": len(pairs)}
    for key in ("pearson", "spearman", "median_rel_error", "max_rel_error", "mean_ratio"):
        values = [p[key] for p in pairs if p[key] is not None]
        out[key] = float(np.median(values)) if values else None
    return out


def noise_ceiling(makespans: Sequence[Sequence[float]]) -> dict[str, Any] | None:
    """How well any prediction, even an error-free one, can rank the placements by their
    measured mean makespan, given the run-to-run noise. ``makespans[i][r]`` as in
    :func:`repeat_agreement`; ``None`` with fewer than 2 repeats or 3 placements, or when a
    half's means are constant.

    The repeats are split in two halves in every way (each split counted once; halves of
    ``R // 2`` and ``R − R // 2`` repeats), and ``split_half_spearman`` is the mean Spearman
    correlation of the two halves' per-placement means. The Spearman–Brown formula gives the
    ``reliability`` of the mean of all ``R`` repeats, ``2r / (1 + r)``, and Spearman's correction
    for attenuation (1904) the ``spearman_ceiling``, ``sqrt(reliability)``: the correlation of the
    measured means with the placements' true (noise-free) mean makespans. A simulation mode
    close to the ceiling is limited by the noise, not by its model; one over it is possible
    (the ceiling is an estimate) but should not be far over.

    The bound depends on the sample: placements whose makespans lie close together (e.g.
    uniformly random placements of a graph with many small ops) rank at the noise, placements
    from good to bad (a learner's, DOPPLER App. G.1 Fig. 26) well above it.
    """
    from itertools import combinations

    from scipy import stats

    runs = np.asarray(makespans, dtype=np.float64)
    if runs.ndim != 2 or runs.shape[1] < 2 or runs.shape[0] < 3:
        return None
    reps = runs.shape[1]
    rs = []
    # every split once: with an even R the halves that hold repeat 0, with an odd R the smaller halves
    halves = (combinations(range(reps), reps // 2) if reps % 2 else
              ((0, *h) for h in combinations(range(1, reps), reps // 2 - 1)))
    for half in halves:
        first = list(half)
        a, b = runs[:, first].mean(axis=1), np.delete(runs, first, axis=1).mean(axis=1)
        if np.ptp(a) > 0 and np.ptp(b) > 0:
            rs.append(float(stats.spearmanr(a, b)[0]))
    if not rs:
        return None
    r = float(np.mean(rs))
    reliability = 2.0 * r / (1.0 + r) if r > -1.0 else -1.0
    return {"placements": runs.shape[0], "repeats": reps, "splits": len(rs), "split_half_spearman": r,
            "reliability": reliability, "spearman_ceiling": float(np.sqrt(max(reliability, 0.0)))}


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


def _copies(measured: Schedule) -> dict[tuple[int, int], tuple[float, float]]:
    """(producer op, destination device) → (bytes, seconds) of each copy of a run. The executor makes
    one copy per pair, of the largest edge's bytes; a simulated schedule lists every edge, those
    landing with the copy at zero length: the largest bytes and the longest interval per pair."""
    out: dict[tuple[int, int], tuple[float, float]] = {}
    for o, d, n, b, e in zip(measured.transfer_op.tolist(), measured.transfer_dst.tolist(),
                             measured.transfer_bytes.tolist(), measured.transfer_start.tolist(),
                             measured.transfer_end.tolist(), strict=True):
        had = out.get((o, d), (0.0, 0.0))
        out[o, d] = (max(had[0], n), max(had[1], e - b))
    return out


def _ran_alone(measured: Schedule) -> set[tuple[int, int]]:
    """The (producer op, destination device) copies of a run during which no other device copied."""
    t0, t1, src = measured.transfer_start, measured.transfer_end, measured.transfer_src
    out = set()
    for i in np.flatnonzero(t1 > t0).tolist():
        other = (src != src[i]) & (t1 > t0)
        if not np.any((t0[other] < t1[i]) & (t1[other] > t0[i])):
            out.add((int(measured.transfer_op[i]), int(measured.transfer_dst[i])))
    return out


def replay_graph(graph: CompGraph, devices: np.ndarray, measured: Schedule, *, ops: bool = True,
                 copies: bool = True) -> CompGraph:
    """``graph`` with the durations of one measured run of placement ``devices``.

    Each op's compute time (on every kind) is its measured interval; each edge across devices
    carries as ``edge_transfer_s`` the measured duration of the copy of its producer's output to
    its consumer's device (the executor makes one per producer and destination device, CONTRACTS
    §4). Edges within a device keep no transfer time. Bytes and memory are unchanged.
    ``ops=False`` keeps the graph's compute times, ``copies=False`` its transfers by the link:
    which of the two predicted durations a fidelity gap comes from.
    """
    devices = np.asarray(devices, dtype=np.int64)
    if not copies:
        return _with_durations(graph, measured.op_end - measured.op_start if ops else None, None)
    copy_s = {key: seconds for key, (_, seconds) in _copies(measured).items()}
    src, dst = graph.edge_src, graph.edge_dst
    transfer = np.full(len(src), np.nan)
    for e in np.flatnonzero(devices[src] != devices[dst]).tolist():
        key = (int(src[e]), int(devices[dst[e]]))
        if key not in copy_s:
            raise ValueError(f"the measured run has no copy of op {quote(graph.op_names[key[0]])} to device {key[1]}: "
                             "it is not a run of this placement")
        transfer[e] = copy_s[key]
    return _with_durations(graph, measured.op_end - measured.op_start if ops else None, transfer)


def replay_makespan(graph: CompGraph, cluster: Cluster, devices: np.ndarray, runs: Sequence[Schedule], *,
                    ops: bool = True, copies: bool = True) -> float:
    """The mean over measured ``runs`` of placement ``devices`` of their replays' makespans on
    ``cluster`` (:func:`replay_graph`, whole or half). Measured copies took the time they took
    beside each other: replaying them, the copies do not share a bus again (``copy_bus_shared``
    off); predicted copies (``copies=False``) keep the cluster's rule."""
    from engine.sim.simulator import Simulator

    if copies and cluster.simulation.copy_bus_shared:
        cluster = cluster.with_simulation(copy_bus_shared=False)
    return float(np.mean([Simulator(replay_graph(graph, devices, s, ops=ops, copies=copies), cluster).makespan(devices)
                          for s in runs]))


def _with_durations(graph: CompGraph, compute: np.ndarray | None, transfer: np.ndarray | None) -> CompGraph:
    """``graph`` renamed ``…@replay`` with these op times (None: its own) and edge transfer times."""
    own = compute is None
    return CompGraph(
        graph.name + "@replay", graph.op_names, compute_any=graph.compute_any if own else compute,
        compute_by_kind=graph.compute_by_kind if own else None, kinds=graph.kinds if own else (),
        output_bytes=graph.output_bytes, persistent_bytes=graph.persistent_bytes, temp_bytes=graph.temp_bytes,
        edge_src=graph.edge_src, edge_dst=graph.edge_dst, edge_bytes=graph.edge_bytes,
        edge_transfer_s=graph.edge_transfer_s if transfer is None else transfer,
        op_types=graph.op_types, colocate=graph.colocate, pin=graph.pin, phase=graph.phase, scope=graph.scope)


def refine_cluster(cluster: Cluster, graph: CompGraph, runs: Sequence[tuple[np.ndarray, Schedule]]) -> Cluster:
    """``cluster`` with its durations fitted to measured ``runs`` (placement, measured schedule) of ``graph``.

    * **Ops:** device ``d``'s measured op intervals against the times ``cluster`` predicts for
      them (``graph``'s compute time on ``d``'s kind over its speed): the least-squares factor
      ``k_d`` through the origin, and ``d``'s speed divided by it.
    * **Copies:** the measured copies' durations against the link's time for their bytes
      (:meth:`~engine.cluster.Link.copy_seconds`: its ``copy_curve``, or bytes / bandwidth): the
      least-squares factor ``k`` through the origin scales the curve's times by ``k`` and divides
      the bandwidth by it; per-pair links become that one link. With ``copy_bus_shared`` only
      copies that ran while no other device copied count (the others' time includes the
      bus's share, which the simulation adds). The latency stays: with copies on the sender
      (``copy_occupies_sender``) it is the time a copy spends in flight after the sender is done
      (the message and the receiver's wake-up), which a measured copy interval, the sender's
      memcpy, does not contain; calibration measures it. Without such copies the link stays.

    The simulation settings (mode, ``dispatch_s``, the copy rule) stay. A cluster refined on one
    graph's runs predicts that graph's runs best: op speed and copy speed here depend on how
    much a graph copies between its matmuls (caches), so refine on the workload you study, and
    judge the result on other placements than those it was fitted to.
    """
    if not runs:
        raise ValueError("refining a cluster needs at least one measured run")
    nd = cluster.num_devices
    per_device = compute_matrix(graph, cluster).T  # (devices, ops)
    num, den = np.zeros(nd), np.zeros(nd)
    sizes, times = [], []
    for devices, measured in runs:
        devices = np.asarray(devices, dtype=np.int64)
        planned = per_device[devices, np.arange(graph.num_ops)]
        took = measured.op_end - measured.op_start
        ok = np.isfinite(planned) & np.isfinite(took) & (planned > 0)
        np.add.at(num, devices[ok], took[ok] * planned[ok])
        np.add.at(den, devices[ok], planned[ok] ** 2)
        alone = _ran_alone(measured) if cluster.simulation.copy_bus_shared else None
        for key, (nbytes, seconds) in _copies(measured).items():
            if alone is None or key in alone:
                sizes.append(nbytes)
                times.append(seconds)
    factor = np.where(den > 0, num / np.where(den > 0, den, 1.0), 1.0)
    devices_out = tuple(dataclasses.replace(d, speed=d.speed / k) if k > 0 else d
                        for d, k in zip(cluster.devices, factor.tolist(), strict=True))
    link, links = cluster.link, cluster.links
    b, t = np.array(sizes, dtype=np.float64), np.array(times, dtype=np.float64)
    predicted = link.copy_seconds(b)
    if len(b) and float(predicted @ predicted) > 0:
        k = float(predicted @ t) / float(predicted @ predicted)
        if k > 0:
            link = Link(link.bandwidth_bytes_per_s / k, link.latency_s, tuple((x, y * k) for x, y in link.copy_curve))
            links = ()
    return dataclasses.replace(cluster, devices=devices_out, link=link, links=links,
                               description=(cluster.description + " · " if cluster.description else "")
                               + f"refined on {len(runs)} measured runs of {graph.name}")
