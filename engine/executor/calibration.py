"""Calibration: measure this machine and write the cluster file that predicts the executor.

:func:`calibrate` starts the executor's workers and measures, with the executor itself:

* **matmul throughput** of every worker (its kernel timing model, FLOP/s);
* **per-op overhead**: a chain of ``N`` ops of ``c`` seconds on one device takes
  ``N·(c + overhead)``; the overhead becomes ``simulation.dispatch_s`` of the
  ``work_conserving`` mode (the device is busy that long after every non-zero op);
* **copy bandwidth and latency** between two workers: a chain of zero-time ops that
  alternate between two devices, one copy of ``B`` bytes per hop, ``B`` from 4 KB to 128 MB;
  the hop time between the two largest sizes gives ``bandwidth_bytes_per_s`` (copies of
  graphs scaled for this machine reach 100 MB and run at memory bandwidth, beyond the caches:
  a line fitted to cache-resident copies predicts them too fast,
  docs/lab/2026-11-23-executor-first-measurements.md), and the
  smallest hop less its bytes at that bandwidth gives ``latency_s``: what a copy spends in
  flight once the sender's memcpy is done (the pipe message and the receiver's wake-up). Each
  size's hop less that latency is the link's ``copy_curve`` point for that size: copies that
  fit in the caches run faster than memory bandwidth (the curve measured on the development
  machine: docs/lab/2026-11-23-executor-fidelity-idle.md, addendum of 2026-11-29).

On CPU workers the simulation also sets ``copy_bus_shared``: the workers' copies share the
machine's memory bandwidth (in running graphs a large copy is slower while the other worker is
copying: docs/lab/2026-11-23-executor-fidelity-idle.md, "Copies beside each other"). Its
``copy_bus_capacity`` is measured: the largest copies, made by two workers at once (two hop
chains in opposite phase), take ``both`` against ``alone`` for one worker, so the bus carries
``2 · alone / both`` copies at full speed (between 1 and 2: :func:`bus_capacity`). That figure is
not always a constant of the machine: on the 2-core development VM it reads one of two values and
jumps between them on its own, while both workers' compute keeps its speed
(docs/lab/2026-11-24-noise-ceiling-and-copy-bus.md; :func:`probe_bus` takes one quick reading,
:func:`bus_states` splits a series of them; ``benchmarks/bench_copy_bus.py``). A calibration
records the state it met; ``validate --recalibrate`` reports the state of every probe and predicts
each run from the probes before and after it (``placelab.fidelity``).

The cluster simulates in the ``work_conserving`` mode — the executor's dispatch rule — with
``copy_occupies_sender=true``: a worker copies an op's outputs itself, right after the op
and before its next one, so a copy delays the sender by its bytes / bandwidth while the latency
is in flight. A graph whose copies outweigh its compute is then slower than the default mode, which
overlaps copies with compute, predicts (``gen:ffnn``: docs/lab/2026-11-23-executor-first-measurements.md).
:func:`mode_cluster` carries ``dispatch_s`` over as Placeto's δ1 (``op_overhead_s``) when
the same cluster is simulated in the ``placeto`` or ``default`` mode.

The result is a ``placelab.cluster/1`` document plus a ``calibration`` object with the raw
figures (ignored by the cluster loader). The ``local`` preset is this machine, calibrated on
first use and cached in the user cache directory (``$PLACELAB_CACHE_DIR``, else
``$XDG_CACHE_HOME/placelab``, else ``~/.cache/placelab``), never in the repository.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from engine.cluster import Cluster, Device, Link, SimulationSettings, cluster_from_dict, cluster_to_dict
from engine.errors import ClusterError, quote
from engine.graph.compgraph import CompGraph
from engine.jsonio import atomic_write_text, dumps

__all__ = ["bus_capacity", "bus_states", "cache_dir", "calibrate", "derive", "describe_bus", "local_cache_path",
           "local_cluster", "local_devices", "machine_cluster", "measure", "median_figures", "mode_cluster",
           "probe_bus", "recalibrated", "shared_bus_capacity"]

_CHAIN_OPS = 120
_CHAIN_OP_S = 300e-6
_HOPS = 30
_COPY_BYTES = (4_096, 262_144, 2_097_152, 8_388_608, 33_554_432, 134_217_728)
CALIBRATION_VERSION = 2
"""Bumped when calibration measures or writes something new: a cached ``local`` calibration of an
older version is redone (2: the copy curve and the shared copy bus)."""
MAX_LOCAL_DEVICES = 8
"""The ``local`` preset uses one device per core, at most this many."""


def cache_dir() -> Path:
    """Where the ``local`` calibration is cached (created on demand)."""
    base = os.environ.get("PLACELAB_CACHE_DIR")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "placelab"


def machine_cluster(num_devices: int, *, kind: str = "cpu", link: Link | None = None,
                    simulation: SimulationSettings | None = None, name: str = "local") -> Cluster:
    """This machine as a cluster of ``num_devices`` devices of ``kind`` (``cpu`` or ``gpu``).

    Memory per device: CPU devices share the machine's RAM equally; a GPU device has its
    CUDA memory. ``link`` and ``simulation`` are placeholders until calibrated.
    """
    if kind not in ("cpu", "gpu") or num_devices < 1:
        raise ClusterError(f"a machine cluster needs >= 1 devices of kind cpu or gpu, got {num_devices} × "
                           f"{quote(kind)}")
    if kind == "cpu":
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        mem = [ram / num_devices] * num_devices
    else:
        import torch

        mem = [float(torch.cuda.get_device_properties(i).total_memory) for i in range(num_devices)]
    devices = tuple(Device(f"{kind}:{i}", kind, m) for i, m in enumerate(mem))
    return Cluster(name, devices, link or Link(1e9), (), simulation or SimulationSettings("default"),
                   f"this machine ({platform.node()}): {num_devices} × {kind} worker, calibrated")


def _chain(devices: list[int], compute_s: float, nbytes: float) -> CompGraph:
    n = len(devices)
    return CompGraph("calibration-chain", [f"op{i}" for i in range(n)], compute_any=np.full(n, compute_s),
                     output_bytes=np.full(n, nbytes), edge_src=np.arange(n - 1), edge_dst=np.arange(1, n))


def _two_chains(alternate: list[int], nbytes: float) -> tuple[CompGraph, np.ndarray]:
    """Two independent hop chains in opposite phase: whenever one worker copies, so does the other."""
    n = len(alternate)
    src = np.concatenate([np.arange(n - 1), n + np.arange(n - 1)])
    g = CompGraph("calibration-two-chains", [f"op{i}" for i in range(2 * n)], compute_any=np.zeros(2 * n),
                  output_bytes=np.full(2 * n, nbytes), edge_src=src, edge_dst=src + 1)
    return g, np.array(alternate + [1 - d for d in alternate])


def _median_copy(m) -> float:
    """The median duration of the copies of a measurement's runs."""
    return float(np.median(np.concatenate([s.transfer_end - s.transfer_start for s in m.schedules])))


