"""Runs directories for the page tests: an empty one, and one holding real placement runs."""

import pytest

from engine.generators import random_dag
from engine.presets import PRESETS
from engine.runs import RunStore
from policies.runner import place_and_simulate


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
