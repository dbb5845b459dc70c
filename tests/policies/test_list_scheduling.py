"""Tests for the list schedulers (policies.list_scheduling): critical-path, heft, m-etf, m-topo, m-sct.

Every expected placement and number is worked out by hand in the comments from the rules in
the module docstring. Clusters are built here (default simulation mode, no overheads) so
the arithmetic stays exact.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.cluster import Cluster, Device, Link, SimulationSettings
from engine.generators import random_dag
from engine.graph.compgraph import CompGraph
from engine.graph.io import graph_from_dict
from engine.placement import check_placement
from engine.presets import PRESETS
from engine.sim import _plankernels as _p
from engine.sim import estimator
from engine.sim.simulator import simulate
from policies import _listsched_kernels as _k
from policies.list_scheduling import ListScheduling, favourite_children
from policies.registry import make_placer

GB = 1e9
LIST = ("critical-path", "heft", "m-etf", "m-topo", "m-sct")
COMM_AWARE = ("critical-path", "heft", "m-etf", "m-sct")


def cluster(n: int = 2, memory: float = 100 * GB, bandwidth: float = 1 * GB, speeds=None) -> Cluster:
    speeds = speeds or [1.0] * n
    devs = tuple(Device(f"gpu:{i}", "gpu", memory, s) for i, s in enumerate(speeds))
    return Cluster("test", devs, Link(bandwidth), (), SimulationSettings("default"))


def graph(ops: list[dict], edges: list[tuple]) -> CompGraph:
    return graph_from_dict({"schema": "placelab.graph/1", "name": "t", "ops": ops,
                            "edges": [{"src": e[0], "dst": e[1], **({"bytes": e[2]} if len(e) > 2 else {})}
                                      for e in edges]})


def place(name: str, g: CompGraph, c: Cluster, seed: int = 0, **params) -> np.ndarray:
    p = make_placer(name, **params).place(g, c, seed=seed)
    check_placement(g, c, p)  # independent check: kinds, pins and colocation honoured
    return p.devices


def two_chains() -> CompGraph:
    # a0 -> a1 -> a2 and b0 -> b1 -> b2, 1 s each, 1 MB tensors (1 ms at 1 GB/s)
    ops = [{"name": f"{c}{i}", "compute": 1.0, "output_bytes": 1e6} for c in "ab" for i in range(3)]
    return graph(ops, [("a0", "a1"), ("a1", "a2"), ("b0", "b1"), ("b1", "b2")])


@pytest.mark.parametrize("name", COMM_AWARE)
def test_two_independent_chains_one_per_device(name):
    # a0 and b0 both start at 0 only on different devices; each later op starts earliest on
    # its chain's device (its input is there at once, elsewhere 1 ms later).
    g, c = two_chains(), cluster()
    dev = place(name, g, c)
    assert dev[0] == dev[1] == dev[2] and dev[3] == dev[4] == dev[5] and dev[0] != dev[3]
    assert simulate(g, c, dev).makespan == pytest.approx(3.0)  # the longest chain


@pytest.mark.parametrize("name", COMM_AWARE)
def test_fork_join_with_expensive_communication_stays_on_one_device(name):
    # s -> {x, y} -> t, 1 s each, 10 GB tensors = 10 s per transfer at 1 GB/s: x (or y) on
    # the other device would start at 11 s instead of 1 s (2 s); all on one device = 4 s.
    ops = [{"name": o, "compute": 1.0, "output_bytes": 10 * GB} for o in ("s", "x", "y", "t")]
    g, c = graph(ops, [("s", "x"), ("s", "y"), ("x", "t"), ("y", "t")]), cluster()
    dev = place(name, g, c)
    assert len(set(dev.tolist())) == 1
    assert simulate(g, c, dev).makespan == pytest.approx(4.0)


def heft_example() -> tuple[CompGraph, Cluster]:
    # compute (reference s): A 4, B 2, C 6, D 2; device 0 speed 1, device 1 speed 2;
    # edges A->B 2 GB, A->C 1 GB, B->D 1 GB, C->D 3 GB at 1 GB/s, no latency.
    ops = [{"name": "A", "compute": 4.0}, {"name": "B", "compute": 2.0},
           {"name": "C", "compute": 6.0}, {"name": "D", "compute": 2.0}]
    g = graph(ops, [("A", "B", 2 * GB), ("A", "C", 1 * GB), ("B", "D", 1 * GB), ("C", "D", 3 * GB)])
    return g, cluster(speeds=[1.0, 2.0])


def test_heft_upward_ranks_textbook_example():
    # mean compute w̄: A (4+2)/2 = 3, B 1.5, C 4.5, D 1.5; c̄ = GB / (1 GB/s):
    # rank D = 1.5; rank B = 1.5 + 1 + 1.5 = 4; rank C = 4.5 + 3 + 1.5 = 9;
    # rank A = 3 + max(2 + 4, 1 + 9) = 13
    g, c = heft_example()
    ls = ListScheduling(g, c)
    np.testing.assert_allclose(ls.mean_compute, [3.0, 1.5, 4.5, 1.5])
    np.testing.assert_allclose(ls.rank, [13.0, 4.0, 9.0, 1.5])


def test_heft_placement_textbook_example():
    # order A(13), C(9), B(4), D(1.5):
    # A: EFT d0 = 4, d1 = 2 -> d1 [0, 2].  C: d0 ready 2 + 1 = 3, EFT 9; d1 [2, 5] -> d1.
    # B: d0 ready 2 + 2 = 4, EFT 6; d1 no gap before 5, EFT 6: tie -> lower index, d0 [4, 6].
    # D: d0 ready max(6, 5 + 3) = 8, EFT 10; d1 ready max(6 + 1, 5) = 7, EFT 8 -> d1.
    g, c = heft_example()
    assert place("heft", g, c, guard=False).tolist() == [1, 0, 1, 1]


def test_heft_keeps_to_one_device_where_its_own_estimate_says_spreading_does_not_pay():
    # The textbook schedule above ends at 8 s (D on gpu:1 [7, 8] after B's 1 GB from gpu:0). Everything on the
    # fast gpu:1 is A 2 + B 1 + C 3 + D 1 = 7 s: the guard returns that (and its own estimate of it), and the
    # simulator agrees.
    g, c = heft_example()
    p = make_placer("heft").place(g, c)
    assert p.devices.tolist() == [1, 1, 1, 1]
    assert p.predicted_makespan_s == pytest.approx(7.0) == simulate(g, c, p.devices).makespan
    ls = ListScheduling(g, c)
    assert ls.predict(np.array([1, 0, 1, 1])) == pytest.approx(8.0) == simulate(g, c, [1, 0, 1, 1]).makespan


def test_heft_inserts_into_an_idle_gap():
    # p -> q with a 4 GB tensor (4 s); q is colocated with s, which is pinned to gpu:1, and r is
    # pinned to gpu:1 too. Ranks: q 5, p 1 + 4 + 5 = 10, r 2, s 1 -> order p, q, r, s.
    # p: EFT 1 on both devices, tie -> gpu:0 [0, 1]. q on gpu:1, ready 1 + 4 = 5 -> [5, 10].
    # r: the idle gap [0, 5] on gpu:1 holds it -> [0, 2]; s: the rest of the gap -> [2, 3].
    ops = [{"name": "p", "compute": 1.0, "output_bytes": 4 * GB},
           {"name": "q", "compute": 5.0, "colocate": "g"},
           {"name": "r", "compute": 2.0, "device": "gpu:1"},
           {"name": "s", "compute": 1.0, "device": "gpu:1", "colocate": "g"}]
    g = graph(ops, [("p", "q")])
    ls = ListScheduling(g, cluster())
    np.testing.assert_allclose(ls.rank, [10.0, 5.0, 2.0, 1.0])
    noise, dev_noise = ls.deterministic_noise()
    dev, start, _, _ = ls.run(ls.rank, noise, dev_noise, select=_k.SELECT_PRIORITY, device=_k.DEVICE_EFT_INSERT)
    assert dev.tolist() == [0, 1, 1, 1]
    np.testing.assert_allclose(start, [0.0, 5.0, 0.0, 2.0])
    assert place("heft", g, cluster(), guard=False).tolist() == [0, 1, 1, 1]
    # run as a FIFO device runs it: r [0, 2], s [2, 3], q [5, 10]; all on gpu:1 takes 1 + 5 + 2 + 1 = 9 s
    assert ls.predict(np.array([0, 1, 1, 1])) == pytest.approx(10.0)
    assert place("heft", g, cluster()).tolist() == [1, 1, 1, 1]


def memory_chain() -> tuple[CompGraph, Cluster]:
    # six ops in a chain, 3 GB of weights each (18 GB), 1 MB tensors; two 10 GB devices:
    # no device holds more than three ops, so the only fits put three on each.
    ops = [{"name": f"o{i}", "compute": 1e-3, "output_bytes": 1e6, "persistent_bytes": 3 * GB} for i in range(6)]
    return graph(ops, [(f"o{i}", f"o{i + 1}") for i in range(5)]), cluster(memory=10 * GB)


@pytest.mark.parametrize("name", LIST)
def test_memory_aware_placers_fit_a_graph_too_big_for_one_device(name):
    g, c = memory_chain()
    dev = place(name, g, c)
    assert simulate(g, c, dev).any_oom is False
    assert np.bincount(dev, minlength=2).tolist() == [3, 3]


@pytest.mark.parametrize("name", LIST)
def test_memory_aware_random_graph_has_no_oom(name):
    # 300 ops, ~600 MB of weights; 4 devices of 200 MB: one device cannot hold it
    g = random_dag(ops=300, seed=3)
    c = cluster(n=4, memory=200e6, bandwidth=10 * GB)
    assert g.persistent_bytes.sum() > 2.5 * 200e6
    dev = place(name, g, c)
    assert simulate(g, c, dev).any_oom is False


def test_m_topo_fills_devices_in_topological_order():
    # share = 1.05 · 6 · (3 GB + 1 MB) / 2 ≈ 9.45 GB: three ops per device, in chain order
    g, c = memory_chain()
    assert place("m-topo", g, c).tolist() == [0, 0, 0, 1, 1, 1]


def test_m_sct_lp_favourite_child():
    # A -> B 5 GB (5 s), A -> C 1 GB (1 s), 1 s compute each. LP: at most one favourite child
    # of A: x_AB + x_AC >= 1; w = max(2 + 5·x_AB, 2 + x_AC) is least at x_AB = 1/6 (w = 17/6),
    # so x_AB < 1/2: B is A's favourite child (no communication on the costly edge).
    ops = [{"name": o, "compute": 1.0} for o in "ABC"]
    g = graph(ops, [("A", "B", 5 * GB), ("A", "C", 1 * GB)])
    ls = ListScheduling(g, cluster())
    assert favourite_children(g, ls.mean_compute, ls.edge_comm).tolist() == [1, -1, -1]


def test_m_sct_favourite_child_follows_its_parent():
    # A -> B (5 GB), A -> C (1 GB): B, A's favourite child, runs where A did
    ops = [{"name": o, "compute": 1.0} for o in "ABC"]
    g = graph(ops, [("A", "B", 5 * GB), ("A", "C", 1 * GB)])
    dev = place("m-sct", g, cluster())
    assert dev[0] == dev[1]


@pytest.mark.parametrize("name", LIST)
def test_colocation_pins_and_kinds_respected(name):
    # on cpu+k80x2 = [cpu:0, gpu:0, gpu:1]: c is CPU-only, colocated with a, so a and c go
    # to the CPU; p is pinned to gpu:1; b and d form another group.
    ops = [{"name": "a", "compute": {"gpu": 1.0, "cpu": 2.0}, "colocate": "g1"},
           {"name": "b", "compute": 1.0, "colocate": "g2"},
           {"name": "c", "compute": {"cpu": 1.0}, "colocate": "g1"},
           {"name": "d", "compute": 1.0, "colocate": "g2"},
           {"name": "p", "compute": 1.0, "device": "gpu:1"}]
    g = graph(ops, [("a", "b"), ("b", "c"), ("c", "d"), ("a", "p"), ("p", "d")])
    dev = place(name, g, PRESETS["cpu+k80x2"]())
    assert dev[0] == dev[2] == 0 and dev[1] == dev[3] and dev[4] == 2


def test_critical_path_is_deterministic_per_seed_and_uses_its_runs():
    g, c = random_dag(ops=200, seed=1), PRESETS["p100x4"]()
    a = place("critical-path", g, c, seed=5)
    assert np.array_equal(a, place("critical-path", g, c, seed=5))
    # best of 20 runs is never worse than the first run alone (same seed: same first run)
    one = simulate(g, c, place("critical-path", g, c, seed=5, runs=1)).makespan
    best = simulate(g, c, place("critical-path", g, c, seed=5, runs=20)).makespan
    assert best <= one


@pytest.mark.parametrize("name", ("heft", "m-etf", "m-topo", "m-sct"))
def test_deterministic_schedulers_ignore_the_seed(name):
    g, c = random_dag(ops=200, seed=2), PRESETS["v100x8"]()
    assert np.array_equal(place(name, g, c, seed=0), place(name, g, c, seed=9))


@pytest.mark.parametrize("name", COMM_AWARE)
def test_list_schedulers_beat_single_device_on_a_parallel_graph(name):
    # 8 independent 1 s ops on 4 devices: two per device, makespan 2 s
    g = CompGraph("flat", [f"o{i}" for i in range(8)], compute_any=np.ones(8))
    c = cluster(n=4)
    dev = place(name, g, c)
    assert np.bincount(dev, minlength=4).tolist() == [2, 2, 2, 2]
    assert simulate(g, c, dev).makespan == pytest.approx(2.0)


# ---- each scheduler's own estimate (issue 55) ------------------------------------------------


def hand_graph() -> CompGraph:
    # a (1 ms, out 1000 B) -> b (2 ms, out 2000 B) -> c (3 ms); d (4 ms) independent; 1 MB/s: 1000 B = 1 ms
    ops = [{"name": "a", "compute": 1e-3, "output_bytes": 1000}, {"name": "d", "compute": 4e-3},
           {"name": "b", "compute": 2e-3, "output_bytes": 2000}, {"name": "c", "compute": 3e-3}]
    return graph(ops, [("a", "b"), ("b", "c")])


@pytest.mark.parametrize("name", COMM_AWARE)
def test_list_schedulers_predict_their_own_makespan(name):
    # HEFT ranks a 1+1+7 = 9, b 2+2+3 = 7, d 4, c 3 (m-ETF's static levels a 6 > d 4 break the first tie, m-SCT's
    # favourite children keep the chain together): a [0, 1] and b [1, 3] on one device (b elsewhere would wait
    # for its 1 ms input), d [0, 4] on the other (the first is busy until 3), c [3, 6] after b (elsewhere 2 ms of
    # input after 3 ms: 5). The schedule's latest finish, 6 ms, is its estimate, and the simulation agrees.
    g, c = hand_graph(), cluster(bandwidth=1e6)
    p = make_placer(name).place(g, c, seed=0)
    dev = p.devices
    assert dev[0] == dev[2] == dev[3] != dev[1]
    assert p.predicted_makespan_s == pytest.approx(6e-3)
    assert simulate(g, c, dev).makespan == pytest.approx(6e-3)


def test_m_topo_predicts_its_own_makespan():
    # memory_chain: o0..o2 on gpu:0 [0, 3] ms, 1 MB to gpu:1 in 1 ms, o3..o5 [4, 7] ms
    g, c = memory_chain()
    p = make_placer("m-topo").place(g, c)
    assert p.devices.tolist() == [0, 0, 0, 1, 1, 1]
    assert p.predicted_makespan_s == pytest.approx(7e-3) == simulate(g, c, p.devices).makespan


def test_the_estimate_is_of_the_placement_the_memory_repair_returns():
    # everything on gpu:0 (18 GB of weights on a 10 GB device): the post-pass moves units, and the estimate is of
    # the placement that comes out (as the simulator runs it); three ops a device fit, and are kept (7 ms)
    g, c = memory_chain()
    ls = ListScheduling(g, c)
    moved = ls.placement(np.zeros(6, np.int64), repair_memory=True)
    assert moved.devices.tolist() != [0] * 6
    assert moved.predicted_makespan_s == pytest.approx(simulate(g, c, moved.devices).makespan)
    kept = ls.placement(np.array([0, 0, 0, 1, 1, 1]), repair_memory=True)
    assert kept.devices.tolist() == [0, 0, 0, 1, 1, 1] and kept.predicted_makespan_s == pytest.approx(7e-3)


def test_critical_path_reports_the_estimate_of_the_run_it_returns():
    # best of 12 runs = the first run that reached the best; runs=j for that j returns the same run (the earlier
    # ones are worse), so both carry the same estimate; runs=1 carries the first run's own
    g, c = random_dag(ops=200, seed=1), PRESETS["p100x4"]()
    placements = [make_placer("critical-path", runs=r, guard=False).place(g, c, seed=5) for r in range(1, 13)]
    best = placements[-1]
    first_best = next(p for p in placements if p == best)
    assert best.predicted_makespan_s == first_best.predicted_makespan_s is not None
    assert len({p.predicted_makespan_s for p in placements}) > 1  # the runs' estimates differ
    ls = ListScheduling(g, c)
    rng = np.random.default_rng(5)
    dev = ls.run(ls.rank, rng.random(g.num_ops), rng.random((g.num_ops, c.num_devices)),
                 select=_k.SELECT_PRIORITY, device=_k.DEVICE_EST)[0]
    assert placements[0] == ls.placement(dev, repair_memory=True, guard=False)
    assert placements[0].predicted_makespan_s == pytest.approx(simulate(g, c, placements[0].devices).makespan)


@pytest.mark.parametrize("name", ("single-device", "round-robin", "random", "metis"))
def test_placers_without_a_schedule_predict_nothing(name):
    g, c = hand_graph(), cluster(bandwidth=1e6)
    assert make_placer(name).place(g, c, seed=0).predicted_makespan_s is None


# ---- the ETF kernel against a plain scan (issue 55: per-device heaps instead of a scan of every ready pair) ----

@st.composite
def etf_cases(draw):
    """A random DAG with colocation units, kinds some devices cannot run, tight memory and m-SCT favourite
    children; times, priorities and memory in small integers, so that starts, priorities and fits tie often."""
    n, nd = draw(st.integers(2, 22)), draw(st.integers(1, 4))
    edges = sorted({(a, b) for a, b in draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)),
                                                     max_size=3 * n)) if a < b})
    src = np.array([a for a, _ in edges], np.int64)
    dst = np.array([b for _, b in edges], np.int64)
    units = draw(st.lists(st.integers(0, max(n // 2, 1)), min_size=n, max_size=n))
    _, op_unit = np.unique(units, return_inverse=True)
    nu = int(op_unit.max()) + 1
    mask = np.array(draw(st.lists(st.lists(st.booleans(), min_size=nd, max_size=nd), min_size=nu, max_size=nu)))
    mask[~mask.any(axis=1), 0] = True
    times = np.array(draw(st.lists(st.integers(0, 4), min_size=n * nd, max_size=n * nd)), float).reshape(n, nd)
    dur = np.where(mask[op_unit], times, np.inf)
    small = st.lists(st.integers(0, 3), min_size=n, max_size=n)
    fav = np.full(n, -1, np.int64)
    for e in draw(st.lists(st.integers(0, max(len(edges) - 1, 0)), max_size=n)) if edges else []:
        if fav[dst[e]] < 0 and src[e] not in fav:
            fav[dst[e]] = src[e]
    link = np.array(draw(st.lists(st.integers(0, 2), min_size=nd * nd, max_size=nd * nd)), float).reshape(nd, nd)
    np.fill_diagonal(link, 0)
    return dict(n=n, src=src, dst=dst, edge_bytes=np.array(draw(st.lists(st.integers(0, 3), min_size=len(edges),
                                                                          max_size=len(edges))), float),
                dur=np.ascontiguousarray(dur), op_unit=op_unit.astype(np.int64),
                unit_dev0=np.where(mask.sum(axis=1) == 1, np.argmax(mask, axis=1), -1).astype(np.int64),
                unit_persist=np.array(draw(st.lists(st.integers(0, 3), min_size=nu, max_size=nu)), float),
                out_bytes=np.array(draw(small), float), temp_bytes=np.array(draw(small), float),
                bw_inv=np.ascontiguousarray(link), lat=np.ascontiguousarray(link[::-1, ::-1] * (1 - np.eye(nd))),
                capacity=np.array(draw(st.lists(st.integers(2, 40), min_size=nd, max_size=nd)), float),
                prio=np.array(draw(small), float), noise=np.array(draw(st.permutations(range(n))), float),
                dev_noise=np.array([draw(st.permutations(range(nd))) for _ in range(n)], float).reshape(n, nd),
                memory_aware=draw(st.booleans()), fav=fav if draw(st.booleans()) else np.full(n, -1, np.int64))


@settings(max_examples=150, deadline=None)
@given(etf_cases())
def test_the_etf_kernel_picks_what_a_scan_of_every_ready_pair_picks(case):
    from etf_reference import etf_schedule

    g = CompGraph("t", [f"o{i}" for i in range(case["n"])], compute_any=np.ones(case["n"]),
                  edge_src=case["src"], edge_dst=case["dst"], edge_bytes=case["edge_bytes"])
    csr = (g.succ.ptr, g.succ.idx, g.succ.edge, g.pred.ptr, g.pred.idx, g.pred.edge, g.edge_bytes)
    args = (case["dur"], case["op_unit"], case["unit_dev0"], case["unit_persist"], case["out_bytes"],
            case["temp_bytes"], case["bw_inv"], case["lat"], case["capacity"], case["prio"], case["noise"],
            case["dev_noise"])
    nd = case["dur"].shape[1]
    plan = estimator.PlanInputs(  # work-conserving without contention: latency + bytes / bandwidth per edge
        hold=case["dur"], compute=case["dur"], edge_bytes=np.array(g.edge_bytes),
        edge_given=np.full(g.num_edges, np.nan),
        out_bytes=case["out_bytes"], out_untimed=np.ones(case["n"], bool), out_given=np.full(case["n"], -1.0),
        bw=np.divide(1.0, case["bw_inv"], out=np.full((nd, nd), np.inf), where=case["bw_inv"] > 0),
        latency=case["lat"], gap=0.0, send=estimator.SEND_EDGE,
        channel=estimator.CHANNEL_NONE, trailing=False, tie=estimator.TIE_OP)
    got = _k.list_schedule(_p.Topology(*csr[:6]), plan, _p.transfers(case["n"], g.num_edges, nd), case["op_unit"],
                           case["unit_dev0"], case["unit_persist"], case["out_bytes"], case["temp_bytes"],
                           case["capacity"], case["prio"], case["noise"].copy(), case["dev_noise"], _k.SELECT_ETF,
                           _k.DEVICE_EST, case["memory_aware"], case["fav"], np.full(nd, np.inf), case["out_bytes"],
                           False)[:3]
    want = etf_schedule(*csr, *args, case["memory_aware"], case["fav"])
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
