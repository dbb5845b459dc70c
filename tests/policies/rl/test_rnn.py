"""Tests for the RNN placer of Mirhoseini et al. (policies.rl.rnn.net, policies.rl.rnn.agent): network
shapes and masking, the group embedding worked out by hand, the §3.1 reward / baseline / failing
signal arithmetic, learning a known optimum, and seeded determinism."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
import torch
from rl_graphs import train_step

from engine.cluster import Device
from engine.graph.compgraph import CompGraph
from policies.rl.core.task import make_task
from policies.rl.rnn.agent import RNNAgent, advantages, max_group_count, vocabulary
from policies.rl.rnn.config import RNNConfig
from policies.rl.rnn.net import adjacency, output_shapes, type_bags
from tests.clusters import uniform_cluster

GB = 1e9
SMALL = {"hidden": 16, "type_dim": 4, "device_dim": 4, "attention": 8, "shape_len": 2}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def cluster(n: int = 2, memory: float = 100 * GB, bandwidth: float = 1 * GB):
    return uniform_cluster("test", [Device(f"gpu:{i}", "gpu", memory) for i in range(n)], bandwidth)


def graph(compute, edges=(), *, out=None, pers=None, types=None, colocate=None, pin=None) -> CompGraph:
    n = len(compute)
    return CompGraph("t", [f"op{i}" for i in range(n)], compute_any=np.asarray(compute, dtype=float),
                     output_bytes=None if out is None else np.asarray(out, dtype=float),
                     persistent_bytes=None if pers is None else np.asarray(pers, dtype=float),
                     edge_src=[s for s, _ in edges], edge_dst=[d for _, d in edges],
                     op_types=types, colocate=colocate, pin=pin)


def two_chains():
    """Chains op0→op1→op2 and op3→op4→op5 of 1 s ops whose 1 GB outputs take 1 s to cross the link."""
    return graph([1.0] * 6, [(0, 1), (1, 2), (3, 4), (4, 5)], out=[1 * GB] * 6)


def agent_for(tasks, num_devices: int = 2, seed: int = 0, **config) -> RNNAgent:
    cfg = RNNConfig(**{**SMALL, **config})
    return RNNAgent(num_devices, cfg, seed=seed, tasks=tasks)


def log_probs(agent: RNNAgent, task, devices: np.ndarray) -> torch.Tensor:
    """log p(P_i) of placements given by group (samples, groups), through the teacher-forced pass."""
    actions = torch.from_numpy(devices[:, task.order])
    logp = torch.log_softmax(agent.model(agent.inputs[task], actions), dim=2)
    return logp, logp.gather(2, actions.unsqueeze(2)).squeeze(2)


def grads(model) -> list[torch.Tensor]:
    return [torch.zeros_like(p) if p.grad is None else p.grad.clone() for p in model.parameters()]


# ---------------------------------------------------------------------------- network


def test_network_shapes_and_teacher_forcing_reproduces_the_sampled_steps():
    task = make_task(two_chains(), cluster(3), groups=None)
    agent = agent_for([task], num_devices=3)
    x = agent.inputs[task]
    assert agent.model.embed(x).shape == (6, 4 + 2 + 6)  # type_dim + shape_len + max_groups
    seen = []

    def pick(step, logp):
        seen.append(logp)
        return np.random.default_rng(step).integers(0, 3, size=len(logp))

    actions = agent.model.sample(x, 5, pick)
    assert actions.shape == (5, 6)
    logits = agent.model(x, torch.from_numpy(actions))
    assert logits.shape == (5, 6, 3)  # (K, groups, devices)
    np.testing.assert_allclose(torch.log_softmax(logits, dim=2).detach().numpy(), np.stack(seen, axis=1),
                               atol=1e-5)


def test_an_infeasible_device_has_probability_zero_and_is_never_sampled():
    g = graph([1.0] * 4, [(0, 1), (1, 2), (2, 3)], pin=[None, "gpu:2", None, None])
    task = make_task(g, cluster(3), groups=None)
    assert task.feasible[1].tolist() == [False, False, True]
    agent = agent_for([task], num_devices=3)
    rng = np.random.default_rng(0)
    stats = train_step(agent, {"g": task}, ["g"] * 64, rng, entropy_coef=0.0, step=0)
    devices = np.stack([s.best_devices for s in stats])
    assert (devices[:, 1] == 2).all()
    assert len(np.unique(devices[:, 0])) == 3  # the free groups do get every device
    probs = torch.softmax(agent.model(agent.inputs[task], torch.from_numpy(devices[:, task.order])), dim=2)
    pos = int(np.flatnonzero(task.order == 1)[0])
    assert (probs[:, pos, :2] == 0).all()
    assert probs[:, pos, 2].detach().numpy() == pytest.approx(1.0)
    assert agent.place(task, rng)[1] == 2


# ---------------------------------------------------------------------------- embedding


def grouped_graph() -> CompGraph:
    """op0, op1, op2 colocated (one group G); op3 and op4 alone.

    G's outgoing tensors: op2 (99999 B, to op3), op0 (999 B, to op4), op1 (9 B, to op3);
    op0 → op2 and op0 → op1 stay inside G. op3 (0 B) and op4 (9999 B) are sinks.
    """
    return graph([1.0] * 5, [(0, 1), (0, 2), (1, 3), (2, 3), (0, 4)], out=[999, 9, 99999, 0, 9999],
                 types=["MatMul", "Add", "MatMul", "Add", "Conv2D"], colocate=["G", "G", "G", None, None])


def test_output_shape_holds_the_largest_outgoing_tensors_log_scaled_and_zero_padded():
    task = make_task(grouped_graph(), cluster(), groups=None)
    grp = task.op_group
    assert task.num_groups == 3 and grp[0] == grp[1] == grp[2]
    shapes = output_shapes(task, 4)
    # log10(1 + bytes) / 10: 99999 → 0.5, 999 → 0.3, 9 → 0.1, 9999 → 0.4, 0 → 0
    np.testing.assert_allclose(shapes[grp[0]], [0.5, 0.3, 0.1, 0.0], atol=1e-7)
    np.testing.assert_allclose(shapes[grp[3]], [0.0, 0.0, 0.0, 0.0], atol=1e-7)
    np.testing.assert_allclose(shapes[grp[4]], [0.4, 0.0, 0.0, 0.0], atol=1e-7)
    np.testing.assert_allclose(output_shapes(task, 2)[grp[0]], [0.5, 0.3], atol=1e-7)


def test_type_bags_weight_each_type_by_its_share_of_the_group():
    task = make_task(grouped_graph(), cluster(), groups=None)
    grp = task.op_group
    vocab = vocabulary([task])
    assert vocab == ["Add", "Conv2D", "MatMul"]  # embedding rows 1, 2, 3; row 0: unknown
    bags = type_bags(task, vocab)
    assert bags[grp[0]] == pytest.approx({3: 2 / 3, 1: 1 / 3})
    assert bags[grp[3]] == {1: 1.0} and bags[grp[4]] == {2: 1.0}
    assert type_bags(task, ["MatMul"])[grp[0]] == pytest.approx({1: 2 / 3, 0: 1 / 3})
    # the network's type embedding of G is the share-weighted sum of the rows
    agent = agent_for([task])
    emb = agent.model.embed(agent.inputs[task])[:, :4]
    table = agent.model.type_embedding.weight
    pos = int(np.flatnonzero(task.order == grp[0])[0])
    torch.testing.assert_close(emb[pos], 2 / 3 * table[3] + 1 / 3 * table[1])


def test_adjacency_marks_direct_inputs_and_outputs_and_drops_groups_past_max_groups():
    # op0 → op1, op0 → op2, op1 → op3, op2 → op3; op4 isolated; every op its own group
    task = make_task(graph([1.0] * 5, [(0, 1), (0, 2), (1, 3), (2, 3)]), cluster(), groups=None)
    assert task.op_group.tolist() == [0, 1, 2, 3, 4]
    np.testing.assert_array_equal(adjacency(task, 5), [[0, 1, 1, 0, 0],
                                                       [1, 0, 0, 1, 0],
                                                       [1, 0, 0, 1, 0],
                                                       [0, 1, 1, 0, 0],
                                                       [0, 0, 0, 0, 0]])
    np.testing.assert_array_equal(adjacency(task, 3), [[0, 1, 1], [1, 0, 0], [1, 0, 0], [0, 1, 1], [0, 0, 0]])


# ---------------------------------------------------------------------------- REINFORCE arithmetic


def test_advantages_skip_failing_placements_only_after_the_grace_steps():
    rewards, oom = np.array([2.0, 3.0, 7.0]), np.array([False, False, True])
    adv, used = advantages(rewards, oom, 4.0, step=4999, grace_steps=5000)
    assert adv.tolist() == [-2.0, -1.0, 3.0] and used.tolist() == [True, True, True]
    adv, used = advantages(rewards, oom, 4.0, step=5000, grace_steps=5000)
    assert adv.tolist() == [-2.0, -1.0, 0.0] and used.tolist() == [True, True, False]


def test_hand_worked_update_with_two_samples():
    # two independent 4 s ops on 2 devices: apart, makespan 4 and R = sqrt(4) = 2; together,
    # makespan 8 and R = sqrt(8). Failing signal 3 = the baseline before the update.
    task = make_task(graph([4.0, 4.0]), cluster(), groups=None, failing_signal=3.0)
    agent = agent_for([task], baseline_init="failing", normalize_advantages=False)  # §3.1 as written
    beta = 0.5
    stats = train_step(agent, {"g": task}, ["g"] * 2, np.random.default_rng(3), entropy_coef=beta, step=0)
    devices = np.stack([s.best_devices for s in stats])
    expected = [4.0 if d[0] != d[1] else 8.0 for d in devices]
    assert [s.final.makespan for s in stats] == pytest.approx(expected)
    r = np.sqrt(expected)
    assert [s.reward for s in stats] == pytest.approx(-r)
    assert all(s.evaluations == 1 and s.best == s.final for s in stats)
    # B ← 0.95·3 + 0.05·mean(R); the update used the advantages R_i − 3
    assert agent.baseline.values["g"] == pytest.approx(0.95 * 3.0 + 0.05 * r.mean())
    got = grads(agent.model)
    agent.model.zero_grad()
    logp, chosen = log_probs(agent, task, devices)
    entropy = -(logp.exp() * logp).sum(dim=2)
    loss = ((torch.tensor(r, dtype=torch.float32) - 3.0) * chosen.sum(dim=1)).mean() - beta * entropy.sum(dim=1).mean()
    loss.backward()
    for a, b in zip(got, grads(agent.model), strict=True):
        torch.testing.assert_close(a, b)
    assert [s.entropy for s in stats] == pytest.approx(entropy.mean(dim=1).tolist(), abs=1e-6)


def test_default_update_starts_the_baseline_at_the_first_rewards_and_divides_by_their_spread():
    # the same two ops; K = 4 samples. B starts at the mean of the first update's rewards
    # (deviation 6) and the advantages are divided by the rewards' standard deviation (deviation 5)
    task = make_task(graph([4.0, 4.0]), cluster(), groups=None, failing_signal=3.0)
    agent = agent_for([task], samples=4)
    stats = train_step(agent, {"g": task}, ["g"] * 4, np.random.default_rng(1), entropy_coef=0.0, step=0)
    devices = np.stack([s.best_devices for s in stats])
    r = np.sqrt([4.0 if d[0] != d[1] else 8.0 for d in devices])
    assert r.std() > 0  # this seed samples both kinds of placement
    assert agent.baseline.values["g"] == pytest.approx(r.mean())  # 0.95·mean + 0.05·mean
    got = grads(agent.model)
    agent.model.zero_grad()
    _, chosen = log_probs(agent, task, devices)
    adv = torch.tensor((r - r.mean()) / r.std(), dtype=torch.float32)
    (adv * chosen.sum(dim=1)).mean().backward()
    for a, b in zip(got, grads(agent.model), strict=True):
        torch.testing.assert_close(a, b)


def oom_task():
    """op0 and op1 (0.6 GB of weights each) pinned to gpu:0 of 1 GB: every placement fails; op2 is free."""
    g = graph([1.0] * 3, [(0, 1), (1, 2)], pers=[0.6 * GB, 0.6 * GB, 0.0], pin=["gpu:0", "gpu:0", None])
    return make_task(g, cluster(memory=1 * GB), groups=None, failing_signal=5.0)


@pytest.mark.parametrize("step", [9, 10])
def test_failing_placements_count_before_the_grace_steps_and_are_skipped_after(step):
    task = oom_task()
    agent = agent_for([task], failing_grace_steps=10, normalize_advantages=False)
    agent.load_state_dict({"baseline": {"decay": 0.95, "values": {"g": 1.0}}})
    stats = train_step(agent, {"g": task}, ["g"] * 4, np.random.default_rng(0), entropy_coef=0.0, step=step)
    assert all(s.final.oom for s in stats)
    assert [s.reward for s in stats] == [-5.0] * 4  # R = the failing signal
    g = torch.cat([x.flatten() for x in grads(agent.model)])
    if step < 10:  # advantage 5 − 1 = 4 on every sample: a gradient, and B ← 0.95·1 + 0.05·5
        assert g.abs().max() > 0
        assert agent.baseline.values["g"] == pytest.approx(1.2)
    else:  # no sample takes part: no gradient, B unchanged
        assert (g == 0).all()
        assert agent.baseline.values["g"] == 1.0


# ---------------------------------------------------------------------------- learning, determinism


def train(agent: RNNAgent, task, updates: int, lr: float, rng: np.random.Generator) -> list:
    opt = torch.optim.Adam(agent.model.parameters(), lr=lr)
    k = agent.episodes_per_update
    out = []
    for i in range(updates):
        agent.model.zero_grad()
        out.append(train_step(agent, {"g": task}, ["g"] * k, rng, entropy_coef=1e-2, step=i))
        torch.nn.utils.clip_grad_norm_(agent.model.parameters(), agent.config.clip_grad)
        opt.step()
    return out


def test_learns_one_chain_per_device_on_two_chains():
    # a chain on one device takes 3 s; splitting a chain adds a 1 s transfer, both chains on one
    # device take 6 s: the optimum is 3 s, one chain per device (checked by enumeration).
    # The baseline starts at the failing signal, sqrt(10 · 6 s) = 7.75, far above every reward
    # (sqrt(3) … sqrt(6)), so for its first ~50 updates every sample is reinforced; at lr 1e-2 that
    # collapsed the policy onto what it happened to sample in 3 of 8 seeds tried (7 of 10 at hidden
    # 64), at 3e-3 in none of 20.
    task = make_task(two_chains(), cluster(), groups=None)
    ms = {p: task.evaluate(np.array(p)).makespan for p in itertools.product(range(2), repeat=6)}
    assert min(ms.values()) == pytest.approx(3.0)
    assert sorted(p for p, m in ms.items() if m < 3.5) == [(0, 0, 0, 1, 1, 1), (1, 1, 1, 0, 0, 0)]
    agent = agent_for([task], hidden=32, attention=16, baseline_init="failing", normalize_advantages=False)
    train(agent, task, 300, 3e-3, np.random.default_rng(0))
    best = agent.place(task, np.random.default_rng(0))
    assert task.evaluate(best).makespan == pytest.approx(3.0)


def test_same_seed_same_samples_and_a_json_state():
    task = make_task(two_chains(), cluster(), groups=None)
    runs = []
    for _ in range(2):
        agent = agent_for([task], seed=7, samples=4)
        stats = train(agent, task, 3, 1e-2, np.random.default_rng(11))
        runs.append((np.stack([s.best_devices for ss in stats for s in ss]),
                     agent.place(task, np.random.default_rng(5), greedy=False), json.dumps(agent.state_dict())))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    assert runs[0][2] == runs[1][2]
    fresh = agent_for([task], seed=7, samples=4)
    fresh.load_state_dict(json.loads(runs[0][2]))
    assert fresh.state_dict() == json.loads(runs[0][2])
    cfg = fresh.config.to_dict()
    assert cfg["vocab"] == [""] and cfg["max_groups"] == 6 and math.isfinite(cfg["lr"])


def test_vocabulary_and_max_groups_set_in_the_config_override_those_of_the_tasks():
    task = make_task(grouped_graph(), cluster(), groups=None)
    agent = RNNAgent(2, RNNConfig(**SMALL, vocab=["MatMul"], max_groups=2), tasks=[task])
    assert agent.model.type_embedding.num_embeddings == 2  # unknown + MatMul
    assert agent.model.embed(agent.inputs[task]).shape == (3, 4 + 2 + 2)
    with pytest.raises(ValueError, match="training graphs"):
        RNNAgent(2, RNNConfig(**SMALL))
    with pytest.raises(ValueError, match="training graphs"):
        max_group_count([])
