"""Stored runs as the pages list them: the user's and the bundled examples, labels, comparison rows, replays."""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import Any

from dashboard.data.format import graph_label
from dashboard.stores import example_runs_dir, run_store, runs_dir
from engine.errors import PlacelabError
from engine.sim.schedule import Schedule
from engine.sim.simulator import Simulator
from engine.store.records import PlacementRun, estimate_warning, load_placement_run, single_device_metrics
from engine.store.runs import Run, RunStore
from placelab.runner import single_device_makespan

__all__ = ["PLACEMENT_KINDS", "bar_labels", "comparison_row", "default_setting", "estimate_warnings", "has_placement",
           "is_example", "list_runs", "replay", "run_label", "run_metrics", "setting_label", "setting_of"]

PLACEMENT_KINDS = ("place", "compare")


def _example_store() -> RunStore | None:
    ex, mine = example_runs_dir(), runs_dir()
    if not ex.is_dir() or (mine.exists() and ex.resolve() == mine.resolve()):
        return None
    return RunStore(ex)


def is_example(run: Run) -> bool:
    """Whether ``run`` is one of the bundled, read-only examples."""
    store = _example_store()
    return store is not None and run.path.parent.resolve() == store.root.resolve()


def list_runs(kind: str | None = None, status: str | None = None, tag: str | None = None,
              problems: list[str] | None = None) -> list[Run]:
    """The user's runs, then the bundled examples, each newest first. A run whose ``run.json`` cannot be read
    is left out; ``problems``, when given, receives one line naming each (``RunStore.list``)."""
    runs: list[Run] = []
    for store in (run_store() if runs_dir().is_dir() else None, _example_store()):
        if store is not None:
            runs += store.list(kind=kind, status=status, tag=tag)
            if problems is not None:
                problems += store.problems
    return runs


def run_label(run: Run) -> str:
    """``name · placer · graph · cluster``, marked ``example ·`` for a bundled (read-only) run."""
    m = run.meta
    name = m.get("name") or run.id
    mark = "example · " if is_example(run) else ""
    graph = (m.get("graph") or {}).get("name")
    parts = [str(p) for p in (m.get("placer"), graph and graph_label(graph), m.get("cluster"))
             if p and str(p) not in name]  # a default name "placer · graph · cluster" already says them
    return " · ".join([mark + name, *parts])


def has_placement(run: Run) -> bool:
    return {"graph.json", "cluster.json", "placement.json"} <= set(run.files())


@lru_cache(maxsize=16)
def _replay(root: str, run_id: str, updated: str) -> tuple[PlacementRun, Schedule]:
    pr = load_placement_run(RunStore(root).load(run_id))
    return pr, Simulator(pr.graph, pr.cluster).run(pr.placement, record_memory=True)


def replay(run: Run) -> tuple[PlacementRun, Schedule]:
    """Graph, cluster, placement and the schedule (memory recorded) of a stored placement run (any store),
    cached per run and version.

    The simulator is deterministic, so re-simulating gives the stored schedule again.
    """
    return _replay(str(run.path.parent), run.id, str(run.meta.get("updated")))


@lru_cache(maxsize=64)
def _single_device(root: str, run_id: str, updated: str) -> float | None:
    try:
        pr = load_placement_run(RunStore(root).load(run_id))
    except (PlacelabError, OSError, ValueError):  # a run whose inputs cannot be read shows no ratio, not an error
        return None
    return single_device_makespan(pr.graph, pr.cluster)


def run_metrics(run: Run) -> dict[str, Any]:
    """A stored run's metrics, with ``single_device_makespan_s`` and ``ratio_to_single_device``: as stored, or
    for a placement run stored before they were recorded, the single-device placer simulated on the run's own
    graph and cluster (cached per run and version)."""
    metrics = dict(run.meta.get("metrics") or {})
    if "single_device_makespan_s" in metrics or metrics.get("makespan_s") is None or not has_placement(run):
        return metrics
    single = _single_device(str(run.path.parent), run.id, str(run.meta.get("updated")))
    return {**metrics, **single_device_metrics(metrics["makespan_s"], single)}


def estimate_warnings(rows: list[dict[str, Any]]) -> str | None:
    """The makespan bars' rows (``label`` and metrics) whose placer's own estimate is far off the simulated
    makespan (:func:`engine.store.records.estimate_warning`), as one message; None where there are none."""
    lines = [f"**{r['label']}**: {w} (own estimate {r['predicted_makespan_s'] * 1e3:.4g} ms, simulated "
             f"{r['makespan_s'] * 1e3:.4g} ms)" for r in rows
             if (w := estimate_warning(r.get("makespan_s"), r.get("predicted_makespan_s")))]
    if not lines:
        return None
    return ("A placer's own estimate of its makespan is far off the simulation (it plans with other rules than "
            "the cluster's simulation mode executes): " + "; ".join(lines))


def comparison_row(run: Run) -> dict[str, Any]:
    """A row of the side-by-side table (Placeto Table 1 style): with the placer's own estimate and the ratio to
    single-device (:func:`run_metrics`); an executed run adds its measured makespan
    (mean and std over the repeats, ``placelab place/compare/execute --save``)."""
    m = run.meta
    metrics = run_metrics(run)
    peaks = metrics.get("peak_memory_bytes") or {}
    ms = metrics.get("makespan_s")
    lb = metrics.get("lower_bound_s")
    predicted = metrics.get("predicted_makespan_s")
    return {
        "run": m.get("name") or run.id,
        "placer": m.get("placer"),
        "graph": graph_label((m.get("graph") or {}).get("name") or "") or None,
        "cluster": m.get("cluster"),
        "status": run.status,
        "makespan (ms)": None if ms is None else ms * 1e3,
        "own estimate (ms)": None if predicted is None else predicted * 1e3,
        "lower bound (ms)": None if lb is None else lb * 1e3,
        "ratio to lower bound": metrics.get("ratio_to_lower_bound"),
        "ratio to single device": metrics.get("ratio_to_single_device"),
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


def setting_of(run: Run) -> tuple[str, str]:
    """(graph, cluster) a run's numbers belong to: the graph's name and hash, or a training run's graph specs;
    graphs from files by name (:func:`graph_label`)."""
    m = run.meta
    graph = m.get("graph") or {}
    graphs = (m.get("parameters") or {}).get("graphs") if m.get("kind") == "train" else None
    name = graph_label(str(graphs or graph.get("name") or "-"))
    digest = "" if graphs else str(graph.get("hash") or "")
    return (f"{name} [{digest[:8]}]" if digest else name), str(m.get("cluster") or "-")


def setting_label(setting: tuple[str, str], count: int) -> str:
    return f"{setting[0]} on {setting[1]} ({count} runs)"


def default_setting(settings: list[tuple[str, str]], graph_name: str | None, graph_hash: str,
                    cluster: str) -> tuple[str, str]:
    """The group of the current graph and cluster when it has runs, else the one with the newest run."""
    mine = (f"{graph_name} [{graph_hash[:8]}]", cluster)
    return mine if graph_name is not None and mine in settings else settings[0]


def bar_labels(runs: list[Run]) -> list[str]:
    """Bar labels: the placer, with the run's name added where a placer appears more than once."""
    placers = [str(r.meta.get("placer") or "-") for r in runs]
    counts = Counter(placers)
    return [p if counts[p] == 1 else f"{p} · {r.meta.get('name') or r.id}" for p, r in zip(placers, runs,
                                                                                           strict=True)]
