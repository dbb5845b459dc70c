"""Per-device timeline (Gantt): one compute lane and one memcpy lane per device.

A device's compute lane holds its ops; its memcpy lane the transfers it sends, from start to
arrival, as ``schedule_transfers.csv`` lists them (:func:`lane_intervals`)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from dashboard.figures.theme import device_color
from engine.cluster import Cluster
from engine.graph import CompGraph
from engine.schedule import Schedule

__all__ = ["TIMELINE_MAX_OPS", "bin_at_points", "busy_per_bin", "lane_intervals", "lane_names", "match_ops",
           "ops_in_window", "timeline", "union_intervals"]

#: Above this many ops the timeline draws binned utilization bars instead of one bar per op.
TIMELINE_MAX_OPS = 5000
_BINS = 200
#: At most this many ops on screen get their names written on their bars.
_NAMED_OPS = 200


def lane_names(cluster: Cluster) -> list[str]:
    """Lane labels top to bottom: ``gpu:0``, ``gpu:0 memcpy``, ``gpu:1``, ..."""
    return [lane for d in cluster.devices for lane in (d.name, f"{d.name} memcpy")]


def busy_per_bin(start: np.ndarray, end: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Seconds of the intervals ``[start, end)`` that fall in each bin between ``edges``.

    Uses F(t) = Σ clip(t − s, 0, e − s) = Σ_{s<t}(t − s) − Σ_{e<t}(t − e), evaluated at every
    edge with sorted cumulative sums, so n intervals and B bins cost O((n + B) log n).
    """
    def cumulative(points: np.ndarray) -> np.ndarray:
        p = np.sort(points)
        csum = np.r_[0.0, np.cumsum(p)]
        k = np.searchsorted(p, edges, side="left")
        return edges * k - csum[k]

    return np.diff(cumulative(start) - cumulative(end))


