"""Per-edge transfer times given by the source (``transfer_s``): format, validation, simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.cluster import Device
from engine.errors import GraphError
from engine.graph.compgraph import CompGraph
from engine.graph.io import graph_from_dict, graph_to_dict
from engine.sim.simulator import simulate
from tests.clusters import uniform_cluster


def doc(edges, **extra):
    return {"schema": "placelab.graph/1", "name": "t", **extra,
            "ops": [{"name": "a", "compute": 1.0, "output_bytes": 8}, {"name": "b", "compute": 1.0},
                    {"name": "c", "compute": 1.0}],
            "edges": edges}


def test_round_trip_keeps_times_order_and_unknown_memory():
    g = graph_from_dict(doc([{"src": "a", "dst": "c", "transfer_s": 0.5}, {"src": "a", "dst": "b"}],
                            memory_known=False))
    assert g.edge_src.tolist() == [0, 0] and g.edge_dst.tolist() == [1, 2]  # stored sorted
    assert g.edge_rank.tolist() == [1, 0]  # ... with the file's order kept
    assert math.isnan(g.edge_transfer_s[0]) and g.edge_transfer_s[1] == 0.5
    d = graph_to_dict(g)
    assert [(e["src"], e["dst"], e.get("transfer_s")) for e in d["edges"]] == [("a", "c", 0.5), ("a", "b", None)]
    assert d["memory_known"] is False
    g2 = graph_from_dict(d)
    assert g2.content_hash == g.content_hash and not g2.memory_known


def test_hash_of_a_graph_without_times_is_unchanged_by_the_field():
    plain = graph_from_dict(doc([{"src": "a", "dst": "b"}]))
    timed = graph_from_dict(doc([{"src": "a", "dst": "b", "transfer_s": 0.0}]))
    assert not plain.has_transfer_times and timed.has_transfer_times
    assert plain.content_hash != timed.content_hash


@pytest.mark.parametrize("bad", [-1.0, "1", True, float("inf")])
def test_bad_transfer_time_is_one_sentence(bad):
    with pytest.raises(GraphError) as info:
        graph_from_dict(doc([{"src": "a", "dst": "b", "transfer_s": bad}]))
    msg = str(info.value)
    assert "edge 'a' -> 'b'" in msg and "transfer_s" in msg and "\n" not in msg


def test_nan_and_mixed_parallel_edges_are_rejected():
    with pytest.raises(GraphError, match="transfer_s must be a finite number"):
        CompGraph("t", ["a", "b"], compute_any=[1, 1], edge_src=[0], edge_dst=[1], edge_transfer_s=[-0.5])
    with pytest.raises(GraphError, match="mix edges with and without transfer_s"):
        CompGraph("t", ["a", "b"], compute_any=[1, 1], edge_src=[0, 0], edge_dst=[1, 1],
                  edge_transfer_s=[0.5, np.nan])
    g = CompGraph("t", ["a", "b"], compute_any=[1, 1], edge_src=[0, 0], edge_dst=[1, 1], edge_transfer_s=[0.5, 0.25])
    assert g.edge_transfer_s.tolist() == [0.75]  # distinct tensors: times add up like bytes


@pytest.mark.parametrize("mode", ["placeto", "default"])
def test_given_time_replaces_bytes_over_bandwidth(mode):
    # a -> b across devices: 8 bytes at 1 byte/s would take 8 s; the edge says 0.5 s.
    g = graph_from_dict(doc([{"src": "a", "dst": "b", "transfer_s": 0.5}]))
    c = uniform_cluster("c", [Device("g0", "gpu", 1e9), Device("g1", "gpu", 1e9)], 1.0, mode=mode)
    s = simulate(g, c, np.array([0, 1, 0]))
    # a [0, 1); c waits behind a on g0 [1, 2); transfer [1, 1.5); b [1.5, 2.5)
    assert s.op_start.tolist() == [0.0, 1.5, 1.0]
    assert s.transfer_start.tolist() == [1.0] and s.transfer_end.tolist() == [1.5]
    assert s.makespan == 2.5


def test_edge_transfer_cost_and_levels_with_communication():
    from engine.cluster import edge_transfer_cost
    from engine.graph.dag import b_level, t_level
    from engine.importers.doppler_text import graph_from_doppler_text

    s = 10**13  # one second in the authors' units
    text = "6\n4,5,\n0,0,1,2,\n1,2,3,3,\n" + "".join(f"{c},{4 * c},einsummable,\n" for c in (s, 2 * s, 3 * s, s))
    g = graph_from_doppler_text(text)  # a (1 s) -> b (2 s), c (3 s) -> d (1 s); comm = 4 x comp
    c = uniform_cluster("c", [Device("g0", "gpu", 1e9), Device("g1", "gpu", 1e9)], 1e9)
    np.testing.assert_allclose(edge_transfer_cost(g, c), [4, 4, 8, 12])  # edges a-b, a-c, b-d, c-d
    # unplaced: b-level(a) = 1 + 4 + (3 + 12 + 1) = 21
    np.testing.assert_allclose(b_level(g, g.compute_any, edge_transfer_cost(g, c)), [21, 11, 16, 1])
    placed = np.array([0, 0, 1, 0])
    cost = edge_transfer_cost(g, c, placed)
    np.testing.assert_allclose(cost, [0, 4, 0, 12])
    # with c alone on g1 the critical path a -> c -> d is the simulated makespan (21 s) and
    # d's t-level its start (20 s)
    np.testing.assert_allclose(b_level(g, g.compute_any, cost), [21, 3, 16, 1])
    np.testing.assert_allclose(t_level(g, g.compute_any, cost), [0, 1, 5, 20])
    s_wc = simulate(g, c.with_simulation(mode="work_conserving"), placed)
    assert s_wc.makespan == pytest.approx(21.0) and s_wc.op_start[3] == pytest.approx(20.0)
