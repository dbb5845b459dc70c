"""Parallel rollouts on Ray (policies.rl.core.workers): merging rollouts, a workers=2 run repeats exactly,
resumes exactly, survives a killed worker with nothing lost, and Ctrl-C leaves it interrupted."""

from __future__ import annotations

import os
import pickle
import signal
import time

import numpy as np
import pytest
import torch
from rl_graphs import cluster, diamond, two_chains

from engine.cluster import save_cluster
from engine.graph.io import save_graph
from engine.store.runs import RunStore
from policies.rl.core.agent import backward
from policies.rl.core.reinforce import Budget, StoppingRule
from policies.rl.core.run_files import CHECKPOINT, CURVE
from policies.rl.core.task import make_task
from policies.rl.core.training_runs import resume_training, start_training
from policies.rl.core.workers import RolloutWorker, RolloutWorkers
from policies.rl.doppler.agent import DopplerAgent
from policies.rl.doppler.config import DopplerConfig
from policies.rl.placeto.agent import PlacetoAgent
from policies.rl.placeto.config import PlacetoConfig
from policies.rl.registry import make_agent
from policies.rl.rnn.agent import RNNAgent
from policies.rl.rnn.config import RNNConfig

torch.set_num_threads(1)

CONFIG = {"groups": None, "batch": 4}
EPISODES = 16  # 4 updates of 4 episodes, 2 per worker


# ------------------------------------------------------------------------------ merging (no Ray)
def test_placeto_merge_of_split_rollouts_equals_one_rollout_and_its_gradient():
    t = make_task(two_chains(0.1e9), cluster(), groups=None)
    agent = PlacetoAgent(2, PlacetoConfig(**CONFIG), seed=0)
    keys = ["g"] * 4
    # rollouts are independent per episode given the generator's draws: split across two
    # generators, the merged rollout is the concatenation of the two halves in order
    a = agent.rollout([t, t], keys[:2], np.random.default_rng(1))
    b = agent.rollout([t, t], keys[2:], np.random.default_rng(2))
    merged = agent.merge([a, b])
    assert [s.reward for s in merged.episodes] == [s.reward for s in a.episodes + b.episodes]
    assert [s.actions for s in merged.data] == [s.actions for s in a.data + b.data]
    backward(agent, merged, {"g": t}, entropy_coef=0.0, step=0)  # the learner's update takes it
    assert all(p.grad is not None for p in agent.model.parameters() if p.requires_grad)


def test_rnn_merge_concatenates_the_k_samples():
    t = make_task(diamond(), cluster(), groups=None)
    agent = RNNAgent(2, RNNConfig(samples=3), seed=0, tasks=[t])
    a = agent.rollout([t] * 3, ["d"] * 3, np.random.default_rng(1))
    b = agent.rollout([t] * 2, ["d"] * 2, np.random.default_rng(2))
    m = agent.merge([a, b])
    assert m.data.actions.shape == (5, t.num_groups)
    np.testing.assert_array_equal(m.data.actions, np.concatenate([a.data.actions, b.data.actions]))
    np.testing.assert_array_equal(m.data.rewards, np.concatenate([a.data.rewards, b.data.rewards]))
    assert len(m.episodes) == 5


def test_doppler_merge_of_worker_rollouts_equals_the_learners_own_and_takes_its_gradient():
    t = make_task(two_chains(0.1e9), cluster(), groups=None)
    cfg = DopplerConfig(hidden=8, rounds=1, edge_hidden=4, head=4, batch=4, epsilon=1.0, decay_episodes=8)
    learner = DopplerAgent(2, cfg, seed=0)
    learner.episodes = 4  # ε = 0.5 now; a fresh worker alone would act with ε = 1
    worker = RolloutWorker("doppler", t.cluster, cfg.to_dict(), {"g": t.graph})  # the actor's class, in-process
    weights = learner.model.state_dict()
    a = worker.rollout(weights, learner.state_dict(), ["g", "g"], 1)
    b = worker.rollout(weights, learner.state_dict(), ["g", "g"], 2)
    own = DopplerAgent(2, cfg, seed=0)  # the same policy rolling out in-process from the same count
    own.episodes = 4
    ref = own.rollout([t, t], ["g", "g"], np.random.default_rng(1))
    assert [e.ops.tolist() for _, e, _ in a.data] == [e.ops.tolist() for _, e, _ in ref.data]
    assert [s.reward for s in a.episodes] == [s.reward for s in ref.episodes]
    fresh = RolloutWorker("doppler", t.cluster, cfg.to_dict(), {"g": t.graph}).rollout(
        weights, DopplerAgent(2, cfg).state_dict(), ["g", "g"], 1)
    assert [e.ops.tolist() for _, e, _ in fresh.data] != [e.ops.tolist() for _, e, _ in a.data]  # ε matters
    merged = learner.merge([a, b])
    assert learner.episodes == 8  # as one rollout of 4 episodes would leave it
    assert [s.reward for s in merged.episodes] == [s.reward for s in a.episodes + b.episodes]
    assert [m for _, _, m in merged.data] == [m for _, _, m in a.data + b.data]
    backward(learner, merged, {"g": t}, entropy_coef=0.0, step=0)  # the learner's update takes it
    assert all(p.grad is not None for p in learner.model.parameters() if p.requires_grad)
    assert learner.baseline.counts == {"g": 4}


