"""GDP (policies.rl.gdp), the fourth learned placer, added through the kit: its GraphSAGE layer and its
segment recurrence recomputed by hand, the PPO loss and the running-mean advantage by hand, learning
two heavy chains on two identical devices, placing graphs it never saw, stored runs (resume, eval,
place, --init-from from Stage I), and rollout workers whose gradients add up to the learner's."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
import torch
from rl_graphs import cluster, diamond, graph, graph_file, two_chains

from engine.store.runs import RunStore
from placelab.cli import run_command
from policies.rl.core.agent import Advantages, backward
from policies.rl.core.reinforce import Budget, RunningMeanBaseline, StoppingRule
from policies.rl.core.task import make_task
from policies.rl.core.trainer import Trainer
from policies.rl.core.workers import RolloutWorker
from policies.rl.doppler.agent import teacher_placement
from policies.rl.gdp.agent import GdpAgent
from policies.rl.gdp.config import GdpConfig
from policies.rl.gdp.features import GdpInputs, type_bucket
from policies.rl.gdp.net import GraphSage, SegmentAttention
from policies.rl.registry import learned_placers, make_agent, make_config

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SMALL = {"hidden": 16, "heads": 2, "segment": 2, "type_buckets": 8}


def _task(g=None, n: int = 2):
    return make_task(g if g is not None else two_chains(0.1e9), cluster(n), groups=None)


# ------------------------------------------------------------------------------------------- network
def test_the_card_is_registered_and_its_config_validates():
    assert learned_placers()["gdp"].agent is GdpAgent
    assert make_config("gdp", {}).to_dict() == GdpConfig().to_dict()
    with pytest.raises(Exception, match="'heads' must divide hidden \\(64\\), got 5"):
        make_config("gdp", {"heads": 5})
    with pytest.raises(Exception, match="'acting' must be one of epsilon-greedy, sample"):
        make_config("gdp", {"acting": "greedy"})


def test_inputs_by_hand():
    g = graph([{"name": n, "compute": c, "output_bytes": 1e9, "type": t}
               for n, c, t in (("s", 1.0, "matmul"), ("l", 2.0, "add"), ("r", 3.0, "matmul"), ("t", 4.0, "add"))],
              [("s", "l"), ("s", "r"), ("l", "t"), ("r", "t")])
    task = _task(g)
    inp = GdpInputs.build(task, 8)
    assert inp.type_ids.tolist() == [type_bucket(t, 8) for t in ("matmul", "add", "matmul", "add")]
    assert inp.type_offsets.tolist() == [0, 1, 2, 3]
    # neighbours both ways: s–l, s–r, l–t, r–t
    assert sorted(zip(inp.src.tolist(), inp.dst.tolist(), strict=True)) == sorted(
        [(0, 1), (1, 0), (0, 2), (2, 0), (1, 3), (3, 1), (2, 3), (3, 2)])
    compute = np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(inp.numeric[:, 0], (compute - compute.mean()) / compute.std(), rtol=1e-6)
    np.testing.assert_allclose(inp.numeric[:, 2], [-np.sqrt(2), 0, 0, np.sqrt(2)], atol=1e-6)  # in-degrees 0, 1, 1, 2
    assert inp.order.tolist() == task.order.tolist()


def test_graphsage_max_pool_by_hand():
    torch.manual_seed(0)
    sage = GraphSage(3, 4, 1)
    task = _task(diamond())
    inp = GdpInputs.build(task, 4)
    x = torch.randn(task.num_groups, 3)
    out = sage(x, torch.from_numpy(inp.src), torch.from_numpy(inp.dst))
    h = sage.inp(x)
    # GraphSAGE max-pool (the DOPPLER authors' GDP code): max over the neighbours of σ(W h_u + b), then f([h_v ‖ ·])
    for v in range(task.num_groups):
        nbrs = [u for u, w in zip(inp.src.tolist(), inp.dst.tolist(), strict=True) if w == v]
        agg = torch.stack([torch.sigmoid(sage.pool[0](h[u])) for u in nbrs]).max(0).values if nbrs else torch.zeros(4)
        torch.testing.assert_close(out[v], sage.combine[0](torch.cat([h[v], agg])))
    assert not nbrs  # the diamond's last op u has no neighbour: its aggregate is 0


def test_segment_recurrence_equals_one_segment_at_a_time():
    """The batched layer equals Transformer-XL's loop: each segment attends to [previous segment's input ‖ itself]."""
    torch.manual_seed(1)
    layer = SegmentAttention(8, 2)
    n, seg = 7, 3
    x = torch.randn(n, 8)
    s = torch.cat([x, torch.zeros(2, 8)]).view(3, seg, 8)
    valid = (torch.arange(9) < n).view(3, seg)
    out = layer(s, valid).reshape(-1, 8)[:n]
    for i, start in enumerate(range(0, n, seg)):
        q = x[start:start + seg]
        kv = torch.cat([x[start - seg:start], q]) if i else q
        a, _ = layer.attn(q.unsqueeze(0), kv.unsqueeze(0), kv.unsqueeze(0))
        y = layer.norm1(q + a[0])
        torch.testing.assert_close(out[start:start + seg], layer.norm2(y + layer.ffn(y)), rtol=1e-5, atol=1e-6)


def test_infeasible_devices_are_masked_and_never_chosen():
    g = graph([{"name": "a", "compute": 1.0, "device": "gpu:1"}, {"name": "b", "compute": 1.0}], [("a", "b")])
    task = _task(g)
    agent = GdpAgent(2, GdpConfig(**SMALL, epsilon=1.0), seed=0)
    logp = agent._log_probs(task)
    assert torch.isinf(logp[0, 0]) and logp[0, 1] == 0.0
    rng = np.random.default_rng(0)
    assert all(agent.place(task, rng, greedy=False)[0] == 1 for _ in range(20))  # ε = 1: uniform, feasible only


# ------------------------------------------------------------------------------------ update, by hand
def test_running_mean_advantage_in_milliseconds():
    b = RunningMeanBaseline()
    assert [b.advantage("g", m) for m in (3.0, 2.0, 4.0)] == [0.0, 1.0, 2.5 - 4.0]
    task = _task()
    agent = GdpAgent(2, GdpConfig(**SMALL), seed=0)
    ro = agent.rollout([task, task], ["g", "g"], np.random.default_rng(0))
    adv = agent.advantages(ro, {"g": task}, step=0)
    m = [d[3] for d in ro.data]
    assert adv.per_episode == pytest.approx([0.0, (m[0] - m[1]) * 1e3]) and adv.total == 2


def test_windowed_baseline_by_hand_and_through_a_checkpoint():
    b = RunningMeanBaseline(window=2)  # the mean of the last two makespans only
    assert [b.advantage("g", m) for m in (3.0, 2.0, 4.0)] == [0.0, 1.0, 2.5 - 4.0]
    again = RunningMeanBaseline(window=2)
    again.load_state_dict(b.state_dict())
    assert again.advantage("g", 1.0) == b.advantage("g", 1.0) == 3.0 - 1.0  # (2 + 4) / 2, not (3 + 2 + 4) / 3
    agent = GdpAgent(2, GdpConfig(**SMALL, baseline_window=5), seed=0)
    assert agent.baseline.window == 5 and GdpAgent(2, GdpConfig(**SMALL), seed=0).baseline.window == 0


@pytest.mark.parametrize("acting", ["epsilon-greedy", "sample"])
def test_ppo_loss_by_hand(acting):
    """Update 1 (ratio 1): the policy gradient; update 2: its batch's and the previous batch's clipped surrogates."""
    task = _task()
    agent = GdpAgent(2, GdpConfig(**SMALL, acting=acting, ppo_epochs=2, ppo_clip=0.2), seed=0)
    params = list(agent.model.parameters())
    rng = np.random.default_rng(0)
    first = agent.rollout([task], ["g"], rng)
    adv1 = Advantages([2.0], 1)
    logp = agent._log_probs(task)
    d1 = torch.from_numpy(first.data[0][1])
    np.testing.assert_allclose(first.data[0][2], logp[torch.arange(6), d1].detach().numpy(), rtol=1e-5)

    def entropy(lp):
        return -(lp.exp() * lp).sum(1).mean()

    want = torch.autograd.grad(-(2.0 * logp[torch.arange(6), d1].mean() + 0.1 * entropy(logp)), params)
    agent.model.zero_grad()
    agent.accumulate(first.data, adv1, {"g": task}, entropy_coef=0.1)
    for p, w in zip(params, want, strict=True):
        torch.testing.assert_close(p.grad, w, rtol=1e-4, atol=1e-7)
    with torch.no_grad():  # move the policy so that the first batch's ratios leave [0.8, 1.2]
        agent.model.out.bias.copy_(torch.tensor([3.0, -3.0]))
    second = agent.rollout([task], ["g"], rng)
    adv2 = Advantages([-1.0], 1)
    logp = agent._log_probs(task)
    terms = []
    for data, a in ((first.data, 2.0), (second.data, -1.0)):
        d = torch.from_numpy(data[0][1])
        r = torch.exp(logp[torch.arange(6), d] - torch.from_numpy(data[0][2]))
        terms.append(torch.minimum(r * a, r.clamp(0.8, 1.2) * a).mean() + 0.1 * entropy(logp))
    r1 = torch.exp(logp[torch.arange(6), torch.from_numpy(first.data[0][1])] - torch.from_numpy(first.data[0][2]))
    assert ((r1 < 0.8) | (r1 > 1.2)).any()  # the clip binds on some of the first batch's groups
    want = torch.autograd.grad(-(terms[0] + terms[1]) / 2, params)
    agent.model.zero_grad()
    agent.accumulate(second.data, adv2, {"g": task}, entropy_coef=0.1)
    for p, w in zip(params, want, strict=True):
        torch.testing.assert_close(p.grad, w, rtol=1e-4, atol=1e-7)


def test_behaviour_probability_of_epsilon_greedy_choices_by_hand():
    """old_prob=behaviour: PPO divides by the ε-greedy choice's own probability, (1 − ε)·[argmax] + ε / feasible."""
    agent = GdpAgent(3, GdpConfig(**SMALL, old_prob="behaviour"), seed=0)
    logp = np.log(np.array([[0.7, 0.2, 0.1], [0.1, 0.6, 0.3], [0.5, 0.5, 0.0]]))
    feasible = np.array([[1, 1, 1], [1, 1, 1], [1, 1, 0]], dtype=bool)
    got = agent._old_log_probs(logp, np.array([0, 2, 1]), 0.3, feasible)
    # group 0 took its argmax: 0.7 + 0.3/3; group 1 explored: 0.3/3; group 2 (2 feasible; argmax 0) explored: 0.3/2
    np.testing.assert_allclose(np.exp(got), [0.8, 0.1, 0.15], rtol=1e-6)
    policy = GdpAgent(3, GdpConfig(**SMALL), seed=0)  # the default: π_old's own probability
    np.testing.assert_allclose(np.exp(policy._old_log_probs(logp, np.array([0, 2, 1]), 0.3, feasible)),
                               [0.7, 0.3, 0.5], rtol=1e-6)


