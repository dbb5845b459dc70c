"""The seq2seq placer's network (Mirhoseini et al. 2017, §3.2; Fig. 2), placing op groups.

**Input** — the op groups in the task's traversal order, each embedded as the concatenation of

1. its *type*: a learned embedding per op type; a group holds ops of several types, so it
   gets the count-weighted mean of its members' type embeddings (an ``EmbeddingBag`` summing
   ``count / members`` × embedding). The vocabulary is fixed when the network is built; index 0
   stands for a type it has not seen;
2. its *output shape*: §3.2 concatenates the sizes of an op's output tensors into a fixed-size
   zero-padded list. **Deviation:** graphs here record tensor bytes, not shapes, so the list
   holds the group's ``shape_len`` largest outgoing tensors (outputs of members consumed
   outside the group, and of sinks), largest first, as ``log10(1 + bytes) / 10``, zero-padded;
3. its *adjacency*: a one-hot vector of length ``max_groups`` with 1 at the groups that are its
   direct inputs or outputs (group ids ≥ ``max_groups`` are dropped).

**Encoder** — a bidirectional LSTM (Placeto App. A.7: "a bi-directional RNN with a hidden size
of 512 units", read as 256 per direction, 512 together).

**Decoder** — an LSTM with one step per group, initialised with the encoder's final states.
Step t's input is the embedding of the device chosen at step t − 1 (a learned start embedding
at t = 0: "each device has its own tunable embedding, which is then fed as input to the next
decoder time step"). **Deviation:** the input also holds the encoder output of step t, which
tells the decoder which group it places (§3.2 leaves that to the attention alone). Content-based
attention (Bahdanau et al. 2015) scores every encoder output ``e_j`` against the decoder state
``s_t``: ``a_tj = softmax_j(vᵀ tanh(W_e e_j + W_s s_t))``, context ``c_t = Σ_j a_tj e_j``;
the device logits are ``W_o tanh(W_c [s_t; c_t])``, devices that cannot run the group masked out.
The attention width (units of ``W_e``, ``W_s``) is a hyper-parameter §3.2 does not give; the
scores cost samples × groups² × units per update, hence a default (64) below the hidden size.

Sampling is sequential (a step's input is the previous step's device): :meth:`RNNPlacerNet.sample`
runs the decoder step by step without gradients and lets a ``pick`` callback choose each step's
devices from the detached log-probabilities (the agent samples there with numpy, keeping all
randomness in one generator). The decoder's input depends on the chosen devices only, not on
the attention, so the gradient pass, ``forward(x, actions)``, re-runs it on the known devices as
one fused LSTM call over the whole sequence and yields the same logits (up to rounding) — several
times cheaper than back-propagating through a per-step loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from policies.rl.core.task import PlacementTask

__all__ = ["NEG", "GroupInputs", "RNNPlacerNet", "adjacency", "group_inputs", "output_shapes", "type_bags"]

NEG = -1e9  # logit of a masked device: probability exactly 0 after the softmax, no NaN in the entropy

#: ``pick(step, logp)``: the device of every sample at decoder step ``step`` from ``logp`` (samples, devices)
Pick = Callable[[int, np.ndarray], np.ndarray]
_CHUNK = 8  # decoder steps per attention block in forward: the (samples, 8, groups, units) scores stay in cache


@dataclass(frozen=True)
class GroupInputs:
    """A task's groups as network input, in decoding order (the task's ``order``).

    ``type_index``/``type_offsets``/``type_weights`` are the ``EmbeddingBag`` bags: position t's
    bag is ``type_index[type_offsets[t]:type_offsets[t + 1]]`` with weights count / members.
    """

    type_index: torch.Tensor  # (bag entries,) long
    type_offsets: torch.Tensor  # (groups,) long
    type_weights: torch.Tensor  # (bag entries,) float
    shape: torch.Tensor  # (groups, shape_len)
    adjacency: torch.Tensor  # (groups, max_groups)
    mask: torch.Tensor  # (groups, devices) bool, devices that can run the group


def type_bags(task: PlacementTask, vocab: Sequence[str]) -> list[dict[int, float]]:
    """Per group (by group id): vocabulary index (1-based, 0 = unknown type) → share of its ops."""
    index = {t: i + 1 for i, t in enumerate(vocab)}
    types = np.array([index.get(t, 0) for t in task.graph.op_types], dtype=np.int64)
    v = len(vocab) + 1
    keys, counts = np.unique(task.op_group * v + types, return_counts=True)
    size = np.bincount(task.op_group, minlength=task.num_groups)
    bags: list[dict[int, float]] = [{} for _ in range(task.num_groups)]
    for key, count in zip(keys.tolist(), counts.tolist(), strict=True):
        g, t = divmod(key, v)
        bags[g][t] = count / size[g]
    return bags


def output_shapes(task: PlacementTask, shape_len: int) -> np.ndarray:
    """(groups, shape_len): the largest outgoing tensors of each group, ``log10(1 + bytes) / 10``, zero-padded."""
    g = task.graph
    src_g, dst_g = task.op_group[g.edge_src], task.op_group[g.edge_dst]
    leaves = np.zeros(g.num_ops, dtype=bool)
    leaves[g.edge_src[src_g != dst_g]] = True
    leaves |= g.succ.ptr[1:] == g.succ.ptr[:-1]
    ops = np.flatnonzero(leaves)
    grp, size = task.op_group[ops], g.output_bytes[ops]
    by = np.lexsort((-size, grp))  # group by group, largest first
    grp, size = grp[by], size[by]
    first = np.searchsorted(grp, grp)  # start of each op's group in the sorted list
    rank = np.arange(len(grp)) - first
    keep = rank < shape_len
    out = np.zeros((task.num_groups, shape_len), dtype=np.float32)
    out[grp[keep], rank[keep]] = np.log10(1.0 + size[keep]) / 10.0
    return out


def adjacency(task: PlacementTask, max_groups: int) -> np.ndarray:
    """(groups, max_groups): 1 at the groups that are a group's direct inputs or outputs."""
    out = np.zeros((task.num_groups, max_groups), dtype=np.float32)
    src, dst = task.edges
    keep = dst < max_groups
    out[src[keep], dst[keep]] = 1.0
    keep = src < max_groups
    out[dst[keep], src[keep]] = 1.0
    return out