def _fmt_bytes(b: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(b) >= scale:
            return f"{b / scale:.3g} {unit}"
    return f"{b:.0f} B"


def _op_bars(schedule: Schedule, graph: CompGraph, cluster: Cluster, fig: go.Figure,
             shown: np.ndarray | None = None, names: bool = False) -> None:
    dur = schedule.op_end - schedule.op_start
    mask = np.ones(graph.num_ops, dtype=bool) if shown is None else shown
    for d, dev in enumerate(cluster.devices):
        sel = np.flatnonzero((schedule.op_device == d) & mask)
        custom = np.array([[graph.op_names[i], graph.op_types[i] or "-", _fmt_bytes(graph.output_bytes[i])]
                           for i in sel.tolist()], dtype=object).reshape(-1, 3)
        fig.add_trace(go.Bar(
            name=f"{dev.name} compute", legendgroup=dev.name, orientation="h",
            y=[dev.name] * len(sel), base=schedule.op_start[sel] * 1e3, x=dur[sel] * 1e3,
            marker={"color": device_color(d), "line": {"width": 0.5, "color": "white"}}, customdata=custom,
            text=[graph.op_names[i] for i in sel.tolist()] if names else None, textposition="inside",
            insidetextanchor="middle", textangle=0, constraintext="inside",
            hovertemplate="<b>%{customdata[0]}</b> (%{customdata[1]})<br>start %{base:.4f} ms"
                          "<br>duration %{x:.4f} ms<br>output %{customdata[2]}<extra>" + dev.name + "</extra>",
        ))
    tsel = np.flatnonzero(schedule.transfer_primary & mask[schedule.transfer_op])
    for d, dev in enumerate(cluster.devices):
        rows = tsel[schedule.transfer_src[tsel] == d]
        custom = np.array([[graph.op_names[schedule.transfer_op[r]], cluster.devices[schedule.transfer_dst[r]].name,
                            _fmt_bytes(schedule.transfer_bytes[r])] for r in rows.tolist()],
                          dtype=object).reshape(-1, 3)
        fig.add_trace(go.Bar(
            name=f"{dev.name} memcpy", legendgroup=dev.name, orientation="h", y=[f"{dev.name} memcpy"] * len(rows),
            base=schedule.transfer_start[rows] * 1e3,
            x=(schedule.transfer_end[rows] - schedule.transfer_start[rows]) * 1e3,
            marker={"color": device_color(d), "opacity": 0.45, "line": {"width": 0}}, customdata=custom,
            hovertemplate="<b>%{customdata[0]}</b> → %{customdata[1]}<br>start %{base:.4f} ms"
                          "<br>duration %{x:.4f} ms<br>%{customdata[2]}<extra>" + dev.name + " memcpy</extra>",
        ))


def union_intervals(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of the intervals ``[start, end)`` as disjoint sorted intervals; intervals with a NaN
    end point (ops that never ran) are left out."""
    ok = np.isfinite(start) & np.isfinite(end)
    order = np.argsort(start[ok], kind="stable")
    s, e = start[ok][order], end[ok][order]
    if not len(s):
        return s, e
    reach = np.maximum.accumulate(e)
    first = np.flatnonzero(np.r_[True, s[1:] > reach[:-1]])  # each begins a new disjoint interval
    return s[first], reach[np.r_[first[1:] - 1, len(s) - 1]]


def lane_intervals(schedule: Schedule, device: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The intervals each of ``device``'s two lanes is busy with, by lane kind (``compute``, ``memcpy``).

    compute: its ops, start to end. memcpy: the transfers it sends, start to arrival, as
    ``schedule_transfers.csv`` lists them (every row: a placeto transfer's rows share their times).
    """
    ops = schedule.op_device == device
    rows = schedule.transfer_src == device
    return {"compute": (schedule.op_start[ops], schedule.op_end[ops]),
            "memcpy": (schedule.transfer_start[rows], schedule.transfer_end[rows])}


def _binned_bars(schedule: Schedule, cluster: Cluster, fig: go.Figure,
                 window_ms: tuple[float, float] | None = None) -> None:
    """200 bins per lane over the makespan, or over ``window_ms`` (a zoom still holding too many ops
    bins its own window, so each click on a bin goes one level deeper). A bin's bar starts at the
    bin and is as long as the lane was busy in it (several transfers in flight at once count once),
    so the bars of a lane add up to its busy time. ``customdata`` holds the busy percentage, the
    bin's end (ms) and the summed time (ms) of the lane's intervals in the bin (more than the busy
    time where transfers overlap); the traces carry ``meta="bins"``: :func:`bin_at_points` tells a click on a bin from a
    click on an op."""
    lo, hi = (0.0, schedule.makespan) if window_ms is None else (window_ms[0] / 1e3, window_ms[1] / 1e3)
    edges = np.linspace(lo, max(hi, lo + 1e-12), _BINS + 1)
    width = edges[1] - edges[0]
    for d, dev in enumerate(cluster.devices):
        for kind, (s, e) in lane_intervals(schedule, d).items():
            lane = dev.name if kind == "compute" else f"{dev.name} memcpy"
            busy = busy_per_bin(*union_intervals(s, e), edges)
            keep = busy > 0
            summed = " · %{customdata[2]:.4g} ms of transfers in flight" if kind == "memcpy" else ""
            fig.add_trace(go.Bar(
                name=lane, legendgroup=dev.name, orientation="h", y=[lane] * int(keep.sum()),
                base=edges[:-1][keep] * 1e3, x=busy[keep] * 1e3,
                marker={"color": device_color(d), "opacity": 1.0 if kind == "compute" else 0.45, "line": {"width": 0}},
                customdata=np.c_[np.round(busy[keep] / width * 100, 1), edges[1:][keep] * 1e3,
                                 busy_per_bin(s, e, edges)[keep] * 1e3], meta="bins",
                hovertemplate="%{base:.4g}–%{customdata[1]:.4g} ms: busy %{x:.4g} ms (%{customdata[0]}%)" + summed
                              + " (click: zoom in)<extra>" + lane + "</extra>",
            ))


def bin_at_points(fig: go.Figure, points: list[dict]) -> tuple[float, float] | None:
    """The time span (ms) of the first clicked bin of a binned timeline, or None when no bin was clicked;
    ``points`` as Streamlit's plotly selection gives them."""
    for p in points:
        trace = fig.data[p["curve_number"]]
        if trace.meta == "bins":
            i = p["point_index"]
            return float(trace.base[i]), float(trace.customdata[i][1])
    return None


def ops_in_window(schedule: Schedule, window_ms: tuple[float, float]) -> np.ndarray:
    """Bool per op: its run overlaps the window (ms), ends included."""
    lo, hi = window_ms[0] / 1e3, window_ms[1] / 1e3
    return (schedule.op_end >= lo) & (schedule.op_start <= hi)


def match_ops(graph: CompGraph, query: str) -> np.ndarray:
    """Bool per op: ``query`` (case-insensitive) occurs in its name, type or scope; none for an empty query."""
    q = query.strip().lower()
    if not q:
        return np.zeros(graph.num_ops, dtype=bool)
    return np.array([q in n.lower() or q in (t or "").lower() or q in (sc or "").lower()
                     for n, t, sc in zip(graph.op_names, graph.op_types, graph.scope, strict=True)], dtype=bool)


def _dependency_arrows(schedule: Schedule, graph: CompGraph, cluster: Cluster, shown: np.ndarray,
                       fig: go.Figure) -> None:
    """One segment per edge between shown ops: from the producer's end to the consumer's start,
    dashed where the edge crosses devices (a transfer)."""
    names = [d.name for d in cluster.devices]
    keep = shown[graph.edge_src] & shown[graph.edge_dst]
    src, dst = graph.edge_src[keep], graph.edge_dst[keep]
    cross = schedule.op_device[src] != schedule.op_device[dst]
    for flag, dash, label in ((False, "solid", "dependency"), (True, "dash", "transfer")):
        sel = cross == flag
        if not sel.any():
            continue
        xs, ys = [], []
        for a, b in zip(src[sel].tolist(), dst[sel].tolist(), strict=True):
            xs += [schedule.op_end[a] * 1e3, schedule.op_start[b] * 1e3, None]
            ys += [names[schedule.op_device[a]], names[schedule.op_device[b]], None]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line={"color": "#444", "width": 1, "dash": dash},
                                 opacity=0.6, hoverinfo="skip", name=label, showlegend=False))


