"""Tests for engine.placement: Placement, Constraints and the placelab.placement/1 format."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.cluster import Device
from engine.errors import PlacementError
from engine.graph.io import GRAPH_SCHEMA, graph_from_dict
from engine.jsonio import atomic_write_json
from engine.placement import (
    PLACEMENT_SCHEMA,
    Constraints,
    Placement,
    check_placement,
    compute_matrix,
    load_placement,
    placement_from_dict,
)
from engine.specs import load_cluster
from tests.clusters import uniform_cluster

NAN = float("nan")


def pgraph():
    """Seven ops exercising every constraint (cluster cpu+k80x2: cpu:0, gpu:0, gpu:1)."""
    return graph_from_dict({
        "schema": GRAPH_SCHEMA, "name": "pg",
        "ops": [
            {"name": "a", "compute": 0.001},
            {"name": "b", "compute": {"gpu": 0.0002, "cpu": 0.003}},
            {"name": "c", "compute": {"cpu": 0.01}},
            {"name": "d", "compute": {"gpu": 0.004}, "device": "gpu:1"},
            {"name": "e", "compute": 0.002, "colocate": "grp"},
            {"name": "f", "compute": 0.003, "colocate": "grp"},
            {"name": "g", "compute": 0.001, "device": "tpu:7"},  # pin to a device this cluster lacks
        ],
        "edges": [{"src": "a", "dst": "b"}, {"src": "b", "dst": "d"}, {"src": "c", "dst": "e"},
                  {"src": "e", "dst": "f"}],
    })


VALID = {"a": "gpu:0", "b": "cpu:0", "c": "cpu:0", "d": "gpu:1", "e": "gpu:0", "f": "gpu:0", "g": "gpu:1"}
VALID_DEVICES = [1, 0, 0, 2, 1, 1, 2]


def placement_error(fn) -> str:
    with pytest.raises(PlacementError) as info:
        fn()
    msg = str(info.value)
    assert "\n" not in msg and msg
    return msg


@pytest.fixture
def setup():
    return pgraph(), load_cluster("cpu+k80x2")


# ---- mapping round trip ------------------------------------------------------------------


def test_from_mapping_and_back(setup):
    g, c = setup
    p = Placement.from_mapping(g, c, VALID)
    assert p.devices.tolist() == VALID_DEVICES and p.devices.dtype == np.int64
    assert p.to_mapping(g, c) == VALID
    assert list(p.to_mapping(g, c)) == list("abcdefg")  # op order
    assert p.counts(c.num_devices).tolist() == [2, 3, 2]
    assert p.counts(5).tolist() == [2, 3, 2, 0, 0]


def test_placement_array_is_read_only_and_copied():
    src = np.array([0, 1, 1])
    p = Placement(src)
    src[0] = 5
    assert p.devices.tolist() == [0, 1, 1]
    with pytest.raises(ValueError):
        p.devices[0] = 2


def test_the_placers_estimate_is_carried_but_never_part_of_equality():
    """Issue 55: a placer's own makespan estimate rides on the placement; two placements with the same devices are
    equal (and hash alike) whatever their placers predicted."""
    plain, estimated = Placement(np.array([0, 1, 1])), Placement(np.array([0, 1, 1]), predicted_makespan_s=4e-3)
    assert plain.predicted_makespan_s is None and estimated.predicted_makespan_s == 4e-3
    assert plain == estimated and hash(plain) == hash(estimated) and len({plain, estimated}) == 1
    assert Placement(np.array([0, 1, 0]), predicted_makespan_s=4e-3) != estimated
    assert type(Placement(np.array([0]), predicted_makespan_s=np.float32(2.0)).predicted_makespan_s) is float


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=7, max_size=7))
def test_any_device_array_round_trips_through_a_mapping(devs):
    g, c = pgraph(), load_cluster("k80x4")
    p = Placement(np.array(devs))
    m = p.to_mapping(g, c)
    assert m == {op: f"gpu:{d}" for op, d in zip("abcdefg", devs, strict=True)}
    assert Placement.from_mapping(g, c, m).devices.tolist() == devs


def test_to_dict_and_file_round_trip(setup, tmp_path):
    g, c = setup
    p = Placement.from_mapping(g, c, VALID)
    assert p.to_dict(g, c) == {"schema": PLACEMENT_SCHEMA, "graph": "pg", "cluster": "cpu+k80x2", "devices": VALID}
    path = tmp_path / "p.json"
    atomic_write_json(path, p.to_dict(g, c))  # as `placelab place -o` writes it
    assert load_placement(path, g, c).devices.tolist() == VALID_DEVICES
    assert [x.name for x in tmp_path.iterdir()] == ["p.json"]


def test_contract_example_document():
    g = graph_from_dict({"schema": GRAPH_SCHEMA, "name": "toy", "ops": [{"name": "a", "compute": 1},
                                                                         {"name": "b", "compute": 1}]})
    c = load_cluster("k80x2")
    doc = {"schema": "placelab.placement/1", "graph": "toy", "cluster": "k80x2",
           "devices": {"a": "gpu:0", "b": "gpu:1"}}
    assert placement_from_dict(doc, g, c).devices.tolist() == [0, 1]


# ---- mapping errors ----------------------------------------------------------------------


def test_unknown_op(setup):
    g, c = setup
    msg = placement_error(lambda: Placement.from_mapping(g, c, {**VALID, "zz": "gpu:0"}))
    assert msg == "placement names op 'zz', which graph 'pg' does not have"


@pytest.mark.parametrize(("device", "shown"), [("gpu:7", "'gpu:7'"), (3, "3"), (None, "None")])
def test_unknown_device(setup, device, shown):
    g, c = setup
    msg = placement_error(lambda: Placement.from_mapping(g, c, {**VALID, "b": device}))
    assert msg == f"op 'b' is placed on unknown device {shown} (cluster 'cpu+k80x2' has cpu:0, gpu:0, gpu:1)"


def test_missing_op(setup):
    g, c = setup
    partial = {k: v for k, v in VALID.items() if k not in ("c", "f")}
    msg = placement_error(lambda: Placement.from_mapping(g, c, partial))
    assert msg == "placement does not place op 'c' (2 op(s) missing)"


@pytest.mark.parametrize(("doc", "message"), [
    ([], "placement: expected a JSON object with schema 'placelab.placement/1'"),
    ({"devices": VALID}, "placement: expected schema 'placelab.placement/1', found no 'schema' field"),
    ({"schema": "placelab.graph/1", "devices": VALID},
     "placement: expected schema 'placelab.placement/1', found schema 'placelab.graph/1'"),
    ({"schema": PLACEMENT_SCHEMA, "devices": list(VALID.values())},
     "placement: 'devices' must be an object mapping op names to device names"),
    ({"schema": PLACEMENT_SCHEMA}, "placement: 'devices' must be an object mapping op names to device names"),
])
def test_document_errors(setup, doc, message):
    g, c = setup
    assert placement_error(lambda: placement_from_dict(doc, g, c)) == message


def test_file_errors(setup, tmp_path):
    g, c = setup
    path = tmp_path / "p.json"
    path.write_text('{"schema": "placelab.placement/1", "devices": {"a": ')
    msg = placement_error(lambda: load_placement(path, g, c))
    assert msg.startswith(f"{path} is not valid JSON (line 1, column ")
    path.write_text(json.dumps({"schema": "x"}))
    msg = placement_error(lambda: load_placement(path, g, c))
    assert msg == "p.json: expected schema 'placelab.placement/1', found schema 'x'"
    msg = placement_error(lambda: load_placement(tmp_path / "none.json", g, c))
    assert msg == f"{tmp_path / 'none.json'}: no such file"


# ---- constraints -------------------------------------------------------------------------


def test_compute_matrix_divides_by_speed():
    g = pgraph()
    c = uniform_cluster("mix", [Device("cpu:0", "cpu", 1e9, 0.5), Device("gpu:0", "gpu", 1e9, 2.0),
                                Device("gpu:1", "gpu", 1e9)], 1e9)
    # rows a..g, columns cpu:0 (speed 0.5), gpu:0 (speed 2), gpu:1 (speed 1)
    expected = [
        [0.002, 0.0005, 0.001],
        [0.006, 0.0001, 0.0002],
        [0.02, NAN, NAN],
        [NAN, 0.002, 0.004],
        [0.004, 0.001, 0.002],
        [0.006, 0.0015, 0.003],
        [0.002, 0.0005, 0.001],
    ]
    np.testing.assert_allclose(compute_matrix(g, c), expected, rtol=1e-15)
    dur = Constraints(g, c).check(np.array([1, 0, 0, 2, 1, 1, 2]))
    np.testing.assert_allclose(dur, [0.0005, 0.006, 0.02, 0.004, 0.001, 0.0015, 0.001], rtol=1e-15)


def test_check_returns_compute_on_each_device_for_mixed_kinds(setup):
    g, c = setup
    dur = Constraints(g, c).check(np.array(VALID_DEVICES))
    # a any 0.001; b on cpu 0.003; c on cpu 0.01; d on gpu 0.004; e 0.002; f 0.003; g 0.001 (speed 1)
    assert dur.tolist() == [0.001, 0.003, 0.01, 0.004, 0.002, 0.003, 0.001]
    dur = check_placement(g, c, Placement.from_mapping(g, c, {**VALID, "b": "gpu:1"}))
    assert dur.tolist() == [0.001, 0.0002, 0.01, 0.004, 0.002, 0.003, 0.001]


def test_constraint_precomputation(setup):
    g, c = setup
    k = Constraints(g, c)
    # d is pinned to gpu:1 (index 2); g's pin 'tpu:7' is not on this cluster and is ignored
    assert k.pinned.tolist() == [3] and k.pin_dev.tolist() == [2]
    # e and f form one group whose head is e
    assert k.grouped.tolist() == [4, 5] and k.group_head.tolist() == [4, 4]


def test_op_on_a_kind_it_cannot_run(setup):
    g, c = setup
    msg = placement_error(lambda: check_placement(g, c, Placement.from_mapping(g, c, {**VALID, "c": "gpu:1"})))
    assert msg == "op 'c' cannot run on 'gpu:1' (kind 'gpu'): it has no compute time for that kind"
    msg = placement_error(lambda: Constraints(g, c).check(np.array([1, 0, 0, 0, 1, 1, 2])))
    assert msg == "op 'd' cannot run on 'cpu:0' (kind 'cpu'): it has no compute time for that kind"


def test_pin_violated(setup):
    g, c = setup
    msg = placement_error(lambda: check_placement(g, c, Placement.from_mapping(g, c, {**VALID, "d": "gpu:0"})))
    assert msg == "op 'd' is pinned to 'gpu:1' but placed on 'gpu:0'"


def test_colocation_group_split(setup):
    g, c = setup
    msg = placement_error(lambda: check_placement(g, c, Placement.from_mapping(g, c, {**VALID, "f": "gpu:1"})))
    assert msg == "colocation group 'grp' is split: op 'f' is on 'gpu:1', op 'e' on 'gpu:0'"
    # both on the cpu is fine: colocation only asks for one device
    dur = check_placement(g, c, Placement.from_mapping(g, c, {**VALID, "e": "cpu:0", "f": "cpu:0"}))
    assert dur[4:6].tolist() == [0.002, 0.003]


def test_checks_run_in_order_kind_pin_colocation(setup):
    g, c = setup
    # d pinned elsewhere and the group split: the pin is reported
    both = np.array([1, 0, 0, 1, 1, 2, 2])
    assert placement_error(lambda: Constraints(g, c).check(both)).startswith("op 'd' is pinned")


@pytest.mark.parametrize(("devices", "message"), [
    ([1, 0, 0], "placement has 3 entries for 7 ops of 'pg'"),
    ([1, 3, 0, 2, 1, 1, 2], "op 'b' is placed on device #3, but cluster 'cpu+k80x2' has 3 devices"),
    ([1, 0, 0, 2, 1, 1, -1], "op 'g' is placed on device #-1, but cluster 'cpu+k80x2' has 3 devices"),
])
def test_device_array_errors(setup, devices, message):
    g, c = setup
    assert placement_error(lambda: Constraints(g, c).check(np.array(devices))) == message


def test_graph_without_constraints():
    g = graph_from_dict({"schema": GRAPH_SCHEMA, "ops": [{"name": "x", "compute": 2.0}]})
    c = load_cluster("k80x2")
    k = Constraints(g, c)
    assert k.pinned.tolist() == [] and k.grouped.tolist() == []
    assert k.check(np.array([1])).tolist() == [2.0]
