"""Recurrent training-step graphs at TensorFlow-op level: RNNLM and NMT (Mirhoseini et al. 2017 Table 1,
Placeto App. A.2).

* ``rnnlm`` — Zaremba-style language model: per step an embedding lookup, 2 LSTM layers of
  2048 units, a softmax prediction (vocabulary 10,000, PTB) and cross-entropy; unroll 40,
  batch 64 (Mirhoseini §4.1).
* ``nmt`` — encoder–decoder LSTM with Luong attention: layers 2 or 4 of 1024 units, source
  and target length 32 or 40, batch 64 or 128, vocabulary 32,000 (Placeto A.2 / Mirhoseini §4.1).

The forward pass is written op by op as TF's ``BasicLSTMCell`` emits it (concat, one MatMul
for the four gates, BiasAdd, Split, Sigmoid / Tanh per gate, Mul / Add for the cell state);
the backward pass is derived mechanically (:class:`TrainGraph`): one gradient op per
differentiable input of every forward op, an ``AddN`` where a tensor has several consumers
(weights shared over time steps accumulate their per-step gradients), and one
``ApplyGradientDescent`` per variable (phase ``update``). Costs: roofline of
:mod:`engine.costmodel` for a K80 die and the 18-core Haswell CPU. Scopes look like
``encoder/layer1/step3``, ``decoder/attention/step5``, ``decoder/softmax/step5``; variables
live in ``encoder/layer1`` etc., so a human-expert placer can place by layer.

Sizes. *Units* are Mirhoseini §4.1's manual groups (each LSTM cell, embedding lookup, attention
step and softmax step, plus the few variable / loss scopes), counting a unit's forward and
backward once as TF's colocation of gradients with their ops does:
:func:`engine.grouping.rules.unit_groups`, ``placelab graph info``'s "layer units", and the learned
placers' ``grouping=units``. Per step RNNLM has 4 units (lookup, 2 cells, softmax) plus 5
variable / loss units; NMT 8 (2 lookups, 2 + 2 cells, attention, softmax) plus 10. An acyclic
contraction cannot hold a cell's forward and backward together (the forward cell feeds later
cells whose gradients come back to it), so :func:`engine.grouping.rules.scope_groups` at depth 3 keeps
them apart, about twice as many groups. The §3.3 rule alone ("X consumed only by Y") merges far
less here because every forward op also feeds its gradient:

==============================  ======  ======  ==================  ==========  ==================
graph                           ops     units   scope groups (d=3)  §3.3 rule   paper ops / groups
==============================  ======  ======  ==================  ==========  ==================
rnnlm (2×2048, L=40, b=64)      3,661   165     334                 1,649       8,943 / 188
nmt (2×1024, L=40, b=64)        7,522   330     668                 3,463       22,097 / 280
nmt (4×1024, L=32, b=128)       10,910  398     808                 5,087       10,812 (Placeto A.2)
==============================  ======  ======  ==================  ==========  ==================

We emit fewer ops than TF (no Identity / Shape / Reshape / control-flow plumbing, one
gradient op per input); the compute-bearing ops are all there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.costmodel import CPU_HASWELL_18C, FP32, K80, GraphBuilder, RooflineModel
from engine.errors import SpecError
from engine.graph.compgraph import CompGraph
from engine.limits import GENERATOR_BATCH, GENERATOR_DIM, GENERATOR_LAYERS, GENERATOR_LENGTH
from engine.workloads.card import generator

__all__ = ["TrainGraph", "nmt", "rnnlm"]


@dataclass
class _Fwd:
    op: int
    inputs: list[tuple[int, float]]  # (forward op, bytes) that get gradients
    saved: list[int]  # forward ops whose outputs the gradient reads
    flops: float
    scope: str
    name: str


@dataclass
class TrainGraph:
    """Write a forward pass op by op; :meth:`build` appends its backward pass and updates."""

    name: str
    model: RooflineModel = field(default_factory=lambda: RooflineModel((K80, CPU_HASWELL_18C)))

    def __post_init__(self) -> None:
        self.b = GraphBuilder(self.name, self.model)
        self.fwd: dict[int, _Fwd] = {}
        self.variables: list[int] = []
        self._names: set[str] = set()

    def _unique(self, name: str) -> str:
        base, k = name, 1
        while name in self._names:
            k += 1
            name = f"{base}_{k}"
        self._names.add(name)
        return name

    def variable(self, name: str, nbytes: float, scope: str) -> int:
        """A trainable variable (persistent bytes = value + one optimizer slot)."""
        i = self.b.op(self._unique(f"{scope}/{name}"), "VariableV2", out_bytes=nbytes, persistent_bytes=2 * nbytes,
                      phase="forward", scope=scope)
        self.variables.append(i)
        self.fwd[i] = _Fwd(i, [], [], 0.0, scope, name)
        return i

    def const(self, name: str, nbytes: float, scope: str, op_type: str = "Placeholder") -> int:
        """A non-trainable input (data, labels, initial state): no gradient."""
        return self.b.op(self._unique(f"{scope}/{name}"), op_type, out_bytes=nbytes, phase="forward", scope=scope)

    def op(self, name: str, op_type: str, scope: str, inputs, out_bytes: float, flops: float = 0.0,
           grad: bool = True, saved: tuple[int, ...] = ()) -> int:
        """A forward op. ``inputs``: op ids or (op id, bytes); ``flops`` defaults to one per output element."""
        flops = flops or out_bytes / FP32
        ins = [(x, self.b.out_bytes(x)) if isinstance(x, int) else x for x in inputs]
        i = self.b.op(self._unique(f"{scope}/{name}"), op_type, flops=flops, out_bytes=out_bytes, inputs=ins,
                      phase="forward", scope=scope)
        diff = [(s, by) for s, by in ins if s in self.fwd] if grad else []
        self.fwd[i] = _Fwd(i, diff, list(saved), flops, scope, name)
        return i

    def build(self, loss: int) -> CompGraph:
        """Append gradients of ``loss`` in reverse op order, then one update per variable."""
        b = self.b
        grads: dict[int, list[tuple[int, float]]] = {loss: []}
        total: dict[int, int] = {}
        for i in sorted(self.fwd, reverse=True):
            f = self.fwd[i]
            if i != loss and i not in grads:
                continue
            parts = grads.get(i, [])
            if i == loss:
                dy = b.op(self._unique(f"{f.scope}/{f.name}/grad_seed"), "Fill", out_bytes=FP32,
                          phase="backward", scope=f.scope)
            elif len(parts) == 1:
                dy = parts[0][0]
            else:
                nbytes = b.out_bytes(i)
                dy = b.op(self._unique(f"{f.scope}/{f.name}/grad_accum"), "AddN", flops=len(parts) * nbytes / FP32,
                          out_bytes=nbytes, inputs=parts, phase="backward", scope=f.scope)
            total[i] = dy
            for k, (x, nbytes) in enumerate(f.inputs):
                xb = min(nbytes, b.out_bytes(x)) if nbytes else b.out_bytes(x)  # a slice's gradient is a slice
                ins = [(dy, b.out_bytes(dy))] + [(s, b.out_bytes(s)) for s in f.saved]
                other = [s for s, _ in f.inputs if s != x][:1]
                ins += [(s, b.out_bytes(s)) for s in other if s not in f.saved]
                g = b.op(self._unique(f"{f.scope}/{f.name}/grad{k}"), f"{b._rows[i][1]}Grad",
                         flops=max(f.flops, xb / FP32), out_bytes=xb, inputs=ins, phase="backward", scope=f.scope)
                grads.setdefault(x, []).append((g, xb))
        for v in self.variables:
            if v not in total:
                continue
            f = self.fwd[v]
            nbytes = b.out_bytes(v)
            b.op(self._unique(f"{f.scope}/{f.name}/ApplyGradientDescent"), "ApplyGradientDescent",
                 flops=2 * nbytes / FP32, out_bytes=0.0, extra_bytes=nbytes, inputs=[(total[v], nbytes), (v, 0.0)],
                 phase="update", scope=f.scope)
        return b.build()


def lstm_cell(tg: TrainGraph, scope: str, x: int, h: int, c: int, w: int, bias: int, batch: int,
              units: int) -> tuple[int, int]:
    """TF BasicLSTMCell, one step: returns (h, c) op ids."""
    hb = batch * units * FP32
    in_bytes = tg.b.out_bytes(x) + hb
    xh = tg.op("concat", "ConcatV2", scope, [x, h], in_bytes)
    gates = tg.op("MatMul", "MatMul", scope, [xh, w], 4 * hb,
                  flops=2.0 * batch * (in_bytes / FP32 / batch) * 4 * units, saved=(xh, w))
    gates = tg.op("BiasAdd", "BiasAdd", scope, [gates, bias], 4 * hb)
    split = tg.op("split", "Split", scope, [gates], 4 * hb)
    i = tg.op("Sigmoid_i", "Sigmoid", scope, [(split, hb)], hb, flops=4 * hb / FP32)
    j = tg.op("Tanh_j", "Tanh", scope, [(split, hb)], hb, flops=4 * hb / FP32)
    fa = tg.op("add_forget_bias", "Add", scope, [(split, hb)], hb)
    f = tg.op("Sigmoid_f", "Sigmoid", scope, [fa], hb, flops=4 * hb / FP32)
    o = tg.op("Sigmoid_o", "Sigmoid", scope, [(split, hb)], hb, flops=4 * hb / FP32)
    cf = tg.op("mul_cf", "Mul", scope, [c, f], hb, saved=(c, f))
    ij = tg.op("mul_ij", "Mul", scope, [i, j], hb, saved=(i, j))
    c_new = tg.op("add_c", "Add", scope, [cf, ij], hb)
    tc = tg.op("Tanh_c", "Tanh", scope, [c_new], hb, flops=4 * hb / FP32)
    h_new = tg.op("mul_h", "Mul", scope, [tc, o], hb, saved=(tc, o))
    return h_new, c_new


def lstm_vars(tg: TrainGraph, scope: str, in_units: int, units: int) -> tuple[int, int]:
    w = tg.variable("kernel", (in_units + units) * 4 * units * FP32, scope)
    return w, tg.variable("bias", 4 * units * FP32, scope)


def embed(tg: TrainGraph, scope: str, table: int, batch: int, dim: int, step: int) -> int:
    ids = tg.const("ids", batch * FP32, scope)
    return tg.op("embedding_lookup", "GatherV2", scope, [(table, batch * dim * FP32), ids], batch * dim * FP32)


def softmax_loss(tg: TrainGraph, scope: str, h: int, w: int, bias: int, batch: int, units: int, vocab: int) -> int:
    """Per-step projection to the vocabulary and sparse softmax cross-entropy; returns the loss op."""
    lb = batch * vocab * FP32
    logits = tg.op("MatMul", "MatMul", scope, [h, (w, units * vocab * FP32)], lb,
                   flops=2.0 * batch * units * vocab, saved=(h, w))
    logits = tg.op("BiasAdd", "BiasAdd", scope, [logits, bias], lb)
    labels = tg.const("labels", batch * FP32, scope)
    xent = tg.op("xent", "SparseSoftmaxCrossEntropyWithLogits", scope, [logits, labels], batch * FP32,
                 flops=5 * lb / FP32, saved=(logits,))
    return tg.op("Sum", "Sum", scope, [xent], FP32)


def _lstm_stack(tg: TrainGraph, prefix: str, inputs: list[int], layers: int, units: int, in_units: int,
                batch: int, state=None) -> tuple[list[int], list[tuple[int, int]]]:
    """Run ``layers`` LSTM layers over the step inputs; returns top outputs and final (h, c) per layer."""
    hb = batch * units * FP32
    finals = []
    outs = inputs
    for layer in range(1, layers + 1):
        w, bias = lstm_vars(tg, f"{prefix}/layer{layer}", in_units if layer == 1 else units, units)
        if state is None:
            h = tg.const("h0", hb, f"{prefix}/layer{layer}", "Zeros")
            c = tg.const("c0", hb, f"{prefix}/layer{layer}", "Zeros")
        else:
            h, c = state[layer - 1]
        nxt = []
        for t, x in enumerate(outs):
            h, c = lstm_cell(tg, f"{prefix}/layer{layer}/step{t}", x, h, c, w, bias, batch, units)
            nxt.append(h)
        finals.append((h, c))
        outs = nxt
    return outs, finals


def total_loss(tg: TrainGraph, losses: list[int]) -> int:
    s = tg.op("AddN", "AddN", "loss", losses, FP32)
    return tg.op("truediv", "RealDiv", "loss", [s], FP32)


@generator("rnnlm", "RNNLM training step: 2 LSTM layers of 2048, unroll 40, batch 64 (Mirhoseini 2017 Table 1)",
          {"layers": GENERATOR_LAYERS, "units": GENERATOR_DIM, "steps": GENERATOR_LENGTH, "batch": GENERATOR_BATCH,
           "vocab": GENERATOR_DIM})
def rnnlm(layers: int = 2, units: int = 2048, steps: int = 40, batch: int = 64, vocab: int = 10000) -> CompGraph:
    """Zaremba-style LSTM language model, one SGD step, built op by op."""
    tg = TrainGraph(f"rnnlm-{layers}x{units}-L{steps}-b{batch}")
    table = tg.variable("embedding", vocab * units * FP32, "embedding")
    xs = [embed(tg, f"embedding/step{t}", table, batch, units, t) for t in range(steps)]
    outs, _ = _lstm_stack(tg, "lm", xs, layers, units, units, batch)
    w = tg.variable("softmax_w", units * vocab * FP32, "softmax")
    bias = tg.variable("softmax_b", vocab * FP32, "softmax")
    losses = [softmax_loss(tg, f"softmax/step{t}", h, w, bias, batch, units, vocab) for t, h in enumerate(outs)]
    return tg.build(total_loss(tg, losses))


def build_nmt(name: str, layers: int, units: int, length: int, batch: int, vocab: int) -> CompGraph:
    """Encoder–decoder LSTM with Luong (multiplicative) attention, one SGD step."""
    if min(layers, units, length, batch, vocab) < 1:
        raise SpecError("NMT graphs need layers, units, length, batch and vocab >= 1")
    tg = TrainGraph(name)
    hb = batch * units * FP32
    src_table = tg.variable("embedding", vocab * units * FP32, "encoder/embedding")
    tgt_table = tg.variable("embedding", vocab * units * FP32, "decoder/embedding")
    xs = [embed(tg, f"encoder/embedding/step{t}", src_table, batch, units, t) for t in range(length)]
    enc, finals = _lstm_stack(tg, "encoder", xs, layers, units, units, batch)
    memory = tg.op("stack", "Pack", "encoder/memory", enc, length * hb)
    ys = [embed(tg, f"decoder/embedding/step{t}", tgt_table, batch, units, t) for t in range(length)]
    dec, _ = _lstm_stack(tg, "decoder", ys, layers, units, units, batch, state=finals)
    w_att = tg.variable("attention_w", 2 * units * units * FP32, "decoder/attention")
    w_out = tg.variable("softmax_w", units * vocab * FP32, "decoder/softmax")
    b_out = tg.variable("softmax_b", vocab * FP32, "decoder/softmax")
    losses = []
    for t, h in enumerate(dec):
        sc = f"decoder/attention/step{t}"
        score = tg.op("scores", "BatchMatMul", sc, [h, memory], batch * length * FP32,
                      flops=2.0 * batch * length * units, saved=(h, memory))
        align = tg.op("Softmax", "Softmax", sc, [score], batch * length * FP32, saved=())
        ctx = tg.op("context", "BatchMatMul", sc, [align, memory], hb, flops=2.0 * batch * length * units,
                    saved=(align, memory))
        cat = tg.op("concat", "ConcatV2", sc, [ctx, h], 2 * hb)
        att = tg.op("MatMul", "MatMul", sc, [cat, w_att], hb, flops=2.0 * batch * 2 * units * units, saved=(cat, w_att))
        att = tg.op("Tanh", "Tanh", sc, [att], hb, flops=4 * hb / FP32)
        losses.append(softmax_loss(tg, f"decoder/softmax/step{t}", att, w_out, b_out, batch, units, vocab))
    return tg.build(total_loss(tg, losses))


@generator("nmt", "NMT training step: encoder-decoder LSTM + attention, layers 2|4 of 1024, length 32|40, batch 64|128",
          {"layers": GENERATOR_LAYERS, "units": GENERATOR_DIM, "length": GENERATOR_LENGTH, "batch": GENERATOR_BATCH,
           "vocab": GENERATOR_DIM})
def nmt(layers: int = 2, units: int = 1024, length: int = 40, batch: int = 64, vocab: int = 32000) -> CompGraph:
    """NMT of Mirhoseini Table 1 (2 layers, length 40, batch 64) and Placeto A.2 (2 or 4 layers, 32, 128)."""
    return build_nmt(f"nmt-{layers}x{units}-L{length}-b{batch}", layers, units, length, batch, vocab)
