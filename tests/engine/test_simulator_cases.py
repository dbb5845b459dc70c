"""Hand-worked simulations (CONTRACTS §4): every expected number below was worked out on paper.

Each test builds a tiny graph and cluster directly, writes the expected timeline in a
comment, and asserts the simulator's numbers exactly (rel 1e-12). Times are chosen as
binary fractions so the arithmetic is exact. Placeto App. A.5 notation: δ1 =
``op_overhead_s`` (device busy after a non-zero op), δ2 = ``transfer_gap_s`` (channel busy
after a transfer), B = bandwidth.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.cluster import Cluster, Device, Link, SimulationSettings
from engine.errors import PlacementError, SimulationError
from engine.graph.compgraph import CompGraph
from engine.placement import Placement
from engine.sim.simulator import Simulator, simulate

D1, D2 = 0.25, 0.5  # δ1, δ2 of the placeto clusters below


def approx(x):
    return pytest.approx(x, rel=1e-12, abs=0.0)


def make_graph(compute, *, out=None, pers=None, temp=None, edges=(), edge_bytes=None, names=None):
    n = len(compute)
    return CompGraph(
        "case", names or [f"op{i}" for i in range(n)],
        compute_any=np.asarray(compute, dtype=float),
        output_bytes=None if out is None else np.asarray(out, dtype=float),
        persistent_bytes=None if pers is None else np.asarray(pers, dtype=float),
        temp_bytes=None if temp is None else np.asarray(temp, dtype=float),
        edge_src=[e[0] for e in edges], edge_dst=[e[1] for e in edges],
        edge_bytes=None if edge_bytes is None else np.asarray(edge_bytes, dtype=float),
    )


def make_cluster(num_devices, *, mode, bw=100.0, lat=0.0, links=(), op_overhead=0.0, gap=0.0,
                 memory=1e12):
    devices = tuple(Device(f"gpu:{i}", "gpu", memory) for i in range(num_devices))
    links = tuple((f"gpu:{a}", f"gpu:{b}", Link(w, la)) for a, b, w, la in links)
    return Cluster("case", devices, Link(bw, lat), links, SimulationSettings(mode, op_overhead, gap))


def placeto(num_devices, **kw):
    return make_cluster(num_devices, mode="placeto", op_overhead=D1, gap=D2, **kw)


def transfers(s):
    """Transfer rows as (op, src, dst, bytes, start, arrival, primary), in row order."""
    return list(zip(s.transfer_op.tolist(), s.transfer_src.tolist(), s.transfer_dst.tolist(),
                    s.transfer_bytes.tolist(), s.transfer_start.tolist(), s.transfer_end.tolist(),
                    s.transfer_primary.tolist(), strict=True))


# ---------------------------------------------------------------------------- placeto mode


def test_placeto_chain_on_one_device():
    # a: [0, 2]; device busy until 2 + δ1 = 2.25; b: [2.25, 5.25]; makespan 5.25 + δ1 = 5.5.
    g = make_graph([2.0, 3.0], out=[50, 0], edges=[(0, 1)])
    s = simulate(g, placeto(1), np.array([0, 0]))
    assert s.op_start.tolist() == [approx(0.0), approx(2.25)]
    assert s.op_end.tolist() == [approx(2.0), approx(5.25)]
    assert s.makespan == approx(5.5)
    assert len(s.transfer_op) == 0
    assert s.communication_bytes == 0.0
    assert s.compute_time.tolist() == [approx(5.0)]


def test_placeto_chain_across_devices():
    # a on gpu:0 [0, 2]; its 50-byte output crosses at B = 100: [2, 2.5], channel busy to
    # 2.5 + δ2 = 3.0; b on gpu:1 starts at the arrival 2.5, ends 5.5.
    # makespan = max(b end + δ1 = 5.75, channel free 3.0, a end + δ1 = 2.25) = 5.75.
    g = make_graph([2.0, 3.0], out=[50, 0], edges=[(0, 1)])
    s = simulate(g, placeto(2), np.array([0, 1]))
    assert s.op_start.tolist() == [approx(0.0), approx(2.5)]
    assert s.op_end.tolist() == [approx(2.0), approx(5.5)]
    assert transfers(s) == [(0, 0, 1, 50.0, approx(2.0), approx(2.5), True)]
    assert s.makespan == approx(5.75)
    assert s.memcpy_time.tolist() == [approx(0.5), approx(0.0)]
    assert s.compute_time.tolist() == [approx(2.0), approx(3.0)]


def test_placeto_makespan_includes_the_trailing_transfer_gap():
    # Same as above with b = 0.125 s and δ2 = 1: b [2.5, 2.625] (+δ1 -> 2.875), but the
    # channel is busy until 2.5 + δ2 = 3.5, the last event.
    g = make_graph([2.0, 0.125], out=[50, 0], edges=[(0, 1)])
    c = make_cluster(2, mode="placeto", op_overhead=D1, gap=1.0)
    s = simulate(g, c, np.array([0, 1]))
    assert s.op_end[1] == approx(2.625)
    assert s.makespan == approx(3.5)


def test_placeto_one_transfer_serves_every_remote_device():
    # a on gpu:0 [0, 1] (output 200 bytes, but edge bytes are ignored in placeto mode);
    # one transfer [1, 1 + 200/100 = 3] serves gpu:1 and gpu:2 at once; channel free at
    # 3.5. b (gpu:1) [3, 4]; c (gpu:2) [3, 5]. makespan = max(4.25, 5.25, 3.5) = 5.25.
    g = make_graph([1.0, 1.0, 2.0], out=[200, 0, 0], edges=[(0, 1), (0, 2)], edge_bytes=[7, 9])
    s = simulate(g, placeto(3), np.array([0, 1, 2]))
    assert s.op_start.tolist() == [approx(0.0), approx(3.0), approx(3.0)]
    assert s.op_end.tolist() == [approx(1.0), approx(4.0), approx(5.0)]
    assert transfers(s) == [(0, 0, 1, 200.0, approx(1.0), approx(3.0), True),
                            (0, 0, 2, 200.0, approx(1.0), approx(3.0), False)]
    assert s.communication_bytes == 200.0
    assert s.memcpy_time.tolist() == [approx(2.0), 0.0, 0.0]
    assert s.makespan == approx(5.25)


def test_default_mode_sends_one_transfer_per_destination_on_one_channel():
    # Same graph, default mode, δ1 = 0.25, transfer gap 0.5. gpu:0 -> gpu:1 uses the
    # default link (100 B/s, no latency); gpu:0 -> gpu:2 a slow link (50 B/s, 0.25 s).
    # Edge bytes: a -> b 200, a -> c 100.
    #   to gpu:1: [1, 3], arrives 3; channel busy until 3 + 0.5 = 3.5
    #   to gpu:2: starts 3.5, arrives 3.5 + 0.25 + 100/50 = 5.75; channel free 3.5 + 2 + 0.5 = 6
    #   b [3, 4]; c [5.75, 7.75]; makespan = max(4.25, 7.75 + 0.25 = 8.0, 6.0) = 8.0
    g = make_graph([1.0, 1.0, 2.0], out=[200, 0, 0], edges=[(0, 1), (0, 2)], edge_bytes=[200, 100])
    c = make_cluster(3, mode="default", links=[(0, 2, 50.0, 0.25)], op_overhead=0.25, gap=0.5)
    s = simulate(g, c, np.array([0, 1, 2]))
    assert s.op_start.tolist() == [approx(0.0), approx(3.0), approx(5.75)]
    assert s.op_end.tolist() == [approx(1.0), approx(4.0), approx(7.75)]
    assert transfers(s) == [(0, 0, 1, 200.0, approx(1.0), approx(3.0), True),
                            (0, 0, 2, 100.0, approx(3.5), approx(5.75), True)]
    assert s.communication_bytes == 300.0
    assert s.memcpy_time.tolist() == [approx(4.0), 0.0, 0.0]  # latency does not hold the channel
    assert s.makespan == approx(8.0)


def test_default_mode_sends_the_largest_edge_to_a_device_once():
    # a (gpu:0, [0, 1]) feeds b and c, both on gpu:1, with edge bytes 10 and 300: one
    # transfer of max(10, 300) = 300 bytes, [1, 4]. b [4, 5], c [5, 6]. makespan 6.
    g = make_graph([1.0, 1.0, 1.0], out=[1000, 0, 0], edges=[(0, 1), (0, 2)], edge_bytes=[10, 300])
    s = simulate(g, make_cluster(2, mode="default"), np.array([0, 1, 1]))
    assert transfers(s) == [(0, 0, 1, 300.0, approx(1.0), approx(4.0), True)]
    assert s.op_start.tolist() == [approx(0.0), approx(4.0), approx(5.0)]
    assert s.makespan == approx(6.0)
    assert s.communication_bytes == 300.0


def test_channel_is_fifo_in_order_of_output_availability():
    # gpu:0 runs a [0, 1] then b [1, 3] (sources in index order, δ1 = 0). Default mode,
    # 100 B/s, gap 0.25. a's 300 bytes: [1, 4], channel free 4.25. b's 100 bytes are ready
    # at 3 but wait for the channel: [4.25, 5.25]. c (needs a, 0.5 s) [4, 4.5]; d (needs
    # b, 0.5 s) [5.25, 5.75]. makespan 5.75 (channel free at 5.5).
    g = make_graph([1.0, 2.0, 0.5, 0.5], out=[300, 100, 0, 0], edges=[(0, 2), (1, 3)])
    c = make_cluster(2, mode="default", gap=0.25)
    s = simulate(g, c, np.array([0, 0, 1, 1]))
    assert s.op_start.tolist() == [approx(0.0), approx(1.0), approx(4.0), approx(5.25)]
    assert transfers(s) == [(0, 0, 1, 300.0, approx(1.0), approx(4.0), True),
                            (1, 0, 1, 100.0, approx(4.25), approx(5.25), True)]
    assert s.makespan == approx(5.75)
    assert s.memcpy_time.tolist() == [approx(4.0), 0.0]


# ---------------------------------------------------------------------------- ready queue order


def test_earlier_ready_op_runs_first_even_with_a_higher_index():
    # op0 keeps gpu:1 busy [0, 10]. gpu:0: op1 [0, 1], op2 [1, 3]. op1's 100 bytes land on
    # gpu:1 at 2 (op4 ready at 2); op2's at 4 (op3 ready at 4). When gpu:1 frees at 10 it
    # runs op4 (ready earlier) [10, 11] before op3 [11, 12].
    g = make_graph([10.0, 1.0, 2.0, 1.0, 1.0], out=[0, 100, 100, 0, 0], edges=[(2, 3), (1, 4)])
    for mode in ("default", "placeto"):
        c = make_cluster(2, mode=mode)
        s = simulate(g, c, np.array([1, 0, 0, 1, 1]))
        assert s.op_start.tolist() == [0.0, 0.0, approx(1.0), approx(11.0), approx(10.0)], mode
        assert s.makespan == approx(12.0)


def test_default_mode_breaks_ready_ties_by_op_index():
    # a (op0, gpu:0) and b (op1, gpu:2), both [0, 1], send 100 bytes each to gpu:1: both
    # land at 2. op3 needs a, op2 needs b: both ready at 2, the lower index runs first:
    # op2 [2, 3], op3 [3, 4].
    g = make_graph([1.0, 1.0, 1.0, 1.0], out=[100, 100, 0, 0], edges=[(0, 3), (1, 2)])
    s = simulate(g, make_cluster(3, mode="default"), np.array([0, 2, 1, 1]))
    assert s.op_start.tolist() == [0.0, 0.0, approx(2.0), approx(3.0)]
    assert s.makespan == approx(4.0)


def test_placeto_mode_breaks_ready_ties_like_the_published_simulator():
    # Same graph in placeto mode (δ1 = 0.25, δ2 = 0.5). The published simulator handles
    # the two arrivals at 2 as remove_dependency events ordered by (parent, child), so op3
    # (parent op0) joins gpu:1's FIFO before op2 (parent op1): op3 [2, 3], op2 [3.25, 4.25].
    g = make_graph([1.0, 1.0, 1.0, 1.0], out=[100, 100, 0, 0], edges=[(0, 3), (1, 2)])
    s = simulate(g, placeto(3), np.array([0, 2, 1, 1]))
    assert s.op_start.tolist() == [0.0, 0.0, approx(3.25), approx(2.0)]
    assert s.makespan == approx(4.5)


@pytest.mark.parametrize("mode", ["default", "placeto"])
def test_ops_made_ready_together_by_one_producer_run_in_index_order(mode):
    # p [0, 1] on gpu:0 feeds op1, op2, op3 on gpu:0 (all ready at 1) -- listed in the
    # graph in the order op3, op1, op2. δ1 = 0.25 (placeto) or 0: they run by index.
    g = make_graph([1.0, 2.0, 4.0, 8.0], edges=[(0, 3), (0, 1), (0, 2)])
    c = placeto(1) if mode == "placeto" else make_cluster(1, mode="default")
    s = simulate(g, c, np.zeros(4, int))
    o = D1 if mode == "placeto" else 0.0
    assert s.op_start.tolist() == [0.0, approx(1 + o), approx(3 + 2 * o), approx(7 + 3 * o)]
    assert s.makespan == approx(15 + 4 * o)


def test_sources_start_in_index_order():
    g = make_graph([3.0, 1.0, 2.0])
    s = simulate(g, make_cluster(1, mode="default"), np.zeros(3, int))
    assert s.op_start.tolist() == [0.0, approx(3.0), approx(4.0)]


def test_default_mode_source_has_no_priority_over_an_op_ready_at_the_same_time():
    # op0 takes no time [0, 0] and makes op1 ready at 0, when the source op2 is ready too.
    # Both became runnable at 0: the lower index, op1, runs first [0, 1]; op2 [1, 3].
    g = make_graph([0.0, 1.0, 2.0], edges=[(0, 1)])
    s = simulate(g, make_cluster(1, mode="default"), np.zeros(3, int))
    assert s.op_start.tolist() == [0.0, 0.0, approx(1.0)]
    assert s.makespan == approx(3.0)


def test_placeto_zero_byte_transfer_lands_after_local_outputs_of_the_same_instant():
    # gpu:0: a (op0) [0, 1] sends its 0-byte output to c (op3) on gpu:1. gpu:1: b (op1)
    # [0, 1] feeds d (op2) locally. The published simulator pushes d's remove_dependency
    # when b starts; c's only when the bus runs the 0-byte transfer at 1. So at 1, d joins
    # gpu:1's FIFO before c (also the lower index): d [1.25, 2.25], c [2.5, 3.5]; 3.75.
    g = make_graph([1.0, 1.0, 1.0, 1.0], edges=[(0, 3), (1, 2)])
    s = simulate(g, placeto(2), np.array([0, 1, 1, 1]))
    assert transfers(s) == [(0, 0, 1, 0.0, approx(1.0), approx(1.0), True)]
    assert s.op_start.tolist() == [0.0, 0.0, approx(1.25), approx(2.5)]
    assert s.makespan == approx(3.75)


def test_placeto_op_freed_by_a_zero_time_op_queues_behind_ops_ready_at_that_instant():
    # One device, placeto mode, δ1 = δ2 = 0. Sources a (op0) [0, 1] and p (op2) [1, 2];
    # z (op1, needs a, 0 s) waits until 2 and runs [2, 2]. At 2, x (op3, needs p) became
    # ready when p ended (its remove_dependency was queued when p started); y (op4, needs z)
    # only when z ran. x runs first [2, 3] (also the lower index), then y [3, 5].
    g = make_graph([1.0, 0.0, 1.0, 1.0, 2.0], edges=[(0, 1), (2, 3), (1, 4)])
    s = simulate(g, make_cluster(1, mode="placeto"), np.zeros(5, int))
    assert s.op_start.tolist() == [0.0, approx(2.0), approx(1.0), approx(2.0), approx(3.0)]
    assert s.makespan == approx(5.0)


# ---------------------------------------------------------------------------- compute times


def test_zero_compute_op_gets_no_op_overhead():
    # a takes 0 s: no δ1 after it (CONTRACTS §4; the published code skips δ1 only for the
    # integer 0). b [0, 2]; c takes 0 s too, starts at 2 + δ1 = 2.25 and ends the step:
    # makespan 2.25.
    g = make_graph([0.0, 2.0, 0.0], edges=[(0, 1), (1, 2)])
    s = simulate(g, placeto(1), np.zeros(3, int))
    assert s.op_start.tolist() == [0.0, 0.0, approx(2.25)]
    assert s.op_end.tolist() == [0.0, approx(2.0), approx(2.25)]
    assert s.makespan == approx(2.25)


def test_compute_map_picks_the_device_kind_and_divides_by_speed():
    # op0 {"gpu": 1.0, "cpu": 6.0}; op1 3.0 everywhere; op2 {"gpu": 0.5} (no cpu time).
    # The cpu has speed 2.0, the gpu 1.0: op0 on the cpu takes 6 / 2 = 3; op1 on the cpu
    # 1.5; op2 on the gpu 0.5. Default mode, no transfers (no edges).
    g = CompGraph("kinds", ["op0", "op1", "op2"], compute_any=[np.nan, 3.0, np.nan],
                  compute_by_kind=[[1.0, 6.0], [np.nan, np.nan], [0.5, np.nan]], kinds=("gpu", "cpu"))
    c = Cluster("mixed", (Device("gpu:0", "gpu", 1e9, 1.0), Device("cpu:0", "cpu", 1e9, 2.0)),
                Link(1e9), (), SimulationSettings("default"))
    s = simulate(g, c, np.array([1, 1, 0]))
    assert s.op_end.tolist() == [approx(3.0), approx(4.5), approx(0.5)]
    assert s.compute_time.tolist() == [approx(0.5), approx(4.5)]
    assert s.makespan == approx(4.5)
    with pytest.raises(PlacementError, match="op2"):
        simulate(g, c, np.array([1, 1, 1]))


def test_compute_and_memcpy_times_are_the_hand_sums():
    # gpu:0: a [0, 1.5], c [1.5, 2] (local consumer of a). gpu:1: b [0, 4].
    # a sends 25 bytes to d on gpu:1 at 100 B/s: [1.5, 1.75]; d [4, 4.5] after b.
    # c sends 50 bytes to d: [2, 2.5]. makespan 4.5.
    g = make_graph([1.5, 4.0, 0.5, 0.5], out=[25, 0, 50, 0], edges=[(0, 2), (0, 3), (2, 3)])
    s = simulate(g, make_cluster(2, mode="default"), np.array([0, 1, 0, 1]))
    assert s.op_start.tolist() == [0.0, 0.0, approx(1.5), approx(4.0)]
    assert s.makespan == approx(4.5)
    assert s.compute_time.tolist() == [approx(2.0), approx(4.5)]
    assert s.memcpy_time.tolist() == [approx(0.75), 0.0]
    assert s.communication_bytes == 75.0


# ---------------------------------------------------------------------------- memory


def test_memory_on_one_device():
    # Default mode, δ1 = 0. a [0, 1], b [1, 3] (reads a), c [3, 4] (reads a and b).
    #   persistent 100000 (on a) always
    #   a temp 10 [0, 1); a out 1 [0, 4) (last local reader c ends at 4)
    #   b temp 100 [1, 3); b out 1000 [1, 4)
    #   c out 10000 [3, 4) (no readers: lives while c runs)
    # t=0: 100000 + 10 + 1 = 100011;  t=1: -10 +100 +1000 = 101101
    # t=3: -100 + 10000 = 111001 (peak: persistent, a, b and c outputs);  t=4: 100000
    g = make_graph([1.0, 2.0, 1.0], out=[1, 1000, 10000], pers=[100000, 0, 0], temp=[10, 100, 0],
                   edges=[(0, 1), (0, 2), (1, 2)])
    c = make_cluster(1, mode="default", memory=111001)
    s = simulate(g, c, np.zeros(3, int), record_memory=True)
    assert s.peak_memory.tolist() == [111001.0]
    assert s.persistent_memory.tolist() == [100000.0]
    assert s.oom.tolist() == [False]  # peak == capacity is not OOM
    tl = s.memory_timeline()
    assert tl.times[0].tolist() == [0.0, 1.0, 3.0, 4.0]
    assert tl.bytes[0].tolist() == [100011.0, 101101.0, 111001.0, 100000.0]
    s2 = simulate(g, make_cluster(1, mode="default", memory=111000), np.zeros(3, int))
    assert s2.oom.tolist() == [True]
    assert s2.any_oom


def test_memory_of_outputs_kept_for_a_transfer_and_of_received_copies():
    # Default mode, 500 B/s, δ1 = 0, gap 0.
    # gpu:0: p [0, 1] (temp 1, out 1000 read by r and s on gpu:1); q [1, 5] (temp 100, out 10).
    #   p's output is sent [1, 3] and stays on gpu:0 until it lands at 3.
    #   t=0: 1 + 1000 = 1001;  t=1: -1 +100 +10 = 1110 (peak);  t=3: -1000 -> 110;  t=5: 0
    # gpu:1 (persistent 7 on r): copy of p (1000) from 3 until its last reader there ends.
    #   r [3, 5] temp 10000; s [5, 6] temp 100000.
    #   t=3: 7 + 1000 + 10000 = 11007;  t=5: -10000 + 100000 = 101007 (peak: the copy is
    #   still held while s runs);  t=6: 7
    g = make_graph([1.0, 4.0, 2.0, 1.0], out=[1000, 10, 0, 0], pers=[0, 0, 7, 0],
                   temp=[1, 100, 10000, 100000], edges=[(0, 2), (0, 3)])
    c = make_cluster(2, mode="default", bw=500.0, memory=101006)
    s = simulate(g, c, np.array([0, 0, 1, 1]), record_memory=True)
    assert s.op_start.tolist() == [0.0, approx(1.0), approx(3.0), approx(5.0)]
    assert transfers(s) == [(0, 0, 1, 1000.0, approx(1.0), approx(3.0), True)]
    assert s.peak_memory.tolist() == [1110.0, 101007.0]
    assert s.oom.tolist() == [False, True]
    tl = s.memory_timeline()
    assert tl.times[0].tolist() == [0.0, 1.0, 3.0, 5.0]
    assert tl.bytes[0].tolist() == [1001.0, 1110.0, 110.0, 0.0]
    assert tl.times[1].tolist() == [0.0, 3.0, 5.0, 6.0]
    assert tl.bytes[1].tolist() == [7.0, 11007.0, 101007.0, 7.0]


def test_memory_placeto_copies_on_every_destination():
    # Placeto mode (δ1 = 0.25, δ2 = 0.5, 100 B/s). a on gpu:0 [0, 1], out 200 (temp 1).
    # One transfer [1, 3]: a's output stays on gpu:0 until 3; a copy of 200 bytes lands on
    # gpu:1 and gpu:2 at 3. b (gpu:1) [3, 4] temp 10; c (gpu:2) [3, 5] temp 1000, out 10000.
    # gpu:0 peak 201 at t=0; gpu:1: 200 + 10 = 210; gpu:2: 200 + 1000 + 10000 = 11200.
    g = make_graph([1.0, 1.0, 2.0], out=[200, 0, 10000], temp=[1, 10, 1000], edges=[(0, 1), (0, 2)])
    s = simulate(g, placeto(3), np.array([0, 1, 2]), record_memory=True)
    assert s.peak_memory.tolist() == [201.0, 210.0, 11200.0]
    tl = s.memory_timeline()
    assert tl.times[0].tolist() == [0.0, 1.0, 3.0]
    assert tl.bytes[0].tolist() == [201.0, 200.0, 0.0]
    assert tl.times[2].tolist() == [0.0, 3.0, 5.0]
    assert tl.bytes[2].tolist() == [0.0, 11200.0, 0.0]


def test_memory_timeline_max_is_the_peak_and_everything_is_freed():
    g = make_graph([1.0, 4.0, 2.0, 1.0], out=[1000, 10, 0, 0], pers=[3, 0, 7, 0],
                   temp=[1, 100, 10000, 100000], edges=[(0, 2), (0, 3)])
    s = simulate(g, make_cluster(2, mode="default", bw=500.0), np.array([0, 0, 1, 1]),
                 record_memory=True)
    tl = s.memory_timeline()
    for d in range(2):
        assert tl.times[d][0] == 0.0
        assert np.all(np.diff(tl.times[d]) > 0)
        assert tl.bytes[d].max() == s.peak_memory[d]
        assert tl.bytes[d][-1] == s.persistent_memory[d]


def test_peak_counts_persistent_bytes_of_ops_that_never_overlap():
    # Persistent bytes (weights) are held all step long, whatever the op order.
    g = make_graph([1.0, 1.0], pers=[5, 50], temp=[500, 5000])
    s = simulate(g, make_cluster(1, mode="default"), np.zeros(2, int))
    assert s.peak_memory.tolist() == [55.0 + 5000.0]


# ---------------------------------------------------------------------------- errors and API


def test_unknown_mode_is_a_simulation_error():
    g = make_graph([1.0])
    c = make_cluster(1, mode="default")
    with pytest.raises(SimulationError, match="nonsense"):
        simulate(g, c, np.zeros(1, int), mode="nonsense")
    assert simulate(g, c, np.zeros(1, int), mode="work_conserving").makespan == 1.0


def test_bad_placements_are_placement_errors():
    g = make_graph([1.0, 1.0], edges=[(0, 1)])
    c = make_cluster(2, mode="default")
    with pytest.raises(PlacementError, match="3 entries for 2 ops"):
        simulate(g, c, np.array([0, 1, 1]))
    with pytest.raises(PlacementError, match=r"op1.*device #2"):
        simulate(g, c, np.array([0, 2]))
    with pytest.raises(PlacementError, match=r"op0.*device #-1"):
        simulate(g, c, np.array([-1, 0]))
    with pytest.raises(PlacementError):
        Simulator(g, c).makespan(np.array([0]))


def test_mode_argument_overrides_the_cluster_setting():
    # The placeto cluster simulated in default mode: δ1 and δ2 still apply, per-pair links too.
    g = make_graph([2.0, 3.0], out=[50, 0], edges=[(0, 1)])
    s = simulate(g, placeto(2, lat=0.5), np.array([0, 1]), mode="default")
    assert s.mode == "default"
    assert s.op_start[1] == approx(3.0)  # 2 + latency 0.5 + 50/100
    assert s.makespan == approx(6.25)


def test_placement_object_and_simulator_entry_points_agree():
    g = make_graph([2.0, 3.0, 1.0], out=[50, 20, 0], temp=[1, 2, 3], edges=[(0, 1), (0, 2), (1, 2)])
    c = placeto(2)
    p = Placement(np.array([0, 1, 0]))
    s = simulate(g, c, p)
    sim = Simulator(g, c)
    assert sim.makespan(p) == s.makespan
    assert sim.makespan(p.devices) == s.makespan
    m, peak = sim.makespan_and_peak(p)
    assert m == s.makespan
    assert peak.tolist() == s.peak_memory.tolist()
    assert sim.run(p).op_start.tolist() == s.op_start.tolist()
