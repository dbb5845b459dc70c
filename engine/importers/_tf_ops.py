"""TensorFlow helpers of the importers: the lazy import, op classes, and one op's bytes, FLOPs and phase.

Private helpers of :mod:`engine.importers.tensorflow_graph` (whose module docstring states the
pruning rules and size conventions) and :mod:`engine.importers.tensorflow_files`. Nothing
here imports tensorflow at module import; :func:`import_tensorflow` does so when called.
"""

from __future__ import annotations

import math
import re
from typing import Any

from engine.errors import GraphError


def import_tensorflow():
    """The ``tensorflow`` module, imported on first use (a GraphError if it is not installed)."""
    try:
        import tensorflow as tf
    except ImportError:  # pragma: no cover - depends on the environment
        raise GraphError("importing a TensorFlow graph needs tensorflow (pip install tensorflow-cpu)") from None
    return tf


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
    if isinstance(recorded, list | tuple) and t.value_index < len(recorded):  # a crafted file may hold one shape
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


def _is_variable(op: Any) -> bool:
    return op.type in _VARIABLES or (op.type == "Placeholder" and op.outputs[0].dtype.name == "resource")
