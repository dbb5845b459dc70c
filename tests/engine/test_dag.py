"""Tests for engine.graph.dag: levels, t/b-levels, critical path and Placeto §2.2 pooling sets."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.generators import random_dag
from engine.graph.compgraph import CompGraph
from engine.graph.dag import (
    ancestors,
    b_level,
    critical_path,
    descendants,
    levels,
    parallel,
    parallelism_profile,
    reachability,
    t_level,
)

NAN = float("nan")
A, B, C, D, E = range(5)


def diamond(compute=(1.0, 2.0, 3.0, 4.0, 5.0)) -> CompGraph:
    """a -> b, a -> c, b -> d, c -> d, and e isolated. Edges are listed out of order on purpose."""
    return CompGraph("diamond", list("abcde"), compute_any=np.asarray(compute, dtype=float),
                     edge_src=[C, A, B, A], edge_dst=[D, C, D, B])


# edge ids after construction are sorted by (src, dst): a->b, a->c, b->d, c->d
EDGE_COST = np.array([0.5, 0.25, 1.0, 0.1])


def test_diamond_edge_order():
    g = diamond()
    assert list(zip(g.edge_src.tolist(), g.edge_dst.tolist(), strict=True)) == [(A, B), (A, C), (B, D), (C, D)]


def test_levels_and_parallelism_profile():
    g = diamond()
    assert levels(g).tolist() == [0, 1, 1, 2, 0]
    # level 0: a, e; level 1: b, c; level 2: d
    assert parallelism_profile(g).tolist() == [2, 2, 1]


def test_t_level_with_node_and_edge_costs():
    # t(a) = t(e) = 0
    # t(b) = t(a) + 1 + 0.5 = 1.5;  t(c) = t(a) + 1 + 0.25 = 1.25
    # t(d) = max(t(b) + 2 + 1.0, t(c) + 3 + 0.1) = max(4.5, 4.35) = 4.5
    t = t_level(diamond(), edge_cost=EDGE_COST)
    np.testing.assert_allclose(t, [0.0, 1.5, 1.25, 4.5, 0.0], rtol=0, atol=1e-12)


def test_b_level_with_node_and_edge_costs():
    # b(d) = 4, b(e) = 5
    # b(b) = 2 + 1.0 + 4 = 7;  b(c) = 3 + 0.1 + 4 = 7.1
    # b(a) = 1 + max(0.5 + 7, 0.25 + 7.1) = 1 + 7.5 = 8.5
    b = b_level(diamond(), edge_cost=EDGE_COST)
    np.testing.assert_allclose(b, [8.5, 7.0, 7.1, 4.0, 5.0], rtol=0, atol=1e-12)


def test_critical_path_with_node_and_edge_costs():
    cp = critical_path(diamond(), edge_cost=EDGE_COST)
    # entries a (8.5) and e (5): a; then b (0.5 + 7 = 7.5) beats c (0.25 + 7.1 = 7.35); then d
    assert cp.length_s == pytest.approx(8.5, abs=1e-12)
    assert cp.ops.tolist() == [A, B, D]
    # on the critical path t-level + b-level equals its length
    tb = t_level(diamond(), edge_cost=EDGE_COST) + b_level(diamond(), edge_cost=EDGE_COST)
    np.testing.assert_allclose(tb[cp.ops], 8.5, atol=1e-12)


def test_default_costs_are_fastest_kind_and_free_communication():
    g = CompGraph("k", list("abcde"), compute_any=[1.0, NAN, NAN, 4.0, 5.0],
                  compute_by_kind=[[NAN, NAN], [2.0, 6.0], [9.0, 3.0], [NAN, NAN], [NAN, NAN]],
                  kinds=("gpu", "cpu"), edge_src=[A, A, B, C], edge_dst=[B, C, D, D])
    # node costs = min over kinds = [1, 2, 3, 4, 5]; edges free
    # b-level: d 4, b 6, c 7, a 1 + 7 = 8, e 5
    assert b_level(g).tolist() == [8.0, 6.0, 7.0, 4.0, 5.0]
    # t-level: a 0, b 1, c 1, d max(1 + 2, 1 + 3) = 4, e 0
    assert t_level(g).tolist() == [0.0, 1.0, 1.0, 4.0, 0.0]
    cp = critical_path(g)
    assert cp.length_s == 8.0 and cp.ops.tolist() == [A, C, D]


def test_critical_path_tie_breaks_to_the_lower_op_index():
    # all ops cost 1 and edges are free: a -> b -> d and a -> c -> d tie; b has the lower index
    cp = critical_path(diamond(compute=(1.0, 1.0, 1.0, 1.0, 1.0)))
    assert cp.length_s == 3.0 and cp.ops.tolist() == [A, B, D]
    # when c costs more the tie is gone and the path through c wins: 1 + 1.5 + 1 = 3.5
    cp = critical_path(diamond(compute=(1.0, 1.0, 1.5, 1.0, 1.0)))
    assert cp.length_s == 3.5 and cp.ops.tolist() == [A, C, D]


def test_critical_path_tie_between_entries_goes_to_the_lower_index():
    # b(a) = 1 + max(2, 2) + 4 = 7 and e costs exactly 7: the entries tie and a (index 0) wins
    cp = critical_path(diamond(compute=(1.0, 2.0, 2.0, 4.0, 7.0)))
    assert cp.length_s == 7.0 and cp.ops.tolist() == [A, B, D]
    # an isolated op listed first wins a tie against a later chain
    g = CompGraph("t", ["solo", "x", "y"], compute_any=[3.0, 1.0, 2.0], edge_src=[1], edge_dst=[2])
    cp = critical_path(g)
    assert cp.length_s == 3.0 and cp.ops.tolist() == [0]
    # and loses when it is strictly shorter
    g = CompGraph("t", ["solo", "x", "y"], compute_any=[2.5, 1.0, 2.0], edge_src=[1], edge_dst=[2])
    assert critical_path(g).ops.tolist() == [1, 2]


def test_edge_costs_can_change_the_critical_path():
    # with a -> c costing 2 the path through c wins: 1 + 2 + 3 + 0.1 + 4 = 10.1 vs 1 + 0.5 + 2 + 1 + 4 = 8.5
    ec = EDGE_COST.copy()
    ec[1] = 2.0
    cp = critical_path(diamond(), edge_cost=ec)
    assert cp.length_s == pytest.approx(10.1, abs=1e-12) and cp.ops.tolist() == [A, C, D]


def test_cost_shape_is_checked():
    with pytest.raises(ValueError, match="node_cost must have one entry per op"):
        t_level(diamond(), node_cost=[1.0, 2.0])
    with pytest.raises(ValueError, match="edge_cost one per edge"):
        b_level(diamond(), edge_cost=[1.0])


def test_reachability_and_pooling_sets_of_the_diamond():
    g = diamond()
    r = reachability(g)
    expected = np.zeros((5, 5), dtype=bool)
    for u, v in [(A, B), (A, C), (A, D), (B, D), (C, D)]:
        expected[u, v] = True
    np.testing.assert_array_equal(r, expected)
    # Placeto §2.2: parents = ops that reach v, children = ops v reaches, parallel = neither
    assert descendants(g, A).tolist() == [B, C, D]
    assert ancestors(g, A).tolist() == []
    assert parallel(g, A).tolist() == [E]
    assert descendants(g, B).tolist() == [D]
    assert ancestors(g, B).tolist() == [A]
    assert parallel(g, B).tolist() == [C, E]
    assert ancestors(g, D).tolist() == [A, B, C]
    assert descendants(g, D).tolist() == []
    assert parallel(g, D).tolist() == [E]
    assert parallel(g, E).tolist() == [A, B, C, D]
    # a precomputed matrix gives the same answers
    assert parallel(g, C, reach=r).tolist() == [B, E]
    assert ancestors(g, C, reach=r).tolist() == [A]


# ---- against networkx on random graphs ---------------------------------------------------


def split_graph(g: CompGraph, nc: np.ndarray, ec: np.ndarray) -> nx.DiGraph:
    """Each op v becomes (v, 'in') -> (v, 'out') weighted by its cost; edges keep theirs."""
    h = nx.DiGraph()
    for v in range(g.num_ops):
        h.add_edge((v, "in"), (v, "out"), weight=float(nc[v]))
    for e, (s, d) in enumerate(zip(g.edge_src.tolist(), g.edge_dst.tolist(), strict=True)):
        h.add_edge((s, "out"), (d, "in"), weight=float(ec[e]))
    return h


@st.composite
def random_graphs(draw):
    n = draw(st.integers(1, 40))
    pairs = [(u, v) for u in range(n) for v in range(u + 1, n)]
    edges = draw(st.lists(st.sampled_from(pairs), max_size=3 * n)) if pairs else []
    perm = draw(st.permutations(range(n)))  # so edges do not always point to higher indices
    src = [perm[u] for u, _ in edges]
    dst = [perm[v] for _, v in edges]
    costs = st.integers(0, 20).map(float)  # small integers: ties happen, sums are exact
    nc = np.array([draw(costs) for _ in range(n)])
    g = CompGraph("r", [f"v{i}" for i in range(n)], compute_any=nc, edge_src=src, edge_dst=dst)
    ec = np.array([draw(costs) for _ in range(g.num_edges)])
    return g, nc, ec


@settings(max_examples=80, deadline=None)
@given(random_graphs())
def test_levels_t_b_and_critical_path_match_networkx(case):
    g, nc, ec = case
    ref = g.to_networkx()
    gen_of = {v: k for k, gen in enumerate(nx.topological_generations(ref)) for v in gen}
    assert levels(g).tolist() == [gen_of[nm] for nm in g.op_names]
    assert parallelism_profile(g).sum() == g.num_ops

    h = split_graph(g, nc, ec)
    t, b = t_level(g, nc, ec), b_level(g, nc, ec)
    for v in range(g.num_ops):
        # with non-negative weights the longest path in a node's ancestor (descendant) closure
        # ends (starts) at that node
        up = nx.ancestors(h, (v, "in")) | {(v, "in")}
        down = nx.descendants(h, (v, "in")) | {(v, "in")}
        assert t[v] == nx.dag_longest_path_length(h.subgraph(up))
        assert b[v] == nx.dag_longest_path_length(h.subgraph(down))

    cp = critical_path(g, nc, ec)
    assert cp.length_s == nx.dag_longest_path_length(h)
    path = cp.ops.tolist()
    assert len(g.predecessors(path[0])) == 0 and len(g.successors(path[-1])) == 0
    edge_id = {(s, d): e for e, (s, d) in enumerate(zip(g.edge_src.tolist(), g.edge_dst.tolist(), strict=True))}
    length = sum(nc[v] for v in path) + sum(ec[edge_id[(u, v)]] for u, v in itertools.pairwise(path))
    assert length == cp.length_s
    # lowest-index tie-break at the entry: no lower-indexed entry has as long a b-level
    entries = [v for v in range(g.num_ops) if len(g.predecessors(v)) == 0]
    assert path[0] == min(v for v in entries if b[v] == cp.length_s)
    # and at every step: no lower-indexed successor is as good
    for u, v in itertools.pairwise(path):
        best = max(ec[edge_id[(u, w)]] + b[w] for w in g.successors(u).tolist())
        assert v == min(w for w in g.successors(u).tolist() if ec[edge_id[(u, w)]] + b[w] == best)


@settings(max_examples=60, deadline=None)
@given(random_graphs())
def test_pooling_sets_match_networkx(case):
    g = case[0]
    ref = g.to_networkx()
    r = reachability(g)
    idx = g.index
    for v, nm in enumerate(g.op_names):
        down = sorted(idx[x] for x in nx.descendants(ref, nm))
        up = sorted(idx[x] for x in nx.ancestors(ref, nm))
        assert descendants(g, v, r).tolist() == down
        assert ancestors(g, v, r).tolist() == up
        assert parallel(g, v, r).tolist() == sorted(set(range(g.num_ops)) - set(down) - set(up) - {v})


@pytest.mark.parametrize("n", [63, 64, 65, 200])
def test_reachability_across_bitset_words(n):
    # n ops crossing 64-bit word boundaries
    g = random_dag(ops=n, degree=1.5, seed=n, window=70)
    ref = nx.transitive_closure_dag(g.to_networkx())
    expected = np.zeros((n, n), dtype=bool)
    for s, d in ref.edges:
        expected[g.index[s], g.index[d]] = True
    np.testing.assert_array_equal(reachability(g), expected)


def test_chain_reaches_everything_after_it():
    n = 130
    g = CompGraph("c", [f"o{i}" for i in range(n)], compute_any=np.ones(n),
                  edge_src=np.arange(n - 1), edge_dst=np.arange(1, n))
    np.testing.assert_array_equal(reachability(g), np.triu(np.ones((n, n), dtype=bool), k=1))
    assert levels(g).tolist() == list(range(n))
    assert parallelism_profile(g).tolist() == [1] * n
    cp = critical_path(g)
    assert cp.length_s == float(n) and cp.ops.tolist() == list(range(n))
