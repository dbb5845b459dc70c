"""The ``work_conserving`` mode (DOPPLER §2, Alg. 1–2): hand-worked cases on DOPPLER text files
and property tests that hold the compiled kernel to the plain-Python reference."""

from __future__ import annotations

import math
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from engine.cluster import Cluster, Device, Link, SimulationSettings
from engine.errors import ClusterError
from engine.graph.compgraph import CompGraph
from engine.importers.doppler_text import graph_from_doppler_text
from engine.presets import PRESETS
from engine.sim.reference_wc import reference_simulate_wc
from engine.sim.simulator import Simulator, simulate, wc_durations

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def doppler_file(comp: list[float], edges: list[tuple[int, int]], inputs: int = 2) -> str:
    """A file in the published layout: 4 header lines, then ``comp,comm,type`` with comm = 4 × comp."""
    head = [str(len(comp) + inputs), ",".join(str(len(comp) + i) for i in range(inputs)) + ",",
            ",".join(str(a) for a, _ in edges) + ",", ",".join(str(b) for _, b in edges) + ","]
    return "\n".join(head + [f"{c:.0f},{4 * c:.0f},einsummable," for c in comp]) + "\n"


def wc(num_devices: int = 2, **options) -> Cluster:
    devices = tuple(Device(f"gpu:{i}", "gpu", 16e9) for i in range(num_devices))
    return Cluster("wc", devices, Link(20e9), (), SimulationSettings("work_conserving", **options))


# ---------------------------------------------------------------------------- hand-worked cases
# one second = 1e13 in the authors' units (÷ 1e10 → ms, × 1e-3 → s)
S = 1e13
DIAMOND = doppler_file([1 * S, 2 * S, 3 * S, 1 * S], [(0, 1), (0, 2), (1, 3), (2, 3)])


def test_doppler_file_has_no_memory_and_never_ooms_on_p100x4():
    g = graph_from_doppler_text(DIAMOND)
    assert not g.memory_known
    c = PRESETS["p100x4"]()
    assert c.simulation.mode == "work_conserving"
    for placement in ([0, 0, 0, 0], [0, 1, 2, 3], [3, 2, 1, 0]):
        s = simulate(g, c, np.array(placement))
        assert not s.any_oom and s.peak_memory.max() == 0.0


def test_all_on_one_device_takes_the_sum_of_compute():
    g = graph_from_doppler_text(DIAMOND)
    s = simulate(g, wc(), np.zeros(4, int))
    assert s.makespan == pytest.approx(7.0)  # 1 + 2 + 3 + 1 s
    assert len(s.transfer_op) == 0


def test_diamond_split_over_two_devices():
    # a, b, d on gpu:0, c on gpu:1. Transfers take comm = 4 x the producer's comp.
    # a [0, 1]; a->b local: b [1, 3]; a->c lands at 1 + 4 = 5: c [5, 8];
    # c->d lands at 8 + 12 = 20 (b's output is already there): d [20, 21].
    g = graph_from_doppler_text(DIAMOND)
    s = simulate(g, wc(), np.array([0, 0, 1, 0]))
    np.testing.assert_allclose(s.op_start, [0, 1, 5, 20])
    np.testing.assert_allclose(s.op_end, [1, 3, 8, 21])
    assert s.transfer_op.tolist() == [0, 2] and s.transfer_dst.tolist() == [1, 0]
    np.testing.assert_allclose(s.transfer_start, [1, 8])
    np.testing.assert_allclose(s.transfer_end, [5, 20])
    assert s.makespan == pytest.approx(21.0)


# ops: 0 L (10 s, gpu:0); 1 A (0.25 s, gpu:1) -> 4 P; 2 B (0.5 s, gpu:2) -> 3 Q; 3 Q (1 s) -> 5 R (5 s)
CONTENDED = doppler_file([10 * S, 0.25 * S, 0.5 * S, 1 * S, 1 * S, 5 * S], [(1, 4), (2, 3), (3, 5)])
CONTENDED_PLACEMENT = np.array([0, 1, 2, 0, 0, 0])


