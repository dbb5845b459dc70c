"""DOPPLER's dual-policy networks (Yao et al. 2025, §4.2 eq. 2–8).

MPNN (eq. 2, Gilmer et al. 2017's edge-network MPNN, as PyG's ``NNConv`` + GRU), run on the
graph made bidirected, K = ``rounds`` rounds with shared weights::

    h⁰_v = W_in X_V[v]
    m^k_v = ReLU( W_root h^{k−1}_v + Σ_{u ∈ N(v)} h^{k−1}_u · Θ(e_uv) + b )     (NNConv, sum aggregation)
    h^k_v = GRU(m^k_v, h^{k−1}_v)

Θ is the edge network: the scalar edge feature → a (hidden × hidden) message matrix, through one
hidden layer of width ``edge_hidden`` (Linear, ReLU, Linear: dgllife's ``MPNNGNN``, which the
authors' code uses with width 128).
:class:`EdgeNetworkConv` computes exactly NNConv's update; it evaluates Θ once per distinct
edge feature and per forward pass (the feature is static, DOPPLER graphs have a handful of
distinct values), instead of once per edge and per round.

SEL (eq. 3–4), per op v: ``h_v = [Z[v] ‖ H[v] ‖ Σ_{u ∈ b-path(v)} H[u] ‖ Σ_{u ∈ t-path(v)} H[u]]``,
``score(v) = W₂ LeakyReLU(W₁ h_v + b₁) + b₂`` (512 → 64 → 1) and ``Q_G = softmax`` over the
candidates. Z = W_z X_V (the paper's FFNN is affine, §4.2). SEL's inputs are static, so its
scores are computed once per episode.

PLC (eq. 5–8), per device d for the selected op v:
``h_{v,d} = [Y[d] ‖ H[v] ‖ Z[v] ‖ Σ_{u placed on d} H[u]]``, Y = W_y X_D,
``H'_D = LeakyReLU(W₁ H_D + b₁)``, ``Q_D = softmax(W₂ H'_D + b₂)`` over the devices (512 → 64 → 1).

LeakyReLU has PyTorch's slope 0.01 and is applied in the heads only; the authors' code uses 0.1 and also
applies it to the MPNN's output and to the feature projections (xinyuyao/Doppler@87dda0d
``scheduler/rl_agent.py:48, 53-60, 124, 128-130, 139``).

Each policy has its own MPNN; each runs once per episode (§4.3, App. G.3).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import torch
from torch import nn
from torch_geometric.nn import MessagePassing

from policies.rl.doppler.rollout import AssignEpisode

__all__ = ["MPNN", "DopplerNet", "EdgeNetworkConv", "EdgePairs", "PlcPolicy", "SelPolicy", "episode_loss"]


class EdgePairs(NamedTuple):
    """The distinct (source op, edge type) pairs of a graph's edges, grouped by type: what
    :class:`EdgeNetworkConv` transforms. ``node``: each pair's op; the pairs of type k are
    ``node[bounds[k]:bounds[k + 1]]``; ``edge_pair``: each edge's pair."""

    node: torch.Tensor
    bounds: tuple[int, ...]
    edge_pair: torch.Tensor

    @classmethod
    def of(cls, edge_index: torch.Tensor, edge_type: torch.Tensor, num_nodes: int, num_types: int) -> EdgePairs:
        key = edge_type * num_nodes + edge_index[0]
        pairs, edge_pair = torch.unique(key, return_inverse=True)  # sorted: by type, then op
        bounds = torch.searchsorted(pairs, torch.arange(num_types + 1) * num_nodes)
        return cls(pairs % num_nodes, tuple(bounds.tolist()), edge_pair)


class EdgeNetworkConv(MessagePassing):
    """NNConv (Gilmer et al. 2017; PyG ``NNConv(aggr="add", root_weight=True)``) with per-type weights.

    ``x'_v = W_root x_v + Σ_{(u→v)} x_u · Θ_{type(u→v)} + b`` where ``theta`` holds one
    (in × out) matrix per edge type and ``edge_type`` each edge's type. ``x_u · Θ_k`` is computed once
    per distinct (u, k) among the edges' sources (:class:`EdgePairs`; ``pairs``, computed here when not
    given): DOPPLER's graphs have 3–4× fewer of them than ops × types.

    Θ is split into its per-type matrices with one ``unbind``, not indexed ``theta[k]`` type by type: the
    backward of each ``theta[k]`` writes its gradient into a zero tensor of Θ's full size (types × in × out),
    so indexing costs types² × in × out per round in the backward pass, where ``unbind``'s backward stacks
    the per-type gradients once (types × in × out). Same products, gradients equal bit for bit. It matters
    where most edges carry their own cost, as on random DAGs (docs/lab/2026-11-29-doppler-episode-cost.md).
    ``theta`` may also come split already (a sequence of the per-type matrices): :class:`MPNN` splits it
    once for its K rounds, so each type's gradient sums over the rounds and is stacked once per pass, not
    once per round (the same sums in the same order: gradients equal bit for bit).
    """

    def __init__(self, channels: int) -> None:
        super().__init__(aggr="add")
        self.channels = channels
        self.root = nn.Linear(channels, channels, bias=False)
        self.bias = nn.Parameter(torch.zeros(channels))

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, edge_type: torch.Tensor,
                theta: torch.Tensor | Sequence[torch.Tensor], pairs: EdgePairs | None = None) -> torch.Tensor:
        mats = theta.unbind(0) if isinstance(theta, torch.Tensor) else theta
        p = pairs if pairs is not None else EdgePairs.of(edge_index, edge_type, x.size(0), len(mats))
        parts = [x[p.node[a:b]] @ theta_k for theta_k, (a, b) in zip(mats, itertools.pairwise(p.bounds), strict=True)]
        xw = torch.cat(parts) if parts else x.new_zeros((0, self.channels))  # a graph without edges has no types
        msg = xw[p.edge_pair]
        return self.propagate(edge_index, msg=msg, size=(x.size(0), x.size(0))) + self.root(x) + self.bias

    def message(self, msg: torch.Tensor) -> torch.Tensor:
        return msg


