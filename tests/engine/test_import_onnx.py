"""ONNX importer (issue #35): models built with ``onnx.helper`` here, numbers worked out by hand.

MLP (x: N×8, Gemm 8→16, Relu, Gemm 16→4, batch 32, float32). Forward: 1 Input, 4 Variables (W1 8×16,
b1 16, W2 16×4, b2 4), 2 Gemm, 1 Relu. Backward: the second Gemm needs an input gradient (its input
depends on W1) and a weight gradient; the Relu an input gradient; the first Gemm only a weight
gradient (x needs none) → 1 GemmGrad, 2 GemmWeightGrad, 1 ReluGrad. Update: one SGDUpdate per
initializer. FLOPs: Gemm1 2·32·16·8 = 8192, Gemm2 2·32·4·16 = 4096, Relu 32·16 = 512; SGD 2 per element.

Conv net (x: 2×3×8×8; Conv 3→4, 3×3, pad 1 → 2×4×8×8; BatchNormalization; Relu; MaxPool 2×2 stride 2
→ 2×4×4×4; Flatten → 2×64; Gemm 64→10, transB). Conv FLOPs 2·N·Cout·Hout·Wout·Cin·kh·kw =
2·2·4·8·8·3·3·3 = 27648; Gemm 2·2·10·64 = 2560; BN 4 per element = 2048; MaxPool 4 per output = 512.
Trainable: conv W and B, BN scale and bias, fc W and b (6 updates); BN's running mean and variance are
Variables that no gradient reaches.
"""

from __future__ import annotations

import io
import warnings
from collections import Counter

import numpy as np
import pytest

from engine.errors import GraphError
from engine.importers.onnx_graph import _detect_onnx, graph_from_onnx
from engine.importers.tensorflow_graph import roofline_cost
from engine.specs import detect_format, load_graph

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

F32 = TensorProto.FLOAT


class _Capture:
    """A cost function that records the FLOPs and bytes the importer computed."""

    def __call__(self, flops, touched):
        self.flops, self.touched = np.array(flops), np.array(touched)
        return roofline_cost(flops, touched)

    def of(self, g, name):
        i = g.index[name]
        return self.flops[i], self.touched[i]


def _init(name, *shape):
    return numpy_helper.from_array(np.zeros(shape, np.float32), name)


def _model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="placelab-test")


def _mlp():
    nodes = [helper.make_node("Gemm", ["x", "W1", "b1"], ["h1"], name="fc1/Gemm"),
             helper.make_node("Relu", ["h1"], ["a1"], name="fc1/Relu"),
             helper.make_node("Gemm", ["a1", "W2", "b2"], ["y"], name="fc2/Gemm")]
    return _model(nodes, [helper.make_tensor_value_info("x", F32, ["N", 8])],
                  [helper.make_tensor_value_info("y", F32, ["N", 4])],
                  [_init("W1", 8, 16), _init("b1", 16), _init("W2", 16, 4), _init("b2", 4)])


def _convnet():
    nodes = [helper.make_node("Conv", ["x", "cw", "cb"], ["c"], name="conv/Conv", kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "bb", "mean", "var"], ["n"], name="conv/BN"),
             helper.make_node("Relu", ["n"], ["r"], name="conv/Relu"),
             helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
             helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], name="fc/Gemm", transB=1)]
    inits = [_init("cw", 4, 3, 3, 3), _init("cb", 4), _init("s", 4), _init("bb", 4), _init("mean", 4),
             _init("var", 4), _init("fw", 10, 64), _init("fb", 10)]
    return _model(nodes, [helper.make_tensor_value_info("x", F32, [2, 3, 8, 8])],
                  [helper.make_tensor_value_info("y", F32, None)], inits)


