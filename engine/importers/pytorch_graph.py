"""PyTorch modules → CompGraph: the aten graph of ONE TRAINING STEP.

:func:`graph_from_torch` traces a function that runs the module functionally on the example inputs,
computes a scalar loss of its output, takes ``torch.autograd.grad`` of it with respect to every
trainable parameter and applies an SGD update ``p - lr·g`` (:mod:`engine.importers._torch_trace`:
``torch.export`` of the forward pass and the loss, then the step over the exported program on fake
tensors; the eager module on the real example tensors for what torch.export refuses). Nothing is saved
or loaded. The output may be a tensor, a list or tuple, a dict, a dataclass or a Hugging Face
``ModelOutput``: the loss reads the module's own ``loss``, else the output ``output_key`` names, else the
first tensor (:mod:`engine.importers._torch_outputs`).

Conventions (as for TensorFlow, :mod:`engine.importers.tensorflow_graph`):

* **Phases** by position in the trace: nodes recorded before ``autograd.grad`` starts are
  ``forward``, during it ``backward``, after it ``update``.
* **Parameters and buffers** become ops of type ``Parameter``/``Buffer`` named by their
  qualified name (``encoder.0.weight``), holding their bytes as ``persistent_bytes`` and
  ``output_bytes``; phase ``None``. The op that produces a parameter's new value is
  colocated with it (the update runs where the weight lives).
* **Inputs** stay as 0-time source ops. **Pruned**: the ``output`` node, pass-through
  nodes (``detach``, ``alias``, ``lift_fresh``, ``operator.getitem``) and the exported
  program's checks (``_assert_tensor_metadata``, ...); consumers are reconnected to the
  pruned node's producers with the bytes of the tensor they read.
* **Sizes** from ``node.meta["val"]`` (element count × element size, summed over tuple
  outputs). **FLOPs** from ``torch.utils.flop_counter``'s formula registry (mm, addmm, bmm,
  convolutions and their backward, attention), else one FLOP per element of the largest
  input or output; view ops (``t``, ``view``, ``expand``, ...) take no time. Seconds come
  from the same roofline as TensorFlow imports (``engine/costmodel.py``; ``cost=`` replaces it).
* **Scope**: a forward node's innermost module path (the exported program's module stack, or
  forward hooks during an eager trace); a backward node takes ``grad/`` + the scope of the
  forward op it reads (its saved activation or weight), else the longest scope of its backward
  inputs; an update op takes ``update/`` + its parameter's module path.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from engine.errors import GraphError, quote
from engine.graph.compgraph import CompGraph
from engine.importers._torch_trace import Trace, buffers_restored, trace_step
from engine.importers.tensorflow_graph import CostFn, roofline_cost

__all__ = ["buffers_restored", "graph_from_torch", "trace_step"]

#: Pruned: ops that pass a tensor through, and the exported program's shape and metadata checks (no output).
_PASS_THROUGH_ATEN = frozenset({"detach", "alias", "lift_fresh", "lift_fresh_copy", "_assert_tensor_metadata",
                                "_assert_scalar", "_assert_async", "sym_constrain_range_for_size"})


def _import_torch():
    try:
        import torch
    except ImportError:  # pragma: no cover - depends on the environment
        raise GraphError("importing a PyTorch module needs torch (pip install torch)") from None
    return torch


def _leaves(val: Any) -> list[Any]:
    import torch

    if isinstance(val, torch.Tensor):
        return [val]
    if isinstance(val, (list, tuple)):
        return [t for v in val for t in _leaves(v)]
    return []


def _nbytes(val: Any) -> int:
    return sum(t.numel() * t.element_size() for t in _leaves(val))


def _numel(val: Any) -> int:
    return max((t.numel() for t in _leaves(val)), default=0)


def _is_pass_through(node: Any) -> bool:
    if node.op != "call_function":
        return False
    if node.target is operator.getitem:
        return True
    packet = getattr(node.target, "overloadpacket", None)
    return packet is not None and packet.__name__ in _PASS_THROUGH_ATEN


#: Fused recurrent kernels the flop counter has no formula for: ``nn.LSTM`` on the CPU traces as one
#: ``mkldnn_rnn_layer`` per layer and direction (and its backward), which "one FLOP per element" costs at
#: a sliver of the unrolled cell's time.
_FUSED_LSTM = {"mkldnn_rnn_layer": 1.0, "mkldnn_rnn_layer_backward": 2.0}


def lstm_layer_flops(rows: int, input_size: int, hidden: int) -> float:
    """FLOPs of one LSTM layer over ``rows`` = time steps × batch (PyTorch ``nn.LSTM`` equations): per row
    the four gates' two products, ``2·4H·(I + H)``, their two bias adds, ``2·4H``, and the cell's
    element-wise work, ``9H`` (sigmoid on i, f, o and tanh on g: 4H; ``c' = f·c + i·g``: 3H;
    ``h' = o·tanh(c')``: 2H)."""
    return float(rows) * (8.0 * hidden * (input_size + hidden) + 8.0 * hidden + 9.0 * hidden)


def _node_flops(node: Any) -> float:
    """FLOPs of one aten node: the flop counter's formula if it has one, :func:`lstm_layer_flops` for
    a fused LSTM layer (its backward: twice the forward, the input and the weight gradients, each a
    product of the forward's sizes), else elements."""
    import torch
    from torch.utils.flop_counter import flop_registry

    target = node.target
    if getattr(target, "is_view", False):
        return 0.0

    def val(a: Any) -> Any:
        return a.meta.get("val") if isinstance(a, torch.fx.Node) else a

    packet = getattr(target, "overloadpacket", None)
    factor = _FUSED_LSTM.get(getattr(packet, "__name__", ""))
    if factor is not None:  # (input, w_ih (4H × I), w_hh (4H × H), ...) in both overloads
        x, w_ih, w_hh = (val(a) for a in node.args[:3])
        input_size, hidden = int(w_ih.shape[1]), int(w_hh.shape[1])
        return factor * lstm_layer_flops(_numel(x) // max(input_size, 1), input_size, hidden)
    if packet in flop_registry:
        args = torch.fx.node.map_aggregate(node.args, val)
        kwargs = torch.fx.node.map_aggregate(node.kwargs, val)
        try:
            return float(flop_registry[packet](*args, **kwargs, out_val=node.meta.get("val")))
        except Exception:  # a formula that does not accept this overload's arguments
            pass
    sizes = [_numel(val(a)) for a in node.all_input_nodes] + [_numel(node.meta.get("val"))]
    return float(max(sizes, default=0))


def graph_from_torch(
    module: Any,
    example_inputs: Sequence[Any],
    *,
    loss_fn: Callable[[Any], Any] | None = None,
    output_key: str | None = None,
    lr: float = 0.01,
    cost: CostFn | None = None,
    name: str | None = None,
    training: bool = True,
) -> CompGraph:
    """The CompGraph of one SGD training step of ``module`` on ``example_inputs`` (``training=False``:
    of its forward pass only, every op in phase ``forward``).

    Parameters
    ----------
    module : torch.nn.Module
        Runs eagerly on the example inputs (CPU tensors). Its output may be a tensor, a list or tuple, a
        dict, a dataclass or a Hugging Face ``ModelOutput``.
    example_inputs : sequence of tensors
        Positional inputs of ``module.forward``; their shapes fix the graph's sizes.
    loss_fn : callable, optional
        ``loss_fn(output) -> scalar tensor``; default: the output's own ``loss`` when it has one, else the
        mean of the squares of the output ``output_key`` names, else of its first tensor (MSE against a zero
        target: the same backward structure; :mod:`engine.importers._torch_outputs`).
    output_key : str, optional
        The output the default loss (``training=False``: the graph) reads: a key of a dict or
        ``ModelOutput`` (``"logits"``), a field of a dataclass, a position in a tuple (``"0"``).
    lr : float
        SGD learning rate of the traced update (the value does not change the graph).
    cost : callable, optional
        ``cost(flops, bytes_accessed) -> {kind: seconds}``; default:
        :func:`engine.importers.tensorflow_graph.roofline_cost`.

    Raises
    ------
    GraphError
        If the module cannot be traced (data-dependent control flow said as such, with what to change),
        has no trainable parameter, or ``output_key`` names no output.
    """
    _import_torch()
    if training and not any(v.requires_grad for v in module.parameters()):
        raise GraphError(f"module {quote(type(module).__name__)} has no trainable parameter")
    trace = trace_step(module, example_inputs, loss_fn=loss_fn, lr=lr, training=training, output_key=output_key)
    params = [k for k, v in module.named_parameters() if v.requires_grad]
    buffers = [k for k, _ in module.named_buffers()]
    return _to_compgraph(trace, params, buffers, cost,
                         name or f"{type(module).__name__}-{'train' if training else 'infer'}")


def _to_compgraph(trace: Trace, param_names: list[str], buffer_names: list[str], cost: CostFn | None,
                  name: str) -> CompGraph:
    marks, trained = trace.marks, trace.trained
    nodes = list(trace.gm.graph.nodes)
    position = {nd: i for i, nd in enumerate(nodes)}
    placeholders = [nd for nd in nodes if nd.op == "placeholder"]
    label: dict[Any, tuple[str, str]] = {}  # placeholder -> (op name, op type)
    for k, nd in enumerate(placeholders):
        if k < len(param_names):
            label[nd] = (param_names[k], "Parameter")
        elif k < len(param_names) + len(buffer_names):
            label[nd] = (buffer_names[k - len(param_names)], "Buffer")
        else:
            label[nd] = (nd.name, "Input")
    kept = [nd for nd in nodes if nd.op in ("placeholder", "call_function") and not _is_pass_through(nd)]
    index = {nd: i for i, nd in enumerate(kept)}
    n = len(kept)

    memo: dict[Any, tuple[int, ...]] = {}

    def sources(nd: Any) -> tuple[int, ...]:
        if nd in index:
            return (index[nd],)
        if nd not in memo:
            memo[nd] = tuple(sorted({s for a in nd.all_input_nodes for s in sources(a)}))
        return memo[nd]

    names, types, phases, scopes = [], [], [], []
    out_bytes, persistent, flops, touched = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n)
    src_l: list[int] = []
    dst_l: list[int] = []
    bytes_l: list[float] = []
    for i, nd in enumerate(kept):
        val = nd.meta.get("val")
        out_bytes[i] = _nbytes(val)
        pos = position[nd]
        if nd.op == "placeholder":
            op_name, op_type = label[nd]
            names.append(op_name)
            types.append(op_type)
            phases.append("forward" if op_type == "Input" else None)
            scopes.append(op_name.rsplit(".", 1)[0] if "." in op_name else "")
            if op_type != "Input":
                persistent[i] = out_bytes[i]
            continue
        names.append(nd.name)
        packet = getattr(nd.target, "overloadpacket", None)
        types.append(packet.__name__ if packet is not None else str(nd.target))
        phases.append("forward" if pos < marks["backward"] else "backward" if pos < marks["update"] else "update")
        in_bytes = 0.0
        for a in nd.all_input_nodes:
            b = _nbytes(a.meta.get("val"))
            in_bytes += b
            for s in sources(a):
                src_l.append(s)
                dst_l.append(i)
                bytes_l.append(float(b))
        if not getattr(nd.target, "is_view", False):
            flops[i] = _node_flops(nd)
            touched[i] = in_bytes + out_bytes[i]
        scopes.append(trace.scopes[pos])

    colocate: list[str | None] = [None] * n
    # each parameter's new value is colocated with the parameter
    out_node = next(nd for nd in nodes if nd.op == "output")
    new_values = list(out_node.args[0])[1:]  # make_fx flattens (loss, [new params])
    for k, nv in zip(trained, new_values, strict=True):
        for s in sources(nv):
            colocate[s] = param_names[k]
            colocate[index[placeholders[k]]] = param_names[k]
            scopes[s] = "update/" + (param_names[k].rsplit(".", 1)[0] if "." in param_names[k] else "")

    preds: list[list[int]] = [[] for _ in range(n)]
    for s, d in zip(src_l, dst_l, strict=True):
        preds[d].append(s)
    for i in range(n):  # backward scopes in node order (producers come first in an fx graph)
        if phases[i] != "backward":
            continue
        fwd = [scopes[s] for s in preds[i] if phases[s] in ("forward", None) and scopes[s]]
        bwd = [scopes[s] for s in preds[i] if phases[s] == "backward" and scopes[s]]
        scopes[i] = "grad/" + fwd[-1] if fwd else max(bwd, key=len) if bwd else "grad"
    for i in range(n):
        if phases[i] == "update" and not scopes[i].startswith("update"):
            scopes[i] = "update"

    if len(set(names)) != n:
        raise GraphError(f"graph {quote(name)}: parameter names clash with traced node names")
    times = (cost or roofline_cost)(flops, touched)
    kinds = tuple(times)
    return CompGraph(
        name, names, compute_any=np.full(n, np.nan),
        compute_by_kind=np.column_stack([np.asarray(times[k], dtype=np.float64) for k in kinds]), kinds=kinds,
        output_bytes=out_bytes, persistent_bytes=persistent,
        edge_src=np.asarray(src_l, dtype=np.int64), edge_dst=np.asarray(dst_l, dtype=np.int64),
        edge_bytes=np.asarray(bytes_l, dtype=np.float64),
        op_types=types, colocate=colocate, phase=phases, scope=scopes,
    )