class MPNN(nn.Module):
    """Eq. 2: input projection, ``rounds`` rounds of edge-network convolution + GRU, shared weights."""

    def __init__(self, in_dim: int = 5, hidden: int = 128, rounds: int = 6, edge_hidden: int = 128) -> None:
        super().__init__()
        self.hidden, self.rounds = hidden, rounds
        self.inp = nn.Linear(in_dim, hidden)
        self.edge_net = nn.Sequential(nn.Linear(1, edge_hidden), nn.ReLU(), nn.Linear(edge_hidden, hidden * hidden))
        self.conv = EdgeNetworkConv(hidden)
        self.gru = nn.GRUCell(hidden, hidden)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, edge_type: torch.Tensor,
                type_attr: torch.Tensor) -> torch.Tensor:
        """Node embeddings (n × hidden); ``type_attr`` (types × 1) is each edge type's feature."""
        h = self.inp(x)
        theta = self.edge_net(type_attr).view(-1, self.hidden, self.hidden)
        pairs = EdgePairs.of(edge_index, edge_type, x.size(0), theta.size(0))  # once for the K rounds
        mats = theta.unbind(0)  # once for the K rounds: Θ's gradient is stacked once (EdgeNetworkConv)
        for _ in range(self.rounds):
            m = torch.relu(self.conv(h, edge_index, edge_type, mats, pairs))
            h = self.gru(m, h)
        return h


def _head(width: int, hidden: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(width, hidden), nn.LeakyReLU(), nn.Linear(hidden, 1))


class SelPolicy(nn.Module):
    """SEL (eq. 3–4): a score per op from [Z ‖ H ‖ b-path sum ‖ t-path sum]."""

    def __init__(self, hidden: int = 128, rounds: int = 6, edge_hidden: int = 128, head: int = 64) -> None:
        super().__init__()
        self.mpnn = MPNN(5, hidden, rounds, edge_hidden)
        self.proj = nn.Linear(5, hidden)
        self.head = _head(4 * hidden, head)

    def forward(self, g: dict[str, torch.Tensor]) -> torch.Tensor:
        """(n,) scores; softmax over the candidates gives Q_G."""
        h = self.mpnn(g["x"], g["edge_index"], g["edge_type"], g["type_attr"])
        hb = torch.zeros_like(h).index_add_(0, g["b_rows"], h[g["b_cols"]])
        ht = torch.zeros_like(h).index_add_(0, g["t_rows"], h[g["t_cols"]])
        return self.head(torch.cat([self.proj(g["x"]), h, hb, ht], dim=1)).squeeze(1)


