"""The executor: real execution of a placed graph on this machine's devices (issue #14).

One worker process per cluster device (``spawn``; see :mod:`engine.executor.worker`), each
pinned to its own CPU core and limited to one torch thread, or bound to one CUDA device.
A pipe connects every ordered pair of workers; every pair that needs copies gets a block of
shared memory (:mod:`multiprocessing.shared_memory`) that the sender copies outputs into.

Deviations from the simulator, by construction of a CPU executor: a copy is made by the
sending worker, so it occupies the sender's core (a device whose copy engine is its core);
memory is not allocated (peak memory is the CONTRACTS §4 rules on measured intervals).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from dataclasses import dataclass
from multiprocessing import connection, get_context, shared_memory
from typing import Any

import numpy as np

from engine.cluster import Cluster
from engine.errors import PlacelabError, quote
from engine.executor.cores import default_cores
from engine.executor.kernels import KernelModel
from engine.executor.plan import build_plans, measured_schedule, transfer_table
from engine.executor.worker import worker_main
from engine.graph.compgraph import CompGraph
from engine.placement import Constraints, Placement
from engine.sim.schedule import Schedule

__all__ = ["ExecutionError", "Executor", "Measurement", "check_executable", "execute"]

_RELEASE_DELAY_NS = 20_000_000  # workers are released together this long after "go" is sent


class ExecutionError(PlacelabError):
    """The executor could not run: a worker died, timed out, or the cluster does not fit here."""


@dataclass(frozen=True)
class Measurement:
    """Repeated executions of one placement: every schedule and its makespan statistics.

    ``schedule`` is the repeat whose makespan is the median (the one to draw).
    """

    schedules: list[Schedule]

    @property
    def makespans(self) -> np.ndarray:
        return np.array([s.makespan for s in self.schedules])

    @property
    def mean(self) -> float:
        return float(self.makespans.mean())

    @property
    def std(self) -> float:
        return float(self.makespans.std(ddof=1)) if len(self.schedules) > 1 else 0.0

    @property
    def schedule(self) -> Schedule:
        m = self.makespans
        return self.schedules[int(np.argsort(m)[(len(m) - 1) // 2])]


def _device_targets(cluster: Cluster, cores: list[int] | None) -> list[tuple[str, int | None]]:
    """(torch device, CPU core) of every cluster device: ``cpu`` kinds on cores, ``gpu`` on CUDA."""
    n_cpu = sum(d.kind == "cpu" for d in cluster.devices)
    avail = sorted(cores) if cores is not None else default_cores(len(os.sched_getaffinity(0)))
    if n_cpu > len(avail):
        raise ExecutionError(f"cluster {quote(cluster.name)} has {n_cpu} CPU devices but this machine gives "
                             f"{len(avail)} cores; one worker per core is needed")
    out, c, g = [], 0, 0
    for d in cluster.devices:
        if d.kind == "cpu":
            out.append(("cpu", avail[c]))
            c += 1
        elif d.kind == "gpu":
            out.append((f"cuda:{g}", None))
            g += 1
        else:
            raise ExecutionError(f"device {quote(d.name)} has kind {quote(d.kind)}; the executor runs 'cpu' and 'gpu'")
    if g:
        _check_cuda(g)
    return out


def check_executable(cluster: Cluster, cores: list[int] | None = None) -> None:
    """Raise :class:`ExecutionError` (one sentence) unless this machine has ``cluster``'s devices.

    The check :class:`Executor` makes before it starts workers: a core per ``cpu`` device, a
    CUDA device per ``gpu`` device, no other kinds. Starts nothing.
    """
    _device_targets(cluster, cores)


def _check_cuda(needed: int) -> None:
    import torch

    have = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if have < needed:
        raise ExecutionError(f"the cluster has {needed} GPU devices but torch.cuda reports {have}")


def _check_shared_memory(nbytes: int) -> None:
    """Refuse copies that /dev/shm cannot hold (writing past it kills a worker with SIGBUS)."""
    if nbytes and os.path.isdir("/dev/shm"):
        free = shutil.disk_usage("/dev/shm").free
        if nbytes > free:
            raise ExecutionError(f"the transfers need {nbytes / 1e6:.1f} MB of shared memory but /dev/shm has "
                                 f"{free / 1e6:.1f} MB free; scale the graph's bytes down (bytes_scale)")


class Executor:
    """Worker processes for ``cluster``'s devices, started once and reused for many runs.

    Use as a context manager (or call :meth:`close`): workers are stopped and shared memory
    is released on exit, also after an error.

    Parameters
    ----------
    cluster : Cluster
        Devices of kind ``cpu`` (one pinned worker per core) and ``gpu`` (one per CUDA device).
    cores : list of int, optional
        CPU cores to pin to, in device order (default: the cores this process may use, one per
        physical core first and core 0's last: :func:`engine.executor.cores.spread_cores`).
    timeout_s : float
        Longest a worker may take to start, plan or run one step before the run fails.
    """

    def __init__(self, cluster: Cluster, *, cores: list[int] | None = None, timeout_s: float = 120.0) -> None:
        self.cluster = cluster
        self.timeout_s = timeout_s
        targets = _device_targets(cluster, cores)
        ctx = get_context("spawn")
        n = cluster.num_devices
        self._slabs: dict[tuple[int, int], shared_memory.SharedMemory] = {}
        self._procs: list[Any] = []
        self._ctrl: list[Any] = []
        pipes = {(s, t): ctx.Pipe(duplex=False) for s in range(n) for t in range(n) if s != t}
        try:
            for i, (dev, core) in enumerate(targets):
                parent_end, child_end = ctx.Pipe()
                inbox = {s: pipes[(s, i)][0] for s in range(n) if s != i}
                outbox = {t: pipes[(i, t)][1] for t in range(n) if t != i}
                p = ctx.Process(target=worker_main, args=(i, dev, core, child_end, inbox, outbox),
                                name=f"placelab-worker-{cluster.devices[i].name}", daemon=True)
                p.start()
                child_end.close()
                self._procs.append(p)
                self._ctrl.append(parent_end)
            for r, w in pipes.values():
                r.close()
                w.close()
            ready = self._gather("ready")
        except BaseException:
            self.close()
            raise
        self.models = [KernelModel(r["overhead_s"], r["per_row_s"], r["inner"], r["max_rows"]) for r in ready]
        self.worker_info = ready

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the workers (terminate them if they do not stop) and free shared memory."""
        for conn in self._ctrl:
            with contextlib.suppress(OSError, ValueError):
                conn.send(("stop", None))
        deadline = time.monotonic() + 5.0
        for p in self._procs:
            p.join(max(0.0, deadline - time.monotonic()))
            if p.is_alive():
                p.terminate()
                p.join(2.0)
            if p.is_alive():
                p.kill()
                p.join()
        for conn in self._ctrl:
            conn.close()
        self._procs, self._ctrl = [], []
        for shm in self._slabs.values():
            shm.close()
            shm.unlink()
        self._slabs = {}

    def _gather(self, expect: str) -> list[Any]:
        """One reply per worker; a dead or silent worker stops everything with one clear error."""
        replies: dict[int, Any] = {}
        waiting = {c: i for i, c in enumerate(self._ctrl)}
        sentinels = {p.sentinel: i for i, p in enumerate(self._procs)}
        deadline = time.monotonic() + self.timeout_s
        while waiting:
            ready = connection.wait([*waiting, *sentinels], timeout=max(0.0, deadline - time.monotonic()))
            if not ready:
                i = next(iter(waiting.values()))
                self._fail(f"worker for device {quote(self.cluster.devices[i].name)} did not answer within "
                           f"{self.timeout_s:g} s")
            for obj in ready:
                if obj in waiting:
                    i = waiting[obj]
                    try:
                        kind, payload = obj.recv()
                    except (EOFError, OSError):
                        continue  # its sentinel reports the death
                    if kind != expect:
                        self._fail(f"worker {i} answered {quote(kind)} instead of {quote(expect)}")
                    replies[i] = payload
                    del waiting[obj]
                elif obj in sentinels:
                    i = sentinels.pop(obj)
                    if i in replies and expect != "ready":
                        continue
                    p = self._procs[i]
                    p.join(1.0)
                    self._fail(f"worker for device {quote(self.cluster.devices[i].name)} (pid {p.pid}) died "
                               f"with exit code {p.exitcode}; the run was stopped")
        return [replies[i] for i in range(len(self._ctrl))]

    def _fail(self, message: str) -> None:
        self.close()
        raise ExecutionError(message)

    # ------------------------------------------------------------------ running
    def _slab_names(self, table: dict[tuple[int, int], int], devices: np.ndarray) -> dict[tuple[int, int], str]:
        need: dict[tuple[int, int], int] = {}
        for (op, dst), nbytes in table.items():
            key = (int(devices[op]), dst)
            need[key] = max(need.get(key, 1), nbytes)
        grow = sum(size for key, size in need.items() if key not in self._slabs or self._slabs[key].size < size)
        _check_shared_memory(grow)
        dropped = []
        for key, size in need.items():
            old = self._slabs.get(key)
            if old is None or old.size < size:
                if old is not None:
                    dropped.append(old)
                self._slabs[key] = shared_memory.SharedMemory(create=True, size=size)
        if dropped:
            names = [s.name for s in dropped]
            for conn in self._ctrl:
                conn.send(("drop_slabs", names))
            for s in dropped:
                s.close()
                s.unlink()
        return {key: self._slabs[key].name for key in need}

    def run(self, graph: CompGraph, placement: Placement | np.ndarray, *, repeats: int = 1,
            warmup: int = 1) -> Measurement:
        """Execute ``placement`` ``warmup + repeats`` times; measure the last ``repeats``.

        Each op runs for its compute time on its device's kind: a device's ``speed`` is a
        prediction (the simulator divides compute times by it, e.g. in a cluster refined on
        measured runs, :func:`engine.executor.fidelity.refine_cluster`), not an instruction to
        the machine, which is as fast as it is.

        Raises
        ------
        PlacementError
            If the placement does not fit the graph and cluster.
        ExecutionError
            If a worker dies or does not answer in time (all workers are then stopped).
        """
        if repeats < 1 or warmup < 0:
            raise ExecutionError(f"repeats must be >= 1 and warmup >= 0, got {repeats} and {warmup}")
        if not self._procs:
            raise ExecutionError("this executor is closed")
        dev = np.asarray(placement.devices if isinstance(placement, Placement) else placement, dtype=np.int64)
        durations = Constraints(graph, self.cluster).check(dev) * self.cluster.speed[dev]  # speed: see above
        table = transfer_table(graph, dev)
        plans = build_plans(graph, self.cluster, dev, durations, self._slab_names(table, dev))
        for conn, plan in zip(self._ctrl, plans, strict=True):
            conn.send(("plan", plan))
        self._gather("planned")
        schedules = []
        for r in range(warmup + repeats):
            t0 = time.monotonic_ns() + _RELEASE_DELAY_NS
            for conn in self._ctrl:
                conn.send(("go", t0))
            records = self._gather("done")
            if r >= warmup:
                schedules.append(measured_schedule(graph, self.cluster, dev, plans, records, t0))
        return Measurement(schedules)


def execute(graph: CompGraph, cluster: Cluster, placement: Placement | np.ndarray, *, repeats: int = 1,
            warmup: int = 1, cores: list[int] | None = None) -> Schedule:
    """Run ``placement`` of ``graph`` for real on this machine and return the measured Schedule.

    The counterpart of :func:`engine.sim.simulator.simulate`: same arguments, same result type,
    with ``mode == "measured"``. Starts workers, runs ``warmup`` unmeasured steps and
    ``repeats`` measured ones, and returns the schedule of the median repeat. For many
    placements, or for the spread over repeats, keep an :class:`Executor` open and use
    :meth:`Executor.run`. Scale a graph whose step is too long or too short with
    :func:`~engine.executor.plan.scale_graph` first.
    """
    with Executor(cluster, cores=cores) as ex:
        return ex.run(graph, placement, repeats=repeats, warmup=warmup).schedule
