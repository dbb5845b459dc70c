"""Tests for engine.grouping.rules on hand-worked graphs, plus properties on random DAGs.

Hand-worked cases (ops in index order, output bytes in brackets):

* Mirhoseini: a→c, b→c, c→d, c→e. a and b are consumed only by c → {a,b,c}; c feeds two
  groups → stays. Groups [0,0,0,1,2]. With d and e colocated, {a,b,c} feeds only {d,e} → one group.
* M&C chain a[10]→b[5]→c[20]: lowest b merges into its successor c → [0,1,1]; with N=1, a (10 <
  25) merges into {b,c} → [0,0,0]; with threshold 6 and no N, only b (5 < 6) merges.
* M&C sink: a[10]→b[1], a→c[50], N=2: b has no successor → into its predecessor a → [0,0,1].
* M&C cycle: a[1]→b[100], a→c[50], c→b, N=2: merging a into b would leave the path a→c→b
  outside the group (cycle) → skipped; a merges into c → [0,1,0].
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.generators import random_dag
from engine.graph.compgraph import CompGraph
from engine.graph.io import graph_from_dict
from engine.grouping.contract import contract
from engine.grouping.rules import (
    forward_scope,
    layer_scopes,
    merge_and_colocate,
    mirhoseini_groups,
    renumber,
    scope_groups,
    unit_groups,
)


def graph(n: int, edges, out=None, colocate=None, scope=None, phase=None) -> CompGraph:
    src, dst = zip(*edges, strict=True) if edges else ((), ())
    return CompGraph("g", [chr(97 + i) for i in range(n)], compute_any=np.ones(n),
                     output_bytes=None if out is None else np.asarray(out, float), edge_src=src, edge_dst=dst,
                     colocate=colocate, scope=scope, phase=phase)


def test_mirhoseini_merges_single_consumer_ops():
    g = graph(5, [(0, 2), (1, 2), (2, 3), (2, 4)])
    assert mirhoseini_groups(g).tolist() == [0, 0, 0, 1, 2]


def test_mirhoseini_honours_colocation_then_merges_recursively():
    g = graph(5, [(0, 2), (1, 2), (2, 3), (2, 4)], colocate=[None, None, None, "x", "x"])
    assert mirhoseini_groups(g).tolist() == [0, 0, 0, 0, 0]
    assert mirhoseini_groups(g, colocation=False).tolist() == [0, 0, 0, 1, 2]


def test_mirhoseini_chain_collapses_and_diamond_does_not():
    assert mirhoseini_groups(graph(4, [(0, 1), (1, 2), (2, 3)])).tolist() == [0, 0, 0, 0]
    # a→b, a→c, b→d, c→d: b, c only feed d → {b,c,d}; then a feeds only that group → all one
    assert mirhoseini_groups(graph(4, [(0, 1), (0, 2), (1, 3), (2, 3)])).tolist() == [0, 0, 0, 0]


def test_mirhoseini_stops_at_min_groups():
    # chain a→b→c→d, one pass merges a into b, b into c (two groups left), then stops: {a,b,c}, {d}
    assert mirhoseini_groups(graph(4, [(0, 1), (1, 2), (2, 3)]), min_groups=2).tolist() == [0, 0, 0, 1]
    # the diamond: b and c merge into d (two groups left); a, which feeds two groups, stays alone
    assert mirhoseini_groups(graph(4, [(0, 1), (0, 2), (1, 3), (2, 3)]), min_groups=2).tolist() == [0, 1, 1, 1]
    # a target at or above the op count merges nothing
    assert mirhoseini_groups(graph(4, [(0, 1), (1, 2), (2, 3)]), min_groups=4).tolist() == [0, 1, 2, 3]


def test_merge_and_colocate_chain():
    g = graph(3, [(0, 1), (1, 2)], out=[10, 5, 20])
    assert merge_and_colocate(g, 2).tolist() == [0, 1, 1]
    assert merge_and_colocate(g, 1).tolist() == [0, 0, 0]
    assert merge_and_colocate(g, threshold_bytes=6).tolist() == [0, 1, 1]
    assert merge_and_colocate(g, 3).tolist() == [0, 1, 2]


def test_merge_and_colocate_sink_goes_to_predecessor():
    g = graph(3, [(0, 1), (0, 2)], out=[10, 1, 50])
    assert merge_and_colocate(g, 2).tolist() == [0, 0, 1]


def test_merge_and_colocate_skips_a_merge_that_would_make_a_cycle():
    g = graph(3, [(0, 1), (0, 2), (2, 1)], out=[1, 100, 50])
    assert merge_and_colocate(g, 2).tolist() == [0, 1, 0]


def test_merge_and_colocate_ties_break_by_index():
    g = graph(4, [(0, 2), (1, 3)], out=[5, 5, 9, 9])
    assert merge_and_colocate(g, 3).tolist() == [0, 1, 0, 2]


def test_scope_groups_split_by_phase():
    g = graph(4, [(0, 1), (1, 2), (2, 3)], scope=["l1/s0", "l1/s0", "l1/s0", ""],
              phase=["forward", "forward", "backward", None])
    assert scope_groups(g).tolist() == [0, 0, 1, 2]
    assert scope_groups(g, split_phase=False).tolist() == [0, 0, 0, 1]
    assert scope_groups(g, depth=1).tolist() == [0, 0, 1, 2]


def test_renumber_orders_groups_by_first_op():
    assert renumber(np.array([7, 3, 7, 1])).tolist() == [0, 1, 0, 2]


@pytest.mark.parametrize("seed", range(6))
def test_groupings_contract_to_dags_and_expand_consistently(seed):
    g = random_dag(ops=300, degree=1.5, seed=seed, window=20)
    rng = np.random.default_rng(seed)
    base = mirhoseini_groups(g)
    for grp, cap in ((base, None), (merge_and_colocate(g, 40), 40),
                     (merge_and_colocate(g, 25, op_group=base), 25)):
        gr = contract(g, grp)  # raises GraphError if the contraction had a cycle
        assert gr.num_groups == int(grp.max()) + 1
        if cap is not None:  # isolated ops have no neighbour to merge into
            isolated = int(np.sum((np.diff(gr.graph.succ.ptr) == 0) & (np.diff(gr.graph.pred.ptr) == 0)))
            assert gr.num_groups <= cap or gr.num_groups - isolated <= cap
        dev = rng.integers(0, 4, size=gr.num_groups)
        np.testing.assert_array_equal(gr.expand(dev), dev[grp])
        # group numbering follows each group's first op
        firsts = [int(np.flatnonzero(grp == j)[0]) for j in range(gr.num_groups)]
        assert firsts == sorted(firsts)


def test_merge_and_colocate_is_deterministic_and_keeps_initial_groups():
    g = random_dag(ops=200, degree=2.0, seed=3, window=15)
    base = mirhoseini_groups(g)
    a = merge_and_colocate(g, 30, op_group=base)
    assert np.array_equal(a, merge_and_colocate(g, 30, op_group=base))
    for j in range(int(base.max()) + 1):  # an initial group never splits
        assert len(np.unique(a[base == j])) == 1



# A Keras-style training step (TF2 names): conv1 → bn1 (with a ``moments`` sub-scope) → fork into
# branch a and branch b → b2 → concat → loss; gradients under ``gradient_tape/``; an SGD update
# colocated with the kernel. Worked by hand (see test_unit_groups_keras_style_training_step):
#   layer scopes: bn1/moments folds into bn1 (bn1 holds forward ops itself; "model" holds none);
#   units (rule 1): conv1, bn1, a, b, b2, cat, loss — each with its gradient op;
#   kernel's users (conv) all lie in conv1 → joins (with its colocated AssignSub); x and sgd/Mul
#   (leftovers) join their only consumer's group;
#   chains over forward edges: conv1→bn1 (conv1's only successor, bn1's only predecessor), b→b2,
#   cat→loss; bn1 forks, cat joins → groups {x, kernel, conv1, bn1, Mul, AssignSub}, {a}, {b, b2},
#   {cat, loss}.
_KERAS_OPS = [
    ("x", "", "forward", []),
    ("conv1/kernel", "conv1", None, []),
    ("model/conv1/Conv2D", "model/conv1", "forward", ["x", "conv1/kernel"]),
    ("model/bn1/moments/mean", "model/bn1/moments", "forward", ["model/conv1/Conv2D"]),
    ("model/bn1/add", "model/bn1", "forward", ["model/conv1/Conv2D", "model/bn1/moments/mean"]),
    ("model/a/Relu", "model/a", "forward", ["model/bn1/add"]),
    ("model/b/Relu", "model/b", "forward", ["model/bn1/add"]),
    ("model/b2/Tanh", "model/b2", "forward", ["model/b/Relu"]),
    ("model/cat/concat", "model/cat", "forward", ["model/a/Relu", "model/b2/Tanh"]),
    ("loss/Mean", "loss", "forward", ["model/cat/concat"]),
    ("gradient_tape/loss/grad", "gradient_tape/loss", "backward", ["loss/Mean"]),
    ("gradient_tape/model/cat/grad", "gradient_tape/model/cat", "backward", ["gradient_tape/loss/grad"]),
    ("gradient_tape/model/b2/grad", "gradient_tape/model/b2", "backward", ["gradient_tape/model/cat/grad"]),
    ("gradient_tape/model/b/grad", "gradient_tape/model/b", "backward", ["gradient_tape/model/b2/grad"]),
    ("gradient_tape/model/a/grad", "gradient_tape/model/a", "backward", ["gradient_tape/model/cat/grad"]),
    ("gradient_tape/model/bn1/grad", "gradient_tape/model/bn1", "backward",
     ["gradient_tape/model/a/grad", "gradient_tape/model/b/grad"]),
    ("gradient_tape/model/conv1/grad", "gradient_tape/model/conv1", "backward", ["gradient_tape/model/bn1/grad", "x"]),
    ("sgd/Mul", "sgd", "update", ["gradient_tape/model/conv1/grad"]),
    ("sgd/AssignSub", "sgd", "update", ["sgd/Mul", "conv1/kernel"]),
]


def keras_style_step() -> CompGraph:
    coloc = {"conv1/kernel", "sgd/AssignSub"}
    return graph_from_dict({
        "schema": "placelab.graph/1", "name": "keras-step",
        "ops": [{"name": n, "compute": 1.0, "scope": sc, **({"phase": ph} if ph else {}),
                 **({"colocate": "conv1/kernel"} if n in coloc else {}),
                 **({"persistent_bytes": 100} if n == "conv1/kernel" else {})} for n, sc, ph, _ in _KERAS_OPS],
        "edges": [{"src": i, "dst": n} for n, _, _, ins in _KERAS_OPS for i in ins],
    })


def _named_groups(g: CompGraph, groups: np.ndarray) -> list[set[str]]:
    return [{g.op_names[i] for i in np.flatnonzero(groups == k)} for k in range(int(groups.max()) + 1)]


def test_forward_scope_strips_the_gradient_scope():
    assert forward_scope("gradient_tape/model/conv2d_3/sub") == "model/conv2d_3/sub"
    assert forward_scope("gradient_tape/model/conv2d_3/sub", depth=2) == "model/conv2d_3"
    assert forward_scope("a/gradients_1/b") == "a/b"
    assert forward_scope("gradients") == "" and forward_scope("") == ""


def test_layer_scopes_fold_sub_scopes_into_the_layer():
    g = keras_style_step()
    scopes = dict(zip(g.op_names, layer_scopes(g), strict=True))
    assert scopes["model/bn1/moments/mean"] == "model/bn1"
    assert scopes["gradient_tape/model/bn1/grad"] == "model/bn1"
    assert scopes["model/conv1/Conv2D"] == "model/conv1" and scopes["x"] == ""
    assert dict(zip(g.op_names, layer_scopes(g, depth=3), strict=True))["model/bn1/moments/mean"] == "model/bn1/moments"


def test_unit_groups_keras_style_training_step():
    g = keras_style_step()
    first = {"x", "conv1/kernel", "model/conv1/Conv2D", "gradient_tape/model/conv1/grad", "model/bn1/moments/mean",
             "model/bn1/add", "gradient_tape/model/bn1/grad", "sgd/Mul", "sgd/AssignSub"}
    assert _named_groups(g, unit_groups(g)) == [
        first,
        {"model/a/Relu", "gradient_tape/model/a/grad"},
        {"model/b/Relu", "gradient_tape/model/b/grad", "model/b2/Tanh", "gradient_tape/model/b2/grad"},
        {"model/cat/concat", "gradient_tape/model/cat/grad", "loss/Mean", "gradient_tape/loss/grad"},
    ]
    # without rule 5 every layer stays a unit: conv1 (+ x, kernel, update), bn1, a, b, b2, cat, loss
    assert int(unit_groups(g, branches=False).max()) + 1 == 7
    # at depth 3 the moments sub-scope is a unit of its own, and bn1 then has two predecessors
    # (conv1, moments), so neither chain link into it holds: {conv1…}, {moments}, {bn1}, {a}, {b, b2}, {cat, loss}
    assert int(unit_groups(g, depth=3).max()) + 1 == 6
    with pytest.raises(ValueError, match="at least 1"):
        unit_groups(g, depth=0)


def test_unit_groups_an_rnn_cell_is_not_merged_into_the_next():
    """A cell reads the previous step and the shared weights (their own unit): no chain forms."""
    ops = [("w", "lm/layer1", "forward", []), ("x0", "emb/step0", "forward", []),
           ("x1", "emb/step1", "forward", []),
           ("c0", "lm/layer1/step0", "forward", ["x0", "w"]), ("c1", "lm/layer1/step1", "forward", ["x1", "w", "c0"]),
           ("loss", "loss", "forward", ["c1"]),
           ("g1", "lm/layer1/step1", "backward", ["loss"]), ("g0", "lm/layer1/step0", "backward", ["g1"]),
           ("acc", "lm/layer1", "backward", ["g0", "g1"]), ("upd", "lm/layer1", "update", ["acc", "w"])]
    g = graph_from_dict({
        "schema": "placelab.graph/1", "name": "rnn",
        "ops": [{"name": n, "compute": 1.0, "scope": sc, "phase": ph, **({"persistent_bytes": 8} if n == "w" else {})}
                for n, sc, ph, _ in ops],
        "edges": [{"src": i, "dst": n} for n, _, _, ins in ops for i in ins],
    })
    # x0 and x1 are placeholders in their own lookup scopes; c1 → loss is a chain (loss has one
    # producer, c1 one forward consumer), so the last cell and the loss share a group.
    assert _named_groups(g, unit_groups(g)) == [{"w", "acc", "upd"}, {"x0"}, {"x1"}, {"c0", "g0"},
                                                {"c1", "g1", "loss"}]


@pytest.mark.parametrize("seed", range(8))
def test_unit_groups_without_scopes_are_the_single_consumer_rule(seed):
    """With no scopes, colocation or phases nothing is a unit, so every op goes by rule 4 — an op
    joins the group of its consumers when they all lie in one — which is §3.3's rule op by op:
    the same partition as mirhoseini_groups, worked out by its own fixed-point iteration."""
    g = random_dag(ops=400, degree=1.2 + 0.2 * seed, seed=seed, window=30)
    np.testing.assert_array_equal(unit_groups(g), mirhoseini_groups(g))
