"""Tests for engine.importers.dnn_partitioning (Tarnawski et al. 2020 workloads)."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.errors import GraphError, PlacementError
from engine.importers.dnn_partitioning import (
    CPU_MEMORY_BYTES,
    LATENCY_UNIT_S,
    REFERENCE_BANDWIDTH,
    dnn_partitioning_cluster,
    graph_from_dnn_partitioning,
    load_dnn_partitioning,
    load_expert_placement,
)
from engine.sim.simulator import simulate
from engine.specs import detect_format, load_graph

# the copy shipped in the repository (engine/workloads/published.py), found relative to this file
DATA = Path(__file__).resolve().parents[2] / "engine" / "workloads" / "data" / "dnn_partitioning"
WORKLOADS = sorted(p for p in DATA.glob("*-inputs/**/*.json"))
EXPERTS = DATA / "human-experts"


def raw(path: Path) -> dict:
    return json.loads(path.read_text())


def tiny() -> dict:
    """Three nodes by hand: 1 -> 2 -> 3 and 1 -> 3; node 3 only runs on the CPU."""
    return {
        "maxSizePerFPGA": 1000.0, "maxFPGAs": 2, "maxCPUs": 1,
        "nodes": [
            {"id": 1, "name": "a", "supportedOnFpga": 1, "cpuLatency": 10.0, "fpgaLatency": 1.0,
             "isBackwardNode": False, "colorClass": 7, "size": 100.0},
            {"id": 2, "supportedOnFpga": True, "cpuLatency": 20.0, "fpgaLatency": 2.0,
             "isBackwardNode": 1, "colorClass": 7, "size": 0},
            {"id": 3, "supportedOnFpga": 0, "cpuLatency": 30.0, "fpgaLatency": 3.0,
             "isBackwardNode": 0, "colorClass": 9},
        ],
        "edges": [{"sourceId": 1, "destId": 2, "cost": 0.5}, {"sourceId": 1, "destId": 3, "cost": 0.5},
                  {"sourceId": 2, "destId": 3, "cost": 2.0}],
    }


def error(doc) -> str:
    with pytest.raises(GraphError) as info:
        graph_from_dnn_partitioning(doc, source="t.json")
    msg = str(info.value)
    assert msg and "\n" not in msg
    return msg


def test_tiny_document_maps_fields_and_units():
    g = graph_from_dnn_partitioning(tiny(), source="tiny.json")
    assert g.name == "tiny" and g.op_names == ("1", "2", "3") and g.kinds == ("gpu", "cpu")
    assert g.compute_for_kind("gpu")[:2].tolist() == [1e-3, 2e-3]
    assert math.isnan(g.compute_for_kind("gpu")[2])  # not supportedOnFpga: no gpu time
    assert g.compute_for_kind("cpu").tolist() == [10e-3, 20e-3, 30e-3]
    assert g.persistent_bytes.tolist() == [100.0, 0.0, 0.0]
    assert g.phase == ("forward", "backward", "forward")
    assert g.colocate == ("color7", "color7", None)  # class 9 has one node: no group
    assert g.scope == ("a", "", "")
    # 0.5 ms at 2 GiB/s = 2^31 * 5e-4 bytes; 2 ms = 2^31 * 2e-3
    by_edge = {(g.op_names[s], g.op_names[d]): b for s, d, b in zip(g.edge_src, g.edge_dst, g.edge_bytes, strict=True)}
    assert by_edge == {("1", "2"): 2**31 * 5e-4, ("1", "3"): 2**31 * 5e-4, ("2", "3"): 2**31 * 2e-3}
    assert g.output_bytes.tolist() == [2**31 * 5e-4, 2**31 * 2e-3, 0.0]
    assert REFERENCE_BANDWIDTH == 2**31 and LATENCY_UNIT_S == 1e-3


def test_transfer_time_equals_the_files_cost():
    g = graph_from_dnn_partitioning(tiny())
    c = dnn_partitioning_cluster(tiny())
    # 1 and 2 on gpu:0, 3 on cpu:0 (the only kind it runs on): 2 -> 3 crosses, 2 ms
    devs = np.array([0, 0, c.index["cpu:0"]])
    s = simulate(g, c, devs)
    # by hand: 1 runs [0,1ms], 2 runs [1,3ms]; 1's output reaches cpu at 1 + 0.5 = 1.5 ms,
    # 2's at 3 + 2 = 5 ms; 3 runs [5, 35] ms
    assert s.makespan == pytest.approx(35e-3, rel=1e-12)


def test_cluster_builder():
    c = dnn_partitioning_cluster(tiny())
    assert [d.name for d in c.devices] == ["gpu:0", "gpu:1", "cpu:0"]
    assert [d.kind for d in c.devices] == ["gpu", "gpu", "cpu"]
    assert c.memory.tolist() == [1000.0, 1000.0, CPU_MEMORY_BYTES]
    assert c.link.bandwidth_bytes_per_s == REFERENCE_BANDWIDTH and c.link.latency_s == 0
    assert c.simulation.mode == "default" and c.simulation.op_overhead_s == 0 and c.simulation.transfer_gap_s == 0
    assert dnn_partitioning_cluster(tiny(), accelerators=6, cpus=0).num_devices == 6


@pytest.mark.parametrize("path", WORKLOADS, ids=lambda p: p.name)
def test_every_bundled_workload_imports_with_the_files_counts(path):
    doc = raw(path)
    g = load_graph(path)
    assert detect_format(path).name == "dnn-partitioning"
    assert g.num_ops == len(doc["nodes"])
    assert g.num_edges == len({(e["sourceId"], e["destId"]) for e in doc["edges"]}) == len(doc["edges"])
    assert sorted(g.op_names) == sorted(str(n["id"]) for n in doc["nodes"])
    assert int((np.asarray(g.phase) == "backward").sum()) == sum(bool(n["isBackwardNode"]) for n in doc["nodes"])
    assert g.persistent_bytes.sum() == pytest.approx(sum(n["size"] for n in doc["nodes"]), rel=1e-12)


def test_the_bundled_data_has_the_expected_files():
    assert "MIT License" in (DATA / "LICENSE.txt").read_text()
    names = {p.relative_to(DATA).as_posix() for p in WORKLOADS}
    assert len(names) == 9
    assert {"latency-inputs/OperatorGraphs/bert_l-3_inference.json",
            "throughput-inputs/LayerGraphs/resnet50_training.json"} <= names


@pytest.mark.parametrize("path", WORKLOADS, ids=lambda p: p.name)
def test_one_accelerator_makespan_is_the_sum_of_accelerator_latencies(path):
    doc = raw(path)
    assert all(n["supportedOnFpga"] for n in doc["nodes"])  # every op can run on gpu:0
    g = load_dnn_partitioning(path)
    c = dnn_partitioning_cluster(path)
    s = simulate(g, c, np.zeros(g.num_ops, dtype=np.int64))
    expected = math.fsum(n["fpgaLatency"] for n in doc["nodes"]) * 1e-3
    assert s.makespan == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(("expert", "workload"), [
    ("bert24_inference", "latency-inputs/LayerGraphs/bert24_inference.json"),
    ("gnmt_inference", "latency-inputs/LayerGraphs/gnmt_inference.json"),
    ("inceptionv3_inference", "latency-inputs/LayerGraphs/inceptionv3_inference.json"),
    ("resnet50_inference", "latency-inputs/LayerGraphs/resnet50_inference.json"),
    ("bert24_training", "throughput-inputs/LayerGraphs/bert24_training.json"),
    ("gnmt_training", "throughput-inputs/LayerGraphs/gnmt_training.json"),
    ("inceptionv3_inference", "throughput-inputs/LayerGraphs/inceptionv3_training.json"),
    ("resnet50_inference", "throughput-inputs/LayerGraphs/resnet50_training.json"),
])
def test_expert_splits_load_and_backward_nodes_follow_forward_nodes(expert, workload):
    split = raw(EXPERTS / f"{expert}_expert.json")
    doc = raw(DATA / workload)
    g = load_dnn_partitioning(DATA / workload)
    c = dnn_partitioning_cluster(DATA / workload, accelerators=max(doc["maxFPGAs"], len(split["fpgas"])))
    p = load_expert_placement(EXPERTS / f"{expert}_expert.json", g, c)
    names = [d.name for d in c.devices]
    listed = {nid: f"gpu:{i}" for i, part in enumerate(split["fpgas"]) for nid in part["nodes"]}
    listed |= {nid: f"cpu:{i}" for i, part in enumerate(split["cpus"]) for nid in part["nodes"]}
    forward_of_class = {n["colorClass"]: n["id"] for n in doc["nodes"] if not n["isBackwardNode"]}
    for n in doc["nodes"]:
        got = names[p.devices[g.index[str(n["id"])]]]
        want = listed.get(n["id"]) or listed[forward_of_class[n["colorClass"]]]
        assert got == want, n["id"]


def test_expert_split_needing_more_accelerators_than_the_cluster_is_rejected():
    path = DATA / "latency-inputs/LayerGraphs/bert24_inference.json"
    g = load_dnn_partitioning(path)
    with pytest.raises(PlacementError, match="gpu:5"):
        load_expert_placement(EXPERTS / "bert24_inference_expert.json", g, dnn_partitioning_cluster(path))


def test_expert_split_errors(tmp_path):
    g = graph_from_dnn_partitioning(tiny())
    c = dnn_partitioning_cluster(tiny())
    f = tmp_path / "s.json"
    for split, pattern in [({"fpgas": [{"nodes": [1, 99]}]}, "node 99"),
                           ({"fpgas": [{"nodes": [1]}, {"nodes": [1]}]}, "both"),
                           ({"fpgas": [{"nodes": [1]}]}, "does not place op '3'"),
                           ({"fpgas": "x"}, "'fpgas' must be a list"),
                           ({"fpgas": [{"nodes": [1, 3]}]}, "cannot run")]:
        f.write_text(json.dumps(split))
        with pytest.raises(PlacementError, match=pattern) as info:
            load_expert_placement(f, g, c)
        assert "\n" not in str(info.value)
    f.write_text(json.dumps({"fpgas": [{"nodes": [1]}], "cpus": [{"nodes": [3]}]}))
    p = load_expert_placement(f, g, c)
    assert p.devices.tolist() == [0, 0, 2]  # node 2 follows node 1 (same colorClass)


@pytest.mark.parametrize(("mutate", "pattern"), [
    (lambda d: d.pop("nodes"), "'nodes' must be a non-empty list"),
    (lambda d: d["nodes"][1].update(id=1), "duplicate node id 1"),
    (lambda d: d["nodes"][0].update(id="1"), "integer 'id'"),
    (lambda d: d["nodes"][0].pop("cpuLatency"), "node 1 has no 'cpuLatency'"),
    (lambda d: d["nodes"][0].update(fpgaLatency="fast"), "'fpgaLatency' must be a number"),
    (lambda d: d["nodes"][0].update(fpgaLatency=-1), "compute on 'gpu' must be a finite number >= 0"),
    (lambda d: d["nodes"][0].update(supportedOnFpga=2), "'supportedOnFpga' must be true/false"),
    (lambda d: d["nodes"][0].update(colorClass=1.5), "'colorClass' must be an integer"),
    (lambda d: d["edges"][0].update(destId=42), "edge 1 -> 42 refers to unknown node id 42"),
    (lambda d: d["edges"][0].update(cost=None), "edge 1 -> 2 has no 'cost'"),
    (lambda d: d["edges"].append({"sourceId": 3, "destId": 1, "cost": 0}), "cycle"),
    (lambda d: d.update(edges={}), "'edges' must be a list"),
])
def test_malformed_documents_name_the_problem(mutate, pattern):
    doc = tiny()
    mutate(doc)
    assert pattern in error(doc)


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-5, 10**20) | st.floats() | st.text(max_size=5),
                           lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
                           max_leaves=6)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_corruption_raises_graph_error_or_builds_a_graph(data):
    doc = tiny()
    for _ in range(data.draw(st.integers(1, 3))):
        where = data.draw(st.sampled_from(["node", "edge", "top"]))
        items = doc.get({"node": "nodes", "edge": "edges"}.get(where, ""))
        target = data.draw(st.sampled_from(items)) if isinstance(items, list) and items else doc
        if not isinstance(target, dict):
            continue
        key = data.draw(st.sampled_from([*sorted(target), "id", "sourceId", "cost"]))
        if data.draw(st.booleans()):
            target.pop(key, None)
        else:
            target[key] = data.draw(JSON_VALUES)
    try:
        g = graph_from_dnn_partitioning(copy.deepcopy(doc))
    except GraphError as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        assert g.num_ops == len(doc["nodes"])


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 400))
def test_truncated_files_raise_graph_error(tmp_path_factory, cut):
    text = json.dumps(tiny())[:cut]
    f = tmp_path_factory.mktemp("t") / "w.json"
    f.write_text(text)
    with pytest.raises(GraphError) as info:
        load_dnn_partitioning(f)
    assert "\n" not in str(info.value)


def test_a_workload_file_is_its_own_cluster_file(tmp_path):
    """Issue #35: `-c FILE` refused a dnn-partitioning file ("expected schema"); it now names the machine the
    file describes: maxFPGAs accelerators of maxSizePerFPGA bytes and maxCPUs CPUs."""
    from engine.specs import load_cluster

    path = DATA / "latency-inputs" / "LayerGraphs" / "bert24_inference.json"
    doc = json.loads(path.read_text())
    c = load_cluster(path)
    assert c == dnn_partitioning_cluster(doc)
    assert [d.kind for d in c.devices].count("gpu") == doc["maxFPGAs"]
    assert [d.kind for d in c.devices].count("cpu") == doc["maxCPUs"]
    assert c.devices[0].memory_bytes == doc["maxSizePerFPGA"]
