"""DOPPLER's sharded dataflow graphs (Yao et al. 2025, App. D): CHAINMM, FFNN, LLAMA-BLOCK, LLAMA-LAYER.

Each graph is what a tensor-sharding compiler (Alpa, einsummable) emits for ``gpus`` devices:
every operation of the model is a **meta-op** (App. B) lowered to kernels on blocks of its
tensors. A matrix is cut into a ``gr × gc`` grid of ``gpus`` blocks (2 × 2 for 4 GPUs). Ops:

* ``input`` — one per block of an input tensor (a meta-op with shard ops only);
* shard ops — the expensive kernels: block ``matmul`` products (the contraction dimension cut
  ``s`` ways, so ``gr·gc·s`` products), ``input/straight/bcast elemwise`` kernels, partial
  ``max/sum reduction`` kernels, ``complexer`` (RoPE's float ↔ complex conversion), ``fill``;
* reduce ops — ``straight elemwise`` additions of partial products (a pairwise tree down to
  two partials) and one ``formation`` per output block, which aggregates and forms the
  meta-op's output tensor (App. A.1).

Every op's ``scope`` is ``meta{id}/shard{k}`` or ``meta{id}/reduce{k}`` (meta-op ids follow a
topological order) and its type is the App. A.1 node kind, so :func:`meta_ops` recovers the
meta-op list that the EnumerativeOptimizer (App. B, Alg. 4) walks. Note that with a cut
contraction a meta-op has ``gr·gc·s`` shard ops, more than ``gpus``: Alg. 4's ``D_whichDev``
is then taken modulo the device count. All ops are inference (``forward``); FP32; costs are
the roofline of :mod:`engine.costmodel` on a P100 (DOPPLER §5) and are GPU-only.

Our lowering rules (formation after every non-input meta-op; matmul contraction cut into
``gpus`` parts for CHAINMM and FFNN's second layer; FFNN's 8 GiB hidden activation on a
finer 4 × 4 grid so a block fits comfortably in a 16 GB P100) are ours, chosen to follow
App. A.1/B; the paper does not publish its graphs. Node counts for ``gpus=4``:

=============  ======  =====  ======================================================
graph          ours    paper  notes
=============  ======  =====  ======================================================
chainmm        112     112    5 inputs × 4, 3 matmuls × 28 (16 + 8 + 4), add 8
ffnn           188     192    H on a 4 × 4 grid; softmax as max/sub/exp/sum/div
llama-block    194     215    RMSNorm, QKV, RoPE (complexer), causal attention, Wo, residual
llama-layer    272     261    block + RMSNorm + SwiGLU FFN + residual
=============  ======  =====  ======================================================
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from engine.costmodel import FP32, P100, GraphBuilder, RooflineModel
from engine.errors import SpecError, quote
from engine.graph.compgraph import CompGraph
from engine.limits import GENERATOR_DIM, GENERATOR_GPUS
from engine.workloads.card import generator

__all__ = ["MetaOp", "chainmm", "ffnn", "llama_block", "llama_layer", "meta_ops"]


@dataclass(frozen=True)
class MetaOp:
    """One sharded operation (App. B): its shard ops and reduce ops (op indices, in index order)."""

    id: int
    shard_ops: tuple[int, ...]
    reduce_ops: tuple[int, ...]


_SCOPE = re.compile(r"^meta(\d+)/(shard|reduce)(\d+)$")


def meta_ops(graph: CompGraph) -> list[MetaOp]:
    """Meta-ops of a DOPPLER graph, parsed from op scopes ``meta{id}/shard{k}|reduce{k}``, by id.

    Raises
    ------
    ValueError
        If an op's scope does not carry a meta-op tag.
    """
    shards: dict[int, list[int]] = {}
    reduces: dict[int, list[int]] = {}
    for i, sc in enumerate(graph.scope):
        m = _SCOPE.match(sc)
        if m is None:
            raise ValueError(f"op {quote(graph.op_names[i])} has no meta-op scope (got {quote(sc)})")
        (shards if m.group(2) == "shard" else reduces).setdefault(int(m.group(1)), []).append(i)
        reduces.setdefault(int(m.group(1)), [])
        shards.setdefault(int(m.group(1)), [])
    return [MetaOp(k, tuple(shards[k]), tuple(reduces[k])) for k in sorted(shards)]


def _grid(n: int) -> tuple[int, int]:
    gr = max(d for d in range(1, math.isqrt(n) + 1) if n % d == 0)
    return gr, n // gr


@dataclass
class _Tensor:
    rows: int
    cols: int
    grid: tuple[int, int]
    ops: list[list[int]]  # [block row][block col] -> op id

    def blocks(self, r0: float, r1: float, c0: float, c1: float) -> list[tuple[int, float]]:
        """Producer blocks overlapping rows [r0, r1) × cols [c0, c1) (fractions of the tensor), with bytes."""
        gr, gc = self.grid
        out = []
        for i in range(gr):
            ov_r = min(r1, (i + 1) / gr) - max(r0, i / gr)
            if ov_r <= 1e-12:
                continue
            for j in range(gc):
                ov_c = min(c1, (j + 1) / gc) - max(c0, j / gc)
                if ov_c > 1e-12:
                    out.append((self.ops[i][j], ov_r * self.rows * ov_c * self.cols * FP32))
        return out


class _Lowering:
    """Lower meta-ops to block kernels on ``n`` GPUs."""

    def __init__(self, name: str, n: int) -> None:
        if n < 1:
            raise SpecError("DOPPLER graphs need gpus >= 1")
        self.n = n
        self.grid = _grid(n)
        self.b = GraphBuilder(name, RooflineModel((P100,)))
        self.meta = -1

    def _op(self, label: str, role: str, k: int, kind: str, **kw) -> int:
        return self.b.op(f"m{self.meta}.{label}/{role}{k}", kind, scope=f"meta{self.meta}/{role}{k}", **kw)

    def input(self, label: str, rows: int, cols: int, grid: tuple[int, int] | None = None,
              kind: str = "input") -> _Tensor:
        self.meta += 1
        gr, gc = grid or self.grid
        blk = rows * cols * FP32 / (gr * gc)
        ops = [[self._op(label, "shard", i * gc + j, kind, out_bytes=blk,
                         persistent_bytes=blk if kind == "input" else 0.0) for j in range(gc)] for i in range(gr)]
        return _Tensor(rows, cols, (gr, gc), ops)

    def _form(self, label: str, rows: int, cols: int, grid, partials: list[list[list[int]]]) -> _Tensor:
        """Reduce tree over each block's partials (pairwise down to two), then one formation per block."""
        gr, gc = grid
        blk = rows * cols * FP32 / (gr * gc)
        k = 0
        ops = [[0] * gc for _ in range(gr)]
        for i in range(gr):
            for j in range(gc):
                parts = partials[i][j]
                while len(parts) > 2:
                    nxt = []
                    for a in range(0, len(parts) - 1, 2):
                        nxt.append(self._op(label, "reduce", k, "straight elemwise", flops=blk / FP32,
                                            out_bytes=blk, inputs=[parts[a], parts[a + 1]]))
                        k += 1
                    parts = nxt + parts[len(parts) - len(parts) % 2:]
                ops[i][j] = self._op(label, "reduce", k, "formation", flops=(len(parts) - 1) * blk / FP32,
                                     out_bytes=blk, inputs=parts)
                k += 1
        return _Tensor(rows, cols, grid, ops)

    def matmul(self, label: str, a: _Tensor, b: _Tensor, split: int = 1, grid=None,
               flops_scale: float = 1.0) -> _Tensor:
        """(R × K) · (K × C) with the contraction cut ``split`` ways; output on ``grid``."""
        self.meta += 1
        gr, gc = grid or self.grid
        r, kk, c = a.rows, a.cols, b.cols
        blk = r * c * FP32 / (gr * gc)
        flops = 2.0 * (r / gr) * (c / gc) * (kk / split) * flops_scale
        partials = [[[] for _ in range(gc)] for _ in range(gr)]
        k = 0
        for i in range(gr):
            for j in range(gc):
                for t in range(split):
                    ins = a.blocks(i / gr, (i + 1) / gr, t / split, (t + 1) / split)
                    ins += b.blocks(t / split, (t + 1) / split, j / gc, (j + 1) / gc)
                    partials[i][j].append(self._op(label, "shard", k, "matmul", flops=flops, out_bytes=blk,
                                                   inputs=ins))
                    k += 1
        return self._form(label, r, c, (gr, gc), partials)

    def ewise(self, label: str, kind: str, *ts: _Tensor, flops_per_elem: float = 1.0) -> _Tensor:
        """Element-wise kernel on the first tensor's grid; a vector operand (1 × C or R × 1) broadcasts."""
        self.meta += 1
        t0 = ts[0]
        gr, gc = t0.grid
        blk = t0.rows * t0.cols * FP32 / (gr * gc)
        partials = [[[] for _ in range(gc)] for _ in range(gr)]
        k = 0
        for i in range(gr):
            for j in range(gc):
                ins = []
                for t in ts:
                    r0, r1 = (0.0, 1.0) if t.rows == 1 else (i / gr, (i + 1) / gr)
                    c0, c1 = (0.0, 1.0) if t.cols == 1 else (j / gc, (j + 1) / gc)
                    ins += t.blocks(r0, r1, c0, c1)
                partials[i][j].append(self._op(label, "shard", k, kind, flops=flops_per_elem * blk / FP32,
                                               out_bytes=blk, inputs=ins))
                k += 1
        return self._form(label, t0.rows, t0.cols, (gr, gc), partials)

    def reduce_rows(self, label: str, kind: str, t: _Tensor) -> _Tensor:
        """Reduce along columns: a partial per block, then the partials of a block row combine."""
        self.meta += 1
        gr, gc = t.grid
        vec = t.rows * FP32 / gr
        partials = [[[] for _ in range(1)] for _ in range(gr)]
        k = 0
        for i in range(gr):
            for j in range(gc):
                partials[i][0].append(self._op(label, "shard", k, kind, flops=t.rows * t.cols / (gr * gc),
                                               out_bytes=vec, inputs=t.blocks(i / gr, (i + 1) / gr, j / gc,
                                                                               (j + 1) / gc)))
                k += 1
        return self._form(label, t.rows, 1, (gr, 1), partials)

    def softmax(self, label: str, t: _Tensor) -> _Tensor:
        mx = self.reduce_rows(f"{label}.max", "max reduction", t)
        sub = self.ewise(f"{label}.sub", "bcast elemwise", t, mx)
        ex = self.ewise(f"{label}.exp", "input elemwise", sub, flops_per_elem=4.0)
        sm = self.reduce_rows(f"{label}.sum", "sum reduction", ex)
        return self.ewise(f"{label}.div", "bcast elemwise", ex, sm)

    def build(self) -> CompGraph:
        return self.b.build()


