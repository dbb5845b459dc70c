"""Placeto's policy network as its authors built it (``network=authors``, the default).

The authors' code (github.com/aravic/generalizable-device-placement, commit e7fbb2e) differs from
the paper's §2.2 text in several places; this module follows the code, citing file and line:

1. **Input** — each group's raw features (:func:`policies.rl.placeto.state.sweep_features`) enter
   the message passing directly: no embedding layer (``mp_progressive_nn.py:44-50``: the
   messenger's width is the feature count, ``pgraph.py:46-55``).
2. **Message passing** (``nn_primitives.py:140-179``, class ``Messenger``) — one sweep over the
   whole graph in each direction, not k rounds. In topological order (top-down; reversed for
   bottom-up):

       x_v = T(e_v) + ρ(g(Σ_{u∈ξ(v)} ρ(f(x_u))))        (the second term only when ξ(v) ≠ ∅)

   with ξ(v) the parents (resp. children), whose x_u are already final, so information travels
   the whole depth of the graph in one sweep; ρ = ReLU; T an MLP with two hidden layers
   (``nn_primitives.py:154``), f and g one hidden layer each (``:80-87``); a **sum** over ξ(v)
   (``:113-114``, ``use_mask=False``). The two directions are concatenated (``:179``).
   We run the sweep level by level (every group whose longest path from a source has the same
   length at once), which computes the same values as the authors' node-by-node loop.
3. **Pooling** (``mp_progressive_nn.py:58-74``, ``--tri-agg``) — three aggregators, each
   ``ρ(g(Σ_{u∈S} ρ(f(x_u))))`` summed over the current group's ancestors, descendants and
   parallel groups (``pgraph.py:156-172, 212-224``: all of them when ``--n-peers`` is unset, its
   default in ``progressive_placer_test.py:159``), concatenated with the group's own x_v (``:68-74``).
   Their ``--tri-agg`` is a ``store_true`` flag, off by default (``progressive_placer_test.py:163``);
   without it, and without ``--agg-msgs``, their classifier reads every group's sweep output flattened
   into one row (``mp_progressive_nn.py:84-85``), whose width depends on the graph. "The authors'
   network" here is the ``--tri-agg`` one, the one with §2.2's parent, child and parallel pooling.
4. **Policy** — an MLP with hidden layers ``[2·I, I]`` over that input of size I
   (``mp_progressive_nn.py:94-96``; I = 8·(5 + D): 56 and 112 hidden units on two devices).

Every weight matrix is Glorot-uniform with gain 1 and every bias zero (``nn_primitives.py:4-16``).
Ablations of §4.3: ``simple-partitioner`` drops the message passing (the authors'
``--no-msg-passing``, ``mp_progressive_nn.py:52-54``); ``simple-aggregator`` drops it too and
feeds one aggregator over all groups plus the group's own features to the policy (the authors'
``--agg-msgs`` without ``--tri-agg``, ``:78-82``, pools all groups but loses which one is placed; we keep
x_v, as the full network does).

If the group graph has a cycle (a grouping can make one), the sweeps use only the edges that
follow the task's topological order of its condensation.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from policies.rl.placeto.net import NEG, SparsePair, spmm

__all__ = ["GROUP_COLUMNS", "Aggregator", "Sweep", "SweepBatch", "SweepGroup", "SweepNet", "glorot_mlp"]

#: The per-group columns of :func:`policies.rl.placeto.state.sweep_features` before its one-hot device.
GROUP_COLUMNS = 5


def glorot_mlp(inp: int, hidden: list[int], out: int) -> nn.Sequential:
    """The authors' ``FNN`` (``nn_primitives.py:18-40``): Glorot-uniform weights, zero biases, ReLU
    between layers and none after the last."""
    mods: list[nn.Module] = []
    sizes = [inp, *hidden, out]
    for i in range(len(sizes) - 1):
        layer = nn.Linear(sizes[i], sizes[i + 1])
        nn.init.xavier_uniform_(layer.weight)
        nn.init.zeros_(layer.bias)
        mods.append(layer)
        if i < len(sizes) - 2:
            mods.append(nn.ReLU())
    return nn.Sequential(*mods)


def _two_layers(m: nn.Sequential, x: torch.Tensor) -> torch.Tensor:
    """``ρ(m(x))`` for a one-hidden-layer :func:`glorot_mlp` ``m``, without the modules' call overhead
    (the sweeps call it twice per level and direction)."""
    first, last = m[0], m[2]
    return torch.relu(F.linear(torch.relu(F.linear(x, first.weight, first.bias)), last.weight, last.bias))


def _transposed(m: nn.Sequential) -> tuple[torch.Tensor, ...]:
    """A one-hidden-layer :func:`glorot_mlp`'s weights, transposed for :func:`_rows_mlp`, and biases."""
    first, last = m[0], m[2]
    return first.weight.t(), first.bias, last.weight.t(), last.bias


