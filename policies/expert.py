"""The human-expert placer (Mirhoseini et al. 2017 §4.2, Placeto §3.2), driven by op scopes.

Rules, chosen by the scopes the graph has (an op's path is its ``scope``, else its name; a PyTorch
module path ``encoder.layers.0.linear1`` reads as ``encoder/layer0/linear1``):

* **RNNLM / NMT** (a path component ``encoder``, ``decoder``, ``lstm`` or ``rnn`` next to
  ``layer{k}``): one LSTM layer per device — the distinct layer numbers, in increasing
  order, take devices 0, 1, 2, … (mod the number of devices), so encoder and decoder layer
  k share a device as in GNMT (Wu et al. 2016, which Placeto §3.2 follows). Attention and
  softmax go with the last LSTM layer, the embedding with the first (Mirhoseini §4.2).
* **Vision with parallel branches** (``block{k}/branch{j}``, ``Mixed_5b/Branch_1``): the
  branches of a block, by number, take devices 0, 1, … (mod n) (Placeto §3.2: "each
  parallel branch on a different device").
* **Other layered graphs** (``layer{k}``, ``block{k}``, ``stage{k}``, ``mixed_{k}``,
  ``cell{k}``): the layers, in order of first appearance in topological order, are cut
  into n contiguous runs with the same number of layers (Mirhoseini §4.2, Inception-V3).
* **dnn-partitioning graphs**: ``split=PATH`` (or ``split=bench:NAME``) loads a human-expert
  split with :func:`engine.importers.dnn_partitioning.load_expert_placement`; the graph of a
  bundled workload (``bench:NAME``, same content) gets its published split without the parameter.

Devices are the GPUs (all devices when there are none). Backward and update ops whose path
has no recognised part follow the forward op whose scope they end with (``gradients/x/y``
follows ``x/y``, Mirhoseini Fig. 8–9 phases). Every other op follows the neighbour it shares
the most bytes with (producers first, in topological order; then consumers), else the first
device. An op its device cannot run (kind, pin, colocation) goes to its unit's cheapest
feasible device; a colocation group follows its first member.
"""

from __future__ import annotations

import itertools
import re

import numpy as np

from engine.cluster import Cluster
from engine.errors import PlacementError
from engine.graph.compgraph import CompGraph
from engine.placement import Placement, check_placement
from policies.base import PlacementUnits, Progress, placer

__all__ = ["Expert", "expert_keys"]

_LAYER = re.compile(r"^(?:layer|lstm|cell)_?(\d+)$", re.IGNORECASE)
# a numbered layer; Keras appends an instance suffix (inception_v3_1/mixed6_1)
_BLOCK = re.compile(r"^(?:layer|block|stage|mixed|cell|module|unit)_?(\d+[a-z]?)(?:_\d+)?$", re.IGNORECASE)
_BRANCH = re.compile(r"^branch_?(\d+)$", re.IGNORECASE)
# a PyTorch container whose numbered children are layers (nn.ModuleList / nn.Sequential: layers.0, blocks.1, h.2)
_CONTAINER = re.compile(r"^(?:(layer|block|stage|cell|unit|module)s?|(branch)(?:es)?|(h))$", re.IGNORECASE)
_RNN_MARK = re.compile(r"^(?:encoder|decoder|lstm|rnn)", re.IGNORECASE)
_SPECIAL = (("attention", re.compile(r"^(?:attention|attn)", re.IGNORECASE)),
            ("softmax", re.compile(r"^softmax", re.IGNORECASE)),
            ("embedding", re.compile(r"^(?:embedding|embed)", re.IGNORECASE)))
_NO_STRUCTURE = ("expert placement needs layer scopes (encoder/layer{k}, decoder/layer{k}, block{k}/branch{j} "
                 "or layer{k}); this graph has none")


def _path(graph: CompGraph, i: int) -> list[str]:
    """Op ``i``'s path components: its scope (else its name) split at ``/``, and at ``.`` for PyTorch's dotted
    module paths (``t.encoder.layers.0.linear1``); a container's numbered child (``layers.0``, ``blocks.3``,
    GPT-2's ``h.11``) reads as one numbered layer (``layer0``, ``block3``, ``layer11``), as TensorFlow names it."""
    out: list[str] = []
    for token in (graph.scope[i] or graph.op_names[i]).replace(".", "/").split("/"):
        if token.isdigit() and out and (m := _CONTAINER.match(out[-1])):
            out[-1] = (m.group(1) or m.group(2) or "layer").lower() + token
        elif token:
            out.append(token)
    return out


def _block_number(token: str) -> tuple[int, str]:
    m = re.match(r"(\d+)(.*)", token)
    return int(m.group(1)), m.group(2)


def expert_keys(graph: CompGraph) -> tuple[str, list[tuple | None]]:
    """The rule that applies (``"rnn"``, ``"branches"``, ``"layers"``) and each op's structural key.

    Keys: ``("layer", k)``, ``("attention",)`` / ``("softmax",)`` / ``("embedding",)`` for
    ``"rnn"``; ``("branch", block, j)`` for ``"branches"``; ``("block", token)`` for
    ``"layers"``; None where the path has no recognised part.
    """
    paths = [_path(graph, i) for i in range(graph.num_ops)]
    rnn = any(_RNN_MARK.match(c) for p in paths for c in p) and any(_LAYER.match(c) for p in paths for c in p)
    branches = any(_BRANCH.match(c) for p in paths for c in p)
    keys: list[tuple | None] = []
    if rnn:
        for p in paths:
            key = next(((name,) for c in p for name, rx in _SPECIAL if rx.match(c)), None)
            if key is None:
                key = next((("layer", int(m.group(1))) for c in p if (m := _LAYER.match(c))), None)
            keys.append(key)
        return "rnn", keys
    for p in paths:
        key = None
        for a, b in itertools.pairwise(p):
            if branches and _BLOCK.match(a) and (m := _BRANCH.match(b)):
                key = ("branch", _block_number(_BLOCK.match(a).group(1)), int(m.group(1)))
                break
        if key is None and not branches:
            key = next((("block", c.lower()) for c in p if _BLOCK.match(c)), None)
        keys.append(key)
    if not any(k is not None for k in keys):
        raise PlacementError(_NO_STRUCTURE)
    return ("branches" if branches else "layers"), keys


