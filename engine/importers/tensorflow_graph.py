"""TensorFlow graphs → CompGraph: a Keras training step, a serialized GraphDef, a SavedModel.

Three entry points share one walker (:func:`graph_from_tf_graph`) over a ``tf.Graph``:

* :func:`graph_from_keras` traces ONE TRAINING STEP of a Keras 3 model (forward, loss,
  ``tape.gradient``, ``optimizer.apply_gradients``) as a ``tf.function`` on concrete input
  specs and walks its FuncGraph (no grappler pass: the graph is what TF would hand to its
  placer). Phases come from *where* each op was created during the trace: ops created
  before ``tape.gradient`` are ``forward``, by it ``backward``, by ``apply_gradients``
  ``update``.
* A binary ``GraphDef`` file (``.pb``) and a SavedModel's ``saved_model.pb`` file are
  registered formats (``engine/importers/tensorflow_files.py``), detected from their first
  protobuf bytes. They are parsed as protobuf only: nothing from the file is
  executed and no Python is restored. A SavedModel holds the graphs it was exported with —
  normally an *inference* graph (the serving signature) with no gradient or optimizer ops;
  it has a training step only if one was saved. Phases there come from name heuristics
  (:func:`phase_from_name`).

What the walker keeps and prunes (a ``tf.Graph`` → ops and edges):

* **Pruned** — ``Const``/``HostConst`` (weights of frozen graphs included: their bytes are
  not modelled), ``NoOp``, and the pass-through ops ``Identity``, ``IdentityN``,
  ``StopGradient``, ``PreventGradient``, ``Snapshot``, ``ReadVariableOp``. A consumer of a
  pruned op is reconnected to that op's own (transitively resolved) producers; data edges
  carry the bytes of the tensor the consumer reads, control dependencies become 0-byte
  edges. ``IdentityN``'s output *k* resolves to its input *k* only.
* **Variables** — ``VarHandleOp``/``VariableV2``/``Variable`` ops and, in a FuncGraph, the
  ``resource`` placeholders that stand for captured variables, become ops of type
  ``Variable`` holding the variable's bytes as ``persistent_bytes`` and as ``output_bytes``
  (the value that a read moves to a consumer on another device). Their phase is ``None``:
  state, not work of one phase. A handle passed to an op (``AssignSubVariableOp``,
  ``ResourceApply*``) is a 0-byte edge.
* **Inputs** — data ``Placeholder`` ops stay as 0-time source ops holding the input tensor.
* Every other op is kept with its TF op type and name; for a traced training step, ops
  that feed neither the step's outputs nor a stateful op are dropped first, as TF's
  runtime does (``fetches`` of :func:`graph_from_tf_graph`).

Sizes: output bytes = Σ over the op's outputs of (number of elements × dtype size) from the
static shapes (completed from ``_output_shapes`` attributes when a GraphDef was written with
``add_shapes=True``: a TF2 GraphDef does not record its resource variables' shapes, so
without them the ops behind a variable read have unknown shapes); an unknown dimension
counts as ``batch_size`` when it is the first dimension and 1 otherwise; an unknown rank
counts as one element; ``resource``/``variant``/``string``
tensors count 0 bytes. Temp bytes are 0 (TF's scratch memory is not visible statically).

Colocation: TF's ``_class = ["loc:@X"]`` attributes, plus TF's rule that an op taking a
resource handle runs on the resource's device (so a variable, its optimizer update ops and
its slot updates share one colocation group). The group is named after its variable (or its
first op). Such groups are generally *not convex* (variable → forward → backward → update),
so contracting a whole training graph by colocation alone yields a cycle: a grouper must
place colocation groups as units without contracting them, or merge further.

Compute: FLOPs per op from shapes (:func:`op_flops`) and bytes touched (inputs + outputs),
turned into seconds per device kind by :func:`roofline_cost` (``engine/costmodel.py``'s roofline),
or by any ``cost`` callable with the same signature. For times measured on this machine
instead, see :func:`engine.importers.tensorflow_measured.measure_tf_step`.

Code: the op classes, sizes, FLOPs and name phases are in ``_tf_ops.py``, the tracing of a
Keras step in ``_tf_keras.py``; this module holds the walker.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from engine.errors import GraphError, quote
from engine.graph.compgraph import CompGraph
from engine.importers._tf_keras import _trace_keras_forward, _trace_keras_step
from engine.importers._tf_ops import (
    _DROPPED,
    _METADATA,
    _PASS_THROUGH,
    _VARIABLES,
    _attr,
    _dtype_size,
    _is_variable,
    _numel,
    _tensor_bytes,
    import_tensorflow,
    op_flops,
    phase_from_name,
)

__all__ = [
    "graph_from_keras",
    "graph_from_tf_graph",
    "import_tensorflow",
    "op_flops",
    "phase_from_name",
    "roofline_cost",
]

#: ``cost(flops, bytes_accessed) -> {kind: seconds}`` over arrays of ops.
CostFn = Callable[[np.ndarray, np.ndarray], dict[str, np.ndarray]]

def roofline_cost(flops: np.ndarray, bytes_accessed: np.ndarray) -> dict[str, np.ndarray]:
    """Seconds per op and device kind from :func:`engine.costmodel.op_times` (K80 GPU and
    Mirhoseini's Haswell CPU roofline, launch overhead included, plus a ``gpu@MODEL`` column per
    GPU model for devices that name theirs); ops that do no work at all (variables, inputs,
    views, metadata ops) take 0 s."""
    from engine.costmodel import op_times

    f = np.asarray(flops, dtype=np.float64)
    b = np.asarray(bytes_accessed, dtype=np.float64)
    return op_times(f, b, idle=(f == 0) & (b == 0))


# TensorFlow's C++ INFO/WARNING lines would otherwise land on every command's stderr.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


# ------------------------------------------------------------------ the walker
class _UnionFind:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def _live_ops(ops: list[Any], fetches: Sequence[Any]) -> list[Any]:
    """``ops`` (in order) that a fetch or a stateful op depends on, themselves included."""
    live: set[str] = set()
    todo = [op for op in ops if op.op_def is not None and op.op_def.is_stateful and op.type not in _VARIABLES]
    todo += list(fetches)
    while todo:
        op = todo.pop()
        if op.name in live:
            continue
        live.add(op.name)
        todo.extend(t.op for t in op.inputs)
        todo.extend(op.control_inputs)
    return [op for op in ops if op.name in live]


def graph_from_tf_graph(
    graph: Any,
    *,
    name: str,
    batch_size: int = 1,
    phase_of: Callable[[Any], str | None] | None = None,
    variables: Mapping[str, tuple[str, int]] | None = None,
    cost: CostFn | None = None,
    fetches: Sequence[Any] | None = None,
) -> CompGraph:
    """The CompGraph of a ``tf.Graph`` (pruning and conventions in the module docstring).

    Parameters
    ----------
    graph : tf.Graph
        A graph with static shapes (a FuncGraph or a graph imported from a GraphDef).
    name : str
        Name of the resulting graph.
    batch_size : int
        Stand-in for an unknown leading dimension.
    phase_of : callable, optional
        ``tf.Operation -> phase``; default :func:`phase_from_name`.
    variables : mapping, optional
        ``variable op name -> (display name, bytes)`` for resource placeholders that stand
        for captured variables (FuncGraphs); otherwise bytes come from the op's shape attr or
        the largest ``ReadVariableOp`` reading it.
    cost : callable, optional
        ``cost(flops, bytes_accessed) -> {kind: seconds}``; default :func:`roofline_cost`.
    fetches : sequence of tf.Operation, optional
        When given, ops that neither feed a fetch nor a stateful op are dropped, as TF's
        runtime prunes a function body (e.g. the unused gradient of a model's input image).

    Raises
    ------
    GraphError
        If nothing is left after pruning or the result is not a valid DAG.
    """
    ops = graph.get_operations()
    if fetches is not None:
        ops = _live_ops(ops, fetches)
    variables = dict(variables or {})
    kept_ops = [op for op in ops if op.type not in _DROPPED and op.type not in _PASS_THROUGH]
    if not kept_ops:
        raise GraphError(f"TF graph {quote(name)} has no ops left after pruning constants and identities")
    src = _Sources({op.name: i for i, op in enumerate(kept_ops)})
    n = len(kept_ops)
    is_var = np.array([_is_variable(op) for op in kept_ops])
    var_bytes, names = _variable_bytes(ops, kept_ops, src, variables, batch_size)
    uf = _UnionFind(n)
    edges, out_bytes, flops, touched = _edges_and_work(kept_ops, src, is_var, var_bytes, uf, batch_size)
    _colocate_as_tf(graph, kept_ops, src, uf)
    times = (cost or roofline_cost)(flops, touched)
    kinds = tuple(times)
    phase_fn = phase_of or (lambda op: phase_from_name(op.name, op.type))
    return CompGraph(
        name, names, compute_any=np.full(n, np.nan),
        compute_by_kind=np.column_stack([np.asarray(times[k], dtype=np.float64) for k in kinds]), kinds=kinds,
        output_bytes=out_bytes, persistent_bytes=var_bytes,
        edge_src=np.asarray(edges[0], dtype=np.int64), edge_dst=np.asarray(edges[1], dtype=np.int64),
        edge_bytes=np.asarray(edges[2], dtype=np.float64),
        op_types=["Variable" if is_var[i] else op.type for i, op in enumerate(kept_ops)],
        colocate=_colocation_names(uf, is_var, names),
        phase=[None if is_var[i] else phase_fn(op) for i, op in enumerate(kept_ops)],
        scope=[nm.rsplit("/", 1)[0] if "/" in nm else "" for nm in names],
    )


class _Sources:
    """The kept producers behind a tensor or an op of the TF graph, looking through pruned ops
    (constants, identities), memoised; ``kept`` maps a kept op's name to its index."""

    def __init__(self, kept: dict[str, int]) -> None:
        self.kept = kept
        self._memo: dict[tuple[str, int], tuple[int, ...]] = {}

    def of_op(self, op: Any) -> tuple[int, ...]:
        """Kept producers behind every input and control input of a pruned op."""
        key = (op.name, -1)
        if key not in self._memo:
            self._memo[key] = ()  # guards against (invalid) cycles through pruned ops
            out: set[int] = set()
            for t in op.inputs:
                out.update(self.of_tensor(t))
            for c in op.control_inputs:
                out.update(self.of_control(c))
            self._memo[key] = tuple(sorted(out))
        return self._memo[key]

    def of_control(self, op: Any) -> tuple[int, ...]:
        """A control input: the op itself when kept, else the kept ops behind it."""
        return (self.kept[op.name],) if op.name in self.kept else self.of_op(op)

    def of_tensor(self, t: Any) -> tuple[int, ...]:
        op = t.op
        if op.name in self.kept:
            return (self.kept[op.name],)
        key = (op.name, t.value_index)
        if key not in self._memo:
            self._memo[key] = ()
            if op.type == "IdentityN":
                out = set(self.of_tensor(op.inputs[t.value_index]))
                for c in op.control_inputs:
                    out.update(self.of_control(c))
                self._memo[key] = tuple(sorted(out))
            else:
                self._memo[key] = self.of_op(op)
        return self._memo[key]


def _variable_bytes(ops: Sequence[Any], kept_ops: list[Any], src: _Sources,
                    variables: Mapping[str, tuple[str, int]], batch_size: int) -> tuple[np.ndarray, list[str]]:
    """Each kept op's persistent bytes (variables only) and display names (a captured variable's label)."""
    n = len(kept_ops)
    var_bytes = np.zeros(n)
    names = [op.name for op in kept_ops]
    for i, op in enumerate(kept_ops):
        if not _is_variable(op):
            continue
        if op.name in variables:
            names[i], var_bytes[i] = variables[op.name]
            continue
        shape, dtype = _attr(op, "shape"), _attr(op, "dtype")
        if op.type == "VarHandleOp" and shape is not None and dtype is not None and shape.rank is not None:
            var_bytes[i] = _dtype_size(dtype) * _numel(shape, batch_size)
        elif op.type in ("VariableV2", "Variable"):
            var_bytes[i] = _tensor_bytes(op.outputs[0], batch_size)
    if var_bytes.any() or any(_is_variable(op) for op in kept_ops):  # fall back to the reads' sizes
        for op in ops:
            if op.type == "ReadVariableOp":
                for s in src.of_tensor(op.inputs[0]):
                    if _is_variable(kept_ops[s]) and kept_ops[s].name not in variables:
                        var_bytes[s] = max(var_bytes[s], _tensor_bytes(op.outputs[0], batch_size))
    if len(set(names)) != n:  # a display name clashes: keep TF's unique op names
        names = [op.name for op in kept_ops]
    return var_bytes, names


def _edges_and_work(kept_ops: list[Any], src: _Sources, is_var: np.ndarray, var_bytes: np.ndarray,
                    uf: _UnionFind, batch_size: int) -> tuple[tuple[list[int], list[int], list[float]],
                                                              np.ndarray, np.ndarray, np.ndarray]:
    """The edges ``(src, dst, bytes)`` (control edges carry 0 bytes), each op's output bytes, FLOPs and
    bytes touched; a resource's consumers join its colocation group in ``uf``."""
    n = len(kept_ops)
    edges: tuple[list[int], list[int], list[float]] = ([], [], [])
    out_bytes, flops, touched = np.zeros(n), np.zeros(n), np.zeros(n)
    for i, op in enumerate(kept_ops):
        if is_var[i]:
            out_bytes[i] = var_bytes[i]
            continue
        out_bytes[i] = sum(_tensor_bytes(t, batch_size) for t in op.outputs)
        in_bytes = 0.0
        for t in op.inputs:
            b = _tensor_bytes(t, batch_size)
            for s in src.of_tensor(t):
                _add_edge(edges, s, i, b)
                if t.dtype.name == "resource" and is_var[s]:
                    uf.union(s, i)  # TF runs a resource's consumers on the resource's device
                    b = var_bytes[s]  # an update reads and writes the variable
            in_bytes += b
        for c in op.control_inputs:
            for s in src.of_control(c):
                _add_edge(edges, s, i, 0.0)
        if op.type not in _METADATA and op.type != "Placeholder":
            flops[i] = op_flops(op, batch_size)
            touched[i] = in_bytes + out_bytes[i]
    return edges, out_bytes, flops, touched


def _add_edge(edges: tuple[list[int], list[int], list[float]], src: int, dst: int, nbytes: float) -> None:
    edges[0].append(src)
    edges[1].append(dst)
    edges[2].append(nbytes)


def _colocate_as_tf(graph: Any, kept_ops: list[Any], src: _Sources, uf: _UnionFind) -> None:
    """Join the ops TF's ``_class = loc:@NAME`` attributes colocate (a pruned target: its first kept source)."""
    for i, op in enumerate(kept_ops):
        for loc in _attr(op, "_class") or []:
            target = loc.decode() if isinstance(loc, bytes) else str(loc)
            if not target.startswith("loc:@"):
                continue
            target = target[5:]
            if target in src.kept:
                uf.union(i, src.kept[target])
                continue
            try:
                srcs = src.of_op(graph.get_operation_by_name(target))
            except (KeyError, ValueError):
                continue
            for s in srcs[:1]:
                uf.union(i, s)


def _colocation_names(uf: _UnionFind, is_var: np.ndarray, names: list[str]) -> list[str | None]:
    """Each op's colocation group name (None alone): a group is named after its first variable, else its
    first op."""
    n = len(names)
    roots = [uf.find(i) for i in range(n)]
    size = np.bincount(roots, minlength=n)
    group_name: dict[int, str] = {}
    for i in range(n):
        if size[roots[i]] > 1 and is_var[i]:
            group_name.setdefault(roots[i], names[i])
    for i in range(n):
        if size[roots[i]] > 1:
            group_name.setdefault(roots[i], names[i])
    return [group_name.get(roots[i]) if size[roots[i]] > 1 else None for i in range(n)]


# ------------------------------------------------------------------ Keras training step
def graph_from_keras(
    model: Any,
    batch_size: int,
    *,
    optimizer: Any = "sgd",
    loss: Any = "mse",
    cost: CostFn | None = None,
    name: str | None = None,
    training: bool = True,
) -> CompGraph:
    """The CompGraph of ONE TRAINING STEP of a Keras 3 model (TensorFlow backend); ``training=False``:
    of its forward pass (``model(x, training=False)``), every op in phase ``forward``.

    Traces ``tf.function(step)`` on ``TensorSpec``s of ``batch_size`` rows (the model's
    inputs, and a target shaped like its output) where ``step`` runs the model with
    ``training=True``, the ``loss``, ``tape.gradient`` over the trainable variables and
    ``optimizer.apply_gradients``. The step is only traced, never run.

    Parameters
    ----------
    model : keras.Model
        A built model with known input shapes (apart from the batch dimension) and one output.
    batch_size : int
        Rows per step; every unknown dimension of an input spec becomes ``batch_size`` for
        the first dimension, 1 elsewhere.
    optimizer, loss : str or Keras object
        Resolved by ``keras.optimizers.get`` / ``keras.losses.get``. Keras numbers the name
        scope of each new optimizer (``sgd``, ``sgd_1``, ...): pass the same optimizer object
        to get the same update-op names from two calls.
    cost : callable, optional
        See :func:`graph_from_tf_graph`.

    Returns
    -------
    CompGraph
        Phases ``forward`` / ``backward`` / ``update`` by the step's stage that created each op;
        one ``Variable`` op per model and optimizer variable (persistent bytes).

    Raises
    ------
    GraphError
        If ``batch_size`` < 1, the model has several outputs or no trainable variable.
    """
    if batch_size < 1:
        raise GraphError("batch_size must be >= 1")
    if training:
        step = _trace_keras_step(model, batch_size, optimizer, loss)
    else:
        step = _trace_keras_forward(model, batch_size)
    default = f"{model.name}-{'train' if training else 'infer'}-b{batch_size}"
    return graph_from_tf_graph(step.graph, name=name or default, batch_size=batch_size,
                               phase_of=step.phase_of, variables=step.variables, cost=cost, fetches=step.fetches)