def group_inputs(task: PlacementTask, vocab: Sequence[str], shape_len: int, max_groups: int) -> GroupInputs:
    """The network input of ``task``, its groups in ``task.order``."""
    bags = type_bags(task, vocab)
    index, weights, offsets = [], [], []
    for j in task.order.tolist():
        offsets.append(len(index))
        for t, w in sorted(bags[j].items()):
            index.append(t)
            weights.append(w)
    order = task.order
    return GroupInputs(torch.tensor(index, dtype=torch.long), torch.tensor(offsets, dtype=torch.long),
                       torch.tensor(weights, dtype=torch.float32),
                       torch.from_numpy(output_shapes(task, shape_len)[order]),
                       torch.from_numpy(adjacency(task, max_groups)[order]),
                       torch.from_numpy(task.feasible[order].copy()))


class RNNPlacerNet(nn.Module):
    """Mirhoseini §3.2's attentional seq2seq policy (see the module docstring).

    :meth:`sample` decodes placements step by step without gradients, each step's devices chosen
    by ``pick``; ``forward(x, actions)`` re-runs the decoder on known devices (teacher forcing)
    and returns the masked logits (samples, groups, devices) in decoding order, with gradients.
    ``vocab_size`` counts the known op types; the type embedding has one more row, 0, for unknown ones.
    """

    def __init__(self, num_devices: int, vocab_size: int, max_groups: int, *, type_dim: int = 32,
                 shape_len: int = 8, hidden: int = 512, device_dim: int = 32, attention: int = 64) -> None:
        super().__init__()
        if hidden < 2 or hidden % 2:
            raise ValueError(f"the hidden size must be even (two encoder directions), got {hidden}")
        self.num_devices = num_devices
        self.type_embedding = nn.EmbeddingBag(vocab_size + 1, type_dim, mode="sum")
        self.encoder = nn.LSTM(type_dim + shape_len + max_groups, hidden // 2, batch_first=True,
                               bidirectional=True)
        self.device_embedding = nn.Embedding(num_devices + 1, device_dim)  # row num_devices: the start
        self.decoder = nn.LSTM(device_dim + hidden, hidden, batch_first=True)
        self.attn_keys = nn.Linear(hidden, attention, bias=False)  # W_e
        self.attn_query = nn.Linear(hidden, attention)  # W_s
        self.attn_score = nn.Linear(attention, 1, bias=False)  # v
        self.attn_out = nn.Linear(2 * hidden, hidden)  # W_c
        self.head = nn.Linear(hidden, num_devices)  # W_o

    def embed(self, x: GroupInputs) -> torch.Tensor:
        """(groups, type_dim + shape_len + max_groups): [type; output shape; adjacency]."""
        types = self.type_embedding(x.type_index, x.type_offsets, per_sample_weights=x.type_weights)
        return torch.cat([types, x.shape, x.adjacency], dim=1)

    def encode(self, x: GroupInputs) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """Encoder outputs (groups, hidden) and the decoder's initial state (both directions' final states)."""
        out, (h, c) = self.encoder(self.embed(x).unsqueeze(0))
        return out[0], (h.reshape(1, 1, -1), c.reshape(1, 1, -1))

    def _logits(self, s: torch.Tensor, enc: torch.Tensor, keys: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Masked device logits (K, T, devices) of decoder states ``s`` (K, T, hidden)."""
        score = self.attn_score(torch.tanh(keys + self.attn_query(s).unsqueeze(2))).squeeze(3)  # (K, T, n)
        context = torch.softmax(score, dim=2) @ enc
        z = self.head(torch.tanh(self.attn_out(torch.cat([s, context], dim=2))))
        return z.masked_fill(~mask, NEG)

    @torch.no_grad()
    def sample(self, x: GroupInputs, samples: int, pick: Pick) -> np.ndarray:
        """Devices (samples, groups) in decoding order; ``pick`` chooses each step's from its log-probabilities."""
        enc, (h, c) = self.encode(x)
        n, dd = enc.shape[0], self.device_embedding.embedding_dim
        h, c = h[0].expand(samples, -1), c[0].expand(samples, -1)
        lstm = self.decoder  # one step of it by hand (gates i, f, g, o), its input projections computed once
        w_ih, w_hh = lstm.weight_ih_l0, lstm.weight_hh_l0
        from_group = enc @ w_ih[:, dd:].T + lstm.bias_ih_l0 + lstm.bias_hh_l0  # (n, 4·hidden)
        from_device = self.device_embedding.weight @ w_ih[:, :dd].T  # (devices + 1, 4·hidden)
        keys = self.attn_keys(enc)
        prev = torch.full((samples,), self.num_devices, dtype=torch.long)
        actions = np.zeros((samples, n), dtype=np.int64)
        for t in range(n):
            i, f, g, o = (from_group[t] + from_device[prev] + h @ w_hh.T).chunk(4, dim=1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            z = self._logits(h.unsqueeze(1), enc, keys, x.mask[t : t + 1])[:, 0]
            a = np.asarray(pick(t, torch.log_softmax(z, dim=1).double().numpy()), dtype=np.int64)
            actions[:, t] = a
            prev = torch.from_numpy(a)
        return actions

    def forward(self, x: GroupInputs, actions: torch.Tensor) -> torch.Tensor:
        """Masked logits (samples, groups, devices) of the placements ``actions`` (samples, groups), decoding order."""
        enc, (h, c) = self.encode(x)
        k, n = actions.shape
        prev = torch.cat([torch.full((k, 1), self.num_devices, dtype=torch.long), actions[:, :-1]], dim=1)
        step_in = torch.cat([self.device_embedding(prev), enc.expand(k, -1, -1)], dim=2)
        s, _ = self.decoder(step_in, (h.expand(-1, k, -1).contiguous(), c.expand(-1, k, -1).contiguous()))
        keys = self.attn_keys(enc)
        return torch.cat([self._logits(s[:, i : i + _CHUNK], enc, keys, x.mask[i : i + _CHUNK])
                          for i in range(0, n, _CHUNK)], dim=1)
