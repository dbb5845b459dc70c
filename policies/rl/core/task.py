"""A graph prepared for a learned placer: op groups, their features and structure, and the reward.

Both learned placers decide one device per **op group** and are rewarded by simulating the
**whole op graph** with every op on its group's device (the groups are "colocated together
on to the same device", Placeto App. A.6; Mirhoseini §3.3). Simulating the contracted graph
would be faster but wrong: a contracted group runs its members back to back.

Grouping, ``grouping="merge"`` (Placeto §4): Mirhoseini's rule (§3.3), then Merge-and-Colocate
(A.6) down to ``groups`` nodes. TF colocation sets must stay on one device, so groups sharing a
colocation set are united afterwards; this can make the group quotient graph cyclic (a variable
and its update op), which the learned placers tolerate (message passing runs on any graph, and
reachability is taken on the quotient graph's condensation); a placer that places every op
(``groups=None``) places :data:`LARGE_GRAPH_GROUPS` groups of a graph of more than
:data:`LARGE_GRAPH_OPS` ops, unless ``grouping="ops"``. ``grouping="units"``: Mirhoseini
§4.1's manual groups (:func:`engine.grouping.rules.unit_groups`: each LSTM cell, embedding lookup,
attention and softmax step, each convolution branch, forward and backward together), as the RNN
placer was trained on RNNLM, NMT and Inception-V3; ``groups`` is not used.

Objective (CONTRACTS §4), computed by :mod:`engine.sim.objectives` and nowhere else: the
memory-penalised runtime of Placeto App. A.7, ``R = makespan + c·max(0, m − M)`` with m the
largest peak (GB) and M the tightest device's memory (GB); and ``sqrt(makespan)`` or the
failing signal (Mirhoseini §3.1) for the RNN placer.
"""

from __future__ import annotations

import contextlib
import hashlib
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from engine.cluster import Cluster
from engine.errors import GraphError, PlacementError, quote
from engine.graph.compgraph import CompGraph
from engine.grouping.rules import find_root, merge_and_colocate, mirhoseini_groups, renumber, unit_groups
from engine.placement import compute_matrix
from engine.sim.objectives import GB, default_failing_signal, lower_bound, penalized_runtime, sqrt_reward
from engine.sim.simulator import Simulator
from policies.base import PlacementUnits

__all__ = ["GROUPINGS", "Evaluation", "PlacementTask", "check_grouping", "graphs_hash", "learning_groups", "make_task",
           "same_graphs", "task_for"]

#: How a learned placer groups ops (see the module docstring).
GROUPINGS = ("merge", "units", "ops")


def check_grouping(grouping: str, unit_depth: int | None) -> None:
    """ValueError for an unknown ``grouping`` or a ``unit_depth`` below 1 (config validation)."""
    if grouping not in GROUPINGS:
        raise ValueError(f"unknown grouping {quote(grouping)} (choose from {', '.join(GROUPINGS)})")
    if unit_depth is not None and unit_depth < 1:
        raise ValueError(f"unit_depth must be at least 1, got {unit_depth}")


