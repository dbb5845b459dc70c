"""The executor on this machine's CPU cores: 2 workers, tiny hand-made graphs.

Timing assertions use generous tolerances: the test machine is shared, and pinned workers
get preempted. Orders and causality are asserted exactly, from measured timestamps.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from engine.cluster import Cluster, Device, Link, SimulationSettings
from engine.executor import ExecutionError, Executor, execute, scale_graph
from engine.executor.cores import default_cores
from engine.executor.plan import transfer_table
from engine.graph.compgraph import CompGraph
from engine.placement import Placement

pytestmark = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="the executor tests need 2 CPU cores")

MS = 1e-3


def two_cpus() -> Cluster:
    devs = (Device("cpu:0", "cpu", 1e12), Device("cpu:1", "cpu", 1e12))
    return Cluster("two", devs, Link(5e9, 50e-6), (), SimulationSettings("default"))


def graph(edges: list[tuple[int, int, float]], compute: list[float], name: str = "g") -> CompGraph:
    n = len(compute)
    return CompGraph(name, [f"op{i}" for i in range(n)], compute_any=np.array(compute),
                     output_bytes=np.full(n, 1000.0), edge_src=[e[0] for e in edges],
                     edge_dst=[e[1] for e in edges], edge_bytes=np.array([e[2] for e in edges]))


def own_cores() -> list[int] | None:
    """Two cores for this test process alone where the machine has enough, else the default pick.

    Parallel test processes (pytest-xdist) would otherwise all pin their executors' workers to the
    same two cores, and ops run several times slower than the load average per core shows: 6x on a
    16-core GPU host with ``-n 8`` (2026-11-27). On 2 cores (CI) every process shares them, as before.
    """
    k = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    spread = default_cores(2 * (k + 1))
    return spread[2 * k:2 * k + 2] if len(spread) == 2 * (k + 1) else None


@pytest.fixture(scope="module")
def ex():
    load = os.getloadavg()[0]
    with Executor(two_cpus(), cores=own_cores()) as e:
        e.calibration_load = max(load, os.getloadavg()[0])  # the busiest the workers' calibration met
        yield e


def check_causality(g: CompGraph, s) -> None:
    """Every op starts after each input arrived on its device (measured timestamps)."""
    arrive = {(int(o), int(d)): e for o, d, e in zip(s.transfer_op, s.transfer_dst, s.transfer_end, strict=True)}
    for src, dst in zip(g.edge_src.tolist(), g.edge_dst.tolist(), strict=True):
        if s.op_device[src] == s.op_device[dst]:
            assert s.op_start[dst] >= s.op_end[src]
        else:
            assert s.op_start[dst] >= arrive[(src, int(s.op_device[dst]))] >= s.op_end[src]
    for o, st in zip(s.transfer_op, s.transfer_start, strict=True):
        assert st >= s.op_end[o]


# a diamond with a fan-out: 0 -> {1, 2, 3}, {1, 2} -> 4, 3 -> 4; edge bytes differ per edge
DIAMOND = [(0, 1, 4000.0), (0, 2, 9000.0), (0, 3, 500.0), (1, 4, 7000.0), (2, 4, 3000.0), (3, 4, 100.0)]


def test_workers_are_pinned_to_distinct_cores(ex):
    cores = [w["core"] for w in ex.worker_info]
    assert len(set(cores)) == 2
    for w in ex.worker_info:
        assert os.sched_getaffinity(w["pid"]) == {w["core"]}


def test_ops_run_on_their_devices_after_their_inputs(ex):
    g = graph(DIAMOND, [1 * MS, 2 * MS, 1 * MS, 1 * MS, 1 * MS])
    dev = np.array([0, 1, 0, 1, 0])
    s = ex.run(g, dev, repeats=2).schedule
    np.testing.assert_array_equal(s.op_device, dev)
    check_causality(g, s)
    for d in (0, 1):  # one op at a time per device
        sel = np.flatnonzero(dev == d)
        order = sel[np.argsort(s.op_start[sel])]
        assert (s.op_start[order[1:]] >= s.op_end[order[:-1]]).all()
    assert s.mode == "measured" and s.makespan == pytest.approx(max(s.op_end.max(), s.transfer_end.max()))


def test_transfers_exactly_for_cross_device_edges_with_their_bytes(ex):
    g = graph(DIAMOND, [0.5 * MS] * 5)
    dev = np.array([0, 1, 1, 0, 0])
    s = ex.run(g, dev, warmup=0).schedule
    # by hand: 0->1 and 0->2 cross to cpu:1 (one copy of max(4000, 9000) bytes); 1->4 and 2->4
    # cross back (7000 and 3000 bytes); 0->3 and 3->4 stay on cpu:0
    got = sorted(zip(s.transfer_op.tolist(), s.transfer_src.tolist(), s.transfer_dst.tolist(),
                     s.transfer_bytes.tolist(), strict=True))
    assert got == [(0, 0, 1, 9000.0), (1, 1, 0, 7000.0), (2, 1, 0, 3000.0)]
    assert transfer_table(g, dev) == {(0, 1): 9000, (1, 0): 7000, (2, 0): 3000}
    check_causality(g, s)
    assert s.communication_bytes == 19000.0


def test_one_device_measures_close_to_the_sum_of_op_times(ex):
    compute = [3 * MS, 1 * MS, 4 * MS, 1 * MS, 5 * MS, 2 * MS]
    g = graph([(i, i + 1, 1000.0) for i in range(5)], compute)
    m = ex.run(g, np.zeros(6, int), repeats=3)
    total = sum(compute)  # 16 ms
    s = m.schedule
    assert len(s.transfer_op) == 0
    busy = float((s.op_end - s.op_start).sum())
    cores = len(os.sched_getaffinity(0))
    oversubscribed = max(1.0, os.getloadavg()[0] / cores)
    # the step is its ops back to back: dispatch gaps are a small part of it (0.5 ms per op, more when other
    # jobs preempt the worker between ops: 3.7 ms over 6 ops at load 4-7 on 2 cores, a fresh clone's suite
    # beside a reproduction, 2026-11-27)
    assert busy <= s.makespan - s.op_start.min() <= busy + 6 * 0.5 * MS * oversubscribed
    # ops are sized from the workers' calibration, so a run on a machine as busy as it was then
    # takes about `total`. The machine is shared and its load changes between calibration and
    # run: other jobs preempting the pinned workers made ops ~3x longer at load average 6 and ~6x
    # at 21 on 2 cores; a calibration made while loaded sizes ops too small, so they ran 0.59x
    # when the load fell (CI, stop 41). Both bounds are 4x wide and widen with the load per core
    # when measured (upper) and when calibrated (lower): the test asserts the ops ran, sized from
    # their compute times, not how quiet the machine is.
    at_calibration = max(1.0, ex.calibration_load / cores)
    assert 0.25 * total / at_calibration <= busy <= 4.0 * oversubscribed * total


def test_independent_chains_on_two_devices_run_at_the_same_time(ex):
    """Two chains of 4 × 40 ms, one per device, run by two workers: their spans overlap. A serial
    executor never overlaps them. A worker preempted by other jobs (a loaded CI machine) can be held
    off its core for a scheduler period, tens of ms; with ops of a few ms that pushed every repeat's
    chains apart on a loaded 2-core machine. So the chains are long next to such a delay, and the best
    of the repeats is judged."""
    g = graph([(0, 1, 1.0), (1, 2, 1.0), (2, 3, 1.0), (4, 5, 1.0), (5, 6, 1.0), (6, 7, 1.0)], [40 * MS] * 8)
    dev = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    shares = []
    for s in ex.run(g, dev, repeats=5).schedules:
        spans = [(s.op_start[k].min(), s.op_end[k].max()) for k in (slice(0, 4), slice(4, 8))]
        overlap = min(spans[0][1], spans[1][1]) - max(spans[0][0], spans[1][0])
        shares.append(overlap / min(b - a for a, b in spans))
    assert max(shares) > 0.5, shares


def test_device_serves_requests_first_come_first_served(ex):
    # cpu:0: op0 (20 ms, no inputs) -> op1 (local consumer: requests cpu:0 when op0 ends).
    # cpu:1: op2 (0.5 ms) -> op3 on cpu:0 (requests cpu:0 when op2's copy has landed).
    # Work-conserving FIFO: whichever asked first runs first, whatever the op index; op3
    # normally asks first (during op0), unless a preempted cpu:1 worker makes it late.
    g = graph([(0, 1, 100.0), (2, 3, 100.0)], [20 * MS, 1 * MS, 0.5 * MS, 1 * MS])
    m = ex.run(g, np.array([0, 0, 1, 0]), repeats=3)
    for s in m.schedules:
        check_causality(g, s)
        op3_asks = float(s.transfer_end[s.transfer_op == 2][0])
        first, second = (3, 1) if op3_asks < s.op_end[0] else (1, 3)
        assert s.op_start[first] < s.op_start[second]
        assert s.op_start[first] >= s.op_end[0]
        assert s.op_start[second] >= s.op_end[first]


def test_bus_probe_reads_alone_and_concurrent_copies(ex):
    """:func:`probe_bus` returns the median copy alone and with both workers copying, and their capacity."""
    from engine.executor.calibration import bus_capacity, probe_bus

    r = probe_bus(ex, nbytes=20_000, hops=2)  # smaller than the slabs the other tests need to grow
    assert r["alone_s"] > 0 and r["both_s"] > 0
    assert r["capacity"] == bus_capacity(r["alone_s"], r["both_s"]) and 1.0 <= r["capacity"] <= 2.0


def test_placement_object_and_execute_entry_point():
    g = graph([(0, 1, 2000.0)], [1 * MS, 1 * MS])
    c = two_cpus()
    s = execute(g, c, Placement(np.array([0, 1])), warmup=0)
    assert s.op_device.tolist() == [0, 1] and s.transfer_bytes.tolist() == [2000.0]
    check_causality(g, s)


def test_a_devices_speed_is_a_prediction_not_a_slower_kernel(monkeypatch):
    """Ops run for their compute time whatever speed a cluster file gives (a refined cluster's
    speed only changes what the simulator predicts)."""
    import dataclasses

    import engine.executor.pool as pool

    sized = []
    real = pool.build_plans

    def spy(graph, cluster, devices, durations, slabs):
        sized.append(np.array(durations))
        return real(graph, cluster, devices, durations, slabs)

    monkeypatch.setattr(pool, "build_plans", spy)
    c = two_cpus()
    slow = dataclasses.replace(c, devices=tuple(dataclasses.replace(d, speed=0.5) for d in c.devices))
    g = graph([(0, 1, 2000.0)], [1 * MS, 2 * MS])
    s = execute(g, slow, np.array([0, 1]), warmup=0)
    assert len(sized) == 1 and sized[0].tolist() == pytest.approx([1 * MS, 2 * MS])
    check_causality(g, s)


def test_scale_graph_scales_times_and_sizes():
    g = CompGraph("s", ["a", "b"], compute_any=np.array([np.nan, 2.0]), kinds=("gpu", "cpu"),
                  compute_by_kind=np.array([[1.0, 3.0], [np.nan, np.nan]]), output_bytes=np.array([10.0, 20.0]),
                  persistent_bytes=np.array([4.0, 0.0]), edge_src=[0], edge_dst=[1], edge_bytes=np.array([8.0]))
    s = scale_graph(g, 0.5, 0.25)
    np.testing.assert_allclose(s.compute_for_kind("cpu"), [0.5, 1.0])  # fastest kind of 'a' is gpu: 1.0
    np.testing.assert_allclose(s.edge_bytes, [2.0])
    np.testing.assert_allclose(s.output_bytes, [2.5, 5.0])
    np.testing.assert_allclose(s.persistent_bytes, [1.0, 0.0])
    np.testing.assert_allclose(scale_graph(g, 2.0, kind="cpu").compute_any, [6.0, 4.0])
    assert s.name == "s@t0.5,b0.25"


def test_measured_memory_follows_the_memory_rules(ex):
    # op0 (persistent 100, output 1000) on cpu:0 feeds op1 on cpu:1 (a 1000-byte copy):
    # cpu:0 peaks at 100 + 1000; cpu:1 holds the copy (1000) and op1's output (1000) at once
    g = graph([(0, 1, 1000.0)], [1 * MS, 1 * MS])
    g = CompGraph("m", g.op_names, compute_any=g.compute_any, output_bytes=g.output_bytes,
                  persistent_bytes=np.array([100.0, 0.0]), edge_src=g.edge_src, edge_dst=g.edge_dst,
                  edge_bytes=g.edge_bytes)
    s = ex.run(g, np.array([0, 1]), warmup=0).schedule
    assert s.peak_memory.tolist() == [1100.0, 2000.0]


def test_a_killed_worker_gives_one_clear_error_and_no_hung_process():
    g = graph([(i, i + 1, 10_000.0) for i in range(39)], [25 * MS] * 40)  # ~1 s across both devices
    dev = np.arange(40) % 2
    e = Executor(two_cpus(), timeout_s=300)  # generous: a busy machine starts workers slowly (issue 34)
    pids = [w["pid"] for w in e.worker_info]
    threading.Timer(0.3, os.kill, (pids[1], signal.SIGKILL)).start()
    t0 = time.monotonic()
    with pytest.raises(ExecutionError, match=r"worker for device 'cpu:1' \(pid \d+\) died with exit code -9"):
        e.run(g, dev, warmup=0)
    assert time.monotonic() - t0 < 150  # the death was noticed: the run did not wait out timeout_s
    for pid in pids:  # every worker is gone (reaped), none left hanging
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    with pytest.raises(ExecutionError, match="closed"):
        e.run(g, dev)


def test_transfers_larger_than_shared_memory_are_refused(ex, monkeypatch):
    from engine.executor import pool

    monkeypatch.setattr(pool.shutil, "disk_usage", lambda _p: type("U", (), {"free": 10_000})())
    g = graph([(0, 1, 50_000.0)], [1 * MS, 1 * MS])
    with pytest.raises(ExecutionError, match=r"need 0.1 MB of shared memory but /dev/shm has 0.0 MB free"):
        ex.run(g, np.array([0, 1]))
    monkeypatch.undo()
    assert ex.run(g, np.array([0, 1]), warmup=0).schedule.transfer_bytes.tolist() == [50_000.0]


def test_engine_imports_without_torch():
    code = ("import sys; import engine.executor, engine.executor.calibration, engine.presets; "
            "assert 'torch' not in sys.modules, 'torch was imported'")
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONPATH": os.getcwd()})


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.skipif(not _cuda(), reason="torch.cuda reports no GPU: the CUDA executor test needs one (GPU host)")
def test_cuda_device_runs_matmuls_and_copies():
    devs = (Device("gpu:0", "gpu", 1e10), Device("cpu:0", "cpu", 1e12))
    c = Cluster("mixed", devs, Link(5e9), (), SimulationSettings("default"))
    g = graph(DIAMOND, [2 * MS] * 5)
    dev = np.array([0, 1, 0, 1, 0])
    with Executor(c) as e:
        m = e.run(g, dev, repeats=3)
    s = m.schedule
    check_causality(g, s)
    got = sorted(zip(s.transfer_op.tolist(), s.transfer_src.tolist(), s.transfer_bytes.tolist(), strict=True))
    assert got == [(0, 0, 4000.0), (1, 1, 7000.0), (3, 1, 100.0)]  # gpu:0 -> host copy, host -> host
    durations = (s.op_end - s.op_start)[dev == 0]
    assert 0.3 <= float(np.median(durations / 2e-3)) <= 3.0