def test_fifo_serves_a_contended_device_in_request_order():
    # P asks for gpu:0 at 0.25 + 1 = 1.25, Q at 0.5 + 2 = 2.5, both while L runs [0, 10]:
    # P [10, 11] before Q [11, 12] though Q has the lower index; R asks at 12: [12, 17].
    g = graph_from_doppler_text(CONTENDED)
    s = simulate(g, wc(3), CONTENDED_PLACEMENT)
    np.testing.assert_allclose(s.op_start, [0, 0, 0, 11, 10, 12])
    assert s.makespan == pytest.approx(17.0)


def test_b_level_priority_serves_the_longest_remaining_path_first():
    # b-levels on gpu:0: Q 1 + 5 = 6, P 1, R 5. Q [10, 11]; then R (5) before P (1): R [11, 16], P [16, 17].
    g = graph_from_doppler_text(CONTENDED)
    s = simulate(g, wc(3, choose="b_level"), CONTENDED_PLACEMENT)
    np.testing.assert_allclose(s.op_start, [0, 0, 0, 10, 16, 11])


def test_simultaneous_requests_follow_the_files_edge_order():
    # a's out-edges are listed a->c, then a->b: both arrive at 1 on gpu:0, c asks first.
    g = graph_from_doppler_text(doppler_file([S, S, S], [(0, 2), (0, 1)]))
    s = simulate(g, wc(1), np.zeros(3, int))
    np.testing.assert_allclose(s.op_start, [0, 2, 1])


def test_per_device_channel_serializes_sends():
    # a (1 s) feeds b and c on gpu:1, each transfer 4 s: with one outgoing channel the second
    # lands at 9, without contention both land at 5.
    g = graph_from_doppler_text(doppler_file([S, S, S], [(0, 1), (0, 2)]))
    free = simulate(g, wc(), np.array([0, 1, 1]))
    chan = simulate(g, wc(contention="per_device"), np.array([0, 1, 1]))
    np.testing.assert_allclose(free.transfer_end, [5, 5])
    np.testing.assert_allclose(chan.transfer_start, [1, 5])
    np.testing.assert_allclose(chan.transfer_end, [5, 9])
    assert chan.makespan == pytest.approx(10.0) and free.makespan == pytest.approx(7.0)


def test_per_link_uses_bandwidth_and_latency_for_untimed_edges():
    g = CompGraph("t", ["a", "b"], compute_any=[1.0, 1.0], output_bytes=[2e9, 0], edge_src=[0], edge_dst=[1])
    c = Cluster("c", (Device("g0", "gpu", 1e12), Device("g1", "gpu", 1e12)), Link(1e9, 0.5), (),
                SimulationSettings("work_conserving", contention="per_link"))
    s = simulate(g, c, np.array([0, 1]))
    assert s.transfer_end.tolist() == [1.0 + 0.5 + 2.0] and s.makespan == 4.5


def test_memory_aware_waits_and_a_deadlock_is_oom():
    # gpu:0 holds 10 bytes. a and b each need 6 (temp); without memory awareness they run
    # back to back anyway (one at a time) - with outputs of 6 kept for a remote consumer, b
    # must wait until a's output has been sent.
    g = CompGraph("m", ["a", "b", "x"], compute_any=[1.0, 1.0, 1.0], output_bytes=[6, 0, 0],
                  edge_src=[0], edge_dst=[2], edge_transfer_s=[3.0])
    small = (Device("g0", "gpu", 10.0), Device("g1", "gpu", 100.0))
    plain = Cluster("c", small, Link(1e9), (), SimulationSettings("work_conserving"))
    aware = Cluster("c", small, Link(1e9), (), SimulationSettings("work_conserving", memory_aware=True))
    g2 = CompGraph("m", ["a", "b", "x"], compute_any=[1.0, 1.0, 1.0], output_bytes=[6, 6, 0],
                   edge_src=[0], edge_dst=[2], edge_transfer_s=[3.0])
    p = np.array([0, 0, 1])
    s = simulate(g2, plain, p)
    assert s.op_start.tolist() == [0.0, 1.0, 4.0] and s.peak_memory[0] == 12.0 and s.any_oom
    s = simulate(g2, aware, p)
    # b waits until a's output has landed on gpu:1 at 4 and is freed
    assert s.op_start.tolist() == [0.0, 4.0, 4.0] and s.peak_memory[0] == 6.0 and not s.any_oom
    assert simulate(g, aware, p).op_start.tolist() == [0.0, 1.0, 4.0]
    # an op that can never fit: deadlock, reported as OOM on its device, never run
    big = CompGraph("b", ["a"], compute_any=[1.0], temp_bytes=[11.0])
    s = simulate(big, aware, np.array([0]))
    assert s.any_oom and s.stalled.tolist() == [True, False] and math.isnan(s.op_start[0])