def _rows_mlp(x: torch.Tensor, w: tuple[torch.Tensor, ...], out: torch.Tensor | None = None) -> torch.Tensor:
    """:func:`_two_layers` on the rows of a 2-D ``x`` with :func:`_transposed` weights ``w``, written
    into ``out`` when given (the rollouts' sweeps, without autograd)."""
    w1, b1, w2, b2 = w
    return torch.addmm(b2, torch.addmm(b1, x, w1).relu_(), w2, out=out).relu_()


class Aggregator(nn.Module):
    """``ρ(g(A · ρ(f(x))))``: the authors' ``Aggregator`` (``nn_primitives.py:80-119``) with a 0/1 matrix A."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.f = glorot_mlp(dim, [dim], dim)
        self.g = glorot_mlp(dim, [dim], dim)

    def inner(self, x: torch.Tensor) -> torch.Tensor:
        return _two_layers(self.f, x)

    def outer(self, summed: torch.Tensor) -> torch.Tensor:
        return _two_layers(self.g, summed)

    def forward(self, a: SparsePair, x: torch.Tensor) -> torch.Tensor:
        return self.outer(spmm(a, self.inner(x)))


@dataclass
class Sweep:
    """One direction's sweep over a graph of N nodes, level by level.

    ``perm`` lists the nodes by level (``inverse`` undoes it); level l holds positions
    ``bounds[l]:bounds[l+1]`` of that order, and ``steps[l-1]`` is the 0/1 matrix (level-l nodes ×
    positions before ``bounds[l]``) of their in-neighbours in this direction. The same matrix with
    only the columns level l reads: ``compact[l-1]``, those columns being the rows ``rows`` of each
    earlier level j in ``gathers[l-1]`` (pairs ``(j, rows)``, in position order).
    """

    perm: torch.Tensor
    inverse: torch.Tensor
    bounds: list[int]
    steps: list[SparsePair]
    gathers: list[list[tuple[int, torch.Tensor]]]
    compact: list[SparsePair]


@dataclass
class SweepGroup:
    """S states of one graph (N nodes): what :class:`SweepNet` reads of them. Or, with ``members``, S
    states of several graphs as one graph of N nodes, the disjoint union of a copy per state
    (``policies.rl.placeto.state.union_group``): ``x`` is then (1, N, F), ``pools`` (3, S, N) and
    ``current`` rows of the union."""

    down: Sweep
    up: Sweep
    x: torch.Tensor  # (S, N, F) features
    pools: torch.Tensor  # (3, S, N) 0/1: each state's current node's ancestors, descendants, parallel nodes
    current: torch.Tensor  # (S,) each state's current node
    mask: torch.Tensor  # (S, D) devices allowed for the current node
    rows: torch.Tensor  # (S,) the states' rows in the batch
    members: torch.Tensor | None = None  # (S, N) 0/1 in a union of one graph copy per state, else None
    devices: torch.Tensor | None = None  # (D, 2) each device's speed and memory over the cluster's largest


@dataclass
class SweepBatch:
    """States of one or more graphs, grouped by graph."""

    groups: list[SweepGroup]
    size: int


class _Messenger(nn.Module):
    """One direction of the authors' ``Messenger`` (see the module docstring, item 2), over the S
    states of a graph at once: ``t`` is (N, S, d)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.agg = Aggregator(dim)

    def forward(self, t: torch.Tensor, sweep: Sweep) -> torch.Tensor:
        """With autograd (the update): each level's inputs as one piece of a split and each level
        reading only the rows it needs of the levels before, so that the backward pass touches
        each level's gradient a bounded number of times, never the whole graph's at every level."""
        if not torch.is_grad_enabled():
            return self._infer(t, sweep)
        _, s, d = t.shape
        b = sweep.bounds
        parts = torch.split(t[sweep.perm], [hi - lo for lo, hi in itertools.pairwise(b)])
        xs = [parts[0]]
        inner = [self.agg.inner(parts[0])]
        for lv, (gather, step) in enumerate(zip(sweep.gathers, sweep.compact, strict=True), start=1):
            read = [inner[j].index_select(0, rows) for j, rows in gather]
            src = read[0] if len(read) == 1 else torch.cat(read)
            summed = spmm(step, src.reshape(src.shape[0], s * d)).reshape(-1, s, d)
            x = parts[lv] + self.agg.outer(summed)
            xs.append(x)
            inner.append(self.agg.inner(x))
        return torch.cat(xs)[sweep.inverse]

    def _infer(self, t: torch.Tensor, sweep: Sweep) -> torch.Tensor:
        """:meth:`forward` without autograd (every rollout step): the same values, written level by
        level into two preallocated buffers (rows: node × state), with the weights read once."""
        n, s, d = t.shape
        f, g = _transposed(self.agg.f), _transposed(self.agg.g)
        x = t[sweep.perm]  # becomes the sweep's output in place, level by level
        rows = x.view(n * s, d)
        inner = torch.empty_like(rows)  # ρ(f(x_u)) of the levels done
        b = sweep.bounds
        _rows_mlp(rows[b[0] * s:b[1] * s], f, out=inner[b[0] * s:b[1] * s])
        for lv, step in enumerate(sweep.steps, start=1):
            lo, hi = b[lv] * s, b[lv + 1] * s
            summed = (step.a @ inner[:lo].view(b[lv], s * d)).view(hi - lo, d)
            level = rows[lo:hi]
            level += _rows_mlp(summed, g)
            _rows_mlp(level, f, out=inner[lo:hi])
        return x[sweep.inverse]


