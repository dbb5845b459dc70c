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
or by any ``cost`` callable with the same signature.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from engine.errors import GraphError
from engine.graph import CompGraph

__all__ = [
    "graph_from_keras",
    "graph_from_tf_graph",
    "op_flops",
    "phase_from_name",
    "roofline_cost",
]

#: ``cost(flops, bytes_accessed) -> {kind: seconds}`` over arrays of ops.
CostFn = Callable[[np.ndarray, np.ndarray], dict[str, np.ndarray]]

def roofline_cost(flops: np.ndarray, bytes_accessed: np.ndarray) -> dict[str, np.ndarray]:
    """Seconds per op and device kind from :func:`engine.costmodel.op_times` (K80 GPU and
    Mirhoseini's Haswell CPU roofline, launch overhead included); ops that do no work at all
    (variables, inputs, views, metadata ops) take 0 s."""
    from engine.costmodel import op_times

    f = np.asarray(flops, dtype=np.float64)
    b = np.asarray(bytes_accessed, dtype=np.float64)
    idle = (f == 0) & (b == 0)
    return {kind: np.where(idle, 0.0, t) for kind, t in op_times(f, b).items()}

# TensorFlow's C++ INFO/WARNING lines would otherwise land on every command's stderr.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


# ------------------------------------------------------------------ op classes
_DROPPED = frozenset({"Const", "HostConst", "NoOp"})
_PASS_THROUGH = frozenset({"Identity", "IdentityN", "StopGradient", "PreventGradient", "Snapshot",
                           "ReadVariableOp"})
_VARIABLES = frozenset({"VarHandleOp", "VariableV2", "Variable"})
#: Ops that only rewrite shape metadata (no data movement in TF's kernels): zero time.
_METADATA = frozenset({"Shape", "ShapeN", "Size", "Rank", "Reshape", "Squeeze", "ExpandDims",
                       "BroadcastGradientArgs", "ConcatOffset"})
_UPDATE_TYPES = re.compile(r"^(Resource)?(Sparse)?Apply|^Assign(Add|Sub)?(VariableOp)?$|^ResourceScatter")
_BACKWARD_NAME = re.compile(r"(^|/)(gradient_tape|gradients(_\d+)?)/")
_OPTIMIZER_NAME = re.compile(r"(^|/)(sgd|adam|adamw|rmsprop|adagrad|momentum|gradientdescent|lamb|nadam|adamax"
                             r"|ftrl|lion|adadelta)(_\d+)?/", re.IGNORECASE)
_CALLS = frozenset({"PartitionedCall", "StatefulPartitionedCall"})
_MAX_CALL_DEPTH = 16
_SIZELESS_DTYPES = frozenset({"resource", "variant", "string"})


def phase_from_name(name: str, op_type: str) -> str:
    """Phase of an op from TF naming conventions (GraphDef/SavedModel imports).

    ``backward`` under a ``gradients/`` (TF1) or ``gradient_tape/`` (TF2) scope; ``update``
    for variable-update ops (``Apply*``, ``Assign*``, ``ResourceScatter*``) or ops under an
    optimizer's scope (``sgd/``, ``Adam/``, ...); ``forward`` otherwise.
    """
    if _BACKWARD_NAME.search(name):
        return "backward"
    if _UPDATE_TYPES.search(op_type) or _OPTIMIZER_NAME.search(name):
        return "update"
    return "forward"


def _dtype_size(dtype: Any) -> int:
    if dtype.base_dtype.name in _SIZELESS_DTYPES:
        return 0
    return int(dtype.base_dtype.size)


def _static_shape(t: Any) -> Any:
    """``t``'s static shape, completed from a ``_output_shapes`` attribute (``add_shapes=True``
    GraphDefs) where shape inference left it partly unknown."""
    shape = t.shape
    if shape.is_fully_defined():
        return shape
    recorded = _attr(t.op, "_output_shapes")
    if recorded and t.value_index < len(recorded):
        import tensorflow as tf

        return shape.merge_with(tf.TensorShape(recorded[t.value_index])) if shape.is_compatible_with(
            tf.TensorShape(recorded[t.value_index])) else shape
    return shape


def _dims(shape: Any, batch_size: int) -> list[int]:
    if shape.rank is None:
        return []
    return [int(d) if d is not None else (batch_size if i == 0 else 1) for i, d in enumerate(shape.as_list())]


def _numel(shape: Any, batch_size: int) -> int:
    return math.prod(_dims(shape, batch_size))


