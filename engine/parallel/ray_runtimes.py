"""Local Ray runtimes a killed placelab left behind: recorded when started, stopped on the next start or
by ``placelab ray stop`` (issue #34).

A ``kill -9`` of a driver leaves Ray's ``DashboardAgent`` and ``RuntimeEnvAgent`` running (re-parented to
pid 1; they ignore SIGTERM). :class:`LocalRuntimeRecord` writes a state file per driver that started a
local runtime (its pid and start time, the session, and every Ray process with its start time);
:func:`stop_orphaned_runtimes` stops the processes of every state file whose driver is gone — SIGTERM,
then SIGKILL — and only processes whose pid *and* start time match, so a reused pid is never signalled.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from engine.jsonio import atomic_write_json

__all__ = ["DRIVER_ENV", "LocalRuntimeRecord", "local_runtime_dir", "stop_orphaned_runtimes", "stopped_line"]

DRIVER_ENV = "PLACELAB_RAY_DRIVER"  # set on every process of a local runtime: <driver pid>-<start time>
_STATE_SCHEMA = "placelab.ray-local/1"
_SAME_START_S = 0.01  # start times (psutil create_time) closer than this are the same process
_TERM_WAIT_S = 5.0  # how long a stopped process gets after SIGTERM (and then after SIGKILL)


def local_runtime_dir() -> Path:
    """The folder of the local runtimes' state files: ``$PLACELAB_CACHE_DIR``, else ``$XDG_CACHE_HOME/placelab``,
    else ``~/.cache/placelab``, then ``ray-local`` (the user cache folder of ``engine.executor.calibration``)."""
    base = os.environ.get("PLACELAB_CACHE_DIR")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(xdg, "placelab")
    return Path(base) / "ray-local"


def _psutil():
    try:
        import psutil
    except ImportError:  # Ray ships its own copy, which importing Ray puts on the path
        import importlib

        import ray  # noqa: F401
        psutil = importlib.import_module("psutil")
    return psutil


def _same_process(pid: Any, started: Any):
    """The live process ``pid`` if it started at ``started`` (not a zombie), else None."""
    psutil = _psutil()
    if not isinstance(pid, int) or isinstance(pid, bool) or not isinstance(started, int | float):
        return None
    try:
        p = psutil.Process(pid)
        if abs(p.create_time() - started) > _SAME_START_S or p.status() == psutil.STATUS_ZOMBIE:
            return None
        return p
    except psutil.Error:
        return None


class LocalRuntimeRecord:
    """The state file of the local runtime this process starts (see the module docstring)."""

    def __init__(self) -> None:
        psutil = _psutil()
        me = psutil.Process()
        self.driver = {"pid": me.pid, "create_time": me.create_time()}
        self.mark = f"{me.pid}-{me.create_time():.2f}"
        self.path = local_runtime_dir() / f"{me.pid}.json"
        self._since = time.time()
        self.session_dir: str | None = None
        self._write([])  # before ray.init: a driver killed while it starts Ray is still found by its mark

    @contextlib.contextmanager
    def marking(self) -> Iterator[None]:
        """Ray's head processes, started in the block, inherit the driver's mark (and pass it on)."""
        previous = os.environ.get(DRIVER_ENV)
        os.environ[DRIVER_ENV] = self.mark
        try:
            yield
        finally:
            if previous is None:
                os.environ.pop(DRIVER_ENV, None)
            else:
                os.environ[DRIVER_ENV] = previous

    def record(self) -> None:
        """Write the session's processes as they are now: Ray's head processes and their descendants."""
        psutil = _psutil()
        heads: list[int] = []
        try:
            import ray

            node = ray._private.worker._global_node  # Ray's own list of the processes it started
            self.session_dir = node.get_session_dir_path()
            heads = [info.process.pid for infos in node.all_processes.values() for info in infos]
        except Exception:  # a Ray without these internals: the children started since ray.init
            pass
        if not heads:
            heads = [c.pid for c in psutil.Process().children() if _started_since(c, self._since - 1)]
        found: dict[int, Any] = {}
        for pid in heads:
            try:
                p = psutil.Process(pid)
                for q in (p, *p.children(recursive=True)):
                    found[q.pid] = q
            except psutil.Error:
                continue
        procs = []
        for q in found.values():
            try:
                procs.append({"pid": q.pid, "create_time": q.create_time(), "name": q.name()})
            except psutil.Error:
                continue
        self._write(procs)

    def _write(self, procs: list[dict[str, Any]]) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_json(self.path, {"schema": _STATE_SCHEMA, "driver": self.driver, "mark": self.mark,
                                          "session_dir": self.session_dir, "processes": procs})
        except OSError as exc:  # a read-only cache: Ray runs, only the clean-up after a kill -9 is lost
            warnings.warn(f"cannot record the local Ray runtime in {self.path}: {exc.strerror or exc}", stacklevel=3)

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            self.path.unlink()


def _started_since(p: Any, t: float) -> bool:
    try:
        return p.create_time() >= t
    except Exception:  # psutil.Error: gone
        return False


def stop_orphaned_runtimes(folder: str | os.PathLike | None = None, *, wait_s: float = _TERM_WAIT_S) -> dict[str, Any]:
    """Stop what local runtimes of drivers that are gone left running, and remove their state files.

    For each state file in ``folder`` (default :func:`local_runtime_dir`) whose driver is gone (no
    process with its pid and start time): every recorded process that still runs with its recorded
    start time, and every process carrying the driver's mark (``PLACELAB_RAY_DRIVER``) started after
    the driver, gets SIGTERM, and SIGKILL when still there ``wait_s`` seconds later (Ray's agents ignore
    SIGTERM). A state file that is not one (unreadable, another schema) is removed and named in
    ``problems``. Files of drivers that still run are left alone.

    Returns
    -------
    dict
        ``stopped``: ``{pid, name, driver, signal}`` per process stopped; ``drivers``: the pids of the
        gone drivers whose files were removed; ``running``: how many drivers still run (their runtimes
        are left); ``problems``: one line per state file that could not be used or process not stopped.
    """
    psutil = _psutil()
    folder = Path(folder) if folder is not None else local_runtime_dir()
    out: dict[str, Any] = {"stopped": [], "drivers": [], "running": 0, "problems": []}
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    marks: dict[str, tuple[int, float]] = {}
    doomed: dict[int, tuple[Any, int]] = {}  # pid -> (process, driver pid)
    dead: list[Path] = []  # the state files of gone drivers
    for path in files:
        try:
            state = json.loads(path.read_text(encoding="utf-8"))
            driver = state["driver"]
            pid, started = driver["pid"], driver["create_time"]
            assert state.get("schema") == _STATE_SCHEMA and isinstance(state.get("processes"), list)
        except (OSError, ValueError, KeyError, TypeError, AssertionError):
            out["problems"].append(f"{path}: not a placelab Ray state file; removed")
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        if _same_process(pid, started) is not None:
            out["running"] += 1
            continue
        for rec in state["processes"]:
            p = _same_process(rec.get("pid"), rec.get("create_time")) if isinstance(rec, dict) else None
            if p is not None and p.pid != os.getpid():
                doomed[p.pid] = (p, pid)
        if isinstance(state.get("mark"), str):
            marks[state["mark"]] = (pid, started)
        out["drivers"].append(pid)
        dead.append(path)
    if marks:
        for p in psutil.process_iter():
            try:
                mark = p.environ().get(DRIVER_ENV)
                if mark in marks and p.pid != os.getpid() and p.create_time() >= marks[mark][1] - _SAME_START_S \
                        and p.status() != psutil.STATUS_ZOMBIE:
                    doomed.setdefault(p.pid, (p, marks[mark][0]))
            except psutil.Error:
                continue
    out["stopped"], out["problems"] = _terminate(doomed, wait_s, out["problems"])
    for path in dead:
        with contextlib.suppress(OSError):
            path.unlink()
    return out


def _terminate(doomed: dict[int, tuple[Any, int]], wait_s: float,
               problems: list[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """SIGTERM, then SIGKILL for what is still there after ``wait_s``; what was stopped, by which signal."""
    psutil = _psutil()
    info: dict[int, dict[str, Any]] = {}
    for pid, (p, driver) in doomed.items():
        try:
            info[pid] = {"pid": pid, "name": p.name(), "driver": driver, "signal": "SIGTERM"}
            p.terminate()  # psutil checks the start time first: a reused pid is never signalled
        except psutil.NoSuchProcess:
            info.pop(pid, None)
        except psutil.Error as exc:
            info.pop(pid, None)
            problems.append(f"cannot stop process {pid}: {type(exc).__name__}")
    left = _wait_gone([doomed[pid][0] for pid in info], wait_s)
    for p in left:
        try:
            p.kill()
            info[p.pid]["signal"] = "SIGKILL"
        except psutil.NoSuchProcess:
            pass
        except psutil.Error as exc:
            problems.append(f"cannot stop process {p.pid}: {type(exc).__name__}")
    for p in _wait_gone(left, wait_s):
        problems.append(f"process {p.pid} ({info[p.pid]['name']}) is still there after SIGKILL")
    return list(info.values()), problems


def _wait_gone(procs: list[Any], wait_s: float) -> list[Any]:
    """The processes still running (zombies count as gone: an orphan's parent may never reap it) after at
    most ``wait_s`` seconds."""
    psutil = _psutil()
    deadline = time.monotonic() + wait_s
    while True:
        left = []
        for p in procs:
            try:
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    left.append(p)
            except psutil.Error:
                continue
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)


def stopped_line(out: dict[str, Any]) -> str:
    """One line: what :func:`stop_orphaned_runtimes` stopped."""
    names = sorted({s["name"] for s in out["stopped"]})
    drivers = ", ".join(str(d) for d in out["drivers"][:5]) + (" ..." if len(out["drivers"]) > 5 else "")
    return (f"stopped {len(out['stopped'])} Ray process(es) ({', '.join(names)}) left running by killed "
            f"placelab driver(s) (pid {drivers})")

