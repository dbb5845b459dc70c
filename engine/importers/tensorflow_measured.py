"""Measured op costs for a Keras training step (TensorFlow): time every TF op on this machine.

:func:`measure_tf_step` is the *measured* counterpart of
:func:`engine.importers.tensorflow_graph.graph_from_keras` (whose times come from a roofline, see
``engine/costmodel.py``). It returns the same training-step graph — op names, types, edges,
bytes, phases, scopes and colocation are exactly ``graph_from_keras``'s for the same model,
batch, optimizer and loss — but each op's compute time on ``kind`` is the **median kernel time
of that op** over ``repeats`` runs of the step (after ``warmup`` untimed runs), read from
TensorFlow's step statistics. Times are in seconds, as everywhere in placelab.

How it works
------------
1. The step is traced once, as ``graph_from_keras`` traces it, and walked into the reference
   graph (a model with no trainable variable, several outputs, or inputs that do not match
   its input shapes is a GraphError).
2. The trace's GraphDef is imported into a fresh ``tf.Graph``; each captured model or optimizer
   variable becomes a ``VarHandleOp`` of the same name, initialised in the session with a *copy*
   of the variable's current value. Walking that graph must give the reference's ops and edges
   (**checked**; a mismatch is a GraphError).
3. A ``tf.compat.v1.Session`` runs every op of the reference graph on the example inputs with
   ``RunOptions(trace_level=SOFTWARE_TRACE)`` (``FULL_TRACE`` only adds GPU hardware tracing,
   which needs the profiler and is of no use on the CPU); each op's time is ``op_end_rel_nanos −
   op_start_rel_nanos`` of its ``NodeExecStats`` in the ``RunMetadata``'s step stats, i.e. the
   kernel's ``Compute``, without TF's scheduling overhead (the simulator adds ``op_overhead_s``
   per op). The session runs on the CPU (``device_count={"GPU": 0}``), one op at a time
   (``inter_op_parallelism_threads=1``: ops do not share the cores, so their times add up to the
   step, as on a placement's one-op-at-a-time device), each op using TF's intra-op thread pool.
   Grappler and the classic graph optimizer are off (``disable_meta_optimizer``,
   ``OptimizerOptions.L0``) so that no op is folded, fused or renamed away; only function
   inlining is on (see below). The updates run on the session's copies: the model's and the
   optimizer's variables are never written, so measuring has no side effect on the weights
   (like ``graph_from_keras``, it does build an unbuilt optimizer object's variables).

Mapping of executed nodes to ops (the same pruning as ``graph_from_keras``)
---------------------------------------------------------------------------
* Every op the importer keeps → its own node's median time. Metadata ops (``Shape``,
  ``Reshape``, ...) keep their *measured* time (small but not zero), unlike the roofline.
* ``Variable`` and ``Placeholder`` ops (state and the fed inputs) do no work of the step: 0 s,
  as in the roofline graph.
* A kept op that does not appear in a run's step stats counts 0 s in that run; one missing from
  every run gets 0 s. With the optimizers off, the case we know of is a TF runtime pass that a
  session cannot turn off and that fuses two ops into one node: oneDNN (on by default on x86 CPUs) runs
  ``Conv2D`` + ``BiasAdd`` as one node named after the ``BiasAdd``, and
  ``Conv2DBackpropFilter`` + ``BiasAddGrad`` as one named after the backprop. The fused node's
  time goes to the op whose name it keeps and the other op gets 0 s (the total is unchanged);
  set ``TF_ENABLE_ONEDNN_OPTS=0`` before TensorFlow is imported to time them apart. oneDNN's
  other rewrites keep the node's name (``MatMul`` runs as ``_MklMatMul`` under its own name).
* Pruned nodes (``Const``, ``NoOp``, ``Identity``, ``IdentityN``, ``ReadVariableOp``, ...) are
  not ops of the graph; their measured time (about a microsecond each) is dropped, not folded
  into a neighbour. So are the nodes TF adds at run time (``_SOURCE``, ``_Arg``/``_Retval`` for
  feeds and fetches, ``Func/...`` inputs and outputs of inlined calls).
* A function call (``PartitionedCall``), which the importer keeps as one opaque op ``CALL``, is
  inlined by TF into nodes named ``CALL/...`` and an ``IdentityN`` named ``CALL``; the call op's
  time is the sum of all of them, i.e. its whole body.

The result has one compute kind, ``kind`` (default ``"cpu"``). Storing the measurements works as
for PyTorch (``engine/importers/pytorch_measured.py``): ``engine.graph.io.save_graph`` writes them
as each op's ``compute`` ``{kind: seconds}`` and ``load_graph_json`` reads them back without
TensorFlow.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.errors import GraphError, first_line, quote
from engine.graph.compgraph import CompGraph
from engine.importers._measured import check_measure_options, with_measured_times
from engine.importers._tf_keras import _KerasStep, _step_specs, _trace_keras_step
from engine.importers._tf_ops import _CALLS, import_tensorflow
from engine.importers.tensorflow_graph import graph_from_tf_graph

__all__ = ["measure_tf_step"]

_SOURCES = frozenset({"Variable", "Placeholder"})


def measure_tf_step(
    model: Any,
    inputs: Any,
    targets: Any = None,
    *,
    optimizer: Any = "sgd",
    loss: Any = "mse",
    repeats: int = 5,
    warmup: int = 2,
    kind: str = "cpu",
    name: str | None = None,
) -> CompGraph:
    """The training-step graph of a Keras 3 ``model`` with each op's MEASURED time on ``kind``.

    Parameters
    ----------
    model : keras.Model
        A built model with one output (TensorFlow backend), as for
        :func:`~engine.importers.tensorflow_graph.graph_from_keras`.
    inputs : array-like or sequence of array-likes
        One batch: an array per model input (a bare array for a one-input model). The batch
        size is their first dimension; shapes must be the model's input shapes.
    targets : array-like, optional
        The target batch, shaped like the model's output; default zeros.
    optimizer, loss : str or Keras object
        As for ``graph_from_keras`` (pass an optimizer object to get the same update-op names
        from two calls: Keras numbers each new optimizer's name scope).
    repeats : int
        Timed runs, >= 1; each op's time is the median over them.
    warmup : int
        Untimed runs first, >= 0.
    kind : str
        The device kind the times are recorded for.
    name : str, optional
        Graph name; default ``"<model>-train-b<batch>"`` as ``graph_from_keras``.

    Returns
    -------
    CompGraph
        ``graph_from_keras``'s graph with ``compute_by_kind[:, kind]`` = measured seconds.

    Raises
    ------
    GraphError
        If the model cannot be imported (no trainable variable, several outputs), the inputs do
        not fit it, the step fails to run, the run graph does not line up with the reference,
        or ``repeats``/``warmup``/``kind`` are invalid.
    """
    check_measure_options(repeats, warmup, kind)
    tf = import_tensorflow()
    arrays = _step_arrays(model, inputs, targets)
    batch = arrays[0].shape[0]
    step = _trace_keras_step(model, batch, optimizer, loss)
    gname = name or f"{model.name}-train-b{batch}"

    def no_cost(flops: np.ndarray, _: np.ndarray) -> dict[str, np.ndarray]:
        return {kind: np.zeros(len(flops))}

    ref = graph_from_tf_graph(step.graph, name=gname, batch_size=batch, phase_of=step.phase_of,
                              variables=step.variables, cost=no_cost, fetches=step.fetches)
    graph = _session_graph(tf, step, gname)
    run = graph_from_tf_graph(graph, name=gname, batch_size=batch, variables=step.variables, cost=no_cost,
                              fetches=[graph.get_operation_by_name(op.name) for op in step.fetches])
    if (run.op_names != ref.op_names or run.op_types != ref.op_types
            or not np.array_equal(run.edge_src, ref.edge_src) or not np.array_equal(run.edge_dst, ref.edge_dst)):
        raise GraphError(f"graph {quote(gname)}: the GraphDef that is run does not have the traced step's ops and "
                         f"edges")

    work = [nm for nm, ty in zip(ref.op_names, ref.op_types, strict=True) if ty not in _SOURCES]
    feeds = {t.name: a for t, a in zip(step.graph.inputs[:len(arrays)], arrays, strict=True)}
    feeds.update({internal.name: np.asarray(external) for external, internal in step.graph.captures
                  if internal.dtype != tf.resource})
    samples = _run(tf, graph, step, work, feeds, warmup, repeats, gname)
    seconds = np.zeros(ref.num_ops)
    for i, nm in enumerate(ref.op_names):
        if ref.op_types[i] not in _SOURCES:
            seconds[i] = statistics.median(s.get(nm, 0) for s in samples) * 1e-9
    return with_measured_times(ref, seconds, kind)


def _step_arrays(model: Any, inputs: Any, targets: Any) -> list[np.ndarray]:
    """The step's arguments as arrays (each model input, then the target), checked against the
    shapes and cast to the dtypes that the step is traced for."""
    xs = list(inputs) if isinstance(inputs, list | tuple) else [inputs]
    if len(xs) != len(model.inputs):
        raise GraphError(f"model {quote(model.name)} takes {len(model.inputs)} input(s), got {len(xs)}")
    first = np.shape(xs[0])
    if not first or first[0] < 1:
        raise GraphError(f"model {quote(model.name)}: input 0 has shape {first}, with no batch dimension")
    specs = _step_specs(model, first[0])
    args = [*xs, np.zeros(specs[-1].shape, dtype=specs[-1].dtype.as_numpy_dtype) if targets is None else targets]
    arrays = []
    for k, (a, spec) in enumerate(zip(args, specs, strict=True)):
        what = "the target" if k == len(xs) else f"input {k}"
        expected = tuple(spec.shape.as_list())
        if np.shape(a) != expected:
            raise GraphError(f"model {quote(model.name)}: {what} has shape {np.shape(a)}, expected {expected}")
        try:
            arrays.append(np.asarray(a, dtype=spec.dtype.as_numpy_dtype))
        except (TypeError, ValueError):
            raise GraphError(f"model {quote(model.name)}: {what} cannot be read as {spec.dtype.name}") from None
    return arrays


def _session_graph(tf: Any, step: _KerasStep, gname: str) -> Any:
    """The step's GraphDef in a new ``tf.Graph``, captured variables as ``VarHandleOp``s."""
    gd = step.graph.as_graph_def()
    for _, internal in step.graph.captures:
        if internal.dtype == tf.resource and internal.op.name not in step.captured:
            raise GraphError(f"graph {quote(gname)}: the step captures {quote(internal.op.name)}, a resource that is "
                             f"not "
                             "a variable of the model or its optimizer")
    for nd in gd.node:
        var = step.captured.get(nd.name)
        if var is None:
            continue
        nd.op = "VarHandleOp"
        nd.ClearField("attr")
        nd.attr["dtype"].type = tf.as_dtype(var.dtype).as_datatype_enum
        nd.attr["shape"].shape.CopyFrom(tf.TensorShape(var.shape).as_proto())
        nd.attr["shared_name"].s = nd.name.encode()
        nd.attr["container"].s = b""
    graph = tf.Graph()
    try:
        with graph.as_default():
            tf.graph_util.import_graph_def(gd, name="")
    except Exception as exc:  # traced a moment ago; report rather than crash
        first = first_line(exc)
        raise GraphError(f"graph {quote(gname)}: TensorFlow cannot import the traced step's GraphDef: "
                         f"{first}") from None
    return graph


def _run(tf: Any, graph: Any, step: _KerasStep, work: Sequence[str], feeds: dict[str, np.ndarray],
         warmup: int, repeats: int, gname: str) -> list[dict[str, int]]:
    """Run ``work`` (op names) ``warmup + repeats`` times; the nanoseconds per op of the timed runs."""
    values = {nm: np.asarray(var.numpy()) for nm, var in step.captured.items()}  # eager reads, before the graph
    init_feeds = {}
    with graph.as_default():
        init = []
        for nm, value in values.items():
            slot = tf.compat.v1.placeholder(value.dtype, value.shape)
            init.append(tf.raw_ops.AssignVariableOp(resource=graph.get_tensor_by_name(f"{nm}:0"), value=slot))
            init_feeds[slot] = value
    config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=1, device_count={"GPU": 0})
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    config.graph_options.optimizer_options.opt_level = tf.compat.v1.OptimizerOptions.L0
    config.graph_options.optimizer_options.do_function_inlining = True
    trace = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.SOFTWARE_TRACE)
    work_set = set(work)
    calls = {op.name for op in graph.get_operations() if op.type in _CALLS and op.name in work_set}
    nodes = {op.name for op in graph.get_operations()}
    samples = []
    with tf.compat.v1.Session(graph=graph, config=config) as sess:
        try:
            sess.run(init, init_feeds)
            for i in range(warmup + repeats):
                meta = tf.compat.v1.RunMetadata()
                sess.run(list(work), feeds, options=trace, run_metadata=meta)
                if i >= warmup:
                    samples.append(_op_nanos(meta, work_set, calls, nodes))
        except tf.errors.OpError as exc:
            first = exc.message.strip().splitlines()[0] if exc.message.strip() else type(exc).__name__
            raise GraphError(f"graph {quote(gname)}: running the training step failed: {first}") from None
    return samples


def _op_nanos(meta: Any, work: set[str], calls: set[str], nodes: set[str]) -> dict[str, int]:
    """Kernel nanoseconds per op of ``work`` in one run's step stats. A node that is not in the
    graph (``nodes``) but named ``CALL/...`` for a kept function-call op ``CALL`` (one of
    ``calls``) is part of that call's inlined body and counts for it."""
    out: dict[str, int] = {}
    for dev in meta.step_stats.dev_stats:
        for ns in dev.node_stats:
            name = ns.node_name
            if name not in nodes:
                parts = name.split("/")
                name = next((p for p in ("/".join(parts[:k]) for k in range(len(parts) - 1, 0, -1)) if p in calls),
                            None)
            if name in work:
                out[name] = out.get(name, 0) + max(ns.op_end_rel_nanos - ns.op_start_rel_nanos, 0)
    return out
