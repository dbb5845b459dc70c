"""The app's figures of stored runs, drawn by the pages' own pure functions from the runs as the pages read them:
what ``placelab plot`` writes and what a report's slides show (:mod:`dashboard.report.slides`).

Every function raises :class:`~engine.errors.RunError` naming the run for a run it cannot draw.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from dashboard.data.learning import MAX_CURVE_POINTS, learning_curve, seed_groups
from dashboard.data.runs import bar_labels, replay, run_metrics, setting_of
from dashboard.data.series import cdf_series
from dashboard.figures.charts import cdf_figure, load_profile, makespan_bars, memory_over_time
from dashboard.figures.curves import learning_curves
from dashboard.figures.fidelity import measured_bars
from dashboard.figures.timeline import timeline
from engine.errors import RunError
from engine.store.runs import Run

__all__ = ["SCHEDULE_FIGURES", "bar_rows", "cdf_of", "curves_of", "makespan_figure", "measured_figure",
           "run_figure", "schedule_figure", "setting_title", "settings_warning"]

#: The figures of one placement run's schedule (replayed from its graph, cluster and placement).
SCHEDULE_FIGURES = ("timeline", "load", "memory")


def _kind(run: Run) -> str:
    return str(run.meta.get("kind") or "unknown")


def bar_rows(runs: list[Run]) -> list[dict[str, Any]]:
    """The makespan bars' rows of placement runs (as on Compare): label, placer, hover and the run's metrics."""
    return [{"label": label, "placer": r.meta.get("placer"), "hover": f"run {r.id} · {r.meta.get('name') or ''}",
             **run_metrics(r)} for label, r in zip(bar_labels(runs), runs, strict=True)]


def settings_warning(runs: list[Run]) -> str | None:
    """Why the makespans of ``runs`` are not comparable (they are on different graphs or clusters); None if they
    are on one."""
    settings = {setting_of(r) for r in runs}
    if len(settings) < 2:
        return None
    return ("these runs are on different graphs or clusters (" + "; ".join(f"{g} on {c}" for g, c in sorted(settings))
            + "): their makespans are not comparable")


def setting_title(runs: list[Run]) -> str:
    """``GRAPH · CLUSTER`` of runs on one setting, else ``several graphs · clusters``."""
    settings = {setting_of(r) for r in runs}
    graph, cluster = next(iter(settings)) if len(settings) == 1 else ("several graphs", "clusters")
    return f"{graph} · {cluster}"


def makespan_figure(runs: list[Run]) -> go.Figure:
    """Makespan per placement run with its lower bound and ratio to single-device (the Compare page's bars)."""
    return makespan_bars(bar_rows(runs), title=f"Makespan on {setting_title(runs)}")


def measured_figure(runs: list[Run]) -> go.Figure:
    """Simulated beside measured makespan of executed runs (``--execute``), as on Compare."""
    rows = [row for row in bar_rows(runs) if row.get("measured_makespan_s") is not None]
    if not rows:
        raise RunError("none of these runs was executed on real devices (placelab place/compare --execute)")
    return measured_bars(rows, title=f"Simulated and measured makespan on {setting_title(runs)}")


def schedule_figure(figure: str, run: Run, *, title: str | None = None) -> go.Figure:
    """One placement run's ``timeline``, ``load`` (compute by phase and memcpy per device) or ``memory`` (in use
    per device over time), from its schedule replayed."""
    pr, schedule = replay(run)
    if figure == "timeline":
        return timeline(schedule, pr.graph, pr.cluster, title=title)
    fig = (load_profile(schedule, pr.graph, pr.cluster) if figure == "load"
           else memory_over_time(schedule, pr.cluster, memory_known=pr.graph.memory_known))
    return fig if title is None else fig.update_layout(title_text=title)


def cdf_of(runs: list[Run]) -> go.Figure:
    """Makespan / lower bound over test graphs per eval run and experiment method (Placeto Fig. 5)."""
    placers: dict[str, str | None] = {}
    series = cdf_series([r for r in runs if _kind(r) == "eval"], [r for r in runs if _kind(r) == "experiment"],
                        placers)
    if not series:
        raise RunError(f"{'this run holds' if len(runs) == 1 else 'these runs hold'} no per-graph results to draw")
    return cdf_figure(series, placers=placers)


def curves_of(runs: list[Run]) -> go.Figure:
    """Learning curves of training runs; runs that differ only in their seed as a mean and a band."""
    for run in runs:
        if learning_curve(run) is None:
            raise RunError(f"run {run.id} ({run.status}) has no learning curve yet: no episode has finished")
    placers: dict[str, str | None] = {}
    curves = seed_groups(runs, placers)
    return learning_curves(curves, max_points=MAX_CURVE_POINTS, placers=placers)


def run_figure(figure: str, runs: list[Run]) -> go.Figure:
    """The figure named ``figure`` (a schedule figure, ``bars``, ``cdf`` or ``curves``) of ``runs``."""
    if figure in SCHEDULE_FIGURES:
        return schedule_figure(figure, runs[0])
    if figure == "bars":
        return makespan_figure(runs)
    return cdf_of(runs) if figure == "cdf" else curves_of(runs)