def _tensor_bytes(t: Any, batch_size: int) -> int:
    size = _dtype_size(t.dtype)
    return size * _numel(_static_shape(t), batch_size) if size else 0


def _attr(op: Any, key: str, default: Any = None) -> Any:
    try:
        return op.get_attr(key)
    except (ValueError, TypeError):
        return default


def op_flops(op: Any, batch_size: int = 1) -> float:
    """Floating-point operations of one TF op from its static shapes (multiply-add = 2).

    MatMul ``2·M·N·K``; BatchMatMul ``2·|out|·K``; Conv2D and both of its backprops
    ``2·|out_fwd|·kh·kw·cin``; depthwise convolutions ``2·|out_fwd|·kh·kw``; pooling and its
    gradient ``|out_fwd|·kh·kw``; metadata ops (Reshape, Shape, ...) 0; every other op one
    FLOP per element of its largest input or output (elementwise ops, reductions).
    """
    t = op.type
    dims = lambda x: _dims(_static_shape(x), batch_size)  # noqa: E731
    numel = lambda x: _numel(_static_shape(x), batch_size)  # noqa: E731
    if t in _METADATA or t in _VARIABLES or t == "Placeholder":
        return 0.0
    if t == "MatMul":
        a = dims(op.inputs[0])
        k = (a[0] if _attr(op, "transpose_a") else a[-1]) if a else 1
        return 2.0 * numel(op.outputs[0]) * k
    if t.startswith("BatchMatMul"):
        a = dims(op.inputs[0])
        adj = _attr(op, "adj_x") or False
        k = (a[-2] if adj else a[-1]) if len(a) >= 2 else 1
        return 2.0 * numel(op.outputs[0]) * k
    if t in ("Conv2D", "Conv3D", "DepthwiseConv2dNative"):
        f = dims(op.inputs[1])
        window = math.prod(f[:-1]) if t != "DepthwiseConv2dNative" else math.prod(f[:-2])
        return 2.0 * numel(op.outputs[0]) * window
    if t in ("Conv2DBackpropInput", "Conv2DBackpropFilter", "DepthwiseConv2dNativeBackpropInput",
             "DepthwiseConv2dNativeBackpropFilter", "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2"):
        f = dims(op.outputs[0]) if "Filter" in t else dims(op.inputs[1])
        window = math.prod(f[:-2]) if t.startswith("Depthwise") else math.prod(f[:-1])
        return 2.0 * numel(op.inputs[2]) * window
    if t in ("MaxPool", "AvgPool", "MaxPoolV2", "MaxPool3D", "AvgPool3D"):
        k = _attr(op, "ksize") or [1]
        return float(numel(op.outputs[0]) * math.prod(k))
    if t in ("MaxPoolGrad", "AvgPoolGrad", "MaxPoolGradV2"):
        k = _attr(op, "ksize") or [1]
        return float(numel(op.inputs[-1]) * math.prod(k))
    sizes = [numel(x) for x in list(op.inputs) + list(op.outputs) if _dtype_size(x.dtype)]
    return float(max(sizes, default=0))


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


