"""Measured runs in the app (issue #14): executing a placement, or validating the simulator on a graph
(issue #33), in the background, and reading what was measured.

Execution never runs in the script thread: :func:`start_execution` writes the graph, cluster
and placement into the store's hidden jobs folder and launches ``placelab execute … --save``
in the background (:mod:`dashboard.background`, kind ``execute``); that process scales the
graph to a measurable step, executes it on this machine's devices (:mod:`engine.executor`),
simulates the same scaled graph and stores one run with both schedules. The pages poll the
job and then read the run: ``measured_*`` metrics and ``measured_ops.csv`` /
``measured_transfers.csv`` (:mod:`engine.store.records`), written the same way by
``placelab place/compare --execute --save``. :func:`start_validation` does the same for ``placelab
validate … --save`` (kind ``validate``): the Fidelity page's new validation run.
"""

from __future__ import annotations

import secrets
import shutil
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

from dashboard.background import JOBS_DIR, Job, launch, list_jobs, made_by
from engine.cluster import Cluster, cluster_to_dict
from engine.executor import ExecutionError, check_executable
from engine.graph.compgraph import CompGraph
from engine.graph.io import graph_to_dict
from engine.jsonio import atomic_write_json
from engine.placement import Placement
from engine.store.runs import Run, RunStore

__all__ = ["execute_command", "execution_job", "execution_problem", "failure_message", "has_measurement",
           "measured_summary", "run_title", "start_execution", "start_validation", "validate_command",
           "validation_job"]


def has_measurement(run: Run) -> bool:
    """Whether a stored run holds a measured schedule and its makespan (``--execute``)."""
    return ((run.meta.get("metrics") or {}).get("measured_makespan_s") is not None
            and {"measured_ops.csv", "measured_transfers.csv"} <= set(run.files()))


def measured_summary(metrics: dict[str, Any]) -> dict[str, Any] | None:
    """Simulated and measured makespan of one run's metrics, and how far the simulation is off.

    ``relative_error`` is ``(simulated − measured) / measured`` (positive: the simulator is
    pessimistic), the per-placement quantity whose median ``placelab validate`` reports.
    None when the run was not executed.
    """
    measured = metrics.get("measured_makespan_s")
    if measured is None:
        return None
    simulated = float(metrics["makespan_s"])
    measured = float(measured)
    return {"simulated_s": simulated, "measured_s": measured, "measured_std_s": float(metrics.get("measured_std_s")
                                                                                      or 0.0),
            "repeats": int(metrics.get("measured_repeats") or 1),
            "relative_error": (simulated - measured) / measured if measured > 0 else None,
            "time_scale": metrics.get("time_scale")}


def execute_command(graph: Path, cluster: Path, placement: Path, *, placer: str, repeats: int,
                    step_ms: float | None, name: str | None, runs_dir: Path) -> list[str]:
    """The ``placelab execute`` command line that measures ``placement`` and stores a run in ``runs_dir``.

    ``step_ms`` None runs the graph as it is (time scale 1); otherwise the graph is scaled so
    that one device's share of its compute takes ``step_ms``.
    """
    cmd = [sys.executable, "-m", "placelab.cli", "execute", str(graph), "--cluster", str(cluster),
           "--placement", str(placement), "--placer", placer, "--repeats", str(repeats), "--tag", "app"]
    cmd += ["--time-scale", "1"] if step_ms is None else ["--step-ms", repr(float(step_ms))]
    if name:
        cmd += ["--name", name]
    return [*cmd, "--save", "--runs-dir", str(runs_dir), "--json"]


def validate_command(graph: Path, cluster: Path, *, placements: int, repeats: int, step_ms: float | None,
                     runs_dir: Path) -> list[str]:
    """The ``placelab validate`` command line that executes and simulates ``placements`` placements of ``graph``
    (the first from a few baselines, the rest random) and stores a run of kind ``validate`` in ``runs_dir``."""
    cmd = [sys.executable, "-m", "placelab.cli", "validate", str(graph), "--cluster", str(cluster),
           "--placements", str(placements), "--repeats", str(repeats)]
    cmd += ["--time-scale", "1"] if step_ms is None else ["--step-ms", repr(float(step_ms))]
    return [*cmd, "--save", "--runs-dir", str(runs_dir), "--json"]


