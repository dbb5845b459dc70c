"""Run placers: place, simulate, report and store (shared by the CLI and the app)."""

from __future__ import annotations

import contextlib
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


@dataclass(frozen=True)
class PlaceResult:
    placer: str
    placement: Placement
    schedule: Schedule
    metrics: dict[str, Any]
    seconds_to_place: float
    run_id: str | None
    #: One-time start-up of the placer in this process (JIT compilation), not part of ``seconds_to_place``.
    startup_seconds: float = 0.0


#: Placers already started in this process (their JIT-compiled code is warm).
_WARM: set[str] = set()


def warm_up(placer: str, cluster: Cluster, params: dict[str, Any] | None = None) -> float:
    """Start ``placer`` once on a tiny graph so that one-time costs (numba JIT compilation) are paid
    outside the timed placement; returns the seconds it took (0 when already warm, or for learned
    placers, whose start-up is their training and is timed as such). Failures here are ignored: the
    real placement reports them."""
    if placer in _WARM or PLACERS[placer].family == "learned":
        return 0.0
    from engine.generators import random_dag

    _WARM.add(placer)
    t0 = time.perf_counter()
    # a placer that refuses the tiny graph (any error) is still timed honestly on the real one
    with contextlib.suppress(Exception):
        make_placer(placer, **(params or {})).place(random_dag(ops=12, seed=0), cluster, seed=0, budget=None)
    return time.perf_counter() - t0


def place_and_simulate(graph: CompGraph, cluster: Cluster, placer: str, *, seed: int = 0,
                       budget: int | None = None, params: dict[str, Any] | None = None,
                       store: RunStore | None = None, kind: str = "place", tags: list[str] | None = None,
                       progress: Callable[[int, int, str], None] | None = None) -> PlaceResult:
    """Place ``graph`` with a registered placer, simulate it, and store a run if ``store`` is given."""
    p = make_placer(placer, **(params or {}))
    startup = warm_up(placer, cluster, params)
    t0 = time.perf_counter()
    placement = p.place(graph, cluster, seed=seed, budget=budget, progress=progress)
    seconds = time.perf_counter() - t0
    schedule = Simulator(graph, cluster).run(placement)
    run_id = None
    if store is not None:
        run = save_placement_run(store, graph, cluster, placement, schedule, placer=placer,
                                 parameters={**(params or {}), "budget": budget}, seed=seed,
                                 seconds_to_place=seconds, kind=kind, tags=tags,
                                 extra_metrics={"startup_s": startup} if startup else None)
        run_id = run.id
    return PlaceResult(placer, placement, schedule, placement_metrics(graph, cluster, schedule), seconds, run_id,
                       startup)


def compare(graph: CompGraph, cluster: Cluster, placers: list[str] | None = None, *, seed: int = 0,
            store: RunStore | None = None, progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
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
            res = place_and_simulate(graph, cluster, name, seed=seed, store=store, kind="compare")
        except PlacelabError as exc:
            rows.append({"placer": name, "error": str(exc)})
            continue
        m = res.metrics
        rows.append({"placer": name, "makespan_s": m["makespan_s"], "lower_bound_s": m["lower_bound_s"],
                     "peak_memory_bytes": m["peak_memory_bytes"], "oom": m["oom"],
                     "communication_bytes": m["communication_bytes"], "seconds_to_place": res.seconds_to_place,
                     "run_id": res.run_id})
    return rows