def learning_groups(graph: CompGraph, groups: int | None, grouping: str = "merge",
                    unit_depth: int | None = None) -> np.ndarray:
    """Op → group for a learned placer: §3.3 rule (stopped at ``groups``), then Merge-and-Colocate to ``groups``
    (Placeto §4).

    ``groups=None`` or ``grouping="ops"`` keeps every op its own group. TF colocation sets are united with the
    group they touch (see the module docstring). ``grouping="units"``: Mirhoseini §4.1's units
    (``unit_depth`` scope parts per layer, None: found from the scopes); ``groups`` is not used.
    """
    check_grouping(grouping, unit_depth)
    if grouping == "units":
        return unit_groups(graph, unit_depth)
    if groups is None or grouping == "ops":
        op_group = np.arange(graph.num_ops)
    else:
        if groups < 1:
            raise GraphError(f"the number of groups must be at least 1, got {groups}")
        # without the colocation sets: a set that is not convex (a variable and its update op, as
        # every Keras import has) makes the quotient cyclic, and Merge-and-Colocate, which keeps
        # it acyclic, then stalls (NASNet: 3,681 groups instead of 128). They are united below.
        # the §3.3 rule stops at the target: run to its end it can leave fewer groups than asked, down to one
        # (the DOPPLER authors' transformer block), and then no placement decision is left to learn
        op_group = merge_and_colocate(graph, groups, op_group=mirhoseini_groups(graph, colocation=False,
                                                                                 min_groups=groups))
    ids = graph.colocation_ids
    if (ids >= 0).any():
        parent = np.arange(int(op_group.max()) + 1)
        first: dict[int, int] = {}
        for i in np.flatnonzero(ids >= 0).tolist():
            a = find_root(parent, int(op_group[i]))
            parent[a] = find_root(parent, first.setdefault(int(ids[i]), a))
        op_group = renumber(np.array([find_root(parent, int(x)) for x in op_group]))
    return op_group


@dataclass(frozen=True)
class Evaluation:
    """One simulated placement: Placeto's objective R, the makespan, the largest peak and OOM."""

    objective: float
    makespan: float
    peak_gb: float
    oom: bool
    group_start: np.ndarray | None = None  # (groups,) earliest start of a member op (s), when asked for


@dataclass(eq=False)
class PlacementTask:
    """A graph on a cluster, grouped and featurised for a learned placer.

    Tasks compare and hash by identity (agents cache per task, :class:`policies.rl.core.agent.PerTask`).

    Attributes
    ----------
    graph, cluster : the op graph and the cluster.
    op_group : (ops,) group of every op; ``num_groups`` groups.
    feasible : (groups, devices) bool — devices that can run every member (kinds, pins).
    group_time : (groups,) mean over the cluster's devices of the members' summed compute (s).
    group_out_bytes : (groups,) bytes of the members' outputs that leave the group (or sinks').
    edges : (2, e) distinct group → group edges of the quotient graph.
    reach : (groups, groups) bool, ``reach[u, v]``: a path leads from u to v (u ≠ v, or u in a cycle).
    order : (groups,) traversal order — topological on the condensation, ties by index.
    scale : the makespan lower bound (s), the unit rewards are expressed in.
    sim : what :meth:`evaluate` asks for ``makespan_and_peak(devices)``: the simulator, or while
        a training is rewarded by measured runtimes, :class:`policies.rl.core.measured.MeasuredRuntime`.
    """

    graph: CompGraph
    cluster: Cluster
    op_group: np.ndarray
    feasible: np.ndarray
    group_time: np.ndarray
    group_out_bytes: np.ndarray
    edges: np.ndarray
    reach: np.ndarray
    order: np.ndarray
    scale: float
    memory_penalty: float = 2.0
    failing_signal: float = 0.0
    evaluations: int = 0
    sim: Simulator = field(repr=False, default=None)  # type: ignore[assignment]

    @property
    def num_groups(self) -> int:
        return len(self.feasible)

    @property
    def num_devices(self) -> int:
        return self.cluster.num_devices

    def expand(self, group_devices: np.ndarray) -> np.ndarray:
        return np.asarray(group_devices, dtype=np.int64)[self.op_group]

    def evaluate(self, group_devices: np.ndarray, *, start: bool = False) -> Evaluation:
        """Simulate a group placement; counts towards ``evaluations``. ``start``: also each group's
        earliest member start time, when the runtimes come from the simulator (Placeto's authors'
        start-time feature; None when they are measured)."""
        self.evaluations += 1
        group_start = None
        if start and isinstance(self.sim, Simulator):
            ms, peak, op_start = self.sim.makespan_peak_and_start(self.expand(group_devices))
            group_start = self._group_minimum(np.nan_to_num(op_start, nan=ms))
        else:
            ms, peak = self.sim.makespan_and_peak(self.expand(group_devices))
        return self._evaluation(ms, peak, group_start)

    @contextlib.contextmanager
    def uncounted(self) -> Iterator[None]:
        """While open, :meth:`evaluate` simulates (even while a training is rewarded by measured runtimes) and
        its evaluations are not counted: a measurement of the policy, not a placement the training evaluated
        (the trainer's greedy checkpoints, :mod:`policies.rl.core.trainer`)."""
        sim, counted = self.sim, self.evaluations
        if not isinstance(sim, Simulator):
            self.sim = self._simulator
        try:
            yield
        finally:
            self.sim, self.evaluations = sim, counted

    @cached_property
    def _simulator(self) -> Simulator:
        return Simulator(self.graph, self.cluster)

    def _evaluation(self, ms: float, peak: np.ndarray, group_start: np.ndarray | None = None) -> Evaluation:
        memory = self.cluster.memory
        objective = penalized_runtime(ms, peak, memory, c=self.memory_penalty)
        return Evaluation(objective, ms, float(peak.max()) / GB, bool((peak > memory).any()), group_start)

    def _group_minimum(self, values: np.ndarray) -> np.ndarray:
        """The minimum of ``values`` (one per op) over each group's members."""
        order, firsts = self._members
        return np.minimum.reduceat(values[order], firsts)

    @cached_property
    def _members(self) -> tuple[np.ndarray, np.ndarray]:
        """The ops sorted by group, and where each group's run starts."""
        order = np.argsort(self.op_group, kind="stable")
        return order, np.searchsorted(self.op_group[order], np.arange(self.num_groups))

    def sqrt_reward(self, ev: Evaluation) -> float:
        """Mirhoseini §3.1: ``sqrt(runtime)``, or the failing signal when a device runs out of memory."""
        return sqrt_reward(ev.makespan, ev.oom, self.failing_signal)

    def random_placement(self, rng: np.random.Generator) -> np.ndarray:
        """A uniformly random feasible device per group."""
        u = rng.random(self.feasible.shape) * self.feasible
        return np.argmax(u, axis=1).astype(np.int64)


