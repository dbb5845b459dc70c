"""Views of a placement that several pages show: the graph explorer with its HTML download, a schedule's
figures (the timeline linked to the explorer), its metrics, the learning curves' controls."""

from __future__ import annotations

import hashlib
import time
from functools import partial

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from dashboard import state as keys
from dashboard.context import keep
from dashboard.data.format import fmt_bytes, fmt_ms, fmt_size
from dashboard.data.link import SMOOTHING, X_AXIS
from dashboard.figures import (
    CURVE_X,
    GRAPH_VIEW_MAX_OPS,
    TIMELINE_MAX_OPS,
    graph_view_mode,
    load_profile,
    memory_over_time,
    placement_graph_html,
    timeline,
)
from dashboard.figures.timeline import bin_at_points, match_ops
from dashboard.trace_view import show_trace_view
from dashboard.widgets.explorer import op_index, pick_op, selected_op, show_explorer
from dashboard.widgets.link import linked_choice, set_page_params
from dashboard.widgets.ui import presentation, show_figure
from engine.cluster import Cluster
from engine.graph.compgraph import CompGraph
from engine.sim.schedule import Schedule

#: The learning curves' smoothing weights (the slider's steps) and the one they start at.
SMOOTHINGS = tuple(round(i * 0.01, 2) for i in range(100))
DEFAULT_SMOOTHING = 0.6


@st.cache_data(max_entries=4, show_spinner=False)
def _graph_html(_graph: CompGraph, graph_hash: str, devices: tuple[int, ...] | None,
                device_names: tuple[str, ...] | None, highlight: tuple[bool, ...] | None) -> str:
    return placement_graph_html(_graph, None if devices is None else np.array(devices),
                                color_by="device" if devices is not None else "op type", device_names=device_names,
                                highlight=None if highlight is None else np.array(highlight, dtype=bool))


def show_graph_view(graph: CompGraph, devices: np.ndarray | None, cluster: Cluster | None, *, key: str,
                    schedule: Schedule | None = None, highlight: np.ndarray | None = None,
                    highlight_label: str = "moved") -> None:
    """The graph explorer (hierarchical by scope, linked to the timeline of ``key``'s schedule), and the
    pyvis page of the same graph as a self-contained HTML download (every op up to
    :data:`GRAPH_VIEW_MAX_OPS`, grouped above)."""
    names = [d.name for d in cluster.devices] if cluster is not None else None
    t0 = time.perf_counter()
    show_explorer(graph, key=key, devices=devices, device_names=names,
                  op_start=None if schedule is None else schedule.op_start, highlight=highlight,
                  highlight_label=highlight_label)
    cols = st.columns([3, 2], vertical_alignment="center")
    cols[0].caption(f"Explorer data built in {time.perf_counter() - t0:.2f} s (the browser paints after).")
    mode, _ = graph_view_mode(graph, devices)
    with cols[1].popover("Graph as HTML (pyvis)", icon=":material/download:"):
        st.caption("A self-contained page (vis-network) to open anywhere: " + (
            "every op." if mode == "ops" else f"more than {GRAPH_VIEW_MAX_OPS:,} ops, so grouped as the explorer's "
            "first view."))
        if st.toggle("Build it", key=keys.part(key, "pyvis")):
            page = _graph_html(graph, graph.content_hash, None if devices is None else tuple(devices.tolist()),
                               None if names is None else tuple(names),
                               None if highlight is None else tuple(highlight.tolist()))
            st.download_button("Download HTML", page, file_name=f"graph-{graph.name}.html", mime="text/html",
                               key=keys.part(key, "pyvis_dl"))


