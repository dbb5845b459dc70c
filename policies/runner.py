"""Run placers: place, simulate, report and store (shared by the CLI and the app)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.cluster import Cluster
from engine.errors import PlacelabError
from engine.graph import CompGraph
from engine.placement import Placement
from engine.run_records import placement_metrics, save_placement_run
from engine.runs import RunStore
from engine.schedule import Schedule
from engine.simulator import Simulator
from policies.base import PLACERS, make_placer

__all__ = ["PlaceResult", "compare", "place_and_simulate"]


Measure = Callable[[CompGraph, Placement], tuple[Schedule, dict[str, Any]]]
"""Executes a placement for real: its measured schedule and metrics (``placelab.cli_exec``)."""


@dataclass(frozen=True)
class PlaceResult:
    placer: str
    placement: Placement
    schedule: Schedule
    metrics: dict[str, Any]
    seconds_to_place: float
    run_id: str | None
    measured: Schedule | None = None


def place_and_simulate(graph: CompGraph, cluster: Cluster, placer: str, *, seed: int = 0,
                       budget: int | None = None, params: dict[str, Any] | None = None,
                       store: RunStore | None = None, kind: str = "place", tags: list[str] | None = None,
                       progress: Callable[[int, int, str], None] | None = None,
                       measure: Measure | None = None) -> PlaceResult:
    """Place ``graph`` with a registered placer, simulate it, and store a run if ``store`` is given.

    With ``measure``, the placement is also executed; its measured schedule is stored beside
    the simulated one and its metrics (``measured_makespan_s``, ...) join the run's.
    """
    p = make_placer(placer, **(params or {}))
    t0 = time.perf_counter()
    placement = p.place(graph, cluster, seed=seed, budget=budget, progress=progress)
    seconds = time.perf_counter() - t0
    schedule = Simulator(graph, cluster).run(placement)
    measured, measured_metrics = measure(graph, placement) if measure else (None, {})
    run_id = None
    if store is not None:
        run = save_placement_run(store, graph, cluster, placement, schedule, placer=placer,
                                 parameters={**(params or {}), "budget": budget}, seed=seed,
                                 seconds_to_place=seconds, kind=kind, tags=tags, extra_metrics=measured_metrics,
                                 measured=measured)
        run_id = run.id
    metrics = {**placement_metrics(graph, cluster, schedule), **measured_metrics}
    return PlaceResult(placer, placement, schedule, metrics, seconds, run_id, measured)


def compare(graph: CompGraph, cluster: Cluster, placers: list[str] | None = None, *, seed: int = 0,
            store: RunStore | None = None, progress: Callable[[str], None] | None = None,
            measure: Measure | None = None) -> list[dict[str, Any]]:
    """Run each placer (default: every registered one) and report a row per placer.

    A placer that does not apply to this graph or cluster (it raises a placelab error)
    gets a row with its one-line ``error`` instead of numbers; the others still run. An
    unknown placer name raises :class:`~engine.errors.SpecError` before any placer runs.
    """
    names = list(PLACERS) if placers is None else placers
    for name in names:  # bad names are bad input: refuse them before any placer runs or is stored
        if name not in PLACERS:
            make_placer(name)
    rows = []
    for name in names:
        if progress:
            progress(f"placing with {name} ...")
        try:
            res = place_and_simulate(graph, cluster, name, seed=seed, store=store, kind="compare", measure=measure)
        except PlacelabError as exc:
            rows.append({"placer": name, "error": str(exc)})
            continue
        m = res.metrics
        rows.append({"placer": name, "makespan_s": m["makespan_s"], "lower_bound_s": m["lower_bound_s"],
                     "peak_memory_bytes": m["peak_memory_bytes"], "oom": m["oom"],
                     "communication_bytes": m["communication_bytes"], "seconds_to_place": res.seconds_to_place,
                     "run_id": res.run_id, **{k: v for k, v in m.items() if k.startswith("measured_")}})
    return rows