def make_task(graph: CompGraph, cluster: Cluster, *, groups: int | None = 128, memory_penalty: float = 2.0,
              failing_signal: float | None = None, grouping: str = "merge",
              unit_depth: int | None = None) -> PlacementTask:
    """Group ``graph`` and build everything a learned placer needs to place it on ``cluster``."""
    op_group = learning_groups(graph, groups if groups is None or groups < graph.num_ops else None,
                               grouping, unit_depth)
    k = int(op_group.max()) + 1
    units = PlacementUnits(graph, cluster)  # raises for ops no device can run
    feasible = np.ones((k, cluster.num_devices), dtype=bool)
    np.logical_and.at(feasible, op_group, units.feasible[units.op_unit])
    if not feasible.any(axis=1).all():
        j = int(np.argmin(feasible.any(axis=1)))
        raise PlacementError(f"no device of cluster {quote(cluster.name)} can run every op of group {j} "
                             f"(first op {quote(graph.op_names[int(np.argmax(op_group == j))])})")
    cm = compute_matrix(graph, cluster)
    per_dev = np.zeros((k, cluster.num_devices))
    np.add.at(per_dev, op_group, np.nan_to_num(cm, nan=0.0))
    group_time = np.where(feasible, per_dev, np.nan)
    group_time = np.nanmean(group_time, axis=1)

    src_g, dst_g = op_group[graph.edge_src], op_group[graph.edge_dst]
    cross = src_g != dst_g
    leaves = np.zeros(graph.num_ops, dtype=bool)
    leaves[graph.edge_src[cross]] = True
    leaves |= graph.succ.ptr[1:] == graph.succ.ptr[:-1]
    out_bytes = np.bincount(op_group, weights=np.where(leaves, graph.output_bytes, 0.0), minlength=k)
    edges = np.unique(np.stack([src_g[cross], dst_g[cross]]), axis=1) if cross.any() else np.zeros((2, 0), np.int64)
    reach, order = _reachability(k, edges)
    fs = default_failing_signal(graph) if failing_signal is None else float(failing_signal)
    return PlacementTask(graph, cluster, op_group, feasible, group_time, out_bytes, edges.astype(np.int64), reach,
                         order, max(lower_bound(graph, cluster), 1e-12), memory_penalty, fs, 0,
                         Simulator(graph, cluster))