def show_metrics(metrics: dict, seconds_to_place: float | None = None, startup_s: float | None = None,
                 memory_known: bool = True) -> None:
    """Makespan, ratio to the lower bound, peak memory, OOM, communication volume; the sizes read "unknown" on a
    graph whose source gives none (``memory_known``). Six in a row; three in two rows in presentation mode, where
    a headline number at its large size would wrap in a sixth of the page ("2392 / ms")."""
    cols = [*st.columns(3), *st.columns(3)] if presentation() else st.columns(6)
    cols[0].metric("Makespan", fmt_ms(metrics["makespan_s"]))
    cols[1].metric("Lower bound", fmt_ms(metrics.get("lower_bound_s")))
    ratio = metrics.get("ratio_to_lower_bound")
    cols[2].metric("Ratio to lower bound", "-" if ratio is None else f"{ratio:.3f}×")
    peaks = metrics.get("peak_memory_bytes") or {}
    cols[3].metric("Peak memory (max)", fmt_size(max(peaks.values()) if peaks else None, memory_known))
    oom = metrics.get("oom_devices") or []
    cols[4].metric("Out of memory", ("yes: " + ", ".join(oom)) if metrics.get("oom") else "no")
    cols[5].metric("Communication", fmt_size(metrics.get("communication_bytes"), memory_known))
    if seconds_to_place is not None:
        startup = "" if not startup_s else f" (plus {startup_s:.3g} s one-time start-up, e.g. JIT compilation)"
        st.caption(f"Placer took {seconds_to_place:.3g} s{startup} · simulation mode {metrics.get('mode')} · "
                   + ("peak per device: " + ", ".join(f"{d} {fmt_bytes(b)}" for d, b in peaks.items())
                      if memory_known else "memory: unknown (the graph's source gives no sizes; no placement is OOM)"))


def show_schedule_figures(schedule: Schedule, graph: CompGraph, cluster: Cluster, key: str,
                          title: str | None = None, explorer_key: str | None = None,
                          figure_id: str | None = None) -> None:
    """Timeline, load/memcpy profile and memory over time, each in its own tab; ``title`` names the run;
    ``explorer_key`` links the timeline to that graph explorer (see :func:`show_timeline`); ``figure_id``
    names the schedule (a run id) for the figures' cache."""
    tabs = st.tabs(["Timeline", "Load and memcpy", "Memory over time"])
    with tabs[0]:
        show_timeline(schedule, graph, cluster, key=key, title=title, explorer_key=explorer_key, figure_id=figure_id)
    with tabs[1]:
        show_figure(schedule_figure("load", schedule, graph, cluster, title, figure_id), key=keys.part(key, "load"))
    with tabs[2]:
        show_figure(schedule_figure("memory", schedule, graph, cluster, title, figure_id),
                    key=keys.part(key, "memory"))


def _build(kind: str, schedule: Schedule, graph: CompGraph, cluster: Cluster, title: str | None,
           window_ms: tuple[float, float] | None, highlight: np.ndarray | None, arrows: bool | None) -> go.Figure:
    if kind == "timeline":
        fig = timeline(schedule, graph, cluster, title=title, window_ms=window_ms, highlight=highlight, arrows=arrows)
        if fig.data and fig.data[0].meta == "bins":  # a box selection is a time range, not a blow-up of the bins
            fig.update_layout(selectdirection="h")
        return fig
    fig = (load_profile(schedule, graph, cluster) if kind == "load"
           else memory_over_time(schedule, cluster, memory_known=graph.memory_known))
    fig.update_layout(title=fig.layout.title.text + (f" — {title}" if title else ""))
    return fig


@st.cache_resource(max_entries=96, show_spinner=False)
def _cached(figure_id: str, kind: str, title: str | None, window_ms: tuple[float, float] | None, marked: str,
            arrows: bool | None, _schedule: Schedule, _graph: CompGraph, _cluster: Cluster,
            _highlight: np.ndarray | None) -> go.Figure:
    return _build(kind, _schedule, _graph, _cluster, title, window_ms, _highlight, arrows)


def schedule_figure(kind: str, schedule: Schedule, graph: CompGraph, cluster: Cluster, title: str | None,
                    figure_id: str | None = None, *, window_ms: tuple[float, float] | None = None,
                    highlight: np.ndarray | None = None, arrows: bool | None = None) -> go.Figure:
    """A schedule's ``timeline``, ``load`` (load and memcpy profile) or ``memory`` (memory over time) figure.
    With ``figure_id`` (the id of the run that stores the schedule, which never changes) it is built once per
    id and options, for every session: returning to a page of many results draws them from the cache. Do
    not change the figure returned (:func:`show_figure` copies it for presentation mode)."""
    if figure_id is None:
        return _build(kind, schedule, graph, cluster, title, window_ms, highlight, arrows)
    marked = "" if highlight is None else hashlib.sha1(np.packbits(highlight).tobytes()).hexdigest()
    return _cached(figure_id, kind, title, window_ms, marked, arrows, schedule, graph, cluster, highlight)


