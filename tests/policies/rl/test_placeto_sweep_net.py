"""Placeto's network as its authors built it (policies.rl.placeto.sweep_net): the level-by-level sweeps
against the authors' node-by-node loop, summed pooling, the head's sizes, the features worked out by hand,
and the gradient against a dense re-computation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from rl_graphs import cluster, diamond, graph

from policies.rl.core.task import make_task
from policies.rl.placeto.agent import PlacetoAgent
from policies.rl.placeto.config import PlacetoConfig
from policies.rl.placeto.state import sweep_batch, sweep_features, union_group
from policies.rl.placeto.sweep_net import SweepNet

torch.set_num_threads(1)


def _dag(skips: bool = False):
    """a → b → d, a → c → d, c → e, plus f alone: levels 0, 1, 1, 2, 2, 0 top-down. ``skips`` adds
    a → d and f → e, so that a level reads rows of two earlier levels."""
    ops = [{"name": n, "compute": float(i + 1), "output_bytes": 100.0 * (i + 1)} for i, n in enumerate("abcdef")]
    extra = [("a", "d"), ("f", "e")] if skips else []
    return graph(ops, [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"), ("c", "e"), *extra], name="dag")


def _reference(net: SweepNet, x: torch.Tensor, edges: list[tuple[int, int]], order: list[int], v: int,
               sets: list[list[int]]) -> torch.Tensor:
    """The authors' computation (Messenger.build, the tri-aggregators, the classifier) node by node."""
    t = net.transform(x)

    def sweep(messenger, nodes, preds):
        emb: dict[int, torch.Tensor] = {}
        for n in nodes:
            emb[n] = t[n]
            msgs = [emb[u] for u in preds(n)]
            if msgs:
                agg = messenger.agg
                emb[n] = emb[n] + torch.relu(agg.g(sum(torch.relu(agg.f(m)) for m in msgs)))
        return torch.stack([emb[n] for n in range(len(x))])

    down = sweep(net.down, order, lambda n: [u for u, w in edges if w == n])
    up = sweep(net.up, list(reversed(order)), lambda n: [w for u, w in edges if u == n])
    out = torch.cat([down, up], dim=1)
    pooled = []
    for agg, members in zip(net.pool, sets, strict=True):
        s = sum((torch.relu(agg.f(out[u])) for u in members), torch.zeros(out.shape[1]))
        pooled.append(torch.relu(agg.g(s)))
    return net.policy(torch.cat([*pooled, out[v]]))


