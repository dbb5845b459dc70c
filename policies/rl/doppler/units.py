"""The nodes DOPPLER's ASSIGN walks: the task's ops, or on a grouped task its groups (issue #35).

ASSIGN takes one step per node of the graph it is given (§3). On a task whose every op is its own group
that is the op graph, as the paper runs it on its 112–261-node graphs (App. D). On a grouped task (``groups=N``,
or the 256 groups a graph above 1,000 ops gets, ``policies.rl.core.task.LARGE_GRAPH_OPS``) it walks the
groups instead: the task's groups contracted into one graph (``engine.grouping.contract``: summed compute,
a tensor crossing once per destination group). Merge-and-Colocate's groups may form cycles (a colocated
variable and its update op, e.g. ResNet50's ``conv1_bn/moving_variance``), and ASSIGN needs a DAG, so the
groups of each strongly connected set of the quotient graph are merged into one node first (ours: the papers
place graphs without cycles). Walking every op of a model of thousands of ops instead was hundreds of times
slower and held gigabytes (``benchmarks/bench_model_size.py``; docs/lab/2026-11-26-model-size-and-test-time.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.errors import GraphError
from engine.graph.compgraph import CompGraph
from engine.grouping.contract import contract
from policies.rl.core.task import PlacementTask
from policies.rl.doppler.rollout import AssignEpisode

__all__ = ["AssignUnits", "assign_units"]


@dataclass(frozen=True)
class AssignUnits:
    """The graph ASSIGN walks, each node's feasible devices, its group (the constraint that a group's nodes
    share a device) and, per task group, the node that decides its device."""

    graph: CompGraph
    feasible: np.ndarray  # (nodes, devices) bool
    node_group: np.ndarray  # (nodes,) the group id ASSIGN keeps nodes of together
    group_node: np.ndarray | None  # (task groups,) the node of each task group; None: nodes are the ops

    def group_devices(self, episode: AssignEpisode, num_groups: int) -> np.ndarray:
        """The device of every task group, from an ASSIGN episode on these nodes."""
        if self.group_node is None:
            return episode.group_devices(num_groups)
        return episode.op_device[self.group_node]


def assign_units(task: PlacementTask) -> AssignUnits:
    """ASSIGN's nodes for ``task`` (module docstring): its ops when no group has two of them, else its groups
    with strongly connected ones merged; the ops again when merged groups would have no device in common."""
    ops = AssignUnits(task.graph, task.feasible[task.op_group], task.op_group, None)
    if task.num_groups >= task.graph.num_ops:
        return ops
    # scipy.sparse here, not at the top: every command that loads the placer registry imports this module
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    k = task.num_groups
    src, dst = task.edges
    quotient = coo_matrix((np.ones(len(src)), (src, dst)), shape=(k, k))
    n, label = connected_components(quotient, directed=True, connection="strong")
    _, group_node = np.unique(label, return_inverse=True)  # node ids 0..n-1 in order of their labels
    feasible = np.ones((n, task.num_devices), dtype=bool)
    np.logical_and.at(feasible, group_node, task.feasible)
    if not feasible.any(axis=1).all():  # merged groups pinned apart: place ops as before
        return ops
    try:
        graph = contract(task.graph, group_node[task.op_group]).graph
    except GraphError:  # members pinned to different devices the cluster lacks: place ops as before
        return ops
    return AssignUnits(graph, feasible, np.arange(n, dtype=np.int64), group_node.astype(np.int64))
