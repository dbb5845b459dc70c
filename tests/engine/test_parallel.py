"""The task mechanism (engine/parallel/tasks.py) in-process and on a local Ray runtime with 2 CPUs.

Ray starts once for this module. The Ray tests check what the issue asks of the mechanism:
a sweep's results are identical to the sequential path's, a worker killed mid-task is
replaced and its task retried with nothing lost in the run store, and Ctrl-C (a real one, on
``placelab sweep`` in a child process) cancels every worker and leaves the sweep ``interrupted``
(and resumable).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import pytest

from engine.errors import SpecError
from engine.parallel.tasks import WORKER_NICENESS, ParallelMap, TaskLost
from engine.store.runs import RunStore
from placelab.runner import compare
from placelab.sweep import SweepSpec, resume_sweep, run_sweep, sweep_rows

GRAPHS = "gen:random?ops=40&seed=1,gen:random?ops=60&seed=2&degree=3"
PLACERS = "single-device,random,critical-path,local-search"
SPEC = SweepSpec.from_specs(GRAPHS, "k80x2,cpu+k80x2", PLACERS, seeds=2, budget=40)
VARYING = ("run_id", "seconds_to_place")  # differ between any two runs of the same sweep


def _results(rows):
    return [{k: v for k, v in r.items() if k not in VARYING} for r in rows]


def _placements(store: RunStore, rows) -> list[dict]:
    return [store.load(r["run_id"]).read_json("placement.json")["devices"] for r in rows]


def _square_plus(x: int, offset: np.ndarray) -> int:
    return x * x + int(offset.sum())


def test_in_process_map_runs_in_order_with_callbacks():
    events = []
    out = ParallelMap().map(_square_plus, [(i, np.array([1, 2])) for i in range(4)],
                         on_start=lambda i: events.append(("start", i)),
                         on_result=lambda i, r: events.append(("done", i, r)))
    assert out == [3, 4, 7, 12]
    assert events == [e for i, r in enumerate(out) for e in (("start", i), ("done", i, r))]


def test_in_process_more_queues_the_tasks_a_result_lets_run():
    """``more`` adds tasks after those already queued; they get the next indices and results."""
    zero, seen = np.array([0]), []
    out = ParallelMap().map(_square_plus, [(1, zero), (2, zero)], on_result=lambda i, r: seen.append(i),
                         more=lambda i, r: [(i + 10, zero)] if i < 2 else [])
    assert out == [1, 4, 100, 121] and seen == [0, 1, 2, 3]


@pytest.mark.parametrize(("kwargs", "words"), [({"workers": 0}, "--workers must be at least 1"),
                                               ({"workers": 2, "address": "auto"}, "not both")])
def test_bad_executor_options_are_one_sentence(kwargs, words):
    with pytest.raises(SpecError, match=words):
        ParallelMap(**kwargs)


def test_importing_placelab_and_the_app_pages_does_not_import_ray():
    code = ("import sys, engine, policies, placelab.cli, placelab.sweep, placelab.runner, dashboard.app_pages.compare;"
            "sys.exit('ray' in sys.modules)")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    assert subprocess.run([sys.executable, "-c", code], env=env, check=False).returncode == 0


# ------------------------------------------------------------------------------------ on Ray
@pytest.fixture(scope="module")
def ray_executor():
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        ray.shutdown()
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import test modules
    with ParallelMap(workers=2) as ex:
        yield ex
    assert not ray.is_initialized()


@pytest.fixture(scope="module")
def sequential(tmp_path_factory):
    store = RunStore(tmp_path_factory.mktemp("sequential"))
    return store, run_sweep(store, SPEC)


def test_ray_map_shares_objects_and_keeps_task_order(ray_executor):
    offset = np.arange(5)  # shared by every task: put into the object store once
    assert ray_executor.map(_square_plus, [(i, offset) for i in range(6)]) == [i * i + 10 for i in range(6)]


def _niceness(_: int) -> int:
    return os.nice(0)


def test_workers_run_at_the_drivers_priority(ray_executor):
    """Ray starts workers at niceness 15, which starves them beside other load
    (docs/lab/2026-11-27-test-suite-under-load.md). The runtime ParallelMap starts adds none to the niceness
    they inherit from the driver."""
    assert WORKER_NICENESS == 0
    assert ray_executor.map(_niceness, [(i,) for i in range(4)]) == [os.nice(0)] * 4


def _step(label: str, wait_for: str | None, touch: str | None) -> tuple[str, bool]:
    """Wait (at most 300 s) for the file ``wait_for`` to appear, then create ``touch``; the label and whether
    the file came."""
    deadline = time.monotonic() + 300
    while wait_for and not os.path.exists(wait_for) and time.monotonic() < deadline:
        time.sleep(0.02)
    if touch:
        Path(touch).touch()
    return label, not wait_for or os.path.exists(wait_for)


def test_ray_more_hands_a_dependent_task_out_while_another_still_runs(ray_executor, tmp_path):
    """The task a finished task lets run starts on the free worker at once, not after the slow task: "slow"
    ends only once "after-fast" has run. No clock decides it (a 3 s nap once did: a busy machine failed it)."""
    marker = str(tmp_path / "after-fast-ran")
    out = ray_executor.map(_step, [("slow", marker, None), ("fast", None, None)],
                           more=lambda i, r: [("after-fast", None, marker)] if r[0] == "fast" else [])
    assert [label for label, _ in out] == ["slow", "fast", "after-fast"]
    assert out[0] == ("slow", True)  # after-fast ran while slow was still running


def test_sweep_and_compare_on_ray_equal_the_sequential_path(ray_executor, sequential, tmp_path):
    seq_store, seq = sequential
    store = RunStore(tmp_path)
    par = run_sweep(store, SPEC, executor=ray_executor)
    assert len(par["results"]) == 2 * 2 * 4 * 2
    assert _results(par["results"]) == _results(seq["results"])
    assert _placements(store, par["results"]) == _placements(seq_store, seq["results"])
    assert [r["placer"] for r in par["results"][:4]] == ["single-device", "single-device", "random", "random"]
    assert par["results"][2]["makespan_s"] != par["results"][3]["makespan_s"]  # seeds 0 and 1 differ
    # every result is stored once, tagged with the sweep; the sweep run indexes them in plan order
    tagged = store.list(tag=f"sweep:{par['run_id']}")
    assert sorted(r.id for r in tagged) == sorted(r["run_id"] for r in par["results"])
    assert sweep_rows(store.load(par["run_id"])) == par["results"]

    g, c = _graph_and_cluster()
    rows_seq = compare(g, c, ["single-device", "random", "m-etf"], seed=3, store=seq_store)
    rows_par = compare(g, c, ["single-device", "random", "m-etf"], seed=3, store=store, executor=ray_executor)
    assert _results(rows_par) == _results(rows_seq)


def _graph_and_cluster():
    from engine.specs import load_cluster, load_graph

    return load_graph(SPEC.graphs[1]), load_cluster("cpu+k80x2")


def _our_task_workers(fn_name: str) -> list[psutil.Process]:
    """Ray worker processes of this test session (descendants of this process) running ``fn_name``."""
    mine = []
    for p in psutil.Process().children(recursive=True):
        try:
            if f"ray::{fn_name}" in " ".join(p.cmdline()):
                mine.append(p)
        except psutil.Error:
            continue
    return mine


def _kill_one_worker(killed: list[int]) -> threading.Thread:
    """A thread that kills (SIGKILL) the first of our Ray workers it finds running a placement task."""

    def kill():
        deadline = time.monotonic() + 300
        while not killed and time.monotonic() < deadline:
            for p in _our_task_workers("place_task"):
                p.kill()
                killed.append(p.pid)
                break
            time.sleep(0.05)

    thread = threading.Thread(target=kill)
    thread.start()
    return thread


def test_killed_worker_task_is_retried_and_nothing_is_lost(ray_executor, sequential, tmp_path):
    spec = SweepSpec.from_specs(GRAPHS, "k80x2", "local-search", seeds=4, budget=400)
    killed: list[int] = []
    killer = _kill_one_worker(killed)
    store = RunStore(tmp_path)
    out = run_sweep(store, spec, executor=ray_executor)
    killer.join()
    assert killed, "no worker was found running a task"
    assert not psutil.pid_exists(killed[0]) or psutil.Process(killed[0]).status() == psutil.STATUS_ZOMBIE
    reference = run_sweep(RunStore(tmp_path / "ref"), spec)
    assert _results(out["results"]) == _results(reference["results"])
    runs = store.list()
    assert sorted(r.meta["status"] for r in runs) == ["done"] * (len(out["results"]) + 1)
    assert len(store.list(kind="compare")) == 2 * 4  # one run per result, no half-written leftovers


def test_a_task_lost_beyond_its_retries_fails_the_sweep_which_resumes(ray_executor, tmp_path):
    spec = SweepSpec.from_specs(GRAPHS, "k80x2", "local-search", seeds=4, budget=400)
    killed: list[int] = []
    killer = _kill_one_worker(killed)
    store = RunStore(tmp_path)
    with pytest.raises(TaskLost, match="its worker died in each of its 1 attempt"):
        run_sweep(store, spec, executor=ParallelMap(workers=2, max_retries=0))  # joins the running runtime
    killer.join()
    (sweep,) = store.list(kind="sweep")
    assert sweep.meta["status"] == "failed" and "worker died" in sweep.meta["error"]
    kept = len(sweep_rows(sweep))
    assert len(store.list(kind="compare")) == kept < len(spec.plan())
    out = resume_sweep(store, sweep.id, executor=ray_executor)
    assert out["ran"] == len(spec.plan()) - kept
    assert _results(out["results"]) == _results(run_sweep(RunStore(tmp_path / "ref"), spec)["results"])


def _cli(*args: str, mark: str) -> subprocess.Popen:
    """``placelab`` in a process group of its own (as a shell runs a foreground job), every process it starts
    (Ray's included: they inherit the environment) tagged by ``PLACELAB_TEST_MARK``."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "PLACELAB_TEST_MARK": mark}
    return subprocess.Popen([sys.executable, "-m", "placelab.cli", *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def _marked(mark: str) -> list[psutil.Process]:
    """The live processes carrying ``PLACELAB_TEST_MARK=mark``."""
    found = []
    for p in psutil.process_iter():
        try:
            if p.environ().get("PLACELAB_TEST_MARK") == mark and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p)
        except psutil.Error:
            continue
    return found


def test_ctrl_c_cancels_workers_and_leaves_the_sweep_interrupted_then_resumable(tmp_path):
    """A real Ctrl-C (SIGINT to the foreground process group) on ``placelab sweep --workers 2``, after its
    first result: exit 130 with one line, the sweep run ``interrupted`` with the results kept so far, no
    process left behind (Ray's workers included); ``--resume`` finishes it with the sequential results.
    The CLI runs in a child process, so the Ctrl-C and Ray's shutdown touch nothing of the test session."""
    spec = SweepSpec.from_specs(GRAPHS, "k80x2", "local-search", seeds=4, budget=1000)
    sweep_args = ["sweep", "-g", GRAPHS, "-c", "k80x2", "--placers", "local-search", "--seeds", "4",
                  "--budget", "1000", "--workers", "2", "--runs-dir", str(tmp_path / "runs")]
    mark = f"ctrl-c-{os.getpid()}-{time.time_ns()}"
    proc = _cli(*sweep_args, mark=mark)
    store = RunStore(tmp_path / "runs")
    deadline = time.monotonic() + 300

    def first_result() -> bool:
        sweeps = store.list(kind="sweep") if store.root.is_dir() else []
        return bool(sweeps) and len(sweep_rows(sweeps[0])) >= 1

    while not first_result():
        assert proc.poll() is None, f"the sweep ended before its first result: {proc.communicate()}"
        assert time.monotonic() < deadline, "no result within 300 s"
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130 and err.strip().splitlines()[-1] == "interrupted", (out, err)
    assert "Traceback" not in err
    (sweep,) = store.list(kind="sweep")
    assert sweep.meta["status"] == "interrupted"
    kept = sweep_rows(sweep)
    assert 1 <= len(kept) < len(spec.plan())
    assert len(store.list(kind="compare")) == len(kept)  # nothing written after the interrupt
    deadline = time.monotonic() + 300
    while _marked(mark) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _marked(mark) == []  # the driver, Ray's services and its (force-cancelled) workers are gone

    resumed = _cli("sweep", "--resume", sweep.id, "--workers", "2", "--runs-dir", str(tmp_path / "runs"), "--json",
                   mark=mark)
    out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    result = json.loads(out)
    assert result["ran"] == len(spec.plan()) - len(kept)
    assert store.load(sweep.id).meta["status"] == "done"
    reference = run_sweep(RunStore(tmp_path / "ref"), spec)
    assert _results(result["results"]) == _results(reference["results"])
    assert len(store.list(kind="compare")) == len(spec.plan())


def test_ctrl_c_while_a_result_is_stored_waits_until_it_is_stored():
    """In-process: a SIGINT arriving inside ``on_result`` is raised when on_result returns, not in it."""
    stored = []

    def store(i: int, result: int) -> None:
        if i == 1:
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
            time.sleep(0.05)  # the handler would run here, halfway through storing
        stored.append(result)

    with pytest.raises(KeyboardInterrupt):
        ParallelMap().map(_square_plus, [(i, np.array([0])) for i in range(4)], on_result=store)
    assert stored == [0, 1]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