def test_sweeps_and_pooling_match_the_authors_node_by_node_loop():
    t = make_task(_dag(), cluster(2), groups=None)
    agent = PlacetoAgent(2, PlacetoConfig(groups=None, devices="separate"), seed=3)
    gs = agent.structure[t]
    assert gs.down_sweep.bounds == [0, 2, 4, 6]  # levels {a, f}, {b, c}, {d, e}
    rng = np.random.default_rng(0)
    edges = [tuple(e) for e in t.edges.T.tolist()]
    states = []
    for v in (0, 2, 3, 5):
        x = rng.random((6, 7)).astype(np.float32)
        states.append((gs, t.feasible, x, v))
    logits = agent.model(sweep_batch(states))
    with torch.no_grad():  # the rollouts' path: buffers written level by level (_Messenger._infer)
        rollout = agent.model(sweep_batch(states))
    torch.testing.assert_close(rollout, logits.detach(), rtol=1e-6, atol=1e-6)
    for row, (_, _, x, v) in enumerate(states):
        sets = [gs.sets[0][v].tolist(), gs.sets[1][v].tolist(), gs.sets[2][v].tolist()]
        ref = _reference(agent.model, torch.from_numpy(x), edges, t.order.tolist(), v, sets)
        torch.testing.assert_close(logits[row], ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("variant", ["full", "simple-aggregator"])
@pytest.mark.parametrize("grad", [False, True])
def test_states_of_two_graphs_in_one_batch_keep_their_order(variant, grad):
    """A rollout's batch over several graphs runs as one disjoint union (a copy of its graph per state),
    and gives each state the logits (and the gradient) it gets alone."""
    t1 = make_task(_dag(), cluster(2), groups=None)
    t2 = make_task(diamond(), cluster(2), groups=None)
    agent = PlacetoAgent(2, PlacetoConfig(groups=None, variant=variant, devices="separate"), seed=0)
    ep1, ep2 = agent._start(t1, "a", np.random.default_rng(0)), agent._start(t2, "b", np.random.default_rng(0))
    items = [(agent.structure[t1], t1.feasible, agent._features(ep1, 1), 1),
             (agent.structure[t2], t2.feasible, agent._features(ep2, 3), 3),
             (agent.structure[t1], t1.feasible, agent._features(ep1, 4), 4)]
    batch = sweep_batch(items)
    assert len(batch.groups) == 1 and batch.groups[0].members is not None  # 3 states of 2 graphs: a union
    assert batch.groups[0].down.bounds[-1] == 6 + 5 + 6  # one copy per state
    with torch.set_grad_enabled(grad):
        together = agent.model(batch)
        alone = torch.cat([agent.model(sweep_batch([it])) for it in items])
    torch.testing.assert_close(together, alone, rtol=1e-5, atol=1e-6)
    if grad:
        grads = []
        for logits in (together, alone):
            agent.model.zero_grad()
            (logits * torch.arange(1.0, 7.0).view(3, 2)).sum().backward(retain_graph=True)
            grads.append([p.grad.clone() for p in agent.model.parameters() if p.grad is not None])
        for a, b in zip(*grads, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
    many = [items[0]] * 4 + [items[1]]  # more than two states per graph: one group per graph, not a union
    assert [g.members is None for g in sweep_batch(many).groups] == [True, True]


def test_union_plans_keep_no_graph_alive():
    """The union's sweep plans are cached by the graphs' ids, through weak references only."""
    import gc
    import weakref

    tasks = [make_task(_dag(), cluster(2), groups=None), make_task(diamond(), cluster(2), groups=None)]
    agent = PlacetoAgent(2, PlacetoConfig(groups=None, devices="separate"), seed=0)
    items = [(agent.structure[t], t.feasible, np.zeros((t.num_groups, 7), dtype=np.float32), 0) for t in tasks]
    assert union_group(items).members is not None
    gone = weakref.ref(items[0][0])
    del agent, items
    gc.collect()
    assert gone() is None


def test_head_sizes_and_glorot_initialisation():
    net = SweepNet(2, 7)
    sizes = [m.out_features for m in net.policy if isinstance(m, torch.nn.Linear)]
    assert sizes == [112, 56, 2]  # hidden [2·I, I] over I = 8·(5 + 2) = 56 (the authors' classifier)
    first = net.policy[0]
    bound = math.sqrt(6.0 / (56 + 112))
    assert first.weight.abs().max().item() <= bound and first.weight.abs().max().item() > 0.9 * bound
    assert torch.count_nonzero(first.bias) == 0


@pytest.mark.parametrize("skips", [False, True])
def test_gradient_matches_the_reference_computation(skips):
    t = make_task(_dag(skips), cluster(2), groups=None)
    agent = PlacetoAgent(2, PlacetoConfig(groups=None, devices="separate"), seed=1)
    gs = agent.structure[t]
    assert len(gs.down_sweep.gathers[1]) == (2 if skips else 1)  # level 2 reads levels 0 and 1, or 1 only
    x = np.random.default_rng(1).random((6, 7)).astype(np.float32)
    agent.model(sweep_batch([(gs, t.feasible, x, 2)]))[0].square().sum().backward()
    fast = [p.grad.clone() for p in agent.model.parameters()]
    agent.model.zero_grad()
    sets = [gs.sets[i][2].tolist() for i in range(3)]
    edges = [tuple(e) for e in t.edges.T.tolist()]
    _reference(agent.model, torch.from_numpy(x), edges, t.order.tolist(), 2, sets).square().sum().backward()
    for a, p in zip(fast, agent.model.parameters(), strict=True):
        torch.testing.assert_close(a, p.grad, rtol=1e-4, atol=1e-6)


def test_features_are_scaled_as_the_authors_scale_them():
    t = make_task(diamond(), cluster(2), groups=None)  # s(1) → l(2), r(3) → t(4); u(2) alone
    agent = PlacetoAgent(2, PlacetoConfig(groups=None, devices="separate"), seed=0)
    gs = agent.structure[t]
    start = np.array([0.0, 1.0, 1.0, 4.0, 0.0])
    x = sweep_features(gs, np.array([0, 1, 1, 0, 1]), np.array([2, 1, 0, 0, 0]), 1, start, 2)
    np.testing.assert_allclose(x[:, 0], np.array([1, 2, 3, 4, 2]) / 4, rtol=1e-6)  # run time ÷ column max
    np.testing.assert_allclose(x[:, 1], 1.0)  # equal outputs
    np.testing.assert_array_equal(x[:, 2], [2, 1, 0, 0, 0])  # visits
    np.testing.assert_array_equal(x[:, 3], [0, 1, 0, 0, 0])  # current
    np.testing.assert_allclose(x[:, 4], np.array([-1, 0, 0, 3, -1]) / 3, rtol=1e-6)  # start − current's, ÷ |max|
    np.testing.assert_array_equal(x[:, 5:], [[1, 0], [0, 1], [0, 1], [1, 0], [0, 1]])
    no_start = sweep_features(gs, np.zeros(5, dtype=int), np.zeros(5), 0, None, 2)
    assert not no_start[:, 4].any()


def test_start_times_come_from_the_simulation_of_the_current_placement():
    t = make_task(diamond(), cluster(2), groups=None)
    ev = t.evaluate(np.array([0, 0, 1, 0, 1]), start=True)
    np.testing.assert_allclose(ev.group_start[[0, 1]], [0.0, 1.0])  # s runs 0–1 s, then l on the same device
    schedule_start = t.sim.run(t.expand(np.array([0, 0, 1, 0, 1]))).op_start
    np.testing.assert_allclose(ev.group_start, schedule_start)  # one op per group here
