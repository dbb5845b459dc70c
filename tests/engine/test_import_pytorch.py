"""PyTorch importer: the aten graph of one SGD training step, small models built inline.

Hand count for the MLP (Linear 8→16, ReLU, Linear 16→4, mean-square loss, batch 32):
forward 2 addmm + 1 relu; backward 3 mm (two weight gradients and the hidden layer's input
gradient; x needs none), 2 sum (bias gradients), 1 threshold_backward (ReLU); update one
``sub`` (w − lr·g) per parameter.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
import pytest

from engine.errors import MAX_LINE, GraphError

torch = pytest.importorskip("torch")
nn = torch.nn

from engine.importers.pytorch_graph import graph_from_torch, trace_step  # noqa: E402
from engine.importers.tensorflow_graph import roofline_cost  # noqa: E402

BATCH = 32


class _Capture:
    def __call__(self, flops, touched):
        self.flops, self.touched = np.array(flops), np.array(touched)
        return roofline_cost(flops, touched)


class _CNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.conv(x))).flatten(1))


class _LSTM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(8, 16, batch_first=True)
        self.head = nn.Linear(16, 2)

    def forward(self, x):
        return self.head(self.lstm(x)[0][:, -1])


@pytest.fixture(scope="module")
def mlp():
    torch.manual_seed(0)
    cap = _Capture()
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    return graph_from_torch(model, (torch.randn(BATCH, 8),), cost=cap), cap


def _count(g, phase):
    return Counter(t for t, p in zip(g.op_types, g.phase, strict=True) if p == phase)


def test_mlp_ops_per_phase_match_hand_count(mlp):
    g, _ = mlp
    fwd, bwd, upd = _count(g, "forward"), _count(g, "backward"), _count(g, "update")
    assert (fwd["addmm"], fwd["relu"], fwd["Input"]) == (2, 1, 1)
    assert (bwd["mm"], bwd["sum"], bwd["threshold_backward"]) == (3, 2, 1)
    assert upd["sub"] == 4
    assert Counter(g.op_types)["Parameter"] == 4
    assert "detach" not in g.op_types


def test_mlp_bytes_flops_and_scopes(mlp):
    g, cap = mlp
    relu = g.op_types.index("relu")
    assert g.output_bytes[relu] == BATCH * 16 * 4
    assert g.persistent_bytes[g.index["0.weight"]] == 16 * 8 * 4
    assert g.persistent_bytes.sum() == (16 * 8 + 16 + 4 * 16 + 4) * 4
    first = g.op_types.index("addmm")
    assert cap.flops[first] == 2 * BATCH * 8 * 16
    assert g.scope[first] == "0" and g.scope[relu] == "1"
    assert cap.flops[g.op_types.index("t")] == 0  # a view


def test_each_update_is_colocated_with_its_parameter(mlp):
    g, _ = mlp
    for p in ("0.weight", "0.bias", "2.weight", "2.bias"):
        members = [i for i, c in enumerate(g.colocate) if c == p]
        assert sorted(g.op_types[i] for i in members) == ["Parameter", "sub"]
        upd = next(i for i in members if g.op_types[i] == "sub")
        assert g.phase[upd] == "update" and g.output_bytes[upd] == g.persistent_bytes[g.index[p]]


def test_graph_is_a_dag(mlp):
    nx = pytest.importorskip("networkx")
    g, _ = mlp
    assert nx.is_directed_acyclic_graph(g.to_networkx())


def test_cnn_convolution_flops():
    cap = _Capture()
    g = graph_from_torch(_CNN(), (torch.randn(4, 3, 8, 8),), cost=cap)
    fwd = 2 * (4 * 8 * 8 * 8) * (3 * 3 * 3)
    conv = g.op_types.index("convolution")
    conv_bw = g.op_types.index("convolution_backward")
    assert cap.flops[conv] == fwd
    assert cap.flops[conv_bw] == fwd  # weight gradient only: the image needs no gradient
    assert g.phase[conv_bw] == "backward" and g.scope[conv_bw] == "grad/conv"
    assert Counter(g.op_types)["Buffer"] == 3  # BatchNorm's running mean, variance, batch count


def test_lstm_training_step():
    g = graph_from_torch(_LSTM(), (torch.randn(4, 5, 8),))
    assert {"forward", "backward", "update"} <= set(g.phase)
    assert Counter(g.op_types)["Parameter"] == 6
    assert {"lstm", "head", "grad/lstm", "update/lstm"} <= set(g.scope)


def test_fused_lstm_layer_flops_by_hand():
    """nn.LSTM(8, 16) over 4 × 5 rows traces as one fused mkldnn_rnn_layer: per row 2·4H·(I + H) for the
    gates' products, 2·4H bias adds and 9H of cell work = 8·16·24 + 8·16 + 9·16 = 3,344; × 20 rows = 66,880.
    Its backward does twice that (the input and the weight gradients). Issue #35: it was one FLOP per
    element, a sliver of the unrolled cell's time."""
    cap = _Capture()
    g = graph_from_torch(_LSTM(), (torch.randn(4, 5, 8),), cost=cap)
    fused = {t: [cap.flops[i] for i, u in enumerate(g.op_types) if u == t]
             for t in ("mkldnn_rnn_layer", "mkldnn_rnn_layer_backward")}
    if not fused["mkldnn_rnn_layer"]:
        pytest.fail(f"nn.LSTM no longer traces as mkldnn_rnn_layer here: {sorted(set(g.op_types))}")
    assert fused == {"mkldnn_rnn_layer": [66_880.0], "mkldnn_rnn_layer_backward": [133_760.0]}


