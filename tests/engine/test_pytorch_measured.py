"""Measured cost mode for PyTorch training steps: same graph as graph_from_torch, times profiled here."""

from __future__ import annotations

import numpy as np
import pytest

from engine.errors import GraphError

torch = pytest.importorskip("torch")
nn = torch.nn

from engine.graph.io import load_graph_json, save_graph  # noqa: E402
from engine.importers.pytorch_graph import graph_from_torch  # noqa: E402
from engine.importers.pytorch_measured import measure_torch_step  # noqa: E402

# big enough that a matmul clearly costs more than a view's dispatch overhead (~10 µs)
BATCH, IN, HIDDEN, OUT = 256, 512, 512, 64
VIEW_TYPES = {"t", "view", "expand", "_unsafe_view", "reshape", "permute", "transpose"}
MATMUL_TYPES = {"mm", "addmm", "bmm"}


def _mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(IN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, OUT))


@pytest.fixture(scope="module")
def measured():
    model = _mlp()
    x = torch.randn(BATCH, IN)
    return model, x, measure_torch_step(model, (x,), repeats=5, warmup=2), graph_from_torch(model, (x,))


def test_same_ops_edges_and_fields_as_graph_from_torch(measured):
    _, _, g, ref = measured
    assert g.op_names == ref.op_names and g.op_types == ref.op_types
    assert np.array_equal(g.edge_src, ref.edge_src) and np.array_equal(g.edge_dst, ref.edge_dst)
    assert np.array_equal(g.edge_bytes, ref.edge_bytes)
    for field in ("output_bytes", "persistent_bytes", "temp_bytes"):
        assert np.array_equal(getattr(g, field), getattr(ref, field))
    assert (g.phase, g.scope, g.colocate, g.pin, g.name) == (ref.phase, ref.scope, ref.colocate, ref.pin, ref.name)
    assert g.kinds == ("cpu",)


def test_measured_times_are_finite_nonnegative_and_zero_for_sources(measured):
    _, _, g, _ = measured
    t = g.compute_for_kind("cpu")
    assert np.isfinite(t).all() and (t >= 0).all()
    sources = np.array([ty in ("Parameter", "Buffer", "Input") for ty in g.op_types])
    assert (t[sources] == 0).all()
    assert (t[~sources] > 0).all()  # every executed op took some time


def test_matmuls_cost_more_than_views(measured):
    _, _, g, _ = measured
    t = g.compute_for_kind("cpu")
    types = np.array(g.op_types)
    mm = np.isin(types, list(MATMUL_TYPES))
    views = np.isin(types, list(VIEW_TYPES))
    assert mm.sum() == 5 and views.sum() >= 5  # 2 addmm forward, 3 mm backward; t/view/expand
    assert t[mm].sum() > t[views].sum()


def test_structure_is_deterministic_and_module_untouched(measured):
    model, x, g, _ = measured
    before = {k: v.clone() for k, v in model.state_dict().items()}
    again = measure_torch_step(model, (x,), repeats=1, warmup=0, kind="cpu-box2")
    assert again.op_names == g.op_names and again.kinds == ("cpu-box2",)
    assert np.array_equal(again.edge_src, g.edge_src) and np.array_equal(again.edge_dst, g.edge_dst)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_measured_times_survive_save_and_load(measured, tmp_path):
    _, _, g, _ = measured
    path = tmp_path / "mlp-measured.json"
    save_graph(g, path)
    back = load_graph_json(path)
    assert back.op_names == g.op_names and back.kinds == ("cpu",)
    np.testing.assert_allclose(back.compute_for_kind("cpu"), g.compute_for_kind("cpu"), rtol=1e-12)


def test_batchnorm_buffers_and_custom_loss():
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(6, 6)
            self.bn = nn.BatchNorm1d(6)

        def forward(self, x):
            return self.bn(self.fc(x))

    torch.manual_seed(1)
    net, x = Net(), torch.randn(8, 6)
    running = net.bn.running_mean.clone()
    g = measure_torch_step(net, (x,), loss_fn=lambda out: out.abs().sum(), repeats=2, warmup=1)
    # tracing updates BatchNorm's running stats in place; measuring restores them
    assert torch.equal(net.bn.running_mean, running) and int(net.bn.num_batches_tracked) == 0
    ref = graph_from_torch(net, (x,), loss_fn=lambda out: out.abs().sum())
    assert g.op_names == ref.op_names and "Buffer" in g.op_types


def test_fused_lstm_is_measured_forward_and_backward():
    """nn.LSTM traces as one fused mkldnn_rnn_layer per layer whose backward reads the forward's workspace; the
    forward returns it only in grad mode, so measuring runs the step with grad on (it failed with "got None for
    'workspace'" under no_grad)."""

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rnn = nn.LSTM(8, 16, num_layers=2, batch_first=True)

        def forward(self, x):
            return self.rnn(x)[0]

    torch.manual_seed(0)
    x = torch.randn(4, 5, 8, requires_grad=True)  # an input that asks for grad changes nothing
    g = measure_torch_step(Net(), (x,), repeats=2, warmup=1)
    fused = [i for i, t in enumerate(g.op_types) if t.startswith("mkldnn_rnn_layer")]
    assert sorted(g.op_types[i] for i in fused) == ["mkldnn_rnn_layer"] * 2 + ["mkldnn_rnn_layer_backward"] * 2
    assert (g.compute_on("cpu")[fused] > 0).all()
    assert x.grad is None


def test_untraceable_module_is_graph_error():
    class Broken(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.ones(2))

        def forward(self, x):
            raise ValueError("boom\nsecond line")

    with pytest.raises(GraphError, match="cannot trace") as err:
        measure_torch_step(Broken(), (torch.ones(2),))
    assert "\n" not in str(err.value)
    with pytest.raises(GraphError, match="no trainable parameter"):
        measure_torch_step(nn.ReLU(), (torch.ones(2),))


@pytest.mark.parametrize("kwargs", [{"repeats": 0}, {"repeats": 1.5}, {"warmup": -1}, {"kind": ""}])
def test_bad_arguments_are_graph_errors(kwargs):
    with pytest.raises(GraphError):
        measure_torch_step(_mlp(), (torch.randn(2, IN),), **kwargs)
