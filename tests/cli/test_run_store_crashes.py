"""Crashes and concurrency in the run store (issue 18): kill -9 during train and compare, resume,
two resumes at once, delete while training, a reused pid, concurrent rename / update / delete.

The CLI runs in child processes (``kill -9`` is real); the store-level races run in forked
processes. Everything lives in a temporary run store.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.errors import RunError
from engine.store.records import load_placement_run
from engine.store.runs import Run, RunStore

REPO = Path(__file__).resolve().parents[2]
GRAPH = "gen:random?ops=12&seed=1"


def start(*args: str, cwd: Path) -> subprocess.Popen:
    # train imports TensorFlow through torch's TensorBoard writer; these keep its start-up lines off stderr
    env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3", "TF_ENABLE_ONEDNN_OPTS": "0"}
    return subprocess.Popen([sys.executable, "-m", "placelab.cli", *args], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def wait_for(predicate, timeout: float = 300, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def curve_episodes(run_dir: Path) -> list[int]:
    lines = (run_dir / "learning_curve.csv").read_text().splitlines()[1:]
    return [int(line.split(",", 1)[0]) for line in lines if line.count(",") > 5]


def checkpoint_episodes(run_dir: Path) -> int:
    import torch

    return json.loads(torch.load(run_dir / "checkpoint.pt", weights_only=True)["state"])["episodes"]


def only_run(store: RunStore) -> Run:
    runs = store.list()
    assert len(runs) == 1, store.problems
    return runs[0]


@pytest.mark.slow
def test_kill_during_train_then_resume_with_a_clean_curve(tmp_path):
    store = RunStore(tmp_path / "runs")
    trainer = start("train", "--placer", "placeto", "-g", GRAPH, "-c", "k80x2", "--episodes", "100000", "--save",
                    "--threads", "1", "--runs-dir", "runs", cwd=tmp_path)
    # the first update writes a checkpoint; wait until the curve has run well past it
    wait_for(lambda: store.root.is_dir() and store.list() and (only_run(store).path / "checkpoint.pt").exists()
             and len(curve_episodes(only_run(store).path)) >= 24, what="training progress")
    run = only_run(store)
    assert run.status == "running"
    code, out, err = finish(start("runs", "delete", run.id, "--runs-dir", "runs", cwd=tmp_path))
    assert (code, err) == (2, f"error: run {run.id} is running; stop it before deleting it\n")
    trainer.send_signal(signal.SIGKILL)
    trainer.wait()
    assert store.load(run.id).status == "interrupted"
    killed_at = curve_episodes(run.path)
    assert killed_at == list(range(1, len(killed_at) + 1))

    # pid reuse: the stored pid now belongs to a live process that is not running the run
    meta = json.loads((run.path / "run.json").read_text())
    (run.path / "run.json").write_text(json.dumps({**meta, "pid": os.getpid()}))
    assert store.load(run.id).status == "interrupted"

    # two resumes at once: exactly one runs, the other is refused with one line
    saved = checkpoint_episodes(run.path)
    assert saved < len(killed_at)  # episodes after the checkpoint were logged: resume must cut them
    total = saved + 8
    a, b = (start("train", "--resume", run.id, "--episodes", str(10 * total), "--runs-dir", "runs", cwd=tmp_path)
            for _ in range(2))
    wait_for(lambda: a.poll() is not None or b.poll() is not None, what="one resume to give up")
    loser, winner = (a, b) if a.poll() is not None else (b, a)
    code, _, err = finish(loser)
    assert code == 2 and err.count("\n") == 1, err
    assert "running" in err or "still training" in err, err
    wait_for(lambda: store.load(run.id).status == "running", what="the winner to start")
    winner.send_signal(signal.SIGKILL)
    winner.wait()

    code, out, err = finish(start("train", "--resume", run.id, "--episodes", str(total), "--json",
                                  "--runs-dir", "runs", cwd=tmp_path))
    assert code == 0, err
    assert json.loads(out)["episodes"] == total
    # before: the episodes between the checkpoint and the kill were logged twice
    assert curve_episodes(run.path) == list(range(1, total + 1))
    assert store.load(run.id).status == "done"
    code, _, _ = finish(start("runs", "delete", run.id, "--runs-dir", "runs", cwd=tmp_path))
    assert code == 0 and not run.path.exists() and store.list() == []


@pytest.mark.slow
def test_kill_during_compare_keeps_finished_runs(tmp_path):
    store = RunStore(tmp_path / "runs")
    placers = "single-device,round-robin,critical-path,m-etf,local-search,heft,metis"
    proc = start("compare", "gen:random?ops=3000&seed=2", "-c", "k80x4", "--placers", placers, "--runs-dir", "runs",
                 cwd=tmp_path)
    wait_for(lambda: store.root.is_dir() and sum(r.status == "done" for r in store.list()) >= 2,
             what="two finished placements")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    runs = store.list()
    assert store.problems == []
    for run in runs:
        assert run.status in ("done", "interrupted")
        if run.status == "done":
            pr = load_placement_run(run)  # every finished run is whole and replayable
            assert pr.graph.num_ops == 3000 and run.meta["metrics"]["makespan_s"] > 0
    code, out, err = finish(start("runs", "list", "--json", "--runs-dir", "runs", cwd=tmp_path))
    assert code == 0 and err == "" and len(json.loads(out)["runs"]) == len(runs)


# ---- store-level races (forked processes) -------------------------------------------------

def _renamer(root: str, run_id: str, n: int) -> None:
    store = RunStore(root)
    for i in range(n):
        store.rename(run_id, f"name-{i}")


def _progress_writer(root: str, run_id: str, n: int) -> None:
    run = RunStore(root).load(run_id)
    for i in range(n):
        run.update(progress={"i": i})  # what a trainer does while someone renames its run


def _place_and_delete(root: str, n: int) -> None:
    store = RunStore(root)
    for _ in range(n):
        r = store.create("place", graph_name="g", graph_hash="h", cluster="c", placer="p", parameters={}, seed=0)
        r.write_json("placement.json", {"a": 1})
        r.finish("done")
        store.list()
        store.delete(r.id)


def test_concurrent_rename_update_place_delete_lose_nothing(tmp_path):
    store = RunStore(tmp_path / "runs")
    run = store.create("place", graph_name="g", graph_hash="h", cluster="c", placer="p", parameters={}, seed=0)
    run.finish("done")
    n = 300
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_renamer, args=(str(store.root), run.id, n)),
             ctx.Process(target=_progress_writer, args=(str(store.root), run.id, n)),
             ctx.Process(target=_place_and_delete, args=(str(store.root), 40)),
             ctx.Process(target=_place_and_delete, args=(str(store.root), 40))]
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    meta = store.load(run.id).meta
    # before: a progress write that read run.json before a rename put the old name back
    assert (meta["name"], meta["progress"]) == (f"name-{n - 1}", {"i": n - 1})
    assert [r.id for r in store.list()] == [run.id] and store.problems == []
    assert sorted(p.name for p in store.root.iterdir()) == [run.id]  # no half-deleted folders


def _hold_run(root: str, run_id: str, ready, done) -> None:
    RunStore(root).load(run_id).update(status="running", pid=os.getpid())
    ready.set()
    done.wait(60)


def test_a_running_run_cannot_start_twice_or_be_deleted(tmp_path):
    store = RunStore(tmp_path / "runs")
    run = store.create("train", graph_name="g", graph_hash="h", cluster="c", placer="p", parameters={}, seed=0)
    run.finish("interrupted")
    ctx = multiprocessing.get_context("spawn")
    ready, done = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold_run, args=(str(store.root), run.id, ready, done))
    holder.start()
    try:
        assert ready.wait(120)
        assert store.load(run.id).status == "running"
        with pytest.raises(RunError, match="is running in another process"):
            store.load(run.id).update(status="running")
        with pytest.raises(RunError, match="is running; stop it before deleting it"):
            store.delete(run.id)
    finally:
        done.set()
        holder.join(60)
    # the holder ended without finishing the run: it reads interrupted and can be taken over
    assert store.load(run.id).status == "interrupted"
    store.load(run.id).update(status="running")
    assert store.load(run.id).status == "running"
    store.load(run.id).finish("done")
    assert store.delete(run.id) == run.id