def test_imitation_loss_is_the_teachers_log_likelihood():
    task = _task(diamond())
    agent = GdpAgent(2, GdpConfig(**SMALL, stage="imitation"), seed=0)
    ro = agent.rollout([task], ["d"], np.random.default_rng(0))
    teacher = torch.from_numpy(teacher_placement(task))
    logp = agent._log_probs(task)
    params = list(agent.model.parameters())
    want = torch.autograd.grad(-logp[torch.arange(task.num_groups), teacher].mean(), params)
    agent.model.zero_grad()
    agent.accumulate(ro.data, Advantages([123.0], 1), {"d": task}, entropy_coef=0.5)  # no advantage, no entropy
    for p, w in zip(params, want, strict=True):
        torch.testing.assert_close(p.grad, w, rtol=1e-4, atol=1e-7)


# --------------------------------------------------------------------------------------- it learns
def test_it_learns_two_heavy_chains_on_two_identical_devices():
    """Two chains of three 1 s ops on two GPUs: one chain per device (3 s) is the optimum, all on one 6 s."""
    task = _task()
    agent = GdpAgent(2, GdpConfig(**SMALL, acting="sample", lr=3e-3, lr_final=3e-3), seed=0)
    trainer = Trainer(agent, {"g": task}, seed=0, budget=Budget(episodes=100), stopping=StoppingRule(0),
                      tensorboard=False)
    rows = []
    while not trainer.exhausted():
        rows += trainer.step()
    entropy = [r["entropy"] for r in rows]
    sampled = [r["sampled_runtime"] for r in rows]
    assert np.mean(entropy[:20]) > 0.5 * np.log(2) and np.mean(entropy[-20:]) < 0.1 * np.log(2)
    assert np.median(sampled[-20:]) < 0.8 * np.median(sampled[:20])
    devices = agent.place(task, np.random.default_rng(0))
    assert task.evaluate(devices).makespan == pytest.approx(3.0, rel=1e-3)
    assert len(set(devices[:3])) == len(set(devices[3:])) == 1 and devices[0] != devices[3]


