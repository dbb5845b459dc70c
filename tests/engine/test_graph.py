"""Tests for engine.graph.compgraph.CompGraph: construction, validation messages and views."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from engine.errors import GraphError
from engine.generators import random_dag
from engine.graph.compgraph import PHASES, CompGraph

NAN = float("nan")


def chain(n: int = 3, **kw) -> CompGraph:
    """o0 -> o1 -> ... with compute i+1 seconds and output 10*(i+1) bytes."""
    args = dict(
        compute_any=np.arange(1.0, n + 1),
        output_bytes=10.0 * np.arange(1, n + 1),
        edge_src=np.arange(n - 1),
        edge_dst=np.arange(1, n),
    )
    args.update(kw)
    return CompGraph("chain", [f"o{i}" for i in range(n)], **args)


def mixed() -> CompGraph:
    """a runs anywhere (2 s); b has gpu 1 s / cpu 4 s; c runs on tpu only (0.5 s)."""
    return CompGraph(
        "mixed", ["a", "b", "c"],
        compute_any=[2.0, NAN, NAN],
        compute_by_kind=[[NAN, NAN, NAN], [1.0, 4.0, NAN], [NAN, NAN, 0.5]],
        kinds=("gpu", "cpu", "tpu"),
        edge_src=[0, 1], edge_dst=[1, 2],
    )


def error_of(fn) -> str:
    with pytest.raises(GraphError) as info:
        fn()
    msg = str(info.value)
    assert "\n" not in msg
    return msg


# ---- basic views -------------------------------------------------------------------------


def test_sizes_names_and_index():
    g = chain(4)
    assert (g.num_ops, g.num_edges, len(g)) == (4, 3, 4)
    assert g.op_names == ("o0", "o1", "o2", "o3")
    assert g.index == {"o0": 0, "o1": 1, "o2": 2, "o3": 3}
    assert repr(g) == "CompGraph('chain', ops=4, edges=3)"
    assert g.op_types == ("",) * 4 and g.scope == ("",) * 4
    assert g.colocate == (None,) * 4 and g.pin == (None,) * 4 and g.phase == (None,) * 4
    assert g.persistent_bytes.tolist() == [0.0] * 4 and g.temp_bytes.tolist() == [0.0] * 4


def test_default_edge_bytes_are_the_producer_output_bytes():
    g = chain(3)
    # o0 outputs 10 bytes, o1 outputs 20 bytes
    assert g.edge_bytes.tolist() == [10.0, 20.0]


def test_explicit_edge_bytes_and_edges_sorted_by_src_then_dst():
    g = CompGraph("g", ["a", "b", "c", "d"], compute_any=np.ones(4),
                  edge_src=[2, 0, 0, 1], edge_dst=[3, 2, 1, 3], edge_bytes=[4.0, 3.0, 2.0, 1.0])
    assert g.edge_src.tolist() == [0, 0, 1, 2]
    assert g.edge_dst.tolist() == [1, 2, 3, 3]
    assert g.edge_bytes.tolist() == [2.0, 3.0, 1.0, 4.0]


def test_parallel_edges_are_merged_and_bytes_add_up():
    g = CompGraph("g", ["a", "b", "c"], compute_any=np.ones(3),
                  edge_src=[0, 1, 0, 0, 1], edge_dst=[1, 2, 1, 1, 2],
                  edge_bytes=[1.0, 10.0, 2.0, 4.0, 20.0])
    assert g.num_edges == 2
    assert g.edge_src.tolist() == [0, 1] and g.edge_dst.tolist() == [1, 2]
    assert g.edge_bytes.tolist() == [7.0, 30.0]  # 1 + 2 + 4, 10 + 20


def test_successors_and_predecessors_in_index_order():
    # a -> {d, b, c}, {b, c} -> d
    g = CompGraph("g", list("abcd"), compute_any=np.ones(4),
                  edge_src=[0, 0, 0, 2, 1], edge_dst=[3, 1, 2, 3, 3])
    assert g.successors(0).tolist() == [1, 2, 3]
    assert g.predecessors(3).tolist() == [0, 1, 2]
    assert g.successors(3).tolist() == [] and g.predecessors(0).tolist() == []
    # CSR edge ids point at the right (src, dst) pair
    for u in range(4):
        lo, hi = g.succ.ptr[u], g.succ.ptr[u + 1]
        for v, e in zip(g.succ.idx[lo:hi], g.succ.edge[lo:hi], strict=True):
            assert (g.edge_src[e], g.edge_dst[e]) == (u, v)
        lo, hi = g.pred.ptr[u], g.pred.ptr[u + 1]
        for p, e in zip(g.pred.idx[lo:hi], g.pred.edge[lo:hi], strict=True):
            assert (g.edge_src[e], g.edge_dst[e]) == (p, u)


def test_topo_order_is_kahn_fifo_seeded_in_index_order():
    # diamond a->b, a->c, b->d, c->d plus isolated e: queue [a, e] -> a frees b, c -> d last
    g = CompGraph("d", list("abcde"), compute_any=np.ones(5),
                  edge_src=[0, 0, 1, 2], edge_dst=[1, 2, 3, 3])
    assert g.topo_order.tolist() == [0, 4, 1, 2, 3]


def test_topo_order_is_valid_on_random_graphs():
    for seed in range(5):
        g = random_dag(ops=300, degree=3.0, seed=seed, window=20)
        pos = np.empty(g.num_ops, dtype=np.int64)
        pos[g.topo_order] = np.arange(g.num_ops)
        assert sorted(g.topo_order.tolist()) == list(range(g.num_ops))
        assert (pos[g.edge_src] < pos[g.edge_dst]).all()
        assert nx.is_directed_acyclic_graph(g.to_networkx())


def test_arrays_are_read_only():
    g = chain(3)
    for a in (g.compute_any, g.compute_by_kind, g.output_bytes, g.persistent_bytes, g.temp_bytes,
              g.edge_src, g.edge_dst, g.edge_bytes, g.topo_order, g.succ.ptr, g.pred.idx,
              g.colocation_ids):
        with pytest.raises(ValueError):
            a[0] = 1


# ---- compute per kind --------------------------------------------------------------------


def test_compute_for_kind():
    g = mixed()
    np.testing.assert_array_equal(g.compute_for_kind("gpu"), [2.0, 1.0, NAN])
    np.testing.assert_array_equal(g.compute_for_kind("cpu"), [2.0, 4.0, NAN])
    np.testing.assert_array_equal(g.compute_for_kind("tpu"), [2.0, NAN, 0.5])
    # a kind nobody names: only "any kind" ops run there
    np.testing.assert_array_equal(g.compute_for_kind("fpga"), [2.0, NAN, NAN])


def test_min_compute_is_the_fastest_kind():
    assert mixed().min_compute().tolist() == [2.0, 1.0, 0.5]


def test_op_compute_as_written_in_a_file():
    g = mixed()
    assert g.op_compute(0) == 2.0
    assert g.op_compute(1) == {"gpu": 1.0, "cpu": 4.0}
    assert g.op_compute(2) == {"tpu": 0.5}


def test_compute_for_kind_returns_a_copy():
    g = chain(2)
    c = g.compute_for_kind("gpu")
    c[0] = 99.0
    assert g.compute_any[0] == 1.0


# ---- colocation, hash, networkx ---------------------------------------------------------


def test_colocation_ids_numbered_by_first_appearance():
    g = chain(5, colocate=["y", None, "x", "y", "x"])
    assert g.colocation_ids.tolist() == [0, -1, 1, 0, 1]


def test_content_hash_is_stable_and_sensitive():
    a, b = chain(3), chain(3)
    assert a.content_hash == b.content_hash
    assert len(a.content_hash) == 16 and int(a.content_hash, 16) >= 0
    variants = [
        chain(3, compute_any=[1.0, 2.0, 3.5]),
        chain(3, output_bytes=[10.0, 20.0, 31.0]),
        chain(3, edge_bytes=[10.0, 21.0]),
        chain(3, colocate=[None, "g", None]),
        chain(3, pin=["gpu:0", None, None]),
        chain(3, phase=["forward", None, None]),
        chain(3, scope=["", "enc", ""]),
        chain(3, op_types=["MatMul", "", ""]),
        chain(3, edge_src=[0, 0], edge_dst=[1, 2]),
    ]
    hashes = {v.content_hash for v in variants}
    assert len(hashes) == len(variants) and a.content_hash not in hashes


def test_to_networkx_carries_every_attribute():
    g = CompGraph("nx", ["a", "b"], compute_any=[NAN, 3.0], compute_by_kind=[[1.0], [NAN]],
                  kinds=("gpu",), output_bytes=[5.0, 6.0], persistent_bytes=[7.0, 0.0],
                  temp_bytes=[0.0, 8.0], edge_src=[0], edge_dst=[1], edge_bytes=[9.0],
                  op_types=["MatMul", "Relu"], colocate=["g", None], pin=[None, "gpu:1"],
                  phase=["forward", "backward"], scope=["enc/l1", ""])
    d = g.to_networkx()
    assert d.graph["name"] == "nx"
    assert list(d.nodes) == ["a", "b"]
    assert d.nodes["a"] == {"index": 0, "type": "MatMul", "compute": {"gpu": 1.0}, "output_bytes": 5.0,
                            "persistent_bytes": 7.0, "temp_bytes": 0.0, "colocate": "g",
                            "device": None, "phase": "forward", "scope": "enc/l1"}
    assert d.nodes["b"]["compute"] == 3.0 and d.nodes["b"]["device"] == "gpu:1"
    assert d.nodes["b"]["temp_bytes"] == 8.0 and d.nodes["b"]["phase"] == "backward"
    assert list(d.edges(data=True)) == [("a", "b", {"bytes": 9.0})]


def test_phases_constant():
    assert PHASES == ("forward", "backward", "update")


def test_million_op_random_graph_constructs():
    g = random_dag(ops=1_000_000)
    assert g.num_ops == 1_000_000
    assert g.op_names[0] == "op0000000" and g.op_names[-1] == "op0999999"
    assert len(g.topo_order) == 1_000_000
    assert (g.edge_src < g.edge_dst).all()  # edges only go to later ops
    # merged edges: no duplicate (src, dst) pairs remain
    key = g.edge_src * g.num_ops + g.edge_dst
    assert (np.diff(key) > 0).all()


# ---- validation messages -----------------------------------------------------------------


def test_empty_graph():
    assert error_of(lambda: CompGraph("e", [], compute_any=[])) == "graph 'e' has no ops"


def test_duplicate_name():
    msg = error_of(lambda: CompGraph("g", ["a", "b", "a"], compute_any=np.ones(3)))
    assert msg == "graph 'g': duplicate op name 'a' (ops #0 and #2)"


@pytest.mark.parametrize("bad", ["", 7, None])
def test_empty_or_non_string_name(bad):
    msg = error_of(lambda: CompGraph("g", ["a", bad], compute_any=np.ones(2)))
    assert msg == "graph 'g': op #1 has an empty or non-string name"


@pytest.mark.parametrize(("field", "value", "shown"), [
    ("compute_any", -1.0, "-1.0"),
    ("compute_any", float("inf"), "inf"),
    ("output_bytes", NAN, "nan"),
    ("output_bytes", -5.0, "-5.0"),
    ("persistent_bytes", float("-inf"), "-inf"),
    ("temp_bytes", NAN, "nan"),
])
def test_bad_op_numbers(field, value, shown):
    arr = np.ones(3)
    arr[1] = value
    label = "compute" if field == "compute_any" else field
    msg = error_of(lambda: chain(3, **{field: arr}))
    assert msg == f"op 'o1': {label} must be a finite number >= 0, got {shown}"


def test_bad_per_kind_compute():
    msg = error_of(lambda: CompGraph("g", ["a", "b"], compute_any=[NAN, NAN],
                                     compute_by_kind=[[1.0, 2.0], [3.0, -0.5]], kinds=("gpu", "cpu")))
    assert msg == "op 'b': compute on 'cpu' must be a finite number >= 0, got -0.5"


def test_op_without_any_compute():
    msg = error_of(lambda: CompGraph("g", ["a", "b"], compute_any=[1.0, NAN],
                                     compute_by_kind=[[NAN], [NAN]], kinds=("gpu",)))
    assert msg == "op 'b' has no compute time for any device kind"
    msg = error_of(lambda: CompGraph("g", ["a"], compute_any=[NAN]))
    assert msg == "op 'a' has no compute time for any device kind"


def test_bad_phase():
    msg = error_of(lambda: chain(2, phase=[None, "fwd"]))
    assert msg == "op 'o1': phase must be one of forward, backward, update, got 'fwd'"


def test_wrong_length_attribute():
    assert error_of(lambda: chain(3, scope=["a"])) == "graph 'chain': scope has 1 entries for 3 ops"
    assert error_of(lambda: chain(3, pin=[None] * 4)) == "graph 'chain': pin has 4 entries for 3 ops"


def test_edge_list_lengths_differ():
    msg = error_of(lambda: chain(3, edge_src=[0, 1], edge_dst=[1]))
    assert msg == "graph 'chain': edge source and destination lists differ in length"


def test_edge_bytes_length_differs():
    assert error_of(lambda: chain(3, edge_bytes=[1.0])) == "edge bytes has 1 entries for 2 edges"


@pytest.mark.parametrize(("src", "dst", "text"), [([0, 3], [1, 1], "edge #1 (3 -> 1)"),
                                                 ([0, 0], [1, -1], "edge #1 (0 -> -1)")])
def test_edge_out_of_range(src, dst, text):
    msg = error_of(lambda: chain(3, edge_src=src, edge_dst=dst))
    assert msg == f"graph 'chain': {text} refers to an op index out of range"


def test_self_loop():
    msg = error_of(lambda: chain(3, edge_src=[0, 2], edge_dst=[1, 2]))
    assert msg == "edge 'o2' -> 'o2' is a self-loop"


def test_bad_edge_bytes():
    msg = error_of(lambda: chain(3, edge_bytes=[1.0, -2.0]))
    assert msg == "edge 'o1' -> 'o2': bytes must be a finite number >= 0, got -2.0"
    msg = error_of(lambda: chain(3, edge_bytes=[NAN, 1.0]))
    assert msg == "edge 'o0' -> 'o1': bytes must be a finite number >= 0, got nan"


def test_two_cycle_message():
    msg = error_of(lambda: chain(2, edge_src=[0, 1], edge_dst=[1, 0]))
    assert msg == "graph 'chain' has a cycle: 'o0' -> 'o1' -> 'o0'"


def test_cycle_behind_an_acyclic_prefix_names_only_cycle_ops():
    # s -> a -> b -> c -> a, c -> t: s is fine, t is blocked by the cycle but not on it
    names = ["t", "s", "a", "b", "c"]
    g = lambda: CompGraph("g", names, compute_any=np.ones(5),  # noqa: E731
                          edge_src=[1, 2, 3, 4, 4], edge_dst=[2, 3, 4, 2, 0])
    assert error_of(g) == "graph 'g' has a cycle: 'a' -> 'b' -> 'c' -> 'a'"


def test_long_cycle_is_reported_in_full():
    n = 5000
    names = [f"n{i}" for i in range(n)]
    src = np.arange(n)
    dst = (src + 1) % n
    msg = error_of(lambda: CompGraph("ring", names, compute_any=np.ones(n), edge_src=src, edge_dst=dst))
    expected = " -> ".join(f"'n{i}'" for i in [*range(n), 0])
    assert msg == f"graph 'ring' has a cycle: {expected}"
