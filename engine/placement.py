"""Placements: op -> device, with the ``placelab.placement/1`` file format (CONTRACTS §3).

A :class:`Placement` is an int array of device indices, one per op, tied to a cluster's
device order. :func:`check_placement` verifies it against the graph's constraints: every op
on a device kind it can run on, pins honoured, colocation groups on one device.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.cluster import Cluster
from engine.errors import ClusterError, PlacementError, quote
from engine.graph.compgraph import MODEL_SEPARATOR, CompGraph
from engine.jsonio import read_json_file

__all__ = [
    "PLACEMENT_SCHEMA",
    "Constraints",
    "Placement",
    "check_placement",
    "compute_matrix",
    "load_placement",
    "placement_from_dict",
]

PLACEMENT_SCHEMA = "placelab.placement/1"


@dataclass(frozen=True, eq=False)
class Placement:
    """Device index (into ``cluster.devices``) for every op of a graph, by op index.

    Equality and hashing compare the devices only: two placements that put every op on the same device
    are equal whatever their placers predicted.
    """

    devices: np.ndarray
    #: The placer's own prediction of the makespan (s) of this placement under the cluster's simulation mode,
    #: where the placer makes one (the list schedulers: their estimator's pass over it, ``engine.sim.estimator``); None
    #: for a placer that predicts nothing. ``compare`` shows it beside the simulated makespan. A placer that
    #: returns another placer's placement (a search that kept its start) drops it:
    #: ``dataclasses.replace(p, predicted_makespan_s=None)``, or it would report the other placer's estimate.
    predicted_makespan_s: float | None = None
    #: One line the placer says about this placement, where it has something to say (a list scheduler whose
    #: guard returned one device: why); ``compare`` shows it and runs store it as ``placer_note``.
    note: str | None = None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Placement) and np.array_equal(self.devices, other.devices)

    def __hash__(self) -> int:
        return hash(self.devices.tobytes())

    def __post_init__(self) -> None:
        arr = np.array(self.devices, dtype=np.int64)  # a copy: never freeze or alias the caller's array
        arr.setflags(write=False)
        object.__setattr__(self, "devices", arr)
        if self.predicted_makespan_s is not None:
            object.__setattr__(self, "predicted_makespan_s", float(self.predicted_makespan_s))

    @classmethod
    def from_mapping(cls, graph: CompGraph, cluster: Cluster, mapping: Mapping[str, str]) -> Placement:
        """From ``{op name: device name}``; every op must be present."""
        devs = np.full(graph.num_ops, -1, dtype=np.int64)
        for op, dname in mapping.items():
            i = graph.index.get(op)
            if i is None:
                raise PlacementError(f"placement names op {quote(op)}, which graph {quote(graph.name)} does not have")
            if not isinstance(dname, str) or dname not in cluster.index:
                raise PlacementError(f"op {quote(op)} is placed on unknown device {quote(dname)} "
                                     f"(cluster {quote(cluster.name)} has {', '.join(cluster.index)})")
            devs[i] = cluster.index[dname]
        missing = np.flatnonzero(devs < 0)
        if len(missing):
            raise PlacementError(f"placement does not place op {quote(graph.op_names[missing[0]])} "
                                 f"({len(missing)} op(s) missing)")
        return cls(devs)

    def to_mapping(self, graph: CompGraph, cluster: Cluster) -> dict[str, str]:
        names = [d.name for d in cluster.devices]
        return {op: names[d] for op, d in zip(graph.op_names, self.devices.tolist(), strict=True)}

    def to_dict(self, graph: CompGraph, cluster: Cluster) -> dict[str, Any]:
        return {"schema": PLACEMENT_SCHEMA, "graph": graph.name, "cluster": cluster.name,
                "devices": self.to_mapping(graph, cluster)}

    def counts(self, num_devices: int) -> np.ndarray:
        """Number of ops on each device."""
        return np.bincount(self.devices, minlength=num_devices)


def compute_matrix(graph: CompGraph, cluster: Cluster) -> np.ndarray:
    """Compute time (s) of every op on every device, shape (ops, devices); NaN = cannot run.

    ``compute[kind(d)@model(d)] / speed(d)``, the ``kind(d)`` column where the graph has none for
    the device's model (CONTRACTS §4, ``docs/reference/costs.md``).

    Raises
    ------
    ClusterError
        When some op can run on no device of the cluster (a graph measured on this machine's
        CPUs carries ``cpu`` times only, and a GPU preset has no CPU), naming the kinds each has.
    """
    columns = {(d.kind, d.model): graph.compute_on(d.kind, d.model) for d in cluster.devices}
    m = np.column_stack([columns[d.kind, d.model] / d.speed for d in cluster.devices])
    stuck = np.flatnonzero(np.isnan(m).all(axis=1))
    if len(stuck):
        i = int(stuck[0])
        has = [k for k in graph.op_compute(i) if MODEL_SEPARATOR not in k] or ["no kind"]
        raise ClusterError(
            f"{len(stuck)} op{'s' if len(stuck) > 1 else ''} of graph {quote(graph.name)} (first "
            f"{quote(graph.op_names[i])}, "
            f"with times for {', '.join(has)}) can run on no device of {quote(cluster.name)} "
            f"({', '.join(sorted(set(cluster.kinds)))}): choose a cluster with a device of a kind the graph has "
            f"times for (a graph measured on this machine runs on 'local', calibrated by 'placelab calibrate')")
    return m


class Constraints:
    """A graph's placement constraints on one cluster, precomputed for fast repeated checks.

    Holds the (ops × devices) compute matrix, each op's pinned device (pins naming a device
    the cluster does not have are ignored: the graph may come from another machine), and
    the colocation groups. :meth:`check` costs a few vector operations per call, so RL
    loops can validate every sampled placement.
    """

    def __init__(self, graph: CompGraph, cluster: Cluster) -> None:
        self.graph = graph
        self.cluster = cluster
        self.cost = compute_matrix(graph, cluster)
        pin_dev = np.array([cluster.index.get(p, -1) if p is not None else -1 for p in graph.pin],
                           dtype=np.int64)
        self.pinned = np.flatnonzero(pin_dev >= 0)
        self.pin_dev = pin_dev[self.pinned]
        gid = graph.colocation_ids
        self.grouped = np.flatnonzero(gid >= 0)
        if len(self.grouped):
            first = np.full(int(gid.max()) + 1, -1, dtype=np.int64)
            for i in self.grouped[::-1].tolist():
                first[gid[i]] = i
            self.group_head = first[gid[self.grouped]]
        else:
            self.group_head = self.grouped

    def check(self, devices: np.ndarray) -> np.ndarray:
        """Validate a device array and return each op's compute time (s) on its device.

        Raises
        ------
        PlacementError
            Wrong length, a device index out of range, an op on a kind it cannot run on, a
            pin not honoured, or a colocation group split across devices.
        """
        g, c = self.graph, self.cluster
        dev = np.asarray(devices)
        if dev.shape != (g.num_ops,):
            raise PlacementError(f"placement has {len(dev)} entries for {g.num_ops} ops of {quote(g.name)}")
        if dev.min() < 0 or dev.max() >= c.num_devices:
            i = int(np.argmax((dev < 0) | (dev >= c.num_devices)))
            raise PlacementError(f"op {quote(g.op_names[i])} is placed on device #{dev[i]}, "
                                 f"but cluster {quote(c.name)} has {c.num_devices} devices")
        dur = self.cost[np.arange(g.num_ops), dev]
        bad = np.isnan(dur)
        if bad.any():
            i = int(np.argmax(bad))
            d = c.devices[dev[i]]
            raise PlacementError(f"op {quote(g.op_names[i])} cannot run on {quote(d.name)} (kind {quote(d.kind)}): "
                                 f"it has no compute time for that kind")
        off = dev[self.pinned] != self.pin_dev
        if off.any():
            i = int(self.pinned[np.argmax(off)])
            raise PlacementError(f"op {quote(g.op_names[i])} is pinned to {quote(g.pin[i])} but placed on "
                                 f"{quote(c.devices[dev[i]].name)}")
        split = dev[self.grouped] != dev[self.group_head]
        if split.any():
            k = int(np.argmax(split))
            i, h = int(self.grouped[k]), int(self.group_head[k])
            raise PlacementError(f"colocation group {quote(g.colocate[i])} is split: op {quote(g.op_names[i])} is on "
                                 f"{quote(c.devices[dev[i]].name)}, op {quote(g.op_names[h])} on "
                                 f"{quote(c.devices[dev[h]].name)}")
        return dur


def check_placement(graph: CompGraph, cluster: Cluster, placement: Placement) -> np.ndarray:
    """Validate ``placement`` (see :meth:`Constraints.check`); returns per-op compute times (s)."""
    return Constraints(graph, cluster).check(placement.devices)


def placement_from_dict(doc: Any, graph: CompGraph, cluster: Cluster, *, source: str = "placement") -> Placement:
    """Parse a ``placelab.placement/1`` document against ``graph`` and ``cluster``."""
    if not isinstance(doc, dict):
        raise PlacementError(f"{source}: expected a JSON object with schema '{PLACEMENT_SCHEMA}'")
    if doc.get("schema") != PLACEMENT_SCHEMA:
        got = "no 'schema' field" if doc.get("schema") is None else f"schema {doc.get('schema')!r}"
        raise PlacementError(f"{source}: expected schema '{PLACEMENT_SCHEMA}', found {got}")
    devices = doc.get("devices")
    if not isinstance(devices, dict):
        raise PlacementError(f"{source}: 'devices' must be an object mapping op names to device names")
    return Placement.from_mapping(graph, cluster, devices)


def load_placement(path: str | os.PathLike, graph: CompGraph, cluster: Cluster) -> Placement:
    doc = read_json_file(path, error=PlacementError)
    return placement_from_dict(doc, graph, cluster, source=quote(os.path.basename(os.fspath(path)), bare=True))