def timeline(schedule: Schedule, graph: CompGraph, cluster: Cluster, *, title: str | None = None,
             time_range_ms: tuple[float, float] | None = None, window_ms: tuple[float, float] | None = None,
             highlight: np.ndarray | None = None, arrows: bool = False) -> go.Figure:
    """Gantt chart of a schedule: a compute lane and a memcpy lane per device (times in ms).

    Up to :data:`TIMELINE_MAX_OPS` ops every op and transfer is a bar with a hover card (op,
    type, start, duration, bytes). Beyond that each lane is cut into 200 time bins and a bin's
    bar is as long as the lane was busy in it (hover: busy time and percentage), so the bars of
    a lane add up to its busy time and very large graphs stay fast — unless ``window_ms`` zooms
    in far enough that the ops overlapping the window are at most :data:`TIMELINE_MAX_OPS`: then
    those ops are drawn one by one, with their names written on the bars when at most 200 are
    shown (like a trace viewer zoomed in); a window still holding more ops is binned again, 200
    bins across the window.
    ``time_range_ms`` fixes the x axis (to compare two timelines); ``window_ms`` sets it too.
    ``highlight`` (bool per op, e.g. a search) marks ops with a red outline marker;
    ``arrows`` draws dependencies between the shown ops (dashed: across devices, a transfer).
    """
    fig = go.Figure()
    shown = None if window_ms is None else ops_in_window(schedule, window_ms)
    count = graph.num_ops if shown is None else int(shown.sum())
    aggregated = count > TIMELINE_MAX_OPS
    if aggregated:
        _binned_bars(schedule, cluster, fig, window_ms)
    else:
        _op_bars(schedule, graph, cluster, fig, shown, names=count <= _NAMED_OPS)
        if arrows:
            _dependency_arrows(schedule, graph, cluster,
                               np.ones(graph.num_ops, dtype=bool) if shown is None else shown, fig)
    lanes = lane_names(cluster)
    # an invisible marker per lane keeps idle lanes on the axis
    fig.add_trace(go.Scatter(x=[0.0] * len(lanes), y=lanes, mode="markers", marker={"opacity": 0},
                             hoverinfo="skip", showlegend=False, name="lanes"))
    if highlight is not None and highlight.any():
        hit = np.flatnonzero(highlight & (True if shown is None else shown))[:2000]
        fig.add_trace(go.Scatter(
            x=(schedule.op_start[hit] + schedule.op_end[hit]) * 0.5e3,
            y=[cluster.devices[d].name for d in schedule.op_device[hit].tolist()], mode="markers",
            marker={"symbol": "diamond-open", "size": 14, "color": "#D00000", "line": {"width": 2.5}},
            text=[graph.op_names[i] for i in hit.tolist()], hovertemplate="<b>%{text}</b><extra>match</extra>",
            name="matches", showlegend=False))
    note = f" — {graph.num_ops} ops, binned" if aggregated else ""
    fig.update_layout(
        title=(title or f"Timeline of {graph.name} on {cluster.name}")
        + f" — makespan {schedule.makespan * 1e3:.4g} ms" + note, barmode="overlay", bargap=0.15,
        xaxis_title="time (ms)", height=max(260, 60 + 44 * len(lanes)), showlegend=False,
        yaxis={"categoryorder": "array", "categoryarray": lanes[::-1], "type": "category", "automargin": True},
        margin={"l": 10, "r": 10, "t": 60, "b": 40},
    )
    fig.add_vline(x=schedule.makespan * 1e3, line_dash="dot", line_color="#666")
    if window_ms is not None:
        fig.update_xaxes(range=list(window_ms))
    elif time_range_ms is not None:
        fig.update_xaxes(range=list(time_range_ms))
    return fig
