"""policies.rl.task: grouping structure, the objective (engine.objectives, CONTRACTS §4), and the
per-task cache of prepared structures the agents share."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from rl_graphs import GB, cluster, diamond, graph

from engine.cluster import Cluster, Device, Link, SimulationSettings
from engine.objectives import memory_penalized_runtime, sqrt_runtime
from engine.simulator import simulate
from engine.sources import load_graph
from policies.rl.task import PlacementTask, make_task


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
    # 3 GB of state on the roomy 5 GB device. CONTRACTS §4 / engine.objectives: M = the tightest
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


@pytest.mark.parametrize("placer", ["placeto", "rnn"])
def test_one_agent_places_many_graphs_like_a_fresh_agent(placer):
    # Defect: agents cached a task's structures under id(task); a freed task's id is reused by
    # the next one, which then got the old graph's features (or a shape error).
    from policies.rl.agents import make_agent

    params: dict = {"groups": None}
    extras = None
    if placer == "rnn":
        params.update(hidden=16, type_dim=4, device_dim=4, attention=8)
        extras = {"vocab": ["op"], "max_groups": 40}
    agent, _ = make_agent(placer, 2, params, seed=3, extras=extras)
    task, reused = None, 0
    for i in range(8):
        built = make_task(load_graph(f"gen:random?ops={12 + 5 * (i % 4)}&seed={i}"), cluster(2), groups=None)
        fields = {f.name: getattr(built, f.name) for f in dataclasses.fields(PlacementTask)}
        old_id = id(task)
        task = None  # freed: the new task below takes its memory, and so its id (CPython)
        task = PlacementTask(**fields)
        reused += id(task) == old_id
        fresh, _ = make_agent(placer, 2, params, seed=3, extras=extras)
        mine = agent.place(task, np.random.default_rng(0), greedy=False)
        theirs = fresh.place(task, np.random.default_rng(0), greedy=False)
        np.testing.assert_array_equal(mine, theirs, err_msg=f"graph {i}")
    assert reused >= 4  # the premise: ids were reused