def test_noise_is_seeded_mean_one_and_runs_average():
    g = graph_from_doppler_text(DIAMOND)
    c = wc(noise=0.2, seed=3, runs=5)
    sim = Simulator(g, c)
    stats = sim.makespan_stats(np.array([0, 0, 1, 0]))
    assert len(set(stats.values)) == 5 and stats.std > 0
    assert sim.makespan(np.array([0, 0, 1, 0])) == pytest.approx(stats.mean)
    assert Simulator(g, c).makespan_stats(np.array([0, 0, 1, 0])) == stats  # same seed, same runs
    dur, _ = wc_durations(c.simulation, np.ones(200_000), 0)
    assert dur.mean() == pytest.approx(1.0, abs=0.005) and dur.std() == pytest.approx(0.2, abs=0.01)


def test_copies_occupy_the_sender_and_dispatch_follows_them():
    # a (1 s) on device 0 feeds b and c on device 1 (2 and 4 bytes at 1 B/s) and d on device 0
    g = CompGraph("fan", ["a", "b", "c", "d"], compute_any=[1.0, 1.0, 1.0, 1.0], edge_src=[0, 0, 0],
                  edge_dst=[1, 2, 3], edge_bytes=[2.0, 4.0, 0.0])
    p = np.array([0, 1, 1, 0])
    base = Cluster("wc", (Device("cpu:0", "cpu", 1e9), Device("cpu:1", "cpu", 1e9)), Link(1.0), (),
                   SimulationSettings("work_conserving"))
    s = simulate(g, base, p)  # copies in the background: b gets its input at 3, c at 5
    assert (s.op_start.tolist(), s.makespan) == ([0.0, 3.0, 5.0, 1.0], 6.0)
    s = simulate(g, base.with_simulation(copy_occupies_sender=True, dispatch_s=0.5), p)
    # one copy to device 1, of the larger size: 1 → 5 on device 0; then 0.5 s dispatch: d at 5.5;
    # on device 1, b at 5 and c after b's dispatch, at 6.5
    assert s.op_start.tolist() == [0.0, 5.0, 6.5, 5.5] and s.makespan == 7.5
    assert s.transfer_start.tolist() == [1.0, 5.0] and s.transfer_end.tolist() == [5.0, 5.0]
    # 0.5 s of link latency is in flight: device 0 copies 1 → 5 (its row), free at 5, d at 5 + 0.5
    # dispatch = 5.5; the copy lands at 5.5 (the second edge's row, zero length): b at 5.5, c at 7
    late = Cluster("wc", base.devices, Link(1.0, 0.5), (), base.simulation)
    s = simulate(g, late.with_simulation(copy_occupies_sender=True, dispatch_s=0.5), p)
    assert s.op_start.tolist() == [0.0, 5.5, 7.0, 5.5] and s.makespan == 8.0
    assert s.transfer_start.tolist() == [1.0, 5.5] and s.transfer_end.tolist() == [5.0, 5.5]