@generator("chainmm", "DOPPLER CHAINMM: (A×B)+(C×(D×E)), 10000² FP32 matrices, sharded for n GPUs (App. D.1)",
          {"gpus": GENERATOR_GPUS, "size": GENERATOR_DIM})
def chainmm(gpus: int = 4, size: int = 10000) -> CompGraph:
    """CHAINMM (App. D.1): block-sharded chain ``(A×B) + (C×(D×E))``; matmuls cut the contraction ``gpus`` ways."""
    lw = _Lowering(f"chainmm-g{gpus}", gpus)
    a, b, c, d, e = (lw.input(x, size, size) for x in "ABCDE")
    de = lw.matmul("DxE", d, e, split=gpus)
    cde = lw.matmul("CxDE", c, de, split=gpus)
    ab = lw.matmul("AxB", a, b, split=gpus)
    lw.ewise("add", "straight elemwise", ab, cde)
    return lw.build()


@generator("ffnn", "DOPPLER FFNN: X(2^15×2^5) → ReLU(XW1+b1) (2^16 wide) → Softmax(HW2+b2), sharded (App. D.2)",
          {"gpus": GENERATOR_GPUS})
def ffnn(gpus: int = 4) -> CompGraph:
    """FFNN (App. D.2): one hidden layer of 2^16 units on a batch of 2^15, softmax output."""
    lw = _Lowering(f"ffnn-g{gpus}", gpus)
    x = lw.input("X", 2**15, 2**5)
    w1 = lw.input("W1", 2**5, 2**16)
    b1 = lw.input("b1", 1, 2**16, grid=(1, gpus))
    w2 = lw.input("W2", 2**16, 2**5)
    b2 = lw.input("b2", 1, 2**5, grid=(1, gpus))
    hidden_grid = (2 * lw.grid[0], 2 * lw.grid[1])  # 8 GiB activation: 4x finer blocks
    h = lw.matmul("XW1", x, w1, split=1, grid=hidden_grid)
    h = lw.ewise("b1", "bcast elemwise", h, b1)
    h = lw.ewise("relu", "input elemwise", h)
    z = lw.matmul("HW2", h, w2, split=gpus)
    z = lw.ewise("b2", "bcast elemwise", z, b2)
    lw.softmax("softmax", z)
    return lw.build()