def _key_devices(rule: str, keys: list[tuple | None], graph: CompGraph, n: int) -> dict[tuple, int]:
    present = {k for k in keys if k is not None}
    if rule == "rnn":
        layers = sorted(k[1] for k in present if k[0] == "layer")
        if not layers:
            raise PlacementError(_NO_STRUCTURE)
        out = {("layer", k): r % n for r, k in enumerate(layers)}
        out[("attention",)] = out[("softmax",)] = (len(layers) - 1) % n
        out[("embedding",)] = 0
        return out
    if rule == "branches":
        out = {}
        for block in sorted({k[1] for k in present}):
            for r, j in enumerate(sorted({k[2] for k in present if k[1] == block})):
                out[("branch", block, j)] = r % n
        return out
    order: list[tuple] = []
    for i in graph.topo_order.tolist():
        if keys[i] is not None and keys[i] not in order:
            order.append(keys[i])
    return {k: r * n // len(order) for r, k in enumerate(order)}


def _follow_scopes(graph: CompGraph, dev: np.ndarray) -> None:
    """Backward/update ops without a device take the device of the forward scope they end with."""
    forward: dict[str, int] = {}
    for i in range(graph.num_ops):
        if dev[i] >= 0 and graph.phase[i] in (None, "forward"):
            p = _path(graph, i)
            for e in range(len(p), 0, -1):
                forward.setdefault("/".join(p[:e]), int(dev[i]))
    for i in range(graph.num_ops):
        if dev[i] >= 0 or graph.phase[i] not in ("backward", "update"):
            continue
        p = _path(graph, i)
        for s in range(len(p)):
            hit = next((forward["/".join(p[s:e])] for e in range(len(p), s, -1) if "/".join(p[s:e]) in forward),
                       None)
            if hit is not None:
                dev[i] = hit
                break


def _follow_neighbours(graph: CompGraph, dev: np.ndarray) -> None:
    """Unplaced ops take the device of the placed neighbour they exchange the most bytes with."""
    for csr, order in ((graph.pred, graph.topo_order), (graph.succ, graph.topo_order[::-1])):
        for i in order.tolist():
            if dev[i] >= 0:
                continue
            lo, hi = csr.ptr[i], csr.ptr[i + 1]
            nb, eb = csr.idx[lo:hi], graph.edge_bytes[csr.edge[lo:hi]]
            placed = dev[nb] >= 0
            if placed.any():
                dev[i] = dev[nb[placed][np.argmax(eb[placed])]]
    dev[dev < 0] = 0


@placer("expert", "human-expert placement from layer scopes: one LSTM layer per GPU, branches on their own "
          "GPU, or equal contiguous layer runs (Mirhoseini §4.2, Placeto §3.2)", family="expert")
class Expert:
    """Mirhoseini §4.2 / Placeto §3.2 expert placement (rules in the module docstring).

    Parameters
    ----------
    split : str, optional
        A dnn-partitioning human-expert split file; when given, it is loaded instead.
    """


    def __init__(self, split: str | None = None) -> None:
        self.split = split

    def place(self, graph: CompGraph, cluster: Cluster, *, seed: int = 0, budget: int | None = None,
              progress: Progress | None = None) -> Placement:
        if self.split:
            return self._load_split(graph, cluster, self.split)
        from engine.workloads.published import expert_split_for

        shipped = expert_split_for(graph)
        if shipped is not None:  # a bundled dnn-partitioning workload: its published human-expert split
            return self._load_split(graph, cluster, str(shipped))
        units = PlacementUnits(graph, cluster)
        gpus = np.array([i for i, k in enumerate(cluster.kinds) if k == "gpu"], dtype=np.int64)
        devices = gpus if len(gpus) else np.arange(cluster.num_devices)
        rule, keys = expert_keys(graph)
        where = _key_devices(rule, keys, graph, len(devices))
        dev = np.array([where.get(k, -1) if k is not None else -1 for k in keys], dtype=np.int64)
        dev = np.where(dev >= 0, devices[np.maximum(dev, 0)], -1)
        _follow_scopes(graph, dev)
        _follow_neighbours(graph, dev)
        first = np.full(units.num_units, -1, dtype=np.int64)
        for i in range(graph.num_ops)[::-1]:  # a colocation group follows its first member
            first[units.op_unit[i]] = dev[i]
        bad = ~units.feasible[np.arange(units.num_units), first]
        first[bad] = np.argmin(units.cost[bad], axis=1)
        return units.to_placement(first)

    def _load_split(self, graph: CompGraph, cluster: Cluster, split: str) -> Placement:
        try:
            from engine.importers.dnn_partitioning import load_expert_placement
        except ImportError:
            raise PlacementError("expert placement from a split file needs "
                                 "engine.importers.dnn_partitioning.load_expert_placement, "
                                 "which this installation does not have yet") from None
        if split.startswith("bench:"):
            from engine.workloads.published import expert_split_path

            split = str(expert_split_path(split))
        result = load_expert_placement(split, graph, cluster)
        placement = result if isinstance(result, Placement) else Placement(np.asarray(result))
        check_placement(graph, cluster, placement)
        return placement
