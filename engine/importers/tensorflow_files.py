"""TensorFlow files as graph formats: a binary GraphDef (``.pb``) and a SavedModel's ``saved_model.pb``.

Both are detected from their first protobuf bytes and parsed as protobuf only: nothing from
the file is executed and no Python is restored. The graph they hold is walked by
:func:`engine.importers.tensorflow_graph.graph_from_tf_graph` (pruning, sizes, colocation
and costs are documented there). A SavedModel normally holds an *inference* graph (its
serving signature), with no gradient or optimizer ops.

A crafted protobuf can crash TensorFlow's C++ importer (a 100,000-op GraphDef that ends in a
cycle kills the process with signal 11), so every GraphDef and function is checked in Python
first: at most :data:`MAX_NODES` nodes, and no cycle other than a while loop's
``NextIteration`` → ``Merge`` back edge. TensorFlow's start-up log lines are kept off stderr.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable
from typing import Any

from engine.errors import GraphError, first_line, one_line, quote
from engine.graph.compgraph import CompGraph
from engine.graph.formats import register_format
from engine.importers._tf_ops import _CALLS, _DROPPED, _MAX_CALL_DEPTH, _PASS_THROUGH, _attr, import_tensorflow
from engine.importers.tensorflow_graph import CostFn, graph_from_tf_graph
from engine.quiet import quiet_stderr, quiet_tensorflow_start

__all__ = ["MAX_NODES", "load_graphdef", "load_saved_model"]

#: Most nodes in one GraphDef or function (Inception-v3's training graph has ~30,000).
MAX_NODES = 1_000_000
#: Ops whose output may feed back into a ``Merge`` (TF1 while loops); the only legal cycles.
_BACK_EDGE_OPS = frozenset({"NextIteration", "RefNextIteration"})


def _tensorflow() -> Any:
    """TensorFlow, imported without its two start-up log lines on stderr."""
    with quiet_tensorflow_start():
        return import_tensorflow()


def _input_name(ref: str) -> str:
    """The node an input string names: ``^ctrl``, ``node:1`` or ``node:out:0`` (functions) → node."""
    return ref.lstrip("^").split(":", 1)[0]


def _check_nodes(nodes: Any, what: str) -> None:
    """Refuse too many nodes, or a cycle other than a while loop's back edge (one GraphError).

    ``nodes`` is a repeated ``NodeDef`` field (a GraphDef's ``node`` or a function's ``node_def``).
    Inputs that name no node (function arguments, or missing nodes TensorFlow reports) are skipped.
    """
    n = len(nodes)
    if n > MAX_NODES:
        raise GraphError(f"{what} has {n:,} nodes, more than the {MAX_NODES:,} placelab imports")
    index = {nd.name: i for i, nd in enumerate(nodes)}
    ops = [nd.op for nd in nodes]
    consumers: list[list[int]] = [[] for _ in range(n)]
    indegree = [0] * n
    for i, nd in enumerate(nodes):
        for ref in nd.input:
            j = index.get(_input_name(ref))
            if j is not None and ops[j] not in _BACK_EDGE_OPS:
                consumers[j].append(i)
                indegree[i] += 1
    ready = deque(i for i in range(n) if indegree[i] == 0)
    seen = 0
    while ready:
        i = ready.popleft()
        seen += 1
        for k in consumers[i]:
            indegree[k] -= 1
            if indegree[k] == 0:
                ready.append(k)
    if seen < n:
        stuck = next(i for i in range(n) if indegree[i] > 0)
        raise GraphError(f"{what} has a cycle through node {quote(nodes[stuck].name)} "
                         "(only a while loop's NextIteration may feed back)")


def _check_graphdef(gd: Any, what: str) -> None:
    _check_nodes(gd.node, what)
    for fn in gd.library.function:
        _check_nodes(fn.node_def, f"{what}: function {quote(fn.signature.name)}")


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while pos < len(buf) and shift < 64:
        b = buf[pos]
        value |= (b & 0x7F) << shift
        pos += 1
        if not b & 0x80:
            return value, pos
        shift += 7
    return -1, pos


def _detect_graphdef(head: bytes) -> bool:
    """A binary GraphDef: field 1 (``node``, length-delimited) holding a NodeDef whose first
    field is its ``name`` (field 1, a printable string). Cheap: reads the first bytes only."""
    if len(head) < 4 or head[0] != 0x0A:
        return False
    _, pos = _varint(head, 1)
    if pos >= len(head) or head[pos] != 0x0A:
        return False
    length, pos = _varint(head, pos + 1)
    name = head[pos:pos + min(max(length, 0), 64)]
    return length > 0 and bool(name) and all(32 < c < 127 for c in name)


def _detect_saved_model(head: bytes) -> bool:
    """A ``saved_model.pb``: ``saved_model_schema_version`` (field 1, varint) then
    ``meta_graphs`` (field 2, length-delimited) opening with its ``meta_info_def`` (field 1).
    The last test tells it from an ONNX model (ir_version, then a producer_name string)."""
    if len(head) < 4 or head[0] != 0x08:
        return False
    _, pos = _varint(head, 1)
    if pos >= len(head) or head[pos] != 0x12:
        return False
    length, pos = _varint(head, pos + 1)
    return length > 0 and pos < len(head) and head[pos] == 0x0A


def _read_proto(path: str, parse: Callable[[bytes], Any], what: str) -> Any:
    with open(path, "rb") as f:
        data = f.read()
    try:
        return parse(data)
    except Exception as exc:  # protobuf's DecodeError and friends
        raise GraphError(f"{quote(os.path.basename(path), bare=True)}: not a valid {what} "
                         f"({type(exc).__name__})") from None


def _graph_from_graphdef(gd: Any, name: str, batch_size: int, cost: CostFn | None) -> CompGraph:
    tf = _tensorflow()
    g = tf.Graph()
    try:
        with g.as_default(), quiet_stderr():  # C++ warnings about the user's graph: the error says it
            tf.graph_util.import_graph_def(gd, name="")
    except Exception as exc:  # unknown ops, bad inputs, shape errors
        first = first_line(exc)
        raise GraphError(f"{name}: TensorFlow cannot import the GraphDef: {first}") from None
    return _walk(g, name, batch_size, cost)


def _walk(g: Any, name: str, batch_size: int, cost: CostFn | None) -> CompGraph:
    """:func:`graph_from_tf_graph`, with a malformed attribute TensorFlow accepted (a crafted
    ``_output_shapes``, say) reported as one GraphError instead of an internal error."""
    try:
        return graph_from_tf_graph(g, name=name, batch_size=batch_size, cost=cost)
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
        detail = one_line(exc, 160) or type(exc).__name__
        raise GraphError(f"{name}: the TensorFlow graph has a malformed attribute ({detail})") from None


def load_graphdef(path: str | os.PathLike, *, batch_size: int = 1, cost: CostFn | None = None) -> CompGraph:
    """A CompGraph from a binary ``GraphDef`` file (protobuf; nothing is executed).

    Functions in the GraphDef's library (TF2 ``PartitionedCall`` ops) stay single opaque ops.
    """
    p = os.fspath(path)
    tf = _tensorflow()
    gd = _read_proto(p, tf.compat.v1.GraphDef.FromString, "GraphDef")
    name = os.path.splitext(os.path.basename(p))[0]
    _check_graphdef(gd, quote(os.path.basename(p), bare=True))
    return _graph_from_graphdef(gd, name, batch_size, cost)


def load_saved_model(path: str | os.PathLike, *, tag: str = "serve", signature: str = "serving_default",
                     batch_size: int = 1, cost: CostFn | None = None) -> CompGraph:
    """A CompGraph from a SavedModel (its directory or its ``saved_model.pb``), read as protobuf.

    Picks the MetaGraphDef tagged ``tag`` (else the first). A TF1-style graph is walked as is.
    A TF2 SavedModel keeps the model in library functions: the function that ``signature``
    calls is rebuilt as a graph (``function_def_to_graph``, shapes from the signature, unknown
    dimensions → ``batch_size``) and walked; a function that only calls another one (Keras'
    ``export`` wraps the model so) is descended into; other nested calls stay opaque ops.
    This is the exported (normally inference) graph: there are no backward or update ops
    unless a training step was saved. Variables' values are never loaded.
    """
    p = os.fspath(path)
    if os.path.isdir(p):
        p = os.path.join(p, "saved_model.pb")
    _tensorflow()
    from tensorflow.core.protobuf import saved_model_pb2

    sm = _read_proto(p, saved_model_pb2.SavedModel.FromString, "SavedModel")
    if not sm.meta_graphs:
        raise GraphError(f"{p}: the SavedModel has no meta graph")
    meta = next((m for m in sm.meta_graphs if tag in m.meta_info_def.tags), sm.meta_graphs[0])
    name = os.path.basename(os.path.dirname(os.path.abspath(p))) or "saved_model"
    gd = meta.graph_def
    _check_graphdef(gd, quote(os.path.basename(p), bare=True))
    fn_name = _signature_function(meta, signature)
    if fn_name is None:
        return _graph_from_graphdef(gd, name, batch_size, cost)
    from tensorflow.python.framework.function_def_to_graph import function_def_to_graph

    fdefs = {f.signature.name: f for f in gd.library.function}
    shapes = None
    try:
        outer = _library_graph(gd)
        for _ in range(_MAX_CALL_DEPTH):  # descend through wrappers that only call one function
            with outer.as_default(), quiet_stderr():
                fg = function_def_to_graph(fdefs[fn_name], input_shapes=shapes, include_library_functions=True)
            work = [op for op in fg.get_operations()
                    if op.type not in _DROPPED and op.type not in _PASS_THROUGH and op.type != "Placeholder"]
            callee = _attr(work[0], "f") if len(work) == 1 and work[0].type in _CALLS else None
            if callee is None or callee.name not in fdefs:
                break
            fn_name, shapes = callee.name, [t.shape for t in work[0].inputs]
    except Exception as exc:
        first = first_line(exc)
        raise GraphError(f"{p}: cannot rebuild signature {quote(signature)}: {first}") from None
    return _walk(fg, name, batch_size, cost)


def _library_graph(gd: Any) -> Any:
    """A graph holding only ``gd``'s function library, so functions that call other library
    functions can be rebuilt in a new process (the exporting process has them registered in
    its eager context, a fresh one does not)."""
    tf = _tensorflow()
    lib = tf.compat.v1.GraphDef()
    lib.library.CopyFrom(gd.library)
    lib.versions.CopyFrom(gd.versions)
    outer = tf.Graph()
    with outer.as_default(), quiet_stderr():
        tf.graph_util.import_graph_def(lib, name="")
    return outer


def _signature_function(meta: Any, signature: str) -> str | None:
    """Name of the library function that the signature's outputs come from (TF2), or None."""
    sig = meta.signature_def.get(signature)
    if sig is None or not meta.graph_def.library.function:
        return None
    nodes = {nd.name: nd for nd in meta.graph_def.node}
    for info in sig.outputs.values():
        node = nodes.get(info.name.split(":")[0])
        if node is not None and "f" in node.attr and node.attr["f"].func.name:
            return node.attr["f"].func.name
    return None


register_format("tf-graphdef", "TensorFlow GraphDef, binary protobuf (.pb)", _detect_graphdef,
                lambda p: load_graphdef(p))
register_format("tf-savedmodel", "TensorFlow SavedModel (saved_model.pb; its inference graph)",
                _detect_saved_model, lambda p: load_saved_model(p))
