"""Placeto's policy network (Addanki et al. 2019, §2.2; hidden sizes from the appendix of the other version).

Input per op group (§2.1): run time, output size, one-hot current device, "visited" flag,
"current" flag. Run time and output size are divided by the graph's mean and log1p-scaled, so
graphs of different sizes and batch sizes look alike. Then:

1. **Embedding** — an MLP maps the raw features to |E| = 8 dimensions.
2. **Local neighbourhood summarisation** (Fig. 3b) — two directions of message passing,
   top-down (messages flow parent → child) and bottom-up (child → parent), each with its own
   f and g shared by all nodes and rounds, repeated k times (k = 4 or 8, appendix):

       x_v ← x_v + g( 1/|ξ(v)| Σ_{u∈ξ(v)} f(x_u) )      (ξ(v): v's parents, resp. children)

   Each direction is a PyG :class:`~torch_geometric.nn.MessagePassing` layer (:class:`DirectionalPass`).
   **Deviations:** (a) the paper writes ``x_v ← g(Σ_{u∈ξ(v)} f(x_u))``, which erases the features
   of nodes with no neighbour in that direction (every source node in the top-down pass); we
   keep the node's own embedding as Decima does (Mao et al. 2019, the GNN Placeto builds on);
   (b) we average over ξ(v) instead of summing, for the reason given under 3. The two
   directions' results are concatenated.
3. **Pooling summaries** (Fig. 3c–d) — for the current node v, ``h_i(Σ_{u∈S_i(v)} l_i(x_u))`` over
   its parents (nodes that reach v), children (nodes v reaches) and parallel nodes (neither).
   **Deviation:** we average over each set instead of summing: sums grow with the graph (a
   set can hold 100+ groups), which saturates the softmax from the first episode on large
   graphs (measured: entropy 0 at initialisation on a 128-group NMT graph) and ties a policy
   to the graph sizes it was trained on.
4. **Policy** — a two-hidden-layer (16 units) MLP over [x_v, three summaries] with a softmax
   over the devices; devices that cannot run the group are masked out.

Every f, g, l, h is an MLP with two hidden layers of d = 8 units and ReLU (appendix A.7).

Ablations of §4.3: ``simple-partitioner`` drops step 2 (pooling over the raw embeddings);
``simple-aggregator`` drops steps 2 and 3 and feeds ``h(Σ_{all u} l(x_u))`` to the policy.
§4.3 does not say how the aggregator knows which group it places; here that group shows only
through its "current" flag, one row of the mean, so the policy treats the groups nearly alike
(trained on the nmt family with ``discount=0`` its greedy episodes move 96 % of the groups off
the start, the full network's 24 %: ``benchmarks/bench_learned_gaps.py``,
docs/lab/2026-11-24-placeto-ablations-full.md).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch
from torch import nn
from torch_geometric.nn import MessagePassing

__all__ = ["PlacetoNet", "SparsePair", "StateBatch", "mlp", "spmm"]

# CSR products are all this module needs of torch.sparse, and they are stable on CPU
warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")

NEG = -1e9


def mlp(inp: int, hidden: int, out: int, layers: int = 2, out_gain: float = 1.0) -> nn.Sequential:
    """``layers`` hidden layers of ``hidden`` ReLU units, then a linear output.

    Hidden layers use He initialisation, the output layer Glorot (gain ``out_gain``), biases
    start at 0. With PyTorch's default the signal shrinks by about half per layer, and through
    the ~20 layers between a neighbour's features and the logits the policy starts (and stays)
    blind to the graph.
    """
    mods: list[nn.Module] = []
    width = inp
    for _ in range(layers):
        layer = nn.Linear(width, hidden)
        nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")
        nn.init.zeros_(layer.bias)
        mods += [layer, nn.ReLU()]
        width = hidden
    last = nn.Linear(width, out)
    nn.init.xavier_uniform_(last.weight, gain=out_gain)
    nn.init.zeros_(last.bias)
    mods.append(last)
    return nn.Sequential(*mods)


@dataclass(frozen=True)
class SparsePair:
    """A sparse CSR matrix and its transpose (the transpose serves the backward pass)."""

    a: torch.Tensor
    a_t: torch.Tensor | None  # None when no gradient will be taken


class _SpMM(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a: torch.Tensor, a_t: torch.Tensor | None, x: torch.Tensor) -> torch.Tensor:
        ctx.a_t = a_t
        return a @ x

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return None, None, ctx.a_t @ grad


def spmm(m: SparsePair, x: torch.Tensor) -> torch.Tensor:
    """``m.a @ x`` with the gradient ``m.a_t @ grad`` (CSR products both ways, no transposition)."""
    return _SpMM.apply(m.a, m.a_t, x)


class DirectionalPass(MessagePassing):
    """k rounds of ``x_v ← x_v + g(Σ_u A_vu f(x_u))`` in one direction (Placeto §2.2, Fig. 3b).

    ``adj_t.a`` is a sparse CSR matrix A whose row v weighs v's in-neighbours in this direction
    (``adj_t.a_t`` its transpose, for the gradient). The agent passes the row-normalised
    adjacency (:mod:`policies.rl.placeto.state`: ``A_vu = 1/|ξ(v)|``), so the aggregation is the
    **mean** over the in-neighbours; a 0/1 matrix would give the paper's sum. Because the
    adjacency is a sparse matrix, PyG's :meth:`propagate` calls :meth:`message_and_aggregate`
    — the message (``f(x_u)``, computed once per node before propagating) and the weighted
    aggregation fused into one sparse-dense product, an order of magnitude faster than a
    per-edge scatter on CPU — and never a per-edge ``message``; no ``aggr`` module is used.
    """

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__(aggr=None)
        self.f = mlp(dim, hidden, dim)
        self.g = mlp(dim, hidden, dim)

    def forward(self, x: torch.Tensor, adj_t: SparsePair, rounds: int) -> torch.Tensor:
        for _ in range(rounds):
            x = x + self.g(self.propagate(adj_t.a, x=self.f(x), transposed=adj_t.a_t))
        return x

    def message_and_aggregate(self, adj_t: torch.Tensor, x: torch.Tensor, transposed: torch.Tensor) -> torch.Tensor:
        return _SpMM.apply(adj_t, transposed, x)


@dataclass
class StateBatch:
    """S placement states (possibly of different graphs) as one disjoint-union graph of M nodes.

    Sparse matrices are CSR averaging matrices (a row's values are 1 / its length): ``down``
    (M × M) row v = v's parents, ``up`` (M × M) row v = v's children, ``pools`` three (S × M)
    matrices whose row s averages the parents, children and parallel nodes of state s's
    current node, ``members`` (S × M) row s averages all nodes of state s.
    """

    x: torch.Tensor  # (M, F) raw node features
    down: SparsePair
    up: SparsePair
    current: torch.Tensor  # (S,) global index of each state's current node
    pools: list[SparsePair]
    members: SparsePair
    mask: torch.Tensor  # (S, D) devices allowed for the current node


class PlacetoNet(nn.Module):
    """Placeto's GNN + policy; ``forward(batch)`` gives masked device logits, shape (S, D)."""

    def __init__(self, num_devices: int, *, emb: int = 8, hidden: int = 8, head: int = 16, rounds: int = 4,
                 variant: str = "full") -> None:
        super().__init__()
        self.num_devices = num_devices
        self.rounds = rounds
        self.variant = variant
        features = 4 + num_devices
        self.embed = mlp(features, hidden, emb)
        node_dim = emb
        if variant == "full":
            self.down = DirectionalPass(emb, hidden)
            self.up = DirectionalPass(emb, hidden)
            node_dim = 2 * emb
        if variant == "simple-aggregator":
            self.agg_l = mlp(emb, hidden, emb)
            self.agg_h = mlp(emb, hidden, emb)
            head_in = emb
        else:
            self.pool_l = nn.ModuleList(mlp(node_dim, hidden, emb) for _ in range(3))
            self.pool_h = nn.ModuleList(mlp(emb, hidden, emb) for _ in range(3))
            head_in = node_dim + 3 * emb
        self.policy = mlp(head_in, head, num_devices, out_gain=0.01)  # near-uniform at the start

    def forward(self, b: StateBatch) -> torch.Tensor:
        x = self.embed(b.x)
        if self.variant == "simple-aggregator":
            z = self.agg_h(spmm(b.members, self.agg_l(x)))
        else:
            if self.variant == "full":
                x = torch.cat([self.down(x, b.down, self.rounds), self.up(x, b.up, self.rounds)], dim=1)
            parts = [x[b.current]]
            for pool, lf, hf in zip(b.pools, self.pool_l, self.pool_h, strict=True):
                parts.append(hf(spmm(pool, lf(x))))
            z = torch.cat(parts, dim=1)
        return self.policy(z).masked_fill(~b.mask, NEG)
