"""Tests for engine.sim.objectives: makespan, memory-penalized runtime, sqrt runtime, lower bound."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.cluster import Cluster, Device, Link, SimulationSettings
from engine.graph.compgraph import CompGraph
from engine.graph.io import graph_from_dict
from engine.sim.objectives import (
    default_failing_signal,
    lower_bound,
    makespan,
    memory_penalized_runtime,
    sqrt_runtime,
)
from engine.sim.simulator import simulate

GB = 1e9


def gpus(*speeds: float, memory: tuple[float, ...] | None = None, mode: str = "default",
         overhead: float = 0.0, gap: float = 0.0, bandwidth: float = 1e9) -> Cluster:
    memory = memory or (16 * GB,) * len(speeds)
    devices = tuple(Device(f"gpu:{i}", "gpu", m, s) for i, (s, m) in enumerate(zip(speeds, memory, strict=True)))
    return Cluster("test", devices, Link(bandwidth), (), SimulationSettings(mode, overhead, gap))


def memory_graph() -> CompGraph:
    # a (1 s, 2.5 GB persistent, 0.5 GB temp) -> b (2 s): on one device the peak is
    # 2.5 + 0.5 = 3.0 GB while a runs, the makespan 1 + 2 = 3 s
    return CompGraph("mem", ["a", "b"], compute_any=np.array([1.0, 2.0]),
                     persistent_bytes=np.array([2.5 * GB, 0.0]), temp_bytes=np.array([0.5 * GB, 0.0]),
                     edge_src=[0], edge_dst=[1])


SMALL_AND_BIG = gpus(1.0, 1.0, memory=(2 * GB, 5 * GB))  # tightest device: 2 GB


def test_schedule_for_memory_objectives():
    s = simulate(memory_graph(), SMALL_AND_BIG, np.array([0, 0]))
    assert makespan(s) == s.makespan == 3.0
    assert s.peak_memory.tolist() == [3 * GB, 0.0]
    assert s.oom.tolist() == [True, False]


# ---- memory_penalized_runtime (Placeto App. A.7) ------------------------------------------------


def test_memory_penalized_runtime_default_limit_is_tightest_device():
    s = simulate(memory_graph(), SMALL_AND_BIG, np.array([0, 0]))
    # 3 s + 2 s/GB · (3.0 GB peak − 2 GB tightest device) = 5 s
    assert memory_penalized_runtime(s) == pytest.approx(5.0)
    # the limit is the tightest device even when the peak is on the roomy one (no OOM there)
    roomy = simulate(memory_graph(), SMALL_AND_BIG, np.array([1, 1]))
    assert not roomy.any_oom
    assert memory_penalized_runtime(roomy) == pytest.approx(5.0)


def test_memory_penalized_runtime_custom_c_and_limit():
    s = simulate(memory_graph(), SMALL_AND_BIG, np.array([0, 0]))
    assert memory_penalized_runtime(s, c=0.5, memory_gb=2.5) == pytest.approx(3.0 + 0.5 * 0.5)
    assert memory_penalized_runtime(s, c=10.0, memory_gb=1.0) == pytest.approx(3.0 + 10.0 * 2.0)
    assert memory_penalized_runtime(s, memory_gb=4.0) == 3.0  # under the limit: no penalty
    assert memory_penalized_runtime(s, memory_gb=3.0) == 3.0  # exactly at the limit: none either


# ---- sqrt_runtime and the failing signal (Mirhoseini §3.1) ---------------------------------------


def test_sqrt_runtime():
    fits = simulate(memory_graph(), SMALL_AND_BIG, np.array([1, 1]))
    assert sqrt_runtime(fits, failing_signal=42.0) == pytest.approx(math.sqrt(3.0))
    ooms = simulate(memory_graph(), SMALL_AND_BIG, np.array([0, 0]))
    assert sqrt_runtime(ooms, failing_signal=42.0) == 42.0


def test_default_failing_signal():
    g = graph_from_dict({"schema": "placelab.graph/1", "ops": [
        {"name": "a", "compute": {"gpu": 1.0, "cpu": 4.0}}, {"name": "b", "compute": 2.0},
        {"name": "c", "compute": {"cpu": 0.5}}]})
    # fastest kinds: 1 + 2 + 0.5 = 3.5 s; sqrt(10 · 3.5)
    assert default_failing_signal(g) == pytest.approx(math.sqrt(35.0))
    assert default_failing_signal(g) > math.sqrt(3.5)  # worse than running everything in sequence


# ---- lower_bound -----------------------------------------------------------------------------------


def chain_plus_one() -> CompGraph:
    # a (1) -> b (2) -> c (3), and d (1) on its own
    return CompGraph("cp", list("abcd"), compute_any=np.array([1.0, 2.0, 3.0, 1.0]),
                     edge_src=[0, 1], edge_dst=[1, 2])


def four_independent(extra_zero: bool = False) -> CompGraph:
    t = [0.0, 2.0, 2.0, 2.0, 2.0] if extra_zero else [2.0] * 4
    return CompGraph("flat", [f"o{i}" for i in range(len(t))], compute_any=np.array(t))


def test_lower_bound_critical_path_dominates():
    # critical path 1 + 2 + 3 = 6 s; work 7 s / 2 devices = 3.5 s
    assert lower_bound(chain_plus_one(), gpus(1.0, 1.0)) == pytest.approx(6.0)


def test_lower_bound_work_dominates():
    # critical path 2 s; work 8 s / 2 devices = 4 s
    assert lower_bound(four_independent(), gpus(1.0, 1.0)) == pytest.approx(4.0)
    # and the two-and-two placement reaches it
    assert simulate(four_independent(), gpus(1.0, 1.0), np.array([0, 0, 1, 1])).makespan == pytest.approx(4.0)


def test_lower_bound_with_device_speed():
    fast = gpus(1.0, 2.0)  # gpu:1 runs everything in half the time
    # each op at its fastest: 0.5, 1, 1.5, 0.5 -> path 3 s, work 3.5 / 2 = 1.75 s
    assert lower_bound(chain_plus_one(), fast) == pytest.approx(3.0)
    # four 2 s ops: path 1 s; fastest-time work 4 / 2 = 2 s; total compute / total speed
    # 8 / (1 + 2) = 2.667 s, the binding term (the best placement, three ops on the fast
    # device and one on the slow one, takes 3 s)
    assert lower_bound(four_independent(), fast) == pytest.approx(8.0 / 3.0)
    assert simulate(four_independent(), fast, np.array([1, 1, 1, 0])).makespan == pytest.approx(3.0)
    # the chain on the fast device alone takes its critical path: 0.5 + 1 + 1.5 = 3 s
    assert simulate(chain_plus_one(), fast, np.array([1, 1, 1, 0])).makespan == pytest.approx(3.0)


def test_lower_bound_fastest_kind_and_speed():
    g = graph_from_dict({"schema": "placelab.graph/1", "ops": [
        {"name": "x", "compute": {"gpu": 4.0, "cpu": 1.0}}, {"name": "y", "compute": {"gpu": 3.0}}],
        "edges": [{"src": "x", "dst": "y"}]})
    c = Cluster("mix", (Device("cpu:0", "cpu", GB), Device("gpu:0", "gpu", GB, speed=2.0)), Link(1e9))
    # x: min(1 / 1 on the cpu, 4 / 2 on the gpu) = 1; y: 3 / 2 = 1.5 -> path 2.5 s, work 1.25 s
    assert lower_bound(g, c) == pytest.approx(2.5)


def test_lower_bound_counts_placeto_overhead_in_work():
    c = gpus(1.0, 1.0, mode="placeto", overhead=0.1, gap=0.01)
    g = four_independent(extra_zero=True)
    # four non-zero ops each hold their device 2 + 0.1 s (the zero op holds nothing):
    # work (8 + 4 · 0.1) / 2 = 4.2 s > critical path 2 s
    assert lower_bound(g, c) == pytest.approx(4.2)
    # two ops per device: [0, 2], overhead, [2.1, 4.1], trailing overhead -> 4.2 s: tight
    assert simulate(g, c, np.array([0, 0, 0, 1, 1])).makespan == pytest.approx(4.2)
    # the critical path does not include the overhead
    assert lower_bound(chain_plus_one(), gpus(1.0, 1.0, 1.0, 1.0, mode="placeto", overhead=0.1)) == 6.0


# ---- property: no placement beats the bound ------------------------------------------------------


@st.composite
def placed_problem(draw):
    n = draw(st.integers(1, 7))
    compute = draw(st.lists(st.sampled_from([0.0, 1e-4, 1e-3, 2.5e-3, 1e-2]) | st.floats(0, 1e-2),
                            min_size=n, max_size=n))
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    edges = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=len(pairs))) if pairs else []
    out = draw(st.lists(st.integers(0, 10**6), min_size=n, max_size=n))
    g = CompGraph("prop", [f"o{i}" for i in range(n)], compute_any=np.array(compute),
                  output_bytes=np.array(out, dtype=float),
                  edge_src=[e[0] for e in edges], edge_dst=[e[1] for e in edges])
    speeds = draw(st.lists(st.sampled_from([0.5, 1.0, 2.0, 3.0]), min_size=1, max_size=3))
    mode = draw(st.sampled_from(["default", "placeto", "default-overhead"]))
    overhead = 0.0 if mode == "default" else draw(st.sampled_from([0.0, 5.7e-6, 1e-3]))
    gap = 0.0 if mode == "default" else draw(st.sampled_from([0.0, 25e-6, 1e-3]))
    bandwidth = draw(st.sampled_from([1e6, 1e8, 7.6e9]))
    c = gpus(*speeds, mode=mode.removesuffix("-overhead"), overhead=overhead, gap=gap, bandwidth=bandwidth)
    placement = np.array(draw(st.lists(st.integers(0, len(speeds) - 1), min_size=n, max_size=n)))
    return g, c, placement


@settings(max_examples=150, deadline=None)
@given(problem=placed_problem())
def test_no_placement_beats_the_lower_bound(problem):
    g, c, placement = problem
    lb = lower_bound(g, c)
    ms = simulate(g, c, placement).makespan
    assert ms >= lb * (1 - 1e-9) - 1e-15, (ms, lb)