def test_stage_one_reaches_the_critical_path_teacher():
    task = _task(diamond())
    teacher = task.evaluate(teacher_placement(task)).makespan
    agent = GdpAgent(2, GdpConfig(**SMALL, stage="imitation", lr=1e-2, lr_final=1e-2), seed=0)
    Trainer(agent, {"d": task}, seed=0, budget=Budget(episodes=40), stopping=StoppingRule(0),
            tensorboard=False).train()
    np.testing.assert_array_equal(agent.place(task, np.random.default_rng(0)), teacher_placement(task))
    assert task.evaluate(agent.place(task, np.random.default_rng(0))).makespan == pytest.approx(teacher)


# ----------------------------------------------------------------------- the CLI, stored runs, unseen graphs
def _json(capsys):
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_trains_resumes_and_places_graphs_it_never_saw_from_the_cli(tmp_path, capsys):
    runs, g = str(tmp_path / "runs"), graph_file(tmp_path)
    params = [f"--param={k}={v}" for k, v in {**SMALL, "acting": "sample", "lr": 3e-3, "lr_final": 3e-3}.items()]
    common = ["--cluster", "k80x2", "--runs-dir", runs, "--json"]
    assert run_command(["train", "--placer", "gdp", "--graphs", g, *params, "--episodes", "6", "--seed", "0", "--save",
                        *common]) == 0
    out = _json(capsys)
    assert out["episodes"] == 6 and out["learning_health"]["uniform_basis"].startswith("mean over op groups")
    assert run_command(["train", "--resume", out["run_id"], "--episodes", "10", "--runs-dir", runs, "--json"]) == 0
    assert _json(capsys)["episodes"] == 10
    run = RunStore(runs).load(out["run_id"])
    curve = run.read_table("learning_curve.csv")
    assert curve["episode"] == list(range(1, 11)) and curve["stage"] == ["sim"] * 10
    # zero-shot on graphs it never saw: another size, other op types
    assert run_command(["eval", out["run_id"], "--graphs", "gen:random?ops=12&seed=3", *common[:-1], "--json"]) == 0
    (row,) = _json(capsys)["results"]
    assert np.isfinite(row["makespan_s"]) and row["makespan_s"] >= row["lower_bound_s"]
    assert run_command(["place", "gen:random?ops=9&seed=4", "-c", "k80x2", "--placer", "gdp", "--param",
                        f"policy={run.path}", "--json"]) == 0
    placed = _json(capsys)
    assert placed["makespan_s"] > 0


