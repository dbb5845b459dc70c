"""Background jobs: command lines, a launched process's record and log, and tying jobs to runs."""

import sys
import time
from dataclasses import replace

import pytest

from dashboard.background import (
    JOBS_DIR,
    RAY_ADDRESS_ENV,
    job_of_run,
    launch,
    list_jobs,
    made_by,
    resume_command,
    train_command,
)
from engine.store.runs import RunStore


def wait_exit(root, timeout=300):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        [job] = list_jobs(root)
        if job.returncode is not None:
            return job
        time.sleep(0.05)
    pytest.fail("the job's exit code was not recorded")


def test_train_and_resume_command_lines(tmp_path, monkeypatch):
    monkeypatch.delenv(RAY_ADDRESS_ENV, raising=False)
    cmd = train_command("placeto", "family:nmt:train", "k80x2", episodes=50, params={"groups": 16, "lr": 0.0005},
                        seed=3, name="nmt run", runs_dir=tmp_path)
    assert cmd[:4] == [sys.executable, "-m", "placelab.cli", "train"]
    assert cmd[4:] == ["--placer", "placeto", "--graphs", "family:nmt:train", "--cluster", "k80x2", "--episodes", "50",
                       "--seed", "3", "--param", "groups=16", "--param", "lr=0.0005", "--name", "nmt run", "--save",
                       "--runs-dir", str(tmp_path), "--threads", "1"]
    assert "--name" not in train_command("rnn", "g", "k80x2", episodes=1, params={}, seed=0, name=None,
                                         runs_dir=tmp_path)
    with_workers = train_command("rnn", "g", "k80x2", episodes=1, params={}, seed=0, name=None, runs_dir=tmp_path,
                                 workers=2)
    assert with_workers[-7:-4] == ["--workers", "2", "--save"]
    assert resume_command("RUN", episodes=80, runs_dir=tmp_path)[4:] == [
        "--resume", "RUN", "--episodes", "80", "--runs-dir", str(tmp_path), "--threads", "1"]


def test_trainings_with_workers_join_the_cluster_the_app_is_given(tmp_path, monkeypatch):
    """``PLACELAB_RAY_ADDRESS`` (issue #39): a training with rollout workers runs them on that cluster; one without
    workers, or an app without the setting, is as before."""
    monkeypatch.setenv(RAY_ADDRESS_ENV, " 127.0.0.2:6390 ")
    cmd = train_command("rnn", "g", "k80x2", episodes=1, params={}, seed=0, name=None, runs_dir=tmp_path, workers=2)
    assert cmd[-9:-4] == ["--workers", "2", "--address", "127.0.0.2:6390", "--save"]
    assert "--address" not in train_command("rnn", "g", "k80x2", episodes=1, params={}, seed=0, name=None,
                                            runs_dir=tmp_path)
    monkeypatch.setenv(RAY_ADDRESS_ENV, "")
    assert "--address" not in train_command("rnn", "g", "k80x2", episodes=1, params={}, seed=0, name=None,
                                            runs_dir=tmp_path, workers=2)


def test_launch_records_exit_code_and_log(tmp_path):
    job = launch(tmp_path, [sys.executable, "-c", "import sys; print('loading'); sys.exit('error: no such graph')"],
                 label="doomed")
    assert job.record.parent == tmp_path / JOBS_DIR and job.log.parent == tmp_path / JOBS_DIR
    assert RunStore(tmp_path).list() == [] and RunStore(tmp_path).problems == []  # the job folder is no run
    job = wait_exit(tmp_path)
    assert (job.returncode, job.alive, job.failed, job.label) == (1, False, True, "doomed")
    assert job.log_tail() == "loading\nerror: no such graph"
    assert job.log_tail(1) == "error: no such graph"
    job.forget()
    assert list_jobs(tmp_path) == []


def test_interrupted_job_is_not_failed(tmp_path):
    launch(tmp_path, [sys.executable, "-c", "import sys; sys.exit(130)"], label="stopped")
    assert not wait_exit(tmp_path).failed


def test_a_job_reads_as_alive_until_its_exit_code_is_recorded(tmp_path, monkeypatch):
    """No instant where a job is neither alive nor ended: the record gets the exit code while the child is still
    unreaped (a zombie's pid exists). Reaping first let a page that polled in between count a finished job as
    failed."""
    import dashboard.background as background

    seen = []
    write = background.atomic_write_json

    def spy(path, doc):
        if doc.get("returncode") is not None:
            seen.append((doc["returncode"], background._pid_alive(doc["pid"])))
        write(path, doc)

    monkeypatch.setattr(background, "atomic_write_json", spy)
    launch(tmp_path, [sys.executable, "-c", "import sys; sys.exit(3)"], label="three")
    assert wait_exit(tmp_path).returncode == 3
    assert seen == [(3, True)]  # the pid still existed when the code was written
    launch(tmp_path / "b", [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"],
           label="killed")
    assert wait_exit(tmp_path / "b").returncode == -15  # Popen's convention for a signal


def test_jobs_are_tied_to_the_runs_they_made(tmp_path):
    store = RunStore(tmp_path)
    run = store.create("train", graph_name="g", graph_hash="0", cluster="k80x2", placer="placeto", parameters={},
                       seed=0)  # its pid: this test process
    launch(tmp_path, [sys.executable, "-c", "pass"], label="x")
    wait_exit(tmp_path)
    [job] = list_jobs(tmp_path)
    assert not made_by(job, run)  # another pid
    mine = replace(job, pid=run.meta["pid"], started="2000-01-01T00:00:00+00:00")
    assert made_by(mine, run)
    late = replace(mine, started="2999-01-01T00:00:00+00:00")
    assert not made_by(late, run)  # the run is older than the job: another process that had the same pid
    resume = replace(job, resume_of=run.id)
    assert made_by(resume, run) and job_of_run([job, resume, mine], run) is resume
    assert job_of_run([job], run) is None
