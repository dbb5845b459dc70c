"""Bar, line and CDF figures: load profile, memory over time, makespans, CDFs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from dashboard.figures.theme import PALETTE, device_color, run_color
from engine.cluster import Cluster
from engine.graph import CompGraph
from engine.schedule import Schedule

__all__ = ["PHASE_ORDER", "cdf_figure", "load_profile", "makespan_bars", "memory_over_time", "phase_compute"]

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
    """Bars of makespan (ms) per row with each row's lower bound as a line.

    ``rows``: dicts with ``label`` (or ``placer``), ``makespan_s``, optional ``lower_bound_s``,
    ``oom`` and ``hover`` (e.g. the run id, shown on hover). Each label keeps its colour
    (:func:`run_color`); out-of-memory bars are hatched and say so. One shared lower bound is
    drawn as a horizontal line; different lower bounds (different graphs) as a short mark on
    each bar. The axis starts at 0 and leaves room for the value labels.
    """
    labels = [str(r.get("label") or r.get("placer") or f"run {i}") for i, r in enumerate(rows)]
    ms = [float(r["makespan_s"]) * 1e3 for r in rows]
    hover = [str(r.get("hover") or "") for r in rows]
    oom = [bool(r.get("oom")) for r in rows]
    fig = go.Figure(go.Bar(x=labels, y=ms, marker={"color": [run_color(lb) for lb in labels],
                                                   "pattern": {"shape": ["x" if o else "" for o in oom]}},
                           name="makespan", text=[f"{v:.4g}" + (" (OOM)" if o else "") for v, o in zip(ms, oom,
                                                                                                   strict=True)],
                           textposition="outside", cliponaxis=False, customdata=hover,
                           hovertemplate="%{x}: %{y:.4f} ms<br>%{customdata}<extra>makespan</extra>"))
    lbs = [r.get("lower_bound_s") for r in rows]
    known = {float(v) for v in lbs if v is not None}
    top = max([*ms, *(v * 1e3 for v in known)], default=1.0)
    if len(known) == 1:
        lb = known.pop() * 1e3
        fig.add_hline(y=lb, line_dash="dash", line_color="#009E73",
                      annotation_text=f"lower bound {lb:.4g} ms", annotation_position="bottom right")
    elif known:
        fig.add_trace(go.Scatter(x=labels, y=[None if v is None else v * 1e3 for v in lbs], mode="markers",
                                 marker={"symbol": "line-ew-open", "size": 40, "color": "#009E73",
                                         "line": {"width": 3}}, name="lower bound"))
    fig.update_layout(title=title, yaxis_title="makespan (ms)", height=420, yaxis_range=[0, top * 1.18],
                      margin={"l": 10, "r": 10, "t": 60, "b": 40}, showlegend=len(known) > 1)
    fig.update_yaxes(automargin=True, rangemode="tozero")
    fig.update_xaxes(automargin=True)
    return fig


def cdf_figure(series: Mapping[str, Sequence[float]], *, x_title: str = "makespan / lower bound",
               title: str = "CDF over test graphs") -> go.Figure:
    """Empirical CDFs, one step line per series (Placeto Fig. 5 style); NaN values are dropped."""
    fig = go.Figure()
    for i, (name, values) in enumerate(series.items()):
        v = np.sort(np.asarray([x for x in values if x is not None], dtype=float))
        v = v[np.isfinite(v)]
        if not len(v):
            continue
        y = np.arange(1, len(v) + 1) / len(v)
        fig.add_trace(go.Scatter(x=np.r_[v[0], v], y=np.r_[0.0, y], mode="lines", line={"shape": "hv",
                                 "color": PALETTE[i % len(PALETTE)]}, name=name))
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title="fraction of graphs", yaxis_range=[0, 1.02],
                      height=380, margin={"l": 10, "r": 10, "t": 50, "b": 40})
    return fig
