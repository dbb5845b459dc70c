"""Reading stored runs for display: labels, table rows, re-simulated schedules, eval and experiment results,
learning curves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st

from engine.errors import RunError
from engine.run_records import PlacementRun, load_placement_run
from engine.runs import Run, RunStore
from engine.schedule import Schedule
from engine.simulator import Simulator

PLACEMENT_KINDS = ("place", "compare")
#: Points per learning-curve line drawn; longer curves are thinned for the browser.
MAX_CURVE_POINTS = 2000


def run_label(run: Run) -> str:
    m = run.meta
    name = m.get("name") or run.id
    return f"{name} · {m.get('placer') or '-'} · {(m.get('graph') or {}).get('name') or '-'} · {m.get('cluster')}"


def has_placement(run: Run) -> bool:
    return {"graph.json", "cluster.json", "placement.json"} <= set(run.files())


@st.cache_resource(max_entries=8, show_spinner=False)
def _replay(root: str, run_id: str, updated: str) -> tuple[PlacementRun, Schedule]:
    pr = load_placement_run(RunStore(root).load(run_id))
    return pr, Simulator(pr.graph, pr.cluster).run(pr.placement, record_memory=True)


def replay(store: RunStore, run: Run) -> tuple[PlacementRun, Schedule]:
    """Graph, cluster, placement and the schedule (memory recorded) of a stored placement run.

    The simulator is deterministic, so re-simulating gives the stored schedule again.
    """
    return _replay(str(store.root), run.id, str(run.meta.get("updated")))


def comparison_row(run: Run) -> dict[str, Any]:
    """A row of the side-by-side table (Placeto Table 1 style)."""
    m = run.meta
    metrics = m.get("metrics") or {}
    peaks = metrics.get("peak_memory_bytes") or {}
    ms = metrics.get("makespan_s")
    lb = metrics.get("lower_bound_s")
    return {
        "run": m.get("name") or run.id,
        "placer": m.get("placer"),
        "graph": (m.get("graph") or {}).get("name"),
        "cluster": m.get("cluster"),
        "status": run.status,
        "makespan (ms)": None if ms is None else ms * 1e3,
        "lower bound (ms)": None if lb is None else lb * 1e3,
        "ratio to lower bound": metrics.get("ratio_to_lower_bound"),
        "peak memory (GB)": max(peaks.values()) / 1e9 if peaks else None,
        "OOM": metrics.get("oom"),
        "communication (MB)": None if metrics.get("communication_bytes") is None
        else metrics["communication_bytes"] / 1e6,
        "seconds to place": metrics.get("seconds_to_place"),
    }


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


def cdf_series(evals: list[Run], experiments: list[Run]) -> dict[str, list[float]]:
    """The Compare page's CDF lines: one per eval run, one per method of each experiment run.

    With a single experiment run its lines are named by method alone (Zero-Shot, ...);
    with several, by method and run name.
    """
    series = {run_label(r): eval_series(r) for r in evals}
    for r in experiments:
        for method, values in experiment_series(r).items():
            name = method if len(experiments) == 1 else f"{method} · {r.meta.get('name') or r.id}"
            series[name] = values
    return {k: v for k, v in series.items() if v}


@st.cache_resource(max_entries=32, show_spinner=False)
def _curve_table(path: str, mtime_ns: int, size: int) -> dict[str, list]:
    from engine.tables import read_csv

    return read_csv(Path(path))


def learning_curve(run: Run) -> dict[str, list] | None:
    """The columns of a training run's learning curve (CONTRACTS §6); None when it has none yet.

    Cached by the file's modification time and size, so polling a live run re-reads the file
    only when rows were appended.
    """
    from policies.rl.run_files import CURVE

    path = run.path / CURVE
    try:
        stat = path.stat()
        table = _curve_table(str(path), stat.st_mtime_ns, stat.st_size)
    except (OSError, ValueError):
        return None
    return table if table.get("episode") else None


def curves_by_name(runs: list[Run]) -> dict[str, dict[str, list]]:
    """Learning curves of ``runs`` keyed by run name (the id added where names repeat); runs without one left out."""
    names = [r.meta.get("name") or r.id for r in runs]
    out = {}
    for r, name in zip(runs, names, strict=True):
        curve = learning_curve(r)
        if curve is not None:
            out[name if names.count(name) == 1 else f"{name} ({r.id})"] = curve
    return out