def test_copies_on_a_shared_bus_split_its_bandwidth_while_they_overlap():
    # a (device 0) sends 4 bytes to b (device 1), c (device 1) 2 bytes to d (device 0), at 1 B/s
    g = CompGraph("cross", ["a", "b", "c", "d"], compute_any=[1.0] * 4, edge_src=[0, 2], edge_dst=[1, 3],
                  edge_bytes=[4.0, 2.0])
    p = np.array([0, 1, 1, 0])
    base = Cluster("wc", (Device("cpu:0", "cpu", 1e9), Device("cpu:1", "cpu", 1e9)), Link(1.0), (),
                   SimulationSettings("work_conserving", copy_occupies_sender=True))
    s = simulate(g, base, p)  # each copy at full speed: 1 → 5 and 1 → 3; d lands at 3, but device 0
    assert s.op_start.tolist() == [0.0, 5.0, 0.0, 5.0] and s.makespan == 6.0  # copies until 5
    s = simulate(g, base.with_simulation(copy_bus_shared=True), p)
    # both copies start at 1 at half speed: c's 2 s of bytes end at 5; a's copy, 2 s done, has the bus
    # alone for its last 2 s: 5 → 7. d landed at 5 but device 0 copies until 7: d at 7, b at 7
    assert s.transfer_start.tolist() == [1.0, 1.0] and s.transfer_end.tolist() == [7.0, 5.0]
    assert s.op_start.tolist() == [0.0, 7.0, 0.0, 7.0] and s.makespan == 8.0
    # a bus of capacity 1.5: the two copies each move at 0.75 while both run; c's 2 s end at 1 + 2 / 0.75 = 11/3,
    # a's copy has 4 - 2 = 2 s left at full speed: ends at 17/3; d and b start then
    s = simulate(g, base.with_simulation(copy_bus_shared=True, copy_bus_capacity=1.5), p)
    assert s.transfer_end.tolist() == pytest.approx([17 / 3, 11 / 3], rel=1e-12)
    assert s.op_start.tolist() == pytest.approx([0.0, 17 / 3, 0.0, 17 / 3], rel=1e-12)
    with pytest.raises(ClusterError, match="copy_bus_shared needs copy_occupies_sender"):
        wc(copy_bus_shared=True)
    with pytest.raises(ClusterError, match="copy_bus_capacity must be a finite number >= 1"):
        wc(copy_bus_capacity=0.5)


def test_a_links_copy_curve_times_the_senders_copies():
    # a (1 s) on device 0 sends 3 bytes to b on device 1; the curve says 3 bytes take 0.5 s (the line: 3 s)
    g = CompGraph("pair", ["a", "b"], compute_any=[1.0, 1.0], edge_src=[0], edge_dst=[1], edge_bytes=[3.0])
    link = Link(1.0, 0.25, ((2.0, 0.25), (4.0, 0.75)))
    c = Cluster("wc", (Device("cpu:0", "cpu", 1e9), Device("cpu:1", "cpu", 1e9)), link, (),
                SimulationSettings("work_conserving", copy_occupies_sender=True))
    s = simulate(g, c, np.array([0, 1]))  # copy 1 → 1.5 on the sender, lands 0.25 later: b at 1.75
    assert (s.transfer_end.tolist(), s.op_start.tolist(), s.makespan) == ([1.5], [0.0, 1.75], 2.75)
    s = simulate(g, c.with_simulation(copy_occupies_sender=False), np.array([0, 1]))  # read only by sender copies
    assert s.op_start.tolist() == [0.0, 4.25]


def test_options_are_validated():
    with pytest.raises(ClusterError, match="choose must be one of"):
        wc(choose="random")
    with pytest.raises(ClusterError, match="applies to work_conserving"):
        PRESETS["k80x2"]().with_simulation(noise=0.1)
    with pytest.raises(ClusterError, match="unknown simulation setting 'speed'"):
        wc().with_simulation(speed=2)
    c = PRESETS["k80x2"]().with_simulation(mode="work_conserving", runs=3)
    assert c.simulation.op_overhead_s == 0.0 and c.simulation.runs == 3


# ---------------------------------------------------------------------------- kernel = reference

times = st.sampled_from([0.0, 0.0, 0.25, 0.5, 0.75, 1.0])  # few values: many simultaneous events
sizes = st.sampled_from([0.0, 0.0, 1.0, 2.0, 4.0])


