"""Per-GPU-model costs (``docs/reference/costs.md``): a roofline-costed graph carries a ``gpu@MODEL``
column per model, a device that names its model runs that column, and a graph whose source brings its
own times runs them on every preset. Expected times are worked out from the datasheet rooflines by hand
(``op_time`` of each model's spec), never read back from the simulator."""

from __future__ import annotations

import numpy as np
import pytest

from engine.cluster import Cluster, Device, Link, SimulationSettings
from engine.costmodel import DEVICE_SPECS, K80, P100, V100, GraphBuilder, RooflineModel, op_time
from engine.errors import ClusterError
from engine.graph.compgraph import CompGraph
from engine.graph.io import load_graph_json, save_graph
from engine.grouping.contract import contract
from engine.placement import compute_matrix
from engine.presets import PRESETS
from engine.sim.objectives import lower_bound
from engine.sim.simulator import Simulator
from engine.store.summary import cost_sources, device_columns, graph_summary

# (flops, bytes moved) of a compute-bound, a memory-bound and a balanced op
OPS = [(4e12, 1e6), (1e6, 3e9), (1e11, 4e8)]


def chain(basis=K80) -> tuple[CompGraph, list[tuple[float, float]]]:
    """A chain of the three ops; its edges carry no bytes, so a transfer is free of size."""
    b = GraphBuilder("chain", RooflineModel((basis,)))
    prev = None
    moved = []
    for i, (f, extra) in enumerate(OPS):
        prev = b.op(f"op{i}", "MatMul", flops=f, extra_bytes=extra, inputs=[] if prev is None else [(prev, 0.0)])
        moved.append((f, extra))
    return b.build(), moved


def by_hand(spec, moved) -> np.ndarray:
    return np.array([op_time(f, m, spec) for f, m in moved])


def test_every_preset_runs_its_own_gpus_roofline():
    g, moved = chain()
    for preset, model in (("k80x2", "K80"), ("cpu+k80x2", "K80"), ("p100x4", "P100"), ("v100x8", "V100"),
                          ("h100x8", "H100")):
        c = PRESETS[preset]()
        gpus = [j for j, d in enumerate(c.devices) if d.kind == "gpu"]
        np.testing.assert_allclose(compute_matrix(g, c)[:, gpus], np.column_stack(
            [by_hand(DEVICE_SPECS[model], moved)] * len(gpus)), rtol=1e-12)
        assert set(device_columns(g, c)[c.devices[j].name] for j in gpus) == {f"gpu@{model}"}


def test_single_device_chain_makespan_by_hand_on_k80x2_and_v100x8():
    g, moved = chain()
    k80, v100 = by_hand(K80, moved), by_hand(V100, moved)
    # k80x2 is Placeto's simulator: δ1 = 5.7 µs after every non-zero op; v100x8 work-conserving: none
    on_k80 = Simulator(g, PRESETS["k80x2"]()).run(np.zeros(3, int)).makespan
    on_v100 = Simulator(g, PRESETS["v100x8"]()).run(np.zeros(3, int)).makespan
    assert on_k80 == pytest.approx(k80.sum() + 3 * 5.7e-6, rel=1e-12)
    assert on_v100 == pytest.approx(v100.sum(), rel=1e-12)
    # the ratio lies between the two rooflines' ratios (compute-bound and memory-bound ops)
    ratio = (on_k80 - 3 * 5.7e-6) / on_v100
    assert V100.peak_flops / K80.peak_flops * 0.9 < ratio < V100.mem_bandwidth / K80.mem_bandwidth


def test_a_graph_built_for_the_p100_keeps_its_times_on_p100x4():
    """DOPPLER's generated graphs are costed on a P100 (DOPPLER §5): on p100x4 nothing moves."""
    g, moved = chain(basis=P100)
    c = PRESETS["p100x4"]()
    np.testing.assert_array_equal(compute_matrix(g, c)[:, 0], g.compute_for_kind("gpu"))
    np.testing.assert_allclose(g.compute_for_kind("gpu"), by_hand(P100, moved), rtol=1e-12)
    assert cost_sources(g) == {"gpu": "P100 roofline, with columns for K80, P100, V100, A100, H100"}


