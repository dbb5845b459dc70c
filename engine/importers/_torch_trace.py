"""One training step of a PyTorch module as an fx graph of aten ops (:func:`trace_step`), the graph that
:mod:`engine.importers.pytorch_graph` turns into a CompGraph.

The step runs the module functionally (``torch.func.functional_call``) on the example inputs, takes the loss
of its output (:mod:`engine.importers._torch_outputs`), ``torch.autograd.grad`` of it with respect to every
trainable parameter, and applies an SGD update ``p - lr·g``. It is traced in the first of two ways that works:

1. **torch.export, then the step over the exported program.** ``torch.export.export`` (non-strict) runs the
   forward pass and the loss once on fake tensors and records them as one graph with Python control flow
   resolved for the example inputs' shapes — Hugging Face models are written to pass it, their mask code
   included. ``make_fx`` then traces the step over that graph on fake tensors too: no op computes, so the
   import takes neither the step's time nor its memory, whatever the batch. Scopes come from the exported
   nodes' module paths (``nn_module_stack``). Shapes stay static: the graph is wanted at these sizes.
2. **make_fx of the eager module** on the real example tensors, each op computed once on the CPU, as for any
   module that runs eagerly; scopes from forward hooks. This is for modules torch.export refuses (an
   operator it has no rule for, a Python side effect it cannot record).

A module that reads a tensor's value to decide what to run (``if x.sum() > 0``, ``.item()``, ``.tolist()``:
data-dependent control flow) fails both ways; the error says where, and what the user can change.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from engine.errors import GraphError, first_line, quote
from engine.importers._torch_outputs import select_output, training_loss

__all__ = ["Trace", "buffers_restored", "trace_step"]

#: Words of a library's message that name calls inside the importer, which the user cannot change.
_INTERNAL_WORDS = ("make_fx", "tracing_mode", "proxy_tensor", "functional_call")
_ENGINE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass
class Trace:
    """A traced step: its fx ``GraphModule`` (inputs: parameters, buffers, example inputs; output: the loss and
    the updated parameters), the node positions where ``backward`` and ``update`` start, the innermost
    module path of each node (by position; ``""`` outside any submodule), the positions, in
    ``named_parameters`` order, of the parameters that got a gradient, and how it was traced
    (``"export"`` or ``"eager"``, the module docstring's two ways)."""

    gm: Any
    marks: dict[str, int]
    scopes: list[str]
    trained: list[int]
    via: str


def trace_step(module: Any, inputs: Sequence[Any], *, loss_fn: Callable[[Any], Any] | None = None,
               lr: float = 0.01, training: bool = True, output_key: str | None = None) -> Trace:
    """The step of ``module`` on ``inputs`` (module docstring); ``training=False``: its forward pass only, the
    output :func:`~engine.importers._torch_outputs.select_output` picks.

    Raises
    ------
    GraphError
        If neither way traces the step (one line, data-dependent control flow named as such), or
        ``output_key`` names no output.
    """
    import torch

    name = quote(type(module).__name__)
    what = "a training step" if training else "the forward pass"
    if training:
        head = loss_fn or training_loss(output_key, model=name)
    else:
        def head(out: Any) -> Any:
            return select_output(out, output_key, model=name)[1]
    params = {k: v for k, v in module.named_parameters() if v.requires_grad}
    buffers = dict(module.named_buffers())
    inputs = tuple(inputs)
    with buffers_restored(torch, buffers):
        try:
            return _exported(torch, module, head, params, buffers, inputs, lr, training)
        except Exception as exc:
            _reraise_graph_error(exc)
            export_error = exc
        try:
            return _eager(torch, module, head, params, buffers, inputs, lr, training)
        except Exception as exc:
            _reraise_graph_error(exc)
            raise _trace_error(what, name, exc, export_error) from None


@contextlib.contextmanager
def buffers_restored(torch: Any, buffers: dict) -> Iterator[None]:
    """Put the module's buffers back as they were: the eager trace runs the step on the real tensors, so
    in-place buffer updates (BatchNorm running statistics) would land in the module."""
    saved = {k: v.detach().clone() for k, v in buffers.items()}
    try:
        yield
    finally:
        with torch.no_grad():
            for k, v in buffers.items():
                v.copy_(saved[k])


def _step_fn(torch: Any, forward: Callable[[dict, dict, tuple], Any], lr: float, training: bool,
             marks: dict[str, int], trained: list[int]) -> Callable[..., Any]:
    """``step(params, buffers, *inputs) -> (loss, [new parameters])`` around ``forward`` (the loss, or the
    selected output when not ``training``), marking where backward and update start in the traced graph."""
    from torch.fx.experimental.proxy_tensor import get_proxy_mode

    def count() -> int:
        return len(get_proxy_mode().tracer.graph.nodes)

    def step(p: dict, b: dict, *xs: Any) -> Any:
        out = forward(p, b, xs)
        marks["backward"] = count()
        if not training:
            marks["update"] = marks["backward"]
            return out, []
        grads = torch.autograd.grad(out, list(p.values()), allow_unused=True)
        marks["update"] = count()
        trained[:] = [k for k, g in enumerate(grads) if g is not None]
        return out, [w - lr * g for w, g in zip(p.values(), grads, strict=True) if g is not None]

    return step


def _exported(torch: Any, module: Any, head: Callable[[Any], Any], params: dict, buffers: dict, inputs: tuple,
              lr: float, training: bool) -> Trace:
    import torch.fx.traceback as fx_traceback
    from torch.func import functional_call
    from torch.fx.experimental.proxy_tensor import make_fx

    class Headed(torch.nn.Module):  # the module and its loss: one exported program
        def __init__(self) -> None:
            super().__init__()
            self.model = module

        def forward(self, *xs: Any) -> Any:
            return head(self.model(*xs))

    class Interpreted(torch.nn.Module):
        """Runs the exported graph node by node, so that each traced op takes its node's module path."""

        def __init__(self, program: Any) -> None:
            super().__init__()
            self.program = program

        def forward(self, *xs: Any) -> Any:
            return torch.fx.Interpreter(self.program).run(*xs)

    with _quiet():
        run = Interpreted(torch.export.export(Headed(), inputs, strict=False).module())
    marks: dict[str, int] = {}
    trained: list[int] = []

    def forward(p: dict, b: dict, xs: tuple) -> Any:
        return functional_call(run, {f"program.model.{k}": v for k, v in {**p, **b}.items()}, xs)

    with _quiet(), fx_traceback.preserve_node_meta():
        # constants the program holds (a tensor attribute of the module) stay real: recorded as they are
        step = make_fx(_step_fn(torch, forward, lr, training, marks, trained), tracing_mode="fake",
                       _allow_non_fake_inputs=True)
        gm = step(params, buffers, *inputs)
    scopes = [_module_path(nd.meta.get("nn_module_stack")) for nd in gm.graph.nodes]
    return Trace(gm, marks, scopes, trained, "export")


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """No output from the exporter: its notes on the modules it traced (nn.LSTM's weights), its log lines and
    the partial graph it prints when it fails are not the user's to read; the failure comes as one line."""
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(previous)


def _module_path(stack: dict | None) -> str:
    """The innermost module of an exported node's ``nn_module_stack``, relative to the user's module (its
    entries are ``(path, type)``; a module called again is ``path@2``)."""
    if not stack:
        return ""
    path = str(list(stack.values())[-1][0]).split("@")[0]
    return "" if path == "model" else path.removeprefix("model.")


def _eager(torch: Any, module: Any, head: Callable[[Any], Any], params: dict, buffers: dict, inputs: tuple,
           lr: float, training: bool) -> Trace:
    from torch.func import functional_call
    from torch.fx.experimental.proxy_tensor import get_proxy_mode, make_fx

    marks: dict[str, int] = {}
    trained: list[int] = []
    spans: list[tuple[int, int, str]] = []  # (first node, end node, module path)
    stack: list[tuple[int, str]] = []

    def count() -> int:
        return len(get_proxy_mode().tracer.graph.nodes)

    def pre_hook(path: str) -> Callable[..., None]:
        return lambda _mod, _args: stack.append((count(), path))

    def post_hook(_mod: Any, _args: Any, _out: Any) -> None:
        start, path = stack.pop()
        spans.append((start, count(), path))

    def forward(p: dict, b: dict, xs: tuple) -> Any:
        return head(functional_call(module, {**p, **b}, xs))

    handles = []
    for path, sub in module.named_modules():
        if path:
            handles.append(sub.register_forward_pre_hook(pre_hook(path)))
            handles.append(sub.register_forward_hook(post_hook))
    try:
        gm = make_fx(_step_fn(torch, forward, lr, training, marks, trained))(params, buffers, *inputs)
    finally:
        for h in handles:
            h.remove()
    n = len(gm.graph.nodes)
    scopes = [""] * n  # spans close innermost-first: the first span to cover a node wins
    for start, end, path in spans:
        for i in range(start, min(end, n)):
            if not scopes[i]:
                scopes[i] = path
    return Trace(gm, marks, scopes, trained, "eager")


def _reraise_graph_error(exc: BaseException) -> None:
    """Our own error raised inside the trace (an ``output_key`` that names nothing) is the answer as it is."""
    for e in _chain(exc):
        if isinstance(e, GraphError):
            raise e from None


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and seen not in out:
        out.append(seen)
        seen = seen.__cause__ or seen.__context__
    return out


def _data_dependent(exc: BaseException | None) -> BaseException | None:
    """The exception in ``exc``'s chain that says the module branched on a tensor's value, if any."""
    from torch._subclasses.fake_tensor import DataDependentOutputException, DynamicOutputShapeException
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

    kinds = (GuardOnDataDependentSymNode, DataDependentOutputException, DynamicOutputShapeException)
    for e in _chain(exc) if exc is not None else []:
        text = str(e)
        if isinstance(e, kinds) or "data-dependent" in text or "_local_scalar_dense" in text:
            return e
    return None


def _where(exc: BaseException) -> str:
    """``file.py:LINE``: the innermost frame of ``exc`` in the model's code (not torch's, not placelab's)."""
    import torch

    torch_dir = os.path.dirname(os.path.abspath(torch.__file__))
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        path = os.path.abspath(frame.filename)
        if frame.filename.startswith("<") or path.startswith((torch_dir, _ENGINE_DIR)):
            continue
        return f"{os.path.basename(path)}:{frame.lineno}"
    return ""


def _trace_error(what: str, name: str, exc: BaseException, export_error: BaseException | None) -> GraphError:
    """One line for a step neither way traced: data-dependent control flow said as such, with where it is and
    what to change; any other failure as the eager trace's first line, without hints about calls inside the
    importer."""
    found = _data_dependent(exc) or _data_dependent(export_error)
    if found is not None:
        where = _where(found)
        return GraphError(
            f"cannot trace {what} of {name}: its forward pass branches on a tensor's values"
            f"{f' (at {where})' if where else ''}; make that branch depend on shapes or Python numbers (a fixed "
            "sequence length, no padding mask; Hugging Face: attn_implementation=\"eager\")")
    sentences = re.split(r"(?<=[.!?])\s+", first_line(exc))
    kept = " ".join(s for s in sentences if not any(w in s for w in _INTERNAL_WORDS))
    return GraphError(f"cannot trace {what} of {name}: {kept or type(exc).__name__}")
