"""Views that several pages show: the placement graph, a schedule's figures, its metrics."""

from __future__ import annotations

import time

import numpy as np
import streamlit as st

from dashboard.common import fmt_bytes, fmt_ms, show_figure, show_html
from dashboard.context import keep
from dashboard.figures import (
    CURVE_X,
    GRAPH_VIEW_MAX_OPS,
    graph_view_mode,
    load_profile,
    memory_over_time,
    placement_graph_html,
    timeline,
)
from dashboard.figures.graph_view import COLOR_BY, scope_choices
from dashboard.figures.timeline import match_ops
from engine.cluster import Cluster
from engine.graph import CompGraph
from engine.schedule import Schedule

#: The "show every op" switch is offered up to this size (beyond, vis-network gets slow).
FULL_VIEW_LIMIT = 5000


def graph_view_controls(key: str, *, placed: bool, num_ops: int) -> tuple[str, int]:
    """Color-by choice and the op-count limit for the graph view."""
    options = list(COLOR_BY) if placed else [c for c in COLOR_BY if c != "device"]
    cols = st.columns([3, 2])
    color_by = cols[0].radio("Color by", options, horizontal=True, key=f"{key}_color_by")
    max_ops = GRAPH_VIEW_MAX_OPS
    if GRAPH_VIEW_MAX_OPS < num_ops <= FULL_VIEW_LIMIT and cols[1].checkbox(
            f"Show every op (slow above {GRAPH_VIEW_MAX_OPS:,})", key=f"{key}_all_ops"):
        max_ops = FULL_VIEW_LIMIT
    return color_by, max_ops


@st.cache_data(max_entries=8, show_spinner=False)
def _graph_html(_graph: CompGraph, graph_hash: str, devices: tuple[int, ...] | None, color_by: str,
                device_names: tuple[str, ...] | None, max_ops: int, highlight: tuple[bool, ...] | None,
                highlight_label: str, expand: str | None) -> str:
    return placement_graph_html(_graph, None if devices is None else np.array(devices), color_by=color_by,
                                device_names=device_names, max_ops=max_ops,
                                highlight=None if highlight is None else np.array(highlight, dtype=bool),
                                highlight_label=highlight_label, expand=expand)


def show_graph_view(graph: CompGraph, devices: np.ndarray | None, cluster: Cluster | None, *,
                    color_by: str, max_ops: int = GRAPH_VIEW_MAX_OPS, highlight: np.ndarray | None = None,
                    key: str | None = None, find_key: str | None = None) -> None:
    """The pyvis graph view, with a sentence saying whether ops or groups are shown.

    With ``key``: a scope to expand (aggregated view by scope) and an op search; ``find_key`` names
    another search box (the timeline's) whose query the view highlights too, linking the two.
    """
    mode, sentence = graph_view_mode(graph, devices, max_ops=max_ops)
    expand, label = None, "moved"
    if key is not None:
        cols = st.columns([3, 3])
        if mode == "scope":
            expand = cols[0].selectbox("Expand scope", scope_choices(graph), index=None, key=f"{key}_expand",
                                       placeholder="all collapsed", help="Opens one layer scope into its parts")
        query = cols[1].text_input("Find op in the graph (name, type or scope)", key=f"{key}_find",
                                   help="Empty: the timeline's search above is highlighted here")
        if not query.strip() and find_key:  # linked: what the timeline searches, the graph shows
            query = str(st.session_state.get(find_key) or "")
        if query.strip():
            highlight, label = match_ops(graph, query), f"matches '{query.strip()}'"
    st.caption(sentence + (f" Expanded: {expand}." if expand else "")
               + " Hover a node for its card; scroll to zoom, drag to pan.")
    names = tuple(d.name for d in cluster.devices) if cluster is not None else None
    t0 = time.perf_counter()
    with st.spinner("Laying out the graph ..."):
        page = _graph_html(graph, graph.content_hash, None if devices is None else tuple(devices.tolist()),
                           color_by, names, max_ops, None if highlight is None else tuple(highlight.tolist()),
                           label, expand)
    show_html(page, height=640)
    st.caption(f"Graph view built in {time.perf_counter() - t0:.2f} s.")


