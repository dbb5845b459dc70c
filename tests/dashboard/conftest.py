"""Runs directories for the page tests: an empty one, one holding real placement runs, one adding
training, eval and experiment runs."""

import json
import os
import shutil
import signal

import pytest

from engine.generators import random_dag
from engine.presets import PRESETS
from engine.store.runs import RunStore
from placelab.runner import place_and_simulate


@pytest.fixture(autouse=True)
def _no_bundled_examples(tmp_path, monkeypatch):
    """Pages see only the test's own runs unless a test adds examples (``example_runs``)."""
    monkeypatch.setenv("PLACELAB_EXAMPLE_RUNS_DIR", str(tmp_path / "no-examples"))


@pytest.fixture
def example_runs(stored_runs, tmp_path, monkeypatch):
    """``stored_runs`` plus a bundled-example store holding one placement run (on the same graph)."""
    root = tmp_path / "examples"
    graph, cluster = random_dag(ops=40, seed=2), PRESETS["k80x2"]()
    example = place_and_simulate(graph, cluster, "critical-path", store=RunStore(root)).run_id
    monkeypatch.setenv("PLACELAB_EXAMPLE_RUNS_DIR", str(root))
    return root, example


@pytest.fixture
def empty_runs(tmp_path, monkeypatch):
    root = tmp_path / "runs"
    monkeypatch.setenv("PLACELAB_RUNS_DIR", str(root))
    return root


@pytest.fixture
def stored_runs(tmp_path, monkeypatch):
    """Two placement runs of a 40-op random graph on k80x2, and one eval run with per-graph results."""
    root = tmp_path / "runs"
    store = RunStore(root)
    graph, cluster = random_dag(ops=40, seed=2), PRESETS["k80x2"]()
    ids = [place_and_simulate(graph, cluster, name, store=store, tags=["baseline"]).run_id
           for name in ("single-device", "round-robin")]
    ev = store.create("eval", graph_name="test-set", graph_hash="0", cluster="k80x2", placer="round-robin",
                      parameters={}, seed=0)
    ev.finish("done", {"results": [{"graph": f"g{i}", "makespan_s": 1.0 + i / 10, "lower_bound_s": 1.0,
                                    "oom": False} for i in range(5)]})
    monkeypatch.setenv("PLACELAB_RUNS_DIR", str(root))
    return store, ids, ev.id


TINY_GRAPH = "gen:random?ops=60&seed=1"
TINY_PARAMS = {"groups": 8, "batch": 2}


@pytest.fixture(scope="session")
def _learning_template(tmp_path_factory):
    """Built once: a failed training run, a finished 4-episode Placeto run, an experiment run."""
    from policies.rl.core.reinforce import Budget
    from policies.rl.core.training_runs import start_training

    store = RunStore(tmp_path_factory.mktemp("learning") / "runs")
    broken = store.create("train", graph_name="random-60-s1", graph_hash="0", cluster="k80x2", placer="rnn",
                          parameters={"graphs": TINY_GRAPH}, seed=0, name="broken rnn")
    broken.fail("out of patience")
    trained = start_training("placeto", TINY_GRAPH, "k80x2", params=TINY_PARAMS, budget=Budget(episodes=4),
                             store=store, name="tiny placeto")
    exp = store.create("experiment", graph_name="family:nmt", graph_hash="0", cluster="k80x2", placer="placeto",
                       parameters={"family": "nmt"}, seed=0, name="nmt generalization")
    # makespan / lower bound: zero-shot 1.2, 1.5; optimized 1.1, 1.3; random 2.0, 3.0
    rows = [("g0", "zero-shot", 1.2), ("g0", "optimized", 1.1), ("g0", "random", 2.0),
            ("g1", "zero-shot", 3.0), ("g1", "optimized", 2.6), ("g1", "random", 6.0)]
    lb = {"g0": 1.0, "g1": 2.0}
    exp.write_table("results.csv", {"graph": [g for g, _, _ in rows], "method": [m for _, m, _ in rows],
                                    "makespan_s": [v for _, _, v in rows], "lower_bound_s": [lb[g] for g, _, _ in rows],
                                    "oom": [False] * len(rows)})
    exp.finish("done", {})
    return store.root, {"broken": broken.id, "trained": trained.run_id, "experiment": exp.id}


@pytest.fixture
def learning_runs(stored_runs, _learning_template):
    """``stored_runs`` plus the runs of ``_learning_template`` (copied into this test's store)."""
    store, _ids, _eval = stored_runs
    template, ids = _learning_template
    for run_id in ids.values():
        shutil.copytree(template / run_id, store.root / run_id)
    return store, ids


@pytest.fixture
def kill_jobs_after():
    """Hard-stop, after the test, any training process the app started in the given stores."""
    roots = []
    yield roots.append
    from dashboard.background import list_jobs

    for root in roots:
        for job in list_jobs(root):
            if job.alive:
                os.kill(job.pid, signal.SIGKILL)


@pytest.fixture
def local_two(tmp_path, monkeypatch):
    """The ``local`` preset as two uncalibrated CPU workers, read from a cache in ``tmp_path`` (no calibration)."""
    from engine.cluster import cluster_to_dict
    from engine.executor.calibration import local_cache_path, machine_cluster

    monkeypatch.setenv("PLACELAB_CACHE_DIR", str(tmp_path / "cache"))
    path = local_cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(cluster_to_dict(machine_cluster(2, name="local"))))
    return PRESETS["local"]()