class PlcPolicy(nn.Module):
    """PLC (eq. 5–8): a score per device for the selected op."""

    def __init__(self, hidden: int = 128, rounds: int = 6, edge_hidden: int = 128, head: int = 64) -> None:
        super().__init__()
        self.mpnn = MPNN(5, hidden, rounds, edge_hidden)
        self.proj = nn.Linear(5, hidden)
        self.dev_proj = nn.Linear(5, hidden)
        self.head = _head(4 * hidden, head)

    def embed(self, g: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """H (the MPNN embeddings) and Z (projected features), both (n × hidden): once per episode."""
        return self.mpnn(g["x"], g["edge_index"], g["edge_type"], g["type_attr"]), self.proj(g["x"])

    def forward(self, h: torch.Tensor, z: torch.Tensor, ops: torch.Tensor, x_d: torch.Tensor,
                on_device: torch.Tensor) -> torch.Tensor:
        """Scores (steps × D) for ops ``ops`` (steps,), device features ``x_d`` (steps × D × 5) and
        ``on_device`` (steps × D × hidden), the sum of the embeddings of the ops placed on each device."""
        steps, nd, _ = x_d.shape
        hv = h[ops].unsqueeze(1).expand(steps, nd, -1)
        zv = z[ops].unsqueeze(1).expand(steps, nd, -1)
        return self.head(torch.cat([self.dev_proj(x_d), hv, zv, on_device], dim=2)).squeeze(2)

    def act_weights(self, h: torch.Tensor, z: torch.Tensor) -> dict[str, torch.Tensor]:
        """The head's first layer split by input block, for cheap per-step scoring during rollouts.

        ``W₁ h_{v,d} + b₁ = A x_d + a₀ + C[v] + Σ_{u on d} G[u]`` with ``A = W₁ʸ W_y``,
        ``a₀ = W₁ʸ b_y + b₁``, ``C = H W₁ᴴᵀ + Z W₁ᶻᵀ``, ``G = H W₁ᵈᵀ`` (the projection is affine).
        """
        w1, b1 = self.head[0].weight, self.head[0].bias
        k = h.size(1)
        wy, wh, wz, wd = w1[:, :k], w1[:, k:2 * k], w1[:, 2 * k:3 * k], w1[:, 3 * k:]
        return {"A": wy @ self.dev_proj.weight, "a0": wy @ self.dev_proj.bias + b1, "C": h @ wh.T + z @ wz.T,
                "G": h @ wd.T, "w2": self.head[2].weight.squeeze(0), "b2": self.head[2].bias}


class DopplerNet(nn.Module):
    """SEL and PLC, each with its own MPNN."""

    def __init__(self, hidden: int = 128, rounds: int = 6, edge_hidden: int = 128, head: int = 64) -> None:
        super().__init__()
        self.sel = SelPolicy(hidden, rounds, edge_hidden, head)
        self.plc = PlcPolicy(hidden, rounds, edge_hidden, head)


def episode_loss(plc: PlcPolicy, num_devices: int, ep: AssignEpisode, scores: torch.Tensor | None,
                 hz: tuple[torch.Tensor, torch.Tensor] | None, advantage: float, entropy_coef: float, *,
                 imitation: bool, discount: float = 1.0) -> tuple[torch.Tensor, float]:
    """One episode's loss and its policies' mean entropy, all steps in one batched pass.

    With ``imitation`` (Stage I, eq. 9): ``−(mean_t log Σ_{a ∈ teacher} Q_G(a) + mean_t log Σ_{d ∈
    teacher} Q_D(d))``. Otherwise (eq. 10): ``−A (mean_t log Q_G(v_t) + mean_t log Q_D(d_t)) −
    β (mean_t H(Q_G) + mean_t H(Q_D))`` with A the episode's advantage. With ``discount`` γ < 1 step t of
    T weighs γ^(T−1−t) (the authors' code puts A on the last step and discounts it backwards:
    ``scheduler/rl_agent.py:334, 352-356``); γ = 1 is eq. 10. A policy given as None (an ablation's
    critical-path rule) contributes nothing.
    """
    ops = torch.tensor(ep.ops)  # copies: a rollout worker's arrays arrive read-only
    steps = len(ep.ops)
    terms: list[torch.Tensor] = []
    ent = torch.zeros(())
    if scores is not None:
        logp = _masked_log_softmax(scores.unsqueeze(0).expand(steps, -1), torch.tensor(ep.cand))
        terms.append(_target_logp(logp, ep.sel_target) if imitation else logp[torch.arange(steps), ops])
        ent = ent + _entropy(logp).mean()
    if hz is not None:
        h, z = hz
        devs = torch.tensor(ep.devs)
        onehot = nn.functional.one_hot(devs, num_devices).to(h.dtype)
        contrib = onehot.unsqueeze(2) * h[ops].unsqueeze(1)
        on_device = torch.cumsum(contrib, 0) - contrib  # Σ H[u] of the ops placed on d before step t
        logp = _masked_log_softmax(plc(h, z, ops, torch.tensor(ep.x_d), on_device), torch.tensor(ep.dev_mask))
        terms.append(_target_logp(logp, ep.plc_target) if imitation else logp[torch.arange(steps), devs])
        ent = ent + _entropy(logp).mean()
    if not imitation and discount != 1.0:
        weight = torch.tensor(discount, dtype=torch.float64) ** torch.arange(steps - 1, -1, -1, dtype=torch.float64)
        terms = [t * weight.to(t.dtype) for t in terms]
    logp_sum = torch.stack([t.mean() for t in terms]).sum()
    loss = -logp_sum if imitation else -advantage * logp_sum - entropy_coef * ent
    return loss, float(ent.detach())


def _masked_log_softmax(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return torch.log_softmax(logits.masked_fill(~mask, float("-inf")), dim=-1)


def _entropy(logp: torch.Tensor) -> torch.Tensor:
    p = logp.exp()
    return -(p * torch.where(p > 0, logp, torch.zeros_like(logp))).sum(-1)


def _target_logp(logp: torch.Tensor, target: np.ndarray) -> torch.Tensor:
    """``log Σ_{a ∈ targets} π(a)`` per step (the teacher's tied choices all count)."""
    return torch.logsumexp(logp.masked_fill(~torch.tensor(target), float("-inf")), dim=-1)
