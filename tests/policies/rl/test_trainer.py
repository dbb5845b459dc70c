"""The shared training loop and training runs (policies.rl.trainer, policies.rl.jobs): learning
curves, checkpoints, exact resume, stop requests, trained policies as placers, zero-shot eval."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from rl_graphs import cluster, diamond, two_chains

from engine.cluster import save_cluster
from engine.errors import PlacelabError, RunError, SpecError
from engine.graph_io import save_graph
from engine.runs import RunStore
from policies import make_placer
from policies.rl.jobs import evaluate_policy, load_policy, resume_training, start_training
from policies.rl.placeto import PlacetoAgent, PlacetoConfig
from policies.rl.reinforce import Budget, StoppingRule
from policies.rl.run_files import CURVE, request_stop
from policies.rl.task import make_task
from policies.rl.trainer import Trainer

torch.set_num_threads(1)

CONFIG = {"groups": None, "batch": 4}


def _trainer(seed: int = 0, episodes: int = 40) -> Trainer:
    t = make_task(two_chains(0.1e9), cluster(), groups=None)
    agent = PlacetoAgent(2, PlacetoConfig(**CONFIG), seed=seed)
    return Trainer(agent, {"g": t}, seed=seed, budget=Budget(episodes=episodes), stopping=StoppingRule(0))


def test_checkpoint_then_resume_gives_the_same_next_step(tmp_path):
    a = _trainer()
    a.step()
    a.save_checkpoint(tmp_path / "ckpt.pt")
    rows_a = a.step()
    params_a = [p.detach().clone() for p in a.agent.model.parameters()]

    b = _trainer(seed=7)  # different init and generator: everything comes from the checkpoint
    b.load_checkpoint(tmp_path / "ckpt.pt")
    assert b.episodes == 4 and b.updates == 1
    rows_b = b.step()
    for ra, rb in zip(rows_a, rows_b, strict=True):
        assert {k: v for k, v in ra.items() if k != "wall_time"} == {k: v for k, v in rb.items() if k != "wall_time"}
    for pa, pb in zip(params_a, b.agent.model.parameters(), strict=True):
        assert torch.equal(pa, pb)


def test_learning_curve_rows_follow_the_contract():
    tr = _trainer(episodes=8)
    tr.train()
    assert tr.episodes == 8 and tr.updates == 2
    row = tr.last_rows[-1]
    assert set(row) >= {"episode", "sampled_runtime", "best_runtime", "reward", "entropy", "learning_rate",
                        "placements_evaluated", "wall_time"}
    assert row["episode"] == 8 and row["placements_evaluated"] == tr.placements
    assert row["best_runtime"] == pytest.approx(tr.best["g"].makespan)
    assert row["best_runtime"] <= min(r["sampled_runtime"] for r in tr.last_rows)


def test_learning_rate_and_entropy_decay_linearly():
    tr = _trainer(episodes=8)
    cfg = tr.agent.config
    first = tr.step()[0]
    second = tr.step()[0]
    assert first["learning_rate"] == pytest.approx(cfg.lr)
    assert second["learning_rate"] == pytest.approx(cfg.lr + (cfg.lr_final - cfg.lr) * 0.5)
    assert second["entropy_coef"] == pytest.approx(cfg.entropy + (cfg.entropy_final - cfg.entropy) * 0.5)


def _graph_file(tmp_path, g=None) -> str:
    path = tmp_path / "g.json"
    save_graph(g or two_chains(0.1e9), path)
    return str(path)


def _cluster_file(tmp_path, n: int = 2) -> str:
    path = tmp_path / f"c{n}.json"
    save_cluster(cluster(n), path)
    return str(path)


def test_training_run_files_resume_and_zero_shot(tmp_path):
    store = RunStore(tmp_path / "runs")
    g, c = _graph_file(tmp_path), _cluster_file(tmp_path)
    out = start_training("placeto", g, c, params=CONFIG, budget=Budget(episodes=8), store=store)
    run = store.load(out.run_id)
    assert run.status == "done" and run.meta["kind"] == "train"
    files = run.files()
    assert {"policy.json", "checkpoint.pt", CURVE, "placement.json", "graph.json"} <= set(files)
    assert any(f.startswith("tensorboard/events.out.tfevents") for f in files)
    curve = run.read_table(CURVE)
    assert curve["episode"] == list(range(1, 9))
    assert run.meta["metrics"]["best_makespan_s"] == pytest.approx(min(curve["best_runtime"]))
    assert run.meta["metrics"]["makespan_s"] == pytest.approx(run.meta["metrics"]["best_makespan_s"])

    out2 = resume_training(store, out.run_id, episodes=16)
    assert out2.run_id == out.run_id and out2.episodes == 16
    assert store.load(out.run_id).read_table(CURVE)["episode"] == list(range(1, 17))

    rows, eval_id = evaluate_policy(store, out.run_id, g)
    assert rows[0]["graph"] == g and rows[0]["makespan_s"] >= 3.0 - 1e-9
    agent, doc = load_policy(run)
    assert doc["placer"] == "placeto" and isinstance(agent, PlacetoAgent)
    ev = store.load(eval_id)
    assert ev.meta["kind"] == "eval" and ev.meta["metrics"]["results"] == rows

    # the trained policy is a placer (zero-shot), here on another graph
    placer = make_placer("placeto", policy=str(run.path))
    p = placer.place(diamond(), cluster())
    assert p.devices.shape == (5,)


def test_stop_request_ends_the_run_resumably(tmp_path):
    store = RunStore(tmp_path / "runs")
    g, c = _graph_file(tmp_path), _cluster_file(tmp_path)

    def stop_after_first_update(done: int, total: int, message: str) -> None:
        (run,) = store.list()
        request_stop(run)  # the app's Stop button does this while the run trains

    out = start_training("placeto", g, c, params=CONFIG, budget=Budget(episodes=400), store=store,
                         progress=stop_after_first_update)
    assert out.stop_reason == "stopped" and out.episodes == 8  # the update in flight, then the stop
    run = store.load(out.run_id)
    assert run.status == "interrupted" and "checkpoint.pt" in run.files()
    res = resume_training(store, run.id, episodes=12)
    assert res.stop_reason == "episodes" and res.episodes == 12
    assert store.load(run.id).status == "done"


def test_policy_for_another_device_count_is_refused(tmp_path):
    store = RunStore(tmp_path / "runs")
    out = start_training("placeto", _graph_file(tmp_path), _cluster_file(tmp_path), params=CONFIG,
                         budget=Budget(episodes=4), store=store)
    with pytest.raises(PlacelabError, match="trained for 2 devices"):
        evaluate_policy(store, out.run_id, _graph_file(tmp_path), cluster=_cluster_file(tmp_path, 3))


def test_bad_requests_give_one_sentence_errors(tmp_path):
    store = RunStore(tmp_path / "runs")
    g, c = _graph_file(tmp_path), _cluster_file(tmp_path)
    with pytest.raises(SpecError, match="not a learned placer"):
        start_training("metis", g, c, budget=Budget(episodes=4))
    with pytest.raises(SpecError, match="has no parameter 'bogus'"):
        start_training("placeto", g, c, params={"bogus": 1}, budget=Budget(episodes=4))
    with pytest.raises(SpecError, match="parameter 'reward' must be one of"):
        start_training("placeto", g, c, params={"reward": "sometimes"}, budget=Budget(episodes=4))
    out = make_placer("random").place(two_chains(), cluster())  # a placement run is not a policy
    assert out is not None
    from policies.runner import place_and_simulate

    res = place_and_simulate(two_chains(), cluster(), "random", store=store)
    with pytest.raises(RunError, match="not a training run"):
        evaluate_policy(store, res.run_id, g)


def test_optimized_placer_returns_the_best_placement_it_found():
    placer = make_placer("placeto", episodes=8, groups=128)
    p = placer.place(two_chains(0.1e9), cluster(), seed=0)
    assert np.isin(p.devices, [0, 1]).all()


def test_learned_placer_budgets_and_parameter_types_are_checked():
    with pytest.raises(SpecError, match="episodes must be a whole number >= 1"):
        make_placer("placeto", episodes=0)
    with pytest.raises(SpecError, match=r"budget \(episodes\) must be at least 1"):
        make_placer("placeto", episodes=4).place(two_chains(), cluster(), budget=-1)
    with pytest.raises(SpecError, match="'groups' must be >= 1"):
        make_placer("rnn", groups=0).place(two_chains(), cluster())
    with pytest.raises(SpecError, match="'rounds' must be int"):
        make_placer("placeto", rounds=2.5).place(two_chains(), cluster())


def test_generalization_experiment_stores_three_methods_per_test_graph(tmp_path):
    from policies.rl.experiment import generalization

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


@pytest.mark.parametrize("placer, params", [("placeto", {"batch": 2}), ("rnn", {"samples": 2, "hidden": 16})])
def test_learned_placers_place_mirhoseini_units(placer, params):
    """grouping=units: 4 × 3 + 5 units on a 3-step RNNLM (see test_workloads_recurrent); each unit —
    a cell's forward and backward ops, which no acyclic grouping can hold — lands on one device."""
    from engine.generators import from_spec
    from engine.groupers import unit_groups
    from engine.presets import PRESETS
    from policies.rl.jobs import task_for
    from policies.rl.registry import make_config

    g = from_spec("gen:rnnlm?steps=3&units=64&batch=4&vocab=100")
    c = PRESETS["k80x2"]()
    config = make_config(placer, {**params, "grouping": "units"})
    assert task_for(g, c, config).num_groups == 17
    p = make_placer(placer, episodes=2, grouping="units").place(g, c)
    units = unit_groups(g)
    for u in range(17):
        assert len(set(p.devices[units == u].tolist())) == 1
