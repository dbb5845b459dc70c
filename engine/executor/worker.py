"""One worker process per device: pinned to its core, one thread, work-conserving dispatch.

The workers drive themselves (no scheduler in the loop): each holds its device's
:class:`~engine.executor.plan.WorkerPlan`, runs a ready op whenever it is free, and tells
the destination worker over a pipe when a copy of an output has landed in shared memory.

Dispatch order is that of the ``work_conserving`` simulation mode (DOPPLER §2, Alg. 1;
issue #12): an op requests its device when its last input has arrived there, and the
device serves requests first come, first served, simultaneous ones in the order their
events were created. The arrival time of a remote input is the end of its copy, read from
the message; a local input arrives when its producer ends; ops with no inputs request the
device at the release time, in op order.

Timestamps are ``time.monotonic_ns()`` (CLOCK_MONOTONIC, one clock for every process on
the machine), so the parent can put every worker's intervals on one time axis.
"""

from __future__ import annotations

import heapq
import os
import struct
import time
from multiprocessing import connection, shared_memory
from typing import Any

import numpy as np

__all__ = ["worker_main"]

_MSG = struct.Struct("<qq")  # (producer op, copy end ns)


def worker_main(index: int, device: str, core: int | None, ctrl: Any, inbox: dict[int, Any],
                outbox: dict[int, Any]) -> None:
    """Entry point of a worker process (``spawn``): serve the parent's commands until told to stop."""
    if core is not None:
        os.sched_setaffinity(0, {core})
    from engine.executor.kernels import make_kernel

    kernel = make_kernel(device)
    model = kernel.calibrate()
    ctrl.send(("ready", {"overhead_s": model.overhead_s, "per_row_s": model.per_row_s, "inner": model.inner,
                         "max_rows": model.max_rows, "flops_per_s": model.flops_per_s, "pid": os.getpid(),
                         "core": core, "device": device}))
    slabs: dict[str, tuple[shared_memory.SharedMemory, np.ndarray]] = {}
    plan = None
    while True:
        try:
            cmd, arg = ctrl.recv()
        except (EOFError, OSError):
            return  # the parent is gone
        if cmd == "stop":
            break
        if cmd == "plan":
            plan = arg
            for name in set(plan.slabs.values()) - set(slabs):
                shm = shared_memory.SharedMemory(name=name)  # the parent owns and unlinks it
                slabs[name] = (shm, np.ndarray((shm.size,), np.uint8, buffer=shm.buf))
            splits = [model.split(t) for t in plan.durations]
            kernel.ensure_output(max((b for s in plan.sends for _, b in s), default=0))
            ctrl.send(("planned", None))
        elif cmd == "go":
            ctrl.send(("done", _run(plan, splits, kernel, slabs, inbox, outbox, ctrl, arg)))
        elif cmd == "drop_slabs":
            for name in arg:
                if name in slabs:
                    slabs.pop(name)[0].close()
    for shm, _ in slabs.values():
        shm.close()


def _run(plan, splits, kernel, slabs, inbox, outbox, ctrl, t0_ns: int) -> dict[str, np.ndarray]:
    """Execute one step of the plan from release time ``t0_ns``; return the timestamps."""
    n = len(plan.ops)
    pending = list(plan.num_inputs)
    ready: list[tuple[int, int, int]] = []  # (request time ns, event order, local position)
    seq = 0
    for k in range(n):
        if pending[k] == 0:
            ready.append((t0_ns, seq, k))
            seq += 1
    heapq.heapify(ready)
    op_ns = np.zeros((n, 2), dtype=np.int64)
    transfers = []
    peers = list(inbox.values())
    while time.monotonic_ns() < t0_ns:  # everyone starts together
        pass
    done = 0
    while done < n:
        # take in every arrival already signalled; block only when nothing is ready
        while peers and (not ready or any(c.poll() for c in peers)):
            for conn in connection.wait([*peers, ctrl]) if not ready else [c for c in peers if c.poll()]:
                if conn is ctrl:
                    raise SystemExit(3)  # stopped by the parent (another worker failed)
                try:
                    producer, arrived = _MSG.unpack(conn.recv_bytes())
                except (EOFError, OSError):
                    raise SystemExit(4) from None  # a peer died; the parent reports it
                for k in plan.remote_consumers[producer]:
                    pending[k] -= 1
                    if pending[k] == 0:
                        heapq.heappush(ready, (arrived, seq, k))
                        seq += 1
        _, _, k = heapq.heappop(ready)
        start = time.monotonic_ns()
        device_ns = kernel.run_for(splits[k])
        end = time.monotonic_ns()
        if device_ns is not None:  # CUDA events: the kernels' own time, ending when the host saw them end
            start = max(start, end - device_ns)
        op_ns[k] = (start, end)
        done += 1
        for s in plan.local_succ[k]:
            pending[s] -= 1
            if pending[s] == 0:
                heapq.heappush(ready, (end, seq, s))
                seq += 1
        op = plan.ops[k]
        for dst, nbytes in plan.sends[k]:
            c0 = time.monotonic_ns()
            kernel.copy_out(slabs[plan.slabs[dst]][1], nbytes)
            c1 = time.monotonic_ns()
            outbox[dst].send_bytes(_MSG.pack(op, c1))
            transfers.append((op, dst, nbytes, c0, c1))
    return {"op_ns": op_ns, "transfers": np.array(transfers, dtype=np.int64).reshape(-1, 5)}
