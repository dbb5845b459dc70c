"""Processes the app starts in the background (``placelab train … --save``, ``placelab execute … --save``),
one record and log each.

Training never runs in the Streamlit script thread (DESIGN, "The app"): the Train page
launches ``python -m placelab.cli train …`` in a new session, so it outlives a page reload
or an app restart, writes its run to the run store, and the page polls the store.

Each launch leaves a *job* in the store's hidden ``.jobs/`` folder (RunStore skips names
starting with a dot): ``<job>.json`` (pid, command, start time, the run it resumes, exit
code once known) and ``<job>.log`` (the process's stdout and stderr). A run is tied to the
job that made it by the pid the run records (same host, created after the job started); a
resume job names its run. A job's ``kind`` (``train``, ``execute``) keeps each page to its own
jobs; a record without one is a training job. A job that fails before creating its run (bad spec, import
error) is visible only through its record and log.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.jsonio import atomic_write_json
from engine.store.runs import Run

if TYPE_CHECKING:  # pragma: no cover
    from policies.rl.core.request import TrainingRequest

__all__ = ["JOBS_DIR", "RAY_ADDRESS_ENV", "Job", "job_of_run", "launch", "launch_training", "list_jobs", "made_by",
           "ray_address", "resume_command", "train_command"]

JOBS_DIR = ".jobs"
#: The Ray cluster (``HOST:PORT``) whose CPUs the app's trainings with rollout workers use (``--address``), read
#: when a training is launched; unset or empty: a local runtime per training (docs/guide/app.md, issue #39).
#: The job inherits the app's environment, so the cluster's token variables (``RAY_AUTH_MODE``,
#: ``RAY_AUTH_TOKEN``...) set for the app reach it too.
RAY_ADDRESS_ENV = "PLACELAB_RAY_ADDRESS"
_REPO_ROOT = Path(__file__).resolve().parents[1]
#: A run created this long before its job's recorded start still counts as the job's (clock rounding).
_CLOCK_SLACK = timedelta(seconds=1)


@dataclass(frozen=True)
class Job:
    """One launched training process (see the module docstring)."""

    id: str
    pid: int
    command: list[str]
    started: str  # ISO time, UTC
    label: str
    resume_of: str | None
    returncode: int | None
    record: Path
    kind: str = "train"

    @property
    def log(self) -> Path:
        return self.record.with_suffix(".log")

    @property
    def alive(self) -> bool:
        """Still running: no exit code recorded and the process exists."""
        return self.returncode is None and _pid_alive(self.pid)

    @property
    def failed(self) -> bool:
        """Ended with an error: not done (0) nor interrupted (the CLI's 130, or killed by SIGINT while importing)."""
        return self.returncode not in (None, 0, 130, -signal.SIGINT)

    def log_tail(self, lines: int = 15, max_bytes: int = 16_384) -> str:
        """The last ``lines`` lines of the process's output ('' when there is none)."""
        try:
            with open(self.log, "rb") as f:
                f.seek(max(0, f.seek(0, os.SEEK_END) - max_bytes))
                text = f.read().decode("utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.replace("\r", "\n").strip().splitlines()[-lines:])

    def forget(self) -> None:
        """Delete the job's record, log and training request (the run it made, if any, stays)."""
        self.record.unlink(missing_ok=True)
        self.log.unlink(missing_ok=True)
        if "--request" in self.command[:-1]:
            request = Path(self.command[self.command.index("--request") + 1])
            if request.parent == self.record.parent:
                request.unlink(missing_ok=True)

    def cancel(self) -> None:
        """Interrupt the process (SIGINT: a training that already runs checkpoints and ends as interrupted)."""
        if self.alive:
            os.kill(self.pid, signal.SIGINT)


def ray_address() -> str | None:
    """The Ray cluster the app's rollout workers run on: ``$PLACELAB_RAY_ADDRESS`` when set, else None (a local
    Ray runtime)."""
    return os.environ.get(RAY_ADDRESS_ENV, "").strip() or None


def train_command(placer: str, graphs: str, cluster: str, *, episodes: int, params: Mapping[str, Any], seed: int,
                  name: str | None, runs_dir: Path, workers: int = 0) -> list[str]:
    """The ``placelab train`` command line that trains ``placer`` and stores the run in ``runs_dir``
    (``workers`` > 0: its rollouts on that many Ray workers, on the cluster ``$PLACELAB_RAY_ADDRESS`` names
    when set)."""
    cmd = [sys.executable, "-m", "placelab.cli", "train", "--placer", placer, "--graphs", graphs,
           "--cluster", cluster, "--episodes", str(episodes), "--seed", str(seed)]
    for key, value in params.items():
        cmd += ["--param", f"{key}={value}"]
    if name:
        cmd += ["--name", name]
    if workers:
        cmd += ["--workers", str(workers)]
        if ray_address():
            cmd += ["--address", ray_address()]
    return [*cmd, "--save", "--runs-dir", str(runs_dir), "--threads", "1"]


def launch_training(runs_dir: Path, request: TrainingRequest, *, label: str) -> Job:
    """Start ``placelab train --request FILE`` on ``request`` (checked, written beside the job records): the
    process trains it as it is, without parsing or checking it again."""
    folder = Path(runs_dir) / JOBS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"request-{secrets.token_hex(6)}.json"
    request.write(path)
    command = [sys.executable, "-m", "placelab.cli", "train", "--request", str(path), "--threads", "1"]
    return launch(runs_dir, command, label=label)


def resume_command(run_id: str, *, episodes: int, runs_dir: Path) -> list[str]:
    """The command line that continues training run ``run_id`` up to ``episodes`` episodes in all."""
    return [sys.executable, "-m", "placelab.cli", "train", "--resume", run_id, "--episodes", str(episodes),
            "--runs-dir", str(runs_dir), "--threads", "1"]


def launch(runs_dir: Path, command: list[str], *, label: str, resume_of: str | None = None,
           kind: str = "train") -> Job:
    """Start ``command`` in the background (own session, output to the job's log) and record the job."""
    folder = Path(runs_dir) / JOBS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.now(UTC)
    job_id = f"{now:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"
    record = folder / f"{job_id}.json"
    # one torch thread per job: several jobs share the machine's cores (DESIGN, "Scale")
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TF_CPP_MIN_LOG_LEVEL": "2"}
    with open(record.with_suffix(".log"), "wb") as log:
        proc = subprocess.Popen(command, cwd=_REPO_ROOT, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    doc = {"id": job_id, "pid": proc.pid, "command": command, "started": now.isoformat(), "label": label,
           "resume_of": resume_of, "returncode": None, "kind": kind}
    atomic_write_json(record, doc)
    # wait for the child here so that it never lingers as a zombie (which would read as alive)
    threading.Thread(target=_record_exit, args=(proc, record), daemon=True, name=f"placelab-job-{job_id}").start()
    return _job(doc, record)


def list_jobs(runs_dir: Path, kind: str | None = None) -> list[Job]:
    """Every recorded job of the store (of ``kind`` only, when given), newest first; unreadable records
    are skipped."""
    folder = Path(runs_dir) / JOBS_DIR
    if not folder.is_dir():
        return []
    jobs = []
    for record in folder.glob("*.json"):
        try:
            jobs.append(_job(json.loads(record.read_text(encoding="utf-8")), record))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return sorted((j for j in jobs if kind is None or j.kind == kind), key=lambda j: (j.started, j.id), reverse=True)


def made_by(job: Job, run: Run) -> bool:
    """Whether ``job`` started or resumed ``run``: a resume job names its run; a new training's run
    records the job's pid (on this host) and was created after the job started."""
    if job.resume_of is not None:
        return job.resume_of == run.id
    meta = run.meta
    if meta.get("pid") != job.pid or meta.get("host") != socket.gethostname():
        return False
    try:
        return datetime.fromisoformat(meta["created"]) + _CLOCK_SLACK >= datetime.fromisoformat(job.started)
    except (KeyError, TypeError, ValueError):
        return False


def job_of_run(jobs: Iterable[Job], run: Run) -> Job | None:
    """The newest of ``jobs`` (newest first) that made or resumed ``run``; None for a run started elsewhere."""
    return next((job for job in jobs if made_by(job, run)), None)


def _job(doc: dict[str, Any], record: Path) -> Job:
    return Job(id=str(doc["id"]), pid=int(doc["pid"]), command=list(doc["command"]), started=str(doc["started"]),
               label=str(doc.get("label") or doc["id"]), resume_of=doc.get("resume_of"),
               returncode=doc.get("returncode"), record=record, kind=str(doc.get("kind") or "train"))


def _record_exit(proc: subprocess.Popen, record: Path) -> None:
    """Write the child's exit code into its record, then reap it.

    The code is read with ``WNOWAIT``, which leaves the child a zombie: until the record holds the code, the pid
    still exists and :attr:`Job.alive` stays true. Reaping first opened a window in which the job read as
    neither alive nor ended, so a page polling at that moment counted a finished job as failed (seen under
    load: an execution whose log ended with its JSON)."""
    code = _exit_code(proc.pid)
    try:
        doc = json.loads(record.read_text(encoding="utf-8"))
        atomic_write_json(record, {**doc, "returncode": code if code is not None else proc.wait()})
    except (OSError, ValueError):  # the record was forgotten meanwhile
        pass
    proc.wait()


def _exit_code(pid: int) -> int | None:
    """The exit code of child ``pid`` once it ended, in :class:`subprocess.Popen`'s convention (``-N`` when
    killed by signal N), leaving it unreaped; None where ``waitid`` cannot tell (then the caller reaps)."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    except (OSError, AttributeError):  # AttributeError: a platform without waitid
        return None
    if info is None:
        return None
    return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # alive, owned by someone else
        return True
    return True
