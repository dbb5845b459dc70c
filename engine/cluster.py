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

from engine.costmodel import GPU_SPECS
from engine.errors import ClusterError, quote
from engine.graph.compgraph import MODEL_SEPARATOR, CompGraph
from engine.jsonio import atomic_write_text, dumps
from engine.limits import MAX_DEVICES, MAX_NOISE, MAX_SIM_RUNS, check_at_most, check_seed, check_total

__all__ = [
    "CHOOSE_TASK",
    "CLUSTER_SCHEMA",
    "CONTENTION",
    "SIMULATION_MODES",
    "SIMULATION_OPTIONS",
    "Cluster",
    "Device",
    "Link",
    "SimulationSettings",
    "cluster_from_dict",
    "cluster_to_dict",
    "edge_transfer_cost",
    "parse_simulation_options",
    "save_cluster",
]

CLUSTER_SCHEMA = "placelab.cluster/1"
SIMULATION_MODES = ("placeto", "default", "work_conserving")
#: work_conserving: how a free device picks among the ops waiting for it (DOPPLER Alg. 1 ChooseTask).
CHOOSE_TASK = ("fifo", "b_level")
#: work_conserving: which transfers wait for each other.
CONTENTION = ("none", "per_device", "per_link")
#: Every simulation setting: type, default, the modes that read it, one line for people.
SIMULATION_OPTIONS: dict[str, tuple[type, Any, tuple[str, ...], str]] = {
    "op_overhead_s": (float, 0.0, ("placeto", "default"),
                      "device busy after each non-zero op (Placeto App. A.5 delta1), s"),
    "transfer_gap_s": (float, 0.0, ("placeto", "default"),
                       "channel busy after each transfer (Placeto App. A.5 delta2), s"),
    "choose": (str, "fifo", ("work_conserving",),
               "fifo: a device serves ops in the order they asked; b_level: longest path to an exit first"),
    "contention": (str, "none", ("work_conserving",),
                   "none: transfers never wait; per_device: one outgoing channel per device; "
                   "per_link: one channel per device pair"),
    "noise": (float, 0.0, ("work_conserving",),
              "coefficient of variation of the log-normal factor on every op and transfer time (0: exact)"),
    "seed": (int, 0, ("work_conserving",), "seed of the noise; run i uses (seed, i)"),
    "runs": (int, 1, ("work_conserving",), "seeded executions averaged into the makespan (mean ± std)"),
    "memory_aware": (bool, False, ("work_conserving",),
                     "an op waits until its temp + output bytes fit in its device's free memory"),
    "dispatch_s": (float, 0.0, ("work_conserving",),
                   "device busy after each non-zero op, after its copies (the executor's per-op cost), s"),
    "copy_occupies_sender": (bool, False, ("work_conserving",),
                             "a transfer runs on its source device right after the producer, one per "
                             "destination device, and delays that device's next op by its bytes / bandwidth; "
                             "the latency is in flight (the executor's copies)"),
    "copy_bus_shared": (bool, False, ("work_conserving",),
                        "with copy_occupies_sender: the copies in progress on all devices share one bus "
                        "(memory bandwidth of one machine; see copy_bus_capacity)"),
    "copy_bus_capacity": (float, 1.0, ("work_conserving",),
                          "with copy_bus_shared: the bus carries this many copies at full speed; k > capacity "
                          "copies at once each move at capacity / k"),
}


@dataclass(frozen=True)
class Device:
    """One device. ``memory_bytes`` is its capacity; ``speed`` divides compute times. ``model``
    (a GPU of :data:`engine.costmodel.GPU_SPECS`, e.g. ``"V100"``) picks a graph's ``kind@model``
    compute column where the graph carries one (``docs/reference/costs.md``)."""

    name: str
    kind: str
    memory_bytes: float
    speed: float = 1.0
    model: str | None = None


