"""A ``placelab validate`` run as the Fidelity page shows it: the statistics per prediction, the notes that
explain its rows, the predicted-vs-measured series, and a placement measured and simulated in any mode.

The metric keys of a validate run (``placelab/fidelity.py``, ``placelab validate``) are read here only.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from dashboard.data.runs import is_example
from engine.cluster import cluster_from_dict
from engine.executor.calibration import describe_bus
from engine.executor.fidelity import load_measured_schedule
from engine.sim.schedule import Schedule
from engine.sim.simulator import Simulator
from engine.store.records import PlacementRun, load_placement_run
from engine.store.runs import Run, RunStore

__all__ = ["EXTRA_PREDICTIONS", "PER_RUN", "RECALIBRATED", "REPLAY", "notes", "run_label", "scatter_series",
           "statistics_rows", "timeline_modes", "timeline_schedules"]

RECALIBRATED, PER_RUN, REPLAY = "recalibrated", "recalibrated_per_run", "replay"
#: Predictions besides the simulation modes: metrics key → their row's (and the scatter's) name.
EXTRA_PREDICTIONS = {RECALIBRATED: "recalibrated", PER_RUN: "recalibrated per run", REPLAY: "replay"}


def run_label(run: Run) -> str:
    """``name · graph · cluster``, marked ``example ·`` for a bundled (read-only) run."""
    m = run.meta
    mark = "example · " if is_example(run) else ""
    return f"{mark}{m.get('name') or run.id} · {(m.get('graph') or {}).get('name') or '-'} · {m.get('cluster')}"


def statistics_rows(metrics: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per simulation mode, per other prediction the run has, and one for the repeats (run against
    run of the same placement; its pair count goes in the notes, not in a column the modes leave empty)."""
    rows = [{"mode": mode, **s} for mode, s in metrics.get("fidelity", {}).items()]
    rows += [{"mode": name, **metrics[key]} for key, name in EXTRA_PREDICTIONS.items() if metrics.get(key)]
    repeats = metrics.get("repeat_agreement")
    if repeats:
        rows.append({"mode": "repeats", **{k: v for k, v in repeats.items() if k != "repeat_pairs"}})
    return rows


def notes(run: Run) -> list[str]:
    """What the rows mean for this run, one caption each: replay, recalibrated, the copy bus, the repeats, the
    noise ceiling, and why a mode is missing."""
    m, cluster = run.meta.get("metrics") or {}, run.meta.get("cluster")
    out = []
    if m.get(REPLAY):
        out.append(f"replay: {cluster}'s own simulation given each run's measured op and copy durations — the error "
                   "of the simulator's rules alone; the rest of a mode's error comes from the durations it predicts "
                   f"(ops ran {m['op_time_ratio_median']:.2f}× their predicted time, median over placements).")
    if m.get(RECALIBRATED):
        out.append(f"recalibrated: {cluster} with the copy link and per-op cost that the calibration's probes "
                   "measured before every round and after the last (their median), simulated in its own mode: "
                   "calibrated over the same minutes as the measurements."
                   + (" recalibrated per run: each run simulated on the probe before its round and on the probe "
                      "after it, interpolated by when it ran between them (one machine state can give way to "
                      "another within minutes)." if m.get(PER_RUN) else ""))
    if m.get("copy_bus_capacity_probes"):
        out.append("copy bus: " + describe_bus(m["copy_bus_capacity_probes"], m.get("cluster_copy_bus_capacity"))
                   + ".")
    repeats = m.get("repeat_agreement")
    if repeats:
        out.append("repeats: one run of each placement predicting another run of it (median over "
                   f"{repeats['repeat_pairs']} pair(s) of runs). The modes predict the mean of all runs, which is "
                   "steadier, so a mode can score above this row; one far below it is limited by its model, not by "
                   "the noise.")
    noise = m.get("noise_ceiling")
    if noise:
        sample = (run.meta.get("parameters") or {}).get("sample", "random")
        out.append(f"noise ceiling: given how much the runs of one placement differ, an error-free prediction would "
                   f"rank these placements ({sample} sample) at Spearman about {noise['spearman_ceiling']:.3f} "
                   f"against the mean of their {noise['repeats']} runs; a mode near it is limited by the noise, not "
                   "by its model.")
    out += [f"{mode}: {why}" for mode, why in m.get("unavailable_modes", {}).items()]
    return out


def scatter_series(table: dict[str, list]) -> dict[str, list]:
    """Prediction name → predicted makespans (s) of ``fidelity.csv``'s placements: each simulation mode,
    ``recalibrated``, and the run-by-run predictions (``recalibrated per run``, ``replay``)."""
    simulated = {c[len("simulated_"):-2]: table[c] for c in table if c.startswith("simulated_")}
    per_run = simulated.pop(PER_RUN, None)
    others = {EXTRA_PREDICTIONS[PER_RUN]: per_run} if per_run is not None else {}
    if "replayed_s" in table:
        others[EXTRA_PREDICTIONS[REPLAY]] = table["replayed_s"]
    return {**simulated, **others}


def timeline_modes(table: dict[str, list]) -> list[str]:
    """The predictions a timeline can be drawn in: one cluster each (a run-by-run prediction has none)."""
    return [c[len("simulated_"):-2] for c in table if c.startswith("simulated_") and c != f"simulated_{PER_RUN}_s"]


@lru_cache(maxsize=8)
def _timeline(root: str, run_id: str, updated: str, mode: str) -> tuple[PlacementRun, Schedule, Schedule]:
    run = RunStore(root).load(run_id)
    pr = load_placement_run(run)
    if mode == RECALIBRATED:  # the run's own cluster file, in its own mode
        cluster = cluster_from_dict(run.read_json("recalibrated_cluster.json"), source=f"run {run.id}")
        simulated = Simulator(pr.graph, cluster).run(pr.placement)
    else:
        simulated = Simulator(pr.graph, pr.cluster, mode=mode).run(pr.placement)
    return pr, load_measured_schedule(run, pr.graph, pr.cluster), simulated


def timeline_schedules(run: Run, mode: str) -> tuple[PlacementRun, Schedule, Schedule]:
    """Placement 0 of the run: its graph and cluster, its measured schedule, and its schedule simulated in
    ``mode`` (``recalibrated``: on the run's recalibrated cluster), cached per run and mode."""
    return _timeline(str(run.path.parent), run.id, str(run.meta.get("updated")), mode)

