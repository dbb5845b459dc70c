"""Tests for the trivial placers (policies.trivial): single-device, cpu-only, random, round-robin.

Device indices: ``cpu+k80x2`` is [cpu:0, gpu:0, gpu:1]; ``k80x4`` is [gpu:0 .. gpu:3].
Every expected placement below is worked out by hand from the placer's rule.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest

from engine.cluster import Cluster, Device, Link
from engine.errors import PlacementError
from engine.graph.compgraph import CompGraph
from engine.graph.io import graph_from_dict
from engine.placement import check_placement
from engine.presets import PRESETS
from policies.registry import make_placer

CPU, GPU0, GPU1 = 0, 1, 2


def graph(ops: list[dict], edges: list[tuple[str, str]] = ()) -> CompGraph:
    return graph_from_dict({"schema": "placelab.graph/1", "name": "t", "ops": ops,
                            "edges": [{"src": s, "dst": d} for s, d in edges]})


def chain(ops: list[dict]) -> CompGraph:
    return graph(ops, [(a["name"], b["name"]) for a, b in pairwise(ops)])


def place(name: str, g: CompGraph, cluster: str | Cluster, seed: int = 0) -> np.ndarray:
    c = PRESETS[cluster]() if isinstance(cluster, str) else cluster
    p = make_placer(name).place(g, c, seed=seed)
    check_placement(g, c, p)  # independent check: kinds, pins and colocation honoured
    return p.devices


def independent(n: int, compute=1e-3) -> CompGraph:
    return CompGraph("flat", [f"o{i}" for i in range(n)], compute_any=np.full(n, compute))


MIXED = [
    {"name": "s0", "compute": 1.0},                       # runs anywhere
    {"name": "s1", "compute": {"gpu": 1.0, "cpu": 2.0}},  # runs anywhere
    {"name": "s2", "compute": {"cpu": 3.0}},              # no GPU kernel
    {"name": "s3", "compute": {"gpu": 1.0}},              # GPU only
]


# ---- single-device -------------------------------------------------------------------------


def test_single_device_first_gpu_and_cpu_fallback():
    # Mirhoseini §4.2: everything on the first GPU, ops without a GPU kernel on the CPU
    assert place("single-device", graph(MIXED), "cpu+k80x2").tolist() == [GPU0, GPU0, CPU, GPU0]


def test_single_device_gpu_only_cluster():
    assert place("single-device", graph(MIXED[:2] + MIXED[3:]), "k80x4").tolist() == [0, 0, 0]


def test_single_device_without_gpu_uses_first_device():
    cpus = Cluster("cpus", (Device("cpu:0", "cpu", 1e9), Device("cpu:1", "cpu", 1e9)), Link(1e9))
    assert place("single-device", graph(MIXED[:3]), cpus).tolist() == [0, 0, 0]


def test_pin_to_a_device_the_cluster_lacks_is_ignored():
    # pins naming another machine's device are ignored (engine.placement.Constraints)
    g = graph([{"name": "a", "compute": 1.0}, {"name": "b", "compute": 1.0, "device": "gpu:7"}])
    assert place("single-device", g, "k80x2").tolist() == [0, 0]


# ---- cpu-only --------------------------------------------------------------------------------


def test_cpu_only():
    assert place("cpu-only", graph(MIXED[:3]), "cpu+k80x2").tolist() == [CPU, CPU, CPU]


def test_cpu_only_without_cpu_device():
    with pytest.raises(PlacementError) as err:
        place("cpu-only", graph(MIXED[:1]), "k80x4")
    assert str(err.value) == "cluster 'k80x4' has no cpu device"


def test_cpu_only_gpu_only_op():
    with pytest.raises(PlacementError) as err:
        place("cpu-only", graph(MIXED), "cpu+k80x2")
    assert str(err.value) == "op 's3' cannot run on 'cpu:0'"


def test_cpu_only_pin_elsewhere():
    g = graph([{"name": "a", "compute": 1.0}, {"name": "p", "compute": 1.0, "device": "gpu:1"}])
    with pytest.raises(PlacementError, match="op 'p' cannot run on 'cpu:0'"):
        place("cpu-only", g, "cpu+k80x2")


# ---- random ----------------------------------------------------------------------------------


def test_random_is_seeded():
    g = independent(60)
    a, b = place("random", g, "k80x4", seed=11), place("random", g, "k80x4", seed=11)
    assert np.array_equal(a, b)
    # 60 ops on 4 devices: two seeds agree everywhere with probability 4^-60
    assert not np.array_equal(a, place("random", g, "k80x4", seed=12))
    assert np.array_equal(place("random", g, "k80x4"), place("random", g, "k80x4", seed=0))


def test_random_is_roughly_uniform():
    counts = np.bincount(place("random", independent(4000), "k80x4", seed=3), minlength=4)
    assert counts.sum() == 4000
    # expected 1000 per device, sd = sqrt(4000 · 1/4 · 3/4) ≈ 27: ±15% is > 5 sd
    assert np.all(np.abs(counts - 1000) <= 150), counts
    chi2 = float(((counts - 1000) ** 2 / 1000).sum())
    assert chi2 < 16.27, chi2  # 99.9% quantile of chi-square with 3 degrees of freedom


def test_random_only_feasible_devices():
    ops = [{"name": f"g{i}", "compute": {"gpu": 1.0}} for i in range(600)]
    ops += [{"name": f"c{i}", "compute": {"cpu": 1.0}} for i in range(300)]
    dev = place("random", graph(ops), "cpu+k80x2", seed=5)
    gpu_only, cpu_only = dev[:600], dev[600:]
    assert np.all(cpu_only == CPU)
    assert np.all(gpu_only != CPU)
    # uniform over the two GPUs: 300 expected each, sd = sqrt(600 / 4) ≈ 12
    assert abs(int(np.sum(gpu_only == GPU0)) - 300) <= 60


# ---- round-robin -----------------------------------------------------------------------------


def test_round_robin_deals_in_topological_order():
    # file order e, d, c, b, a with edges a -> b -> c -> d -> e: topological order is a, b, c, d, e
    # (indices 4, 3, 2, 1, 0), dealt to gpu:0, gpu:1, gpu:2, gpu:3, gpu:0
    names = ["e", "d", "c", "b", "a"]
    g = graph([{"name": n, "compute": 1.0} for n in names], [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e")])
    assert place("round-robin", g, "k80x4").tolist() == [0, 3, 2, 1, 0]  # by index e, d, c, b, a


def test_round_robin_skips_infeasible_devices():
    # chain o0 .. o4 on [cpu:0, gpu:0, gpu:1]; o1 and o3 are GPU-only.
    # o0 -> cpu:0; o1 -> gpu:0; o2 -> gpu:1; o3: turn is cpu:0, infeasible -> gpu:0; o4 -> gpu:1
    ops = [{"name": f"o{i}", "compute": {"gpu": 1.0} if i in (1, 3) else 1.0} for i in range(5)]
    assert place("round-robin", chain(ops), "cpu+k80x2").tolist() == [CPU, GPU0, GPU1, GPU0, GPU1]


def test_round_robin_balances_counts():
    counts = np.bincount(place("round-robin", independent(10), "k80x4"), minlength=4)
    assert counts.tolist() == [3, 3, 2, 2]  # 10 ops dealt to 4 devices


# ---- colocation groups and pins, for every placer ---------------------------------------------

# chain x0 -> x1 -> ... -> x9 on cpu+k80x2:
#   group g = {x0, x1}, x1 is GPU-only, so g goes to a GPU;
#   x2 is pinned to gpu:1; group h = {x3, x4} follows x4's pin to gpu:1.
CONSTRAINED = chain([
    {"name": "x0", "compute": 1.0, "colocate": "g"},
    {"name": "x1", "compute": {"gpu": 1.0}, "colocate": "g"},
    {"name": "x2", "compute": 1.0, "device": "gpu:1"},
    {"name": "x3", "compute": 1.0, "colocate": "h"},
    {"name": "x4", "compute": 1.0, "colocate": "h", "device": "gpu:1"},
    *({"name": f"x{i}", "compute": 1.0} for i in range(5, 10)),
])


@pytest.mark.parametrize(("placer", "seed"), [("single-device", 0), ("round-robin", 0),
                                              *(("random", s) for s in range(8))])
def test_placers_honour_groups_and_pins(placer, seed):
    dev = place(placer, CONSTRAINED, "cpu+k80x2", seed=seed)
    assert dev[0] == dev[1] != CPU  # one device for group g, a GPU because x1 needs one
    assert dev[2] == GPU1  # pinned
    assert dev[3] == dev[4] == GPU1  # group h follows its member's pin


def test_single_device_with_groups_and_pins():
    assert place("single-device", CONSTRAINED, "cpu+k80x2").tolist() == [GPU0, GPU0, GPU1, GPU1, GPU1,
                                                                         GPU0, GPU0, GPU0, GPU0, GPU0]


def test_round_robin_with_groups_and_pins():
    # units in topological order: g (turn cpu:0 infeasible -> gpu:0), x2 (gpu:1), h (turn
    # wraps to cpu:0, pinned -> gpu:1), then x5..x9 dealt cpu:0, gpu:0, gpu:1, cpu:0, gpu:0
    assert place("round-robin", CONSTRAINED, "cpu+k80x2").tolist() == [GPU0, GPU0, GPU1, GPU1, GPU1,
                                                                       CPU, GPU0, GPU1, CPU, GPU0]


def test_cpu_only_with_groups_and_pin_to_cpu():
    g = chain([{"name": "a", "compute": 1.0, "colocate": "g"}, {"name": "b", "compute": {"cpu": 2.0},
               "colocate": "g"}, {"name": "c", "compute": 1.0, "device": "cpu:0"}])
    assert place("cpu-only", g, "cpu+k80x2").tolist() == [CPU, CPU, CPU]


@pytest.mark.parametrize("placer", ["single-device", "random", "round-robin"])
def test_group_no_device_can_run(placer):
    g = graph([{"name": "x", "compute": {"gpu": 1.0}, "colocate": "g"},
               {"name": "y", "compute": {"cpu": 1.0}, "colocate": "g"}])
    with pytest.raises(PlacementError) as err:
        place(placer, g, "cpu+k80x2")
    assert str(err.value) == ("no device of cluster 'cpu+k80x2' can run op 'x' together with its "
                              "colocation group and pin")
