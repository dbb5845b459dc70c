"""Tests for the graph-partitioning placers (policies.partitioners): metis, kahip, scotch, mincut.

Device indices: ``cpu+k80x2`` is [cpu:0, gpu:0, gpu:1]; ``k80x2`` / ``k80x4`` are gpu:0 .. gpu:n-1.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.cluster import Cluster, Device, Link
from engine.errors import PlacementError, SpecError
from engine.generators import random_dag
from engine.graph.compgraph import CompGraph
from engine.graph.io import graph_from_dict
from engine.placement import check_placement
from engine.presets import PRESETS
from engine.sim.simulator import Simulator
from policies.base import PlacementUnits
from policies.partitioners import link_costs, unit_graph
from policies.registry import make_placer

PARTITIONERS = ["metis", "kahip", "scotch", "mincut"]
CPU, GPU0, GPU1 = 0, 1, 2
MB, GB = 1e6, 1e9


def graph(ops: list[dict], edges: list[tuple[str, str, float]] = ()) -> CompGraph:
    return graph_from_dict({"schema": "placelab.graph/1", "name": "t", "ops": ops,
                            "edges": [{"src": s, "dst": d, "bytes": b} for s, d, b in edges]})


def place(name: str, g: CompGraph, cluster: str | Cluster, seed: int = 0, **params) -> np.ndarray:
    c = PRESETS[cluster]() if isinstance(cluster, str) else cluster
    p = make_placer(name, **params).place(g, c, seed=seed)
    check_placement(g, c, p)  # independent check: kinds, pins and colocation honoured
    return p.devices


def cut_bytes(g: CompGraph, dev: np.ndarray) -> float:
    return float(g.edge_bytes[dev[g.edge_src] != dev[g.edge_dst]].sum())


def two_clusters(prefix_a: str = "a", prefix_b: str = "b") -> CompGraph:
    """Two 4-op cliques (every pair 1 MB) joined by one 1-byte edge a3 -> b0."""
    ops = [{"name": f"{p}{i}", "compute": 1e-3} for p in (prefix_a, prefix_b) for i in range(4)]
    edges = [(f"{p}{i}", f"{p}{j}", MB) for p in (prefix_a, prefix_b) for i in range(4) for j in range(i + 1, 4)]
    return graph(ops, [*edges, (f"{prefix_a}3", f"{prefix_b}0", 1.0)])


# ---- the obvious split ---------------------------------------------------------------------


@pytest.mark.parametrize("placer", PARTITIONERS)
def test_two_dense_clusters_split_at_the_light_edge(placer):
    g = two_clusters()
    dev = place(placer, g, "k80x2")
    # balance forces 4 + 4 (each op weighs the same); any other 4 + 4 split cuts >= 4 MB
    assert len(set(dev[:4].tolist())) == 1 and len(set(dev[4:].tolist())) == 1
    assert dev[0] != dev[4]
    assert cut_bytes(g, dev) == 1.0


@pytest.mark.parametrize("placer", ["metis", "kahip", "scotch"])
def test_mixed_cluster_cpu_gets_its_share(placer):
    # cpu+k80x2, every op runs anywhere at the same speed: three equal shares of 12 equal ops
    ops = [{"name": f"{p}{i}", "compute": 1e-3} for p in "abc" for i in range(4)]
    edges = [(f"{p}{i}", f"{p}{j}", MB) for p in "abc" for i in range(4) for j in range(i + 1, 4)]
    g = graph(ops, [*edges, ("a3", "b0", 1.0), ("b3", "c0", 1.0)])
    dev = place(placer, g, "cpu+k80x2")
    assert sorted(np.bincount(dev, minlength=3).tolist()) == [4, 4, 4]
    assert cut_bytes(g, dev) == 2.0


def test_mincut_leaves_the_cpu_out():
    # Mirhoseini §4.2 MinCut: only the GPUs are partitioned over
    dev = place("mincut", two_clusters(), "cpu+k80x2")
    assert sorted(dev.tolist()) == [GPU0] * 4 + [GPU1] * 4
    assert cut_bytes(two_clusters(), dev) == 1.0


def test_mincut_ops_without_gpu_kernel_run_on_the_cpu():
    ops = [{"name": "g0", "compute": {"gpu": 1.0, "cpu": 5.0}}, {"name": "c", "compute": {"cpu": 1.0}},
           {"name": "g1", "compute": {"gpu": 1.0}}]
    dev = place("mincut", graph(ops, [("g0", "c", 1.0), ("c", "g1", 1.0)]), "cpu+k80x2")
    assert dev[1] == CPU and dev[0] != CPU and dev[2] != CPU


def test_mincut_needs_a_gpu():
    cpus = Cluster("cpus", (Device("cpu:0", "cpu", GB), Device("cpu:1", "cpu", GB)), Link(1e9))
    with pytest.raises(PlacementError, match="partitions over GPUs, and cluster 'cpus' has none"):
        place("mincut", two_clusters(), cpus)


# ---- balance -------------------------------------------------------------------------------


@pytest.mark.parametrize("placer", PARTITIONERS)
@pytest.mark.parametrize("imbalance", [0.05, 0.2])
def test_balance_within_tolerance_on_random_graph(placer, imbalance):
    g = random_dag(2000, seed=7)
    dev = place(placer, g, "k80x4", seed=1, imbalance=imbalance)
    load = np.bincount(dev, weights=g.compute_any, minlength=4)
    bound = (1 + imbalance) * g.compute_any.sum() / 4 + g.compute_any.max()
    assert load.max() <= bound, (load, bound)
    assert (load > 0).all()


@pytest.mark.parametrize("placer", ["metis", "scotch"])
def test_faster_device_gets_proportionally_more_work(placer):
    # speeds 3 and 1: shares 3/4 and 1/4 of the work (within the 5% tolerance + one op)
    c = Cluster("het", (Device("fast", "gpu", 1e12, 3.0), Device("slow", "gpu", 1e12, 1.0)), Link(1e9))
    g = random_dag(1000, seed=2)
    load = np.bincount(place(placer, g, c), weights=g.compute_any, minlength=2) / g.compute_any.sum()
    assert abs(load[0] - 0.75) <= 0.05 * 0.75 + 0.01, load


def test_cut_is_far_below_random():
    # an independent yardstick: a random 4-way split of a chained DAG cuts ~3/4 of the bytes
    g = random_dag(2000, seed=3, window=5)
    total = g.edge_bytes.sum()
    for placer in PARTITIONERS:
        assert cut_bytes(g, place(placer, g, "k80x4")) < 0.2 * total, placer


# ---- seeds ---------------------------------------------------------------------------------


@pytest.mark.parametrize("placer", PARTITIONERS)
def test_deterministic_given_seed(placer):
    g = random_dag(800, seed=4)
    a, b = place(placer, g, "k80x4", seed=5), place(placer, g, "k80x4", seed=5)
    assert np.array_equal(a, b)
    assert np.array_equal(place(placer, g, "k80x4"), place(placer, g, "k80x4", seed=0))


@pytest.mark.parametrize("placer", ["metis", "kahip"])
def test_seed_changes_the_partition(placer):
    g = random_dag(800, seed=4)
    runs = {place(placer, g, "k80x4", seed=s).tobytes() for s in range(4)}
    assert len(runs) > 1


# ---- kinds, pins, colocation ---------------------------------------------------------------

# on cpu+k80x2: group g = {x0, x1} with x1 GPU-only; x2 pinned to gpu:1; group h = {x3, x4}
# follows x4's pin to gpu:1; x5 runs only on the CPU
CONSTRAINED = graph([
    {"name": "x0", "compute": 1.0, "colocate": "g"},
    {"name": "x1", "compute": {"gpu": 1.0}, "colocate": "g"},
    {"name": "x2", "compute": 1.0, "device": "gpu:1"},
    {"name": "x3", "compute": 1.0, "colocate": "h"},
    {"name": "x4", "compute": 1.0, "colocate": "h", "device": "gpu:1"},
    {"name": "x5", "compute": {"cpu": 1.0}},
    *({"name": f"x{i}", "compute": 1.0} for i in range(6, 12)),
], [(f"x{i}", f"x{i + 1}", MB) for i in range(11)])


@pytest.mark.parametrize("placer", PARTITIONERS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kinds_pins_and_colocation(placer, seed):
    dev = place(placer, CONSTRAINED, "cpu+k80x2", seed=seed)
    assert dev[0] == dev[1] != CPU
    assert dev[2] == GPU1
    assert dev[3] == dev[4] == GPU1
    assert dev[5] == CPU


def test_colocation_groups_are_contracted():
    g = CONSTRAINED
    c = PRESETS["cpu+k80x2"]()
    units = PlacementUnits(g, c)
    ug = unit_graph(units, np.arange(3))
    assert len(ug.vweight) == 10  # 12 ops, two groups of two
    # chain x0 -> ... -> x11 contracted: x0->x1 and x3->x4 are inside units, 9 unit edges left
    assert len(ug.adjncy) == 2 * 9
    assert ug.work[0] == 2.0  # group g: x0 + x1, 1 s each on a GPU
    assert (ug.eweight == ug.eweight[0]).all() and ug.eweight[0] == 10_000  # equal bytes, max scaled to 1e4


def test_pins_match_parts_to_devices():
    # two cliques, the b clique pinned to gpu:0 through one op: parts are relabelled, so no op moves
    g = graph([*({"name": f"a{i}", "compute": 1e-3} for i in range(4)),
               {"name": "b0", "compute": 1e-3, "device": "gpu:0"},
               *({"name": f"b{i}", "compute": 1e-3} for i in range(1, 4))],
              [*((f"{p}{i}", f"{p}{j}", MB) for p in "ab" for i in range(4) for j in range(i + 1, 4)),
               ("a3", "b0", 1.0)])
    for placer in ("metis", "kahip"):
        assert place(placer, g, "k80x2").tolist() == [1, 1, 1, 1, 0, 0, 0, 0], placer


# ---- memory --------------------------------------------------------------------------------


def memory_graph() -> CompGraph:
    # chain m0 -> ... -> m7, 2.5 GB of weights each (20 GB: more than one 11 GB K80, fits two).
    # m0 carries 7 s of compute, the others 1 s: a compute-balanced split is {m0} | {m1..m7},
    # 17.5 GB on one device.
    ops = [{"name": f"m{i}", "compute": 7.0 if i == 0 else 1.0, "persistent_bytes": 2.5 * GB,
            "output_bytes": 1000} for i in range(8)]
    return graph(ops, [(f"m{i}", f"m{i + 1}", 1000) for i in range(7)])


@pytest.mark.parametrize("placer", PARTITIONERS)
def test_memory_post_pass_removes_oom(placer):
    g, c = memory_graph(), PRESETS["k80x2"]()
    raw = place(placer, g, c, memory_aware=False)
    assert Simulator(g, c).run(raw).any_oom  # the balanced split does not fit ...
    dev = place(placer, g, c)
    sched = Simulator(g, c).run(dev)
    assert not sched.any_oom  # ... the post-pass moves weights until it does
    assert sorted(np.bincount(dev, minlength=2).tolist()) == [4, 4]  # 10 GB each: the only fit


def test_memory_post_pass_respects_pins():
    # the same graph with m1..m7 pinned to gpu:0: nothing can move, the OOM stays (reported)
    g0 = memory_graph()
    ops = [{"name": f"m{i}", "compute": float(g0.compute_any[i]), "persistent_bytes": 2.5 * GB,
            **({"device": "gpu:0"} if i else {})} for i in range(8)]
    g = graph(ops, [(f"m{i}", f"m{i + 1}", 1000) for i in range(7)])
    dev = place("metis", g, "k80x2")
    assert dev[1:].tolist() == [0] * 7
    assert Simulator(g, PRESETS["k80x2"]()).run(dev).any_oom


# ---- Scotch target architecture ------------------------------------------------------------


def test_link_costs_from_bandwidth():
    # v100x8: NVLink 25 GB/s -> cost 10; PCIe 10 GB/s -> 10 * 25 / 10 = 25
    c = PRESETS["v100x8"]()
    cost = link_costs(c, np.arange(8))
    assert cost[0, 1] == cost[0, 4] == cost[5, 6] == 10
    assert cost[0, 5] == cost[3, 4] == 25
    assert (link_costs(PRESETS["k80x4"](), np.arange(4))[~np.eye(4, dtype=bool)] == 10).all()


def pairs_cluster(pairs: tuple[tuple[int, int], ...]) -> Cluster:
    """Four GPUs on 1 GB/s links, except 100 GB/s "NVLink" between each of ``pairs``."""
    devs = tuple(Device(f"gpu:{i}", "gpu", 1e12) for i in range(4))
    return Cluster("pairs", devs, Link(1e9), tuple((f"gpu:{a}", f"gpu:{b}", Link(1e11)) for a, b in pairs))


@pytest.mark.parametrize("pairs", [((0, 1), (2, 3)), ((0, 2), (1, 3)), ((0, 3), (1, 2))])
@pytest.mark.parametrize("placer", ["scotch", "mincut"])
def test_scotch_keeps_heavy_traffic_on_fast_links(placer, pairs):
    # four 4-op cliques: a-b exchange 10 MB, c-d 10 MB, b-c 1 byte. Every balanced mapping puts
    # one clique per device; the cheapest puts a, b on one NVLink pair and c, d on the other.
    ops = [{"name": f"{p}{i}", "compute": 1e-3} for p in "abcd" for i in range(4)]
    edges = [(f"{p}{i}", f"{p}{j}", 100 * MB) for p in "abcd" for i in range(4) for j in range(i + 1, 4)]
    g = graph(ops, [*edges, ("a3", "b0", 10 * MB), ("c3", "d0", 10 * MB), ("b3", "c0", 1.0)])
    for seed in range(3):
        dev = place(placer, g, pairs_cluster(pairs), seed=seed)[::4]  # device of each clique
        assert sorted(dev.tolist()) == [0, 1, 2, 3]
        assert {tuple(sorted(dev[:2].tolist())), tuple(sorted(dev[2:].tolist()))} == set(pairs)


def test_bad_parameters():
    with pytest.raises(SpecError, match="imbalance must be in"):
        make_placer("metis", imbalance=-0.1)
    with pytest.raises(SpecError, match="mode must be one of fast, eco, strong"):
        make_placer("kahip", mode="best")


@pytest.mark.parametrize("placer", PARTITIONERS)
def test_tiny_graphs(placer):
    one = graph([{"name": "a", "compute": 1.0}])
    assert place(placer, one, "k80x4").tolist() == [0]
    two = graph([{"name": "a", "compute": 1.0}, {"name": "b", "compute": 1.0}])  # no edges, 2 units, 4 GPUs
    assert sorted(place(placer, two, "k80x4").tolist()) in ([0, 1], [0, 0], [1, 1])


def test_scotch_labels_on_identical_devices_follow_first_appearance():
    from policies.partitioners import _first_appearance_labels

    np.testing.assert_array_equal(_first_appearance_labels(np.array([2, 2, 0, 3, 0])), [0, 0, 1, 2, 1])
    np.testing.assert_array_equal(_first_appearance_labels(np.array([1, 1])), [0, 0])
