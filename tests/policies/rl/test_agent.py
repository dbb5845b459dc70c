"""policies.rl.core.agent: the per-task cache both agents use (PerTask) and the rollout/backward split."""

from __future__ import annotations

import dataclasses
import gc

import numpy as np
import pytest
from rl_graphs import cluster

from engine.specs import load_graph
from policies.rl.core.agent import PerTask
from policies.rl.core.task import PlacementTask, make_task
from policies.rl.registry import make_agent


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
    task = None
    for i in range(8):
        built = make_task(load_graph(f"gen:random?ops={12 + 5 * (i % 4)}&seed={i}"), cluster(2), groups=None)
        fields = {f.name: getattr(built, f.name) for f in dataclasses.fields(PlacementTask)}
        # the old task is freed and the new one may take its memory, and so its id (CPython); with
        # the id-keyed caches this failed: "could not broadcast input array from shape (12,2) into (17,2)"
        task = None
        task = PlacementTask(**fields)
        fresh = make_agent(placer, 2, params, seed=3)
        mine = agent.place(task, np.random.default_rng(0), greedy=False)
        theirs = fresh.place(task, np.random.default_rng(0), greedy=False)
        np.testing.assert_array_equal(mine, theirs, err_msg=f"graph {i}")


@pytest.mark.parametrize("placer", ["placeto", "rnn"])
def test_a_rollout_travels_between_processes_and_gives_the_same_gradient(placer):
    # Trainer.collect / Trainer.update: a rollout holds no tensors and no tasks, so another
    # process can collect it from the weights; backward on the copy equals backward in place
    import pickle

    import torch
    from rl_graphs import train_step, two_chains

    from policies.rl.core.agent import backward

    task = make_task(two_chains(0.1e9), cluster(2), groups=None)
    params: dict = {"groups": None, "batch": 4} if placer == "placeto" else \
        {"groups": None, "samples": 4, "hidden": 16, "type_dim": 4, "device_dim": 4, "attention": 8}
    here, there = (make_agent(placer, 2, params, seed=1, tasks=[task]) for _ in range(2))
    keys = ["g"] * 4
    train_step(here, {"g": task}, keys, np.random.default_rng(5), entropy_coef=0.01, step=0)
    rollout = pickle.loads(pickle.dumps(there.rollout([task] * 4, keys, np.random.default_rng(5))))
    backward(there, rollout, {"g": task}, entropy_coef=0.01, step=0)
    for a, b in zip(here.model.parameters(), there.model.parameters(), strict=True):
        torch.testing.assert_close(a.grad, b.grad)
