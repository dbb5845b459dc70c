"""Run placers: place, simulate, report and store (shared by the CLI and the app)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from engine.cluster import Cluster
from engine.errors import PlacelabError
from engine.graph.compgraph import CompGraph
from engine.limits import MAX_COUNT, check_at_most, check_seed, check_simulations
from engine.parallel.tasks import ParallelMap
from engine.placement import Placement
from engine.sim.schedule import Schedule
from engine.sim.simulator import Simulator
from engine.store.records import (
    SINGLE_DEVICE_KEYS,
    estimate_warning,
    placement_file_bytes,
    placement_metrics,
    save_placement_run,
    single_device_metrics,
)
from engine.store.runs import RunStore
from policies.base import budget_words
from policies.registry import PLACERS, make_placer, placer_parameters

__all__ = ["PlaceFailed", "PlaceResult", "compare", "place_and_simulate", "place_task", "result_row", "search_budget",
           "single_device_makespan", "store_result", "with_measurement", "with_single_device"]



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
    #: One-time start-up of the placer in this process (JIT compilation), not part of ``seconds_to_place``.
    startup_seconds: float = 0.0
    files: dict[str, bytes] | None = None  # the run's files, encoded by the task (place_task(encode=True))


@dataclass(frozen=True)
class PlaceFailed:
    """A placer that does not apply to a graph or cluster: its one-line reason."""

    placer: str
    error: str


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
                       progress: Callable[[int, int, str], None] | None = None,
                       measure: Measure | None = None) -> PlaceResult:
    """Place ``graph`` with a registered placer, simulate it, and store a run if ``store`` is given.

    With ``measure``, the placement is also executed; its measured schedule is stored beside
    the simulated one and its metrics (``measured_makespan_s``, ...) join the run's. A ``store`` that cannot be
    written is refused before the placer runs. The metrics hold the single-device placer's makespan on the same
    graph and cluster and the ratio to it (:func:`with_single_device`).
    """
    if store is not None:
        store.check_writable()
    res = _place(graph, cluster, placer, seed, budget, params, progress)
    single = res.metrics["makespan_s"] if placer == SINGLE_DEVICE else single_device_makespan(graph, cluster)
    res = with_single_device(res, single)
    if measure is not None:
        res = with_measurement(graph, res, measure)
    return store_result(store, graph, cluster, res, seed=seed, budget=budget, params=params, kind=kind,
                        tags=tags) if store is not None else res


def place_task(graph: CompGraph, cluster: Cluster, placer: str, seed: int, budget: int | None,
               params: dict[str, Any] | None, encode: bool = False) -> PlaceResult | PlaceFailed:
    """One placer run as an independent task (see :mod:`engine.parallel.tasks`): nothing is stored.

    A placer that does not apply (it raises a placelab error) is an answer, not a failure:
    it comes back as :class:`PlaceFailed` with the one-line message. With ``encode`` the task
    also encodes the run's files (graph, cluster, placement, schedule tables: most of the cost
    of storing a run) so that the driver, which stores every result, only writes bytes.
    """
    try:
        res = _place(graph, cluster, placer, seed, budget, params, None)
    except PlacelabError as exc:
        return PlaceFailed(placer, str(exc))
    return replace(res, files=placement_file_bytes(graph, cluster, res.placement, res.schedule)) if encode else res


#: The reference placer of the ×single-device ratio.
SINGLE_DEVICE = "single-device"


def single_device_makespan(graph: CompGraph, cluster: Cluster) -> float | None:
    """The single-device placer's simulated makespan (s) on ``graph`` and ``cluster``, the reference of the
    ×single-device ratio, whether or not that placer is among those run (one placement and one simulation);
    None where it does not apply."""
    try:
        placement = make_placer(SINGLE_DEVICE).place(graph, cluster)
    except PlacelabError:
        return None
    return Simulator(graph, cluster).run(placement).makespan


def with_single_device(res: PlaceResult, single_device_s: float | None) -> PlaceResult:
    """``res`` with ``single_device_makespan_s`` and ``ratio_to_single_device`` in its metrics
    (:func:`engine.store.records.single_device_metrics`)."""
    return replace(res, metrics={**res.metrics, **single_device_metrics(res.metrics["makespan_s"], single_device_s)})


def with_measurement(graph: CompGraph, res: PlaceResult, measure: Measure) -> PlaceResult:
    """``res`` with its placement executed by ``measure``: the measured schedule and metrics added."""
    measured, measured_metrics = measure(graph, res.placement)
    return replace(res, measured=measured, metrics={**res.metrics, **measured_metrics}, files=None)


def store_result(store: RunStore, graph: CompGraph, cluster: Cluster, res: PlaceResult, *, seed: int,
                 budget: int | None, params: dict[str, Any] | None, kind: str,
                 tags: list[str] | None = None) -> PlaceResult:
    """Store a placement result as a finished run; the result with its ``run_id``.

    A result whose task encoded the run's files (``files``) is stored by writing those bytes
    (each atomically); otherwise the files are encoded here.
    """
    parameters = {**(params or {}), "budget": budget}
    startup = {"startup_s": res.startup_seconds} if res.startup_seconds else {}
    if res.files is None:
        measured_metrics = {**startup, **{k: v for k, v in res.metrics.items()
                                          if k.startswith("measured_") or k in SINGLE_DEVICE_KEYS}}
        run = save_placement_run(store, graph, cluster, res.placement, res.schedule, placer=res.placer,
                                 parameters=parameters, seed=seed, seconds_to_place=res.seconds_to_place,
                                 kind=kind, tags=tags, extra_metrics=measured_metrics, measured=res.measured)
        return replace(res, run_id=run.id)
    run = store.create(kind, graph_name=graph.name, graph_hash=graph.content_hash, cluster=cluster.name,
                       placer=res.placer, parameters=parameters, seed=seed, tags=list(tags or []))
    with run:
        for name, data in res.files.items():
            run.write_bytes(name, data)
        run.finish("done", {**res.metrics, "seconds_to_place": res.seconds_to_place, **startup})
    return replace(res, run_id=run.id, files=None)


def _place(graph, cluster, placer, seed, budget, params, progress) -> PlaceResult:
    check_seed("seed", seed)  # one range for every placer (KaHIP and METIS take a C int)
    if budget is not None:
        check_at_most("budget", budget, MAX_COUNT, "MAX_COUNT")
        check_simulations("budget", budget, cluster.simulation.runs)
    p = make_placer(placer, **(params or {}))
    startup = warm_up(placer, cluster, params)
    t0 = time.perf_counter()
    placement = p.place(graph, cluster, seed=seed, budget=budget, progress=progress)
    seconds = time.perf_counter() - t0
    schedule = Simulator(graph, cluster).run(placement)
    return PlaceResult(placer, placement, schedule,
                       placement_metrics(graph, cluster, schedule, placement.predicted_makespan_s, placement.note),
                       seconds, None,
                       startup_seconds=startup)


def compare(graph: CompGraph, cluster: Cluster, placers: list[str] | None = None, *, seed: int = 0,
            store: RunStore | None = None, progress: Callable[[str], None] | None = None,
            measure: Measure | None = None, executor: ParallelMap | None = None) -> list[dict[str, Any]]:
    """Run each placer (default: every registered one) and report a row per placer.

    A placer that does not apply to this graph or cluster (it raises a placelab error)
    gets a row with its one-line ``error`` instead of numbers; the others still run. An
    unknown placer name raises :class:`~engine.errors.SpecError` before any placer runs.
    The placers run as independent tasks on ``executor`` (default: in this process, one
    after another); each result is stored as it arrives. A ``store`` that cannot be written (read-only, full) is
    refused before any placer runs.

    Every row also has the placer's own estimate (``predicted_makespan_s``, its ``estimate_warning`` where it is
    far off the simulated makespan) and ``ratio_to_single_device``: the single-device placer's makespan is
    simulated once here, whether or not it is among ``placers``. A search placer's row states its budget
    (``search_budget``).
    """
    names = list(PLACERS) if placers is None else placers
    for name in names:  # bad names are bad input: refuse them before any placer runs or is stored
        if name not in PLACERS:
            make_placer(name)
    if store is not None:
        store.check_writable()
    single = single_device_makespan(graph, cluster)
    rows: list[dict[str, Any]] = [{} for _ in names]

    def started(i: int) -> None:
        if progress:
            progress(f"placing with {names[i]} ...")

    def finished(i: int, res: PlaceResult | PlaceFailed) -> None:
        if isinstance(res, PlaceFailed):
            rows[i] = {"placer": res.placer, "error": res.error}
            return
        res = with_single_device(res, single)
        if measure is not None:  # executed here, in the driver, one placement at a time
            res = with_measurement(graph, res, measure)
        if store is not None:
            res = store_result(store, graph, cluster, res, seed=seed, budget=None, params=None, kind="compare")
        rows[i] = result_row(res)
        if PLACERS[res.placer].family == "search":
            rows[i]["search_budget"] = search_budget(res.placer, seed=seed)

    encode = store is not None and measure is None  # a measured run is stored with its measured tables
    (executor or ParallelMap()).map(place_task, [(graph, cluster, n, seed, None, None, encode) for n in names],
                                 on_start=started, on_result=finished)
    return rows


def result_row(res: PlaceResult) -> dict[str, Any]:
    """The row ``compare`` reports for one placer's result (the single-device fields None unless the result has
    them: :func:`with_single_device`)."""
    m = res.metrics
    return {"placer": res.placer, "makespan_s": m["makespan_s"],
            "predicted_makespan_s": m.get("predicted_makespan_s"),
            "estimate_warning": estimate_warning(m["makespan_s"], m.get("predicted_makespan_s")),
            "placer_note": m.get("placer_note"),
            "lower_bound_s": m["lower_bound_s"],
            "ratio_to_lower_bound": m.get("ratio_to_lower_bound"),  # None where the lower bound is 0
            "single_device_makespan_s": m.get("single_device_makespan_s"),
            "ratio_to_single_device": m.get("ratio_to_single_device"),
            "peak_memory_bytes": m["peak_memory_bytes"], "oom": m["oom"],
            "communication_bytes": m["communication_bytes"], "seconds_to_place": res.seconds_to_place,
            "run_id": res.run_id, **{k: v for k, v in m.items() if k.startswith("measured_")}}


#: Parameters that hold a search's time limit (s), by the names the search placers use.
_SECONDS_PARAMETERS = ("time_limit_s", "seconds", "max_seconds", "time_budget_s", "wall_s")


def search_budget(placer: str, *, seed: int | None, params: dict[str, Any] | None = None,
                  budget: int | None = None) -> str:
    """One line stating a search placer's budget as it ran: its evaluations and seconds and the seed, from its
    parameters (the defaults, with ``params`` and ``budget`` as a run stores them); e.g.
    ``local-search: 2,000 evaluations, no time limit, seed 0``. ``budget`` counts evaluations (as
    ``local-search`` takes it). A search with neither an evaluation nor a time parameter states its parameters."""
    p = {**placer_parameters(placer), **(params or {})}
    evaluations = budget if budget is not None else p.get("evaluations")
    seconds_key = next((k for k in _SECONDS_PARAMETERS if k in p), None)
    has_evaluations = "evaluations" in p or budget is not None
    if has_evaluations and seconds_key is not None:
        return budget_words(placer, evaluations, p[seconds_key], seed)
    parts = []
    if has_evaluations:
        parts.append("no evaluation limit" if evaluations is None else f"{int(evaluations):,} evaluations")
    if seconds_key is not None:
        parts.append("no time limit" if p[seconds_key] is None else f"{float(p[seconds_key]):g} s")
    if not parts:
        parts.append(", ".join(f"{k}={v}" for k, v in p.items() if k != "budget") or "no parameters")
    parts.append(f"seed {seed}")
    return f"{placer}: {', '.join(parts)}"