def _recurrent(op, *, seq=5, batch=3, inp=4, hidden=6, dirs=1, bias=True):
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    inits = [_init("W", dirs, gates * hidden, inp), _init("R", dirs, gates * hidden, hidden)]
    inits += [_init("B", dirs, 2 * gates * hidden)] if bias else []
    node = helper.make_node(op, ["x", "W", "R", "B" if bias else ""], ["Y", "Y_h"], name="rnn", hidden_size=hidden,
                            direction="bidirectional" if dirs == 2 else "forward")
    return _model([node], [helper.make_tensor_value_info("x", F32, [seq, batch, inp])],
                  [helper.make_tensor_value_info("Y", F32, None), helper.make_tensor_value_info("Y_h", F32, None)],
                  inits)


def _per_phase(g, phase):
    return Counter(t for t, p in zip(g.op_types, g.phase, strict=True) if p == phase)


@pytest.fixture(scope="module")
def mlp():
    cap = _Capture()
    return graph_from_onnx(_mlp(), batch=32, cost=cap), cap


def test_mlp_ops_per_phase_match_hand_count(mlp):
    g, _ = mlp
    assert _per_phase(g, "forward") == {"Input": 1, "Gemm": 2, "Relu": 1}
    assert _per_phase(g, None) == {"Variable": 4}
    assert _per_phase(g, "backward") == {"GemmGrad": 1, "GemmWeightGrad": 2, "ReluGrad": 1}
    assert _per_phase(g, "update") == {"SGDUpdate": 4}
    assert "fc1/Gemm/grad_input" not in g.index  # x needs no gradient
    assert g.scope[g.index["fc1/Gemm"]] == "fc1" and g.scope[g.index["fc2/Gemm/grad_weight"]] == "grad/fc2"
    for w in ("W1", "b1", "W2", "b2"):
        assert g.colocate[g.index[w]] == g.colocate[g.index[f"{w}/update"]] == w
    assert g.persistent_bytes[g.index["W1"]] == 8 * 16 * 4 and g.persistent_bytes[g.index["fc1/Gemm"]] == 0


def test_mlp_flops_and_bytes_match_hand_count(mlp):
    g, cap = mlp
    x, w1, b1, h1 = 32 * 8 * 4, 8 * 16 * 4, 16 * 4, 32 * 16 * 4
    assert cap.of(g, "fc1/Gemm") == (2 * 32 * 16 * 8, x + w1 + b1 + h1)
    assert cap.of(g, "fc2/Gemm")[0] == 2 * 32 * 4 * 16
    assert cap.of(g, "fc1/Relu") == (32 * 16, 2 * h1)
    # the gradient ops redo their forward op's work; SGD does 2 FLOPs per element and touches w, g, w
    assert cap.of(g, "fc2/Gemm/grad_input") == cap.of(g, "fc2/Gemm/grad_weight") == cap.of(g, "fc2/Gemm")
    assert cap.of(g, "W1/update") == (2 * 8 * 16, 3 * w1)
    assert cap.of(g, "x") == cap.of(g, "W1") == (0, 0)
    assert g.compute_on("gpu")[g.index["x"]] == 0 and g.compute_on("gpu")[g.index["fc1/Gemm"]] > 0
    assert "gpu@K80" in g.kinds

    def edge(a, b):
        e = np.flatnonzero((g.edge_src == g.index[a]) & (g.edge_dst == g.index[b]))
        return float(g.edge_bytes[e[0]]) if len(e) else None

    assert edge("x", "fc1/Gemm") == x and edge("fc1/Gemm", "fc1/Relu") == h1
    assert edge("fc2/Gemm/grad_input", "fc1/Relu/grad_input") == h1  # the gradient of a1 (32×16)
    assert edge("fc2/Gemm", "fc2/Gemm/grad_input") == 32 * 4 * 4  # the loss gradient of y
    assert edge("fc1/Relu/grad_input", "fc1/Gemm/grad_weight") == h1
    assert edge("fc2/Gemm/grad_weight", "W2/update") == 16 * 4 * 4 and edge("W2", "W2/update") == 0


