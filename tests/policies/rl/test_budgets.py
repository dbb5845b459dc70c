"""Placement budgets counted as the papers count them (docs/budgets.md): one placement sampled per
episode for Placeto, the RNN placer and DOPPLER, whatever the episode simulates; every simulation
still counts as a placement evaluated. Numbers worked out by hand in each test."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from rl_graphs import cluster, cluster_file, graph_file, two_chains

from policies.rl.core.agent import EpisodeStats
from policies.rl.core.reinforce import Budget, StoppingRule
from policies.rl.core.task import Evaluation, make_task
from policies.rl.core.trainer import Trainer
from policies.rl.placeto.agent import PlacetoAgent
from policies.rl.placeto.config import PlacetoConfig
from policies.rl.rnn.agent import RNNAgent
from policies.rl.rnn.config import RNNConfig

RNN_SMALL = {"hidden": 16, "type_dim": 4, "device_dim": 4, "attention": 8, "shape_len": 2, "groups": None}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _task():
    return make_task(two_chains(0.1e9), cluster(), groups=None)  # 6 ops, every op its own group


def _placeto(budget: Budget, **config) -> Trainer:
    agent = PlacetoAgent(2, PlacetoConfig(groups=None, batch=4, **config), seed=0)
    return Trainer(agent, {"g": _task()}, seed=0, budget=budget, stopping=StoppingRule(0), tensorboard=False)


def test_episode_stats_count_one_placement_sampled_by_default():
    ev = Evaluation(1.0, 1.0, 0.0, False)
    assert EpisodeStats("g", ev, ev, np.zeros(6, dtype=np.int64), 0.0, 0.0, evaluations=7).sampled == 1


@pytest.mark.parametrize("reward", ["intermediate", "terminal"])
def test_placeto_stops_after_the_placements_sampled_whatever_it_simulates(reward):
    """--max-placements 10 with 4 episodes per update: 4, 8 (< 10), 12 (>= 10) placements sampled, so
    three updates and 12 episodes, whichever reward. Intermediate rewards simulate the start of every
    episode and steps of it (six steps here), so more than 12 placements were evaluated: counting those,
    as before issue #32, the budget of 10 ended after the first update."""
    tr = _placeto(Budget(placements=10), reward=reward)
    assert tr.train() == "placements"
    assert (tr.updates, tr.episodes, tr.sampled) == (3, 12, 12)
    least = 13 if reward == "intermediate" else 12
    assert least <= tr.placements <= 12 * (1 + 6)
    assert [r["placements_sampled"] for r in tr.last_rows] == [9, 10, 11, 12]
    assert tr.last_rows[-1]["placements_evaluated"] == tr.placements
    assert 1 <= tr.best["g"].placements_sampled <= 12
    assert tr.status()["placements_sampled"] == 12


def test_rnn_placer_counts_each_of_its_k_samples():
    """Mirhoseini §3.1: K = 3 placements sampled per update; a budget of 7: 3, 6, 9 -> 9 episodes."""
    task = _task()
    agent = RNNAgent(2, RNNConfig(**RNN_SMALL, samples=3), seed=0, tasks=[task])
    tr = Trainer(agent, {"g": task}, seed=0, budget=Budget(placements=7), stopping=StoppingRule(0), tensorboard=False)
    assert tr.train() == "placements"
    assert (tr.updates, tr.episodes, tr.sampled, tr.placements) == (3, 9, 9, 9)


def test_decays_run_over_the_placements_sampled():
    """lr 1e-3 → 1e-4 over a budget of 8 placements: after the first update (4 sampled) half-way, 5.5e-4."""
    tr = _placeto(Budget(placements=8), lr=1e-3, lr_final=1e-4)
    tr.step()
    assert tr.placements > tr.sampled == 4
    assert tr.schedule()[0] == pytest.approx(5.5e-4)


def test_checkpoint_keeps_the_placements_sampled(tmp_path):
    a = _placeto(Budget(episodes=8))
    a.step()
    a.save_checkpoint(tmp_path / "ckpt.pt")
    b = _placeto(Budget(episodes=8))
    b.load_checkpoint(tmp_path / "ckpt.pt")
    assert (b.sampled, b.placements) == (4, a.placements)
    assert b.best["g"].placements_sampled == a.best["g"].placements_sampled
    # a checkpoint written before placements sampled were counted: one per episode
    ckpt = torch.load(tmp_path / "ckpt.pt", weights_only=True)
    state = json.loads(ckpt["state"])
    del state["sampled"]
    for best in state["best"].values():
        del best["placements_sampled"]
    torch.save({**ckpt, "state": json.dumps(state)}, tmp_path / "old.pt")
    c = _placeto(Budget(episodes=8))
    c.load_checkpoint(tmp_path / "old.pt")
    assert c.sampled == c.episodes == 4 and c.best["g"].placements_sampled is None


