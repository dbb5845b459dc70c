"""Training runs as the Train page shows them: the store's runs and jobs, their rows, progress and status
lines, the command a training runs, and the check of what a visitor asks to train."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dashboard.background import Job, job_of_run, list_jobs, made_by
from dashboard.data.format import fmt_ms
from dashboard.input_guard import shown_spec
from engine.store.runs import Run, RunStore

__all__ = ["ACTIVE", "KEY_PARAMETERS", "STOP_PHRASES", "SUGGESTED_GRAPHS", "TrainingState",
           "command_text", "episode_progress", "graphs_of", "progress_text", "run_row", "shown_status",
           "stop_phrase", "training_state"]

ACTIVE = ("running", "stopping", "resuming")
SUGGESTED_GRAPHS = {
    "gen:random?ops=200&seed=1": "a random DAG of 200 ops — trains in seconds",
    "gen:family-cifar10?index=0&seed=0": "one graph of Placeto's cifar10 family (~900 ops)",
    "gen:family-nmt?index=0&seed=0": "one graph of Placeto's nmt family (~3,400 ops)",
    "family:cifar10:train": "the 16 training graphs of the cifar10 family (Placeto §4.2)",
    "family:nmt:train": "the 16 training graphs of the nmt family (Placeto §4.2)",
    "family:ptb:train": "the 16 training graphs of the ptb family (Placeto §4.2)",
}
#: Hyper-parameters shown above the fold; the others of the placer's config are in an expander.
KEY_PARAMETERS = ("groups", "batch", "samples", "lr", "entropy", "grouping")
#: How a training run ended (``metrics.stop_reason``), in words.
STOP_PHRASES = {"stopped": "stopped on request", "converged": "ended: reward settled (Placeto App. A.7)",
                "episodes": "ended: episode budget reached", "placements": "ended: placement budget reached",
                "seconds": "ended: time budget reached"}


@dataclass
class TrainingState:
    """What the store holds about training: runs (newest first), their jobs and shown status, loose jobs."""

    runs: list[Run]
    jobs: dict[str, Job | None]
    status: dict[str, str]
    starting: list[Job]  # launched, no run created yet
    broken: list[Job]  # ended with an error before creating a run

    @property
    def active(self) -> bool:
        return bool(self.starting) or any(s in ACTIVE for s in self.status.values())


def shown_status(run: Run, job: Job | None) -> str:
    """The run's status with what the page knows besides: ``stopping`` (a stop was requested) and
    ``resuming`` (a resume process is loading but has not taken the run over yet)."""
    from policies.rl.core.run_files import STOP_REQUEST

    if run.status == "running":
        return "stopping" if (run.path / STOP_REQUEST).exists() else "running"
    if job is not None and job.resume_of == run.id and job.alive:
        return "resuming"
    return run.status


def training_state(store: RunStore) -> TrainingState:
    runs = store.list(kind="train")
    jobs = list_jobs(store.root, kind="train")
    by_run = {r.id: job_of_run(jobs, r) for r in runs}
    loose = [j for j in jobs if j.resume_of is None and not any(made_by(j, r) for r in runs)]
    return TrainingState(runs, by_run, {r.id: shown_status(r, by_run[r.id]) for r in runs},
                         starting=[j for j in loose if j.alive], broken=[j for j in loose if j.failed])


def episode_progress(progress: Mapping[str, Any], unit: str = "") -> str:
    """A training run's episodes against its episode budget (``progress`` as the run stores it): ``120 / 300``,
    or ``304 (budget 300, overshot by the last batch)``: the budget is checked after each update, and an
    update trains a whole batch of episodes (per worker), so the last one can run past it. ``unit`` follows
    the count (``120 / 300 episodes``)."""
    done, total = int(progress.get("episodes") or 0), progress.get("episodes_total")
    tail = f" {unit}" if unit else ""
    if not total:
        return f"{done}{tail}"
    if done <= total:
        return f"{done} / {total}{tail}"
    return f"{done}{tail} (budget {total}, overshot by the last batch)"


def graphs_of(run: Run) -> str:
    """The graphs a training run trains on, as the visitor knows them (an upload as ``upload:NAME``)."""
    m = run.meta
    return shown_spec((m.get("parameters") or {}).get("graphs") or (m.get("graph") or {}).get("name") or "")


def run_row(run: Run, status: str) -> dict[str, Any]:
    """A row of the training-runs table."""
    m = run.meta
    p = m.get("progress") or {}
    best = p.get("best_runtime_s")
    return {
        "run": m.get("name") or run.id,
        "status": status,
        "placer": m.get("placer"),
        "graphs": graphs_of(run),
        "cluster": m.get("cluster"),
        "episodes": episode_progress(p),
        "best runtime (ms)": None if best is None else best * 1e3,
        "placements evaluated": p.get("placements_evaluated"),
        "wall (s)": p.get("wall_s"),
        "id": run.id,
    }


def stop_phrase(reason: str) -> str:
    """``metrics.stop_reason`` as a phrase for the status line."""
    return STOP_PHRASES.get(reason, f"ended: {reason}")


def command_text(command: list[str]) -> str:
    """The ``placelab …`` command line of a launched training, shell-quoted so it can be pasted."""
    return shlex.join(["placelab", *command[3:]])


def progress_text(run: Run, status: str) -> tuple[float, str]:
    """The share of the episode budget done and the run's status line."""
    m = run.meta
    p = m.get("progress") or {}
    done, total = int(p.get("episodes") or 0), p.get("episodes_total")
    parts = [status, episode_progress(p, "episodes"),
             f"best {fmt_ms(p.get('best_runtime_s'))}", f"{p.get('placements_evaluated') or 0} placements evaluated",
             f"{float(p.get('wall_s') or 0):.0f} s"]
    if p.get("worker_episodes"):
        parts.append("workers " + " / ".join(str(n) for n in p["worker_episodes"]) + " episodes")
    reason = (m.get("metrics") or {}).get("stop_reason")
    if reason and status not in ACTIVE:
        parts.append(stop_phrase(reason))
    return (min(done / total, 1.0) if total else 0.0), " · ".join(parts)
