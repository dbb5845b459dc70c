"""engine.grouping.dynamic_order: the order stays topological as edges are added, its pruned search
answers as a plain one does, and Merge-and-Colocate with it groups exactly as without it.

The independent references: networkx's ``has_path`` for reachability, and ``merge_and_colocate(...,
prune=False)`` (a search over every node downstream) for the grouping.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.generators import random_dag
from engine.graph.compgraph import CompGraph
from engine.grouping.dynamic_order import TopologicalOrder
from engine.grouping.rules import merge_and_colocate, mirhoseini_groups


def _sets(n: int, edges) -> tuple[dict[int, set[int]], dict[int, set[int]]]:
    succ: dict[int, set[int]] = {v: set() for v in range(n)}
    pred: dict[int, set[int]] = {v: set() for v in range(n)}
    for a, b in edges:
        succ[a].add(b)
        pred[b].add(a)
    return succ, pred


def _is_topological(order: TopologicalOrder, succ) -> bool:
    return len(set(order.pos.values())) == len(order.pos) and all(
        order.pos[a] < order.pos[b] for a in succ for b in succ[a])


def test_a_backward_edge_moves_only_the_nodes_between():
    # a chain 0 → 1 → 2 → 3 and a lone 4. Kahn's (ready nodes by index): 0, 4, 1, 2, 3. The edge 3 → 4 points
    # back (position 4 → 1): the backward set {1, 2, 3} (reaching 3, not before position 1) and the forward set
    # {4} take positions 1–4 in that order; 0 keeps position 0
    succ, pred = _sets(5, [(0, 1), (1, 2), (2, 3)])
    order = TopologicalOrder(succ, pred)
    assert order.pos == {0: 0, 4: 1, 1: 2, 2: 3, 3: 4}
    succ[3].add(4)
    pred[4].add(3)
    order.add_edge(3, 4)
    assert order.pos == {0: 0, 1: 1, 2: 2, 3: 3, 4: 4}
    order.add_edge(0, 1)  # forward already: nothing moves
    assert order.pos == {0: 0, 1: 1, 2: 2, 3: 3, 4: 4}


def test_a_cycle_is_refused():
    succ, pred = _sets(3, [(0, 1), (1, 2), (2, 0)])
    with pytest.raises(ValueError, match="cycle"):
        TopologicalOrder(succ, pred)
    succ, pred = _sets(3, [(0, 1), (1, 2)])
    order = TopologicalOrder(succ, pred)
    succ[2].add(0)
    pred[0].add(2)
    with pytest.raises(ValueError, match="closes a cycle"):
        order.add_edge(2, 0)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 25), seed=st.integers(0, 10_000), extra=st.integers(1, 40))
def test_random_additions_keep_the_order_and_the_searches_right(n, seed, extra):
    """Start from a random DAG, add random edges that keep it acyclic (checked with networkx), and after each:
    the order is topological and ``reaches`` agrees with networkx on random queries."""
    rng = np.random.default_rng(seed)
    rank = rng.permutation(n)  # a hidden order the start graph respects
    edges = [(int(a), int(b)) for a, b in rng.integers(0, n, (2 * n, 2)) if rank[a] < rank[b]]
    succ, pred = _sets(n, edges)
    order = TopologicalOrder(succ, pred)
    assert _is_topological(order, succ)
    g = nx.DiGraph(edges)
    g.add_nodes_from(range(n))
    for _ in range(extra):
        a, b = (int(x) for x in rng.integers(0, n, 2))
        if a == b or b in succ[a] or nx.has_path(g, b, a):
            continue
        succ[a].add(b)
        pred[b].add(a)
        g.add_edge(a, b)
        order.add_edge(a, b)
        assert _is_topological(order, succ)
        starts = {int(x) for x in rng.integers(0, n, 3)}
        t = int(rng.integers(0, n))
        want = any(nx.has_path(g, s, t) for s in starts if s != t)
        assert order.reaches(starts, t) == want


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("groups", [1, 7, 40])
def test_merge_and_colocate_groups_as_the_plain_search_does(seed, groups):
    g = random_dag(ops=250, degree=1.2 + 0.3 * (seed % 3), seed=seed, window=25)
    for init in (None, mirhoseini_groups(g, colocation=False, min_groups=groups)):
        assert merge_and_colocate(g, groups, op_group=init).tolist() == \
            merge_and_colocate(g, groups, op_group=init, prune=False).tolist()


@settings(max_examples=80, deadline=None)
@given(n=st.integers(2, 40), seed=st.integers(0, 10_000), degree=st.floats(0.5, 3.0), groups=st.integers(1, 12))
def test_merge_and_colocate_on_any_small_dag_groups_as_the_plain_search_does(n, seed, degree, groups):
    """Random DAGs with few distinct output sizes (so that ties and every merge direction occur)."""
    rng = np.random.default_rng(seed)
    rank = rng.permutation(n)
    pairs = {(int(a), int(b)) for a, b in rng.integers(0, n, (int(degree * n) + 1, 2)) if rank[a] < rank[b]}
    src, dst = zip(*sorted(pairs), strict=True) if pairs else ((), ())
    g = CompGraph("g", [f"op{i}" for i in range(n)], compute_any=np.ones(n),
                  output_bytes=rng.integers(1, 4, n).astype(float), edge_src=src, edge_dst=dst)
    assert merge_and_colocate(g, groups).tolist() == merge_and_colocate(g, groups, prune=False).tolist()
