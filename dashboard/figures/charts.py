"""Bar, line and CDF figures: load profile, memory over time, makespans, CDFs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from dashboard.figures.colors import LOWER_BOUND_COLOR, device_color, run_colors
from dashboard.figures.numbers import fmt_bytes, plain_number
from dashboard.figures.timeline import union_intervals
from engine.cluster import Cluster
from engine.graph.compgraph import CompGraph
from engine.sim.schedule import Schedule
from engine.store.records import estimate_warning

__all__ = ["PHASE_ORDER", "SINGLE_DEVICE_LABEL", "cdf_figure", "copy_engine_load", "load_profile", "makespan_bars",
           "memory_over_time", "phase_compute"]

#: The makespan bars' x axis title where they show the ratio to single-device.
SINGLE_DEVICE_LABEL = "bar labels: makespan (ms) · ×single-device (makespan ÷ the single-device placer's)"

#: Stack order of the load profile (Mirhoseini et al. 2017 Fig. 8–9); "compute" = phase unknown.
PHASE_ORDER = ("forward", "backward", "update", "compute")
_PHASE_COLORS = {"forward": "#0072B2", "backward": "#D55E00", "update": "#009E73", "compute": "#7F7F7F",
                 "memcpy": "#C47A00"}


def phase_compute(schedule: Schedule, graph: CompGraph, num_devices: int) -> dict[str, np.ndarray]:
    """Compute seconds per device split by op phase (ops without a known phase → ``compute``)."""
    dur = schedule.op_end - schedule.op_start
    phases = np.array([p if p in PHASE_ORDER[:3] else "compute" for p in graph.phase], dtype=object)
    return {ph: np.bincount(schedule.op_device[phases == ph], weights=dur[phases == ph], minlength=num_devices)
            for ph in PHASE_ORDER}


def copy_engine_load(schedule: Schedule, num_devices: int) -> dict[str, np.ndarray]:
    """Per device, the transfers it sends: ``busy`` — seconds its copy engines were busy (the union of the
    transfers' intervals, start to arrival: transfers in flight at once count once), ``summed`` — the sum of
    the transfers' durations (more than ``busy`` where they overlap) and ``bytes`` sent. A transfer shared by
    several destinations (placeto mode) counts once."""
    rows = np.flatnonzero(schedule.transfer_primary)
    src = schedule.transfer_src[rows]
    start, end = schedule.transfer_start[rows], schedule.transfer_end[rows]
    ran = np.isfinite(start) & np.isfinite(end)
    busy = np.zeros(num_devices)
    for d in range(num_devices):
        s, e = union_intervals(start[src == d], end[src == d])
        busy[d] = float(np.sum(e - s))
    return {"busy": busy,
            "summed": np.bincount(src[ran], weights=(end - start)[ran], minlength=num_devices).astype(float),
            "bytes": np.bincount(src, weights=schedule.transfer_bytes[rows], minlength=num_devices).astype(float)}


def load_profile(schedule: Schedule, graph: CompGraph, cluster: Cluster) -> go.Figure:
    """Stacked bars per device: forward / backward / update / other compute, and the copy engines' busy time (ms).

    Mirhoseini et al. 2017 Fig. 8–9. The compute segments of a device add up to
    ``schedule.compute_time``. The memcpy bar is the time the device's copy engines were busy sending
    (:func:`copy_engine_load`: overlapping transfers count once, so it never exceeds the makespan), with
    the bytes sent written beside it ("unknown" for a graph whose source gives no sizes); its hover adds
    the transfers' summed time and says why that one can be longer.
    """
    names = [d.name for d in cluster.devices]
    parts = phase_compute(schedule, graph, cluster.num_devices)
    fig = go.Figure()
    for ph in PHASE_ORDER:
        if parts[ph].any():
            fig.add_trace(go.Bar(name=ph, x=names, y=parts[ph] * 1e3, offsetgroup="compute",
                                 marker_color=_PHASE_COLORS[ph],
                                 hovertemplate="%{x}: %{y:.4f} ms<extra>" + ph + "</extra>"))
    copy = copy_engine_load(schedule, cluster.num_devices)
    sent = [f"{fmt_bytes(b)} sent" if graph.memory_known else "bytes unknown" for b in copy["bytes"]]
    fig.add_trace(go.Bar(name="memcpy (copy engines busy)", x=names, y=copy["busy"] * 1e3, offsetgroup="memcpy",
                         marker_color=_PHASE_COLORS["memcpy"], text=sent, textposition="outside", cliponaxis=False,
                         customdata=np.c_[copy["summed"] * 1e3, np.array(sent, dtype=object)],
                         hovertemplate="%{x}: copy engines busy %{y:.4f} ms, %{customdata[1]}"
                                       "<br>transfers summed %{customdata[0]:.4f} ms: transfers in flight at "
                                       "once each count<br>there, so the sum exceeds the busy time where they "
                                       "overlap<extra>memcpy</extra>"))
    top = max(float(np.max(schedule.compute_time, initial=0.0)), float(np.max(copy["busy"], initial=0.0))) * 1e3
    fig.update_layout(barmode="stack", title="Load per device: compute by phase, and memcpy (copy engines busy)",
                      yaxis_title="busy time (ms)", xaxis_title="device", height=380,
                      yaxis_range=[0, (top or 1.0) * 1.15],
                      margin={"l": 10, "r": 10, "t": 50, "b": 40})
    return fig


def memory_over_time(schedule: Schedule, cluster: Cluster, *, memory_known: bool | None = None) -> go.Figure:
    """Memory in use per device over time (step lines, GB) with each device's capacity (dashed).

    Needs a schedule simulated with ``record_memory=True``; the highest step of a device is
    its ``schedule.peak_memory``. For a graph whose source gives no memory sizes
    (``memory_known`` False — pass ``graph.memory_known``; None: judged from the schedule, which then
    holds no byte at all) no line is drawn: the figure says the memory is unknown, never 0 GB.
    """
    if memory_known is None:
        memory_known = bool(np.any(schedule.peak_memory) or np.any(schedule.persistent_memory))
    fig = go.Figure()
    if not memory_known:
        fig.add_annotation(text="Memory unknown: the graph's source gives no sizes (no placement is out of memory)",
                           x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False)
        fig.update_xaxes(visible=False)
        fig.update_yaxes(visible=False)
        fig.update_layout(title="Memory in use per device: unknown", height=380,
                          margin={"l": 10, "r": 10, "t": 50, "b": 40})
        return fig
    tl = schedule.memory_timeline()
    for d, dev in enumerate(cluster.devices):
        t = np.r_[tl.times[d], schedule.makespan] * 1e3
        b = np.r_[tl.bytes[d], tl.bytes[d][-1]] / 1e9
        fig.add_trace(go.Scatter(x=t, y=b, mode="lines", line={"shape": "hv", "color": device_color(d)},
                                 name=dev.name, hovertemplate="%{x:.4f} ms: %{y:.4g} GB<extra>" + dev.name
                                 + "</extra>"))
    capacities = sorted({float(c) for c in schedule.memory_capacity})
    for cap in capacities:
        fig.add_hline(y=cap / 1e9, line_dash="dash", line_color="#B00020",
                      annotation_text=f"capacity {cap / 1e9:.3g} GB", annotation_position="top left")
    top = max(float(schedule.peak_memory.max()), max(capacities)) / 1e9
    fig.update_layout(title="Memory in use per device", xaxis_title="time (ms)", yaxis_title="memory (GB)",
                      yaxis_range=[0, top * 1.08], height=380, margin={"l": 10, "r": 10, "t": 50, "b": 40})
    return fig


def makespan_bars(rows: Sequence[Mapping[str, Any]], *, title: str = "Makespan") -> go.Figure:
    """Bars of makespan (ms) per row with each row's lower bound, and a legend naming both.

    ``rows``: dicts with ``label`` (or ``placer``), ``makespan_s``, optional ``placer`` (the run's placer; else
    the label names it, :func:`~dashboard.figures.colors.placer_of`), ``lower_bound_s``,
    ``oom``, ``hover`` (e.g. the run id, shown on hover), ``ratio_to_single_device`` and
    ``predicted_makespan_s`` (the placer's own estimate). One bar (trace) per row, in its
    placer's colour, several runs of one placer in its shades (:func:`run_colors`: two labels never
    share one); the lower bound in its own grey (:data:`~dashboard.figures.colors.LOWER_BOUND_COLOR`);
    out-of-memory bars are hatched and say so. A row's ratio to single-device follows its value (``12.5 · ×0.60``; the
    x axis title says what it is), and an estimate far off the simulated makespan
    (:func:`engine.store.records.estimate_warning`) adds ``⚠`` to the value and its note to the hover.
    One shared lower bound is a dashed horizontal line, different lower
    bounds (different graphs) a short mark on each bar; either is named in the legend, never
    written over the bars. The axis starts at 0 and leaves room for the value labels.
    """
    labels = [str(r.get("label") or r.get("placer") or f"run {i}") for i, r in enumerate(rows)]
    colors = run_colors(labels, {label: r.get("placer") for label, r in zip(labels, rows, strict=True)})
    fig = go.Figure()
    for label, r in zip(labels, rows, strict=True):
        ms, oom = float(r["makespan_s"]) * 1e3, bool(r.get("oom"))
        ratio, predicted = r.get("ratio_to_single_device"), r.get("predicted_makespan_s")
        warning = estimate_warning(r["makespan_s"], predicted)
        text = plain_number(ms, 4) + ("" if ratio is None else f" · ×{ratio:.2f}") + (" (OOM)" if oom else "") \
            + (" ⚠" if warning else "")
        notes = [str(r.get("hover") or ""),
                 *([] if ratio is None else [f"×{ratio:.3f} single-device"]),
                 *([] if predicted is None else [f"own estimate {plain_number(predicted * 1e3, 4)} ms"]),
                 *([] if warning is None else [f"⚠ {warning}"])]
        fig.add_trace(go.Bar(x=[label], y=[ms], name=label, marker={"color": colors[label],
                                                                  "pattern": {"shape": "x" if oom else ""}},
                             text=[text], textposition="outside",
                             cliponaxis=False, customdata=["<br>".join(n for n in notes if n)],
                             hovertemplate="%{x}: %{y:.4f} ms<br>%{customdata}<extra>makespan</extra>"))
    top = max([float(r["makespan_s"]) * 1e3 for r in rows], default=1.0)
    top = max(top, _lower_bounds(fig, labels, [r.get("lower_bound_s") for r in rows]))
    ratios = any(r.get("ratio_to_single_device") is not None for r in rows)
    fig.update_layout(title=title, yaxis_title="makespan (ms)", height=420, yaxis_range=[0, top * 1.18],
                      xaxis_title=SINGLE_DEVICE_LABEL if ratios else None,
                      barmode="overlay", showlegend=True, margin={"l": 10, "r": 10, "t": 60, "b": 40})
    fig.update_yaxes(automargin=True, rangemode="tozero")
    fig.update_xaxes(automargin=True)
    return fig


def _lower_bounds(fig: go.Figure, labels: list[str], bounds: list[float | None]) -> float:
    """Draw the rows' lower bounds (s) on ``fig``, named in the legend; returns the largest in ms (0: none)."""
    known = {float(v) for v in bounds if v is not None}
    style = {"color": LOWER_BOUND_COLOR, "width": 3}
    if len(known) == 1:
        lb = next(iter(known)) * 1e3
        fig.add_hline(y=lb, line_dash="dash", line_color=style["color"])
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", line={**style, "dash": "dash"},
                                 name=f"lower bound ({plain_number(lb, 4)} ms)", hoverinfo="skip"))
    elif known:
        fig.add_trace(go.Scatter(x=labels, y=[None if v is None else v * 1e3 for v in bounds], mode="markers",
                                 marker={"symbol": "line-ew-open", "size": 40, "color": style["color"],
                                         "line": {"width": style["width"]}}, name="lower bound",
                                 hovertemplate="%{x}: %{y:.4f} ms<extra>lower bound</extra>"))
    return max(known, default=0.0) * 1e3


def cdf_figure(series: Mapping[str, Sequence[float]], *, x_title: str = "makespan / lower bound",
               title: str = "CDF over test graphs", placers: Mapping[str, str | None] | None = None) -> go.Figure:
    """Empirical CDFs, one step line per series (Placeto Fig. 5 style) in its placer's colour (``placers``:
    series → placer, else the name tells, :func:`run_colors`); NaN values are dropped."""
    fig = go.Figure()
    colors = run_colors(series, placers)
    for name, values in series.items():
        v = np.sort(np.asarray([x for x in values if x is not None], dtype=float))
        v = v[np.isfinite(v)]
        if not len(v):
            continue
        y = np.arange(1, len(v) + 1) / len(v)
        fig.add_trace(go.Scatter(x=np.r_[v[0], v], y=np.r_[0.0, y], mode="lines", line={"shape": "hv",
                                 "color": colors[name]}, name=name))
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title="fraction of graphs", yaxis_range=[0, 1.02],
                      height=380, margin={"l": 10, "r": 10, "t": 50, "b": 40})
    return fig
