"""Measured op costs for a PyTorch training step: time every aten op on this machine.

:func:`measure_torch_step` is the *measured* counterpart of
:func:`engine.importers.pytorch_graph.graph_from_torch` (whose times come from a roofline, see
``engine/costmodel.py``). It returns the same training-step graph — op names, types, edges,
bytes, phases, scopes and colocation are exactly ``graph_from_torch``'s — but each op's compute
time on ``kind`` is the **median wall time of that op** over ``repeats`` runs of the traced step
(after ``warmup`` untimed runs), measured with a :class:`torch.fx.Interpreter` that wraps
``run_node`` in ``time.perf_counter_ns``. Times are in seconds, as everywhere in placelab.

How it works
------------
1. ``graph_from_torch`` builds the reference graph (and raises :class:`GraphError` for a module
   that cannot be traced or has no trainable parameter).
2. ``graph_from_torch`` does not expose its fx ``GraphModule``, so the step is traced again by the
   same function (:func:`~engine.importers.pytorch_graph.trace_step`: same loss, same ``lr``).
   Tracing names nodes deterministically, so the re-trace's ops line up with the reference by
   name; this is **checked** (same ops in the same order), and a mismatch — e.g. a module whose
   trace changes from one call to the next — is a GraphError.
3. The re-traced graph runs under ``torch.no_grad`` on the example inputs, on copies of the
   parameters and buffers; each node is timed. The module's buffers, which tracing updates in
   place (BatchNorm running statistics), are restored afterwards: measuring has no side effect.

Mapping of fx nodes to ops (the same pruning as ``graph_from_torch``)
-----------------------------------------------------------------------
* ``call_function`` nodes that ``graph_from_torch`` keeps → the op of the same name, with the
  node's median time. View ops (``t``, ``view``, ``expand``, ...) keep their *measured* time
  (small but not zero), unlike the roofline, which gives them 0 s.
* Placeholders (``Parameter``/``Buffer``/``Input`` ops) are not executed: 0 s, as in the
  roofline graph.
* Pruned pass-through nodes (``detach``, ``alias``, ``lift_fresh``, ``operator.getitem``) are
  not ops of the graph; their measured time (aliasing bookkeeping, about a microsecond) is
  dropped, not folded into a neighbour. ``graph_from_torch`` merges nothing else (parallel
  edges are merged by :class:`CompGraph`, which does not affect op times).
* The ``output`` node is not an op.

The result has one compute kind, ``kind`` (default ``"cpu"``: the example tensors live on the
CPU). Measurement runs where the example tensors live; for CUDA tensors each node is bracketed
by ``torch.cuda.synchronize()`` so the time covers the kernel, not just its launch.

Storing the measurements
------------------------
The measured times *are* the graph's per-kind compute (``compute_by_kind[:, kind]``), so
``engine.graph.io.save_graph(g, path)`` writes them into the ``placelab.graph/1`` file (each op's
``compute`` is ``{kind: seconds}``) and ``load_graph_json`` reads them back: a profile is taken
once and reused without torch. Combine kinds from several machines by building a graph with one
column per kind from graphs measured on each.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from engine.errors import GraphError, first_line, quote
from engine.graph.compgraph import CompGraph
from engine.importers._measured import check_measure_options, with_measured_times
from engine.importers.pytorch_graph import (
    _import_torch,
    _is_pass_through,
    _leaves,
    graph_from_torch,
    trace_step,
)

__all__ = ["measure_torch_step"]


def measure_torch_step(
    module: Any,
    example_inputs: Sequence[Any],
    *,
    loss_fn: Callable[[Any], Any] | None = None,
    repeats: int = 5,
    warmup: int = 2,
    kind: str = "cpu",
    lr: float = 0.01,
    name: str | None = None,
) -> CompGraph:
    """The training-step graph of ``module`` with each op's MEASURED time on ``kind``.

    Parameters are those of :func:`~engine.importers.pytorch_graph.graph_from_torch`, plus
    ``repeats`` (timed runs; each op's time is the median, >= 1), ``warmup`` (untimed runs
    first, >= 0) and ``kind`` (the device kind the times are recorded for).

    Raises
    ------
    GraphError
        If the module cannot be traced or has no trainable parameter, if the traced step fails
        to run, or if ``repeats``/``warmup``/``kind`` are invalid.
    """
    check_measure_options(repeats, warmup, kind)
    torch = _import_torch()
    params = {k: v for k, v in module.named_parameters() if v.requires_grad}
    buffers = dict(module.named_buffers())
    inputs = tuple(example_inputs)
    ref = graph_from_torch(module, inputs, loss_fn=loss_fn, lr=lr, name=name)  # leaves buffers as they were
    gm = _retrace(module, inputs, loss_fn, lr)
    names = _op_names(gm, list(params), list(buffers))
    if tuple(names) != ref.op_names:
        raise GraphError(f"graph {quote(ref.name)}: re-tracing the training step gave different ops than "
                         "graph_from_torch (does the module's trace change between calls?)")

    with torch.no_grad():
        p = {k: v.detach().clone() for k, v in params.items()}
        b = {k: v.detach().clone() for k, v in buffers.items()}
    sync = torch.cuda.synchronize if any(t.is_cuda for t in _leaves([*p.values(), *b.values(), *inputs])) else None
    timer = _timing_interpreter(torch, gm, sync)
    samples: dict[str, list[int]] = {}
    # grad mode on, as in training: a fused kernel (nn.LSTM's mkldnn_rnn_layer) returns the workspace its
    # backward reads only then. The parameters are detached copies, so autograd records nothing for them.
    xs = tuple(x.detach() if isinstance(x, torch.Tensor) else x for x in inputs)
    with torch.enable_grad():
        for run in range(warmup + repeats):
            timer.times = {}
            try:
                timer.run(p, b, *xs)
            except Exception as exc:
                first = first_line(exc)
                raise GraphError(f"graph {quote(ref.name)}: running the traced step failed: {first}") from None
            if run >= warmup:
                for nm, ns in timer.times.items():
                    samples.setdefault(nm, []).append(ns)

    seconds = np.zeros(ref.num_ops)
    for i, nm in enumerate(ref.op_names):
        if ref.op_types[i] not in ("Parameter", "Buffer", "Input"):
            seconds[i] = statistics.median(samples[nm]) * 1e-9
    return with_measured_times(ref, seconds, kind)


def _retrace(module: Any, inputs: tuple, loss_fn: Callable[[Any], Any] | None, lr: float) -> Any:
    """The fx graph of the same step as ``graph_from_torch`` (:func:`~engine.importers.pytorch_graph.trace_step`)."""
    try:
        return trace_step(module, inputs, loss_fn=loss_fn, lr=lr).gm
    except GraphError as exc:  # graph_from_torch traced it a moment ago; report rather than crash
        raise GraphError(f"cannot re-trace a training step of {quote(type(module).__name__)}: {exc}") from None


def _op_names(gm: Any, param_names: list[str], buffer_names: list[str]) -> list[str]:
    """Op names in the order ``graph_from_torch`` gives them (placeholders labelled by position)."""
    names: list[str] = []
    k = 0
    for nd in gm.graph.nodes:
        if nd.op == "placeholder":
            if k < len(param_names):
                names.append(param_names[k])
            elif k < len(param_names) + len(buffer_names):
                names.append(buffer_names[k - len(param_names)])
            else:
                names.append(nd.name)
            k += 1
        elif nd.op == "call_function" and not _is_pass_through(nd):
            names.append(nd.name)
    return names


def _timing_interpreter(torch: Any, gm: Any, sync: Callable[[], None] | None) -> Any:
    """A ``torch.fx.Interpreter`` recording each ``call_function`` node's wall time (ns) in ``times``
    (defined here so that importing this module does not import torch)."""

    class TimingInterpreter(torch.fx.Interpreter):
        def run_node(self, n: Any) -> Any:
            if n.op != "call_function":
                return super().run_node(n)
            if sync is not None:
                sync()
            t0 = time.perf_counter_ns()
            out = super().run_node(n)
            if sync is not None:
                sync()
            self.times[n.name] = time.perf_counter_ns() - t0
            return out

    timer = TimingInterpreter(gm, garbage_collect_values=True)
    timer.times = {}
    return timer
