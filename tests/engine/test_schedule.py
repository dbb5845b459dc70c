"""Tests for engine.sim.schedule: the Schedule's derived figures and its memory timeline."""

from __future__ import annotations

import numpy as np
import pytest

from engine.cluster import Cluster, Device, Link, SimulationSettings
from engine.graph.compgraph import CompGraph
from engine.sim.schedule import MemoryTimeline, Schedule
from engine.sim.simulator import simulate


def make_schedule(**changes) -> Schedule:
    """Three devices; op0 on gpu:0 sends one placeto transfer to gpu:1 and gpu:2."""
    fields = dict(
        makespan=10.0,
        op_device=np.array([0, 1, 2]),
        op_start=np.array([0.0, 4.0, 4.0]),
        op_end=np.array([2.0, 6.0, 4.5]),
        transfer_op=np.array([0, 0]),
        transfer_src=np.array([0, 0]),
        transfer_dst=np.array([1, 2]),
        transfer_bytes=np.array([100.0, 100.0]),
        transfer_start=np.array([2.0, 2.0]),
        transfer_end=np.array([4.0, 4.0]),
        transfer_primary=np.array([True, False]),
        compute_time=np.array([6.0, 2.0, 0.5]),
        memcpy_time=np.array([2.0, 0.0, 0.0]),
        peak_memory=np.array([50.0, 120.0, 10.0]),
        memory_capacity=np.array([100.0, 100.0, 10.0]),
        persistent_memory=np.array([5.0, 20.0, 10.0]),
        mode="placeto",
        # (time, device, bytes) in the order they happened: gpu:0 allocates 10 and 15 at
        # 0, frees 10 at 1, allocates 30 at 2 and frees 45 at 3; gpu:1 holds 100 from 1 to 4.
        _memory_events=(np.array([0.0, 0.0, 1.0, 1.0, 2.0, 3.0, 4.0]),
                        np.array([0, 0, 0, 1, 0, 0, 1]),
                        np.array([10.0, 15.0, -10.0, 100.0, 30.0, -45.0, -100.0])),
    )
    fields.update(changes)
    return Schedule(**fields)


def test_oom_is_peak_above_capacity():
    s = make_schedule()
    assert s.num_devices == 3
    assert s.oom.tolist() == [False, True, False]  # 10 == 10 on gpu:2 still fits
    assert s.any_oom is True
    fits = make_schedule(peak_memory=np.array([100.0, 99.0, 0.0]))
    assert fits.oom.tolist() == [False, False, False]
    assert fits.any_oom is False


def test_communication_bytes_counts_a_shared_transfer_once():
    assert make_schedule().communication_bytes == 100.0
    every_row = make_schedule(transfer_primary=np.array([True, True]), mode="default")
    assert every_row.communication_bytes == 200.0
    none = make_schedule(**{k: np.array([], dtype=t) for k, t in (
        ("transfer_op", int), ("transfer_src", int), ("transfer_dst", int), ("transfer_bytes", float),
        ("transfer_start", float), ("transfer_end", float), ("transfer_primary", bool))})
    assert none.communication_bytes == 0.0
    assert isinstance(none.communication_bytes, float)


def test_memory_timeline_is_a_step_function_per_device():
    tl = make_schedule().memory_timeline()
    assert isinstance(tl, MemoryTimeline)
    # gpu:0 starts from its 5 persistent bytes; both allocations at 0 show as one step
    assert tl.times[0].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert tl.bytes[0].tolist() == [30.0, 20.0, 50.0, 5.0]
    assert tl.times[1].tolist() == [0.0, 1.0, 4.0]
    assert tl.bytes[1].tolist() == [20.0, 120.0, 20.0]
    # no events: persistent bytes from 0 on
    assert tl.times[2].tolist() == [0.0]
    assert tl.bytes[2].tolist() == [10.0]


def test_memory_timeline_keeps_the_last_value_at_one_instant():
    events = (np.array([1.0, 1.0, 1.0, 2.0]), np.array([0, 0, 0, 0]), np.array([8.0, -8.0, 3.0, -3.0]))
    tl = make_schedule(_memory_events=events).memory_timeline()
    assert tl.times[0].tolist() == [0.0, 1.0, 2.0]
    assert tl.bytes[0].tolist() == [5.0, 8.0, 5.0]


def test_memory_timeline_needs_record_memory():
    with pytest.raises(ValueError, match="record_memory"):
        make_schedule(_memory_events=None).memory_timeline()
    g = CompGraph("one", ["a"], compute_any=[1.0], output_bytes=[4.0])
    c = Cluster("one", (Device("gpu:0", "gpu", 1e9),), Link(1e9), (), SimulationSettings("default"))
    with pytest.raises(ValueError, match="record_memory"):
        simulate(g, c, np.zeros(1, int)).memory_timeline()
    tl = simulate(g, c, np.zeros(1, int), record_memory=True).memory_timeline()
    assert tl.times[0].tolist() == [0.0, 1.0]
    assert tl.bytes[0].tolist() == [4.0, 0.0]


def test_simulated_timeline_is_in_time_order_when_a_buffer_outlives_later_ops():
    # Default mode, 100 B/s. gpu:0: a [0, 1] (output 400 bytes, read by c on gpu:1, so kept
    # on gpu:0 until its transfer [1, 5] lands), then b [1, 7] (output 20, temp 1).
    # gpu:0 (2 persistent) holds 402 from 0, 423 from 1, 23 from 5 and 2 from 7; gpu:1
    # holds the 400-byte copy while c runs [5, 6].
    g = CompGraph("keep", ["a", "b", "c"], compute_any=[1.0, 6.0, 1.0], output_bytes=[400.0, 20.0, 0.0],
                  temp_bytes=[0.0, 1.0, 0.0], persistent_bytes=[2.0, 0.0, 0.0], edge_src=[0], edge_dst=[2])
    c = Cluster("two", (Device("gpu:0", "gpu", 1e9), Device("gpu:1", "gpu", 1e9)), Link(100.0), (),
                SimulationSettings("default"))
    s = simulate(g, c, np.array([0, 0, 1]), record_memory=True)
    assert s.peak_memory.tolist() == [423.0, 400.0]
    tl = s.memory_timeline()
    assert tl.times[0].tolist() == [0.0, 1.0, 5.0, 7.0]
    assert tl.bytes[0].tolist() == [402.0, 423.0, 23.0, 2.0]
    assert tl.times[1].tolist() == [0.0, 5.0, 6.0]
    assert tl.bytes[1].tolist() == [0.0, 400.0, 0.0]
