"""policies.rl.core.task: grouping structure, colocation sets, and the objective (engine.sim.objectives,
CONTRACTS §4) on devices of unequal memory."""

from __future__ import annotations

import numpy as np
import pytest
from rl_graphs import GB, cluster, diamond, graph

from engine.cluster import Cluster, Device, Link, SimulationSettings
from engine.sim.objectives import memory_penalized_runtime, sqrt_runtime
from engine.sim.simulator import simulate
from policies.rl.core.task import make_task


def test_task_groups_structure_and_scale():
    t = make_task(diamond(), cluster(), groups=None)
    assert t.num_groups == 5
    # s reaches l, r, t; l and r reach t; u reaches nothing and nothing reaches u
    s, left, r, tt, u = range(5)
    assert t.reach[s].tolist() == [False, True, True, True, False]
    assert t.reach[:, tt].tolist() == [True, True, True, False, False]
    assert not t.reach[u].any() and not t.reach[:, u].any()
    assert t.order.tolist() == [s, left, r, tt, u]
    # lower bound: max(critical path s-r-t = 8 s, 12 s / 2 devices) = 8 s
    assert t.scale == pytest.approx(8.0)
    np.testing.assert_allclose(t.group_time, [1, 2, 3, 4, 2])


def test_memory_penalty_in_the_objective():
    # 3 GB of persistent state on a 2 GB device: 1 GB over the limit → +2 s (c = 2 s/GB)
    ops = [{"name": "w", "compute": 1.0, "persistent_bytes": 3 * GB}]
    t = make_task(graph(ops, []), cluster(2, memory=2 * GB), groups=None)
    ev = t.evaluate(np.array([0]))
    assert ev.oom and ev.makespan == pytest.approx(1.0)
    assert ev.objective == pytest.approx(1.0 + 2.0 * 1.0)


def _small_and_big() -> Cluster:
    devs = (Device("gpu:0", "gpu", 2 * GB), Device("gpu:1", "gpu", 5 * GB))
    return Cluster("small-and-big", devs, Link(1 * GB), (), SimulationSettings("default"))


def test_objective_limit_is_the_tightest_device_as_engine_objectives_says():
    # 3 GB of state on the roomy 5 GB device. CONTRACTS §4 / engine.sim.objectives: M = the tightest
    # device's memory (2 GB) → 1 s + 2 s/GB · (3 − 2) GB = 3 s. Reading M as the memory of the
    # device with the peak (5 GB) would give 1 s: the two readings differ here.
    ops = [{"name": "w", "compute": 1.0, "persistent_bytes": 3 * GB}]
    g, c = graph(ops, []), _small_and_big()
    t = make_task(g, c, groups=None)
    ev = t.evaluate(np.array([1]))
    assert not ev.oom and ev.peak_gb == pytest.approx(3.0)
    assert ev.objective == pytest.approx(3.0)
    assert ev.objective == pytest.approx(memory_penalized_runtime(simulate(g, c, np.array([1]))))


def test_sqrt_reward_is_engine_sqrt_runtime():
    ops = [{"name": "w", "compute": 4.0, "persistent_bytes": 3 * GB}]
    g, c = graph(ops, []), _small_and_big()
    t = make_task(g, c, groups=None, failing_signal=7.0)
    fits, fails = t.evaluate(np.array([1])), t.evaluate(np.array([0]))
    assert t.sqrt_reward(fits) == pytest.approx(2.0) == sqrt_runtime(simulate(g, c, np.array([1])), 7.0)
    assert t.sqrt_reward(fails) == 7.0 == sqrt_runtime(simulate(g, c, np.array([0])), 7.0)


def test_colocation_sets_are_united_into_one_group():
    # w and its update u are colocated (as TF colocates a variable with its update); the group
    # graph w+u → f → ... → w+u is cyclic, which the learned placers accept
    ops = [{"name": "w", "compute": 1.0, "colocate": "var"}, {"name": "f", "compute": 1.0},
           {"name": "u", "compute": 1.0, "colocate": "var"}, {"name": "x", "compute": 1.0}]
    t = make_task(graph(ops, [("w", "f"), ("f", "u")]), cluster(), groups=None)
    assert t.num_groups == 3
    assert t.op_group[0] == t.op_group[2] != t.op_group[1]
    wu, f = t.op_group[0], t.op_group[1]
    assert t.reach[wu, f] and t.reach[f, wu] and t.reach[wu, wu]  # one cycle
    p = t.expand(t.random_placement(np.random.default_rng(0)))
    assert p[0] == p[2]


def test_merge_and_colocate_reaches_its_target_despite_non_convex_colocation_sets():
    """A Keras import colocates each variable with its update op: a set that is not convex (the
    variable feeds the forward pass, whose gradient feeds the update). Started from those sets,
    the quotient is cyclic and Merge-and-Colocate, which keeps it acyclic, stalls — at 6 groups
    for a target of 2 on this two-layer MLP. Grouping without them and uniting them afterwards
    reaches the target, with every variable on its update's group."""
    import keras

    from engine.importers.tensorflow_graph import graph_from_keras
    from policies.rl.core.task import learning_groups

    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(4)])
    g = graph_from_keras(model, 4)
    groups = learning_groups(g, 2)
    assert int(groups.max()) + 1 <= 2
    ids = g.colocation_ids
    for k in range(int(ids.max()) + 1):
        assert len(set(groups[ids == k].tolist())) == 1


def test_grouping_keeps_its_target_where_the_colocation_rule_would_swallow_the_graph():
    """Every op of a chain feeds only the next: Mirhoseini §3.3's rule run to its end leaves one group (the
    DOPPLER authors' transformer block went from 182 ops to one), and no placement is left to learn. The rule
    stops at the target instead: a→…→e merged (8 − 4 merges), then f, g, h alone."""
    ops = [{"name": n, "compute": 1.0, "output_bytes": 1000.0} for n in "abcdefgh"]
    g = graph(ops, list(zip("abcdefg", "bcdefgh", strict=True)))
    t = make_task(g, cluster(), groups=4)
    assert t.num_groups == 4
    assert t.op_group.tolist() == [0, 0, 0, 0, 0, 1, 2, 3]