def _write_inputs(store: RunStore, docs: dict[str, dict[str, Any]]) -> list[Path]:
    """Write each ``name → document`` into a new inputs folder of the store's jobs folder; their paths."""
    inputs = Path(store.root) / JOBS_DIR / f"inputs-{secrets.token_hex(4)}"
    inputs.mkdir(parents=True)
    for name, doc in docs.items():
        atomic_write_json(inputs / name, doc)
    return [inputs / name for name in docs]


def start_execution(store: RunStore, graph: CompGraph, cluster: Cluster, placement: Placement, *, placer: str,
                    repeats: int, step_ms: float | None, name: str | None) -> Job:
    """Write the inputs into the jobs folder and launch ``placelab execute`` on them in the background."""
    paths = _write_inputs(store, {"graph.json": graph_to_dict(graph), "cluster.json": cluster_to_dict(cluster),
                                  "placement.json": placement.to_dict(graph, cluster)})
    command = execute_command(*paths, placer=placer, repeats=repeats, step_ms=step_ms, name=name,
                              runs_dir=store.root)
    return launch(store.root, command, label=f"execute {placer} on {graph.name}", kind="execute")


def start_validation(store: RunStore, graph: CompGraph, cluster: Cluster, *, placements: int, repeats: int,
                     step_ms: float | None) -> Job:
    """Write the graph and cluster into the jobs folder and launch ``placelab validate`` on them in the
    background."""
    paths = _write_inputs(store, {"graph.json": graph_to_dict(graph), "cluster.json": cluster_to_dict(cluster)})
    command = validate_command(*paths, placements=placements, repeats=repeats, step_ms=step_ms,
                               runs_dir=store.root)
    return launch(store.root, command, label=f"validate on {graph.name}", kind="validate")


def _inputs_of(job: Job) -> Path | None:
    """The inputs folder :func:`_write_inputs` wrote for ``job`` (None for another command)."""
    if "--cluster" not in job.command:
        return None
    folder = Path(job.command[job.command.index("--cluster") + 1]).parent
    return folder if folder.parent.name == JOBS_DIR and folder.name.startswith("inputs-") else None


def _job_state(store: RunStore, job_id: str, kind: str, run_kind: str) -> tuple[str, Job | None, Run | None]:
    """State of a job of ``kind`` whose run is of ``run_kind``: ``running``, ``done`` (with its run), ``failed``
    or ``gone``. A job that ended has its inputs folder removed; the record and log stay until forgotten."""
    job = next((j for j in list_jobs(store.root, kind=kind) if j.id == job_id), None)
    if job is None:
        return "gone", None, None
    if job.alive:
        return "running", job, None
    folder = _inputs_of(job)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
    run = next((r for r in store.list(kind=run_kind) if made_by(job, r)), None)
    if job.returncode == 0 and run is not None:
        return "done", job, run
    return "failed", job, None


def execution_job(store: RunStore, job_id: str) -> tuple[str, Job | None, Run | None]:
    """State of an execution job (:func:`_job_state`); its run is of kind ``place``."""
    return _job_state(store, job_id, "execute", "place")


def validation_job(store: RunStore, job_id: str) -> tuple[str, Job | None, Run | None]:
    """State of a validation job (:func:`_job_state`); its run is of kind ``validate``."""
    return _job_state(store, job_id, "validate", "validate")


def failure_message(job: Job) -> str:
    """One sentence for a failed execution: the CLI's ``error: …`` line, else the last line of its log."""
    lines = [ln for ln in job.log_tail(40).splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("error:")]
    last = (errors or lines or [f"exit code {job.returncode}"])[-1]
    return last.removeprefix("error:").strip()


def run_title(run: Run) -> str:
    m = run.meta
    return f"{m.get('placer')} · {(m.get('graph') or {}).get('name')} · {m.get('cluster')}"


@lru_cache(maxsize=32)
def execution_problem(cluster: Cluster) -> str | None:
    """Why ``cluster`` cannot be executed on this machine (one sentence), or None when it can; checked once
    per cluster (the machine's devices do not change; a GPU check imports torch, which takes seconds)."""
    try:
        check_executable(cluster)
    except ExecutionError as exc:
        return str(exc)
    return None
