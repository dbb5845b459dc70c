"""Placeto §4.2 generalization experiment (policies.rl.core.experiment)."""

from __future__ import annotations

import pytest
import torch

from engine.store.runs import RunStore

torch.set_num_threads(1)

CONFIG = {"groups": None, "batch": 4}



def test_generalization_experiment_stores_three_methods_per_test_graph(tmp_path):
    from policies.rl.core.experiment import generalization

    store = RunStore(tmp_path / "runs")
    res = generalization(store, "cifar10", "k80x2", episodes=8, optimized_episodes=8, random_samples=2,
                         test_graphs=1, params={"groups": 16, "batch": 4})
    (row,) = res["per_graph"]
    run = store.load(res["run_id"])
    table = run.read_table("results.csv")
    assert table["method"] == ["zero-shot", "optimized", "random"] and table["graph"] == [row["graph"]] * 3
    assert table["makespan_s"] == [row["zero_shot_s"], row["optimized_s"], row["random_s"]]
    assert all(m >= row["lower_bound_s"] - 1e-12 for m in table["makespan_s"])
    assert run.meta["metrics"]["median_zero_shot_over_optimized"] == pytest.approx(
        row["zero_shot_s"] / row["optimized_s"])
    assert store.load(res["policy_run_id"]).meta["kind"] == "train"
