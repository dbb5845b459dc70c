"""Reading stored runs for display: labels, table rows, re-simulated schedules, eval results."""

from __future__ import annotations

from typing import Any

import streamlit as st

from engine.errors import RunError
from engine.run_records import PlacementRun, load_placement_run
from engine.runs import Run, RunStore
from engine.schedule import Schedule
from engine.simulator import Simulator

PLACEMENT_KINDS = ("place", "compare")


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


def eval_series(run: Run) -> list[float]:
    """makespan / lower bound over the test graphs of an ``eval`` run.

    Read from ``metrics.results`` (``placelab eval``'s rows) or a ``results.csv`` table with
    ``makespan_s`` and ``lower_bound_s`` columns; an empty list when neither is there.
    """
    rows = (run.meta.get("metrics") or {}).get("results")
    if not rows and "results.csv" in run.files():
        try:
            table = run.read_table("results.csv")
        except RunError:
            return []
        keys = list(table)
        rows = [dict(zip(keys, vals, strict=True)) for vals in zip(*table.values(), strict=True)]
    out = []
    for r in rows or []:
        try:
            ms, lb = float(r["makespan_s"]), float(r.get("lower_bound_s") or 0)
        except (KeyError, TypeError, ValueError):
            continue
        out.append(ms / lb if lb > 0 else ms)
    return out
