"""Placeto's graph families (Addanki et al. 2019, App. A.3): *nmt*, *ptb*, *cifar10*, 32 graphs each.

Each family has N = 32 training-step graphs (forward, backward, update) and a fixed random
50/50 split into train and test (f = 0.5); :func:`family` gives the split as generator specs
(``gen:family-nmt?index=7&seed=0``), and ``family:nmt`` names the whole family.

* **nmt** — the 2-layer NMT of :mod:`engine.workloads.recurrent` (1024 units, vocabulary
  32,000) with unroll L ∈ [16, 32] and batch ∈ [64, 128]; grouped to 160 groups.
* **ptb** — ENAS recurrent cells (Pham et al. 2018): a random cell DAG of 12 nodes; node 0
  mixes the input and the previous state, node j > 0 reads one earlier node i and computes
  ``c = σ(W_c h_i)``, ``h_j = c ⊙ f(W_h h_i) + (1 − c) ⊙ h_i`` with f ∈ {Identity, Sigmoid,
  Tanh, ReLU}; the cell output is the mean of the nodes no other node reads. 1000 units,
  vocabulary 10,000, unroll L ∈ [25, 40], batch ∈ [1536, 3072]; grouped to 128 groups.
* **cifar10** — ENAS convolutional cells (micro search space): 5-node cells, each node adds
  two branches chosen from {sep conv 3×3, sep conv 5×5, avg pool 3×3, max pool 3×3,
  identity} on two earlier inputs; 3 stages of 2 normal cells with a reduction cell between
  stages, 20 initial channels, 32 × 32 images, batch ∈ [240, 360]; grouped to 128 groups.

A graph's architecture and hyper-parameters come from ``(family, seed)``: the 32 parameter
draws are made together and redrawn on a repeat, so the 32 graphs are distinct. Costs are
the roofline of a K80 die and the 18-core Haswell CPU (:mod:`engine.costmodel`). Grouping
(:func:`family_grouping`) follows Placeto §4: Mirhoseini's co-location rule, then
Merge-and-Colocate (A.6) down to the family's group count.

Sizes over the 32 graphs of seed 0 (ops; groups after the §3.3 rule; after M&C — the paper
states only the final group counts):

=======  ==============  ===============  ========  =================
family   ops             §3.3 rule        M&C       paper (groups)
=======  ==============  ===============  ========  =================
nmt      3,034 – 6,026   1,399 – 2,775    160       160
ptb      7,525 – 12,010  3,234 – 5,114    128       ≈128
cifar10  439 – 1,215     226 – 879        128       ≈128
=======  ==============  ===============  ========  =================
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from engine.costmodel import FP32
from engine.errors import SpecError, quote
from engine.graph.compgraph import CompGraph
from engine.grouping.rules import merge_and_colocate, mirhoseini_groups
from engine.limits import GENERATOR_CELLS, GENERATOR_DIM, GENERATOR_NODES, GENERATOR_SEED, Bound
from engine.workloads.card import generator
from engine.workloads.recurrent import TrainGraph, build_nmt, embed, softmax_loss, total_loss

__all__ = ["FAMILY_SIZE", "FamilySpec", "family", "family_cifar10", "family_grouping", "family_nmt", "family_ptb"]

FAMILY_SIZE = 32  # N (A.3)
_SPLIT_SEED = 2019  # the fixed random train/test split


@dataclass(frozen=True)
class FamilySpec:
    """A family's graphs as generator specs, split into train and test, and its target group count."""

    name: str
    train: list[str]
    test: list[str]
    groups: int


_GROUPS = {"nmt": 160, "ptb": 128, "cifar10": 128}


def family(name: str, seed: int = 0) -> FamilySpec:
    """The family ``nmt``, ``ptb`` or ``cifar10`` (``family:`` prefix allowed): 16 train and 16 test specs."""
    key = name.removeprefix("family:")
    if key not in _GROUPS:
        raise SpecError(f"unknown graph family {quote(name)} (available: {', '.join(_GROUPS)})")
    perm = np.random.default_rng(_SPLIT_SEED).permutation(FAMILY_SIZE)
    specs = [f"gen:family-{key}?index={i}&seed={seed}" for i in range(FAMILY_SIZE)]
    half = FAMILY_SIZE // 2
    return FamilySpec(key, [specs[i] for i in sorted(perm[:half])], [specs[i] for i in sorted(perm[half:])],
                      _GROUPS[key])


def family_grouping(g: CompGraph, num_groups: int) -> np.ndarray:
    """Placeto §4 grouping: Mirhoseini's rule, then Merge-and-Colocate down to ``num_groups``."""
    return merge_and_colocate(g, num_groups, op_group=mirhoseini_groups(g))


