"""GDP's policy network (Zhou et al. 2019) as the DOPPLER authors built it (``scheduler/gdp_agent.py`` at
87dda0d; the GDP paper could not be read beyond its abstract): a GraphSAGE graph embedding and an attention
placement network with segment-level recurrence that gives every op group its device logits at once.

Graph embedding (the authors' ``GraphSAGEEncoder``, ``gdp_agent.py:17-65``: GraphSAGE's max-pool
aggregator), ``sage_layers`` layers::

    h⁰_v = W_in x_v,   x_v = [mean of v's op-type embeddings ‖ v's z-scored numbers]
    h_N(v) = max_{u ∈ N(v)} σ(W^l h^l_u + b^l)            (0 where v has no neighbour)
    h^{l+1}_v = f^{l+1}([h^l_v ‖ h_N(v)])                   (f: a linear layer)

N(v): v's predecessors and successors; σ: the sigmoid (the DOPPLER authors' ``gdp_agent.py:39``).

Placement network (the authors' ``TransformerXLPolicy``, ``gdp_agent.py:68-151``: Transformer-XL's
segment-level recurrence): the embeddings in the placement order are cut into segments of ``segment``
groups; in each of ``layers`` layers a segment attends to itself and to the previous segment's input to
that layer, held without gradient (Transformer-XL's stop-gradient memory)::

    a = MultiHeadAttention(q = s, k = v = [sg(s_prev) ‖ s])
    s' = LayerNorm(s + a);   s'' = LayerNorm(s' + W₂ ReLU(W₁ s' + b₁) + b₂)      (W₁: hidden → 4·hidden)

Because the memory is the previous segment's *input* to the layer, all segments of a layer are
computed in one batched call. Logits: ``W_out s_L`` (one per device), infeasible devices masked.

Parameter superposition (``superposition``; GDP's abstract names a superposition network, this form is
ours, the authors' code has none): the input of every placement layer and of the output layer is
multiplied elementwise by ``c_l(ḡ)``, a linear function of the graph's mean embedding ḡ (initialised
to 1: the identity).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from policies.rl.gdp.features import NUMERIC, GdpInputs

__all__ = ["GdpNet", "GraphSage", "SegmentAttention", "tensors"]


def tensors(inp: GdpInputs) -> dict[str, torch.Tensor]:
    """A task's inputs as tensors (built once per task)."""
    return {"numeric": torch.from_numpy(inp.numeric), "type_ids": torch.from_numpy(inp.type_ids),
            "type_offsets": torch.from_numpy(inp.type_offsets), "src": torch.from_numpy(inp.src),
            "dst": torch.from_numpy(inp.dst), "order": torch.from_numpy(inp.order),
            "infeasible": torch.from_numpy(np.ascontiguousarray(inp.infeasible))}


def sinusoid(n: int, width: int) -> torch.Tensor:
    """Vaswani et al. 2017's positional encoding of positions 0 … n − 1 (n × width)."""
    pos = torch.arange(n, dtype=torch.float32).unsqueeze(1)
    freq = torch.exp(torch.arange(0, width, 2, dtype=torch.float32) * (-np.log(10000.0) / width))
    pe = torch.zeros(n, width)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq[: width // 2])
    return pe


class GraphSage(nn.Module):
    """Input projection, then ``layers`` max-pool GraphSAGE layers (``gdp_agent.py:17-65``)."""

    def __init__(self, in_dim: int, hidden: int, layers: int) -> None:
        super().__init__()
        self.inp = nn.Linear(in_dim, hidden)
        self.pool = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(layers))
        self.combine = nn.ModuleList(nn.Linear(2 * hidden, hidden) for _ in range(layers))

    def forward(self, x: torch.Tensor, src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        index = dst.unsqueeze(1).expand(-1, h.size(1))
        for pool, combine in zip(self.pool, self.combine, strict=True):
            msg = torch.sigmoid(pool(h))[src]
            agg = torch.zeros_like(h).scatter_reduce(0, index, msg, reduce="amax", include_self=False)
            h = combine(torch.cat([h, agg], dim=1))
        return h


class SegmentAttention(nn.Module):
    """One placement layer (``gdp_agent.py:87-100``): attention over [previous segment ‖ segment], post-norm."""

    def __init__(self, hidden: int, heads: int) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(hidden, heads, batch_first=True)
        self.ffn = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.ReLU(), nn.Linear(4 * hidden, hidden))
        self.norm1 = nn.LayerNorm(hidden)
        self.norm2 = nn.LayerNorm(hidden)

    def forward(self, s: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        """``s`` (segments × length × hidden), ``valid`` (segments × length): the padding of the last one."""
        first = torch.zeros_like(s[:1])
        memory = torch.cat([first, s[:-1]]).detach()  # the previous segment's input, stop-gradient
        mem_valid = torch.cat([torch.zeros_like(valid[:1]), valid[:-1]])
        kv = torch.cat([memory, s], dim=1)
        a, _ = self.attn(s, kv, kv, key_padding_mask=~torch.cat([mem_valid, valid], dim=1), need_weights=False)
        s = self.norm1(s + a)
        return self.norm2(s + self.ffn(s))


class GdpNet(nn.Module):
    """GraphSAGE embedding + segment-recurrent attention + per-device logits (see the module docstring)."""

    def __init__(self, num_devices: int, *, hidden: int = 64, sage_layers: int = 1, layers: int = 1, heads: int = 4,
                 segment: int = 8, type_buckets: int = 64, superposition: bool = True,
                 positions: bool = True) -> None:
        super().__init__()
        self.segment = segment
        self.positions = positions
        self.types = nn.EmbeddingBag(type_buckets, hidden, mode="mean")
        self.sage = GraphSage(hidden + NUMERIC, hidden, sage_layers)
        self.layers = nn.ModuleList(SegmentAttention(hidden, heads) for _ in range(layers))
        self.out = nn.Linear(hidden, num_devices)
        self.gates = None
        if superposition:
            self.gates = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(layers + 1))
            for g in self.gates:
                nn.init.zeros_(g.weight)
                nn.init.ones_(g.bias)

    def forward(self, t: dict[str, torch.Tensor]) -> torch.Tensor:
        """Masked device logits (groups × devices), rows in group order."""
        x = torch.cat([self.types(t["type_ids"], t["type_offsets"]), t["numeric"]], dim=1)
        h = self.sage(x, t["src"], t["dst"])
        order = t["order"]
        n, width = len(order), h.size(1)
        segments = -(-n // self.segment)
        pad = segments * self.segment - n
        seq = h[order] + (sinusoid(n, width) if self.positions else 0.0)
        s = torch.cat([seq, h.new_zeros(pad, width)]).view(segments, self.segment, width)
        valid = (torch.arange(segments * self.segment) < n).view(segments, self.segment)
        mean = h.mean(dim=0)
        for i, layer in enumerate(self.layers):
            if self.gates is not None:
                s = s * self.gates[i](mean)
            s = layer(s, valid)
        if self.gates is not None:
            s = s * self.gates[-1](mean)
        logits_in_order = self.out(s.reshape(-1, width)[:n])
        logits = torch.empty_like(logits_in_order).index_copy_(0, order, logits_in_order)
        return logits.masked_fill(t["infeasible"], float("-inf"))