def bus_capacity(alone_s: float, both_s: float) -> float:
    """How many copies the memory bus carries at full speed: ``2 · alone / both``, in [1, 2].

    ``alone_s`` is a large copy made by one worker while the other is idle, ``both_s`` the same
    copy while the other worker makes one too (module docstring)."""
    return float(np.clip(2.0 * alone_s / max(both_s, 1e-12), 1.0, 2.0))


def probe_bus(ex, nbytes: int = 64_000_000, hops: int = 4) -> dict[str, float]:
    """One quick reading of the shared copy bus with the running executor ``ex`` (two devices or more).

    ``hops`` copies of ``nbytes`` alone (a chain between devices 0 and 1), then the same made by
    both workers at once (two chains in opposite phase); returns the median copy of each and
    their :func:`bus_capacity`. About 10 hops' copy time plus two releases of the workers."""
    alternate = [i % 2 for i in range(hops + 1)]
    alone = _median_copy(ex.run(_chain(alternate, 0.0, nbytes), np.array(alternate), warmup=0))
    both = _median_copy(ex.run(*_two_chains(alternate, nbytes), warmup=0))
    return {"alone_s": alone, "both_s": both, "capacity": bus_capacity(alone, both)}


def bus_states(capacities: list[float], split: float = 1.5) -> dict[str, Any]:
    """Readings of the bus capacity over time (:func:`probe_bus`), split into two states.

    On the 2-core development VM the capacity sits near 1.15 (the two workers share the memory
    bandwidth) or near 2 (each copies at full speed) and jumps between the two every few seconds
    to minutes, whatever the executor does (docs/lab/2026-11-24-noise-ceiling-and-copy-bus.md). Returns the
    share of readings in the *full* state (capacity >= ``split``), the median capacity in each
    state (None where a state never occurred), the number of switches between consecutive readings
    and the longest stretch of readings in one state."""
    c = np.asarray(capacities, dtype=float)
    if c.size == 0:
        return {"readings": 0, "full_share": None, "shared_median": None, "full_median": None, "switches": 0,
                "longest_stretch": 0}
    full = c >= split
    changes = np.flatnonzero(full[1:] != full[:-1])
    bounds = np.concatenate([[0], changes + 1, [c.size]])
    return {"readings": int(c.size), "full_share": float(full.mean()),
            "shared_median": float(np.median(c[~full])) if (~full).any() else None,
            "full_median": float(np.median(c[full])) if full.any() else None,
            "switches": int(changes.size), "longest_stretch": int(np.diff(bounds).max())}