SMALL = {"placeto": (two_chains(0.1e9), {"groups": None, "batch": 4}),
         "rnn": (diamond(), {"groups": None, "samples": 4, "hidden": 16, "type_dim": 4, "device_dim": 4,
                             "attention": 8}),
         "doppler": (two_chains(0.1e9), {"hidden": 8, "rounds": 1, "edge_hidden": 4, "head": 4, "batch": 4})}


@pytest.mark.parametrize("placer", sorted(SMALL))
def test_the_workers_gradients_add_up_to_the_gradient_of_the_merged_rollout(placer):
    graph, params = SMALL[placer]
    t = make_task(graph, cluster(), groups=None)
    learner = make_agent(placer, 2, params, seed=0, tasks=[t])
    config = learner.config.to_dict()
    workers = [RolloutWorker(placer, t.cluster, config, {"g": t.graph}) for _ in range(2)]
    weights = {k: v.detach().clone() for k, v in learner.model.state_dict().items()}
    state = learner.state_dict()
    parts = [w.rollout(weights, state, ["g", "g"], seed) for w, seed in zip(workers, (1, 2), strict=True)]
    # the reference: this process takes the gradient of the whole merged rollout
    reference = make_agent(placer, 2, config, seed=0)
    reference.model.load_state_dict(weights)
    whole = reference.merge(pickle.loads(pickle.dumps(parts)))
    backward(reference, whole, {"g": t}, entropy_coef=0.01, step=0)
    # the workers' way: the learner's advantages, each worker the gradient of its own two episodes
    merged = learner.merge(parts)
    adv = learner.advantages(merged, {"g": t}, step=0)
    assert learner.state_dict() == reference.state_dict()  # the baselines moved as in-process
    grads = [w.gradient(adv.part(2 * i, 2 * i + 2), 0.01) for i, w in enumerate(workers)]
    named = dict(reference.model.named_parameters())
    assert set(grads[0][0]) == {n for n, p in named.items() if p.grad is not None}
    for name, p in named.items():
        if p.grad is not None:
            torch.testing.assert_close(grads[0][0][name] + grads[1][0][name], p.grad, rtol=1e-5, atol=1e-8)
    assert sum(float(g.abs().sum()) for g in grads[0][0].values()) > 0  # each part has a gradient of its own
    assert sum(float(g.abs().sum()) for g in grads[1][0].values()) > 0
    if placer == "doppler":  # its loss computes the entropies
        assert grads[0][1] + grads[1][1] == pytest.approx([st.entropy for st in whole.episodes])
    else:
        assert grads[0][1] is None
    # a worker restarted after its rollout holds no episodes and says so; given them back, the same gradient
    restarted = RolloutWorker(placer, t.cluster, config, {"g": t.graph})
    assert restarted.gradient(adv.part(0, 2), 0.01) is None
    again, _ = restarted.gradient(adv.part(0, 2), 0.01, weights, parts[0].data)
    for name, g in grads[0][0].items():
        torch.testing.assert_close(again[name], g)


# ------------------------------------------------------------------------------------ on Ray
@pytest.fixture(scope="module")
def ray_runtime():
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        ray.shutdown()
    from engine.parallel.tasks import ParallelMap

    with ParallelMap(workers=2) as ex:  # one runtime for the module; the trainings join it
        yield ex
    assert not ray.is_initialized()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("graphs")
    save_graph(two_chains(0.1e9), d / "g.json")
    save_cluster(cluster(), d / "c.json")
    return str(d / "g.json"), str(d / "c.json")


def _train(store, files, progress=None, episodes=EPISODES):
    g, c = files
    return start_training("placeto", g, c, params=CONFIG, seed=3, budget=Budget(episodes=episodes),
                          stopping=StoppingRule(0), store=store, progress=progress, workers=2)


def _curve(store, run_id):
    curve = store.load(run_id).read_table(CURVE)
    return {k: v for k, v in curve.items() if k != "wall_time"}


@pytest.fixture(scope="module")
def reference(ray_runtime, files, tmp_path_factory):
    store = RunStore(tmp_path_factory.mktemp("reference"))
    out = _train(store, files)
    return store, out