@st.composite
def wc_cases(draw):
    n = draw(st.integers(1, 30))
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n))
    edges = list(dict.fromkeys((min(a, b), max(a, b)) for a, b in pairs if a != b))
    edges = draw(st.permutations(edges))  # the file's edge order matters
    m = len(edges)
    g = CompGraph(
        "wc", [f"op{i}" for i in range(n)], compute_any=draw(st.lists(times, min_size=n, max_size=n)),
        output_bytes=draw(st.lists(sizes, min_size=n, max_size=n)),
        persistent_bytes=draw(st.lists(sizes, min_size=n, max_size=n)),
        temp_bytes=draw(st.lists(sizes, min_size=n, max_size=n)),
        edge_src=[a for a, _ in edges], edge_dst=[b for _, b in edges],
        edge_transfer_s=draw(st.lists(st.one_of(st.just(np.nan), times), min_size=m, max_size=m)),
    )
    num_devices = draw(st.integers(1, 4))
    options = dict(choose=draw(st.sampled_from(["fifo", "b_level"])),
                   contention=draw(st.sampled_from(["none", "per_device", "per_link"])),
                   memory_aware=draw(st.booleans()),
                   noise=draw(st.sampled_from([0.0, 0.0, 0.3])), seed=draw(st.integers(0, 3)),
                   dispatch_s=draw(st.sampled_from([0.0, 0.0, 0.125])),
                   copy_occupies_sender=draw(st.booleans()))
    options["copy_bus_shared"] = options["copy_occupies_sender"] and draw(st.booleans())
    options["copy_bus_capacity"] = draw(st.sampled_from([1.0, 1.0, 1.5, 2.0]))
    memory = draw(st.sampled_from([4.0, 8.0, 16.0, 1e9]))
    cluster = Cluster("wc", tuple(Device(f"gpu:{i}", "gpu", memory) for i in range(num_devices)),
                      Link(draw(st.sampled_from([1.0, 4.0])), draw(st.sampled_from([0.0, 0.25]))), (),
                      SimulationSettings("work_conserving", **options))
    placement = np.array(draw(st.lists(st.integers(0, num_devices - 1), min_size=n, max_size=n)))
    return g, cluster, placement, draw(st.integers(0, 2))


@settings(max_examples=400, **SETTINGS)
@given(wc_cases())
def test_kernel_matches_reference(case):
    g, c, p, run = case
    note(f"{c.simulation}\nplacement {p.tolist()}")
    sim = Simulator(g, c)
    s = sim.run(p, run=run)
    dur, edge_noise = wc_durations(c.simulation, sim.constraints.check(p), g.num_edges, run)
    prio = sim._kernel.priority(p, dur, edge_noise) if c.simulation.choose == "b_level" else None
    r = reference_simulate_wc(g, c, p, dur, edge_noise, priority=prio, contention=c.simulation.contention,
                              memory_aware=c.simulation.memory_aware, op_overhead_s=c.simulation.dispatch_s,
                              copy_occupies_sender=c.simulation.copy_occupies_sender,
                              copy_bus_shared=c.simulation.copy_bus_shared,
                              copy_bus_capacity=c.simulation.copy_bus_capacity)
    np.testing.assert_array_equal(s.op_start, r.start)
    np.testing.assert_array_equal(s.op_end, r.end)
    got = list(zip(s.transfer_op.tolist(), s.transfer_src.tolist(), s.transfer_dst.tolist(),
                   s.transfer_bytes.tolist(), s.transfer_start.tolist(), s.transfer_end.tolist(), strict=True))
    assert got == r.transfers
    np.testing.assert_array_equal(s.peak_memory, r.peak)
    assert s.stalled.tolist() == r.stalled
    assert s.makespan == r.makespan
    if run == 0:  # the makespan-only call (no memory bookkeeping unless memory-aware) agrees
        assert sim.makespan(p) == s.makespan