def test_stage_two_starts_from_stage_one_through_init_from(tmp_path):
    from policies.rl.core.training_runs import start_training

    store, spec = RunStore(tmp_path), "gen:random?ops=8&seed=1"
    first = start_training("gdp", spec, "k80x2", params={**SMALL, "stage": "imitation"}, store=store,
                           budget=Budget(episodes=3), stopping=StoppingRule(0))
    second = start_training("gdp", spec, "k80x2", params=SMALL, store=store, budget=Budget(episodes=2),
                            stopping=StoppingRule(0), init_from=first.run_id, runs_dir=str(tmp_path))
    assert store.load(second.run_id).meta["parameters"]["init_from"] == first.run_id
    assert store.load(first.run_id).read_table("learning_curve.csv")["stage"] == ["imitation"] * 3
    from engine.errors import SpecError

    with pytest.raises(SpecError, match="networks differ in size"):
        start_training("gdp", spec, "k80x2", params={**SMALL, "hidden": 8}, budget=Budget(episodes=1),
                       init_from=first.run_id, runs_dir=str(tmp_path))
    with pytest.raises(SpecError, match="networks differ in size"):  # the output layer has one row per device
        start_training("gdp", spec, "k80x4", params=SMALL, budget=Budget(episodes=1), init_from=first.run_id,
                       runs_dir=str(tmp_path))


