"""DOPPLER's ASSIGN on a grouped task walks the groups (policies/rl/doppler/units.py): hand-built graphs."""

from __future__ import annotations

import numpy as np

from engine.graph.io import graph_from_dict
from policies.rl.core.task import make_task
from policies.rl.doppler.agent import DopplerAgent, teacher_placement
from policies.rl.doppler.config import DopplerConfig
from policies.rl.doppler.rollout import AssignEpisode
from policies.rl.doppler.units import assign_units

from .test_doppler_features import hand_graph, two_gpus


def _graph(ops, edges):
    return graph_from_dict({"schema": "placelab.graph/1", "name": "g", "ops": ops,
                            "edges": [{"src": a, "dst": b} for a, b in edges]})


def _episode(node_device: list[int], units) -> AssignEpisode:
    """An ASSIGN episode that put node i on ``node_device[i]``."""
    nodes = np.arange(len(node_device))
    return AssignEpisode(nodes, np.array(node_device), np.array(node_device), units.node_group)


def test_an_ungrouped_task_walks_its_ops():
    task = make_task(hand_graph(), two_gpus(), groups=None)
    units = assign_units(task)
    assert units.group_node is None and units.graph is task.graph
    assert units.group_devices(_episode([1, 0, 1, 1, 0], units), task.num_groups).tolist() == [1, 0, 1, 1, 0]


def test_a_cycle_of_groups_is_one_node_and_the_rest_are_their_groups():
    """a → b → c → d with a and c colocated: groups {a, c}, {b}, {d}; {a, c} → {b} → {a, c} is a cycle, so ASSIGN
    walks two nodes, {a, b, c} (compute 1 + 2 + 3) and {d} (4)."""
    ops = [{"name": "a", "compute": 1.0, "colocate": "v", "output_bytes": 1e9},
           {"name": "b", "compute": 2.0, "output_bytes": 1e9},
           {"name": "c", "compute": 3.0, "colocate": "v", "output_bytes": 1e9},
           {"name": "d", "compute": 4.0}]
    task = make_task(_graph(ops, [("a", "b"), ("b", "c"), ("c", "d")]), two_gpus(), groups=None)
    assert task.num_groups == 3
    units = assign_units(task)
    assert units.graph.num_ops == 2 and units.graph.num_edges == 1
    ac, b, d = task.op_group[[0, 1, 3]]
    assert units.group_node[ac] == units.group_node[b] != units.group_node[d]
    assert sorted(units.graph.compute_for_kind("gpu").tolist()) == [4.0, 6.0]
    devices = units.group_devices(_episode([1, 0] if units.group_node[ac] == 0 else [0, 1], units), task.num_groups)
    assert devices[[ac, b, d]].tolist() == [1, 1, 0]
    # the agent and the teacher place the task's groups, every merged group on one device
    for placement in (teacher_placement(task),
                      DopplerAgent(2, DopplerConfig(hidden=8, rounds=1, edge_hidden=4, head=4)).place(
                          task, np.random.default_rng(0))):
        assert placement.shape == (task.num_groups,) and placement[ac] == placement[b]


def test_a_large_graph_places_256_groups_in_fewer_steps_than_ops():
    from engine.generators import random_dag

    graph = random_dag(ops=1_200, seed=0)
    task = make_task(graph, two_gpus(), groups=256)
    units = assign_units(task)
    assert units.graph.num_ops <= task.num_groups < graph.num_ops
    placement = teacher_placement(task)
    assert placement.shape == (task.num_groups,) and set(placement.tolist()) <= {0, 1}
