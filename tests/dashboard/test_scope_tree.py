"""Scope hierarchy and collapsed graph, against hand-worked expectations."""

import numpy as np

from dashboard.figures.scope_tree import (
    ancestors,
    collapsed_graph,
    hierarchy_scopes,
    initial_expanded,
    scope_children,
    visible_node,
)

# ops: 0 enc/l0/a  1 enc/l0/b  2 enc/l1/c  3 dec/d  4 (no scope) e
SCOPES = ["enc/l0", "enc/l0", "enc/l1", "dec", ""]
NAMES = ["a", "b", "c", "d", "e"]
SRC = np.array([0, 1, 2, 3, 0])
DST = np.array([1, 2, 3, 4, 2])


def test_visible_node_walks_down_expanded_prefixes():
    assert visible_node("enc/l0", "a", set()) == "enc"
    assert visible_node("enc/l0", "a", {"enc"}) == "enc/l0"
    assert visible_node("enc/l0", "a", {"enc", "enc/l0"}) == "op:a"
    assert visible_node("", "e", set()) == "op:e"


def test_scope_children_tree():
    assert scope_children(SCOPES) == {"": {"enc", "dec"}, "enc": {"enc/l0", "enc/l1"},
                                      "enc/l0": set(), "enc/l1": set(), "dec": set()}


def test_all_collapsed():
    node_of_op, nodes, edges = collapsed_graph(SCOPES, NAMES, SRC, DST, set())
    assert nodes == ["enc", "dec", "op:e"]
    assert node_of_op.tolist() == [0, 0, 0, 1, 2]
    # enc→enc edges vanish; c→d is enc→dec, d→e is dec→op:e
    assert edges == [(0, 1, 1, 1.0), (1, 2, 1, 1.0)]


def test_expand_one_scope():
    node_of_op, nodes, edges = collapsed_graph(SCOPES, NAMES, SRC, DST, {"enc"})
    assert nodes == ["enc/l0", "enc/l1", "dec", "op:e"]
    assert node_of_op.tolist() == [0, 0, 1, 2, 3]
    # b→c and a→c both become l0→l1 (count 2), c→d l1→dec, d→e dec→op:e
    assert edges == [(0, 1, 2, 2.0), (1, 2, 1, 1.0), (2, 3, 1, 1.0)]


def test_collapsed_edges_sum_a_weight_per_op_edge():
    # weights per op edge: a→b 1, b→c 10, c→d 100, d→e 1000, a→c 5; with "enc" open l0→l1 holds b→c and a→c
    _, _, edges = collapsed_graph(SCOPES, NAMES, SRC, DST, {"enc"}, np.array([1.0, 10.0, 100.0, 1000.0, 5.0]))
    assert edges == [(0, 1, 2, 15.0), (1, 2, 1, 100.0), (2, 3, 1, 1000.0)]


def test_ancestors_outermost_first():
    assert ancestors("enc/l0/x") == ["enc", "enc/l0", "enc/l0/x"]
    assert ancestors("") == []


def test_initial_expanded_opens_the_biggest_scopes_within_the_budget():
    # closed: enc, dec, op:e = 3 nodes. Opening enc (3 ops) swaps it for l0, l1: +1; opening enc/l0 shows
    # a and b: +1; dec and enc/l1 hold one op each: +0.
    assert initial_expanded(SCOPES, 3) == {"dec"}  # enc would make 4; dec is free
    assert initial_expanded(SCOPES, 4) == {"enc", "dec", "enc/l1"}  # enc/l0 (2 ops) would make 5
    assert initial_expanded(SCOPES, 5) == {"enc", "enc/l0", "enc/l1", "dec"}


def test_hierarchy_scopes_own_scopes_or_level_bands():
    scoped, own = hierarchy_scopes(SCOPES[:4], np.arange(4))
    assert own and scoped == SCOPES[:4]
    # no scopes, 100 levels: 40 bands of ceil(100 / 40) = 3 levels, each cut into single levels
    bands, own = hierarchy_scopes([""] * 100, np.arange(100))
    assert not own
    assert bands[5] == "levels 3–5/level 5"
    assert bands[0] == "levels 0–2/level 0"
    # the last band holds one level: one level deep (it was "level 99/level 99", two boxes titled alike)
    assert bands[99] == "level 99"
    assert len({b.split("/")[0] for b in bands}) == 34  # ceil(100 / 3)


def test_many_unscoped_ops_in_a_scoped_graph_share_one_group():
    scopes = ["a/b"] * 300 + [""] * 21  # 321 ops, 93% scoped, 21 loose: more than 20
    out, own = hierarchy_scopes(scopes, np.zeros(321))
    assert own and out[:300] == scopes[:300] and set(out[300:]) == {"(no scope)"}
    out, _ = hierarchy_scopes(scopes[:-1], np.zeros(320))  # 20 loose: they stay at the top
    assert out[300:] == [""] * 20


def test_initial_expanded_breaks_ties_in_natural_order():
    # b2 and b10 hold two ops each; the budget (3) lets one open (2 nodes → 3). Natural order opens b2 first;
    # string order ("b10" < "b2") opened b10
    assert initial_expanded(["b10", "b10", "b2", "b2"], 3) == {"b2"}


def test_level_bands_never_hold_a_band_of_the_same_name():
    # 5 levels (at most 40): one level per band, one level deep
    bands, own = hierarchy_scopes([""] * 5, np.array([0, 1, 1, 2, 4]))
    assert not own and bands == ["level 0", "level 1", "level 1", "level 2", "level 4"]
    # 82 levels: bands of ceil(82 / 40) = 3 levels, cut into single levels; the last band, 81..81, holds one level
    bands, _ = hierarchy_scopes([""] * 82, np.arange(82))
    assert bands[0] == "levels 0–2/level 0" and bands[80] == "levels 78–80/level 80" and bands[81] == "level 81"
    assert all(b.split("/")[0] != b.split("/")[-1] for b in bands if "/" in b)
