"""The result of a simulation: op intervals, transfers, per-device times, memory, makespan.

All times are seconds from the start of the step; all sizes are bytes. Arrays are indexed
by op index (ops) or by transfer row (transfers); devices by cluster device index.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["MemoryTimeline", "Schedule"]


@dataclass(frozen=True)
class MemoryTimeline:
    """Memory in use on each device over time: a step function per device.

    ``times[d]`` and ``bytes[d]`` are parallel arrays: from ``times[d][k]`` on, device ``d``
    holds ``bytes[d][k]`` bytes (persistent bytes included), until the next time.
    """

    times: list[np.ndarray]
    bytes: list[np.ndarray]


@dataclass(frozen=True)
class Schedule:
    """A simulated execution of a placed graph on a cluster.

    Attributes
    ----------
    makespan : float
        Time of the last event (s), trailing op overhead and transfer gap included.
    op_device, op_start, op_end : ndarray, shape (ops,)
        Device index, start and end (s) of every op (end = start + compute time).
    transfer_op, transfer_src, transfer_dst : ndarray of int, shape (transfers,)
        Producer op, source device and destination device of every transfer row. In placeto
        mode one transfer serves several destinations: its rows share start and end.
    transfer_bytes, transfer_start, transfer_end : ndarray, shape (transfers,)
        Size, start and arrival time (s).
    compute_time, memcpy_time : ndarray, shape (devices,)
        Seconds each device spent computing, and each device's outgoing channel copying.
    peak_memory : ndarray, shape (devices,)
        Peak bytes in use (persistent included).
    memory_capacity : ndarray, shape (devices,)
        Each device's ``memory_bytes``.
    persistent_memory : ndarray, shape (devices,)
        Persistent bytes (weights, optimizer state) of the ops placed on each device.
    transfer_primary : ndarray of bool, shape (transfers,)
        True for the row that stands for its channel transfer (every row in default mode;
        the first destination of a shared transfer in placeto mode).
    mode : str
        Simulation mode that produced it.
    stalled : ndarray of bool, shape (devices,), optional
        Work-conserving mode with ``memory_aware``: the device still had ops waiting for
        memory that was never freed (a deadlock). Those ops never ran (start and end NaN),
        and the device counts as OOM.
    """

    makespan: float
    op_device: np.ndarray
    op_start: np.ndarray
    op_end: np.ndarray
    transfer_op: np.ndarray
    transfer_src: np.ndarray
    transfer_dst: np.ndarray
    transfer_bytes: np.ndarray
    transfer_start: np.ndarray
    transfer_end: np.ndarray
    compute_time: np.ndarray
    memcpy_time: np.ndarray
    peak_memory: np.ndarray
    memory_capacity: np.ndarray
    persistent_memory: np.ndarray
    transfer_primary: np.ndarray
    mode: str
    stalled: np.ndarray | None = None
    _memory_events: tuple[np.ndarray, np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    @property
    def num_devices(self) -> int:
        return len(self.compute_time)

    @property
    def oom(self) -> np.ndarray:
        """Boolean per device: peak memory exceeds capacity, or ops deadlocked waiting for memory."""
        over = self.peak_memory > self.memory_capacity
        return over if self.stalled is None else over | self.stalled

    @property
    def any_oom(self) -> bool:
        return bool(self.oom.any())

    @property
    def communication_bytes(self) -> float:
        """Total bytes sent between devices (a shared placeto transfer counts once)."""
        return float(self.transfer_bytes[self.transfer_primary].sum())

    def memory_timeline(self) -> MemoryTimeline:
        """Memory in use over time per device (needs ``simulate(..., record_memory=True)``)."""
        if self._memory_events is None:
            raise ValueError("this schedule was simulated without record_memory=True")
        t, d, b = self._memory_events
        base = self.persistent_memory
        times, values = [], []
        for dev in range(self.num_devices):
            sel = np.flatnonzero(d == dev)
            sel = sel[np.argsort(t[sel], kind="stable")]  # frees are recorded when applied, not when due
            tt = np.concatenate([[0.0], t[sel]])
            vv = base[dev] + np.concatenate([[0.0], np.cumsum(b[sel])])
            # keep the last value at each time (several changes at one instant)
            last = np.r_[tt[1:] != tt[:-1], True]
            times.append(tt[last])
            values.append(vv[last])
        return MemoryTimeline(times, values)
