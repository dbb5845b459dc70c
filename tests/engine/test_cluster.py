"""Tests for engine.cluster (placelab.cluster/1) and engine.presets."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest

from engine.cluster import (
    CLUSTER_SCHEMA,
    SIMULATION_MODES,
    Cluster,
    Device,
    Link,
    SimulationSettings,
    cluster_from_dict,
    cluster_to_dict,
    save_cluster,
)
from engine.errors import ClusterError
from engine.presets import PRESETS, preset_descriptions
from engine.specs import load_cluster
from tests.clusters import uniform_cluster

GB = 1e9
CONTRACT_PRESETS = ["k80x2", "k80x4", "cpu+k80x2", "cpu+k80x4", "p100x4", "v100x8", "h100x8"]


def two_gpus() -> dict:
    """The CONTRACTS §2 example."""
    return {
        "schema": CLUSTER_SCHEMA,
        "name": "k80x2",
        "devices": [
            {"name": "gpu:0", "kind": "gpu", "memory_bytes": 11.0e9, "speed": 1.0, "model": "K80"},
            {"name": "gpu:1", "kind": "gpu", "memory_bytes": 11.0e9, "speed": 1.0, "model": "K80"},
        ],
        "link": {"bandwidth_bytes_per_s": 7.6e9, "latency_s": 0.0},
        "links": [],
        "simulation": {"mode": "placeto", "op_overhead_s": 5.7e-6, "transfer_gap_s": 25e-6},
    }


def cluster_error(doc, **kw) -> str:
    with pytest.raises(ClusterError) as info:
        cluster_from_dict(doc, **kw)
    msg = str(info.value)
    assert "\n" not in msg and msg
    return msg


# ---- presets -----------------------------------------------------------------------------


def test_contract_presets_are_registered_and_described():
    assert set(CONTRACT_PRESETS) <= set(PRESETS)
    desc = preset_descriptions()
    assert set(desc) == set(PRESETS)
    for name in PRESETS:
        assert desc[name] and "\n" not in desc[name]


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_builds_with_symmetric_matrices(name):
    c = load_cluster(name)
    assert c.name == name and c.num_devices >= 1
    bw, lat = c.bandwidth, c.latency
    assert bw.shape == lat.shape == (c.num_devices, c.num_devices)
    np.testing.assert_array_equal(bw, bw.T)
    np.testing.assert_array_equal(lat, lat.T)
    assert np.isinf(np.diag(bw)).all() and (np.diag(lat) == 0).all()
    off = ~np.eye(c.num_devices, dtype=bool)
    assert (bw[off] > 0).all() and np.isfinite(bw[off]).all()
    assert c.simulation.mode in SIMULATION_MODES
    assert (c.speed == 1.0).all()


@pytest.mark.parametrize(("name", "n"), [("k80x2", 2), ("k80x4", 4)])
def test_k80_presets_are_placetos_machine(name, n):
    c = load_cluster(name)
    assert [d.name for d in c.devices] == [f"gpu:{i}" for i in range(n)]
    assert c.kinds == ("gpu",) * n
    assert c.memory.tolist() == [11.0e9] * n
    assert c.link == Link(7.6e9, 0.0) and c.links == ()
    assert c.simulation == SimulationSettings("placeto", op_overhead_s=5.7e-6, transfer_gap_s=25e-6)
    assert c.describe() == f"{n}×gpu; 11–11 GB; 7.6 GB/s default link; placeto mode"


@pytest.mark.parametrize(("name", "n"), [("cpu+k80x2", 2), ("cpu+k80x4", 4)])
def test_cpu_plus_k80_presets(name, n):
    c = load_cluster(name)
    assert [d.name for d in c.devices] == ["cpu:0", *(f"gpu:{i}" for i in range(n))]
    assert c.kinds == ("cpu", *("gpu",) * n)
    assert c.memory.tolist() == [50.0e9, *[11.0e9] * n]
    assert (c.bandwidth[~np.eye(n + 1, dtype=bool)] == 7.6e9).all()
    assert c.simulation.mode == "default"
    assert c.first_of_kind("cpu") == 0 and c.first_of_kind("gpu") == 1 and c.first_of_kind("tpu") is None
    assert c.describe() == f"1×cpu, {n}×gpu; 11–50 GB; 7.6 GB/s default link; default mode"


def test_p100x4_is_nvlink_all_to_all():
    c = load_cluster("p100x4")
    assert c.num_devices == 4 and c.memory.tolist() == [16.0e9] * 4
    assert (c.bandwidth[~np.eye(4, dtype=bool)] == 20.0e9).all()
    assert (c.latency[~np.eye(4, dtype=bool)] == 5e-6).all()


def test_v100x8_has_two_nvlink_groups_and_four_cross_links():
    c = load_cluster("v100x8")
    assert c.num_devices == 8 and c.memory.tolist() == [32.0e9] * 8
    bw, lat = c.bandwidth, c.latency
    assert bw[0, 1] == 25.0e9 and bw[0, 4] == 25.0e9 and bw[0, 5] == 10.0e9
    assert bw[5, 0] == 10.0e9 and bw[3, 7] == 25.0e9 and bw[6, 7] == 25.0e9 and bw[1, 6] == 10.0e9
    for i in range(8):
        for j in range(8):
            if i != j:
                nvlink = (i < 4) == (j < 4) or abs(i - j) == 4
                assert bw[i, j] == (25.0e9 if nvlink else 10.0e9), (i, j)
                assert lat[i, j] == (5e-6 if nvlink else 10e-6), (i, j)
    # 6 pairs inside each group + 4 cross links
    assert len(c.links) == 16
    assert int((bw == 25.0e9).sum()) == 2 * 16


def test_h100x8():
    c = load_cluster("h100x8")
    assert c.num_devices == 8 and c.memory.tolist() == [80.0e9] * 8
    assert (c.bandwidth[~np.eye(8, dtype=bool)] == 450.0e9).all()


def test_presets_are_fresh_objects():
    assert load_cluster("k80x2") == load_cluster("k80x2")
    assert load_cluster("k80x2") is not load_cluster("k80x2")


# ---- views -------------------------------------------------------------------------------


def test_device_index_and_its_error():
    c = load_cluster("k80x2")
    assert c.device_index("gpu:1") == 1 and c.index == {"gpu:0": 0, "gpu:1": 1}
    with pytest.raises(ClusterError) as info:
        c.device_index("gpu:9")
    assert str(info.value) == "cluster 'k80x2' has no device 'gpu:9' (devices: gpu:0, gpu:1)"


def test_matrices_are_read_only():
    c = load_cluster("v100x8")
    with pytest.raises(ValueError):
        c.bandwidth[0, 1] = 1.0
    with pytest.raises(ValueError):
        c.latency[0, 1] = 1.0


def test_per_pair_override_and_speed():
    c = uniform_cluster("u", [Device("a", "gpu", 1e9, 2.0), Device("b", "cpu", 4e9, 0.5),
                              Device("c", "gpu", 2e9)], 1e9, mode="placeto", op_overhead_s=1e-6)
    assert c.speed.tolist() == [2.0, 0.5, 1.0]
    assert c.simulation == SimulationSettings("placeto", 1e-6, 0.0)
    d = Cluster("o", c.devices, Link(1e9, 1e-3), (("c", "a", Link(5e9, 2e-3)),))
    assert d.bandwidth.tolist() == [[math.inf, 1e9, 5e9], [1e9, math.inf, 1e9], [5e9, 1e9, math.inf]]
    assert d.latency.tolist() == [[0.0, 1e-3, 2e-3], [1e-3, 0.0, 1e-3], [2e-3, 1e-3, 0.0]]
    assert d.describe() == "2×gpu, 1×cpu; 1–4 GB; 1 GB/s default link; default mode"


# ---- files -------------------------------------------------------------------------------


def test_contract_example_parses():
    c = cluster_from_dict(two_gpus())
    assert c == Cluster("k80x2", (Device("gpu:0", "gpu", 11e9, model="K80"), Device("gpu:1", "gpu", 11e9, model="K80")),
                        Link(7.6e9), (),
                        SimulationSettings("placeto", 5.7e-6, 25e-6))
    # the preset has the same devices, links and settings (plus a description)
    preset = load_cluster("k80x2")
    assert (preset.devices, preset.link, preset.links, preset.simulation) == (
        c.devices, c.link, c.links, c.simulation)


def test_defaults_when_optional_fields_are_missing():
    c = cluster_from_dict({"schema": CLUSTER_SCHEMA, "devices": [{"name": "d", "kind": "cpu", "memory_bytes": 5}],
                           "link": {"bandwidth_bytes_per_s": 3}}, source="f.json")
    assert c.name == "f.json" and c.devices == (Device("d", "cpu", 5, 1.0),)
    assert c.link == Link(3, 0.0) and c.links == () and c.simulation == SimulationSettings()
    assert c.description == ""


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_dict_round_trip_of_every_preset(name):
    c = load_cluster(name)
    d = cluster_to_dict(c)
    assert d["schema"] == CLUSTER_SCHEMA and d["name"] == name
    back = cluster_from_dict(json.loads(json.dumps(d)))
    assert back == c
    np.testing.assert_array_equal(back.bandwidth, c.bandwidth)
    np.testing.assert_array_equal(back.latency, c.latency)


def test_save_and_load_file(tmp_path):
    c = load_cluster("v100x8")
    path = tmp_path / "mine.json"
    save_cluster(c, path)
    assert load_cluster(path) == c
    assert load_cluster(str(path)) == c
    assert json.loads(path.read_text())["links"][0] == {
        "between": ["gpu:0", "gpu:1"], "bandwidth_bytes_per_s": 25e9, "latency_s": 5e-6}


def test_unknown_cluster_and_bad_files(tmp_path):
    with pytest.raises(ClusterError) as info:
        load_cluster(tmp_path / "nope")
    msg = str(info.value)
    assert msg.startswith(f"unknown cluster '{tmp_path / 'nope'}': not a preset (") and msg.endswith(") nor a file")
    assert all(p in msg for p in CONTRACT_PRESETS)
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": ')
    with pytest.raises(ClusterError, match=r"bad\.json is not valid JSON \(line 1, column 12: "):
        load_cluster(bad)
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({**two_gpus(), "schema": "placelab.graph/1"}))
    with pytest.raises(ClusterError) as info:
        load_cluster(wrong)
    assert str(info.value) == "wrong.json: expected schema 'placelab.cluster/1', found schema 'placelab.graph/1'"


# ---- malformed documents -----------------------------------------------------------------


def mutate(path: str, value) -> dict:
    """two_gpus() with one field set (value _DEL deletes it); path like 'devices.0.memory_bytes'."""
    doc = copy.deepcopy(two_gpus())
    *parents, last = path.split(".")
    node = doc
    for p in parents:
        node = node[int(p)] if isinstance(node, list) else node[p]
    if value is _DEL:
        del node[last]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return doc


_DEL = object()
CM = "placeto, default, work_conserving"


@pytest.mark.parametrize(("doc", "message"), [
    ("x", "cluster: expected a JSON object with schema 'placelab.cluster/1'"),
    (mutate("schema", _DEL), "cluster: expected schema 'placelab.cluster/1', found no 'schema' field"),
    (mutate("schema", "placelab.cluster/2"),
     "cluster: expected schema 'placelab.cluster/1', found schema 'placelab.cluster/2'"),
    (mutate("devices", []), "cluster: 'devices' must be a non-empty list"),
    (mutate("devices", {"gpu:0": {}}), "cluster: 'devices' must be a non-empty list"),
    (mutate("devices.1", "gpu:1"), "cluster: device #1 needs string 'name' and 'kind'"),
    (mutate("devices.1.name", _DEL), "cluster: device #1 needs string 'name' and 'kind'"),
    (mutate("devices.1.kind", 3), "cluster: device #1 needs string 'name' and 'kind'"),
    (mutate("devices.1.kind", ""), "device 'gpu:1': kind must be a non-empty string without '@'"),
    (mutate("devices.1.kind", "gpu@V100"), "device 'gpu:1': kind must be a non-empty string without '@'"),
    (mutate("devices.1.model", "V200"), "device 'gpu:1': unknown gpu model 'V200'; one of K80, P100, V100, A100, "
     "H100, or no 'model' to run the graph's 'gpu' times as they are"),
    (mutate("devices.1.kind", "cpu"), "device 'gpu:1': a cpu device names no model (graphs carry per-model times "
     "for gpu devices only)"),
    (mutate("devices.1.model", 100), "device 'gpu:1': 'model' must be a string such as \"V100\""),
    (mutate("devices.1.name", ""), "cluster 'k80x2': duplicate or empty device name ''"),
    (mutate("devices.1.name", "gpu:0"), "cluster 'k80x2': duplicate or empty device name 'gpu:0'"),
    (mutate("devices.0.memory_bytes", _DEL), "device 'gpu:0' needs 'memory_bytes'"),
    (mutate("devices.0.memory_bytes", 0), "device 'gpu:0': memory_bytes must be a finite number > 0, got 0"),
    (mutate("devices.0.memory_bytes", -1.5), "device 'gpu:0': memory_bytes must be a finite number > 0, got -1.5"),
    (mutate("devices.0.memory_bytes", float("nan")),
     "device 'gpu:0': memory_bytes must be a finite number > 0, got nan"),
    (mutate("devices.0.memory_bytes", float("inf")),
     "device 'gpu:0': memory_bytes must be a finite number > 0, got inf"),
    (mutate("devices.0.memory_bytes", True), "device 'gpu:0': memory_bytes must be a finite number > 0, got True"),
    (mutate("devices.0.memory_bytes", "11e9"),
     "device 'gpu:0': memory_bytes must be a finite number > 0, got '11e9'"),
    (mutate("devices.1.speed", 0), "device 'gpu:1': speed must be a finite number > 0, got 0"),
    (mutate("devices.1.speed", None), "device 'gpu:1': speed must be a finite number > 0, got None"),
    (mutate("link", _DEL), "cluster: 'link' needs 'bandwidth_bytes_per_s'"),
    (mutate("link", 7.6e9), "cluster: 'link' needs 'bandwidth_bytes_per_s'"),
    (mutate("link.bandwidth_bytes_per_s", 0), "link: bandwidth_bytes_per_s must be a finite number > 0, got 0"),
    (mutate("link.latency_s", -1e-6), "link: latency_s must be a finite number >= 0, got -1e-06"),
    (mutate("link.copy_curve", 5), "cluster: 'link': copy_curve must be a list of [bytes, seconds] pairs, finite "
     "and >= 0, bytes increasing"),
    (mutate("link.copy_curve", [[2, 1e-6], [1, 2e-6]]), "link: copy_curve must be a list of [bytes, seconds] "
     "pairs, finite and >= 0, bytes increasing"),
    (mutate("link.copy_curve", [[1, -1e-6]]), "link: copy_curve must be a list of [bytes, seconds] pairs, finite "
     "and >= 0, bytes increasing"),
    (mutate("link.copy_curve", [[1, 1e-6, 3]]), "link: copy_curve must be a list of [bytes, seconds] pairs, "
     "finite and >= 0, bytes increasing"),
    (mutate("links", {}), "cluster: 'links' must be a list"),
    (mutate("links", [{"between": ["gpu:0"], "bandwidth_bytes_per_s": 1}]),
     "cluster: links[0] needs 'between': [device, device]"),
    (mutate("links", [{"between": ["gpu:0", 1], "bandwidth_bytes_per_s": 1}]),
     "cluster: links[0] needs 'between': [device, device]"),
    (mutate("links", ["gpu:0-gpu:1"]), "cluster: links[0] needs 'between': [device, device]"),
    (mutate("links", [{"between": ["gpu:0", "gpu:1"]}]), "cluster: links[0] needs 'bandwidth_bytes_per_s'"),
    (mutate("links", [{"between": ["gpu:0", "gpu:9"], "bandwidth_bytes_per_s": 1}]),
     "link between 'gpu:0' and 'gpu:9' names unknown device 'gpu:9'"),
    (mutate("links", [{"between": ["gpu:1", "gpu:1"], "bandwidth_bytes_per_s": 1}]),
     "link between 'gpu:1' and 'gpu:1' connects a device to itself"),
    (mutate("links", [{"between": ["gpu:0", "gpu:1"], "bandwidth_bytes_per_s": -2}]),
     "link between 'gpu:0' and 'gpu:1': bandwidth_bytes_per_s must be a finite number > 0, got -2"),
    (mutate("simulation", []), "cluster: 'simulation' must be an object"),
    (mutate("simulation.mode", "fast"), f"simulation mode must be one of {CM}, got 'fast'"),
    (mutate("simulation.mode", "Placeto"), f"simulation mode must be one of {CM}, got 'Placeto'"),
    (mutate("simulation.delta1", 1), "cluster: unknown simulation setting 'delta1'"),
    (mutate("simulation.op_overhead_s", -1), "simulation.op_overhead_s must be a finite number >= 0, got -1"),
    (mutate("simulation.transfer_gap_s", float("nan")),
     "simulation.transfer_gap_s must be a finite number >= 0, got nan"),
    (mutate("name", ["k80x2"]), "cluster: 'name' must be a string"),
])
def test_error_messages(doc, message):
    assert cluster_error(doc) == message


def test_huge_integer_from_json_text_is_a_cluster_error():
    doc = mutate("devices.0.memory_bytes", 10**400)
    # the 401-digit number is cut to 80 characters: its first 53 and last 26 digits around "…"
    assert cluster_error(doc) == ("device 'gpu:0': memory_bytes must be a finite number > 0, got "
                                  + "1" + "0" * 52 + "…" + "0" * 26)
    doc = mutate("link.latency_s", 10**400)
    assert cluster_error(doc) == "link: latency_s must be a finite number >= 0, got " + "1" + "0" * 52 + "…" + "0" * 26


def test_empty_cluster_object():
    with pytest.raises(ClusterError) as info:
        Cluster("none", (), Link(1.0))
    assert str(info.value) == "cluster 'none' has no devices"


def test_a_copy_curve_interpolates_a_copys_time_and_round_trips():
    link = Link(1e9, 5e-6, ((1000.0, 2e-6), (3000.0, 3e-6)))
    # below the first point its time; between points linear; beyond the last, + extra bytes / bandwidth
    assert link.copy_seconds(np.array([10.0, 1000.0, 2000.0, 3000.0, 5000.0])).tolist() == pytest.approx(
        [2e-6, 2e-6, 2.5e-6, 3e-6, 3e-6 + 2000 / 1e9], rel=1e-12)
    assert Link(1e9).copy_seconds(np.array([2000.0])).tolist() == [2e-6]
    c = Cluster("one", (Device("cpu:0", "cpu", 1e9), Device("cpu:1", "cpu", 1e9)), link)
    doc = cluster_to_dict(c)
    assert doc["link"]["copy_curve"] == [[1000.0, 2e-6], [3000.0, 3e-6]] and cluster_from_dict(doc) == c
    assert "copy_curve" not in cluster_to_dict(PRESETS["k80x2"]())["link"]
    with pytest.raises(ClusterError, match="a copy_curve is for a cluster with one link"):
        Cluster("two", c.devices, link, (("cpu:0", "cpu:1", Link(2e9)),))