def show_metrics(metrics: dict, seconds_to_place: float | None = None, startup_s: float | None = None) -> None:
    """Makespan, ratio to the lower bound, peak memory, OOM, communication volume."""
    cols = st.columns(6)
    cols[0].metric("Makespan", fmt_ms(metrics["makespan_s"]))
    cols[1].metric("Lower bound", fmt_ms(metrics.get("lower_bound_s")))
    ratio = metrics.get("ratio_to_lower_bound")
    cols[2].metric("Ratio to lower bound", "-" if ratio is None else f"{ratio:.3f}×")
    peaks = metrics.get("peak_memory_bytes") or {}
    cols[3].metric("Peak memory (max)", fmt_bytes(max(peaks.values()) if peaks else None))
    oom = metrics.get("oom_devices") or []
    cols[4].metric("Out of memory", ("yes: " + ", ".join(oom)) if metrics.get("oom") else "no")
    cols[5].metric("Communication", fmt_bytes(metrics.get("communication_bytes")))
    if seconds_to_place is not None:
        startup = "" if not startup_s else f" (plus {startup_s:.3g} s one-time start-up, e.g. JIT compilation)"
        st.caption(f"Placer took {seconds_to_place:.3g} s{startup} · simulation mode {metrics.get('mode')} · "
                   "peak per device: "
                   + ", ".join(f"{d} {fmt_bytes(b)}" for d, b in peaks.items()))


def show_schedule_figures(schedule: Schedule, graph: CompGraph, cluster: Cluster, key: str,
                          title: str | None = None) -> None:
    """Timeline, load/memcpy profile and memory over time, each in its own tab; ``title`` names the run."""
    tabs = st.tabs(["Timeline", "Load and memcpy", "Memory over time"])
    what = f" — {title}" if title else ""
    with tabs[0]:
        show_timeline(schedule, graph, cluster, key=key, title=title)
    with tabs[1]:
        fig = load_profile(schedule, graph, cluster)
        fig.update_layout(title=fig.layout.title.text + what)
        show_figure(fig, key=f"{key}_load")
    with tabs[2]:
        fig = memory_over_time(schedule, cluster)
        fig.update_layout(title=fig.layout.title.text + what)
        show_figure(fig, key=f"{key}_memory")


def curve_controls(key: str) -> tuple[str, float]:
    """The learning curves' x axis and smoothing weight (TensorBoard's slider)."""
    cols = st.columns([2, 3])
    x = cols[0].radio("x axis", list(CURVE_X), horizontal=True, key=keep(f"{key}_curve_x"))
    smoothing = cols[1].slider("smoothing", 0.0, 0.99, 0.6, 0.01, key=keep(f"{key}_curve_smoothing"),
                               help="Exponential moving average, debiased (as in TensorBoard); 0 = raw")
    return x, float(smoothing)


def show_timeline(schedule: Schedule, graph: CompGraph, cluster: Cluster, *, key: str, title: str | None) -> None:
    """The Gantt chart with a trace viewer's controls: a time window (zoom in to see single ops and their
    names), op search by name / type / scope, and dependency and transfer arrows on demand."""
    end = float(schedule.makespan * 1e3) or 1.0
    cols = st.columns([4, 3, 2], vertical_alignment="bottom")
    window = cols[0].slider("Time window (ms)", 0.0, end, (0.0, end), key=f"{key}_tl_window",
                            help="Narrow it to see single ops (with names when few) instead of busy bins")
    query = cols[1].text_input("Find op (name, type or scope)", key=f"{key}_tl_find")
    arrows = cols[2].checkbox("Dependency arrows", key=f"{key}_tl_arrows",
                              help="Producer end → consumer start; dashed when the edge is a transfer")
    hits = match_ops(graph, query)
    if query.strip():
        first = np.flatnonzero(hits)[:5].tolist()
        where = [f"{graph.op_names[i]} at {schedule.op_start[i] * 1e3:.4g} ms on "
                 f"{cluster.devices[schedule.op_device[i]].name}" for i in first]
        st.caption(f"{int(hits.sum()):,} ops match" + (": " + ", ".join(where) if where else "")
                   + (" …" if hits.sum() > 5 else ""))
    zoomed = window != (0.0, end)
    fig = timeline(schedule, graph, cluster, title=title, window_ms=window if zoomed else None,
                   highlight=hits if query.strip() else None, arrows=arrows)
    show_figure(fig, key=f"{key}_timeline")