@dataclass(frozen=True)
class Link:
    """A point-to-point link: bytes/s and a fixed latency (s) added to every transfer.

    ``copy_curve``: measured ``(bytes, seconds)`` points of a copy's time on its sender, bytes
    increasing (``placelab calibrate``: copies that fit in the caches run faster than memory
    bandwidth). Read only where the sender makes the copy (``work_conserving`` with
    ``copy_occupies_sender``), in place of bytes / bandwidth: :meth:`copy_seconds`.
    """

    bandwidth_bytes_per_s: float
    latency_s: float = 0.0
    copy_curve: tuple[tuple[float, float], ...] = ()

    def copy_seconds(self, nbytes: np.ndarray) -> np.ndarray:
        """A copy's time on its sender: the curve interpolated linearly in bytes (below its first
        point, that point's time; beyond its last, the last time plus the extra bytes / bandwidth);
        bytes / bandwidth without a curve."""
        nbytes = np.asarray(nbytes, dtype=np.float64)
        if not self.copy_curve:
            return nbytes / self.bandwidth_bytes_per_s
        xs, ys = np.array(self.copy_curve, dtype=np.float64).T
        beyond = ys[-1] + (nbytes - xs[-1]) / self.bandwidth_bytes_per_s
        return np.where(nbytes > xs[-1], beyond, np.interp(nbytes, xs, ys))


