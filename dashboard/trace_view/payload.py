"""The trace view's data: a schedule packed into a compact JSON object for the browser (no Streamlit here).

Numbers travel as base64 of little-endian typed arrays (``Float64Array`` starts, ``Float32Array``
durations and transfer bytes, ``Int32Array`` op indices, ``Uint16Array`` type indices); names and types as lists of
strings. Items are grouped per lane and sorted by start inside each lane, so the browser finds the
ops on screen with a binary search. Lanes follow :func:`~dashboard.figures.timeline.lane_names`:
lane ``2 d`` holds device ``d``'s ops, lane ``2 d + 1`` its outgoing transfers (primary rows).
"""

from __future__ import annotations

import base64

import numpy as np

from dashboard.figures.theme import device_color, memcpy_color
from dashboard.figures.timeline import lane_names
from engine.cluster import Cluster
from engine.graph.compgraph import CompGraph
from engine.sim.schedule import Schedule

__all__ = ["b64", "trace_payload"]

_LE = {"f8": "<f8", "f4": "<f4", "i4": "<i4", "u2": "<u2"}


def b64(values: np.ndarray, dtype: str) -> str:
    """``values`` as little-endian ``dtype`` (``f8``, ``f4``, ``i4``, ``u2``), base64-encoded."""
    return base64.b64encode(np.ascontiguousarray(values, dtype=_LE[dtype]).tobytes()).decode("ascii")


def _grouped(lane_of: np.ndarray, start: np.ndarray, lanes: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows ordered by (lane, start) and the offset of each lane's first row (``lanes + 1`` entries)."""
    order = np.lexsort((start, lane_of))
    offsets = np.searchsorted(lane_of[order], np.arange(lanes + 1), side="left")
    return order, offsets


def trace_payload(schedule: Schedule, graph: CompGraph, cluster: Cluster, *, view_id: str,
                  marked: np.ndarray | None = None) -> dict:
    """The JSON object the trace view draws: lanes with their colours, ops and transfers (ms), names, marks.

    A device's compute lane is drawn in its colour (``colors``), its memcpy lane in the opaque lighter tint the
    plotly timeline gives it (``memcpy_colors``, :func:`~dashboard.figures.colors.memcpy_color`): a translucent
    device colour sank into the dark theme's canvas (navy on near-black).

    ``view_id`` names the schedule: the browser keeps its zoom across reruns while it stays the same.
    ``marked`` (bool per op) are outlined in red (search matches, the op selected in the graph).
    Ops that never ran (NaN start, a memory deadlock) are left out.
    """
    devices = len(cluster.devices)
    ran = np.flatnonzero(np.isfinite(schedule.op_start) & np.isfinite(schedule.op_end))
    op_order, op_offsets = _grouped(schedule.op_device[ran], schedule.op_start[ran], devices)
    ops = ran[op_order]
    rows = np.flatnonzero(schedule.transfer_primary)
    t_order, t_offsets = _grouped(schedule.transfer_src[rows], schedule.transfer_start[rows], devices)
    rows = rows[t_order]
    types, type_idx = np.unique(np.array([t or "-" for t in graph.op_types], dtype=object), return_inverse=True)
    type_dtype = "u2" if len(types) <= 1 << 16 else "i4"
    marks = np.flatnonzero(marked) if marked is not None else np.zeros(0, dtype=np.int64)
    return {
        "id": view_id,
        "title": f"{graph.name} on {cluster.name}",
        "lanes": lane_names(cluster),
        "colors": [device_color(d) for d in range(devices)],
        "devices": [d.name for d in cluster.devices],
        "memcpy_colors": [memcpy_color(d) for d in range(devices)],
        "makespan_ms": float(schedule.makespan * 1e3),
        "ops": {"count": len(ops), "offsets": op_offsets.tolist(), "op": b64(ops, "i4"),
                "start": b64(schedule.op_start[ops] * 1e3, "f8"),
                "dur": b64((schedule.op_end[ops] - schedule.op_start[ops]) * 1e3, "f4")},
        "transfers": {"count": len(rows), "offsets": t_offsets.tolist(),
                      "op": b64(schedule.transfer_op[rows], "i4"), "dst": b64(schedule.transfer_dst[rows], "u2"),
                      "start": b64(schedule.transfer_start[rows] * 1e3, "f8"),
                      "dur": b64((schedule.transfer_end[rows] - schedule.transfer_start[rows]) * 1e3, "f4"),
                      "bytes": b64(schedule.transfer_bytes[rows], "f4")},
        "names": list(graph.op_names),
        "types": [str(t) for t in types],
        "type_idx": b64(type_idx, type_dtype), "type_dtype": type_dtype,
        "marked": b64(marks, "i4"),
    }
