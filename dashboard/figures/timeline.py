"""Per-device timeline (Gantt): one compute lane and one memcpy lane per device.

A device's compute lane holds its ops; its memcpy lane the transfers it sends, from start to
arrival, as ``schedule_transfers.csv`` lists them (:func:`lane_intervals`). A lane with up to
:data:`LANE_MAX_OPS` ops (or transfers) in view draws each as a bar with a hover card; a more crowded
lane draws, per pixel column, a bar as high as the share of the column the lane was busy — as the trace
view does (:mod:`dashboard.trace_view`) — so thousands of ops read as load rather than as hairlines, and
an export draws one outline per lane instead of one element per op."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from dashboard.figures.colors import device_color, memcpy_color
from dashboard.figures.numbers import fmt_bytes
from engine.cluster import Cluster
from engine.graph.compgraph import CompGraph
from engine.sim.schedule import Schedule

__all__ = ["LANE_MAX_OPS", "TIMELINE_MAX_OPS", "bin_at_points", "busy_per_bin", "lane_intervals", "lane_names",
           "match_ops", "ops_in_window", "timeline", "union_intervals"]

#: Above this many ops the app shows the schedule in the trace view (dashboard/widgets/schedule.py).
TIMELINE_MAX_OPS = 5000
#: A lane with more ops or transfers than this in view is drawn as its busy time per pixel column.
LANE_MAX_OPS = 300
#: Pixel columns across the view of a binned lane: about the plot's width in the app and in an export.
_COLUMNS = 1000
#: Bins per binned lane that answer a hover or a click (a click zooms into its bin).
_BINS = 200
#: At most this many ops on screen get their names written on their bars.
_NAMED_OPS = 200
#: A lane's height in lane units (its bars, and a full column of a binned lane).
_LANE = 0.8
#: Marker sizes (px) of a bin's invisible hover mark and of a search match. plotly gives a click inside several
#: markers to the one of the smallest radius (its distance there is 1 - 3 / radius), so a match is the smaller:
#: a click on it selects its op, never zooms into the bin beneath it.
_BIN_MARKER, _MATCH_MARKER = 12, 11


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


def bin_at_points(fig: go.Figure, points: list[dict]) -> tuple[float, float] | None:
    """The time span (ms) of the first clicked bin of a binned lane, or None when no bin was clicked;
    ``points`` as Streamlit's plotly selection gives them."""
    for p in points:
        trace = fig.data[p["curve_number"]]
        if trace.meta == "bins":
            row = trace.customdata[p["point_index"]]
            return float(row[2]), float(row[3])
    return None


def _op_bars(schedule: Schedule, graph: CompGraph, d: int, ops: np.ndarray, y: float, lane: str,
             names: bool) -> go.Bar:
    """One bar per op of ``ops`` on device ``d``'s compute lane (at height ``y``), with its hover card."""
    custom = np.array([[graph.op_names[i], graph.op_types[i] or "-", fmt_bytes(graph.output_bytes[i])]
                       for i in ops.tolist()], dtype=object).reshape(-1, 3)
    return go.Bar(
        name=lane, legendgroup=lane, orientation="h", y=np.full(len(ops), y), width=_LANE,
        base=schedule.op_start[ops] * 1e3, x=(schedule.op_end[ops] - schedule.op_start[ops]) * 1e3,
        marker={"color": device_color(d), "line": {"width": 0.5, "color": "white"}}, customdata=custom,
        text=[graph.op_names[i] for i in ops.tolist()] if names else None, textposition="inside",
        insidetextanchor="middle", textangle=0, constraintext="inside",
        hovertemplate="<b>%{customdata[0]}</b> (%{customdata[1]})<br>start %{base:.4f} ms"
                      "<br>duration %{x:.4f} ms<br>output %{customdata[2]}<extra>" + lane + "</extra>",
    )


def _transfer_bars(schedule: Schedule, graph: CompGraph, cluster: Cluster, d: int, rows: np.ndarray, y: float,
                   lane: str) -> go.Bar:
    """One bar per transfer row of ``rows`` (sent by device ``d``) on its memcpy lane, start to arrival."""
    custom = np.array([[graph.op_names[schedule.transfer_op[r]], cluster.devices[schedule.transfer_dst[r]].name,
                        fmt_bytes(schedule.transfer_bytes[r])] for r in rows.tolist()], dtype=object).reshape(-1, 3)
    return go.Bar(
        name=lane, legendgroup=lane, orientation="h", y=np.full(len(rows), y), width=_LANE,
        base=schedule.transfer_start[rows] * 1e3, x=(schedule.transfer_end[rows] - schedule.transfer_start[rows]) * 1e3,
        marker={"color": memcpy_color(d), "line": {"width": 0}}, customdata=custom,
        hovertemplate="<b>%{customdata[0]}</b> → %{customdata[1]}<br>start %{base:.4f} ms"
                      "<br>duration %{x:.4f} ms<br>%{customdata[2]}<extra>" + lane + "</extra>",
    )