def test_load_weights_names_the_device_count():
    two, four = GdpAgent(2, GdpConfig(**SMALL)), GdpAgent(4, GdpConfig(**SMALL))
    with pytest.raises(ValueError, match="places on 2 devices, not 4"):
        four.load_weights(two.model.state_dict())


# ------------------------------------------------------------------------------------ rollout workers
def test_the_workers_gradients_add_up_to_the_learners_including_the_ppo_window():
    t = _task()
    params = {**SMALL, "batch": 4, "ppo_epochs": 2}
    learner = make_agent("gdp", 2, params, seed=0)
    reference = make_agent("gdp", 2, params, seed=0)
    config = learner.config.to_dict()
    workers = [RolloutWorker("gdp", t.cluster, config, {"g": t.graph}) for _ in range(2)]
    for update in range(2):  # the second update's loss also holds the first update's batch (the PPO window)
        weights = {k: v.detach().clone() for k, v in learner.model.state_dict().items()}
        state = learner.state_dict()
        parts = [w.rollout(weights, state, ["g", "g"], 10 * update + s) for s, w in enumerate(workers)]
        merged = learner.merge(parts)
        assert learner.episodes == 4 * (update + 1)
        reference.model.load_state_dict(weights)
        reference.model.zero_grad(set_to_none=True)
        whole = reference.merge(pickle.loads(pickle.dumps(parts)))
        backward(reference, whole, {"g": t}, entropy_coef=0.01, step=update)
        adv = learner.advantages(merged, {"g": t}, step=update)
        grads = [w.gradient(adv.part(2 * i, 2 * i + 2), 0.01) for i, w in enumerate(workers)]
        assert all(h is None for _, h in grads)  # the entropies were recorded by the rollout
        for name, p in reference.model.named_parameters():  # float32 sums in another order: relative to the scale
            torch.testing.assert_close(grads[0][0][name] + grads[1][0][name], p.grad, rtol=1e-4,
                                       atol=1e-5 * float(p.grad.abs().max()) + 1e-12)
        with torch.no_grad():  # a step, so the next update's ratios differ from 1
            for p in learner.model.parameters():
                p.add_(0.05 * torch.randn_like(p))
    assert len(reference.window) == 1 and all(len(w.agent.window) == 1 for w in workers)

