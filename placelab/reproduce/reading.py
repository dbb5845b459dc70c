"""Reading the commands' JSON outputs and their stored runs into cells and figure data.

Shared by the reproduction declarations; every function takes the output of one step (what
``placelab … --json`` printed, CONTRACTS §5) and, where it needs more, the run it stored.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import numpy as np

from engine.errors import PlacelabError
from engine.store.runs import RunStore
from placelab.reproduce.core import Cell

__all__ = ["compare_cells", "curve", "device_profile", "error_cell", "execution_cell", "median_ratio", "train_cells"]


def error_cell(row: str, column: str, out: Mapping[str, Any] | None) -> Cell:
    """The cell of a step that failed (its one-line error) or did not run."""
    why = (out or {}).get("error") or "step did not run"
    return Cell(row, column, None, f"error: {why}")


def compare_cells(row: str, out: Mapping[str, Any] | None, columns: Mapping[str, str]) -> list[Cell]:
    """Cells ``column`` ← the makespan of placer ``columns[column]`` in a ``compare`` output."""
    if not out or out.get("error"):
        return [error_cell(row, col, out) for col in columns]
    by_placer = {r["placer"]: r for r in out.get("results", [])}
    cells = []
    for col, placer in columns.items():
        r = by_placer.get(placer)
        if r is None or r.get("error"):
            cells.append(Cell(row, col, None, f"{placer}: {r.get('error') if r else 'not run'}"))
        else:
            cells.append(Cell(row, col, r["makespan_s"], "OOM" if r["oom"] else "", oom=bool(r["oom"])))
    return cells


def _best(out: Mapping[str, Any], runs_dir: str) -> dict[str, Any]:
    """The best placement a stored training run found: makespan, oom, and when it was found — placements
    sampled (the papers' unit, ``docs/budgets.md``; None in runs stored before it was counted) and
    placements evaluated."""
    metrics = RunStore(runs_dir).load(out["run_id"]).meta.get("metrics", {})
    best = next(iter(metrics.get("best_by_graph", {}).values()), None) or {}
    return {"makespan_s": best.get("makespan_s", out.get("best_makespan_s")), "oom": bool(best.get("oom", False)),
            "placements": best.get("placements_sampled"), "evaluated": best.get("placements_evaluated")}


def train_cells(row: str, out: Mapping[str, Any] | None, runs_dir: str, runtime_col: str,
                placements_col: str | None = None) -> list[Cell]:
    """The best makespan (and the placements sampled to find it, counted as the papers count them,
    ``docs/budgets.md``) of a ``train --save`` output."""
    cols = [runtime_col, *([placements_col] if placements_col else [])]
    if not out or out.get("error") or not out.get("run_id"):
        return [error_cell(row, c, out) for c in cols]
    try:
        best = _best(out, runs_dir)
    except PlacelabError as exc:
        return [Cell(row, c, None, f"error: {exc}") for c in cols]
    note = f"{out.get('episodes')} episodes, {out.get('placements_evaluated')} placements evaluated"
    cells = [Cell(row, runtime_col, best["makespan_s"], ("OOM; " if best["oom"] else "") + note, oom=best["oom"])]
    if placements_col:
        p = best["placements"]
        why = ("placements sampled until the best, one per episode (docs/budgets.md)" if p is not None
               else "placements sampled not recorded (a run stored before they were counted)")
        cells.append(Cell(row, placements_col, float(p) if p is not None else None, f"{note}; {why}"))
    return cells


def execution_cell(row: str, column: str, out: Mapping[str, Any] | None, found_by: Mapping[str, Any] | None = None,
                   scale: float = 1.0, runs_dir: str | None = None) -> Cell:
    """Mean ± std of a ``simulate --sim-param runs=N`` output (the repeated executions of one placement).

    ``found_by`` is the output of the step that found the placement (``place`` or ``train``): its
    episodes and placements evaluated go into the note, and, when it is a stored training run in
    ``runs_dir``, the placements evaluated until its best was found. ``scale`` converts seconds to
    the table's unit.
    """
    if not out or out.get("error"):
        return error_cell(row, column, out)
    mean, std = out.get("makespan_mean_s", out["makespan_s"]), out.get("makespan_std_s", 0.0)
    note = f"mean ± std of {out.get('runs', 1)} executions"
    if found_by and found_by.get("placements_evaluated") is not None:
        note += f"; {found_by.get('episodes')} episodes, {found_by['placements_evaluated']} placements evaluated"
        if runs_dir and found_by.get("run_id"):
            try:
                at = _best(found_by, runs_dir)["evaluated"]
            except PlacelabError:
                at = None
            if at is not None:
                note += f", the best after {at}"
    oom = bool(out.get("oom"))
    return Cell(row, column, mean * scale, ("OOM; " if oom else "") + note, oom=oom, std=std * scale)


def curve(out: Mapping[str, Any] | None, runs_dir: str) -> dict[str, list]:
    """The learning curve (``learning_curve.csv`` columns) of a stored training run; empty on error."""
    if not out or out.get("error") or not out.get("run_id"):
        return {}
    try:
        return RunStore(runs_dir).load(out["run_id"]).read_table("learning_curve.csv")
    except PlacelabError:
        return {}


def device_profile(run_id: str, runs_dir: str) -> dict[str, dict[str, float]]:
    """Per device: compute seconds by phase (forward / backward / update / other) and memcpy seconds.

    From the run's ``schedule_ops.csv`` (one row per op interval) and its ``memcpy_s`` metric:
    the data of Mirhoseini Fig. 8–9 (load and memory-copy profiles).
    """
    run = RunStore(runs_dir).load(run_id)
    ops = run.read_table("schedule_ops.csv")
    out: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for dev, phase, s, e in zip(ops["device"], ops["phase"], ops["start_s"], ops["end_s"], strict=True):
        out[dev][phase if phase in ("forward", "backward", "update") else "other"] += float(e) - float(s)
    for dev, t in run.meta.get("metrics", {}).get("memcpy_s", {}).items():
        out[dev]["memcpy"] += float(t)
    return {d: dict(v) for d, v in sorted(out.items())}


def median_ratio(num: list[float], den: list[float]) -> float | None:
    """Median of the per-graph ratios ``num[i] / den[i]`` (None when there are none)."""
    pairs = [a / b for a, b in zip(num, den, strict=True) if b]
    return float(np.median(pairs)) if pairs else None
