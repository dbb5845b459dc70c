"""Training runs (policies.rl.core.training_runs): run files, resume, stop requests, zero-shot eval, errors."""

from __future__ import annotations

import pytest
import torch
from rl_graphs import cluster, cluster_file, diamond, graph_file, two_chains

from engine.errors import PlacelabError, RunError, SpecError
from engine.store.runs import RunStore
from policies.registry import make_placer
from policies.rl.core.reinforce import Budget
from policies.rl.core.run_files import CURVE, request_stop
from policies.rl.core.training_runs import evaluate_policy, load_policy, resume_training, start_training
from policies.rl.placeto.agent import PlacetoAgent

torch.set_num_threads(1)

CONFIG = {"groups": None, "batch": 4}



def test_training_run_files_resume_and_zero_shot(tmp_path):
    store = RunStore(tmp_path / "runs")
    g, c = graph_file(tmp_path), cluster_file(tmp_path)
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
    assert out2.learning_health["greedy_checkpoints"] >= 2  # the start, and the last update of each part

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


def test_a_run_whose_curve_predates_the_greedy_checkpoints_resumes_and_is_judged(tmp_path):
    """A curve written before the greedy-checkpoint columns keeps its header when the run resumes, and the verdict
    judges it with what it has (its sampled runtimes: Placeto has no exploration parameter)."""
    store = RunStore(tmp_path / "runs")
    out = start_training("placeto", graph_file(tmp_path), cluster_file(tmp_path), params=CONFIG,
                         budget=Budget(episodes=8), store=store)
    run = store.load(out.run_id)
    old = {k: v for k, v in run.read_table(CURVE).items()
           if k not in ("greedy_runtime", "greedy_objective", "weight_change")}
    run.write_table(CURVE, old)
    resumed = resume_training(store, out.run_id, episodes=12)
    curve = store.load(out.run_id).read_table(CURVE)
    assert list(curve) == list(old) and curve["episode"] == list(range(1, 13))
    h = resumed.learning_health
    assert h["greedy_checkpoints"] == 0 and h["weight_change"] is None and h["compared_on"] == "sampled"


def test_stop_request_ends_the_run_resumably(tmp_path):
    store = RunStore(tmp_path / "runs")
    g, c = graph_file(tmp_path), cluster_file(tmp_path)

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
    out = start_training("placeto", graph_file(tmp_path), cluster_file(tmp_path), params=CONFIG,
                         budget=Budget(episodes=4), store=store)
    with pytest.raises(PlacelabError, match="trained for 2 devices"):
        evaluate_policy(store, out.run_id, graph_file(tmp_path), cluster=cluster_file(tmp_path, 3))



def test_bad_requests_give_one_sentence_errors(tmp_path):
    store = RunStore(tmp_path / "runs")
    g, c = graph_file(tmp_path), cluster_file(tmp_path)
    with pytest.raises(SpecError, match="not a learned placer"):
        start_training("metis", g, c, budget=Budget(episodes=4))
    with pytest.raises(SpecError, match="has no parameter 'bogus'"):
        start_training("placeto", g, c, params={"bogus": 1}, budget=Budget(episodes=4))
    with pytest.raises(SpecError, match="parameter 'reward' must be one of"):
        start_training("placeto", g, c, params={"reward": "sometimes"}, budget=Budget(episodes=4))
    from placelab.runner import place_and_simulate

    res = place_and_simulate(two_chains(), cluster(), "single-device", store=store)  # a placement run, no policy
    assert res.metrics["makespan_s"] == pytest.approx(6.0)  # six 1 s ops, one after another on one device
    assert store.load(res.run_id).meta["kind"] == "place"
    with pytest.raises(RunError, match="not a training run"):
        evaluate_policy(store, res.run_id, g)
