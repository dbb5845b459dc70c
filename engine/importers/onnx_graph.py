"""ONNX models → CompGraph: one training step (the default) or the inference graph.

:func:`graph_from_onnx` reads an ``.onnx`` file (a protobuf ``ModelProto``) with ``onnx`` and completes
its shapes with ``onnx.shape_inference.infer_shapes`` (in a child process capped in memory and time):
nothing from the file is executed (no runtime, no custom-op library) and external-data weights are never
read (their types and shapes are in the file).
The registered ``onnx`` format loads a file with the defaults; ``PATH?training=false&batch=8`` changes them.

* **Inputs** (graph inputs that are not initializers): ops of type ``Input`` holding the tensor (0 s,
  phase ``forward``). **Initializers** (dense or sparse, counted dense): ops of type ``Variable``
  holding their bytes as ``persistent_bytes`` and ``output_bytes`` (no compute, phase ``None``).
* **Nodes**: one op each, of its ``op_type``, named after it (an empty name → ``<op_type>_<op index>``; a
  clash gets ``_1``, ...). ``Constant`` nodes are dropped (as TF's ``Const``; a consumer still counts
  what it reads); ``If``/``Loop``/``Scan`` are one op that also reads every outer tensor their bodies read.
* **Scope**: the name's path less its last part, split on ``/`` (else ``.``): ``/enc/layer.0/MatMul`` →
  ``enc/layer.0``, ``enc.0.weight`` → ``enc.0``.
* **Sizes**: elements × element size (``string`` 0, 4-bit types ½, ...). Unknown dimensions count as
  ``batch`` when first and 1 elsewhere, pinned so on the graph inputs *before* shape inference (so they
  propagate as numbers); one inference leaves unknown follows the same rule, an unknown rank is one
  element. ``batch`` defaults to the first fixed leading dimension of a graph input, else 1. An edge
  carries the bytes of the tensor its consumer reads (two tensors between two ops add up).
* **Cost**: FLOPs by :func:`_node_flops`; bytes touched = inputs (weights included) + outputs, as TF
  imports count; seconds per device kind by ``tensorflow_graph.roofline_cost`` (``cost=`` replaces it).

**Training step** (``training=True``). An ONNX file holds no loss, gradient or optimizer: the backward
and update ops are *derived*, a modelling choice (the structure of autodiff and SGD, at forward costs):

* A **trainable** initializer is a floating-point one (float, double, float16, bfloat16) that a node
  reads in a differentiable input (the operator schema's differentiation category; a
  ``BatchNormalization``'s running mean and variance are statistics, not trained).
* The gradient flows through each node that, by differentiable inputs, lies on a path from a trainable
  initializer to a graph output and writes a floating-point tensor on it. Such a node X gets
  ``X/grad_input`` (type ``<op_type>Grad``) when an activation input of X needs a gradient (a graph
  input needs none), and ``X/grad_weight`` (``<op_type>WeightGrad``) when X reads a trainable
  initializer. Each does X's FLOPs and touches X's bytes (the transposed products of a MatMul or Conv
  cost the forward one's), reads X's inputs (saved activations and weights: X's in-edges) and the
  gradient of X's outputs: from each consumer's ``grad_input`` op, or from X for a graph output (the loss
  gradient; no loss op is added).
* One ``W/update`` (type ``SGDUpdate``) per trainable initializer W: w ← w − lr·g, 2 FLOPs per element,
  3·bytes(W) touched (read w and g, write w); it follows W's ``grad_weight`` ops (edges of bytes(W)) and
  W (a 0-byte edge: it writes W in place), and is colocated with W (group named after W).
* Phases ``forward`` / ``backward`` / ``update`` (initializers ``None``); a gradient op's scope is
  ``grad/`` + its node's, an update's ``update/`` + W's, as PyTorch imports.

Bad input (not ONNX, truncated, no nodes, a tensor written twice, a cycle, no shape known) → one GraphError.
"""