def curve_controls(key: str, linked: bool = False) -> tuple[str, float]:
    """The learning curves' x axis and smoothing weight (TensorBoard's slider); ``linked``: kept in the link
    (not from a fragment, whose reruns never write the link)."""
    axes = list(CURVE_X)
    if linked:
        linked_choice(X_AXIS, keys.curve(key, "x"), axes)
        linked_choice(SMOOTHING, keys.curve(key, "smoothing"), SMOOTHINGS, _smoothing_text)
    cols = st.columns([2, 3])
    x = cols[0].radio("x axis", axes, horizontal=True, key=keep(keys.curve(key, "x"), axes[0], options=axes))
    smoothing = cols[1].slider("smoothing", SMOOTHINGS[0], SMOOTHINGS[-1], step=0.01,
                               key=keep(keys.curve(key, "smoothing"), DEFAULT_SMOOTHING),
                               help="Exponential moving average, debiased (as in TensorBoard); 0 = raw")
    if linked:
        set_page_params({X_AXIS: None if x == axes[0] else x,
                         SMOOTHING: None if smoothing == DEFAULT_SMOOTHING else _smoothing_text(smoothing)})
    return x, float(smoothing)


def _smoothing_text(weight: float) -> str:
    return f"{round(weight, 2):g}"


def op_at_points(fig, points: list[dict], names: dict[str, int]) -> int | None:
    """The op of the first clicked point that is one op: an op's bar, its memcpy bar or its search marker
    (a busy bin of the zoomed-out timeline is none); ``points`` as Streamlit's plotly selection gives them."""
    for p in points:
        trace = fig.data[p["curve_number"]]
        if trace.meta == "bins":
            continue
        if trace.name == "matches":
            name = trace.text[p["point_index"]]
        elif trace.customdata is not None and np.ndim(trace.customdata) == 2:
            name = trace.customdata[p["point_index"]][0]
        else:
            continue
        if str(name) in names:
            return names[str(name)]
    return None


def _box_span(boxes: list[dict]) -> tuple[float, float] | None:
    """The time span (ms) of the first dragged box with a width, as Streamlit's plotly selection gives it."""
    for box in boxes:
        xs = [float(x) for x in box.get("x") or [] if isinstance(x, int | float)]
        if len(xs) >= 2 and max(xs) > min(xs):
            return min(xs), max(xs)
    return None


def _on_timeline_select(key: str, explorer_key: str | None, graph: CompGraph, fig, end_ms: float) -> None:
    """A click on an op in the timeline selects it in the explorer (its scopes open, its node marked);
    a click on a busy bin of a binned timeline, or a time range dragged across it, zooms the time
    window into that bin or range."""
    selection = (st.session_state.get(keys.timeline_selection(key)) or {}).get("selection") or {}
    points = selection.get("points", [])
    span = _box_span(selection.get("box", [])) or bin_at_points(fig, points)
    if span is not None:
        lo, hi = max(0.0, span[0]), min(end_ms, span[1])
        if hi > lo:
            st.session_state[keys.timeline_window(key)] = (lo, hi)
        return
    op = op_at_points(fig, points, op_index(graph))
    if op is not None and explorer_key is not None:
        pick_op(explorer_key, graph, op)


def _view_id(key: str, schedule: Schedule, graph: CompGraph) -> str:
    """Names one schedule in one place: the trace view keeps its zoom while this stays the same."""
    digest = hashlib.sha1(schedule.op_device.tobytes() + schedule.op_start.tobytes()).hexdigest()[:12]
    return f"{key}:{graph.content_hash}:{digest}"