def shared_bus_capacity(cluster: Cluster) -> float | None:
    """``cluster``'s calibrated ``copy_bus_capacity``; None where its copies do not share a bus."""
    return cluster.simulation.copy_bus_capacity if cluster.simulation.copy_bus_shared else None


def describe_bus(capacities: list[float], calibrated: float | None = None, split: float = 1.5) -> str:
    """One sentence for people on a series of bus readings (a validation's probes): their range, how often
    the bus switched state (:func:`bus_states`), and, where it held one state and the cluster's
    calibration (``calibrated``: its ``copy_bus_capacity``) met the other, that the recalibrated row is
    the one to read; where it switched, the recalibrated per run row (``Validation.per_run_predicted``)."""
    if not capacities:
        return "no readings"
    states = bus_states(capacities, split)
    text = f"the probes read a capacity of {min(capacities):.2f}–{max(capacities):.2f} copies at full speed"
    n = states["switches"]
    if n:
        text += (f"; it switched {n} time{'s' if n > 1 else ''} between the shared (~{states['shared_median']:.2f}) "
                 f"and the full (~{states['full_median']:.2f}) state during the measurement, so copy-bound "
                 "placements were measured on two different machines: the recalibrated per run row predicts "
                 "each run from the probes around it (docs/lab/2026-11-24-noise-ceiling-and-copy-bus.md)")
    elif calibrated is not None and (calibrated >= split) != (capacities[0] >= split):
        text += (f"; the cluster was calibrated at {calibrated:.2f}, in the other state, so its copies are "
                 "predicted for another machine: the recalibrated row is the one to read")
    return text


def measure(ex, *, kind: str = "cpu", repeats: int = 5, progress: Callable[[str], None] | None = None,
            ) -> dict[str, Any]:
    """The raw figures of a calibration, measured with the running executor ``ex``.

    ``op_overhead_s_per_device``, ``dispatch_s_per_zero_op``, and with two or more devices
    ``copy_bytes`` / ``copy_hop_s`` (the hop time per copy size), ``copy_alone_s`` and, on CPU
    workers, ``copy_both_s``: what :func:`derive` turns into the link and the simulation settings
    (module docstring). Each figure is the median over ``repeats`` measured runs.
    """
    say = progress or (lambda _msg: None)
    n = ex.cluster.num_devices
    say("per-op overhead ...")
    over = []
    for d in range(n):
        m = ex.run(_chain([d] * _CHAIN_OPS, _CHAIN_OP_S, 0.0), np.full(_CHAIN_OPS, d), repeats=repeats)
        over.append(float(np.median(m.makespans)) / _CHAIN_OPS - _CHAIN_OP_S)
    zero = ex.run(_chain([0] * _CHAIN_OPS, 0.0, 0.0), np.zeros(_CHAIN_OPS, int), repeats=repeats)
    raw: dict[str, Any] = {"op_overhead_s_per_device": over,
                           "dispatch_s_per_zero_op": float(np.median(zero.makespans)) / _CHAIN_OPS,
                           "copy_bytes": [], "copy_hop_s": [], "copy_alone_s": None, "copy_both_s": None}
    if n >= 2:
        say("copy bandwidth and latency ...")
        alternate = [i % 2 for i in range(_HOPS + 1)]
        shm_free = shutil.disk_usage("/dev/shm").free if os.path.isdir("/dev/shm") else 1 << 40
        sizes = [b for b in _COPY_BYTES if 4 * b <= shm_free] or list(_COPY_BYTES[:2])  # two slabs a pair
        for nbytes in sizes:
            m = ex.run(_chain(alternate, 0.0, nbytes), np.array(alternate), repeats=repeats)
            raw["copy_hop_s"].append(float(np.median(m.makespans)) / _HOPS)
        raw["copy_bytes"] = sizes
        raw["copy_alone_s"] = _median_copy(m)
        if kind == "cpu":  # the same copies made by two workers at once: what one memory bus carries
            raw["copy_both_s"] = _median_copy(ex.run(*_two_chains(alternate, sizes[-1]), repeats=repeats))
    return raw


