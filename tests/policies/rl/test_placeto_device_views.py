"""Placeto's network scoring every device alike (policies.rl.placeto.device_views): renaming identical
devices renames the logits, on every path the network takes (one graph or a union, with and without
autograd); devices that differ are told apart by their descriptors; stored runs keep their network."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from rl_graphs import GB, cluster, graph, two_chains

from engine.cluster import Cluster, Device, Link, SimulationSettings
from policies.rl.core.task import make_task
from policies.rl.placeto.agent import PlacetoAgent
from policies.rl.placeto.config import PlacetoConfig
from policies.rl.placeto.device_views import VIEW_COLUMNS, SharedDeviceSweepNet, device_view
from policies.rl.placeto.state import sweep_batch, union_group
from policies.rl.placeto.sweep_net import GROUP_COLUMNS, SweepBatch
from policies.rl.registry import stored_params

torch.set_num_threads(1)


def _fork():
    """a → b, a → c, b → d, c → d, plus e alone: a small graph with parallel branches."""
    ops = [{"name": n, "compute": float(i + 1), "output_bytes": 1e6 * (i + 1)} for i, n in enumerate("abcde")]
    return graph(ops, [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")], name="fork")


def _states(agent: PlacetoAgent, t, seed: int) -> list:
    """Six states of ``t`` along a random walk: features of random placements and visit counts."""
    rng = np.random.default_rng(seed)
    ep = agent._start(t, "k", rng)
    out = []
    for v in [*t.order.tolist(), int(t.order[0])]:
        ep.dev = rng.integers(0, t.num_devices, t.num_groups)
        ep.visited[v] += 1
        out.append((t, agent._features(ep, v), v))
    return out


def _renamed(states: list, perm: np.ndarray) -> list:
    """The same states with device d renamed perm[d] (the one-hot columns moved)."""
    d = len(perm)
    out = []
    for t, x, v in states:
        y = x.copy()
        y[:, GROUP_COLUMNS + perm] = x[:, GROUP_COLUMNS:GROUP_COLUMNS + d]
        out.append((t, y, v))
    return out


@pytest.mark.parametrize("grad", [False, True])
def test_renaming_identical_devices_renames_the_logits(grad):
    t = make_task(_fork(), cluster(4), groups=None)
    agent = PlacetoAgent(4, PlacetoConfig(groups=None), seed=0)
    assert isinstance(agent.model, SharedDeviceSweepNet)
    states = _states(agent, t, seed=1)
    perm = np.array([2, 0, 3, 1])
    with torch.set_grad_enabled(grad):
        before = agent._logits(states, grad=grad)
        after = agent._logits(_renamed(states, perm), grad=grad)
    assert not torch.allclose(before, before[:, [1, 0, 2, 3]])  # the logits do differ between devices
    torch.testing.assert_close(after[:, perm], before, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("grad", [False, True])
def test_a_union_of_graphs_gives_the_logits_of_one_group_per_graph(grad):
    agent = PlacetoAgent(4, PlacetoConfig(groups=None), seed=2)
    tasks = [make_task(_fork(), cluster(4), groups=None), make_task(two_chains(), cluster(4), groups=None)]
    states = [_states(agent, t, seed=3)[i] for t in tasks for i in (0, 2, 4)]  # three a graph: one group each
    items = [(agent.structure[t], t.feasible, x, v) for t, x, v in states]
    union = union_group(items)
    assert union.members is not None
    per_graph = sweep_batch(items)
    assert all(g.members is None for g in per_graph.groups) and len(per_graph.groups) == 2
    with torch.set_grad_enabled(grad):
        torch.testing.assert_close(agent.model(SweepBatch([union], len(items))), agent.model(per_graph),
                                   rtol=1e-5, atol=1e-5)


def test_a_device_view_holds_the_group_columns_its_own_column_and_its_descriptors():
    x = torch.arange(2 * 3 * (GROUP_COLUMNS + 2), dtype=torch.float32).view(2, 3, GROUP_COLUMNS + 2)
    devices = torch.tensor([[1.0, 0.5], [0.25, 1.0]])
    v = device_view(x, devices, 1)
    assert v.shape == (2, 3, VIEW_COLUMNS)
    torch.testing.assert_close(v[..., :GROUP_COLUMNS], x[..., :GROUP_COLUMNS])
    torch.testing.assert_close(v[..., GROUP_COLUMNS], x[..., GROUP_COLUMNS + 1])
    torch.testing.assert_close(v[..., GROUP_COLUMNS + 1:], devices[1].expand(2, 3, 2))


def test_devices_that_differ_are_told_apart_by_their_speed_and_memory():
    # a state in which no group sits on either device (all one-hot columns zero): the two views differ
    # only in the descriptors, so identical devices get one logit and different ones two
    same = cluster(2)
    fast = Cluster("asym", (Device("gpu:0", "gpu", 100 * GB, 3.0), Device("gpu:1", "gpu", 50 * GB, 1.0)),
                   Link(1 * GB), (), SimulationSettings("default"))
    agent = PlacetoAgent(2, PlacetoConfig(groups=None), seed=0)
    logits = []
    for c in (same, fast):
        t = make_task(_fork(), c, groups=None)
        expected = [[1, 1], [1, 1]] if c is same else [[1, 1], [1 / 3, 0.5]]
        np.testing.assert_allclose(agent.structure[t].devices, expected)
        t, x, v = _states(agent, t, seed=0)[0]
        x[:, GROUP_COLUMNS:] = 0.0
        with torch.no_grad():
            logits.append(agent._logits([(t, x, v)])[0])
    assert logits[0][0].item() == pytest.approx(logits[0][1].item(), abs=1e-6)
    assert abs(logits[1][0].item() - logits[1][1].item()) > 1e-4


def test_runs_stored_before_devices_existed_keep_the_authors_output_layer():
    old = {"network": "authors", "groups": None}  # a Placeto run's stored config from before the field
    assert stored_params("placeto", old)["devices"] == "separate"
    assert stored_params("placeto", {**old, "devices": "shared"})["devices"] == "shared"
    assert PlacetoConfig().devices == "shared"
    agent = PlacetoAgent(2, PlacetoConfig(**stored_params("placeto", old)), seed=0)
    assert type(agent.model) is not SharedDeviceSweepNet


def test_a_run_stored_before_devices_existed_reloads_and_starts_a_new_stage_as_it_was(tmp_path):
    """A Placeto run stored without the ``devices`` field (as every run before 2026-11-28) rebuilds the
    authors' output layer; a new training from it with today's default is refused with the setting
    that matches it, and runs with that setting."""
    from engine.errors import SpecError
    from engine.store.runs import RunStore
    from policies.rl.core.reinforce import Budget, StoppingRule
    from policies.rl.core.run_files import POLICY
    from policies.rl.core.training_runs import load_policy, start_training
    from policies.rl.placeto.sweep_net import SweepNet

    store = RunStore(tmp_path)
    spec, small = "gen:random?ops=8&seed=1", {"groups": None, "batch": 2}
    first = start_training("placeto", spec, "k80x2", params={**small, "devices": "separate"}, store=store,
                           budget=Budget(episodes=2), stopping=StoppingRule(0))
    run = store.load(first.run_id)
    doc = run.read_json(POLICY)
    del doc["config"]["devices"]
    run.write_json(POLICY, doc)
    agent, _ = load_policy(store.load(first.run_id))
    assert agent.config.devices == "separate" and type(agent.model) is SweepNet
    with pytest.raises(SpecError, match=r"that run has devices='separate': pass --param devices='separate'\)"):
        start_training("placeto", spec, "k80x2", params=small, budget=Budget(episodes=2), init_from=first.run_id,
                       runs_dir=str(tmp_path))
    second = start_training("placeto", spec, "k80x2", params={**small, "devices": "separate"}, store=store,
                            budget=Budget(episodes=2), stopping=StoppingRule(0), init_from=first.run_id,
                            runs_dir=str(tmp_path))
    assert store.load(second.run_id).meta["parameters"]["init_from"] == first.run_id
