"""Clusters: devices, links and simulation settings (CONTRACTS §2, ``placelab.cluster/1``).

A device has a *kind* (``gpu``, ``cpu``, ...) that selects the op's compute time, a
``speed`` that divides it, and a memory capacity. Links are symmetric; ``link`` is the
default for every pair and ``links`` overrides it per pair (NVLink groups, PCIe, host).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from engine.errors import ClusterError
from engine.jsonio import atomic_write_text, dumps, read_json_file

__all__ = [
    "CLUSTER_SCHEMA",
    "SIMULATION_MODES",
    "Cluster",
    "Device",
    "Link",
    "SimulationSettings",
    "cluster_from_dict",
    "cluster_to_dict",
    "load_cluster",
    "save_cluster",
]

CLUSTER_SCHEMA = "placelab.cluster/1"
SIMULATION_MODES = ("placeto", "default", "work_conserving")


@dataclass(frozen=True)
class Device:
    """One device. ``memory_bytes`` is its capacity; ``speed`` divides compute times."""

    name: str
    kind: str
    memory_bytes: float
    speed: float = 1.0


@dataclass(frozen=True)
class Link:
    """A point-to-point link: bytes/s and a fixed latency (s) added to every transfer."""

    bandwidth_bytes_per_s: float
    latency_s: float = 0.0


@dataclass(frozen=True)
class SimulationSettings:
    """How the simulator treats this cluster (CONTRACTS §4).

    ``op_overhead_s`` is Placeto's δ1 (device busy after each non-zero op), and
    ``transfer_gap_s`` its δ2 (channel busy after each transfer), Placeto App. A.5.
    """

    mode: str = "default"
    op_overhead_s: float = 0.0
    transfer_gap_s: float = 0.0


@dataclass(frozen=True)
class Cluster:
    """Devices, a default link, per-pair link overrides and simulation settings."""

    name: str
    devices: tuple[Device, ...]
    link: Link
    links: tuple[tuple[str, str, Link], ...] = ()
    simulation: SimulationSettings = field(default_factory=SimulationSettings)
    description: str = ""

    def __post_init__(self) -> None:
        if not self.devices:
            raise ClusterError(f"cluster '{self.name}' has no devices")
        seen: set[str] = set()
        for d in self.devices:
            if not d.name or d.name in seen:
                raise ClusterError(f"cluster '{self.name}': duplicate or empty device name '{d.name}'")
            seen.add(d.name)
            if not d.kind:
                raise ClusterError(f"device '{d.name}': kind must be a non-empty string")
            _positive(d.memory_bytes, f"device '{d.name}': memory_bytes")
            _positive(d.speed, f"device '{d.name}': speed")
        for a, b, lk in ((None, None, self.link), *self.links):
            where = "link" if a is None else f"link between '{a}' and '{b}'"
            _positive(lk.bandwidth_bytes_per_s, f"{where}: bandwidth_bytes_per_s")
            _nonnegative(lk.latency_s, f"{where}: latency_s")
            for end in (a, b):
                if end is not None and end not in seen:
                    raise ClusterError(f"{where} names unknown device '{end}'")
            if a is not None and a == b:
                raise ClusterError(f"{where} connects a device to itself")
        s = self.simulation
        if s.mode not in SIMULATION_MODES:
            raise ClusterError(f"simulation mode must be one of {', '.join(SIMULATION_MODES)}, got '{s.mode}'")
        _nonnegative(s.op_overhead_s, "simulation.op_overhead_s")
        _nonnegative(s.transfer_gap_s, "simulation.transfer_gap_s")

    # ------------------------------------------------------------------ views
    @property
    def num_devices(self) -> int:
        return len(self.devices)

    @cached_property
    def index(self) -> dict[str, int]:
        return {d.name: i for i, d in enumerate(self.devices)}

    def device_index(self, name: str) -> int:
        try:
            return self.index[name]
        except KeyError:
            raise ClusterError(f"cluster '{self.name}' has no device '{name}' "
                               f"(devices: {', '.join(self.index)})") from None

    @cached_property
    def kinds(self) -> tuple[str, ...]:
        return tuple(d.kind for d in self.devices)

    @cached_property
    def memory(self) -> np.ndarray:
        return np.array([d.memory_bytes for d in self.devices], dtype=np.float64)

    @cached_property
    def speed(self) -> np.ndarray:
        return np.array([d.speed for d in self.devices], dtype=np.float64)

    @cached_property
    def bandwidth(self) -> np.ndarray:
        """Symmetric matrix of link bandwidths (bytes/s); the diagonal is +inf."""
        return self._pair_matrix(lambda lk: lk.bandwidth_bytes_per_s, np.inf)

    @cached_property
    def latency(self) -> np.ndarray:
        """Symmetric matrix of link latencies (s); the diagonal is 0."""
        return self._pair_matrix(lambda lk: lk.latency_s, 0.0)

    def _pair_matrix(self, attr, diag: float) -> np.ndarray:
        d = self.num_devices
        m = np.full((d, d), float(attr(self.link)))
        for a, b, lk in self.links:
            i, j = self.index[a], self.index[b]
            m[i, j] = m[j, i] = attr(lk)
        np.fill_diagonal(m, diag)
        m.setflags(write=False)
        return m

    def first_of_kind(self, kind: str) -> int | None:
        """Index of the first device of ``kind``, or None."""
        return next((i for i, d in enumerate(self.devices) if d.kind == kind), None)

    def describe(self) -> str:
        """One line: device counts by kind, memory, default bandwidth, mode."""
        counts: dict[str, int] = {}
        for d in self.devices:
            counts[d.kind] = counts.get(d.kind, 0) + 1
        parts = ", ".join(f"{c}×{k}" for k, c in counts.items())
        return (f"{parts}; {self.memory.min() / 1e9:g}–{self.memory.max() / 1e9:g} GB; "
                f"{self.link.bandwidth_bytes_per_s / 1e9:g} GB/s default link; {self.simulation.mode} mode")


def _finite_number(x: Any) -> bool:
    if not isinstance(x, int | float) or isinstance(x, bool):
        return False
    try:
        return math.isfinite(x)
    except OverflowError:  # an integer beyond float range (JSON allows any length)
        return False


def _positive(x: Any, what: str) -> None:
    if not _finite_number(x) or x <= 0:
        raise ClusterError(f"{what} must be a finite number > 0, got {x!r}")


def _nonnegative(x: Any, what: str) -> None:
    if not _finite_number(x) or x < 0:
        raise ClusterError(f"{what} must be a finite number >= 0, got {x!r}")


def _link(doc: Any, where: str) -> Link:
    if not isinstance(doc, dict) or "bandwidth_bytes_per_s" not in doc:
        raise ClusterError(f"{where} needs 'bandwidth_bytes_per_s'")
    return Link(doc["bandwidth_bytes_per_s"], doc.get("latency_s", 0.0))


def cluster_from_dict(doc: Any, *, source: str = "cluster") -> Cluster:
    """Build a :class:`Cluster` from a parsed ``placelab.cluster/1`` document."""
    if not isinstance(doc, dict):
        raise ClusterError(f"{source}: expected a JSON object with schema '{CLUSTER_SCHEMA}'")
    if doc.get("schema") != CLUSTER_SCHEMA:
        got = "no 'schema' field" if doc.get("schema") is None else f"schema {doc.get('schema')!r}"
        raise ClusterError(f"{source}: expected schema '{CLUSTER_SCHEMA}', found {got}")
    devs = doc.get("devices")
    if not isinstance(devs, list) or not devs:
        raise ClusterError(f"{source}: 'devices' must be a non-empty list")
    devices = []
    for i, d in enumerate(devs):
        if not isinstance(d, dict) or not isinstance(d.get("name"), str) or not isinstance(d.get("kind"), str):
            raise ClusterError(f"{source}: device #{i} needs string 'name' and 'kind'")
        if "memory_bytes" not in d:
            raise ClusterError(f"device '{d['name']}' needs 'memory_bytes'")
        devices.append(Device(d["name"], d["kind"], d["memory_bytes"], d.get("speed", 1.0)))
    link = _link(doc.get("link"), f"{source}: 'link'")
    links = []
    raw_links = doc.get("links", [])
    if not isinstance(raw_links, list):
        raise ClusterError(f"{source}: 'links' must be a list")
    for i, lk in enumerate(raw_links):
        pair = lk.get("between") if isinstance(lk, dict) else None
        if not isinstance(pair, list) or len(pair) != 2 or not all(isinstance(x, str) for x in pair):
            raise ClusterError(f"{source}: links[{i}] needs 'between': [device, device]")
        links.append((pair[0], pair[1], _link(lk, f"{source}: links[{i}]")))
    sim = doc.get("simulation", {})
    if not isinstance(sim, dict):
        raise ClusterError(f"{source}: 'simulation' must be an object")
    unknown = set(sim) - {"mode", "op_overhead_s", "transfer_gap_s"}
    if unknown:
        raise ClusterError(f"{source}: unknown simulation setting '{sorted(unknown)[0]}'")
    settings = SimulationSettings(sim.get("mode", "default"), sim.get("op_overhead_s", 0.0),
                                  sim.get("transfer_gap_s", 0.0))
    name = doc.get("name", source)
    if not isinstance(name, str):
        raise ClusterError(f"{source}: 'name' must be a string")
    return Cluster(name, tuple(devices), link, tuple(links), settings, str(doc.get("description", "")))


def cluster_to_dict(c: Cluster) -> dict[str, Any]:
    """The ``placelab.cluster/1`` document of ``c``."""
    doc: dict[str, Any] = {
        "schema": CLUSTER_SCHEMA,
        "name": c.name,
        "devices": [{"name": d.name, "kind": d.kind, "memory_bytes": d.memory_bytes, "speed": d.speed}
                    for d in c.devices],
        "link": {"bandwidth_bytes_per_s": c.link.bandwidth_bytes_per_s, "latency_s": c.link.latency_s},
        "links": [{"between": [a, b], "bandwidth_bytes_per_s": lk.bandwidth_bytes_per_s,
                   "latency_s": lk.latency_s} for a, b, lk in c.links],
        "simulation": {"mode": c.simulation.mode, "op_overhead_s": c.simulation.op_overhead_s,
                       "transfer_gap_s": c.simulation.transfer_gap_s},
    }
    if c.description:
        doc["description"] = c.description
    return doc


def load_cluster(spec: str | os.PathLike) -> Cluster:
    """A cluster by preset name (see :mod:`engine.presets`), from a ``placelab.cluster/1`` file, or
    ``bench:NAME``: the machine of a bundled published workload (:mod:`engine.workloads.published`)."""
    from engine.presets import PRESETS

    s = os.fspath(spec)
    if s.startswith("bench:"):
        from engine.workloads.published import bench_cluster

        return bench_cluster(s)
    if s in PRESETS:
        return PRESETS[s]()
    if not os.path.exists(s):
        raise ClusterError(f"unknown cluster '{s}': not a preset ({', '.join(PRESETS)}) nor a file")
    return cluster_from_dict(read_json_file(s, error=ClusterError), source=os.path.basename(s))


def save_cluster(c: Cluster, path: str | os.PathLike) -> None:
    atomic_write_text(path, dumps(cluster_to_dict(c), indent=1))


def uniform_cluster(name: str, devices: Sequence[Device], bandwidth: float, **sim: Any) -> Cluster:
    """A cluster whose every pair shares one link (helper for presets and tests)."""
    return Cluster(name, tuple(devices), Link(bandwidth), (), SimulationSettings(**sim))
