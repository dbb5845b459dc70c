"""The real work a worker does: dense matmuls sized to a duration, and copies of bytes.

torch is imported inside :func:`make_kernel` only, in the worker process, so ``engine``
imports without it.

An op of duration *t* runs ``full`` matmuls of a ``max_rows × K`` block by a ``K × K``
matrix, then one of ``rows`` rows, chosen from the worker's linear timing model
``time(rows) = a + b · rows`` (fitted by :meth:`Kernel.calibrate`): the model is what
"sized to match the op's compute time after a calibration of the worker's throughput"
means here. Throughput = ``2 K² / b`` FLOP/s. A CPU core uses K = 256 and blocks of 1,024
rows (~1 ms); a GPU uses K = 2,048 and blocks of 8,192 rows (~1 ms on an H100 in fp32), so
that kernel launches do not dominate. On a GPU an op's interval is measured with CUDA
events: it ends when the host sees the device finish and lasts the events' elapsed time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

__all__ = ["Kernel", "KernelModel", "make_kernel"]

SHAPES = {"cpu": (256, 1024), "cuda": (2048, 8192)}
"""(K, rows of the largest block) per device type: a block takes ~1 ms; long ops loop over it."""
_CAL_FRACTIONS = (1 / 1024, 1 / 128, 1 / 32, 3 / 32, 1 / 4, 1 / 2, 1.0)


@dataclass(frozen=True)
class KernelModel:
    """``time(rows) = overhead_s + per_row_s · rows`` for one ``rows × inner`` by ``inner × inner`` matmul."""

    overhead_s: float
    per_row_s: float
    inner: int = SHAPES["cpu"][0]
    max_rows: int = SHAPES["cpu"][1]

    @property
    def flops_per_s(self) -> float:
        return 2.0 * self.inner * self.inner / self.per_row_s

    def split(self, duration_s: float) -> tuple[int, int]:
        """``(full blocks, remainder rows)`` whose modelled time is closest to ``duration_s``."""
        block = self.overhead_s + self.per_row_s * self.max_rows
        full = int(duration_s // block)
        rest = duration_s - full * block
        rows = round((rest - self.overhead_s) / self.per_row_s) if rest > self.overhead_s else 0
        if rest > 0 and rows == 0 and rest > self.overhead_s / 2:
            rows = 1
        return full, min(max(rows, 0), self.max_rows)


class Kernel:
    """Matmul and copy primitives on one device (CPU core or CUDA device)."""

    def __init__(self, torch_mod, device: str) -> None:
        self.torch = torch_mod
        self.device = device
        self.cuda = device.startswith("cuda")
        inner, rows = SHAPES["cuda" if self.cuda else "cpu"]
        gen = torch_mod.Generator().manual_seed(0)
        self.a = torch_mod.rand(rows, inner, generator=gen).to(device)
        self.b = (torch_mod.rand(inner, inner, generator=gen) / inner).to(device)
        self.c = torch_mod.empty(rows, inner, device=device)
        self.out = torch_mod.zeros(0, dtype=torch_mod.uint8, device=device)
        self.model = KernelModel(1e-6, 1e-6, inner, rows)
        self.cal_rows = sorted({max(1, round(f * rows)) for f in _CAL_FRACTIONS})

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize(self.device)

    def matmul(self, rows: int) -> None:
        self.torch.mm(self.a[:rows], self.b, out=self.c[:rows])

    def run_for(self, split: tuple[int, int]) -> int | None:
        """Run an op's matmuls (see :meth:`KernelModel.split`) and wait for them to finish.

        Returns the device time in ns measured by CUDA events on a GPU, None on a CPU.
        """
        full, rows = split
        if self.cuda:
            ev0 = self.torch.cuda.Event(enable_timing=True)
            ev1 = self.torch.cuda.Event(enable_timing=True)
            ev0.record()
        for _ in range(full):
            self.matmul(self.model.max_rows)
        if rows:
            self.matmul(rows)
        if not self.cuda:
            return None
        ev1.record()
        ev1.synchronize()
        return int(ev0.elapsed_time(ev1) * 1e6)

    def ensure_output(self, nbytes: int) -> None:
        """Grow the buffer that stands for op outputs to at least ``nbytes``."""
        if self.out.numel() < nbytes:
            self.out = self.torch.ones(nbytes, dtype=self.torch.uint8, device=self.device)

    def copy_out(self, dest: np.ndarray, nbytes: int) -> None:
        """Copy ``nbytes`` of output into ``dest`` (host shared memory): memcpy or device→host."""
        if nbytes:
            self.torch.from_numpy(dest[:nbytes]).copy_(self.out[:nbytes])
            self.sync()

    def calibrate(self, repeats: int = 15) -> KernelModel:
        """Fit the timing model by least squares over the median of ``repeats`` calls per size.

        The median, not the fastest call: an op in a run is a typical call, and on a quiet
        16-core machine the fastest of 15 was optimistic enough that ops ran 1.1–1.3× their
        modelled time. The median still ignores the odd preempted call.
        """
        for rows in self.cal_rows:  # warm-up: allocator, caches, CUDA context
            self.run_for((0, rows))
        typical = []
        for rows in self.cal_rows:
            ts = []
            for _ in range(repeats):
                t0 = time.perf_counter_ns()
                self.run_for((0, rows))
                ts.append(time.perf_counter_ns() - t0)
            typical.append(float(np.median(ts)) / 1e9)
        per_row, overhead = np.polyfit(np.array(self.cal_rows, float), np.array(typical), 1)
        self.model = KernelModel(max(float(overhead), 0.0), max(float(per_row), 1e-15), *SHAPES[
            "cuda" if self.cuda else "cpu"])
        return self.model


def make_kernel(device: str) -> Kernel:
    """A kernel on ``"cpu"`` (one thread) or ``"cuda:N"``; imports torch."""
    import torch

    torch.set_num_threads(1)
    if device.startswith("cuda"):
        torch.cuda.set_device(device)  # CUDA events record on the current device's stream
    return Kernel(torch, device)