def test_untraceable_or_parameterless_module_is_graph_error():
    class Broken(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.ones(2))

        def forward(self, x):
            raise ValueError("boom\nsecond line")

    with pytest.raises(GraphError, match="cannot trace") as err:
        graph_from_torch(Broken(), (torch.ones(2),))
    assert "\n" not in str(err.value)
    with pytest.raises(GraphError, match="no trainable parameter"):
        graph_from_torch(nn.ReLU(), (torch.ones(2),))


def test_import_leaves_batchnorm_statistics_unchanged():
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU())
    before = {k: v.clone() for k, v in model.named_buffers()}
    graph_from_torch(model, (torch.randn(16, 4),))
    after = dict(model.named_buffers())
    # the trace ran a real step (running mean would move off 0), yet nothing changed
    assert all(torch.equal(before[k], after[k]) for k in before)


class _Heads(nn.Module):
    """The MLP of the hand count, returning its hidden layer and its logits."""

    def __init__(self, wrap=dict) -> None:
        super().__init__()
        self.encoder, self.head, self.wrap = nn.Linear(8, 16), nn.Linear(16, 4), wrap

    def forward(self, x):
        hidden = torch.relu(self.encoder(x))
        return self.wrap(hidden=hidden, logits=self.head(hidden))


@dataclasses.dataclass
class _Out:
    logits: object
    hidden: object


def _updated(g) -> set[str]:
    """The parameters an update op is colocated with."""
    return {c for c, p in zip(g.colocate, g.phase, strict=True) if p == "update" and c}


def test_dict_output_loss_reads_the_first_tensor_or_the_named_key():
    """{"hidden", "logits"}: the default loss reads ``hidden``, so only the encoder gets a gradient (2 updates);
    ``output_key="logits"`` gives the hand count of the MLP (3 mm, 2 sum, 4 updates)."""
    x = (torch.randn(BATCH, 8),)
    first = graph_from_torch(_Heads(), x)
    assert _updated(first) == {"encoder.weight", "encoder.bias"} and _count(first, "update")["sub"] == 2
    logits = graph_from_torch(_Heads(), x, output_key="logits")
    bwd = _count(logits, "backward")
    assert (bwd["mm"], bwd["sum"], bwd["threshold_backward"]) == (3, 2, 1)
    assert _count(logits, "update")["sub"] == 4 and Counter(logits.op_types)["Parameter"] == 4


def test_dataclass_and_tuple_outputs():
    x = (torch.randn(BATCH, 8),)
    assert _count(graph_from_torch(_Heads(_Out), x), "update")["sub"] == 4  # first field: logits
    as_tuple = _Heads(lambda hidden, logits: (hidden, logits))
    assert _count(graph_from_torch(as_tuple, x), "update")["sub"] == 2
    assert _count(graph_from_torch(as_tuple, x, output_key="1"), "update")["sub"] == 4


def test_the_modules_own_loss_is_used_as_it_is():
    """A ``loss`` entry is differentiated as it is: no mean of squares is added (the default loss's ``mean``)."""

    def with_loss(hidden, logits):
        return {"logits": logits, "loss": logits.abs().sum()}

    x = (torch.randn(BATCH, 8),)
    own = _count(graph_from_torch(_Heads(with_loss), x), "forward")
    assert (own["abs"], own["sum"], own["mean"]) == (1, 1, 0)
    assert _count(graph_from_torch(_Heads(with_loss), x, output_key="logits"), "forward")["mean"] == 1


def test_inference_of_a_dict_output_and_a_key_that_names_nothing():
    g = graph_from_torch(_Heads(), (torch.randn(BATCH, 8),), training=False, output_key="logits")
    assert set(g.phase) == {"forward", None} and Counter(g.op_types)["addmm"] == 2
    with pytest.raises(GraphError) as err:
        graph_from_torch(_Heads(), (torch.randn(BATCH, 8),), output_key="probs")
    assert str(err.value) == "'_Heads' returns no tensor 'probs': its tensor outputs are hidden, logits"


class _Branchy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        if x.sum() > 0:  # data-dependent control flow
            return self.fc(x)
        return self.fc(-x)


def test_data_dependent_control_flow_is_one_line_saying_where_and_what_to_change():
    import inspect

    lines, start = inspect.getsourcelines(_Branchy.forward)
    line = start + next(i for i, text in enumerate(lines) if "if x.sum()" in text)
    with pytest.raises(GraphError) as err:
        graph_from_torch(_Branchy(), (torch.randn(2, 4),))
    msg = str(err.value)
    assert msg.startswith("cannot trace a training step of '_Branchy': its forward pass branches on a tensor's "
                          f"values (at test_import_pytorch.py:{line}); make that branch depend on shapes")
    assert "attn_implementation" in msg and "\n" not in msg and len(msg) <= MAX_LINE
    assert "make_fx" not in msg and "tracing_mode" not in msg


@torch.library.custom_op("placelab_tests::doubled", mutates_args=())
def _doubled(x: torch.Tensor) -> torch.Tensor:
    return x * 2


_doubled.register_autograd(lambda ctx, grad: grad * 2)


class _Custom(nn.Module):
    """An op with no fake implementation: torch.export refuses it, the eager trace runs it."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return _doubled(self.fc(x))


def test_export_first_and_the_eager_trace_for_what_export_refuses():
    x = (torch.randn(2, 4),)
    assert trace_step(nn.Linear(4, 4), x).via == "export"
    assert trace_step(_Custom(), x).via == "eager"
    g = graph_from_torch(_Custom(), x)
    assert g.phase[g.op_types.index("doubled")] == "forward" and _count(g, "update")["sub"] == 2
