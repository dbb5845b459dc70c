"""Scope hierarchy and collapsed graph, against hand-worked expectations."""

import numpy as np

from dashboard.figures.scope_tree import collapsed_graph, scope_children, visible_node

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
