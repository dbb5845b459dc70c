"""Analytic op costs: a roofline model of GPUs and CPUs, and a builder of costed graphs.

Assumptions
-----------
* An op's time on a device is ``launch_overhead + max(flops / (peak·eff), bytes / (bw·eff))``
  (the roofline bound: compute- or memory-bound, whichever is slower), in **seconds**; ``bytes``
  is every byte the op reads and writes (inputs, output, weights).
* ``peak_flops`` is the dense FP32 peak (FLOP/s) and ``mem_bandwidth`` the device-memory
  bandwidth (bytes/s) of the vendor datasheet; ``efficiency`` is the fraction of both that a
  real kernel reaches (one number, a modelling choice, not a datasheet value).
* **Per-model columns.** A roofline-costed graph carries, besides its ``gpu`` (and ``cpu``)
  times, one column per GPU model of :data:`GPU_SPECS` keyed ``gpu@K80``, ``gpu@P100``, …
  (:func:`model_kind`). A device that names its ``model`` (every preset's GPUs do) runs an op
  in that model's column where the graph has it, else in its kind's column: the same graph
  is slower on a ``k80x2`` than on a ``v100x8`` by the two rooflines, and a file that carries
  its own times (DOPPLER's text files, dnn-partitioning, measured graphs) keeps them on every
  cluster (``docs/reference/costs.md``).
* The model is *analytic*. A **measured** mode (profile each op with the TF or torch
  profiler and use the measured times) is a separate module; it plugs in through the
  :class:`CostModel` protocol — anything with ``times(flops, bytes_moved) -> {kind: seconds}``
  can cost a :class:`GraphBuilder`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from engine.graph.compgraph import CompGraph, model_kind

__all__ = [
    "A100",
    "CPU_HASWELL_18C",
    "DEVICE_SPECS",
    "GPU_SPECS",
    "H100",
    "K80",
    "P100",
    "V100",
    "CostModel",
    "DeviceSpec",
    "GraphBuilder",
    "RooflineModel",
    "op_time",
    "op_times",
]

#: Bytes per element (FP32 everywhere in the papers' workloads).
FP32 = 4


@dataclass(frozen=True)
class DeviceSpec:
    """One device's roofline: dense FP32 peak (FLOP/s), memory bandwidth (bytes/s),
    achieved fraction of both, and fixed per-op launch overhead (s)."""

    name: str
    kind: str
    peak_flops: float
    mem_bandwidth: float
    efficiency: float
    launch_overhead_s: float


# Launch overheads: a CUDA kernel launch costs ~5 µs end to end (NVIDIA CUDA C Best Practices
# Guide; also Placeto's simulator adds 5.7 µs per op, A.5). A CPU op in TF's executor ~2 µs.
# Efficiency 0.6 (GPU) / 0.5 (CPU) is a modelling choice: typical achieved fraction of peak for
# the large GEMMs and streaming element-wise kernels that dominate these graphs.

#: Tesla K80, one GK210 die (TF sees each die as a GPU; Mirhoseini §4.1, Placeto A.5):
#: board 8.73 TFLOPS FP32 with GPU Boost and 480 GB/s → per die 4.37 TFLOPS, 240 GB/s
#: (NVIDIA Tesla K80 datasheet, 2014).
K80 = DeviceSpec("K80", "gpu", 4.37e12, 240e9, 0.6, 5e-6)
#: Tesla P100 SXM2 16 GB (DOPPLER §5): 10.6 TFLOPS FP32, 732 GB/s HBM2 (NVIDIA Tesla P100 datasheet, 2016).
P100 = DeviceSpec("P100", "gpu", 10.6e12, 732e9, 0.6, 5e-6)
#: Tesla V100 SXM2 (DOPPLER App. H): 15.7 TFLOPS FP32, 900 GB/s HBM2 (NVIDIA V100 datasheet, 2017).
V100 = DeviceSpec("V100", "gpu", 15.7e12, 900e9, 0.6, 5e-6)
#: A100 SXM4 80 GB: 19.5 TFLOPS FP32 (non-tensor-core), 2,039 GB/s HBM2e (NVIDIA A100 datasheet, 2021).
A100 = DeviceSpec("A100", "gpu", 19.5e12, 2039e9, 0.6, 5e-6)
#: H100 SXM5: 67 TFLOPS FP32, 3.35 TB/s HBM3 (NVIDIA H100 Tensor Core GPU datasheet, 2023).
H100 = DeviceSpec("H100", "gpu", 67e12, 3.35e12, 0.6, 5e-6)
#: Intel Xeon E5-2699 v3 — the "Intel Haswell 2300 CPU, 18 cores" of Mirhoseini §4.1:
#: 18 cores × 2.3 GHz × 32 FP32 FLOP/cycle (2 AVX2 FMA units × 8 lanes × 2) = 1.325 TFLOPS;
#: 4 × DDR4-2133 channels = 68 GB/s (Intel ARK, product 81061).
CPU_HASWELL_18C = DeviceSpec("Haswell-E5-2699v3", "cpu", 18 * 2.3e9 * 32, 68e9, 0.5, 2e-6)

DEVICE_SPECS: dict[str, DeviceSpec] = {s.name: s for s in (K80, P100, V100, A100, H100, CPU_HASWELL_18C)}
#: The GPU models a roofline-costed graph carries a column for, oldest first.
GPU_SPECS: tuple[DeviceSpec, ...] = (K80, P100, V100, A100, H100)


def _with_models(times: dict, flops, bytes_moved) -> dict:
    """``times`` plus a column per model of :data:`GPU_SPECS` whose kind ``times`` has."""
    return {**times, **{model_kind(spec.kind, spec.name): op_time(flops, bytes_moved, spec)
                        for spec in GPU_SPECS if spec.kind in times}}


def op_time(flops, bytes_moved, spec: DeviceSpec):
    """Roofline time (s) of an op doing ``flops`` FLOPs and moving ``bytes_moved`` bytes on ``spec``.

    Works on scalars and numpy arrays alike.

    Examples
    --------
    >>> round(op_time(1e12, 0.0, V100), 6)   # 5 µs + 1e12 / (15.7e12 · 0.6)
    0.106162
    """
    compute = np.asarray(flops, dtype=np.float64) / (spec.peak_flops * spec.efficiency)
    memory = np.asarray(bytes_moved, dtype=np.float64) / (spec.mem_bandwidth * spec.efficiency)
    t = spec.launch_overhead_s + np.maximum(compute, memory)
    return float(t) if t.ndim == 0 else t


def op_times(flops, bytes_moved, gpu: DeviceSpec = K80, cpu: DeviceSpec | None = CPU_HASWELL_18C,
             idle=None) -> dict:
    """Per-kind compute map ``{"gpu": s, "cpu": s, "gpu@K80": s, …}`` for ops (``cpu=None`` → GPU
    only): ``gpu`` on ``gpu``'s roofline, and a column per model of :data:`GPU_SPECS`. ``idle``
    (a mask) gives ops that do no work 0 s in every column."""
    out = {gpu.kind: op_time(flops, bytes_moved, gpu)}
    if cpu is not None:
        out[cpu.kind] = op_time(flops, bytes_moved, cpu)
    out = _with_models(out, flops, bytes_moved)
    return out if idle is None else {k: np.where(idle, 0.0, t) for k, t in out.items()}


class CostModel(Protocol):
    """Anything that turns FLOP / byte counts into per-kind times (the extension point for a
    measured, profiler-based model)."""

    kinds: tuple[str, ...]

    def times(self, flops: np.ndarray, bytes_moved: np.ndarray) -> np.ndarray:
        """Array (n, len(kinds)) of seconds; NaN where an op cannot run on a kind."""
        ...


@dataclass(frozen=True)
class RooflineModel:
    """:class:`CostModel` from one :class:`DeviceSpec` per device kind, plus a column per GPU
    model of :data:`GPU_SPECS` (``models=False``: the kinds' columns only)."""

    specs: tuple[DeviceSpec, ...] = (K80, CPU_HASWELL_18C)
    models: bool = True

    def _columns(self, flops, bytes_moved) -> dict:
        times = {s.kind: op_time(flops, bytes_moved, s) for s in self.specs}
        return _with_models(times, flops, bytes_moved) if self.models else times

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(self._columns(np.zeros(1), np.zeros(1)))

    def times(self, flops: np.ndarray, bytes_moved: np.ndarray) -> np.ndarray:
        cols = self._columns(np.asarray(flops, float), np.asarray(bytes_moved, float))
        return np.column_stack([np.atleast_1d(c) for c in cols.values()])


@dataclass
class GraphBuilder:
    """Accumulate ops described by FLOPs and bytes, then build a costed :class:`CompGraph`.

    An op's bytes moved = its inputs' edge bytes + its output + ``extra_bytes`` (weights it
    reads); edges carry the producer's output size unless given.
    """

    name: str
    model: CostModel = field(default_factory=RooflineModel)
    _rows: list[tuple] = field(default_factory=list)
    _src: list[int] = field(default_factory=list)
    _dst: list[int] = field(default_factory=list)
    _ebytes: list[float] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self._rows)

    def op(self, name: str, op_type: str, *, flops: float = 0.0, out_bytes: float = 0.0,
           inputs: Sequence[int | tuple[int, float]] = (), extra_bytes: float = 0.0,
           persistent_bytes: float = 0.0, temp_bytes: float = 0.0, phase: str | None = "forward",
           scope: str = "", colocate: str | None = None) -> int:
        """Add an op; ``inputs`` are op ids or ``(op id, bytes)`` pairs. Returns the new op's id."""
        i = len(self._rows)
        moved = out_bytes + extra_bytes
        for inp in inputs:
            src, b = (inp, self._rows[inp][3]) if isinstance(inp, int | np.integer) else inp
            self._src.append(int(src))
            self._dst.append(i)
            self._ebytes.append(float(b))
            moved += b
        self._rows.append((name, op_type, flops, out_bytes, moved, persistent_bytes, temp_bytes,
                           phase, scope, colocate))
        return i

    def out_bytes(self, i: int) -> float:
        return self._rows[i][3]

    def build(self) -> CompGraph:
        cols = list(zip(*self._rows, strict=True))
        names, types, flops, out_b, moved, pers, temp, phase, scope, coloc = cols
        by_kind = self.model.times(np.asarray(flops, float), np.asarray(moved, float))
        return CompGraph(
            self.name, names, compute_any=np.full(len(names), np.nan), compute_by_kind=by_kind,
            kinds=self.model.kinds, output_bytes=np.asarray(out_b, float),
            persistent_bytes=np.asarray(pers, float), temp_bytes=np.asarray(temp, float),
            edge_src=np.asarray(self._src, np.int64), edge_dst=np.asarray(self._dst, np.int64),
            edge_bytes=np.asarray(self._ebytes, float), op_types=types, colocate=coloc, phase=phase,
            scope=scope,
        )
