"""Trivial placers (Mirhoseini et al. 2017 §4.2, Placeto §3.2 baselines).

* ``single-device`` — everything on the first GPU; an op a GPU cannot run goes to the CPU
  (Mirhoseini §4.2 "Single-GPU": "ops without GPU implementation on the CPU").
* ``cpu-only`` — everything on the first CPU.
* ``random`` — each unit on a uniformly random device that can run it (seeded).
* ``round-robin`` — units in topological order, cycled over the devices that can run them.
"""

from __future__ import annotations

import numpy as np

from engine.cluster import Cluster
from engine.errors import PlacementError, quote
from engine.graph.compgraph import CompGraph
from engine.placement import Placement
from policies.base import PlacementUnits, Progress, placer


def _first_feasible(units: PlacementUnits, preferred: list[int]) -> np.ndarray:
    """Per unit: the first device in ``preferred`` that can run it, else its first feasible."""
    out = np.argmax(units.feasible, axis=1)
    chosen = np.zeros(units.num_units, dtype=bool)
    for d in preferred:
        take = ~chosen & units.feasible[:, d]
        out[take] = d
        chosen |= take
    return out


@placer("single-device", "all ops on the first GPU; ops a GPU cannot run on the CPU (Mirhoseini §4.2)",
          family="trivial")
class SingleDevice:

    def place(self, graph: CompGraph, cluster: Cluster, *, seed: int = 0, budget: int | None = None,
              progress: Progress | None = None) -> Placement:
        units = PlacementUnits(graph, cluster)
        gpu = cluster.first_of_kind("gpu")
        cpu = cluster.first_of_kind("cpu")
        order = [d for d in (gpu if gpu is not None else 0, cpu) if d is not None]
        return units.to_placement(_first_feasible(units, order))


@placer("cpu-only", "all ops on the first CPU device", family="trivial")
class CpuOnly:

    def place(self, graph: CompGraph, cluster: Cluster, *, seed: int = 0, budget: int | None = None,
              progress: Progress | None = None) -> Placement:
        cpu = cluster.first_of_kind("cpu")
        if cpu is None:
            raise PlacementError(f"cluster {quote(cluster.name)} has no cpu device")
        units = PlacementUnits(graph, cluster)
        if not units.feasible[:, cpu].all():
            u = int(np.argmin(units.feasible[:, cpu]))
            op = graph.op_names[int(np.argmax(units.op_unit == u))]
            raise PlacementError(f"op {quote(op)} cannot run on {quote(cluster.devices[cpu].name)}")
        return units.to_placement(np.full(units.num_units, cpu))


@placer("random", "each op (colocation group) on a uniformly random device that can run it", family="trivial")
class RandomPlacer:

    def place(self, graph: CompGraph, cluster: Cluster, *, seed: int = 0, budget: int | None = None,
              progress: Progress | None = None) -> Placement:
        units = PlacementUnits(graph, cluster)
        rng = np.random.default_rng(seed)
        # uniform among feasible devices: argmax of random keys masked to the feasible set
        keys = np.where(units.feasible, rng.random(units.feasible.shape), -1.0)
        return units.to_placement(np.argmax(keys, axis=1))


@placer("round-robin", "ops in topological order dealt to the devices in turn", family="trivial")
class RoundRobin:

    def place(self, graph: CompGraph, cluster: Cluster, *, seed: int = 0, budget: int | None = None,
              progress: Progress | None = None) -> Placement:
        units = PlacementUnits(graph, cluster)
        first_pos = np.full(units.num_units, graph.num_ops)
        np.minimum.at(first_pos, units.op_unit[graph.topo_order], np.arange(graph.num_ops))
        out = np.zeros(units.num_units, dtype=np.int64)
        turn = 0
        nd = cluster.num_devices
        for u in np.argsort(first_pos, kind="stable").tolist():
            for step in range(nd):
                d = (turn + step) % nd
                if units.feasible[u, d]:
                    out[u] = d
                    turn = d + 1
                    break
        return units.to_placement(out)