def test_inference_has_no_backward_or_update_ops():
    g = graph_from_onnx(_mlp(), batch=32, training=False)
    assert set(g.phase) == {"forward", None} and g.num_ops == 8
    assert all(c is None for c in g.colocate)


def test_unknown_batch_defaults_to_one_and_the_model_is_left_as_it_was():
    model = _mlp()
    before = model.SerializeToString()
    cap = _Capture()
    g = graph_from_onnx(model, cost=cap, training=False)
    assert cap.of(g, "fc1/Gemm")[0] == 2 * 1 * 16 * 8
    assert model.SerializeToString() == before


def test_convnet_flops_and_phases_match_hand_count():
    cap = _Capture()
    g = graph_from_onnx(_convnet(), cost=cap)
    assert cap.of(g, "conv/Conv")[0] == 2 * 2 * 4 * 8 * 8 * 3 * 3 * 3
    assert cap.of(g, "fc/Gemm")[0] == 2 * 2 * 10 * 64
    assert cap.of(g, "conv/BN")[0] == 4 * 2 * 4 * 8 * 8
    assert cap.of(g, "pool")[0] == 2 * 4 * 4 * 4 * 4
    assert cap.of(g, "flatten") == (0, 0)  # a metadata op: no time, as TF's Reshape
    assert _per_phase(g, "forward") == {"Input": 1, "Conv": 1, "BatchNormalization": 1, "Relu": 1, "MaxPool": 1,
                                        "Flatten": 1, "Gemm": 1}
    assert _per_phase(g, "backward") == {"GemmGrad": 1, "GemmWeightGrad": 1, "FlattenGrad": 1, "MaxPoolGrad": 1,
                                         "ReluGrad": 1, "BatchNormalizationGrad": 1,
                                         "BatchNormalizationWeightGrad": 1, "ConvWeightGrad": 1}
    assert cap.of(g, "conv/Conv/grad_weight")[0] == 2 * 2 * 4 * 8 * 8 * 3 * 3 * 3
    assert {g.op_names[i] for i in range(g.num_ops) if g.op_types[i] == "SGDUpdate"} == {
        f"{w}/update" for w in ("cw", "cb", "s", "bb", "fw", "fb")}
    assert g.persistent_bytes[g.index["mean"]] == 16 and g.colocate[g.index["mean"]] is None
    assert g.output_bytes[g.index["flatten"]] == 2 * 64 * 4


@pytest.mark.parametrize(("op", "dirs", "bias", "gates", "cell"),
                         [("LSTM", 1, True, 4, 9), ("LSTM", 2, False, 4, 9), ("GRU", 1, True, 3, 8),
                          ("RNN", 1, True, 1, 1)])
def test_recurrent_flops_follow_the_gate_formula(op, dirs, bias, gates, cell):
    seq, batch, inp, hidden = 5, 3, 4, 6
    cap = _Capture()
    g = graph_from_onnx(_recurrent(op, dirs=dirs, bias=bias), cost=cap, training=False)
    per_step = 2 * gates * hidden * (inp + hidden) + (2 * gates * hidden if bias else 0) + cell * hidden
    assert cap.of(g, "rnn")[0] == seq * batch * dirs * per_step
    if (op, dirs, bias) == ("LSTM", 1, True):
        assert cap.of(g, "rnn")[0] == 15 * (480 + 48 + 54)  # 8730
        assert g.output_bytes[g.index["rnn"]] == (5 * 1 * 3 * 6 + 1 * 3 * 6) * 4  # Y and Y_h