def median_figures(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """The element-wise median of several :func:`measure` results (one per round of a validation).

    Only the probes that measured the same copy sizes as the first count (the sizes depend on the
    free shared memory, which a validation's own transfers take some of)."""
    rounds = [r for r in rounds if r["copy_bytes"] == rounds[0]["copy_bytes"]]
    out = dict(rounds[0])
    for key, first in rounds[0].items():
        values = [r[key] for r in rounds]
        if first is None or any(v is None for v in values):
            continue
        if key == "copy_bytes":
            continue
        out[key] = np.median(np.array(values, dtype=float), axis=0).tolist() if isinstance(first, list) \
            else float(np.median(values))
    return out


def derive(raw: dict[str, Any]) -> tuple[Link, SimulationSettings]:
    """The link and the ``work_conserving`` settings that :func:`measure`'s figures give (module docstring)."""
    sizes, hops = raw["copy_bytes"], raw["copy_hop_s"]
    bandwidth, latency, curve, capacity = 1e12, 0.0, (), 1.0
    if len(sizes) >= 2:
        # large copies run at memory bandwidth, small ones from cache: the slope of the two
        # largest sizes is the bandwidth, the smallest hop what remains of it is the latency
        bandwidth = (sizes[-1] - sizes[-2]) / max(hops[-1] - hops[-2], 1e-12)
        latency = max(hops[0] - sizes[0] / bandwidth, 0.0)
        # each size's hop less the latency is its copy on the sender (never faster for more bytes)
        copy_s = np.maximum.accumulate(np.maximum(np.array(hops) - latency, 0.0))
        curve = tuple((float(b), float(t)) for b, t in zip(sizes, copy_s, strict=True))
    both = raw["copy_both_s"]
    if both is not None:
        capacity = bus_capacity(raw["copy_alone_s"], both)
    sim = SimulationSettings("work_conserving", dispatch_s=max(float(np.mean(raw["op_overhead_s_per_device"])), 0.0),
                             copy_occupies_sender=True, copy_bus_shared=both is not None, copy_bus_capacity=capacity)
    return Link(bandwidth, latency, curve), sim


def recalibrated(cluster: Cluster, raw: dict[str, Any]) -> Cluster:
    """``cluster`` with the link and simulation settings of ``raw`` (:func:`measure`), devices kept."""
    link, sim = derive(raw)
    return dataclasses.replace(cluster, link=link, links=(), simulation=sim)


def calibrate(num_devices: int, *, kind: str = "cpu", name: str = "local", repeats: int = 5,
              progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Measure this machine; return a ``placelab.cluster/1`` document with a ``calibration`` object."""
    from engine.executor.pool import Executor

    say = progress or (lambda _msg: None)
    probe = machine_cluster(num_devices, kind=kind, name=name)
    t0 = time.time()
    say(f"starting {num_devices} {kind} workers ...")
    with Executor(probe) as ex:
        raw = measure(ex, kind=kind, repeats=repeats, progress=say)
        workers = ex.worker_info
    link, sim = derive(raw)
    cluster = machine_cluster(num_devices, kind=kind, link=link, simulation=sim, name=name)
    doc = cluster_to_dict(cluster)
    doc["calibration"] = {
        "host": platform.node(), "created_unix": time.time(), "seconds": time.time() - t0,
        "workers": [{"device": d.name, "core": w["core"], "matmul_flops_per_s": w["flops_per_s"],
                     "matmul_call_overhead_s": w["overhead_s"]} for d, w in zip(cluster.devices, workers, strict=True)],
        **raw, "version": CALIBRATION_VERSION,
    }
    return doc


def mode_cluster(cluster: Cluster, mode: str) -> Cluster:
    """``cluster`` simulated in ``mode``, its per-op cost kept: ``dispatch_s`` of a calibrated
    ``work_conserving`` cluster becomes ``op_overhead_s`` (δ1) in ``placeto`` and ``default``."""
    s = cluster.simulation
    if mode == s.mode or mode == "work_conserving" or s.mode != "work_conserving" or not s.dispatch_s:
        return cluster.with_simulation(mode=mode)
    return cluster.with_simulation(mode=mode, op_overhead_s=s.dispatch_s)


def local_devices() -> int:
    """Number of devices of the ``local`` preset: one per usable core, at most 8."""
    return min(len(os.sched_getaffinity(0)), MAX_LOCAL_DEVICES)


def local_cache_path() -> Path:
    """The cache file of the ``local`` preset (per host and device count)."""
    return cache_dir() / f"local-cpu{local_devices()}-{platform.node()}.json"


def local_cluster(*, refresh: bool = False, progress: Callable[[str], None] | None = None) -> Cluster:
    """The ``local`` preset: this machine's cores as CPU devices, calibrated once and cached."""
    path = local_cache_path()
    if path.exists() and not refresh:
        try:
            doc = json.loads(path.read_text())
            made = doc.get("calibration")  # none: a cluster written there by hand, used as it is
            if made is None or made.get("version") == CALIBRATION_VERSION:
                return cluster_from_dict(doc, source=str(path))
        except (ClusterError, ValueError, AttributeError):
            pass  # a damaged or outdated calibration is redone, not trusted
    doc = calibrate(local_devices(), progress=progress)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, dumps(doc, indent=1))
    return cluster_from_dict(doc, source=str(path))