def test_workers2_run_is_valid_and_repeats_exactly(reference, files, tmp_path):
    store, out = reference
    run = store.load(out.run_id)
    assert run.status == "done" and out.episodes == EPISODES and CHECKPOINT in run.files()
    curve = _curve(store, out.run_id)
    assert curve["episode"] == list(range(1, EPISODES + 1))
    assert run.meta["progress"]["worker_episodes"] == [EPISODES // 2, EPISODES // 2]
    assert run.meta["metrics"]["best_makespan_s"] == pytest.approx(min(curve["best_runtime"]))
    again = RunStore(tmp_path / "again")
    out2 = _train(again, files)
    assert _curve(again, out2.run_id) == curve  # per-worker seeds come from --seed: the same episodes


def test_killed_worker_is_restarted_and_nothing_is_lost(reference, files, tmp_path):
    store = RunStore(tmp_path / "runs")
    killed = []

    def kill_a_worker(done: int, total: int, message: str) -> None:
        if done == 4 and not killed:  # after the first update: SIGKILL one worker's process
            pid = _worker_pids()[0]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    out = _train(store, files, progress=kill_a_worker)
    assert killed and store.load(out.run_id).status == "done"
    assert _curve(store, out.run_id) == _curve(reference[0], reference[1].run_id)


def test_a_worker_killed_between_its_rollout_and_its_gradient_gets_its_episodes_back(ray_runtime):
    t = make_task(two_chains(0.1e9), cluster(), groups=None)
    agent = make_agent("placeto", 2, CONFIG, seed=0)
    weights = {k: v.detach().clone() for k, v in agent.model.state_dict().items()}
    pool = RolloutWorkers("placeto", agent, {"g": t}, workers=2)
    try:
        rollout = pool.collect(["g"] * 4, np.random.default_rng(0))
        reference_rollout = pickle.loads(pickle.dumps(rollout))
        (pid, *_) = _worker_pids()
        os.kill(pid, signal.SIGKILL)
        pool.backward(rollout, entropy_coef=0.01, step=0)
        assert _worker_pids() and pid not in _worker_pids()  # Ray restarted it
    finally:
        pool.close()
    reference = make_agent("placeto", 2, CONFIG, seed=0)
    reference.model.load_state_dict(weights)
    backward(reference, reference_rollout, {"g": t}, entropy_coef=0.01, step=0)
    for mine, ref in zip(agent.model.parameters(), reference.model.parameters(), strict=True):
        torch.testing.assert_close(mine.grad, ref.grad, rtol=1e-5, atol=1e-8)


def _worker_pids() -> list[int]:
    import psutil

    pids = []
    for p in psutil.Process().children(recursive=True):
        try:
            if "ray::RolloutWorker" in " ".join(p.cmdline()):
                pids.append(p.pid)
        except psutil.Error:
            continue
    return sorted(pids)


def test_ctrl_c_stops_the_workers_leaves_the_run_interrupted_and_it_resumes_exactly(reference, files, tmp_path):
    store = RunStore(tmp_path / "runs")

    def interrupt(done: int, total: int, message: str) -> None:
        if done == 8:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _train(store, files, progress=interrupt)
    (run,) = store.list()
    assert run.status == "interrupted" and CHECKPOINT in run.files()
    deadline = time.monotonic() + 300
    while _worker_pids() and time.monotonic() < deadline:  # ray.kill is asynchronous
        time.sleep(0.1)
    assert not _worker_pids()  # every rollout worker is gone
    out = resume_training(store, run.id, workers=2)
    assert out.episodes == EPISODES and store.load(run.id).status == "done"
    assert _curve(store, run.id) == _curve(reference[0], reference[1].run_id)


def test_doppler_trains_on_two_workers_and_its_episode_count_is_the_learners(ray_runtime, files, tmp_path):
    import json

    store = RunStore(tmp_path / "runs")
    params = {"hidden": 8, "rounds": 1, "edge_hidden": 4, "head": 4, "batch": 4}
    out = start_training("doppler", files[0], files[1], params=params, seed=3, budget=Budget(episodes=8),
                         stopping=StoppingRule(0), store=store, workers=2)
    run = store.load(out.run_id)
    assert run.status == "done" and out.episodes == 8 and run.meta["progress"]["worker_episodes"] == [4, 4]
    state = json.loads(torch.load(run.path / CHECKPOINT, weights_only=True)["state"])
    assert state["agent"]["episodes"] == 8 and state["agent"]["baseline"]["counts"] == {files[0]: 8}


def test_experiment_optimized_trainings_on_ray_equal_the_sequential_path(ray_runtime, tmp_path):
    from policies.rl.core.experiment import generalization

    def run(store_dir, executor=None):
        return generalization(RunStore(tmp_path / store_dir), "cifar10", "k80x2", episodes=4, optimized_episodes=4,
                              random_samples=2, test_graphs=2, params={"groups": 16, "batch": 4}, seed=1,
                              executor=executor)

    seq, par = run("seq"), run("par", ray_runtime)
    assert len(par["per_graph"]) == 2 and par["per_graph"] == seq["per_graph"]