def _is_variable(op: Any) -> bool:
    return op.type in _VARIABLES or (op.type == "Placeholder" and op.outputs[0].dtype.name == "resource")


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
    kept: dict[str, int] = {}
    kept_ops: list[Any] = []
    for op in ops:
        if op.type in _DROPPED or op.type in _PASS_THROUGH:
            continue
        kept[op.name] = len(kept_ops)
        kept_ops.append(op)
    if not kept_ops:
        raise GraphError(f"TF graph '{name}' has no ops left after pruning constants and identities")

    memo: dict[tuple[str, int], tuple[int, ...]] = {}

    def sources_of_op(op: Any) -> tuple[int, ...]:
        """Kept producers behind every input and control input of a pruned op."""
        key = (op.name, -1)
        if key not in memo:
            memo[key] = ()  # guards against (invalid) cycles through pruned ops
            out: set[int] = set()
            for t in op.inputs:
                out.update(sources_of_tensor(t))
            for c in op.control_inputs:
                out.update((kept[c.name],) if c.name in kept else sources_of_op(c))
            memo[key] = tuple(sorted(out))
        return memo[key]

    def sources_of_tensor(t: Any) -> tuple[int, ...]:
        op = t.op
        if op.name in kept:
            return (kept[op.name],)
        key = (op.name, t.value_index)
        if key not in memo:
            memo[key] = ()
            if op.type == "IdentityN":
                out = set(sources_of_tensor(op.inputs[t.value_index]))
                for c in op.control_inputs:
                    out.update((kept[c.name],) if c.name in kept else sources_of_op(c))
                memo[key] = tuple(sorted(out))
            else:
                memo[key] = sources_of_op(op)
        return memo[key]

    n = len(kept_ops)
    var_bytes = np.zeros(n)
    names = [op.name for op in kept_ops]
    for i, op in enumerate(kept_ops):
        if not _is_variable(op):
            continue
        if op.name in variables:
            label, nbytes = variables[op.name]
            var_bytes[i] = nbytes
            names[i] = label
            continue
        shape, dtype = _attr(op, "shape"), _attr(op, "dtype")
        if op.type == "VarHandleOp" and shape is not None and dtype is not None and shape.rank is not None:
            var_bytes[i] = _dtype_size(dtype) * _numel(shape, batch_size)
        elif op.type in ("VariableV2", "Variable"):
            var_bytes[i] = _tensor_bytes(op.outputs[0], batch_size)
    if var_bytes.any() or any(_is_variable(op) for op in kept_ops):  # fall back to the reads' sizes
        for op in ops:
            if op.type == "ReadVariableOp":
                for s in sources_of_tensor(op.inputs[0]):
                    if _is_variable(kept_ops[s]) and kept_ops[s].name not in variables:
                        var_bytes[s] = max(var_bytes[s], _tensor_bytes(op.outputs[0], batch_size))
    if len(set(names)) != n:  # a display name clashes: keep TF's unique op names
        names = [op.name for op in kept_ops]

    src_l: list[int] = []
    dst_l: list[int] = []
    bytes_l: list[float] = []
    out_bytes = np.zeros(n)
    flops = np.zeros(n)
    touched = np.zeros(n)
    uf = _UnionFind(n)
    is_var = np.array([_is_variable(op) for op in kept_ops])
    for i, op in enumerate(kept_ops):
        if is_var[i]:
            out_bytes[i] = var_bytes[i]
            continue
        out_bytes[i] = sum(_tensor_bytes(t, batch_size) for t in op.outputs)
        in_bytes = 0.0
        for t in op.inputs:
            b = _tensor_bytes(t, batch_size)
            for s in sources_of_tensor(t):
                src_l.append(s)
                dst_l.append(i)
                bytes_l.append(b)
                if t.dtype.name == "resource" and is_var[s]:
                    uf.union(s, i)  # TF runs a resource's consumers on the resource's device
                    b = var_bytes[s]  # an update reads and writes the variable
            in_bytes += b
        for c in op.control_inputs:
            for s in (kept[c.name],) if c.name in kept else sources_of_op(c):
                src_l.append(s)
                dst_l.append(i)
                bytes_l.append(0.0)
        if op.type not in _METADATA and op.type != "Placeholder":
            flops[i] = op_flops(op, batch_size)
            touched[i] = in_bytes + out_bytes[i]
    for i, op in enumerate(kept_ops):
        for loc in _attr(op, "_class") or []:
            target = loc.decode() if isinstance(loc, bytes) else str(loc)
            if not target.startswith("loc:@"):
                continue
            target = target[5:]
            if target in kept:
                uf.union(i, kept[target])
            else:
                try:
                    srcs = sources_of_op(graph.get_operation_by_name(target))
                except (KeyError, ValueError):
                    continue
                for s in srcs[:1]:
                    uf.union(i, s)

    roots = [uf.find(i) for i in range(n)]
    size = np.bincount(roots, minlength=n)
    group_name: dict[int, str] = {}
    for i in range(n):  # a group is named after its first variable, else its first op
        if size[roots[i]] > 1 and is_var[i]:
            group_name.setdefault(roots[i], names[i])
    for i in range(n):
        if size[roots[i]] > 1:
            group_name.setdefault(roots[i], names[i])
    colocate = [group_name.get(roots[i]) if size[roots[i]] > 1 else None for i in range(n)]

    times = (cost or roofline_cost)(flops, touched)
    kinds = tuple(times)
    compute_by_kind = np.column_stack([np.asarray(times[k], dtype=np.float64) for k in kinds])
    phase_fn = phase_of or (lambda op: phase_from_name(op.name, op.type))
    phases = [None if is_var[i] else phase_fn(op) for i, op in enumerate(kept_ops)]
    scopes = [nm.rsplit("/", 1)[0] if "/" in nm else "" for nm in names]
    types = ["Variable" if is_var[i] else op.type for i, op in enumerate(kept_ops)]
    return CompGraph(
        name, names, compute_any=np.full(n, np.nan), compute_by_kind=compute_by_kind, kinds=kinds,
        output_bytes=out_bytes, persistent_bytes=var_bytes,
        edge_src=np.asarray(src_l, dtype=np.int64), edge_dst=np.asarray(dst_l, dtype=np.int64),
        edge_bytes=np.asarray(bytes_l, dtype=np.float64),
        op_types=types, colocate=colocate, phase=phases, scope=scopes,
    )


