"""Placement runs on disk: what a placed-and-simulated run stores and how it is read back.

A placement run (kind ``place``, or one row of a ``compare``) holds, besides ``run.json``:

* ``graph.json`` and ``cluster.json`` — the inputs, so the run is self-contained;
* ``placement.json`` — ``placelab.placement/1``;
* ``schedule_ops.csv`` — one row per op interval (op, index, device, start_s, end_s, phase);
* ``schedule_transfers.csv`` — one row per transfer (op, src, dst, bytes, start_s, end_s);
* metrics in ``run.json``: makespan, lower bound, peak memory per device, OOM, the placer's own
  estimate of the makespan (``predicted_makespan_s``, null when it makes none; absent in runs stored
  before it was recorded), ...

:func:`load_placement_run` rebuilds graph, cluster and placement; re-simulating them gives
the stored schedule again (the simulator is deterministic), which is how traces and figures
of stored runs are drawn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.cluster import Cluster, cluster_from_dict, cluster_to_dict
from engine.errors import RunError
from engine.graph.compgraph import CompGraph
from engine.graph.io import graph_from_dict, graph_to_dict
from engine.jsonio import json_text
from engine.placement import Placement, placement_from_dict
from engine.sim.objectives import lower_bound
from engine.sim.schedule import Schedule
from engine.store.runs import Run, RunStore
from engine.store.tables import csv_text

__all__ = [
    "ESTIMATE_TOLERANCE",
    "SINGLE_DEVICE_KEYS",
    "PlacementRun",
    "estimate_error",
    "estimate_warning",
    "export_trace",
    "load_placement_run",
    "placement_file_bytes",
    "placement_metrics",
    "save_placement_run",
    "single_device_metrics",
    "write_placement_files",
    "write_schedule_tables",
]

#: A placer's own estimate further than this (relative) from the simulated makespan is shown as a warning.
ESTIMATE_TOLERANCE = 0.05
#: The metrics :func:`single_device_metrics` adds (``compare``, ``place`` and the app store them with a run).
SINGLE_DEVICE_KEYS = ("single_device_makespan_s", "ratio_to_single_device")


def placement_metrics(graph: CompGraph, cluster: Cluster, schedule: Schedule,
                      predicted_makespan_s: float | None = None, note: str | None = None) -> dict[str, Any]:
    """The numbers CONTRACTS §5 reports for a simulated placement; ``predicted_makespan_s`` is the
    placer's own estimate (:attr:`~engine.placement.Placement.predicted_makespan_s`), None when it makes none;
    ``note`` its line about the placement (:attr:`~engine.placement.Placement.note`), stored as ``placer_note``
    where there is one."""
    lb = lower_bound(graph, cluster)
    names = [d.name for d in cluster.devices]
    return {**({"placer_note": note} if note else {}),
        "makespan_s": schedule.makespan,
        "predicted_makespan_s": predicted_makespan_s,
        "lower_bound_s": lb,
        "ratio_to_lower_bound": schedule.makespan / lb if lb > 0 else None,
        "peak_memory_bytes": {n: float(b) for n, b in zip(names, schedule.peak_memory, strict=True)},
        "oom": schedule.any_oom,
        "oom_devices": [n for n, o in zip(names, schedule.oom, strict=True) if o],
        "communication_bytes": schedule.communication_bytes,
        "compute_s": {n: float(b) for n, b in zip(names, schedule.compute_time, strict=True)},
        "memcpy_s": {n: float(b) for n, b in zip(names, schedule.memcpy_time, strict=True)},
        "mode": schedule.mode,
    }


def single_device_metrics(makespan_s: float, single_device_s: float | None) -> dict[str, float | None]:
    """``single_device_makespan_s`` (the single-device placer's simulated makespan on the same graph and cluster,
    None where it does not apply) and ``ratio_to_single_device`` (``makespan_s`` ÷ it; None where undefined)."""
    return {"single_device_makespan_s": single_device_s,
            "ratio_to_single_device": makespan_s / single_device_s if single_device_s else None}


def estimate_error(makespan_s: float | None, predicted_s: float | None) -> float | None:
    """``(predicted − simulated) / simulated``: how far a placer's own estimate is from the simulated makespan;
    None where it made none (or the makespan is 0)."""
    if predicted_s is None or not makespan_s:
        return None
    return (predicted_s - makespan_s) / makespan_s


def estimate_warning(makespan_s: float | None, predicted_s: float | None) -> str | None:
    """``"est. off by +38 %"`` where the estimate is more than :data:`ESTIMATE_TOLERANCE` off the simulated
    makespan, else None (also where there is no estimate)."""
    err = estimate_error(makespan_s, predicted_s)
    if err is None or abs(err) <= ESTIMATE_TOLERANCE:
        return None
    return f"est. off by {100 * err:+.0f} %"


def save_placement_run(
    store: RunStore, graph: CompGraph, cluster: Cluster, placement: Placement, schedule: Schedule, *,
    placer: str, parameters: dict[str, Any], seed: int | None, seconds_to_place: float,
    kind: str = "place", tags: list[str] | None = None, extra_metrics: dict[str, Any] | None = None,
    measured: Schedule | None = None,
) -> Run:
    """Store a placed and simulated graph as a finished run; returns the run.

    ``measured`` (an executed schedule, :mod:`engine.executor`) is stored beside the
    simulated one as ``measured_ops.csv`` / ``measured_transfers.csv``.
    """
    run = store.create(kind, graph_name=graph.name, graph_hash=graph.content_hash, cluster=cluster.name,
                       placer=placer, parameters=parameters, seed=seed, tags=list(tags or []))
    with run:
        metrics = write_placement_files(run, graph, cluster, placement, schedule)
        if measured is not None:
            write_schedule_tables(run, graph, cluster, measured, "measured")
        metrics["seconds_to_place"] = seconds_to_place
        metrics.update(extra_metrics or {})
        run.finish("done", metrics)
    return run


def write_placement_files(run: Run, graph: CompGraph, cluster: Cluster, placement: Placement,
                          schedule: Schedule) -> dict[str, Any]:
    """Write a placement and its schedule into ``run`` (replayable by the app); returns its metrics (with the
    placement's ``predicted_makespan_s``)."""
    for name, data in placement_file_bytes(graph, cluster, placement, schedule).items():
        run.write_bytes(name, data)
    return placement_metrics(graph, cluster, schedule, placement.predicted_makespan_s, placement.note)


def placement_file_bytes(graph: CompGraph, cluster: Cluster, placement: Placement,
                         schedule: Schedule) -> dict[str, bytes]:
    """The files of a placement run, encoded: what :func:`write_placement_files` writes, by name (a worker
    encodes them and the process that stores the run writes the same bytes)."""
    docs = {"graph.json": graph_to_dict(graph), "cluster.json": cluster_to_dict(cluster),
            "placement.json": placement.to_dict(graph, cluster)}
    out = {name: json_text(doc).encode("utf-8") for name, doc in docs.items()}
    out.update({name: csv_text(columns, name).encode("utf-8")
                for name, columns in schedule_tables(graph, cluster, schedule).items()})
    return out


def write_schedule_tables(run: Run, graph: CompGraph, cluster: Cluster, schedule: Schedule,
                          prefix: str = "schedule") -> None:
    """Write ``{prefix}_ops.csv`` and ``{prefix}_transfers.csv`` (``measured_`` for executed runs)."""
    for name, columns in schedule_tables(graph, cluster, schedule, prefix).items():
        run.write_table(name, columns)


def schedule_tables(graph: CompGraph, cluster: Cluster, schedule: Schedule,
                    prefix: str = "schedule") -> dict[str, dict[str, list]]:
    """The columns of ``{prefix}_ops.csv`` and ``{prefix}_transfers.csv``, by file name."""
    devs = [d.name for d in cluster.devices]
    return {
        f"{prefix}_ops.csv": {
            "op": list(graph.op_names),
            "index": list(range(graph.num_ops)),
            "device": [devs[d] for d in schedule.op_device.tolist()],
            "start_s": schedule.op_start.tolist(),
            "end_s": schedule.op_end.tolist(),
            "phase": [p or "" for p in graph.phase],
        },
        f"{prefix}_transfers.csv": {
            "op": [graph.op_names[i] for i in schedule.transfer_op.tolist()],
            "src": [devs[d] for d in schedule.transfer_src.tolist()],
            "dst": [devs[d] for d in schedule.transfer_dst.tolist()],
            "bytes": schedule.transfer_bytes.tolist(),
            "start_s": schedule.transfer_start.tolist(),
            "end_s": schedule.transfer_end.tolist(),
        },
    }


@dataclass(frozen=True)
class PlacementRun:
    run: Run
    graph: CompGraph
    cluster: Cluster
    placement: Placement


def load_placement_run(run: Run) -> PlacementRun:
    """Graph, cluster and placement of a stored placement run."""
    missing = [f for f in ("graph.json", "cluster.json", "placement.json") if f not in run.files()]
    if missing:
        raise RunError(f"run {run.id} has no placement to show (missing {', '.join(missing)})")
    graph = graph_from_dict(run.read_json("graph.json"), source=f"run {run.id}/graph.json")
    cluster = cluster_from_dict(run.read_json("cluster.json"), source=f"run {run.id}/cluster.json")
    placement = placement_from_dict(run.read_json("placement.json"), graph, cluster,
                                    source=f"run {run.id}/placement.json")
    return PlacementRun(run, graph, cluster, placement)


def export_trace(run: Run, path: str) -> dict[str, Any]:
    """Write a stored placement run's timeline as Chrome Trace Event JSON (Perfetto).

    The schedule is re-simulated from the stored graph, cluster and placement (the simulator
    is deterministic), with memory recorded so the trace carries memory counters.
    """
    from engine.jsonio import atomic_write_text, dumps
    from engine.sim.simulator import Simulator
    from engine.sim.trace import schedule_to_chrome_trace

    pr = load_placement_run(run)
    schedule = Simulator(pr.graph, pr.cluster).run(pr.placement, record_memory=True)
    trace = schedule_to_chrome_trace(schedule, pr.graph, pr.cluster, name=run.meta.get("name"))
    atomic_write_text(path, dumps(trace))
    return {"run_id": run.id, "path": str(path), "events": len(trace["traceEvents"])}