class SweepNet(nn.Module):
    """Placeto's GNN and policy as the authors built them; ``forward(batch)`` gives masked device
    logits, shape (S, D)."""

    def __init__(self, num_devices: int, features: int, *, variant: str = "full") -> None:
        super().__init__()
        self.num_devices = num_devices
        self.variant = variant
        d = features
        if variant == "full":
            self.transform = glorot_mlp(d, [d, d], d)
            self.down = _Messenger(d)
            self.up = _Messenger(d)
            d = 2 * d
        if variant == "simple-aggregator":
            self.everything = Aggregator(d)
            head_in = 2 * d
        else:
            self.pool = nn.ModuleList(Aggregator(d) for _ in range(3))
            head_in = 4 * d
        self.policy = glorot_mlp(head_in, [2 * head_in, head_in], num_devices)

    def forward(self, b: SweepBatch) -> torch.Tensor:
        out = None
        for g in b.groups:
            logits = self._group(g)
            if out is None:
                out = logits.new_empty((b.size, logits.shape[1]))
            out = out.index_copy(0, g.rows, logits)
        return out

    def _group(self, g: SweepGroup) -> torch.Tensor:
        x = g.x
        if self.variant == "full":
            t = self.transform(x.transpose(0, 1))
            x = torch.cat([self.down(t, g.down), self.up(t, g.up)], dim=2).transpose(0, 1)
        union = g.members is not None  # one graph copy per state: x (1, N, ·), each state's rows in its pools
        own = x[0, g.current] if union else x[torch.arange(len(g.current)), g.current]
        if self.variant == "simple-aggregator":
            inner = self.everything.inner(x)
            z = torch.cat([self.everything.outer(g.members @ inner[0] if union else inner.sum(dim=1)), own], dim=1)
        else:
            pooled = [agg.outer(p @ agg.inner(x[0]) if union else torch.einsum("sn,snd->sd", p, agg.inner(x)))
                      for agg, p in zip(self.pool, g.pools, strict=True)]
            z = torch.cat([*pooled, own], dim=1)
        return self.policy(z).masked_fill(~g.mask, NEG)
