"""The Place page's data: placer parameters typed into the form, the results in hand as rows and as runs.

Every result is kept as a run in the scratch store (:func:`dashboard.stores.scratch_store`) as soon as it is
computed, so that the link can name it and a reload brings it back (:func:`results_from_runs`); *Save as
run* stores it in the user's store under a name.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pandas as pd

from dashboard import input_guard
from dashboard.data.format import UNKNOWN
from dashboard.data.runs import replay, run_metrics
from engine.cluster import Cluster
from engine.errors import PlacelabError
from engine.graph.compgraph import CompGraph
from engine.store.records import SINGLE_DEVICE_KEYS, save_placement_run
from engine.store.runs import Run, RunStore

__all__ = ["DEFAULT_PLACERS", "HIDDEN_PARAMETERS", "SCRATCH_KEPT", "UNKNOWN_SIZES", "checked_params",
           "default_run_name", "keep_result", "parse_param", "prune_scratch", "result_from_run", "results_from_runs",
           "results_table", "save_result"]

DEFAULT_PLACERS = ("single-device", "round-robin")
#: Placer parameters without a widget: the app reads runs from its own store only (dashboard/input_guard.py).
HIDDEN_PARAMETERS = ("runs_dir",)
#: Results kept in the scratch store (the newest; older ones are deleted when new ones come).
SCRATCH_KEPT = 200


def parse_param(text: str) -> Any:
    """A parameter typed as text: JSON when it parses (numbers, lists, true/false), else the string."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def checked_params(chosen: list[str], settings: dict[str, dict]) -> tuple[dict[str, dict], list[str]]:
    """Each placer's parameters as it runs them (dashboard/input_guard.py), and one error line per refused placer."""
    checked: dict[str, dict] = {}
    errors: list[str] = []
    for name in chosen:
        s = settings[name]
        try:
            checked[name] = input_guard.placer_params(name, s["seed"], s["budget"], s["params"])
        except (PlacelabError, TypeError, ValueError) as exc:
            errors.append(f"{name}: {exc}")
    return checked, errors


#: The Place table's size columns, shown as "unknown" where the graph's source gives no sizes.
UNKNOWN_SIZES = {"peak memory (GB)": UNKNOWN, "communication (MB)": UNKNOWN}


def results_table(results: list[dict], memory_known: bool = True) -> pd.DataFrame:
    """One row per placer, numbers with their unit in the header as Compare's table
    (:func:`dashboard.data.runs.comparison_row`); no sizes (None) on a graph whose source gives none
    (``memory_known``: :data:`UNKNOWN_SIZES` shows them as "unknown")."""
    return pd.DataFrame([{
        "placer": r["placer"],
        "makespan (ms)": r["metrics"]["makespan_s"] * 1e3,
        "own estimate (ms)": None if r["metrics"].get("predicted_makespan_s") is None
        else r["metrics"]["predicted_makespan_s"] * 1e3,
        "lower bound (ms)": r["metrics"]["lower_bound_s"] * 1e3,
        "ratio to lower bound": r["metrics"]["ratio_to_lower_bound"],
        "ratio to single device": r["metrics"].get("ratio_to_single_device"),
        "peak memory (GB)": max(r["metrics"]["peak_memory_bytes"].values()) / 1e9 if memory_known else None,
        "OOM": r["metrics"]["oom"],
        "communication (MB)": r["metrics"]["communication_bytes"] / 1e6 if memory_known else None,
        "seconds to place": r["seconds"],
        "start-up (s)": r.get("startup"),
        "run": r["run_id"] or "",
    } for r in results])


def default_run_name(placer: str, graph_name: str, cluster_name: str) -> str:
    """The name a saved run gets unless the user types another: ``placer · graph · cluster``."""
    return f"{placer} · {graph_name} · {cluster_name}"


def save_result(store: RunStore, graph: CompGraph, cluster: Cluster, r: dict, tags: list[str]) -> Run:
    """Store result ``r`` (a dict of the Place page's results) as a placement run of ``store``, with its ratio to
    single-device."""
    extra = {k: r["metrics"][k] for k in SINGLE_DEVICE_KEYS if k in r["metrics"]}
    if r.get("startup") is not None:
        extra["startup_s"] = r["startup"]
    return save_placement_run(store, graph, cluster, r["placement"], r["schedule"], placer=r["placer"],
                              parameters={**r["params"], "budget": r["budget"]}, seed=r["seed"],
                              seconds_to_place=r["seconds"], tags=tags, extra_metrics=extra)


def keep_result(store: RunStore, graph: CompGraph, cluster: Cluster, r: dict) -> str:
    """Keep result ``r`` in the scratch ``store``; its run id (the link names it)."""
    return save_result(store, graph, cluster, r, ["app", "scratch"]).id


def prune_scratch(store: RunStore, kept: int = SCRATCH_KEPT) -> None:
    """Delete all but the newest ``kept`` results of the scratch store (what cannot be deleted stays)."""
    for run in store.list()[kept:]:
        try:
            store.delete(run.id)
        except (PlacelabError, OSError):
            continue


def result_from_run(run: Run, saved: bool) -> tuple[CompGraph, Cluster, dict]:
    """The graph, cluster and result dict (as the Place page holds it) of a stored placement run; ``saved``:
    it is in the user's store (its id shows as the saved run), else in the scratch store."""
    pr, schedule = replay(run)
    m = run.meta
    metrics = run_metrics(run)
    params = {k: v for k, v in (m.get("parameters") or {}).items() if k != "budget"}
    # the placer's estimate is a metric (the placement file holds devices only): saved again, it stays
    placement = replace(pr.placement, predicted_makespan_s=metrics.get("predicted_makespan_s"))
    return pr.graph, pr.cluster, {
        "placer": m.get("placer"), "params": params, "seed": m.get("seed"),
        "budget": (m.get("parameters") or {}).get("budget"), "placement": placement, "schedule": schedule,
        "metrics": metrics, "seconds": metrics.get("seconds_to_place") or 0.0, "startup": metrics.get("startup_s"),
        "run_id": run.id if saved else None, "kept_id": None if saved else run.id}


def results_from_runs(runs: list[Run], scratch: RunStore) -> tuple[dict | None, list[str]]:
    """The results in hand (``{"graph", "cluster", "results"}``) of stored placement runs, as a link names
    them; those on another graph or cluster than the first are left out, with a warning line each."""
    state: dict | None = None
    warnings: list[str] = []
    for run in runs:
        try:
            graph, cluster, r = result_from_run(run, saved=run.path.parent.resolve() != scratch.root.resolve())
        except (PlacelabError, OSError, ValueError, KeyError, TypeError) as exc:
            warnings.append(f"Ignored the link's result {run.id}: {exc}")
            continue
        if state is None:
            state = {"graph": graph, "cluster": cluster, "results": []}
        elif graph.content_hash != state["graph"].content_hash or cluster != state["cluster"]:
            warnings.append(f"Ignored the link's result {run.id}: it is on another graph or cluster than the first")
            continue
        state["results"].append(r)
    return state, warnings
