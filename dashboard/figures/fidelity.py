"""Simulator fidelity figures (issue #14): simulated against measured makespans, and timelines.

Pure functions of data. ``fidelity_scatter`` is DOPPLER App. G.1's comparison drawn per
simulation mode, with the diagonal where a perfect simulator's points would lie;
``measured_vs_simulated`` puts one placement's measured and simulated schedules on one time
axis, one pair of lanes per device; ``measured_bars`` sets simulated beside measured makespan
for several executed runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from dashboard.figures.theme import PALETTE, device_color, memcpy_color
from engine.cluster import Cluster
from engine.graph.compgraph import CompGraph
from engine.sim.schedule import Schedule

__all__ = ["fidelity_scatter", "measured_bars", "measured_vs_simulated"]


def fidelity_scatter(measured_s: Sequence[float], simulated_s: Mapping[str, Sequence[float]], *,
                     sources: Sequence[str] | None = None, title: str = "Simulated vs measured makespan"
                     ) -> go.Figure:
    """One marker series per simulation mode (x = measured, y = simulated, ms) and the diagonal y = x."""
    m = np.asarray(measured_s, dtype=np.float64) * 1e3
    fig = go.Figure()
    every = np.concatenate([m, *(np.asarray(v, dtype=np.float64) * 1e3 for v in simulated_s.values())])
    lo, hi = (float(every.min()), float(every.max())) if len(every) else (0.0, 1.0)
    for k, (mode, values) in enumerate(simulated_s.items()):
        p = np.asarray(values, dtype=np.float64) * 1e3
        fig.add_trace(go.Scatter(
            x=m, y=p, mode="markers", name=mode, marker={"color": PALETTE[k % len(PALETTE)], "size": 8},
            text=list(sources) if sources is not None else None,
            hovertemplate="%{text}<br>measured %{x:.3f} ms<br>simulated %{y:.3f} ms<extra>" + mode + "</extra>"))
    fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="simulated = measured",
                             line={"color": "#888", "dash": "dash"}, hoverinfo="skip"))
    fig.update_layout(title=title, xaxis_title="measured makespan (ms)", yaxis_title="simulated makespan (ms)",
                      height=460, margin={"l": 10, "r": 10, "t": 50, "b": 40})
    return fig


def measured_bars(rows: Sequence[Mapping[str, Any]], *, title: str = "Simulated and measured makespan"
                  ) -> go.Figure:
    """Grouped bars (ms) per row: simulated ``makespan_s`` and measured ``measured_makespan_s`` ± ``measured_std_s``.

    ``rows``: dicts with ``label``, ``makespan_s``, ``measured_makespan_s`` and optional
    ``measured_std_s``, ``measured_repeats``.
    """
    labels = [str(r["label"]) for r in rows]
    sim = [float(r["makespan_s"]) * 1e3 for r in rows]
    meas = [float(r["measured_makespan_s"]) * 1e3 for r in rows]
    std = [float(r.get("measured_std_s") or 0.0) * 1e3 for r in rows]
    runs = [r.get("measured_repeats") or 1 for r in rows]
    fig = go.Figure([
        go.Bar(x=labels, y=sim, name="simulated", marker={"color": PALETTE[0]},
               text=[f"{v:.4g}" for v in sim], textposition="inside",
               hovertemplate="%{x}: %{y:.4f} ms<extra>simulated</extra>"),
        go.Bar(x=labels, y=meas, name="measured", marker={"color": PALETTE[1]},
               error_y={"type": "data", "array": std, "visible": True}, customdata=list(zip(std, runs, strict=True)),
               text=[f"{v:.4g}" for v in meas], textposition="inside",
               hovertemplate="%{x}: %{y:.4f} ± %{customdata[0]:.4f} ms over %{customdata[1]} runs"
                             "<extra>measured</extra>"),
    ])
    top = max([*sim, *(m + s for m, s in zip(meas, std, strict=True))], default=1.0)
    fig.update_layout(title=title, barmode="group", yaxis_title="makespan (ms)", yaxis_range=[0, top * 1.08],
                      height=420, margin={"l": 10, "r": 10, "t": 50, "b": 40})
    return fig


def measured_vs_simulated(measured: Schedule, simulated: Schedule, graph: CompGraph, cluster: Cluster, *,
                          title: str | None = None) -> go.Figure:
    """Op bars of both schedules on one time axis (ms): lanes ``DEVICE measured`` and ``DEVICE simulated``.

    Transfers are drawn as thin grey bars on the sending device's lanes; a simulated lane takes the device's
    lighter tint, opaque, so it stays visible on the dark theme.
    """
    fig = go.Figure()
    lanes = []
    for d, dev in enumerate(cluster.devices):
        for label, s, color in (("measured", measured, device_color(d)),
                                (f"simulated ({simulated.mode})", simulated, memcpy_color(d))):
            lane = f"{dev.name} {label}"
            lanes.append(lane)
            sel = np.flatnonzero(s.op_device == d)
            fig.add_trace(go.Bar(
                y=[lane] * len(sel), x=(s.op_end[sel] - s.op_start[sel]) * 1e3, base=s.op_start[sel] * 1e3,
                orientation="h", marker={"color": color}, name=lane,
                text=[graph.op_names[i] for i in sel], textposition="none",
                hovertemplate="%{text}<br>start %{base:.3f} ms<br>%{x:.3f} ms<extra>" + lane + "</extra>"))
            tr = np.flatnonzero(s.transfer_src == d)
            if len(tr):
                fig.add_trace(go.Bar(
                    y=[lane] * len(tr), x=(s.transfer_end[tr] - s.transfer_start[tr]) * 1e3,
                    base=s.transfer_start[tr] * 1e3, orientation="h", width=0.2,
                    marker={"color": "#808080"}, name=f"{lane} copies",
                    text=[f"{graph.op_names[s.transfer_op[i]]} → {cluster.devices[s.transfer_dst[i]].name}, "
                          f"{s.transfer_bytes[i]:.0f} B" for i in tr], textposition="none",
                    hovertemplate="%{text}<br>start %{base:.3f} ms<br>%{x:.3f} ms<extra>copy</extra>"))
    fig.add_vline(x=measured.makespan * 1e3, line_dash="solid", line_color="#808080")
    fig.add_vline(x=simulated.makespan * 1e3, line_dash="dot", line_color="#808080")
    fig.update_layout(
        title=title or (f"{graph.name}: measured {measured.makespan * 1e3:.4g} ms, "
                        f"simulated {simulated.makespan * 1e3:.4g} ms"),
        barmode="overlay", xaxis_title="time (ms)", showlegend=False, height=max(260, 60 + 40 * len(lanes)),
        yaxis={"categoryorder": "array", "categoryarray": lanes[::-1], "type": "category"},
        margin={"l": 10, "r": 10, "t": 50, "b": 40})
    return fig
