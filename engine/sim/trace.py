"""Export a :class:`~engine.sim.schedule.Schedule` as a Chrome trace that Perfetto opens.

Format: the JSON Object Format of Google's *Trace Event Format* document (Duncan, Sinnott
et al., "Trace Event Format", docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU),
which ui.perfetto.dev and chrome://tracing both import::

    {"traceEvents": [...], "displayTimeUnit": "ms", "metadata": {...}}

Layout
------
* One process per device: ``pid = device index + 1`` (Perfetto treats pid 0 as the Linux
  idle task, so it is avoided), named ``"gpu:0 (gpu)"`` and sorted by device index.
* Two threads per device: :data:`COMPUTE_TID` ("compute") runs the device's ops and
  :data:`MEMCPY_TID` ("memcpy (send)") its outgoing channel. Thread ids start at 1 for
  the same reason as pids.
* Every op is a complete event (``"ph": "X"``) on its device's compute thread, from its
  start for its compute time; zero-duration ops are kept (``dur`` 0). ``cat`` is the op's
  training phase, or ``"op"``.
* Every channel transfer is one complete event on the source device's memcpy thread, for
  as long as the channel copies (``bytes / bandwidth``; in ``default`` mode the link
  latency is pipelined and does not hold the channel, CONTRACTS §4, so it is not drawn —
  two sends on one channel would overlap otherwise; in the other modes a transfer row's
  time is drawn whole: it holds its channel, or its sender, or nothing, for all of it).
  A placeto-mode transfer that serves
  several devices is drawn once, its ``args.dst`` listing every destination.
* One flow arrow per transfer row (per destination device): a flow start (``"s"``) on the
  memcpy thread at the transfer start, and a flow end (``"f"``, ``"bp": "e"``) on the
  destination's compute thread. A flow end binds to the slice that encloses its timestamp,
  and at the arrival time the destination is often idle (the arrow would be dropped) or
  running an unrelated op, so the arrow ends at the start of the first op there that
  reads the tensor; ``args.arrival_s`` of the send carries the arrival time.
* Memory in use per device as counter events (``"ph": "C"``, name ``"memory"``) when the
  schedule was simulated with ``record_memory=True``.

Timestamps (``ts``) and durations (``dur``) are in **microseconds** (floats), as the
format requires; everything in ``args`` and ``metadata`` keeps placelab's units (seconds,
bytes). Metadata events (``"ph": "M"``) come first in ``traceEvents``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.cluster import Cluster
from engine.errors import quote
from engine.graph.compgraph import CompGraph
from engine.sim.schedule import Schedule

__all__ = [
    "COMPUTE_TID",
    "MEMCPY_TID",
    "device_pid",
    "schedule_to_chrome_trace",
]

#: Thread id of a device's compute thread (its ops).
COMPUTE_TID = 1
#: Thread id of a device's outgoing copy channel (its sends).
MEMCPY_TID = 2

_US = 1e6  # seconds -> microseconds


def device_pid(device_index: int) -> int:
    """Trace process id of the device with index ``device_index``."""
    return device_index + 1


def _metadata_events(cluster: Cluster) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for d, dev in enumerate(cluster.devices):
        pid = device_pid(d)
        events.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                       "args": {"name": f"{dev.name} ({dev.kind})"}})
        events.append({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0,
                       "args": {"sort_index": d}})
        for tid, label in ((COMPUTE_TID, "compute"), (MEMCPY_TID, "memcpy (send)")):
            events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                           "args": {"name": label}})
            events.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid,
                           "args": {"sort_index": tid}})
    return events


def _op_events(schedule: Schedule, graph: CompGraph) -> list[dict[str, Any]]:
    events = []
    start, end = schedule.op_start.tolist(), schedule.op_end.tolist()
    device = schedule.op_device.tolist()
    for i in range(graph.num_ops):
        phase = graph.phase[i]
        events.append({
            "name": graph.op_names[i], "cat": phase or "op", "ph": "X",
            "ts": start[i] * _US, "dur": (end[i] - start[i]) * _US,
            "pid": device_pid(device[i]), "tid": COMPUTE_TID,
            "args": {"index": i, "type": graph.op_types[i], "scope": graph.scope[i],
                     "phase": phase, "compute_s": end[i] - start[i],
                     "output_bytes": float(graph.output_bytes[i])},
        })
    return events


def _first_reader(schedule: Schedule, graph: CompGraph, op: int, dst: int) -> int:
    """The consumer of ``op`` on device ``dst`` that starts first (ties: lower index)."""
    readers = graph.successors(op)
    readers = readers[schedule.op_device[readers] == dst]
    return int(readers[np.lexsort((readers, schedule.op_start[readers]))[0]])


def _transfer_events(schedule: Schedule, graph: CompGraph,
                     cluster: Cluster) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Send slices (one per channel transfer) and flow start/end pairs (one per row)."""
    names = [d.name for d in cluster.devices]
    pipelined = schedule.mode == "default"  # the latency does not hold the channel (CONTRACTS §4)
    op, src, dst = (schedule.transfer_op.tolist(), schedule.transfer_src.tolist(),
                    schedule.transfer_dst.tolist())
    size, start, end = (schedule.transfer_bytes.tolist(), schedule.transfer_start.tolist(),
                        schedule.transfer_end.tolist())
    primary = schedule.transfer_primary.tolist()
    # Rows of one placeto transfer are consecutive, the primary row first.
    group = np.cumsum(schedule.transfer_primary) - 1
    dests: dict[int, list[str]] = {}
    for r, g in enumerate(group.tolist()):
        dests.setdefault(g, []).append(names[dst[r]])

    sends, flows = [], []
    for r in range(len(op)):
        latency = float(cluster.latency[src[r], dst[r]]) if pipelined else 0.0
        label = f"send {graph.op_names[op[r]]} → {', '.join(dests[int(group[r])])}"
        if primary[r]:
            sends.append({
                "name": label, "cat": "transfer", "ph": "X",
                "ts": start[r] * _US, "dur": max(end[r] - start[r] - latency, 0.0) * _US,
                "pid": device_pid(src[r]), "tid": MEMCPY_TID,
                "args": {"bytes": size[r], "src": names[src[r]], "dst": dests[int(group[r])],
                         "op": graph.op_names[op[r]], "arrival_s": end[r]},
            })
        reader = _first_reader(schedule, graph, op[r], dst[r])
        flow = {"name": label, "cat": "transfer", "id": r + 1}
        flows.append({**flow, "ph": "s", "ts": start[r] * _US,
                      "pid": device_pid(src[r]), "tid": MEMCPY_TID})
        flows.append({**flow, "ph": "f", "bp": "e", "ts": float(schedule.op_start[reader]) * _US,
                      "pid": device_pid(dst[r]), "tid": COMPUTE_TID})
    return sends, flows


