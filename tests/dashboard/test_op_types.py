"""Colour by op type (dashboard.figures.op_types): a node's type is the one doing most of its work, and the
categories are the types of the nodes shown, ranked by the compute they carry."""

import numpy as np

from dashboard.figures.colors import PALETTE
from dashboard.figures.op_types import NO_COMPUTE_COLOR, OTHER_COLOR, dominant_types, type_colors

# three scopes: conv (3 Variable, Conv2D 3 ms, BiasAdd 0.5 ms), fc (2 Variable, MatMul 2 ms), bn (2 Variable);
# 7 of the 10 ops are variables
TYPES = ["Variable", "Variable", "Variable", "Conv2D", "BiasAdd", "Variable", "Variable", "MatMul", "Variable",
         "Variable"]
COMPUTE = np.array([0, 0, 0, 3e-3, 0.5e-3, 0, 0, 2e-3, 0, 0])
NODE = np.array([0, 0, 0, 0, 0, 1, 1, 1, 2, 2])


def test_a_node_is_the_type_doing_most_of_its_work():
    # by count each would be Variable; by compute conv is Conv2D, fc MatMul; bn has no compute: by count
    assert dominant_types(TYPES, COMPUTE, NODE, 3) == ["Conv2D", "MatMul", "Variable"]
    # ties: equal compute goes to the type with more ops (B: 2), then to the first name (A before C)
    assert dominant_types(["A", "B", "B", "A", "C"], np.array([1.0, 0.5, 0.5, 1.0, 1.0]),
                          np.array([0, 0, 0, 1, 1]), 2) == ["B", "A"]
    assert dominant_types(["A"], np.zeros(1), np.array([0]), 2) == ["A", ""]  # node 1 holds no op


def test_categories_are_the_shown_types_ranked_by_their_compute():
    # node compute: conv 3.5 ms, fc 2 ms, bn 0, and a second MatMul node of 2 ms: MatMul carries 4 ms > Conv2D 3.5
    colors, legend = type_colors(["Conv2D", "MatMul", "Variable", "MatMul"], np.array([3.5e-3, 2e-3, 0, 2e-3]))
    assert legend == {"MatMul": PALETTE[0], "Conv2D": PALETTE[1], "no compute: Variable": NO_COMPUTE_COLOR}
    assert colors == [PALETTE[1], PALETTE[0], NO_COMPUTE_COLOR, PALETTE[0]]


def test_types_past_the_palette_share_one_other_entry():
    n = len(PALETTE) + 2
    types = [f"t{i}" for i in range(n)]
    colors, legend = type_colors(types, np.arange(n, 0, -1, dtype=float))  # t0 carries most
    assert list(legend) == [*types[:len(PALETTE)], "other (2 types)"]
    assert colors[-2:] == [OTHER_COLOR, OTHER_COLOR] and colors[0] == PALETTE[0]


def test_no_compute_types_are_named_up_to_three_by_node_count():
    colors, legend = type_colors(["MatMul", "Const", "Variable", "Variable", "Identity", "NoOp"],
                                 np.array([1.0, 0, 0, 0, 0, 0]))
    assert legend == {"MatMul": PALETTE[0], "no compute: Variable, Const, Identity, …": NO_COMPUTE_COLOR}
    assert colors[1:] == [NO_COMPUTE_COLOR] * 5


def test_a_graph_without_costs_ranks_types_by_node_count():
    colors, legend = type_colors(["A", "B", "B"], np.zeros(3))
    assert legend == {"B": PALETTE[0], "A": PALETTE[1]} and colors == [PALETTE[1], PALETTE[0], PALETTE[0]]