def _busy_outline(busy: np.ndarray, edges: np.ndarray, bottom: float) -> tuple[np.ndarray, np.ndarray]:
    """The closed outline (x in s, y) of bars as high as each column's busy share: runs of equal height merged."""
    h = np.clip(busy / (edges[1] - edges[0]), 0.0, 1.0)
    first = np.flatnonzero(np.r_[True, h[1:] != h[:-1]])
    after = np.r_[first[1:], len(h)]
    xs = np.column_stack([edges[first], edges[after]]).ravel()
    ys = bottom + _LANE * np.repeat(h[first], 2)
    return np.r_[edges[0], xs, edges[-1], edges[0]], np.r_[bottom, ys, bottom, bottom]


def _busy_lane(start: np.ndarray, end: np.ndarray, span: tuple[float, float], y: float, lane: str, color: str,
               memcpy: bool) -> tuple[go.Scatter, go.Scatter]:
    """A crowded lane: its busy share per pixel column as one filled outline (several transfers in flight at
    once count once, so the drawn area is the lane's busy time), and ``_BINS`` invisible markers that answer a
    hover (busy time, its share, for memcpy also the transfers' summed time) and a click (zoom into the bin).
    The markers' ``customdata``: busy ms, busy %, bin start ms, bin end ms, summed ms; ``meta="bins"``."""
    lo, hi = span[0], max(span[1], span[0] + 1e-12)
    ran = np.isfinite(start) & np.isfinite(end)
    start, end = start[ran], end[ran]
    merged = union_intervals(start, end)
    columns = np.linspace(lo, hi, _COLUMNS + 1)
    xs, ys = _busy_outline(busy_per_bin(*merged, columns), columns, y - _LANE / 2)
    outline = go.Scatter(x=xs * 1e3, y=ys, mode="lines", fill="toself", fillcolor=color, line={"width": 0},
                         name=lane, legendgroup=lane, hoverinfo="skip", meta="busy")
    edges = np.linspace(lo, hi, _BINS + 1)
    busy = busy_per_bin(*merged, edges)
    keep = busy > 0
    summed = " · %{customdata[4]:.4g} ms of transfers in flight, summed" if memcpy else ""
    return outline, go.Scatter(
        x=(edges[:-1][keep] + edges[1:][keep]) * 0.5e3, y=np.full(int(keep.sum()), y), mode="markers",
        marker={"size": _BIN_MARKER, "symbol": "square", "opacity": 0, "color": color}, name=lane, showlegend=False,
        customdata=np.c_[busy[keep] * 1e3, np.round(busy[keep] / (edges[1] - edges[0]) * 100, 1),
                         edges[:-1][keep] * 1e3, edges[1:][keep] * 1e3, busy_per_bin(start, end, edges)[keep] * 1e3],
        meta="bins", hovertemplate="%{customdata[2]:.4g}–%{customdata[3]:.4g} ms: busy %{customdata[0]:.4g} ms "
                                   "(%{customdata[1]}%)" + summed + " (click: zoom in)<extra>" + lane + "</extra>",
    )


def _dependency_arrows(schedule: Schedule, graph: CompGraph, shown: np.ndarray, lane_y: np.ndarray,
                       fig: go.Figure) -> None:
    """One segment per edge between shown ops: from the producer's end to the consumer's start,
    dashed where the edge crosses devices (a transfer)."""
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
            ys += [lane_y[schedule.op_device[a]], lane_y[schedule.op_device[b]], None]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line={"color": "#888888", "width": 1, "dash": dash},
                                 opacity=0.7, hoverinfo="skip", name=label, showlegend=False))


