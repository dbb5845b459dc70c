"""The placer protocol and its card: one ``place(graph, cluster, ...)`` for every placer.

A placer's class carries its card (:func:`placer`: name, description, family, parameters), the one place its
name is written; :mod:`policies.registry` lists the placer modules and collects their cards, and the CLI and
the app list and build placers from there. Every placer honours
pins and colocation groups through :class:`PlacementUnits`: the ops of a colocation group
are one unit, placed on one device that can run all of them, and a pinned unit goes to its
pin.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from engine.cluster import Cluster
from engine.errors import PlacementError, quote
from engine.graph.compgraph import CompGraph
from engine.grouping.contract import colocation_groups
from engine.placement import Placement, compute_matrix
from engine.sim.simulator import Simulator

__all__ = [
    "PlacementUnits",
    "Placer",
    "PlacerInfo",
    "Progress",
    "budget_words",
    "placer",
    "relieve_memory",
    "unit_footprint",
]

#: ``progress(done, total, message)`` — placers call it to report progress (may be None).
Progress = Callable[[int, int, str], None]


class Placer(Protocol):
    """What every placer provides."""

    name: str

    def place(self, graph: CompGraph, cluster: Cluster, *, seed: int = 0, budget: int | None = None,
              progress: Progress | None = None) -> Placement: ...


@dataclass(frozen=True)
class PlacerInfo:
    """A registered placer: ``factory(**params)`` builds it; ``parameters`` maps each keyword it
    takes to its default (``inspect.Parameter.empty`` where it has none)."""

    name: str
    description: str
    factory: Callable[..., Placer]
    family: str
    parameters: dict[str, Any]


def placer(name: str, description: str, family: str, parameters: dict[str, Any] | None = None,
           ) -> Callable[[Callable[..., Placer]], Callable[..., Placer]]:
    """Class decorator: the placer's card, ``factory.card`` (a :class:`PlacerInfo`), and a class's ``name``. Its
    parameters are the factory's keyword arguments with their defaults, or ``parameters`` for a factory that
    takes ``**params`` (the learned placers' configs)."""

    def deco(factory: Callable[..., Placer]) -> Callable[..., Placer]:
        given = parameters if parameters is not None else {
            k: p.default for k, p in inspect.signature(factory).parameters.items()}
        factory.card = PlacerInfo(name, description, factory, family, dict(given))  # type: ignore[attr-defined]
        if isinstance(factory, type):
            factory.name = name  # a placer class's instances carry the card's name (the Placer protocol)
        return factory

    return deco


class PlacementUnits:
    """The units a placer assigns: colocation groups and single ops, with pins and kinds.

    Attributes
    ----------
    op_unit : ndarray, shape (ops,)
        Unit index of every op (units numbered by their first op).
    feasible : ndarray of bool, shape (units, devices)
        Whether a device can run every op of the unit (and honours its pin).
    cost : ndarray, shape (units, devices)
        Sum of the members' compute times (s) on each device; inf where infeasible.
    """

    def __init__(self, graph: CompGraph, cluster: Cluster) -> None:
        self.graph = graph
        self.cluster = cluster
        self.op_unit = colocation_groups(graph)
        k = int(self.op_unit.max()) + 1
        cm = compute_matrix(graph, cluster)
        runnable = ~np.isnan(cm)
        feasible = np.ones((k, cluster.num_devices), dtype=bool)
        np.logical_and.at(feasible, self.op_unit, runnable)
        for i, pin in enumerate(graph.pin):
            if pin is not None and pin in cluster.index:
                row = np.zeros(cluster.num_devices, dtype=bool)
                row[cluster.index[pin]] = True
                feasible[self.op_unit[i]] &= row
        bad = ~feasible.any(axis=1)
        if bad.any():
            u = int(np.argmax(bad))
            op = graph.op_names[int(np.argmax(self.op_unit == u))]
            raise PlacementError(f"no device of cluster {quote(cluster.name)} can run op {quote(op)} "
                                 "together with its colocation group and pin")
        cost = np.zeros((k, cluster.num_devices))
        np.add.at(cost, self.op_unit, np.nan_to_num(cm, nan=np.inf))
        self.feasible = feasible
        self.cost = np.where(feasible, cost, np.inf)

    @property
    def num_units(self) -> int:
        return self.feasible.shape[0]

    def to_placement(self, unit_devices: np.ndarray) -> Placement:
        ud = np.asarray(unit_devices, dtype=np.int64)
        if not self.feasible[np.arange(self.num_units), ud].all():
            u = int(np.argmin(self.feasible[np.arange(self.num_units), ud]))
            raise PlacementError(f"unit {u} was put on a device that cannot run it")
        return Placement(ud[self.op_unit])


def unit_footprint(graph: CompGraph, units: PlacementUnits) -> np.ndarray:
    """Bytes a unit needs on its device: persistent + outputs + temp of its ops (an upper bound)."""
    per_op = graph.persistent_bytes + graph.output_bytes + graph.temp_bytes
    return np.bincount(units.op_unit, weights=per_op, minlength=units.num_units)


def relieve_memory(graph: CompGraph, cluster: Cluster, units: PlacementUnits, unit_devices: np.ndarray) -> np.ndarray:
    """Greedy memory post-pass: move units off OOM devices to the device with most free memory.

    Per round: simulate; for each OOM device, most over-full first, move its units (largest
    footprint first, ties by lower unit index) to the feasible device with the most estimated
    free memory, until the estimated excess is covered. Stops when nothing is OOM, nothing
    can move, or after ``num_units`` rounds.
    """
    sim = Simulator(graph, cluster)
    ud = unit_devices.copy()
    size = unit_footprint(graph, units)
    cap = cluster.memory
    for _ in range(units.num_units):
        _, peak = sim.makespan_and_peak(ud[units.op_unit])
        excess = peak - cap
        if not (excess > 0).any():
            break
        free = cap - peak
        moved_any = False
        for d in np.argsort(-excess, kind="stable").tolist():
            if excess[d] <= 0:
                break
            need = excess[d]
            for u in np.lexsort((np.arange(units.num_units), -size)).tolist():
                if need <= 0:
                    break
                if ud[u] != d or size[u] <= 0:
                    continue
                room = np.where(units.feasible[u] & (np.arange(cluster.num_devices) != d), free, -np.inf)
                t = int(np.argmax(room))
                if not np.isfinite(room[t]) or room[t] < size[u]:
                    continue
                ud[u] = t
                free[t] -= size[u]
                free[d] += size[u]
                need -= size[u]
                moved_any = True
        if not moved_any:
            break
    return ud


def budget_words(placer: str, evaluations: int | None, seconds: float | None, seed: int | None) -> str:
    """A search placer's budget as every table states it: ``anneal: 20,000 evaluations, no time limit, seed 0``."""
    evals = "no evaluation limit" if evaluations is None else f"{int(evaluations):,} evaluations"
    limit = "no time limit" if seconds is None else f"{float(seconds):g} s"
    return f"{placer}: {evals}, {limit}, seed {seed}"
