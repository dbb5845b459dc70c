"""Tests for engine.workloads.recurrent: op-level RNNLM / NMT training steps and their groupings."""

from __future__ import annotations

import numpy as np
import pytest

from engine.costmodel import FP32, K80, op_time
from engine.generators import from_spec
from engine.grouping.contract import contract
from engine.grouping.rules import mirhoseini_groups, scope_groups, unit_groups
from engine.workloads.recurrent import TrainGraph, nmt, rnnlm


@pytest.fixture(scope="module")
def lm():
    return rnnlm()


@pytest.fixture(scope="module")
def mt():
    return nmt()


def _units(g) -> int:
    """Mirhoseini §4.1's groups as :func:`engine.grouping.rules.unit_groups` forms them."""
    return int(unit_groups(g).max()) + 1


def _same_group(g, groups, *names) -> bool:
    return len({int(groups[g.index[n]]) for n in names}) == 1


def test_rnnlm_structure(lm):
    assert set(lm.phase) == {"forward", "backward", "update"}
    assert all(lm.scope) and all(lm.op_types)
    for layer in (1, 2):
        for step in (0, 39):
            assert f"lm/layer{layer}/step{step}/MatMul" in lm.index
    assert "lm/layer1/step40/MatMul" not in lm.index
    # one update per variable: embedding, 2 × (kernel, bias), softmax w and b
    assert lm.op_types.count("ApplyGradientDescent") == 7
    # the gate MatMul of layer 2: [x, h] (64 × 4096) · (4096 × 8192) on a K80 die
    i = lm.index["lm/layer2/step5/MatMul"]
    flops = 2.0 * 64 * 4096 * 4 * 2048
    moved = 64 * 4096 * FP32 + 4096 * 8192 * FP32 + 64 * 8192 * FP32
    assert lm.compute_for_kind("gpu")[i] == pytest.approx(op_time(flops, moved, K80))


def test_rnnlm_groupings(lm):
    # per step a lookup, 2 cells and a softmax step (4 × 40), plus the variable scopes embedding,
    # lm/layer1, lm/layer2, softmax and the loss (5): 165 (paper: 188)
    assert _units(lm) == 165
    units = unit_groups(lm)
    cell = "lm/layer2/step5"
    assert _same_group(lm, units, f"{cell}/MatMul", f"{cell}/MatMul/grad0", f"{cell}/mul_h")  # forward + backward
    assert not _same_group(lm, units, f"{cell}/MatMul", "lm/layer2/step6/MatMul")
    assert _same_group(lm, units, "lm/layer2/kernel", "lm/layer2/kernel/ApplyGradientDescent")
    cells = contract(lm, scope_groups(lm, depth=3))
    assert cells.num_groups == 334  # forward and backward of each unit apart
    rule = contract(lm, mirhoseini_groups(lm))
    assert rule.num_groups < lm.num_ops / 2


def test_nmt_structure_and_groupings(mt):
    assert "decoder/attention/step39/scores" in mt.index and "encoder/layer2/step39/mul_h" in mt.index
    # per step: encoder and decoder lookups, 2 + 2 cells, attention and softmax (8 × 40), plus the
    # variable scopes of both embeddings, the four layers, attention and softmax, the encoder's
    # attention memory and the loss (10): 330 (paper: 280)
    assert _units(mt) == 330
    assert _units(nmt(length=3, units=8, batch=2, vocab=10)) == 8 * 3 + 10
    assert contract(mt, scope_groups(mt, depth=3)).num_groups == 668
    # decoder's first cell starts from the encoder's final state
    h0 = mt.index["encoder/layer1/step39/mul_h"]
    assert mt.index["decoder/layer1/step0/concat"] in mt.successors(h0).tolist()


def test_nmt_placeto_variant_is_bigger():
    g = from_spec("gen:nmt?layers=4&length=32&batch=128")
    assert g.num_ops > nmt(length=32, batch=128).num_ops
    assert "decoder/layer4/step31/mul_h" in g.index


def test_builds_are_deterministic():
    a, b = rnnlm(units=64, steps=3), rnnlm(units=64, steps=3)
    assert a.content_hash == b.content_hash


def test_train_graph_backward_by_hand():
    """x → y = MatMul(x, w) → loss = Sum(y): grads seed, Sum', MatMul' wrt w; one update."""
    tg = TrainGraph("toy")
    x = tg.const("x", 8.0, "in")
    w = tg.variable("w", 16.0, "layer")
    y = tg.op("mm", "MatMul", "layer", [x, w], 8.0, flops=32.0, saved=(x, w))
    loss = tg.op("sum", "Sum", "loss", [y], 4.0)
    g = tg.build(loss)
    assert g.op_names == ("in/x", "layer/w", "layer/mm", "loss/sum", "loss/sum/grad_seed", "loss/sum/grad0",
                          "layer/mm/grad0", "layer/w/ApplyGradientDescent")
    assert g.phase[4:] == ("backward", "backward", "backward", "update")
    edges = set(zip(g.edge_src.tolist(), g.edge_dst.tolist(), strict=True))
    assert {(4, 5), (5, 6), (0, 6), (1, 6), (6, 7), (1, 7)} <= edges
    assert np.isclose(g.persistent_bytes[1], 32.0)