@lru_cache(maxsize=16)
def _draws(name: str, seed: int) -> tuple[tuple[int, ...], ...]:
    """FAMILY_SIZE distinct parameter tuples (architecture seed, unroll, batch) for a family."""
    lo_l, hi_l, lo_b, hi_b = {"nmt": (16, 32, 64, 128), "ptb": (25, 40, 1536, 3072),
                              "cifar10": (0, 0, 240, 360)}[name]
    rng = np.random.default_rng([seed, sum(map(ord, name))])
    seen: list[tuple[int, ...]] = []
    while len(seen) < FAMILY_SIZE:
        arch = int(rng.integers(0, 2**31)) if name != "nmt" else 0
        d = (arch, int(rng.integers(lo_l, hi_l + 1)), int(rng.integers(lo_b, hi_b + 1)))
        if d not in seen:
            seen.append(d)
    return tuple(seen)


#: A family graph's index and seed (each generator's other parameters add their own bounds).
_MEMBER = {"index": Bound(0, FAMILY_SIZE - 1), "seed": GENERATOR_SEED}


@generator("family-nmt", "Placeto nmt family graph #index: 2-layer NMT, unroll 16-32, batch 64-128 (App. A.3)", _MEMBER)
def family_nmt(index: int = 0, seed: int = 0) -> CompGraph:
    _, length, batch = _draws("nmt", seed)[index]
    return build_nmt(f"family-nmt-{index}-s{seed}", 2, 1024, length, batch, 32000)


_ACTS = ("Identity", "Sigmoid", "Tanh", "Relu")


@generator("family-ptb", "Placeto ptb family graph #index: ENAS recurrent cell, unroll 25-40, batch 1536-3072 (A.3)",
          {**_MEMBER, "nodes": GENERATOR_NODES, "units": GENERATOR_DIM, "vocab": GENERATOR_DIM})
def family_ptb(index: int = 0, seed: int = 0, nodes: int = 12, units: int = 1000, vocab: int = 10000) -> CompGraph:
    arch, steps, batch = _draws("ptb", seed)[index]
    rng = np.random.default_rng(arch)
    prev = [0] + [int(rng.integers(0, j)) for j in range(1, nodes)]
    acts = [2] + [int(rng.integers(0, len(_ACTS))) for _ in range(1, nodes)]
    loose = sorted(set(range(nodes)) - set(prev[1:]))
    tg = TrainGraph(f"family-ptb-{index}-s{seed}")
    hb = batch * units * FP32
    table = tg.variable("embedding", vocab * units * FP32, "embedding")
    w0 = tg.variable("w_x", units * 2 * units * FP32, "cell/node0")
    ws = [tg.variable("w", units * 2 * units * FP32, f"cell/node{j}") for j in range(nodes)]
    h = tg.const("h0", hb, "cell", "Zeros")
    outs = []
    for t in range(steps):
        x = embed(tg, f"embedding/step{t}", table, batch, units, t)
        hs: list[int] = []
        for j in range(nodes):
            sc = f"cell/step{t}/node{j}"
            src = h if j == 0 else hs[prev[j]]
            mm = tg.op("MatMul", "MatMul", sc, [src, ws[j]], 2 * hb, flops=2.0 * batch * units * 2 * units,
                       saved=(src, ws[j]))
            if j == 0:
                xm = tg.op("MatMul_x", "MatMul", sc, [x, w0], 2 * hb, flops=2.0 * batch * units * 2 * units,
                           saved=(x, w0))
                mm = tg.op("add", "Add", sc, [mm, xm], 2 * hb)
            split = tg.op("split", "Split", sc, [mm], 2 * hb)
            c = tg.op("Sigmoid_c", "Sigmoid", sc, [(split, hb)], hb, flops=4 * hb / FP32)
            a = tg.op(_ACTS[acts[j]], _ACTS[acts[j]], sc, [(split, hb)], hb, flops=4 * hb / FP32)
            ca = tg.op("mul_c", "Mul", sc, [c, a], hb, saved=(c, a))
            one_c = tg.op("one_minus_c", "Sub", sc, [c], hb)
            keep = tg.op("mul_keep", "Mul", sc, [one_c, src], hb, saved=(one_c, src))
            hs.append(tg.op("add_h", "Add", sc, [ca, keep], hb))
        h = tg.op("mean_loose_ends", "Mean", f"cell/step{t}/output", [hs[j] for j in loose], hb)
        outs.append(h)
    w = tg.variable("softmax_w", units * vocab * FP32, "softmax")
    bias = tg.variable("softmax_b", vocab * FP32, "softmax")
    losses = [softmax_loss(tg, f"softmax/step{t}", o, w, bias, batch, units, vocab) for t, o in enumerate(outs)]
    return tg.build(total_loss(tg, losses))


_CONV_OPS = ("sep_conv_3x3", "sep_conv_5x5", "avg_pool_3x3", "max_pool_3x3", "identity")