def timeline(schedule: Schedule, graph: CompGraph, cluster: Cluster, *, title: str | None = None,
             time_range_ms: tuple[float, float] | None = None, window_ms: tuple[float, float] | None = None,
             highlight: np.ndarray | None = None, arrows: bool = False) -> go.Figure:
    """Gantt chart of a schedule: a compute lane and a memcpy lane per device (times in ms), a legend of lanes.

    A lane with up to :data:`LANE_MAX_OPS` ops (or transfers) in view draws each as a bar with a hover card
    (op, type, start, duration, bytes); their names are written on the bars when at most 200 ops are in
    view. A more crowded lane draws its busy share per pixel column (1000 columns across the view; the
    drawn area is the lane's busy time) and answers hovers and clicks per bin (200 across the view;
    :func:`bin_at_points` turns a click into the bin's span, to zoom into it). ``window_ms`` zooms in: only
    the ops and transfers overlapping it count, and binned lanes bin the window. A device's compute lane
    takes its colour, its memcpy lane an opaque lighter tint of it (:mod:`dashboard.figures.colors`).
    ``time_range_ms`` fixes the x axis (to compare two timelines); ``window_ms`` sets it too.
    ``highlight`` (bool per op, e.g. a search) marks ops with a red outline marker;
    ``arrows`` draws dependencies between the shown ops (dashed: across devices, a transfer).
    """
    fig = go.Figure()
    shown = np.ones(graph.num_ops, dtype=bool) if window_ms is None else ops_in_window(schedule, window_ms)
    span = (0.0, schedule.makespan) if window_ms is None else (window_ms[0] / 1e3, window_ms[1] / 1e3)
    sent = schedule.transfer_primary & (schedule.transfer_end >= span[0]) & (schedule.transfer_start <= span[1])
    ran = shown & np.isfinite(schedule.op_start)
    count = int(shown.sum())
    lanes = lane_names(cluster)
    lane_y = np.arange(len(lanes))[::-1].astype(float)  # the first lane on top
    hovers, drawn = [], []
    for d in range(cluster.num_devices):
        ops, sends = schedule.op_device == d, schedule.transfer_primary & (schedule.transfer_src == d)
        for k, items in enumerate((np.flatnonzero(ran & ops), np.flatnonzero(sent & sends))):
            lane, y = lanes[2 * d + k], float(lane_y[2 * d + k])
            if len(items) > LANE_MAX_OPS:
                intervals = ((schedule.op_start[ops], schedule.op_end[ops]) if k == 0
                             else (schedule.transfer_start[sends], schedule.transfer_end[sends]))
                outline, hover = _busy_lane(*intervals, span, y, lane, memcpy_color(d) if k else device_color(d),
                                            memcpy=k == 1)
                drawn.append(outline)
                hovers.append(hover)
            elif k == 0:
                drawn.append(_op_bars(schedule, graph, d, items, y, lane, names=count <= _NAMED_OPS))
            else:
                drawn.append(_transfer_bars(schedule, graph, cluster, d, items, y, lane))
    fig.add_traces([*hovers, *drawn])  # a binned figure starts with its bins (the pages check the first trace)
    if arrows:
        _dependency_arrows(schedule, graph, shown, lane_y[::2], fig)
    if highlight is not None and highlight.any():
        hit = np.flatnonzero(highlight & shown)[:2000]
        fig.add_trace(go.Scatter(
            x=(schedule.op_start[hit] + schedule.op_end[hit]) * 0.5e3, y=lane_y[2 * schedule.op_device[hit]],
            mode="markers", marker={"symbol": "diamond-open", "size": _MATCH_MARKER, "color": "#D00000",
                                    "line": {"width": 2.5}},
            text=[graph.op_names[i] for i in hit.tolist()], hovertemplate="<b>%{text}</b><extra>match</extra>",
            name="matches", showlegend=False))
    note = f" — {graph.num_ops} ops, crowded lanes binned" if hovers else ""
    fig.update_layout(
        title=(title or f"Timeline of {graph.name} on {cluster.name}")
        + f" — makespan {schedule.makespan * 1e3:.4g} ms" + note, barmode="overlay",
        xaxis_title="time (ms)", height=max(260, 60 + 44 * len(lanes)), showlegend=True,
        legend={"title": {"text": "lane"}},
        yaxis={"tickmode": "array", "tickvals": lane_y.tolist(), "ticktext": lanes, "range": [-0.5, len(lanes) - 0.5],
               "showgrid": False, "zeroline": False, "fixedrange": True, "automargin": True},
        margin={"l": 10, "r": 10, "t": 60, "b": 40},
    )
    fig.add_vline(x=schedule.makespan * 1e3, line_dash="dot", line_color="#888888")
    if window_ms is not None:
        fig.update_xaxes(range=list(window_ms))
    elif time_range_ms is not None:
        fig.update_xaxes(range=list(time_range_ms))
    return fig