# ------------------------------------------------------------------ Keras training step
def import_tensorflow():
    try:
        import tensorflow as tf
    except ImportError:  # pragma: no cover - depends on the environment
        raise GraphError("importing a TensorFlow graph needs tensorflow (pip install tensorflow-cpu)") from None
    return tf


def graph_from_keras(
    model: Any,
    batch_size: int,
    *,
    optimizer: Any = "sgd",
    loss: Any = "mse",
    cost: CostFn | None = None,
    name: str | None = None,
) -> CompGraph:
    """The CompGraph of ONE TRAINING STEP of a Keras 3 model (TensorFlow backend).

    Traces ``tf.function(step)`` on ``TensorSpec``s of ``batch_size`` rows (the model's
    inputs, and a target shaped like its output) where ``step`` runs the model with
    ``training=True``, the ``loss``, ``tape.gradient`` over the trainable variables and
    ``optimizer.apply_gradients``. The step is only traced, never run.

    Parameters
    ----------
    model : keras.Model
        A built model with known input shapes (apart from the batch dimension).
    batch_size : int
        Rows per step; every unknown dimension of an input spec becomes ``batch_size`` for
        the first dimension, 1 elsewhere.
    optimizer, loss : str or Keras object
        Resolved by ``keras.optimizers.get`` / ``keras.losses.get``.
    cost : callable, optional
        See :func:`graph_from_tf_graph`.

    Returns
    -------
    CompGraph
        Phases ``forward`` / ``backward`` / ``update`` by the step's stage that created each op;
        one ``Variable`` op per model and optimizer variable (persistent bytes).
    """
    if batch_size < 1:
        raise GraphError("batch_size must be >= 1")
    tf = import_tensorflow()
    import keras

    opt = keras.optimizers.get(optimizer)
    loss_fn = keras.losses.get(loss)
    trainable = model.trainable_variables
    opt.build(trainable)

    def spec(shape: Sequence[Any], dtype: Any) -> Any:
        dims = [batch_size if d is None and i == 0 else (1 if d is None else int(d)) for i, d in enumerate(shape)]
        return tf.TensorSpec(dims, dtype=dtype)

    inputs = [spec(t.shape, t.dtype) for t in model.inputs]
    outputs = model.outputs
    if len(outputs) != 1:
        raise GraphError(f"model '{model.name}': graph_from_keras supports one output, got {len(outputs)}")
    target = spec(outputs[0].shape, outputs[0].dtype)
    marks: dict[str, int] = {}

    def count() -> int:
        return len(tf.compat.v1.get_default_graph().get_operations())

    @tf.function(autograph=False)
    def step(x, y):
        with tf.GradientTape() as tape:
            out = model(x if len(inputs) > 1 else x[0], training=True)
            value = loss_fn(y, out)
            value = tf.reduce_mean(value)
        marks["backward"] = count()
        grads = tape.gradient(value, trainable)
        marks["update"] = count()
        opt.apply_gradients(zip(grads, trainable, strict=True))
        marks["end"] = count()
        return value

    concrete = step.get_concrete_function(inputs, target)
    fg = concrete.graph
    order = {op.name: i for i, op in enumerate(fg.get_operations())}

    def phase_of(op: Any) -> str:
        i = order[op.name]
        return "forward" if i < marks["backward"] else "backward" if i < marks["update"] else "update"

    by_handle = {}
    for v in list(model.variables) + list(opt.variables):
        tfv = getattr(v, "value", v)
        by_handle[id(tfv.handle)] = (v.path, int(np.prod(v.shape, dtype=np.int64)) * tf.as_dtype(v.dtype).size)
    variables = {internal.op.name: by_handle[id(external)] for external, internal in fg.captures
                 if id(external) in by_handle}
    return graph_from_tf_graph(fg, name=name or f"{model.name}-train-b{batch_size}", batch_size=batch_size,
                               phase_of=phase_of, variables=variables, cost=cost,
                               fetches=[t.op for t in fg.outputs] + list(fg.control_outputs))
