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
    """``name · placer · graph · cluster``, marked ``example ·`` for a bundled (read-only) run."""
    from dashboard.common import is_example

    m = run.meta
    name = m.get("name") or run.id
    mark = "example · " if is_example(run) else ""
    parts = [str(p) for p in (m.get("placer"), (m.get("graph") or {}).get("name"), m.get("cluster"))
             if p and str(p) not in name]  # a default name "placer · graph · cluster" already says them
    return " · ".join([mark + name, *parts])


def has_placement(run: Run) -> bool:
    return {"graph.json", "cluster.json", "placement.json"} <= set(run.files())


@st.cache_resource(max_entries=8, show_spinner=False)
def _replay(root: str, run_id: str, updated: str) -> tuple[PlacementRun, Schedule]:
    pr = load_placement_run(RunStore(root).load(run_id))
    return pr, Simulator(pr.graph, pr.cluster).run(pr.placement, record_memory=True)


def replay(run: Run) -> tuple[PlacementRun, Schedule]:
    """Graph, cluster, placement and the schedule (memory recorded) of a stored placement run (any store).

    The simulator is deterministic, so re-simulating gives the stored schedule again.
    """
    return _replay(str(run.path.parent), run.id, str(run.meta.get("updated")))


def comparison_row(run: Run) -> dict[str, Any]:
    """A row of the side-by-side table (Placeto Table 1 style); an executed run adds its measured makespan
    (mean and std over the repeats, ``placelab place/compare/execute --save``)."""
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
        **({} if metrics.get("measured_makespan_s") is None else {
            "measured (ms)": metrics["measured_makespan_s"] * 1e3,
            "measured std (ms)": (metrics.get("measured_std_s") or 0.0) * 1e3,
            "measured runs": metrics.get("measured_repeats")}),
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


def setting_of(run: Run) -> tuple[str, str]:
    """(graph, cluster) a run's numbers belong to: the graph's name and hash, or a training run's graph specs."""
    m = run.meta
    graph = m.get("graph") or {}
    graphs = (m.get("parameters") or {}).get("graphs") if m.get("kind") == "train" else None
    name = str(graphs or graph.get("name") or "-")
    digest = "" if graphs else str(graph.get("hash") or "")
    return (f"{name} [{digest[:8]}]" if digest else name), str(m.get("cluster") or "-")


def seed_groups(runs: list[Run]) -> dict[str, list[dict[str, list]]]:
    """Learning curves of ``runs``, those that differ only in their seed (and name) put together.

    The key names the placer, graphs and cluster (with the seed count when there are several);
    a group's value holds one curve per seed. Runs without a curve yet are left out.
    """
    groups: dict[tuple, list[tuple[Run, dict]]] = {}
    for r in runs:
        curve = learning_curve(r)
        if curve is None:
            continue
        m = r.meta
        params = {k: v for k, v in (m.get("parameters") or {}).items() if k not in ("budget", "seed")}
        key = (m.get("placer"), *setting_of(r), repr(sorted(params.items(), key=lambda kv: kv[0])))
        groups.setdefault(key, []).append((r, curve))
    out: dict[str, list[dict[str, list]]] = {}
    for key, members in groups.items():
        if len(members) == 1:
            r = members[0][0]
            base = r.meta.get("name") or r.id
        else:
            base = f"{key[0]} on {key[1]} · {key[2]} ({len(members)} seeds)"
        name = base if base not in out else f"{base} ({members[0][0].id})"
        out[name] = [c for _, c in members]
    return out


#: Random placements per graph the app evaluates for a run stored without its verdict (the verdict a training
#: stores compares with as many as it evaluated; this keeps a page on a long old training responsive).
HEALTH_RANDOM_CAP = 5000


@st.cache_resource(max_entries=64, show_spinner=False)
def _training_health(root: str, run_id: str, updated: str) -> Any:
    from policies.rl.health import stored_health

    return stored_health(RunStore(root).load(run_id), max_random=HEALTH_RANDOM_CAP)


def training_health(run: Run) -> Any:
    """A finished training run's learning health (:class:`policies.rl.health.LearningHealth`): the verdict it
    stored, or — for a run stored before verdicts were — computed from its learning curve (with the random
    search on its rebuilt graphs where they can be rebuilt). None while it trains, without a curve, or when
    the run cannot be read: an old run never breaks a page."""
    if run.status == "running":
        return None
    try:
        return _training_health(str(run.path.parent), run.id, str(run.meta.get("updated")))
    except (RunError, OSError, ValueError, KeyError, TypeError):
        return None


def health_stored(run: Run) -> bool:
    """Whether the run stored its learning-health verdict (else the pages compute it from its curve)."""
    return isinstance((run.meta.get("metrics") or {}).get("learning_health"), dict)


def health_row(run: Run, health: Any) -> dict[str, Any]:
    """A row of the learning-health table under the learning curves."""
    from policies.rl.health import NEVER_LEFT_UNIFORM

    def share(x: float | None) -> str:
        return "-" if x is None else f"{x:.1%}"

    if health is None:
        status = run.status
        return {"run": run_label(run), "learning health": "still training" if status == "running" else "no curve"}
    entropy = (f"{share(health.entropy_first_ratio)} → {share(health.entropy_last_ratio)}"
               if health.entropy_last_ratio is not None else "no uniform reference")
    return {
        "run": run_label(run),
        "learning health": health.label,
        "episodes": health.episodes,
        "window": health.window,
        "entropy, of uniform (first → last)": entropy,
        "sampled runtime, last / first": health.runtime_ratio,
        "best found / random search's best": health.random_ratio,
        "random placements": health.random_placements or None,
        "note": (NEVER_LEFT_UNIFORM if health.never_left_uniform
                 else (f"random search: {health.random_missing}" if health.random_ratio is None else "")),
        "verdict from": "the run (stored)" if health_stored(run) else "its stored curve (computed now)",
    }
