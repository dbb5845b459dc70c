"""Results over many test graphs: eval and experiment runs as CDF series (Placeto Fig. 5)."""

from __future__ import annotations

from typing import Any

from dashboard.data.runs import run_label
from engine.errors import RunError
from engine.store.runs import Run

__all__ = ["METHOD_LABELS", "cdf_series", "eval_series", "experiment_series"]

#: The methods of an ``experiment`` run (Placeto §4.2) as the paper's Fig. 5 names them.
METHOD_LABELS = {"zero-shot": "Zero-Shot", "optimized": "Optimized", "random": "Random"}


def _result_rows(run: Run) -> list[dict[str, Any]]:
    """``metrics.results`` of the run, else the rows of its ``results.csv``; [] when neither reads."""
    rows = (run.meta.get("metrics") or {}).get("results")
    if rows:
        return list(rows)
    if "results.csv" not in run.files():
        return []
    try:
        table = run.read_table("results.csv")
    except RunError:
        return []
    keys = list(table)
    return [dict(zip(keys, vals, strict=True)) for vals in zip(*table.values(), strict=True)]


def _ratio(row: dict[str, Any]) -> float | None:
    """makespan / lower bound of a result row (the makespan alone when the bound is missing)."""
    try:
        ms, lb = float(row["makespan_s"]), float(row.get("lower_bound_s") or 0)
    except (KeyError, TypeError, ValueError):
        return None
    return ms / lb if lb > 0 else ms


def eval_series(run: Run) -> list[float]:
    """makespan / lower bound over the test graphs of an ``eval`` run.

    Read from ``metrics.results`` (``placelab eval``'s rows) or a ``results.csv`` table with
    ``makespan_s`` and ``lower_bound_s`` columns; an empty list when neither is there.
    """
    return [r for r in map(_ratio, _result_rows(run)) if r is not None]


def experiment_series(run: Run) -> dict[str, list[float]]:
    """makespan / lower bound over the test graphs of an ``experiment`` run, one list per method.

    ``results.csv`` is in long format (one row per graph and method: ``graph``, ``method``,
    ``makespan_s``, ``lower_bound_s``, ``oom``); methods come out in Placeto Fig. 5's order
    and names (Zero-Shot, Optimized, Random), unknown ones after them as written.
    """
    out: dict[str, list[float]] = {label: [] for label in METHOD_LABELS.values()}
    for row in _result_rows(run):
        ratio = _ratio(row)
        if ratio is not None and row.get("method") is not None:
            out.setdefault(METHOD_LABELS.get(str(row["method"]), str(row["method"])), []).append(ratio)
    return {k: v for k, v in out.items() if v}


def cdf_series(evals: list[Run], experiments: list[Run],
               placers: dict[str, str | None] | None = None) -> dict[str, list[float]]:
    """The Compare page's CDF lines: one per eval run, one per method of each experiment run.

    With a single experiment run its lines are named by method alone (Zero-Shot, ...);
    with several, by method and run name. ``placers``, when given, receives each eval line's placer
    (for :func:`~dashboard.figures.cdf_figure`'s colours; a method has none).
    """
    series = {run_label(r): eval_series(r) for r in evals}
    if placers is not None:
        placers.update({run_label(r): r.meta.get("placer") for r in evals})
    for r in experiments:
        for method, values in experiment_series(r).items():
            name = method if len(experiments) == 1 else f"{method} · {r.meta.get('name') or r.id}"
            series[name] = values
    return {k: v for k, v in series.items() if v}
