"""Placeto's states (policies.rl.placeto.state): features, pooling sets and batched sparse matrices
worked out by hand on the diamond graph."""

from __future__ import annotations

import numpy as np
import torch
from rl_graphs import cluster, diamond

from policies.rl.core.task import make_task
from policies.rl.placeto.agent import PlacetoAgent
from policies.rl.placeto.config import PlacetoConfig
from policies.rl.placeto.state import state_batch

torch.set_num_threads(1)


def test_features_flags_and_one_hot():
    t = make_task(diamond(), cluster(), groups=None)
    agent = PlacetoAgent(2, PlacetoConfig(groups=None, batch=1, network="paper"), seed=0)
    ep = agent._start(t, "k", np.random.default_rng(0))
    ep.dev[:] = [0, 1, 1, 0, 1]
    ep.visited[:] = [True, False, False, False, False]
    x = agent._features(ep, 1)
    mean_time = 12.0 / 5
    np.testing.assert_allclose(x[:, 0], np.log1p(np.array([1, 2, 3, 4, 2]) / mean_time), rtol=1e-6)
    np.testing.assert_allclose(x[:, 1], np.log(2.0), rtol=1e-6)  # equal outputs: log1p(1)
    np.testing.assert_array_equal(x[:, 2:4], [[1, 0], [0, 1], [0, 1], [1, 0], [0, 1]])
    np.testing.assert_array_equal(x[:, 4], [1, 0, 0, 0, 0])  # visited
    np.testing.assert_array_equal(x[:, 5], [0, 1, 0, 0, 0])  # current


def test_pooling_sets_are_parents_children_parallel():
    t = make_task(diamond(), cluster(), groups=None)
    agent = PlacetoAgent(2, PlacetoConfig(groups=None), seed=0)
    parents, children, parallel = agent.structure[t].sets
    l_node = 1
    assert parents[l_node].tolist() == [0]
    assert children[l_node].tolist() == [3]
    assert parallel[l_node].tolist() == [2, 4]  # r and u neither reach nor are reached by l


def test_batched_sparse_matrices_average_and_carry_their_transposes():
    t = make_task(diamond(), cluster(), groups=None)
    agent = PlacetoAgent(2, PlacetoConfig(groups=None, network="paper"), seed=0)
    ep = agent._start(t, "k", np.random.default_rng(0))
    gs = agent.structure[t]
    b = state_batch([(gs, t.feasible, agent._features(ep, 1), 1), (gs, t.feasible, agent._features(ep, 3), 3)],
                    grad=True)
    for pair in (b.down, b.up, b.members, *b.pools):
        torch.testing.assert_close(pair.a_t.to_dense(), pair.a.to_dense().T)
    down = b.down.a.to_dense()
    assert down[3, 1] == down[3, 2] == 0.5  # t averages its parents l and r
    assert down[8, 6] == down[8, 7] == 0.5  # the same in the second state (offset 5)
    parents, children, parallel = (p.a.to_dense() for p in b.pools)
    assert parents[0].tolist() == [1.0, 0, 0, 0, 0, 0, 0, 0, 0, 0]  # l's parent: s
    assert parallel[0, 2] == parallel[0, 4] == 0.5  # l's parallel nodes: r and u
    np.testing.assert_allclose(parents[1, 5:], [1 / 3, 1 / 3, 1 / 3, 0, 0], rtol=1e-6)  # t: s, l, r
    assert children[1].sum() == 0  # t is a sink