def _reachability(k: int, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Transitive closure and a topological order of the quotient graph (via its condensation)."""
    import networkx as nx

    q = nx.DiGraph()
    q.add_nodes_from(range(k))
    q.add_edges_from(edges.T.tolist())
    cond = nx.condensation(q)
    comp_members = {c: sorted(cond.nodes[c]["members"]) for c in cond.nodes}
    topo = list(nx.lexicographical_topological_sort(cond, key=lambda c: comp_members[c][0]))
    comp_reach = {c: np.zeros(k, dtype=bool) for c in cond.nodes}
    for c in reversed(topo):
        r = comp_reach[c]
        for s in cond.successors(c):
            r |= comp_reach[s]
            r[comp_members[s]] = True
    reach = np.zeros((k, k), dtype=bool)
    for c, members in comp_members.items():
        row = comp_reach[c].copy()
        if len(members) > 1:
            row[members] = True
        reach[members] = row
    order = np.array([m for c in topo for m in comp_members[c]], dtype=np.int64)
    return reach, order


#: A learned placer that places every op (``groups=None``: DOPPLER, GDP) places groups instead on a graph of
#: more ops than this: the papers place 112–261 nodes (DOPPLER App. D) or 128 groups (Placeto §4), and
#: DOPPLER on every op of a 12k-op model did 2 episodes a minute in 11.6 GB (issue #35).
LARGE_GRAPH_OPS = 1_000
#: The groups such a graph is merged to (Merge-and-Colocate, Placeto §4): DOPPLER's largest graph's size.
LARGE_GRAPH_GROUPS = 256


def task_for(graph: CompGraph, cluster: Cluster, config: Any) -> PlacementTask:
    """``graph`` grouped and featurised as a learned placer with ``config`` needs it. A graph of more than
    :data:`LARGE_GRAPH_OPS` ops is merged to :data:`LARGE_GRAPH_GROUPS` groups where ``config`` places every
    op, and a warning says so (the CLI prints it)."""
    groups = config.groups
    if groups is None and config.grouping == "merge" and graph.num_ops > LARGE_GRAPH_OPS:
        groups = LARGE_GRAPH_GROUPS
        warnings.warn(f"graph {quote(graph.name)} has {graph.num_ops:,} ops: placing {groups} groups of them "
                      f"(Merge-and-Colocate, as the papers place 100-300 nodes); groups=N chooses another number, "
                      f"grouping=ops places every op", stacklevel=2)
    return make_task(graph, cluster, groups=groups, memory_penalty=config.memory_penalty,
                     grouping=config.grouping, unit_depth=config.unit_depth)


def same_graphs(stored_hash: str, graphs: Sequence[CompGraph]) -> bool:
    """Whether ``graphs`` are those a run stored ``stored_hash`` for: their :func:`graphs_hash`, or the one they
    had before they carried per-model cost columns (runs stored before ``docs/reference/costs.md``)."""
    return stored_hash in (graphs_hash(graphs), graphs_hash([g.without_models() for g in graphs]))


def graphs_hash(graphs: Sequence[CompGraph]) -> str:
    """The graph hash a training run stores: its graph's content hash, or a digest of its graphs' hashes."""
    hashes = [g.content_hash for g in graphs]
    if len(hashes) == 1:
        return hashes[0]
    return hashlib.sha256("\x00".join(hashes).encode()).hexdigest()[:16]