def test_batched_matmul_attention_and_moves():
    nodes = [helper.make_node("MatMul", ["q", "kt"], ["s"], name="qk"),
             helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
             helper.make_node("Transpose", ["p"], ["pt"], name="t", perm=[0, 1, 3, 2]),
             helper.make_node("Attention", ["q", "k", "v"], ["o"], name="attn")]
    vi = lambda n, s: helper.make_tensor_value_info(n, F32, s)  # noqa: E731
    model = _model(nodes, [vi("q", [2, 3, 5, 8]), vi("kt", [2, 3, 8, 7]), vi("k", [2, 3, 7, 8]),
                           vi("v", [2, 3, 7, 8])], [vi("pt", None), vi("o", None)], opset=23)
    cap = _Capture()
    g = graph_from_onnx(model, cost=cap)
    assert cap.of(g, "qk")[0] == 2 * (2 * 3 * 5 * 7) * 8
    assert cap.of(g, "softmax")[0] == 5 * 2 * 3 * 5 * 7
    assert cap.of(g, "t") == (0, 2 * 2 * 3 * 5 * 7 * 4)  # moves its bytes, no FLOPs
    q = 2 * 3 * 5 * 8
    assert cap.of(g, "attn")[0] == 2 * q * 7 + 2 * q * 7 + 5 * (2 * 3 * 5) * 7
    assert g.phase.count("backward") == 0  # no initializer: nothing to train


def test_names_constants_and_scopes():
    const = helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.ones(4, np.float32)))
    nodes = [const, helper.make_node("Add", ["x", "c"], ["y"]), helper.make_node("Relu", ["y"], ["z"], name="x"),
             helper.make_node("Mul", ["z", "w"], ["o"], name="/enc/layer.0/Mul")]
    model = _model(nodes, [helper.make_tensor_value_info("x", F32, [4])],
                   [helper.make_tensor_value_info("o", F32, None)], [_init("enc.0.w", 4)])
    model.graph.node[3].input[1] = "enc.0.w"
    cap = _Capture()
    g = graph_from_onnx(model, cost=cap, training=False)
    assert g.op_names == ("x", "enc.0.w", "Add_2", "x_1", "/enc/layer.0/Mul")  # Constant dropped
    assert cap.of(g, "Add_2") == (4, 3 * 16)  # it still reads the constant
    assert g.scope[g.index["/enc/layer.0/Mul"]] == "enc/layer.0" and g.scope[g.index["enc.0.w"]] == "enc.0"


def test_file_round_trips_through_format_detection(tmp_path):
    path = tmp_path / "mlp.onnx"
    onnx.save(_mlp(), path)
    assert detect_format(path).name == "onnx"
    g = load_graph(str(path))
    assert g.name == "mlp" and g.num_ops == 16
    assert g.content_hash == graph_from_onnx(path).content_hash
    small = load_graph(f"{path}?training=false&batch=4")
    assert small.num_ops == 8 and small.output_bytes[small.index["x"]] == 4 * 8 * 4


def test_detection_is_conservative():
    head = _mlp().SerializeToString()[:4096]
    assert _detect_onnx(head)
    bare = _mlp()
    bare.ClearField("producer_name")
    assert _detect_onnx(bare.SerializeToString())  # ir_version then the graph
    long_doc = _mlp()
    long_doc.doc_string = "x" * 5000
    assert _detect_onnx(long_doc.SerializeToString()[:4096])  # the head ends inside the doc string
    # a SavedModel: schema version 1, then meta_graphs whose first field (meta_info_def) is 0x0A
    assert not _detect_onnx(b"\x08\x01\x12\x20\x0a\x1e\x0a\x08" + b"x" * 40)
    assert not _detect_onnx(b"\x0a\x05\x0a\x01a\x12\x00" + b"y" * 20)  # a GraphDef
    assert not _detect_onnx(b'{"schema": "placelab.graph/1"}')
    assert not _detect_onnx(b"3\n0\n0,1\n1,2\n")
    assert not _detect_onnx(b"\x08\x00\x12\x03abc")  # ir_version 0
    assert not _detect_onnx(b"\x08\x07\x3a")  # too short to tell


def _one_line_error(source, match):
    with pytest.raises(GraphError, match=match) as err:
        graph_from_onnx(source)
    assert "\n" not in str(err.value)