@settings(max_examples=100, **SETTINGS)
@given(wc_cases())
def test_dependencies_and_one_op_at_a_time(case):
    g, c, p, run = case
    s = Simulator(g, c).run(p, run=run)
    ran = ~np.isnan(s.op_start)
    for a, b in zip(g.edge_src.tolist(), g.edge_dst.tolist(), strict=True):
        if ran[b]:
            assert ran[a] and s.op_start[b] >= s.op_end[a]
    for d in range(c.num_devices):
        on = np.flatnonzero((p == d) & ran)
        iv = sorted(zip(s.op_start[on].tolist(), s.op_end[on].tolist(), strict=True))
        assert all(e0 <= s1 for (_, e0), (s1, _) in pairwise(iv))
    if ran.all():
        assert s.makespan == (s.op_end.max() if g.num_ops else 0.0)
        assert not s.stalled.any()


@settings(max_examples=100, **SETTINGS)
@given(wc_cases())
def test_memory_timeline_agrees_with_peak(case):
    g, c, p, run = case
    s = Simulator(g, c).run(p, run=run, record_memory=True)
    timeline = s.memory_timeline()
    _t, dev, b = s._memory_events
    ran = ~np.isnan(s.op_start)
    for d in range(c.num_devices):
        # replayed in the order they happened, the changes reach the peak exactly, and end at
        # the persistent bytes when every op on the device ran. After a deadlock an op may wait
        # on a device that is not itself stalled (its input is stuck on another device), and
        # the buffers it would have freed stay allocated.
        level = s.persistent_memory[d] + np.concatenate([[0.0], np.cumsum(b[dev == d])])
        assert level.max() == pytest.approx(s.peak_memory[d], rel=1e-12, abs=1e-9)
        if ran[p == d].all():
            assert level[-1] == pytest.approx(s.persistent_memory[d], rel=1e-12, abs=1e-9)
        else:
            assert s.stalled.any()  # ops are left unrun only by a deadlock
        # a zero-time op's buffers exist only for an instant, which a step function cannot show
        assert timeline.bytes[d].max() <= s.peak_memory[d] + 1e-9


def test_the_memory_log_holds_four_changes_per_op():
    """Each op allocates its temp bytes and its output when it starts and frees both when it ends: 4 changes
    an op, 120 for 30 unconnected ops on one device. The work-conserving workspace had room for 3 an op (98
    rows here) and the kernel, which does not check bounds, wrote past its end: a segfault (found by
    ``test_memory_timeline_agrees_with_peak`` in a fresh-clone run)."""
    n = 30
    g = CompGraph("log", [f"op{i}" for i in range(n)], compute_any=[1.0] * n, output_bytes=[1.0] * n,
                  temp_bytes=[1.0] * n, edge_src=[], edge_dst=[])
    c = Cluster("one", (Device("gpu:0", "gpu", 1e9),), Link(1.0), (), SimulationSettings("work_conserving"))
    s = Simulator(g, c).run(np.zeros(n, dtype=np.int64), record_memory=True)
    _t, dev, b = s._memory_events
    assert len(b) == 4 * n and (dev == 0).all()
    assert b.tolist() == [1.0, 1.0, -1.0, -1.0] * n  # temp and output up at the start, both down at the end
    assert s.peak_memory.tolist() == [2.0] and s.makespan == n


@settings(max_examples=100, **SETTINGS)
@given(wc_cases(), st.randoms(use_true_random=False))
def test_identical_devices_are_interchangeable(case, rnd):
    """On identical devices sharing one link, renaming the devices changes no time: the mode breaks
    ties by op and edge order, never by device index (a placement and its relabelling are one point
    of the search space; Placeto's known limit on two K80s rests on it, ``policies/rl/placeto/agent.py``)."""
    g, c, p, run = case
    perm = np.array(rnd.sample(range(c.num_devices), c.num_devices))
    note(f"{c.simulation}\nplacement {p.tolist()}, relabelled by {perm.tolist()}")
    sim = Simulator(g, c)
    a, b = sim.run(p, run=run), sim.run(perm[p], run=run)
    np.testing.assert_array_equal(a.op_start, b.op_start)
    np.testing.assert_array_equal(a.op_end, b.op_end)
    assert a.makespan == b.makespan and sorted(a.peak_memory.tolist()) == sorted(b.peak_memory.tolist())