def _conv_branch(tg: TrainGraph, sc: str, op: int, x: int, batch: int, hw: int, ch: int, stride: int) -> int:
    out = batch * (hw // stride) ** 2 * ch * FP32
    pix = batch * (hw // stride) ** 2
    name = _CONV_OPS[op]
    if name.startswith("sep_conv"):
        k = 3 if name.endswith("3x3") else 5
        r = tg.op("Relu", "Relu", sc, [x], tg.b.out_bytes(x))
        dw_w = tg.variable("depthwise", k * k * ch * FP32, sc)
        pw_w = tg.variable("pointwise", ch * ch * FP32, sc)
        d = tg.op("depthwise", "DepthwiseConv2dNative", sc, [r, dw_w], out, flops=2.0 * pix * ch * k * k,
                  saved=(r, dw_w))
        p = tg.op("pointwise", "Conv2D", sc, [d, pw_w], out, flops=2.0 * pix * ch * ch, saved=(d, pw_w))
        gamma = tg.variable("bn_gamma", 2 * ch * FP32, sc)
        return tg.op("bn", "FusedBatchNorm", sc, [p, gamma], out, flops=8 * out / FP32, saved=(p,))
    if name.endswith("pool_3x3"):
        kind = "AvgPool" if name.startswith("avg") else "MaxPool"
        return tg.op(kind, kind, sc, [x], out, flops=9 * out / FP32, saved=(x,))
    if stride == 1:
        return x
    return tg.op("factorized_reduce", "Conv2D", sc, [x], out, flops=2.0 * pix * ch * ch)


@generator("family-cifar10", "Placeto cifar10 family graph #index: ENAS conv cells, batch 240-360 (App. A.3)",
          {**_MEMBER, "cells": GENERATOR_CELLS, "channels": GENERATOR_DIM})
def family_cifar10(index: int = 0, seed: int = 0, cells: int = 2, channels: int = 20) -> CompGraph:
    arch, _, batch = _draws("cifar10", seed)[index]
    rng = np.random.default_rng(arch)

    def sample_cell() -> list[tuple[int, int, int, int]]:
        return [(int(rng.integers(0, j + 2)), int(rng.integers(0, 5)), int(rng.integers(0, j + 2)),
                 int(rng.integers(0, 5))) for j in range(5)]

    normal, reduction = sample_cell(), sample_cell()
    tg = TrainGraph(f"family-cifar10-{index}-s{seed}")
    hw, ch = 32, channels
    images = tg.const("images", batch * 32 * 32 * 3 * FP32, "input")
    stem_w = tg.variable("w", 3 * 3 * 3 * ch * FP32, "stem")
    stem = tg.op("conv", "Conv2D", "stem", [images, stem_w], batch * hw * hw * ch * FP32,
                 flops=2.0 * batch * hw * hw * 27 * ch, saved=(images, stem_w))
    prev2 = prev = stem
    layout = [("normal", 1)] * cells + [("reduction", 2)] + [("normal", 1)] * cells + [("reduction", 2)] + \
        [("normal", 1)] * cells
    for k, (kind, stride) in enumerate(layout):
        spec = normal if kind == "normal" else reduction
        base = f"cell{k}_{kind}"
        states = [prev2, prev]
        used: set[int] = set()
        for j, (ia, oa, ib, ob) in enumerate(spec):
            sc = f"{base}/node{j}"
            sa = stride if ia < 2 else 1
            sb = stride if ib < 2 else 1
            a = _conv_branch(tg, f"{sc}/left", oa, states[ia], batch, hw if ia < 2 else hw // stride, ch, sa)
            b = _conv_branch(tg, f"{sc}/right", ob, states[ib], batch, hw if ib < 2 else hw // stride, ch, sb)
            out_hw = hw // stride
            states.append(tg.op("add", "Add", sc, [a, b], batch * out_hw * out_hw * ch * FP32))
            used.update((ia, ib))
        hw //= stride
        loose = [states[j] for j in range(2, len(states)) if j not in used]
        cat = tg.op("concat", "ConcatV2", f"{base}/output", loose, len(loose) * batch * hw * hw * ch * FP32)
        proj_w = tg.variable("w", len(loose) * ch * ch * FP32, f"{base}/output")
        out = tg.op("conv1x1", "Conv2D", f"{base}/output", [cat, proj_w], batch * hw * hw * ch * FP32,
                    flops=2.0 * batch * hw * hw * len(loose) * ch * ch, saved=(cat, proj_w))
        prev2, prev = (prev if stride == 1 else out), out
    pool = tg.op("global_avg_pool", "Mean", "head", [prev], batch * ch * FP32)
    fc_w = tg.variable("fc_w", ch * 10 * FP32, "head")
    fc_b = tg.variable("fc_b", 10 * FP32, "head")
    loss = softmax_loss(tg, "head/softmax", pool, fc_w, fc_b, batch, ch, 10)
    return tg.build(total_loss(tg, [loss]))
