"""A driver killed hard (``kill -9``): no Ray processes left behind, no orphan runs after ``sweep --resume``.

Issue #34, item 9. Killing a driver that runs a local Ray runtime left raylet's
``ray::DashboardAgent`` and ``ray::RuntimeEnvAgent`` running (they ignore SIGTERM); the next local
runtime (or ``placelab ray stop``) must stop them, going by the state file the driver wrote
(``engine/parallel/ray_runtimes.py``), and never touch a process whose start time is not the recorded one. A
driver killed between storing a combination's run and appending its row to ``sweep.csv`` left a run
the table does not index, and ``--resume`` ran that combination again: two runs for one cell.

The kills are deterministic: the driver (a child process) SIGKILLs itself at the N-th row it appends,
or while it stores its N-th run, so no test depends on timing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from engine.parallel.ray_runtimes import local_runtime_dir, stop_orphaned_runtimes
from engine.store.runs import RunStore
from placelab.sweep import SweepSpec, resume_sweep, run_sweep, sweep_rows

ROOT = Path(__file__).resolve().parents[2]
GRAPHS, CLUSTERS, PLACERS, SEEDS = "gen:random?ops=20&seed=1", "k80x2", "single-device,random,critical-path", 2
SPEC = SweepSpec.from_specs(GRAPHS, CLUSTERS, PLACERS, seeds=SEEDS)
VARYING = ("run_id", "seconds_to_place")

#: A sweep driver that SIGKILLs itself at its N-th row or stored run (its docstring); the fuzz soak uses it too.
DRIVER = Path(__file__).with_name("sweep_kill_driver.py")


def _env(cache: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "PLACELAB_CACHE_DIR": str(cache)}


def _kill_driver(tmp_path: Path, where: str, nth: int, workers: int) -> tuple[RunStore, int]:
    """Run the self-killing driver to its end; the store and the driver's pid."""
    proc = subprocess.Popen([sys.executable, str(DRIVER), where, str(nth), str(tmp_path / "runs"), str(workers),
                             GRAPHS, CLUSTERS, PLACERS, str(SEEDS)],
                            env=_env(tmp_path / "cache"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, out, err)
    return RunStore(tmp_path / "runs"), proc.pid


def _cells_once(store: RunStore, sweep_id: str) -> list[dict]:
    """Assert one row per combination and one run per row, nothing else tagged with the sweep; the rows."""
    rows = sweep_rows(store.load(sweep_id))
    assert [r["task"] for r in rows] == list(range(len(SPEC.plan())))
    tagged = store.list(tag=f"sweep:{sweep_id}")
    assert sorted(r.id for r in tagged) == sorted(r["run_id"] for r in rows)
    assert {r.status for r in tagged} == {"done"}
    return rows


def _same_results(rows: list[dict], reference: list[dict]) -> None:
    strip = [{k: v for k, v in r.items() if k not in VARYING} for r in rows]
    assert strip == [{k: v for k, v in r.items() if k not in VARYING} for r in reference]


@pytest.mark.parametrize("where", ["row", "finish"])
def test_resume_after_kill_9_leaves_one_run_and_one_row_per_combination(tmp_path, where):
    """In-process driver killed at its 3rd result: the orphan run (done, or with run.json still ``running``)
    is deleted by ``--resume``, which runs its combination again; the results equal an undisturbed sweep's."""
    store, _ = _kill_driver(tmp_path, where, 3, workers=0)
    (sweep,) = store.list(kind="sweep")
    assert sweep.status == "interrupted"
    kept = sweep_rows(sweep)
    tagged = store.list(tag=f"sweep:{sweep.id}")
    orphans = [r for r in tagged if r.id not in {row["run_id"] for row in kept}]
    assert len(kept) == 2 and len(orphans) == 1  # the failure: a run the table does not index
    if where == "finish":
        assert orphans[0]._stored["status"] == "running" and orphans[0].status == "interrupted"
    out = resume_sweep(store, sweep.id)
    assert out["orphans_deleted"] == [orphans[0].id]
    assert out["ran"] == len(SPEC.plan()) - 2
    rows = _cells_once(store, sweep.id)
    _same_results(rows, run_sweep(RunStore(tmp_path / "ref"), SPEC)["results"])
    assert resume_sweep(store, sweep.id)["orphans_deleted"] == []  # a second resume has nothing to drop


def _session_alive(state: dict) -> list[psutil.Process]:
    """The recorded processes of a state file that still run (same pid and start time, not a zombie)."""
    alive = []
    for rec in state["processes"]:
        try:
            p = psutil.Process(rec["pid"])
            if abs(p.create_time() - rec["create_time"]) < 0.01 and p.status() != psutil.STATUS_ZOMBIE:
                alive.append(p)
        except psutil.Error:
            continue
    return alive


@pytest.mark.slow
def test_kill_9_of_a_ray_driver_leaves_no_agents_and_no_orphan_after_resume(tmp_path):
    """A sweep on 2 Ray workers, its driver SIGKILLed at its 2nd row: the state file names the session's
    processes (the agents among them); ``placelab sweep --resume --workers 2`` stops those still running
    (one ``warning:`` line) before it starts its own runtime, deletes the orphan run, and leaves one run and
    one row per combination, no state file and no process of either session."""
    pytest.importorskip("ray")
    store, driver = _kill_driver(tmp_path, "row", 2, workers=2)
    cache = tmp_path / "cache"
    state_file = cache / "ray-local" / f"{driver}.json"
    state = json.loads(state_file.read_text())
    names = {p["name"] for p in state["processes"]}
    assert {"raylet", "gcs_server", "ray::DashboardAgent", "ray::RuntimeEnvAgent"} <= names, names
    (sweep,) = store.list(kind="sweep")
    resumed = subprocess.run([sys.executable, "-m", "placelab.cli", "sweep", "--resume", sweep.id, "--workers", "2",
                              "--runs-dir", str(tmp_path / "runs"), "--json"], env=_env(cache), text=True,
                             capture_output=True, timeout=600, check=False)
    assert resumed.returncode == 0, resumed.stderr
    out = json.loads(resumed.stdout)
    assert len(out["orphans_deleted"]) == 1
    stopped = [line for line in resumed.stderr.splitlines() if "left running by killed placelab driver" in line]
    assert len(stopped) <= 1 and all(line.startswith("warning: stopped ") for line in stopped), resumed.stderr
    assert _session_alive(state) == []
    assert list((cache / "ray-local").iterdir()) == []  # the killed driver's file and the resume's own are gone
    _same_results(_cells_once(store, sweep.id), run_sweep(RunStore(tmp_path / "ref"), SPEC)["results"])


@pytest.mark.slow
def test_stop_orphaned_runtimes_kills_every_recorded_process_of_a_killed_ray_driver(tmp_path, monkeypatch):
    """A driver that only started a local runtime, SIGKILLed from outside: the clean-up leaves none of the
    session's recorded processes running and removes the state file."""
    pytest.importorskip("ray")
    code = ("import sys, time; from engine.parallel.tasks import ParallelMap; ex = ParallelMap(workers=2); ex.start(); "
            "print('ready', flush=True); time.sleep(600)")
    proc = subprocess.Popen([sys.executable, "-c", code], env=_env(tmp_path), stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        state = json.loads((tmp_path / "ray-local" / f"{proc.pid}.json").read_text())
        assert _session_alive(state)
    finally:
        proc.kill()
        proc.wait(timeout=60)
    monkeypatch.setenv("PLACELAB_CACHE_DIR", str(tmp_path))
    deadline = time.monotonic() + 300  # let what dies with the driver die: the clean-up must stop the rest
    out = stop_orphaned_runtimes()
    assert out["drivers"] == [proc.pid] and out["problems"] == []
    while _session_alive(state) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _session_alive(state) == []
    assert list((tmp_path / "ray-local").iterdir()) == []


def _state(folder: Path, name: str, driver: tuple[int, float], procs: list[tuple[int, float]], mark: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(json.dumps({"schema": "placelab.ray-local/1",
                                "driver": {"pid": driver[0], "create_time": driver[1]}, "mark": mark,
                                "session_dir": None,
                                "processes": [{"pid": p, "create_time": t, "name": "x"} for p, t in procs]}))
    return path


def test_a_reused_pid_is_never_killed(tmp_path):
    """A state file whose driver pid is alive with another start time (a reused pid) is a gone driver's, and
    its recorded processes, this test process with a wrong start time, are not killed: the file is removed."""
    me = psutil.Process()
    wrong = me.create_time() - 1000.0
    path = _state(tmp_path, str(me.pid), (me.pid, wrong), [(me.pid, wrong)], mark=f"never-{time.time_ns()}")
    out = stop_orphaned_runtimes(tmp_path, wait_s=1)
    assert out["stopped"] == [] and out["drivers"] == [me.pid] and out["problems"] == []
    assert not path.exists() and me.is_running()


def test_a_running_driver_keeps_its_runtime_and_a_bad_file_is_removed(tmp_path):
    """The state file of a driver that runs (this process, right start time) is left, with its processes; a file
    that is not a state file is removed with one problem line."""
    me = psutil.Process()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        started = psutil.Process(child.pid).create_time()
        live = _state(tmp_path, str(me.pid), (me.pid, me.create_time()), [(child.pid, started)], mark="live")
        (tmp_path / "junk.json").write_text("{not json")
        out = stop_orphaned_runtimes(tmp_path, wait_s=1)
        assert out["running"] == 1 and out["stopped"] == [] and out["drivers"] == []
        assert len(out["problems"]) == 1 and "junk.json" in out["problems"][0]
        assert live.exists() and not (tmp_path / "junk.json").exists() and child.poll() is None
    finally:
        child.kill()
        child.wait(timeout=60)


def test_default_folder_is_the_user_cache(monkeypatch, tmp_path):
    monkeypatch.delenv("PLACELAB_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert local_runtime_dir() == tmp_path / "placelab" / "ray-local"
    monkeypatch.setenv("PLACELAB_CACHE_DIR", str(tmp_path / "c"))
    assert local_runtime_dir() == tmp_path / "c" / "ray-local"
