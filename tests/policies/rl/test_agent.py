"""policies.rl.agent: the per-task cache both agents use (PerTask) and the rollout/backward split."""

from __future__ import annotations

import dataclasses
import gc

import numpy as np
import pytest
from rl_graphs import cluster

from engine.sources import load_graph
from policies.rl.agent import PerTask
from policies.rl.registry import make_agent
from policies.rl.task import PlacementTask, make_task


def test_per_task_builds_once_per_task_and_forgets_freed_tasks():
    built = []
    cache = PerTask(2, lambda task: built.append(task.num_groups) or len(built))
    t = make_task(load_graph("gen:random?ops=10&seed=0"), cluster(2), groups=None)
    assert cache[t] == 1 and cache[t] == 1 and built == [10]  # built once
    u = make_task(load_graph("gen:random?ops=12&seed=1"), cluster(2), groups=None)
    assert cache[u] == 2 and len(cache) == 2
    del t
    gc.collect()
    assert len(cache) == 1  # the freed task's entry went with it
    with pytest.raises(ValueError, match="places on 3 devices"):
        PerTask(3, lambda task: 0)[u]


@pytest.mark.parametrize("placer", ["placeto", "rnn"])
def test_one_agent_places_many_graphs_like_a_fresh_agent(placer):
    # Defect: agents cached a task's structures under id(task); a freed task's id is reused by
    # the next one, which then got the old graph's features (or a shape error).
    params: dict = {"groups": None}
    if placer == "rnn":
        params.update(hidden=16, type_dim=4, device_dim=4, attention=8, vocab=["op"], max_groups=40)
    agent = make_agent(placer, 2, params, seed=3)
    task, reused = None, 0
    for i in range(8):
        built = make_task(load_graph(f"gen:random?ops={12 + 5 * (i % 4)}&seed={i}"), cluster(2), groups=None)
        fields = {f.name: getattr(built, f.name) for f in dataclasses.fields(PlacementTask)}
        old_id = id(task)
        task = None  # freed: the new task below takes its memory, and so its id (CPython)
        task = PlacementTask(**fields)
        reused += id(task) == old_id
        fresh = make_agent(placer, 2, params, seed=3)
        mine = agent.place(task, np.random.default_rng(0), greedy=False)
        theirs = fresh.place(task, np.random.default_rng(0), greedy=False)
        np.testing.assert_array_equal(mine, theirs, err_msg=f"graph {i}")
    assert reused >= 1  # the premise: ids were reused