def test_a_source_with_its_own_times_runs_them_on_every_preset():
    g = CompGraph("own", ["a", "b"], compute_any=np.array([0.25, 0.5]), edge_src=[0], edge_dst=[1])
    for name in ("k80x2", "p100x4", "v100x8", "h100x8"):
        np.testing.assert_array_equal(compute_matrix(g, PRESETS[name]())[:, 0], [0.25, 0.5])
    assert cost_sources(g) == {"any": "one set of times, the same on every model"}
    per_kind = CompGraph("per-kind", ["a"], compute_any=np.array([np.nan]), compute_by_kind=np.array([[0.125]]),
                         kinds=("gpu",))
    assert compute_matrix(per_kind, PRESETS["v100x8"]())[0, 0] == 0.125


def test_a_device_naming_no_model_runs_the_kind_column_and_models_can_mix():
    g, moved = chain()
    c = Cluster("mixed", (Device("old", "gpu", 1e10, model="K80"), Device("new", "gpu", 1e10, model="V100"),
                          Device("plain", "gpu", 1e10, speed=2.0)), Link(1e9), (), SimulationSettings("default"))
    m = compute_matrix(g, c)
    np.testing.assert_allclose(m[:, 0], by_hand(K80, moved), rtol=1e-12)
    np.testing.assert_allclose(m[:, 1], by_hand(V100, moved), rtol=1e-12)
    np.testing.assert_allclose(m[:, 2], by_hand(K80, moved) / 2.0, rtol=1e-12)  # the K80 basis, at speed 2
    # the bound takes each op on its fastest device: the V100 for every op here (no transfer costs)
    assert lower_bound(g, c) == pytest.approx(by_hand(V100, moved).sum(), rel=1e-12)


def test_the_columns_survive_a_file_and_grouping(tmp_path):
    g, moved = chain()
    save_graph(g, tmp_path / "g.json")
    back = load_graph_json(tmp_path / "g.json")
    assert back.content_hash == g.content_hash and back.models("gpu") == g.models("gpu")
    grouped = contract(g, np.array([0, 0, 1])).graph
    v100 = by_hand(V100, moved)
    np.testing.assert_allclose(grouped.compute_on("gpu", "V100"), [v100[0] + v100[1], v100[2]], rtol=1e-12)


def test_graph_summary_names_the_costs_and_the_columns_a_cluster_runs():
    g, _ = chain()
    info = graph_summary(g, PRESETS["v100x8"]())
    assert info["costs"] == {"gpu": "K80 roofline, with columns for K80, P100, V100, A100, H100"}
    assert set(info["device_columns"].values()) == {"gpu@V100"}
    assert info["compute_by_kind_s"] == {"gpu": pytest.approx(g.compute_for_kind("gpu").sum())}


def test_a_graph_no_device_can_run_gets_one_message():
    """Issue #35: a graph measured on this machine's CPUs carries cpu times only; on a GPU preset its
    lower bound was NaN and compare blamed a colocation group. Now one message names both sides."""
    g = CompGraph("measured", ["a", "b"], compute_any=np.array([np.nan, np.nan]),
                  compute_by_kind=np.array([[1e-3], [2e-3]]), kinds=("cpu",), edge_src=[0], edge_dst=[1])
    message = ("2 ops of graph 'measured' (first 'a', with times for cpu) can run on no device of 'k80x2' (gpu): "
               "choose a cluster with a device of a kind the graph has times for")
    for call in (lambda c: compute_matrix(g, c), lambda c: lower_bound(g, c), lambda c: Simulator(g, c)):
        with pytest.raises(ClusterError) as err:
            call(PRESETS["k80x2"]())
        assert str(err.value).startswith(message)
    assert lower_bound(g, PRESETS["cpu+k80x2"]()) == pytest.approx(3e-3)


def test_without_models_is_the_graph_an_import_gave_before_per_model_columns():
    """Runs stored before per-model columns keep their graph hash: the graph without them hashes as it did."""
    b_new, b_old = (GraphBuilder("c", RooflineModel((K80,), models=m)) for m in (True, False))
    for b in (b_new, b_old):
        x = b.op("x", "MatMul", flops=1e9, out_bytes=4e6)
        b.op("y", "Relu", out_bytes=4e6, inputs=[x])
    new, old = b_new.build(), b_old.build()
    assert new.content_hash != old.content_hash
    assert new.without_models().content_hash == old.content_hash
    assert old.without_models() is old