@dataclass(frozen=True)
class SimulationSettings:
    """How the simulator treats this cluster (CONTRACTS §4; every option in :data:`SIMULATION_OPTIONS`).

    ``op_overhead_s`` is Placeto's δ1 (device busy after each non-zero op), and
    ``transfer_gap_s`` its δ2 (channel busy after each transfer), Placeto App. A.5. The
    others are options of the ``work_conserving`` mode (``docs/reference/simulation.md``): ChooseTask
    strategy, link contention, stochastic durations (``noise``, ``seed``, ``runs``) and
    memory-aware waiting.
    """

    mode: str = "default"
    op_overhead_s: float = 0.0
    transfer_gap_s: float = 0.0
    choose: str = "fifo"
    contention: str = "none"
    noise: float = 0.0
    seed: int = 0
    runs: int = 1
    memory_aware: bool = False
    dispatch_s: float = 0.0
    copy_occupies_sender: bool = False
    copy_bus_shared: bool = False
    copy_bus_capacity: float = 1.0

    def options(self) -> dict[str, Any]:
        """The settings that differ from their defaults (mode excluded)."""
        return {k: getattr(self, k) for k, (_t, default, _m, _h) in SIMULATION_OPTIONS.items()
                if getattr(self, k) != default}

    def validate(self) -> None:
        """Raise :class:`ClusterError` for a bad value or an option the mode does not read."""
        if self.mode not in SIMULATION_MODES:
            raise ClusterError(f"simulation mode must be one of {', '.join(SIMULATION_MODES)}, got {quote(self.mode)}")
        _nonnegative(self.op_overhead_s, "simulation.op_overhead_s")
        _nonnegative(self.transfer_gap_s, "simulation.transfer_gap_s")
        _nonnegative(self.noise, "simulation.noise")
        _nonnegative(self.dispatch_s, "simulation.dispatch_s")
        for name, allowed in (("choose", CHOOSE_TASK), ("contention", CONTENTION)):
            if getattr(self, name) not in allowed:
                raise ClusterError(f"simulation.{name} must be one of {', '.join(allowed)}, "
                                   f"got {quote(getattr(self, name))}")
        for name, low in (("seed", 0), ("runs", 1)):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < low:
                raise ClusterError(f"simulation.{name} must be an integer >= {low}, got {quote(v)}")
        # before any simulation: runs=10^12 never ends, noise=1e300 gives makespans of 0.0, a seed of 2^32 is
        # outside every placer's range
        check_seed("simulation.seed", self.seed, ClusterError)
        check_at_most("simulation.runs", self.runs, MAX_SIM_RUNS, "MAX_SIM_RUNS", ClusterError)
        check_at_most("simulation.noise", self.noise, MAX_NOISE, "MAX_NOISE", ClusterError)
        for name in ("memory_aware", "copy_occupies_sender", "copy_bus_shared"):
            if not isinstance(getattr(self, name), bool):
                raise ClusterError(f"simulation.{name} must be true or false, got {quote(getattr(self, name))}")
        if not _finite_number(self.copy_bus_capacity) or self.copy_bus_capacity < 1:
            raise ClusterError("simulation.copy_bus_capacity must be a finite number >= 1, "
                               f"got {self.copy_bus_capacity!r}")
        if self.copy_bus_shared and not self.copy_occupies_sender:
            raise ClusterError("simulation.copy_bus_shared needs copy_occupies_sender=true: the bus is shared by "
                               "the copies their senders make")
        for name in self.options():
            modes = SIMULATION_OPTIONS[name][2]
            if self.mode not in modes:
                raise ClusterError(f"simulation setting {quote(name)} applies to {' and '.join(modes)} mode, "
                                   f"not {self.mode}")


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
            raise ClusterError(f"cluster {quote(self.name)} has no devices")
        _check_device_count(self.name, len(self.devices))
        seen: set[str] = set()
        for d in self.devices:
            if not d.name or d.name in seen:
                raise ClusterError(f"cluster {quote(self.name)}: duplicate or empty device name {quote(d.name)}")
            seen.add(d.name)
            if not d.kind or MODEL_SEPARATOR in d.kind:
                raise ClusterError(f"device {quote(d.name)}: kind must be a non-empty string without "
                                   f"'{MODEL_SEPARATOR}'")
            if d.model is not None:
                known = [s.name for s in GPU_SPECS if s.kind == d.kind]
                if not known:
                    raise ClusterError(f"device {quote(d.name)}: a {d.kind} device names no model (graphs carry "
                                       f"per-model times for {GPU_SPECS[0].kind} devices only)")
                if d.model not in known:
                    raise ClusterError(
                        f"device {quote(d.name)}: unknown {d.kind} model {d.model!r}; one of {', '.join(known)}, "
                        f"or no 'model' to run the graph's {quote(d.kind)} times as they are")
            _positive(d.memory_bytes, f"device {quote(d.name)}: memory_bytes")
            _positive(d.speed, f"device {quote(d.name)}: speed")
        for a, b, lk in ((None, None, self.link), *self.links):
            where = "link" if a is None else f"link between {quote(a)} and {quote(b)}"
            _positive(lk.bandwidth_bytes_per_s, f"{where}: bandwidth_bytes_per_s")
            _nonnegative(lk.latency_s, f"{where}: latency_s")
            _check_curve(lk.copy_curve, where)
            if lk.copy_curve and (a is not None or self.links):
                raise ClusterError(f"{where}: a copy_curve is for a cluster with one link (no per-pair 'links')")
            for end in (a, b):
                if end is not None and end not in seen:
                    raise ClusterError(f"{where} names unknown device {quote(end)}")
            if a is not None and a == b:
                raise ClusterError(f"{where} connects a device to itself")
        self.simulation.validate()
        s = self.simulation
        links = [self.link, *(lk for _, _, lk in self.links)]
        check_total([d.memory_bytes for d in self.devices], f"cluster {quote(self.name)}: memory", ClusterError)
        check_total([1 / d.speed for d in self.devices] + [1 / lk.bandwidth_bytes_per_s for lk in links],
                    f"cluster {quote(self.name)}: the reciprocal speeds and bandwidths", ClusterError)
        check_total([lk.latency_s for lk in links] + [s.op_overhead_s, s.transfer_gap_s, s.dispatch_s],
                    f"cluster {quote(self.name)}: the latencies and overheads", ClusterError)

    def with_simulation(self, mode: str | None = None, **options: Any) -> Cluster:
        """This cluster with other simulation settings: ``mode`` and/or options of
        :data:`SIMULATION_OPTIONS`. Changing the mode resets the options the new mode does not
        read to their defaults (a preset's δ1/δ2 do not follow it into work_conserving).

        Every :class:`~engine.sim.simulator.Simulator` built on the result (placers, learned
        placers, trainers) simulates with these settings.

        Raises
        ------
        ClusterError
            For an unknown mode or option, or a bad value.
        """
        from dataclasses import replace

        unknown = sorted(set(options) - set(SIMULATION_OPTIONS))
        if unknown:
            raise ClusterError(f"unknown simulation setting {quote(unknown[0])} "
                               f"(settings: {', '.join(SIMULATION_OPTIONS)})")
        s = self.simulation
        if mode is not None and mode != s.mode:
            if mode not in SIMULATION_MODES:
                raise ClusterError(f"simulation mode must be one of {', '.join(SIMULATION_MODES)}, got {quote(mode)}")
            keep = {k: v for k, v in s.options().items() if mode in SIMULATION_OPTIONS[k][2]}
            s = SimulationSettings(mode, **keep)
        if not options and s is self.simulation:
            return self
        return replace(self, simulation=replace(s, **options))

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
            raise ClusterError(f"cluster {quote(self.name)} has no device {quote(name)} "
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
        opts = "".join(f", {k}={v}" for k, v in self.simulation.options().items()
                       if SIMULATION_OPTIONS[k][2] == ("work_conserving",))
        return (f"{parts}; {self.memory.min() / 1e9:g}–{self.memory.max() / 1e9:g} GB; "
                f"{self.link.bandwidth_bytes_per_s / 1e9:g} GB/s default link; {self.simulation.mode} mode{opts}")


def _finite_number(x: Any) -> bool:
    if not isinstance(x, int | float) or isinstance(x, bool):
        return False
    try:
        return math.isfinite(x)
    except OverflowError:  # an integer beyond float range (JSON allows any length)
        return False


def _check_device_count(name: str, count: int) -> None:
    if count > MAX_DEVICES:
        raise ClusterError(f"cluster {quote(name)} has {count} devices, more than the {MAX_DEVICES} placelab simulates")


def _positive(x: Any, what: str) -> None:
    if not _finite_number(x) or x <= 0:
        raise ClusterError(f"{what} must be a finite number > 0, got {quote(x)}")


def _nonnegative(x: Any, what: str) -> None:
    if not _finite_number(x) or x < 0:
        raise ClusterError(f"{what} must be a finite number >= 0, got {quote(x)}")


def _check_curve(curve: Any, where: str) -> None:
    bad = ClusterError(f"{where}: copy_curve must be a list of [bytes, seconds] pairs, finite and >= 0, "
                       "bytes increasing")
    if not isinstance(curve, tuple):
        raise bad
    prev = -1.0
    for point in curve:
        if not isinstance(point, tuple) or len(point) != 2 or not all(_finite_number(x) and x >= 0 for x in point):
            raise bad
        if point[0] <= prev:
            raise bad
        prev = point[0]


def _link(doc: Any, where: str) -> Link:
    if not isinstance(doc, dict) or "bandwidth_bytes_per_s" not in doc:
        raise ClusterError(f"{where} needs 'bandwidth_bytes_per_s'")
    curve = doc.get("copy_curve", [])
    if not isinstance(curve, list) or not all(isinstance(p, list) for p in curve):
        _check_curve(None, where)
    return Link(doc["bandwidth_bytes_per_s"], doc.get("latency_s", 0.0), tuple(tuple(p) for p in curve))


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
    name = doc.get("name", source)
    if not isinstance(name, str):
        raise ClusterError(f"{source}: 'name' must be a string")
    _check_device_count(name, len(devs))  # before a million devices are built, one by one
    devices = []
    for i, d in enumerate(devs):
        if not isinstance(d, dict) or not isinstance(d.get("name"), str) or not isinstance(d.get("kind"), str):
            raise ClusterError(f"{source}: device #{i} needs string 'name' and 'kind'")
        if "memory_bytes" not in d:
            raise ClusterError(f"device {quote(d['name'])} needs 'memory_bytes'")
        model = d.get("model")
        if model is not None and not isinstance(model, str):
            raise ClusterError(f"device {quote(d['name'])}: 'model' must be a string such as \"V100\"")
        devices.append(Device(d["name"], d["kind"], d["memory_bytes"], d.get("speed", 1.0), model))
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
    unknown = set(sim) - {"mode", *SIMULATION_OPTIONS}
    if unknown:
        raise ClusterError(f"{source}: unknown simulation setting {quote(sorted(unknown)[0])}")
    settings = SimulationSettings(sim.get("mode", "default"),
                                  **{k: sim[k] for k in SIMULATION_OPTIONS if k in sim})
    return Cluster(name, tuple(devices), link, tuple(links), settings, str(doc.get("description", "")))


def cluster_to_dict(c: Cluster) -> dict[str, Any]:
    """The ``placelab.cluster/1`` document of ``c``."""
    doc: dict[str, Any] = {
        "schema": CLUSTER_SCHEMA,
        "name": c.name,
        "devices": [{"name": d.name, "kind": d.kind, "memory_bytes": d.memory_bytes, "speed": d.speed,
                     **({"model": d.model} if d.model else {})} for d in c.devices],
        "link": {"bandwidth_bytes_per_s": c.link.bandwidth_bytes_per_s, "latency_s": c.link.latency_s,
                 **({"copy_curve": [list(p) for p in c.link.copy_curve]} if c.link.copy_curve else {})},
        "links": [{"between": [a, b], "bandwidth_bytes_per_s": lk.bandwidth_bytes_per_s,
                   "latency_s": lk.latency_s} for a, b, lk in c.links],
        "simulation": {"mode": c.simulation.mode, "op_overhead_s": c.simulation.op_overhead_s,
                       "transfer_gap_s": c.simulation.transfer_gap_s,
                       **{k: v for k, v in c.simulation.options().items()
                          if k not in ("op_overhead_s", "transfer_gap_s")}},
    }
    if c.description:
        doc["description"] = c.description
    return doc


def parse_simulation_options(pairs: Sequence[str]) -> dict[str, Any]:
    """``key=value`` strings (the CLI's ``--sim-param``) as typed simulation options.

    Raises
    ------
    ClusterError
        For a pair without ``=``, an unknown key, or a value of the wrong type.
    """
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise ClusterError(f"--sim-param expects key=value, got {quote(pair)}")
        if key not in SIMULATION_OPTIONS:
            raise ClusterError(f"unknown simulation setting {quote(key)} (settings: {', '.join(SIMULATION_OPTIONS)})")
        kind = SIMULATION_OPTIONS[key][0]
        try:
            if kind is bool:
                if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError
                out[key] = value.lower() in ("true", "1", "yes")
            else:
                out[key] = kind(value)
        except ValueError:
            raise ClusterError(f"simulation setting {quote(key)} must be {kind.__name__}, got {quote(value)}") from None
    return out


def save_cluster(c: Cluster, path: str | os.PathLike) -> None:
    atomic_write_text(path, dumps(cluster_to_dict(c), indent=1))


def edge_transfer_cost(graph: CompGraph, cluster: Cluster, devices: np.ndarray | None = None) -> np.ndarray:
    """Seconds each edge's transfer takes (one value per edge id).

    With ``devices`` (a placement): 0 for an edge within one device, else the edge's given
    ``transfer_s`` or latency + bytes / bandwidth of the link between the two devices.
    Without: every edge as if it crossed the cluster's default link (the communication
    cost of DOPPLER App. E, for t-levels and b-levels before placement). Use it as the
    ``edge_cost`` of :func:`engine.graph.dag.b_level` / :func:`engine.graph.dag.t_level`.
    """
    given = graph.edge_transfer_s
    if devices is None:
        by_link = cluster.link.latency_s + graph.edge_bytes / cluster.link.bandwidth_bytes_per_s
        return np.where(np.isnan(given), by_link, given)
    dev = np.asarray(devices, dtype=np.int64)
    a, b = dev[graph.edge_src], dev[graph.edge_dst]
    by_link = cluster.latency[a, b] + graph.edge_bytes / cluster.bandwidth[a, b]
    return np.where(a == b, 0.0, np.where(np.isnan(given), by_link, given))