from __future__ import annotations

import contextlib
import math
import os
import subprocess
import sys
from typing import Any

import numpy as np

from engine.errors import GraphError, quote
from engine.graph.compgraph import CompGraph
from engine.graph.formats import register_format
from engine.importers.tensorflow_graph import CostFn, roofline_cost
from engine.jsonio import read_file_bytes
from engine.limits import check_total

__all__ = ["graph_from_onnx", "load_onnx"]

_METADATA = frozenset({"Shape", "Size", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"})
_MOVES = frozenset({"Transpose", "Gather", "GatherElements", "GatherND", "Concat", "Split", "Slice", "Pad",
                    "Tile", "Expand", "ScatterND", "ScatterElements", "DepthToSpace", "SpaceToDepth",
                    "ConstantOfShape"})
_PER_ELEMENT = {"BatchNormalization": 4, "LayerNormalization": 7, "InstanceNormalization": 7,
                "GroupNormalization": 7, "RMSNormalization": 4, "Softmax": 5, "LogSoftmax": 5}
_POOLS = frozenset({"MaxPool", "AveragePool", "LpPool"})
_RECURRENT = {"RNN": (1, 1), "GRU": (3, 8), "LSTM": (4, 9)}  # gates, cell FLOPs per hidden unit
_FLOATS = frozenset({1, 10, 11, 16})  # TensorProto FLOAT, FLOAT16, DOUBLE, BFLOAT16
_PACKED = {"UINT4": 0.5, "INT4": 0.5, "FLOAT4E2M1": 0.5, "UINT2": 0.25, "INT2": 0.25,
           "FLOAT6E2M3": 0.75, "FLOAT6E3M2": 0.75}
_NOT_TRAINED = {"BatchNormalization": (3, 4)}  # running mean and variance
_MAX_IR_VERSION = 64
# _TF_FILES: ``tensorflow_files`` (``_varint``, ``MAX_NODES``) is imported inside functions: importing it
# registers the TF formats, and from the top of this module that would move them ahead of the text formats.
#: ``(elem_type, dims)``: a dimension None when unknown, dims None when the rank is unknown.
_TensorType = tuple[int, list[int | None] | None]
#: Shape inference runs in a child process capped at 1 GiB (+ 16 bytes per byte of the model) and 60 s: a crafted
#: shape can make onnx's data propagation allocate without bound. If the child fails, the file's own shapes stay.
_INFER_LIMITS = (1 << 30, 60)
_INFER = """import sys
try:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]),) * 2)
except (ImportError, ValueError, OSError):
    pass
import onnx.shape_inference as si
sys.stdout.buffer.write(si.infer_shapes(sys.stdin.buffer.read(), strict_mode=False, data_prop=True).SerializeToString())
"""


# ------------------------------------------------------------------ detection, reading
def _detect_onnx(head: bytes) -> bool:
    """An ONNX ``ModelProto``: ``ir_version`` (field 1, a varint 1–64) first, then, in the field order
    protobuf writes, only ``producer_name``/``producer_version``/``domain`` (fields 2–4, printable strings),
    ``model_version`` (5, varint) and ``doc_string`` (6), up to ``graph`` (7) or ``opset_import`` (8), or the
    end of the head inside them. A GraphDef (first byte 0x0A) or a SavedModel (field 2 opens with 0x0A) never does."""
    from engine.importers.tensorflow_files import _varint  # not at the top: see _TF_FILES

    if len(head) < 4 or head[0] != 0x08:
        return False
    ir_version, pos = _varint(head, 1)
    if not 1 <= ir_version <= _MAX_IR_VERSION:
        return False
    last = 1
    while pos < len(head):
        key, pos = _varint(head, pos)
        field, wire = key >> 3, key & 7
        if field in (7, 8):
            return wire == 2 and field > last
        if field <= last or field > 6 or wire != (0 if field == 5 else 2):
            return False
        value, pos = _varint(head, pos)
        if value < 0 or (wire == 2 and field != 6 and not all(c >= 32 and c != 127 for c in head[pos:pos + value])):
            return False
        pos, last = pos + (value if wire == 2 else 0), field
    return last > 1


def _read_model(onnx: Any, src: Any) -> tuple[Any, str]:
    """The ModelProto and the graph's default name."""
    if isinstance(src, onnx.ModelProto):
        return src, src.graph.name or "onnx-model"
    base = quote(os.path.basename(p := os.fspath(src)), bare=True)
    data = read_file_bytes(p, error=GraphError)
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception as exc:  # protobuf's DecodeError and friends
        raise GraphError(f"{base}: not a valid ONNX model ({type(exc).__name__})") from None
    return model, os.path.splitext(base)[0] or "onnx-model"


# ------------------------------------------------------------------ shapes and sizes
def _type_info(tp: Any) -> _TensorType:
    if not tp.HasField("tensor_type"):
        return 0, None  # sequences, maps, optionals: no size
    tt = tp.tensor_type
    if not tt.HasField("shape"):
        return tt.elem_type, None
    return tt.elem_type, [d.dim_value if d.HasField("dim_value") and d.dim_value >= 0 else None for d in tt.shape.dim]


def _fill(dims: list[int | None] | None, batch: int) -> list[int]:
    """Unknown dimensions → ``batch`` when first, 1 elsewhere; an unknown rank → a scalar."""
    return [batch if d is None and i == 0 else 1 if d is None else d for i, d in enumerate(dims or [])]


def _numel(dims: list[int] | None) -> float:
    return 0.0 if dims and 0 in dims else math.prod(float(d) for d in dims or [])


def _inferred_types(onnx: Any, model: Any, batch: int, inits: dict[str, _TensorType]) -> dict[str, _TensorType]:
    """``tensor name -> (elem_type, dims)`` after shape inference (see _INFER_LIMITS) on a light copy of the
    model: the graph inputs' unknown dimensions pinned (``batch`` first, 1 elsewhere) and float initializers
    passed as typed inputs (their values are not needed)."""
    src = model.graph
    g = onnx.GraphProto(name=src.name, node=src.node, output=src.output, value_info=src.value_info,
                        input=[vi for vi in src.input if vi.name not in inits],
                        initializer=[t for t in src.initializer if t.data_type not in _FLOATS],
                        sparse_initializer=src.sparse_initializer)
    for vi in g.input:
        for i, d in enumerate(vi.type.tensor_type.shape.dim if vi.type.HasField("tensor_type") else ()):
            if not d.HasField("dim_value") or d.dim_value < 0:
                d.dim_value = batch if i == 0 else 1
    g.input.extend(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                   for t in src.initializer if t.data_type in _FLOATS)
    light = onnx.ModelProto(ir_version=model.ir_version, opset_import=model.opset_import, graph=g,
                            functions=model.functions)
    with contextlib.suppress(Exception):  # over a limit, or a model the checker refuses: the file's shapes stay
        data = light.SerializeToString()
        proc = subprocess.run([sys.executable, "-c", _INFER, str(_INFER_LIMITS[0] + 16 * len(data))], input=data,
                              capture_output=True, timeout=_INFER_LIMITS[1], check=True,
                              env={**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})
        light = onnx.ModelProto.FromString(proc.stdout)
    lg = light.graph
    return {**{vi.name: _type_info(vi.type) for vi in [*lg.input, *lg.value_info, *lg.output]}, **inits}


def _elem_bytes(onnx: Any, elem_type: int) -> float:
    name = onnx.TensorProto.DataType.Name(elem_type) if elem_type in onnx.TensorProto.DataType.values() else ""
    try:
        return _PACKED.get(name) or float(name not in ("", "UNDEFINED", "STRING")
                                          and onnx.helper.tensor_dtype_to_np_dtype(elem_type).itemsize)
    except Exception:  # a type numpy cannot hold
        return 0.0


# ------------------------------------------------------------------ FLOPs
def _attr_int(node: Any, key: str, default: int) -> int:
    return next((a.i for a in node.attribute if a.name == key), default)


def _dim(dims: list[int] | None, i: int) -> int:
    return dims[i] if dims and -len(dims) <= i < len(dims) else 1


def _node_flops(node: Any, ins: list[list[int] | None], outs: list[list[int]]) -> float:
    """FLOPs of one node from its inputs' and outputs' dims (None: an absent optional input).

    Multiply-add = 2; |T| = elements of T; operators as specified at
    https://onnx.ai/onnx/operators/ (``onnx__<Op>.html``).

    * ``Conv``: 2·N·C_out·H_out·W_out·(C_in/group)·k_h·k_w = 2·|Y|·ΠW.shape[1:] (W: C_out × C_in/group ×
      kernel); ``ConvTranspose``: 2·|X|·ΠW.shape[1:] (W: C_in × C_out/group × kernel; each input
      element scatters a kernel block). Biases are not counted.
    * ``MatMul``: 2·M·N·K per matrix, batched: 2·|Y|·K, K = A.shape[-1]; ``Gemm``: 2·M·N·K, K =
      A.shape[0] if ``transA`` else A.shape[1] (the β·C addition is not counted).
    * ``MaxPool``/``AveragePool``/``LpPool``: |Y|·Π``kernel_shape``; ``GlobalAveragePool``/``GlobalMaxPool``: |X|.
    * Per element of X: ``BatchNormalization`` 4 (subtract the mean, divide by √(var+ε), scale, shift);
      ``LayerNormalization``/``InstanceNormalization``/``GroupNormalization`` 7 (mean, subtract,
      square, variance sum, normalize, scale, shift); ``RMSNormalization`` 4 (square, sum, normalize,
      scale); ``Softmax``/``LogSoftmax`` 5 (max, subtract, exp, sum, divide or log).
    * ``RNN``/``GRU``/``LSTM`` (onnx__RNN, onnx__GRU, onnx__LSTM), G = 1 / 3 / 4 gates, H = ``hidden_size``,
      I = input size; per time step, direction and batch row: G·2H(I+H) (each gate's X_t·Wᵀ + H_{t−1}·Rᵀ)
      + G·2H when B is given (W_b + R_b) + the cell's element-wise work: LSTM 9H (4 gate activations;
      C_t = f_t⊙C_{t−1} + i_t⊙c_t: 3; h(C_t): 1; H_t = o_t⊙h(C_t): 1), GRU 8H (3 activations;
      r_t⊙(…): 1; H_t = (1−z_t)⊙h_t + z_t⊙H_{t−1}: 4), RNN H (the activation); times seq_length ×
      num_directions × batch_size (``layout`` 0: X is seq × batch × I, 1: batch × seq × I). LSTM
      peepholes (P, ≤ 6H) are not counted.
    * ``Attention`` (onnx__Attention, opset 23): 2·|Q|·S_kv (Q·Kᵀ) + 2·|Y|·S_kv (·V) + 5·B·H_q·S_q·S_kv
      (the softmax), S_kv = K.shape[-2].
    * 0: metadata ops (``Shape``, ``Size``, ``Reshape``, ``Flatten``, ``Squeeze``, ``Unsqueeze``,
      ``Identity``: they touch no bytes either, as TF's metadata ops) and data movement (``Transpose``,
      ``Gather*``, ``Concat``, ``Split``, ``Slice``, ``Pad``, ``Tile``, ``Expand``, ``Scatter*``,
      ``DepthToSpace``, ``SpaceToDepth``, ``ConstantOfShape``: they touch their bytes).
    * Any other op, element-wise arithmetic and activations (one per output element), reductions and
      ``ArgMax`` (one per input element), ``Cast``, ...: one per element of its largest input or output
      (TensorFlow imports' rule, which is each of those).
    """
    t = node.op_type
    x, w, y = [*ins, None, None][0], [*ins, None, None][1], (outs[0] if outs else None)
    if t in _METADATA or t in _MOVES:
        return 0.0
    if t in ("Conv", "ConvTranspose"):
        return 2.0 * _numel(y if t == "Conv" else x) * _numel((w or [])[1:])
    if t in ("MatMul", "Gemm"):
        return 2.0 * _numel(y) * _dim(x, 0 if t == "Gemm" and _attr_int(node, "transA", 0) else -1)
    if t in _POOLS:
        return _numel(y) * _numel(next((list(a.ints) for a in node.attribute if a.name == "kernel_shape"), []))
    if t in ("GlobalAveragePool", "GlobalMaxPool") or t in _PER_ELEMENT:
        return _PER_ELEMENT.get(t, 1) * _numel(x)
    if t in _RECURRENT:
        gates, cell = _RECURRENT[t]
        seq, rows = (_dim(x, 1), _dim(x, 0)) if _attr_int(node, "layout", 0) else (_dim(x, 0), _dim(x, 1))
        hidden = _attr_int(node, "hidden_size", _dim(ins[2] if len(ins) > 2 else None, -1))
        bias = 2 * gates * hidden if len(ins) > 3 and ins[3] is not None else 0
        return float(seq) * rows * _dim(w, 0) * (2 * gates * hidden * (_dim(x, -1) + hidden) + bias + cell * hidden)
    if t == "Attention":
        four_d = x is not None and len(x) == 4
        head_dim = _dim(x, -1) / (1 if four_d else max(_attr_int(node, "q_num_heads", 1), 1))
        return (2.0 * _numel(x) + 2.0 * _numel(y) + 5.0 * _numel(x) / max(head_dim, 1)) * _dim(w, -2)
    return max([_numel(d) for d in ins if d is not None] + [_numel(d) for d in outs], default=0.0)


# ------------------------------------------------------------------ the forward graph
def _reads(node: Any) -> list[str]:
    """Tensors a node reads: its inputs, and the outer tensors its subgraphs (If/Loop/Scan bodies) read."""
    names = list(node.input)
    for a in node.attribute:
        for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
            for inner in sub.node:
                names += _reads(inner)
    return list(dict.fromkeys(t for t in names if t))


def _scope(name: str) -> str:
    path = name.strip("/")
    return path.rsplit("/", 1)[0] if "/" in path else path.rsplit(".", 1)[0] if "." in path else ""


def _unique(names: list[str]) -> list[str]:
    """``names`` with each repeat suffixed ``_1``, ``_2``, ... (a counter per name: linear time)."""
    out: dict[str, None] = {}
    count: dict[str, int] = {}
    for nm in names:
        base = nm
        while nm in out:
            count[base] = count.get(base, 0) + 1
            nm = f"{base}_{count[base]}"
        out[nm] = None
    return list(out)


def _trained_slots(onnx: Any, node: Any, opsets: dict[str, int]) -> list[bool]:
    """Per input of ``node``: whether a gradient flows into it (its schema's differentiation category;
    an op without a known schema: every input)."""
    cat = onnx.defs.OpSchema.DifferentiationCategory.NonDifferentiable
    domain = "" if node.domain == "ai.onnx" else node.domain
    try:
        formal = onnx.defs.get_schema(node.op_type, opsets.get(domain, onnx.defs.onnx_opset_version()), domain).inputs
    except Exception:  # an unknown op or domain
        formal = []
    skip = _NOT_TRAINED.get(node.op_type, ()) if domain == "" else ()
    return [i not in skip and not (formal and formal[min(i, len(formal) - 1)].differentiation_category == cat)
            for i in range(len(node.input))]


class _Forward:
    """The forward ops of an ONNX graph (inputs, initializers, nodes): names, tensors, sizes, work."""

    def __init__(self, onnx: Any, model: Any, name: str, batch: int | None) -> None:
        g = model.graph
        known = lambda dims: [d if d >= 0 else None for d in dims]  # noqa: E731 (a negative dimension: unknown)
        inits: dict[str, _TensorType] = {t.name: (t.data_type, known(t.dims)) for t in g.initializer}
        inits.update({s.values.name: (s.values.data_type, known(s.dims)) for s in g.sparse_initializer})
        first = next((dims[0] for vi in g.input if vi.name not in inits for dims in [_type_info(vi.type)[1]]
                      if dims and dims[0]), None)
        self.batch = batch or first or 1
        self.types = _inferred_types(onnx, model, self.batch, inits)
        rows = [("input", "Input", vi.name, None, [], [vi.name]) for vi in g.input if vi.name not in inits]
        rows += [("var", "Variable", t, None, [], [t]) for t in inits]
        rows += [("node", nd.op_type, nd.name, nd, _reads(nd), list(nd.output))
                 for nd in g.node if not (nd.op_type == "Constant" and nd.domain in ("", "ai.onnx"))]
        if not any(r[0] == "node" for r in rows):
            raise GraphError(f"{name}: the ONNX model has no graph nodes (other than constants)")
        self.kind, self.op_type, raw, self.nodes, self.reads, self.writes = (list(c) for c in zip(*rows, strict=True))
        self.names = _unique([nm or f"{t}_{k}" for k, (t, nm) in enumerate(zip(self.op_type, raw, strict=True))])
        self.producer: dict[str, int] = {}
        for i, outs in enumerate(self.writes):
            for t in filter(None, outs):
                if t in self.producer:
                    raise GraphError(f"{name}: tensor {quote(t)} is written by both "
                                     f"{quote(self.names[self.producer[t]])} "
                                     f"and {quote(self.names[i])}")
                self.producer[t] = i
        self.edges = [(self.producer[t], i, t) for i in range(len(rows)) for t in self.reads[i] if t in self.producer]
        if not any(self.types.get(t, (0, None))[1] is not None
                   for i, outs in enumerate(self.writes) if self.kind[i] != "var" for t in outs):
            raise GraphError(f"{name}: no tensor of the ONNX graph has a known shape (give its inputs shapes)")
        size = {et: _elem_bytes(onnx, et) for et in {et for et, _ in self.types.values()}}
        self.nbytes = {t: size[et] * self.numel(t) for t, (et, _) in self.types.items()}

    def numel(self, t: str) -> float:
        return _numel(_fill(self.types.get(t, (0, None))[1], self.batch))

    def bytes_of(self, t: str) -> float:
        return self.nbytes.get(t, 0.0)

    def is_float(self, t: str) -> bool:
        return self.types.get(t, (0, None))[0] in _FLOATS

    def work(self, i: int) -> tuple[float, float, float]:
        """``(output bytes, FLOPs, bytes touched)`` of op ``i``."""
        out = sum(self.bytes_of(t) for t in self.writes[i] if t)
        node = self.nodes[i]
        if node is None or node.op_type in _METADATA:
            return out, 0.0, 0.0
        dims = lambda t: _fill(self.types.get(t, (0, None))[1], self.batch)  # noqa: E731
        flops = _node_flops(node, [dims(t) if t else None for t in node.input], [dims(t) for t in node.output if t])
        return out, flops, sum(self.bytes_of(t) for t in self.reads[i]) + out


class _Ops(list):
    """Rows ``[name, type, phase, scope, output bytes, persistent bytes, FLOPs, bytes touched, colocate]``
    and edges ``(src, dst, bytes)`` of the CompGraph being built."""

    edges: list[tuple[int, int, float]]

    def add(self, *row: Any) -> int:
        self.append([*row, None])
        return len(self) - 1


def _training_step(onnx: Any, model: Any, fwd: _Forward, order: np.ndarray, ops: _Ops) -> None:
    """Add the gradient and SGD update ops of one training step (rules in the module docstring)."""
    opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version for o in model.opset_import}
    nodes = [i for i in order if fwd.kind[i] == "node"]
    diff_in = {i: [t for t, ok in zip(fwd.nodes[i].input, _trained_slots(onnx, fwd.nodes[i], opsets), strict=True)
                   if ok and t] for i in nodes}
    var_tensors = {fwd.writes[i][0] for i in range(len(fwd.kind)) if fwd.kind[i] == "var"}
    trainable = {t for i in nodes for t in diff_in[i] if t in var_tensors and fwd.is_float(t)}
    needs = set(trainable)  # tensors that depend on a trainable initializer by differentiable inputs
    for i in nodes:
        if any(t in needs for t in diff_in[i]):
            needs.update(t for t in fwd.writes[i] if t and fwd.is_float(t))
    outputs = {o.name for o in model.graph.output}
    useful = set(outputs)  # tensors a graph output depends on by differentiable inputs
    for i in reversed(nodes):
        if any(t in useful for t in fwd.writes[i]):
            useful.update(diff_in[i])
    in_edges: dict[int, list[tuple[int, str]]] = {}
    consumers: dict[str, list[int]] = {}
    for s, d, t in fwd.edges:
        in_edges.setdefault(d, []).append((s, t))
        consumers.setdefault(t, []).append(d)
    grad_input: dict[int, int] = {}
    grads_of_var: dict[str, list[int]] = {}
    for i in reversed(nodes):
        flowing = [t for t in fwd.writes[i] if t in needs and t in useful]
        if not flowing:
            continue
        acts = [t for t in diff_in[i] if t in needs and t not in trainable]
        weights = [t for t in diff_in[i] if t in trainable]
        _, flops, touched = fwd.work(i)
        name, op_type, scope = fwd.names[i], fwd.op_type[i], "/".join(filter(None, ("grad", _scope(fwd.names[i]))))
        made = [ops.add(f"{name}/{what}", f"{op_type}{kind}", "backward", scope, sum(map(fwd.bytes_of, inputs)), 0.0,
                        flops, touched) for what, kind, inputs in (("grad_input", "Grad", acts),
                                                                  ("grad_weight", "WeightGrad", weights)) if inputs]
        grad_input.update({i: made[0]} if acts else {})
        for t in weights:
            grads_of_var.setdefault(t, []).append(made[-1])
        for k in made:
            for s, t in in_edges.get(i, []):
                ops.edges.append((s, k, fwd.bytes_of(t)))
            for t in flowing:
                if t in outputs:
                    ops.edges.append((i, k, fwd.bytes_of(t)))
                for c in consumers.get(t, []):
                    if c in grad_input and t in diff_in[c]:
                        ops.edges.append((grad_input[c], k, fwd.bytes_of(t)))
    for i in range(len(fwd.kind)):
        t = fwd.writes[i][0] if fwd.kind[i] == "var" else None
        if t not in grads_of_var:
            continue
        name = fwd.names[i]
        k = ops.add(f"{name}/update", "SGDUpdate", "update", "/".join(filter(None, ("update", _scope(name)))),
                    0.0, 0.0, 2.0 * fwd.numel(t), 3.0 * fwd.bytes_of(t))
        ops.edges += [(i, k, 0.0)] + [(g, k, fwd.bytes_of(t)) for g in grads_of_var[t]]
        ops[i][8] = ops[k][8] = name


# ------------------------------------------------------------------ entry points
def graph_from_onnx(path_or_model: Any, *, batch: int | None = None, training: bool = True,
                    cost: CostFn | None = None, name: str | None = None) -> CompGraph:
    """The CompGraph of an ONNX model: one SGD training step, or its forward (inference) graph.

    Parameters
    ----------
    path_or_model : str, os.PathLike or onnx.ModelProto
        An ``.onnx`` file (read as protobuf; nothing in it is executed) or a loaded model.
    batch : int, optional
        Stand-in for unknown dimensions that come first (1 elsewhere); default: the first fixed
        leading dimension of a graph input, else 1. Fixed dimensions are kept.
    training : bool
        True: forward, backward and update ops (derived: see the module docstring); False: the
        forward ops only.
    cost : callable, optional
        ``cost(flops, bytes_accessed) -> {kind: seconds}``; default :func:`roofline_cost`.
    name : str, optional
        Graph name; default: the file name without its extension (a model: its graph's name).

    Raises
    ------
    GraphError
        Not an ONNX model, truncated, no nodes, a tensor written twice, a cycle, no shape known.
    """
    try:
        import onnx
    except ImportError:  # pragma: no cover - depends on the environment
        raise GraphError("importing an ONNX model needs onnx (pip install onnx)") from None
    if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or batch < 1):
        raise GraphError(f"batch must be an integer >= 1, got {quote(batch)}")
    from engine.importers.tensorflow_files import MAX_NODES  # not at the top: see _TF_FILES

    model, default_name = _read_model(onnx, path_or_model)
    name = name or default_name
    if len(model.graph.node) > MAX_NODES:
        raise GraphError(f"{name}: the ONNX graph has {len(model.graph.node):,} nodes, more than the "
                         f"{MAX_NODES:,} placelab imports")
    fwd = _Forward(onnx, model, name, batch)
    n = len(fwd.names)
    order = CompGraph(name, fwd.names, compute_any=np.zeros(n), edge_src=[s for s, _, _ in fwd.edges],
                      edge_dst=[d for _, d, _ in fwd.edges]).topo_order  # refuses a cycle, naming it
    ops = _Ops()
    for i in range(n):
        out, flops, touched = fwd.work(i)
        is_var = fwd.kind[i] == "var"
        ops.add(fwd.names[i], fwd.op_type[i], None if is_var else "forward", _scope(fwd.names[i]), out,
                out if is_var else 0.0, flops, touched)
    ops.edges = [(s, d, fwd.bytes_of(t)) for s, d, t in fwd.edges]
    if training:
        _training_step(onnx, model, fwd, order, ops)
    names, types, phases, scopes, out_b, persistent, flops, touched, colocate = zip(*ops, strict=True)
    flops, touched = np.asarray(flops, dtype=np.float64), np.asarray(touched, dtype=np.float64)
    check_total(flops, f"graph {quote(name)}: the ops' FLOPs", GraphError)
    check_total(touched, f"graph {quote(name)}: the ops' bytes touched", GraphError)
    times = (cost or roofline_cost)(flops, touched)
    src, dst, nbytes = zip(*ops.edges, strict=True) if ops.edges else ((), (), ())
    return CompGraph(name, _unique(list(names)), compute_any=np.full(len(names), np.nan), kinds=tuple(times),
                     compute_by_kind=np.column_stack([np.asarray(t, dtype=np.float64) for t in times.values()]),
                     output_bytes=out_b, persistent_bytes=persistent, edge_src=src, edge_dst=dst, edge_bytes=nbytes,
                     op_types=types, colocate=colocate, phase=phases, scope=scopes)


def load_onnx(path: str | os.PathLike, *, batch: int = 0, training: bool = True) -> CompGraph:
    """The registered loader: :func:`graph_from_onnx` of a file; ``batch=0`` takes it from the file.
    Both options can follow the path in a graph spec (``model.onnx?training=false&batch=8``)."""
    return graph_from_onnx(path, batch=batch or None, training=training)


register_format("onnx", "ONNX model (.onnx; a training step, backward and update ops derived)", _detect_onnx,
                load_onnx)