def show_timeline(schedule: Schedule, graph: CompGraph, cluster: Cluster, *, key: str, title: str | None,
                  explorer_key: str | None = None, figure_id: str | None = None) -> None:
    """The schedule's timeline with a trace viewer's controls and an op search by name / type / scope.

    Above :data:`~dashboard.figures.timeline.TIMELINE_MAX_OPS` ops it is the trace view
    (:mod:`dashboard.trace_view`: zoom and pan in the browser, single ops named once zoomed in), with a
    toggle to the plotly figure; up to that, the plotly figure (exports, slides): a time window (zoom in
    to see single ops and their names) and dependency and transfer arrows on demand.

    With ``explorer_key``: clicking an op selects it in that graph explorer, and the op selected there
    (by a click in the graph) is marked here. On a binned plotly timeline clicking a busy bin, or a box
    selection across a time range, zooms the window into it; *Whole schedule* zooms back out."""
    end = float(schedule.makespan * 1e3) or 1.0
    trace = graph.num_ops > TIMELINE_MAX_OPS and not st.toggle(
        "Plotly figure", key=keep(keys.part(key, "tl_plotly"), False),
        help=f"Above {TIMELINE_MAX_OPS:,} ops the timeline is a trace view drawn in the browser; the plotly "
             "figure bins the ops, zooms on the server and exports to PNG/SVG/PDF/HTML")
    if trace:
        query = st.text_input("Find op (name, type or scope)", key=keep(keys.part(key, "tl_find"), ""))
        window = arrows = None
    else:
        cols = st.columns([4, 3, 2], vertical_alignment="bottom")
        window = cols[0].slider("Time window (ms)", 0.0, end, (0.0, end), key=keys.timeline_window(key),
                                help="Narrow it to see single ops (with names when few) instead of busy bins")
        query = cols[1].text_input("Find op (name, type or scope)", key=keep(keys.part(key, "tl_find"), ""))
        arrows = cols[2].checkbox("Dependency arrows", key=keep(keys.part(key, "tl_arrows"), False),
                                  help="Producer end → consumer start; dashed when the edge is a transfer")
    hits = match_ops(graph, query)
    picked = None if explorer_key is None else selected_op(explorer_key)
    if picked is not None:
        st.caption(f"Selected in the graph: **{graph.op_names[picked]}** at {schedule.op_start[picked] * 1e3:.4g} ms "
                   f"on {cluster.devices[schedule.op_device[picked]].name} "
                   + ("(red outline)" if trace else "(red diamond)"))
    if query.strip():
        first = np.flatnonzero(hits)[:5].tolist()
        where = [f"{graph.op_names[i]} at {schedule.op_start[i] * 1e3:.4g} ms on "
                 f"{cluster.devices[schedule.op_device[i]].name}" for i in first]
        st.caption(f"{int(hits.sum()):,} ops match" + (": " + ", ".join(where) if where else "")
                   + (" …" if hits.sum() > 5 else ""))
    marked = hits.copy()
    if picked is not None:
        marked[picked] = True
    if trace:
        st.caption(f"Trace view of {graph.num_ops:,} ops: wheel to zoom, drag to pan, double-click to fit, click an "
                   "op to select it" + (" in the graph below" if explorer_key else "")
                   + ". Ops too narrow to draw show as busy bars per pixel; the plotly figure (toggle) exports.")
        show_trace_view(schedule, graph, cluster, key=keys.part(key, "trace"), view_id=_view_id(key, schedule, graph),
                        marked=marked, on_pick=None if explorer_key is None else partial(pick_op, explorer_key, graph))
        return
    zoomed = window != (0.0, end)
    fig = schedule_figure("timeline", schedule, graph, cluster, title, figure_id,
                          window_ms=(float(window[0]), float(window[1])) if zoomed else None,
                          highlight=marked if marked.any() else None, arrows=bool(arrows))
    binned = bool(fig.data) and fig.data[0].meta == "bins"
    if binned:
        st.caption("Too many ops to draw one by one here: click a busy bin, or pick *Box Select* in the chart's "
                   "toolbar and drag across a time range, to zoom into it; or narrow the window.")
    if zoomed:
        st.button("Whole schedule", key=keys.part(key, "tl_reset"), icon=":material/zoom_out_map:",
                  on_click=partial(st.session_state.__setitem__, keys.timeline_window(key), (0.0, end)))
    show_figure(fig, key=keys.timeline_selection(key),
                on_select=partial(_on_timeline_select, key, explorer_key, graph, fig, end),
                selection_mode=("points", "box") if binned else "points")