def test_malformed_files_give_one_graph_error(tmp_path):
    data = _mlp().SerializeToString()
    truncated = tmp_path / "cut.onnx"
    truncated.write_bytes(data[: len(data) // 2])
    _one_line_error(truncated, "not a valid ONNX model")
    with pytest.raises(GraphError, match="not a valid ONNX model"):
        load_graph(str(truncated))  # the head still looks like ONNX
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x08\x07\xff\xff\xff")
    _one_line_error(junk, "not a valid ONNX model")
    text = tmp_path / "text.onnx"
    text.write_text("hello world\n")
    _one_line_error(text, "text")
    _one_line_error(tmp_path / "missing.onnx", "no such file")


def test_invalid_graphs_give_one_graph_error():
    vi = lambda n, s=(4,): helper.make_tensor_value_info(n, F32, s)  # noqa: E731
    cycle = _model([helper.make_node("Relu", ["b"], ["a"], name="A"), helper.make_node("Relu", ["a"], ["b"], name="B")],
                   [], [vi("b")])
    _one_line_error(cycle, "cycle: 'A' -> 'B' -> 'A'|cycle: 'B' -> 'A' -> 'B'")
    twice = _model([helper.make_node("Relu", ["x"], ["y"], name="A"), helper.make_node("Relu", ["x"], ["y"], name="B")],
                   [vi("x")], [vi("y")])
    _one_line_error(twice, "tensor 'y' is written by both 'A' and 'B'")
    unknown = helper.make_model(helper.make_graph([helper.make_node("Foo", ["x"], ["y"], domain="custom")], "g",
                                                  [vi("x", None)], [vi("y", None)]))
    _one_line_error(unknown, "no tensor of the ONNX graph has a known shape")
    _one_line_error(_model([], [vi("x")], [vi("x")]), "no graph nodes")
    with pytest.raises(GraphError, match="batch must be an integer >= 1"):
        graph_from_onnx(_mlp(), batch=0)


def test_a_crafted_shape_cannot_exhaust_memory():
    """onnx 1.23's data propagation fills memory until std::bad_alloc on a shape tensor reshaped to [2**62] (in
    this process: killed by the OOM killer); the importer's capped child gives up and the file's shapes stay."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Reshape", ["s", "c"], ["r"]),
             helper.make_node("Unsqueeze", ["r", "ax"], ["u"]), helper.make_node("Relu", ["x"], ["y"], name="relu")]
    i64 = TensorProto.INT64
    inits = [helper.make_tensor("c", i64, [1], [2**62]), helper.make_tensor("ax", i64, [1], [0])]
    model = _model(nodes, [helper.make_tensor_value_info("x", F32, [2, 3, 4, 5])],
                   [helper.make_tensor_value_info("u", i64, None), helper.make_tensor_value_info("y", F32, None)],
                   inits)
    g = graph_from_onnx(model, training=False)
    assert g.output_bytes[g.index["relu"]] == 4  # no inference: y's rank is unknown, one element
    assert g.output_bytes[g.index["x"]] == 2 * 3 * 4 * 5 * 4


def test_torch_export_imports(tmp_path):
    torch = pytest.importorskip("torch")
    module = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter is deprecated (but needs no extra package)
        torch.onnx.export(module, (torch.zeros(2, 8),), buf, dynamo=False, input_names=["x"], output_names=["y"])
    path = tmp_path / "seq.onnx"
    path.write_bytes(buf.getvalue())
    cap = _Capture()
    g = graph_from_onnx(path, cost=cap)
    assert _per_phase(g, "forward") == {"Input": 1, "Gemm": 2, "Relu": 1}
    assert _per_phase(g, "update") == {"SGDUpdate": 4}
    gemm = next(i for i, t in enumerate(g.op_types) if t == "Gemm")
    assert cap.flops[gemm] == 2 * 2 * 16 * 8  # batch 2, fixed by the export
    assert g.scope[gemm] == "0" and g.colocate[g.index["0.weight"]] == "0.weight"