def _memory_events(schedule: Schedule) -> list[dict[str, Any]]:
    try:
        timeline = schedule.memory_timeline()
    except ValueError:  # simulated without record_memory=True: nothing to draw
        return []
    events = []
    for d, (times, values) in enumerate(zip(timeline.times, timeline.bytes, strict=True)):
        for t, b in zip(times.tolist(), values.tolist(), strict=True):
            events.append({"name": "memory", "ph": "C", "ts": t * _US, "pid": device_pid(d),
                           "tid": COMPUTE_TID, "args": {"bytes": b}})
    return events


def schedule_to_chrome_trace(schedule: Schedule, graph: CompGraph, cluster: Cluster, *,
                             name: str | None = None) -> dict[str, Any]:
    """The Chrome Trace Event document of a simulated schedule (see the module docstring).

    Parameters
    ----------
    schedule : Schedule
        A simulation of ``graph`` on ``cluster``.
    graph, cluster : CompGraph, Cluster
        What was simulated (names, op attributes, device names, link latencies).
    name : str, optional
        Title stored as ``metadata.name``; defaults to ``"<graph> on <cluster>"``.

    Returns
    -------
    dict
        ``{"traceEvents": [...], "displayTimeUnit": "ms", "metadata": {...}}``, JSON
        serializable with plain floats (``ts``/``dur`` in µs); metadata events first.

    Raises
    ------
    ValueError
        If the schedule's op or device count does not match ``graph`` and ``cluster``.
    """
    if len(schedule.op_start) != graph.num_ops or schedule.num_devices != cluster.num_devices:
        raise ValueError(f"schedule has {len(schedule.op_start)} ops on {schedule.num_devices} "
                         f"devices, but graph {quote(graph.name)} has {graph.num_ops} ops and cluster "
                         f"{quote(cluster.name)} {cluster.num_devices} devices")
    sends, flows = _transfer_events(schedule, graph, cluster)
    events = [*_metadata_events(cluster), *_op_events(schedule, graph), *sends,
              *_memory_events(schedule), *flows]
    names = [d.name for d in cluster.devices]
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "metadata": {
            "name": name or f"{graph.name} on {cluster.name}",
            "graph": graph.name,
            "cluster": cluster.name,
            "mode": schedule.mode,
            "makespan_s": schedule.makespan,
            "ops": graph.num_ops,
            "transfers": int(schedule.transfer_primary.sum()),
            "peak_memory_bytes": dict(zip(names, schedule.peak_memory.tolist(), strict=True)),
            "oom": schedule.any_oom,
            "time_unit": "ts and dur in microseconds; args in seconds and bytes",
        },
    }
