"""Tests for engine.grouping.contract: colocation groups, contraction and expansion.

The contraction example, worked out by hand (bytes; compute in seconds):

    op  group  compute              out  persistent  temp   edges out
    a   0      gpu 1, cpu 4         100  10          5      a -> b (100, a's output)
    b   0      gpu 2 (GPU only)     200  20          7      b -> c (200), b -> d (250)
    e   0      0.5 (any kind)       60   1           0      e -> c (60)
    c   1      gpu 3, cpu 6         300  30          1      c -> d (300)
    d   1      gpu 1, cpu 1         400  0           50     -

* group 0: gpu 1 + 2 + 0.5 = 3.5; cpu absent (b cannot run there); persistent 31;
  temp = max(5, 7, 0) + a's output (consumed only inside) 100 = 107;
  output = b's 200 + e's 60 (consumed outside) = 260.
* group 1: gpu 3 + 1 = 4, cpu 6 + 1 = 7; persistent 30; temp = max(1, 50) + c's 300 = 350;
  output = d's 400 (a sink's output outlives the group; c's only consumer is inside).
* edge 0 -> 1: per producer the largest edge into group 1 — b: max(200, 250) = 250,
  e: 60 — summed: 310.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.errors import GraphError
from engine.graph.compgraph import CompGraph
from engine.graph.io import graph_from_dict
from engine.grouping.contract import colocation_groups, contract


def make(ops: list[dict], edges: list[tuple] = ()) -> CompGraph:
    return graph_from_dict({
        "schema": "placelab.graph/1", "name": "g", "ops": ops,
        "edges": [{"src": e[0], "dst": e[1], **({"bytes": e[2]} if len(e) > 2 else {})} for e in edges],
    })


def hand(pins: dict[str, str] | None = None) -> CompGraph:
    pins = pins or {}
    ops = [
        {"name": "a", "compute": {"gpu": 1.0, "cpu": 4.0}, "output_bytes": 100, "persistent_bytes": 10,
         "temp_bytes": 5, "phase": "forward", "scope": "enc/l1/x"},
        {"name": "b", "compute": {"gpu": 2.0}, "output_bytes": 200, "persistent_bytes": 20, "temp_bytes": 7,
         "phase": "forward", "scope": "enc/l1/y"},
        {"name": "e", "compute": 0.5, "output_bytes": 60, "persistent_bytes": 1, "phase": "forward",
         "scope": "enc/l2"},
        {"name": "c", "compute": {"gpu": 3.0, "cpu": 6.0}, "output_bytes": 300, "persistent_bytes": 30,
         "temp_bytes": 1, "phase": "forward"},
        {"name": "d", "compute": {"gpu": 1.0, "cpu": 1.0}, "output_bytes": 400, "temp_bytes": 50,
         "phase": "backward"},
    ]
    for op in ops:
        if op["name"] in pins:
            op["device"] = pins[op["name"]]
    return make(ops, [("a", "b"), ("b", "c", 200), ("b", "d", 250), ("e", "c", 60), ("c", "d", 300)])


GROUPS = np.array([0, 0, 0, 1, 1])  # a, b, e | c, d


# ---- colocation_groups ---------------------------------------------------------------------------


def test_colocation_groups_numbered_by_first_op():
    g = make([{"name": "a", "compute": 1, "colocate": "x"}, {"name": "b", "compute": 1},
              {"name": "c", "compute": 1, "colocate": "y"}, {"name": "d", "compute": 1, "colocate": "x"},
              {"name": "e", "compute": 1}])
    assert colocation_groups(g).tolist() == [0, 1, 2, 0, 3]


def test_colocation_groups_first_op_not_grouped():
    g = make([{"name": "a", "compute": 1}, {"name": "b", "compute": 1, "colocate": "z"},
              {"name": "c", "compute": 1, "colocate": "y"}, {"name": "d", "compute": 1, "colocate": "z"}])
    assert colocation_groups(g).tolist() == [0, 1, 2, 1]


def test_colocation_groups_without_groups_is_identity():
    g = make([{"name": n, "compute": 1} for n in "abcd"])
    assert colocation_groups(g).tolist() == [0, 1, 2, 3]


# ---- contract ------------------------------------------------------------------------------------


def test_contract_hand_example():
    gr = contract(hand(), GROUPS)
    cg = gr.graph
    assert gr.num_groups == 2
    assert cg.op_names == ("group0:a", "group1:c")
    assert cg.op_types == ("Group", "Group")
    gpu, cpu = cg.compute_for_kind("gpu"), cg.compute_for_kind("cpu")
    assert gpu.tolist() == [3.5, 4.0]
    assert np.isnan(cpu[0]) and cpu[1] == 7.0
    assert np.isnan(cg.compute_any).all()  # not every member has one time for all kinds
    assert cg.persistent_bytes.tolist() == [31.0, 30.0]
    assert cg.temp_bytes.tolist() == [107.0, 350.0]
    assert cg.output_bytes.tolist() == [260.0, 400.0]
    assert (cg.edge_src.tolist(), cg.edge_dst.tolist(), cg.edge_bytes.tolist()) == ([0], [1], [310.0])
    assert cg.phase == ("forward", None)  # group 1 mixes forward and backward
    assert cg.scope == ("enc", "")  # common prefix of enc/l1/x, enc/l1/y, enc/l2
    assert cg.pin == (None, None)


def test_contract_singletons_keep_their_op():
    gr = contract(hand(), np.array([0, 0, 1, 2, 2]))  # e alone
    cg = gr.graph
    assert cg.op_names == ("group0:a", "e", "group2:c")
    assert cg.compute_any[1] == 0.5  # a scalar member stays a scalar
    assert cg.op_compute(1) == 0.5
    # edges into group 2: from group 0, b's max(200, 250) = 250; from e, 60
    assert list(zip(cg.edge_src.tolist(), cg.edge_dst.tolist(), cg.edge_bytes.tolist(), strict=True)) == [
        (0, 2, 250.0), (1, 2, 60.0)]
    # group 0 = {a, b}: a's output only inside -> temp max(5, 7) + 100; output b's 200
    assert cg.temp_bytes[0] == 107.0 and cg.output_bytes[0] == 200.0


def test_contract_identity_keeps_numbers():
    g = hand()
    cg = contract(g, np.arange(5)).graph
    assert cg.op_names == g.op_names
    for kind in ("gpu", "cpu"):
        np.testing.assert_array_equal(cg.compute_for_kind(kind), g.compute_for_kind(kind))
    np.testing.assert_array_equal(cg.persistent_bytes, g.persistent_bytes)
    np.testing.assert_array_equal(cg.temp_bytes, g.temp_bytes)
    # singleton groups keep every output, the sink d's included
    assert cg.output_bytes.tolist() == [100.0, 200.0, 60.0, 300.0, 400.0]
    np.testing.assert_array_equal(cg.output_bytes, g.output_bytes)
    assert cg.edge_bytes.sum() == g.edge_bytes.sum() == 100 + 200 + 250 + 60 + 300


def test_contract_all_scalar_group_sums_compute_any():
    g = make([{"name": "a", "compute": 1.5}, {"name": "b", "compute": 2.0}, {"name": "c", "compute": 0.25}],
             [("a", "b"), ("b", "c")])
    cg = contract(g, np.array([0, 0, 1])).graph
    assert cg.compute_any.tolist() == [3.5, 0.25]


def test_contract_propagates_pin():
    cg = contract(hand({"d": "gpu:1", "b": "gpu:0"}), GROUPS).graph
    assert cg.pin == ("gpu:0", "gpu:1")


def test_contract_conflicting_pins():
    with pytest.raises(GraphError) as err:
        contract(hand({"c": "gpu:0", "d": "gpu:1"}), GROUPS)
    assert str(err.value) == "group 'group1:c' has ops pinned to different devices: gpu:0, gpu:1"


def test_contract_same_pin_twice_is_fine():
    assert contract(hand({"c": "gpu:1", "d": "gpu:1"}), GROUPS).graph.pin == (None, "gpu:1")


def test_non_convex_group_is_a_cycle():
    # a -> b -> c with {a, c} grouped: the group feeds b and waits for it
    g = make([{"name": n, "compute": 1} for n in "abc"], [("a", "b"), ("b", "c")])
    with pytest.raises(GraphError) as err:
        contract(g, np.array([0, 1, 0]))
    assert "is not acyclic" in str(err.value) and "cycle" in str(err.value)


@pytest.mark.parametrize("bad", [[0, 0, 0, 0], [0, 0, 0, 2, 2], [0, -1, 0, 1, 1]])
def test_contract_rejects_bad_group_arrays(bad):
    with pytest.raises(ValueError):
        contract(hand(), np.array(bad))


def test_contract_custom_names():
    assert contract(hand(), GROUPS, names=["front", "back"]).graph.op_names == ("front", "back")


# ---- expand / members ------------------------------------------------------------------------------


def test_expand_maps_group_devices_to_ops():
    gr = contract(hand(), GROUPS)
    assert gr.expand(np.array([3, 1])).tolist() == [3, 3, 3, 1, 1]
    assert gr.members(0).tolist() == [0, 1, 2] and gr.members(1).tolist() == [3, 4]
    with pytest.raises(ValueError):
        gr.expand(np.array([0, 1, 2]))


def test_expand_of_colocation_contraction():
    g = make([{"name": "a", "compute": 1, "colocate": "x"}, {"name": "b", "compute": 1},
              {"name": "c", "compute": 1, "colocate": "x"}], [("a", "b")])
    gr = contract(g, colocation_groups(g))  # groups: {a, c}, {b}
    assert gr.graph.op_names == ("group0:a", "b")
    assert gr.expand([2, 5]).tolist() == [2, 5, 2]