def test_cli_max_placements_counts_episodes(tmp_path, capsys):
    """``placelab train --max-placements 10`` (Placeto, batch 4): 12 episodes and 12 placements sampled,
    in the JSON output, the stored metrics and the learning curve."""
    from engine.store.runs import RunStore
    from placelab.cli import main

    runs = str(tmp_path / "runs")
    capsys.readouterr()
    try:
        main(["train", "--placer", "placeto", "--graphs", graph_file(tmp_path), "--cluster", cluster_file(tmp_path),
              "--max-placements", "10", "--param", "batch=4", "--stop-window", "0", "--save", "--runs-dir", runs,
              "--json"])
    except SystemExit as exc:
        assert not exc.code, capsys.readouterr().err
    res = json.loads(capsys.readouterr().out)
    assert (res["episodes"], res["placements_sampled"], res["stop_reason"]) == (12, 12, "placements")
    assert res["placements_evaluated"] > 12
    run = RunStore(runs).load(res["run_id"])
    metrics = run.meta["metrics"]
    assert metrics["placements_sampled"] == 12 and metrics["placements_evaluated"] == res["placements_evaluated"]
    assert 1 <= next(iter(metrics["best_by_graph"].values()))["placements_sampled"] <= 12
    curve = run.read_table("learning_curve.csv")
    assert [int(x) for x in curve["placements_sampled"]] == list(range(1, 13))
    assert int(curve["placements_evaluated"][-1]) == res["placements_evaluated"]
    assert run.read_json("policy.json")["budget"] == {"episodes": None, "placements": 10, "seconds": None}


def test_a_wall_time_budget_stops_before_an_update_that_would_end_past_it(monkeypatch):
    """--max-seconds 100 with updates of 30 s on a fake clock: after 30, 60 and 90 s the next update would
    end at 60, 90 and 120 s, so training stops after the third, at 90 s (checking only after each update, as
    before issue #35, ran a fourth and ended at 120 s, 20 % over)."""
    import policies.rl.core.trainer as trainer_module

    clock = [0.0]
    monkeypatch.setattr(trainer_module.time, "perf_counter", lambda: clock[0])
    tr = _placeto(Budget(seconds=100))

    def slow_update():
        clock[0] += 30.0
        return []

    monkeypatch.setattr(tr, "step", slow_update)
    assert tr.train() == "seconds"
    assert tr.wall == 90.0
    assert Budget(seconds=100).exhausted(0, 0, 70.0, next_update_s=30.0) is None  # ends at exactly 100
    assert Budget(seconds=100).exhausted(0, 0, 100.0) == "seconds"


def test_a_large_graph_is_grouped_for_a_placer_that_places_every_op():
    """Issue #35: DOPPLER (groups=None) on every op of a 12k-op model did 2 episodes a minute in 11.6 GB.
    Above 1,000 ops such a placer places 256 groups and says so; grouping=ops keeps every op."""
    from engine.generators import random_dag
    from policies.rl.core.task import LARGE_GRAPH_GROUPS, task_for
    from policies.rl.doppler.config import DopplerConfig

    small, large = random_dag(ops=300, seed=1), random_dag(ops=1_500, seed=1)
    assert task_for(small, cluster(), DopplerConfig()).num_groups == 300
    with pytest.warns(UserWarning, match="has 1,500 ops: placing 256 groups"):
        grouped = task_for(large, cluster(), DopplerConfig())
    assert grouped.num_groups <= LARGE_GRAPH_GROUPS
    assert task_for(large, cluster(), DopplerConfig(grouping="ops")).num_groups == 1_500


def test_a_run_stored_before_per_model_columns_still_matches_its_graphs():
    from policies.rl.core.task import graphs_hash, same_graphs

    g = random_dag_with_models()
    assert same_graphs(graphs_hash([g]), [g]) and same_graphs(graphs_hash([g.without_models()]), [g])
    assert not same_graphs("0" * 16, [g])


def random_dag_with_models():
    from engine.costmodel import K80, GraphBuilder, RooflineModel

    b = GraphBuilder("m", RooflineModel((K80,)))
    x = b.op("x", "MatMul", flops=1e9, out_bytes=1e6)
    b.op("y", "Relu", out_bytes=1e6, inputs=[x])
    return b.build()