def _llama(lw: _Lowering, seq: int, dim: int, heads: int, ffn: bool) -> None:
    x = lw.input("x", seq, dim)
    norm_w = lw.input("attn_norm.w", 1, dim, grid=(1, lw.n))
    wq, wk, wv, wo = (lw.input(w, dim, dim) for w in ("Wq", "Wk", "Wv", "Wo"))
    freqs = lw.input("rope.freqs", seq, dim)
    mask = lw.input("mask", seq, seq * heads, kind="fill")

    def rmsnorm(label: str, t: _Tensor, w: _Tensor) -> _Tensor:
        ss = lw.reduce_rows(f"{label}.sumsq", "sum reduction", t)
        return lw.ewise(f"{label}.scale", "bcast elemwise", t, ss, w, flops_per_elem=3.0)

    h = rmsnorm("attn_norm", x, norm_w)
    q, k, v = (lw.matmul(n, h, w) for n, w in (("q", wq), ("k", wk), ("v", wv)))

    def rope(label: str, t: _Tensor) -> _Tensor:
        z = lw.ewise(f"{label}.to_complex", "complexer", t)
        z = lw.ewise(f"{label}.rotate", "straight elemwise", z, freqs, flops_per_elem=6.0)
        return lw.ewise(f"{label}.to_real", "complexer", z)

    q, k = rope("rope_q", q), rope("rope_k", k)
    kt = _Tensor(k.cols, k.rows, k.grid[::-1], [list(col) for col in zip(*k.ops, strict=True)])
    # scores per head: (seq × d) · (d × seq) for each head → seq × (seq·heads), same FLOPs as one big matmul
    scores = lw.matmul("QKt", q, _Tensor(kt.rows, kt.cols * heads, kt.grid, kt.ops), flops_scale=1.0 / heads)
    scores = lw.ewise("scale_mask", "straight elemwise", scores, mask, flops_per_elem=2.0)
    p = lw.softmax("softmax", scores)
    attn = lw.matmul("PV", p, _Tensor(v.rows * heads, v.cols, v.grid, v.ops), flops_scale=1.0 / heads)
    o = lw.matmul("o", attn, wo)
    x = lw.ewise("residual_attn", "straight elemwise", x, o)
    if not ffn:
        return
    ffn_norm_w = lw.input("ffn_norm.w", 1, dim, grid=(1, lw.n))
    hidden = 11008  # Llama-2 7B FFN width
    w1, w3 = lw.input("W1", dim, hidden), lw.input("W3", dim, hidden)
    w2 = lw.input("W2", hidden, dim)
    h = rmsnorm("ffn_norm", x, ffn_norm_w)
    g1, g3 = lw.matmul("w1", h, w1), lw.matmul("w3", h, w3)
    act = lw.ewise("silu", "input elemwise", g1, flops_per_elem=5.0)
    gated = lw.ewise("gate", "straight elemwise", act, g3)
    out = lw.matmul("w2", gated, w2)
    lw.ewise("residual_ffn", "straight elemwise", x, out)


@generator("llama-block", "DOPPLER LLAMA-BLOCK: Llama-7B attention block, seq 4096, sharded for n GPUs (App. D.3)",
          {"gpus": GENERATOR_GPUS, "seq": GENERATOR_DIM})
def llama_block(gpus: int = 4, seq: int = 4096) -> CompGraph:
    """Llama-7B (dim 4096, 32 heads) attention block: RMSNorm, QKV, RoPE, causal attention, Wo, residual."""
    lw = _Lowering(f"llama-block-g{gpus}", gpus)
    _llama(lw, seq, 4096, 32, ffn=False)
    return lw.build()


@generator("llama-layer", "DOPPLER LLAMA-LAYER: full Llama-7B layer (attention + SwiGLU FFN), seq 4096 (App. D.3)",
          {"gpus": GENERATOR_GPUS, "seq": GENERATOR_DIM})
def llama_layer(gpus: int = 4, seq: int = 4096) -> CompGraph:
    """Llama-7B layer: the attention block followed by RMSNorm, SwiGLU FFN (11008 wide) and residual."""
    lw = _Lowering(f"llama-layer-g{gpus}", gpus)
    _llama(lw, seq, 4096, 32, ffn=True)
    return lw.build()
