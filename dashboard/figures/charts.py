"""Bar, line and CDF figures: load profile, memory over time, makespans, CDFs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from dashboard.figures.numbers import plain_number
from dashboard.figures.theme import device_color, run_colors
from engine.cluster import Cluster
from engine.graph import CompGraph
from engine.run_records import estimate_warning
from engine.schedule import Schedule

__all__ = ["PHASE_ORDER", "SINGLE_DEVICE_LABEL", "cdf_figure", "load_profile", "makespan_bars", "memory_over_time",
           "phase_compute"]

#: The makespan bars' x axis title where they show the ratio to single-device.
SINGLE_DEVICE_LABEL = "bar labels: makespan (ms) · ×single-device (makespan ÷ the single-device placer's)"

#: Stack order of the load profile (Mirhoseini et al. 2017 Fig. 8–9); "compute" = phase unknown.
PHASE_ORDER = ("forward", "backward", "update", "compute")
_PHASE_COLORS = {"forward": "#0072B2", "backward": "#D55E00", "update": "#009E73", "compute": "#7F7F7F",
                 "memcpy": "#E69F00"}


def phase_compute(schedule: Schedule, graph: CompGraph, num_devices: int) -> dict[str, np.ndarray]:
    """Compute seconds per device split by op phase (ops without a known phase → ``compute``)."""
    dur = schedule.op_end - schedule.op_start
    phases = np.array([p if p in PHASE_ORDER[:3] else "compute" for p in graph.phase], dtype=object)
    return {ph: np.bincount(schedule.op_device[phases == ph], weights=dur[phases == ph], minlength=num_devices)
            for ph in PHASE_ORDER}


def load_profile(schedule: Schedule, graph: CompGraph, cluster: Cluster) -> go.Figure:
    """Stacked bars per device: forward / backward / update / other compute, and memcpy (ms).

    Mirhoseini et al. 2017 Fig. 8–9. The compute segments of a device add up to
    ``schedule.compute_time``; the memcpy bar is ``schedule.memcpy_time`` (its outgoing channel).
    """
    names = [d.name for d in cluster.devices]
    parts = phase_compute(schedule, graph, cluster.num_devices)
    fig = go.Figure()
    for ph in PHASE_ORDER:
        if parts[ph].any():
            fig.add_trace(go.Bar(name=ph, x=names, y=parts[ph] * 1e3, offsetgroup="compute",
                                 marker_color=_PHASE_COLORS[ph],
                                 hovertemplate="%{x}: %{y:.4f} ms<extra>" + ph + "</extra>"))
    fig.add_trace(go.Bar(name="memcpy", x=names, y=schedule.memcpy_time * 1e3, offsetgroup="memcpy",
                         marker_color=_PHASE_COLORS["memcpy"],
                         hovertemplate="%{x}: %{y:.4f} ms<extra>memcpy</extra>"))
    fig.update_layout(barmode="stack", title="Load per device: compute by phase, and memcpy",
                      yaxis_title="time (ms)", xaxis_title="device", height=380,
                      margin={"l": 10, "r": 10, "t": 50, "b": 40})
    return fig


def memory_over_time(schedule: Schedule, cluster: Cluster) -> go.Figure:
    """Memory in use per device over time (step lines, GB) with each device's capacity (dashed).

    Needs a schedule simulated with ``record_memory=True``; the highest step of a device is
    its ``schedule.peak_memory``.
    """
    tl = schedule.memory_timeline()
    fig = go.Figure()
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

    ``rows``: dicts with ``label`` (or ``placer``), ``makespan_s``, optional ``lower_bound_s``,
    ``oom``, ``hover`` (e.g. the run id, shown on hover), ``ratio_to_single_device`` and
    ``predicted_makespan_s`` (the placer's own estimate). One bar (trace) per row, in its
    label's colour (:func:`run_colors`: two labels never share one); out-of-memory bars are
    hatched and say so. A row's ratio to single-device follows its value (``12.5 · ×0.60``; the
    x axis title says what it is), and an estimate far off the simulated makespan
    (:func:`engine.run_records.estimate_warning`) adds ``⚠`` to the value and its note to the hover.
    One shared lower bound is a dashed horizontal line, different lower
    bounds (different graphs) a short mark on each bar; either is named in the legend, never
    written over the bars. The axis starts at 0 and leaves room for the value labels.
    """
    labels = [str(r.get("label") or r.get("placer") or f"run {i}") for i, r in enumerate(rows)]
    colors = run_colors(labels)
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
    style = {"color": "#009E73", "width": 3}
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
               title: str = "CDF over test graphs") -> go.Figure:
    """Empirical CDFs, one step line per series (Placeto Fig. 5 style) in the series' colour
    (:func:`run_colors`); NaN values are dropped."""
    fig = go.Figure()
    colors = run_colors(series)
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
