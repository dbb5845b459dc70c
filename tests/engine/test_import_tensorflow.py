"""TensorFlow importers: a Keras training step, GraphDef and SavedModel files.

Expected counts for the MLP (Dense 8→16 relu, Dense 16→4, MSE, SGD, batch 32) worked out by
hand from TF's gradient functions: forward 2 MatMul + 2 BiasAdd + 1 Relu + the MSE's Sub,
Square and 2 Mean; backward one MatMul for each kernel gradient plus one for the hidden
layer's input gradient (the input x needs none) = 3, 2 BiasAddGrad, 1 ReluGrad; update one
Mul (lr·g) and one AssignSubVariableOp per variable, plus the iteration counter's
AssignVariableOp.
"""

from __future__ import annotations

import os
import time
from collections import Counter

import numpy as np
import pytest

from engine.errors import GraphError, SpecError
from engine.specs import load_graph

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from engine.importers.tensorflow_graph import (  # noqa: E402
    graph_from_keras,
    graph_from_tf_graph,
    roofline_cost,
)

BATCH = 32


def _mlp():
    return keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu", name="hidden"),
                             keras.layers.Dense(4, name="head")])


class _Capture:
    """A cost function that records the FLOPs and bytes the importer computed."""

    def __call__(self, flops, touched):
        self.flops, self.touched = np.array(flops), np.array(touched)
        return roofline_cost(flops, touched)


@pytest.fixture(scope="module")
def mlp():
    cap = _Capture()
    return graph_from_keras(_mlp(), BATCH, cost=cap), cap


def _count(g, phase):
    return Counter(t for t, p in zip(g.op_types, g.phase, strict=True) if p == phase)


def test_mlp_ops_per_phase_match_hand_count(mlp):
    g, _ = mlp
    fwd, bwd, upd = _count(g, "forward"), _count(g, "backward"), _count(g, "update")
    assert (fwd["MatMul"], fwd["BiasAdd"], fwd["Relu"], fwd["Sub"], fwd["Square"], fwd["Mean"]) == (2, 2, 1, 1, 1, 2)
    assert fwd["Placeholder"] == 2  # x and the target
    assert (bwd["MatMul"], bwd["BiasAddGrad"], bwd["ReluGrad"]) == (3, 2, 1)
    assert (upd["AssignSubVariableOp"], upd["Mul"], upd["AssignVariableOp"]) == (4, 4, 1)
    # 4 model variables + SGD's learning rate and iteration counter
    assert Counter(g.op_types)["Variable"] == 6
    assert {g.phase[i] for i, t in enumerate(g.op_types) if t == "Variable"} == {None}
    assert not {"Const", "Identity", "IdentityN", "ReadVariableOp", "NoOp"} & set(g.op_types)


def test_dense_output_and_variable_bytes(mlp):
    g, _ = mlp
    relu = g.op_types.index("Relu")
    assert g.output_bytes[relu] == BATCH * 16 * 4
    kernel = g.index["sequential/hidden/kernel"]
    assert g.persistent_bytes[kernel] == g.output_bytes[kernel] == 8 * 16 * 4
    assert g.persistent_bytes.sum() == (8 * 16 + 16 + 16 * 4 + 4) * 4 + 4 + 8  # + lr (f32) + iteration (i64)
    # the kernel's reads were pruned: the forward MatMul reads it straight from the variable
    fwd_matmul = next(i for i in g.successors(kernel) if g.op_types[i] == "MatMul")
    e = np.flatnonzero((g.edge_src == kernel) & (g.edge_dst == fwd_matmul))
    assert g.edge_bytes[e].tolist() == [8 * 16 * 4]


def test_matmul_flops_and_roofline_time(mlp):
    g, cap = mlp
    i = next(i for i, (t, p) in enumerate(zip(g.op_types, g.phase, strict=True)) if t == "MatMul" and p == "forward")
    assert cap.flops[i] == 2 * BATCH * 8 * 16
    assert cap.touched[i] == BATCH * 8 * 4 + 8 * 16 * 4 + BATCH * 16 * 4
    from engine.costmodel import K80, V100, op_time

    assert g.compute_for_kind("gpu")[i] == pytest.approx(op_time(cap.flops[i], cap.touched[i], K80))
    assert set(g.base_kinds) == {"gpu", "cpu"} and g.models("gpu") == ("K80", "P100", "V100", "A100", "H100")
    assert g.compute_on("gpu", "V100")[i] == pytest.approx(op_time(cap.flops[i], cap.touched[i], V100))
    for model in g.models("gpu"):  # a variable does no work on any model
        assert g.compute_on("gpu", model)[g.index["sequential/hidden/kernel"]] == 0


def test_every_trainable_variable_has_a_colocated_update(mlp):
    g, _ = mlp
    for var in ("sequential/hidden/kernel", "sequential/hidden/bias", "sequential/head/kernel", "sequential/head/bias"):
        members = [i for i, c in enumerate(g.colocate) if c == var]
        assert {g.op_types[i] for i in members} == {"Variable", "AssignSubVariableOp"}
        assert all(g.phase[i] == "update" for i in members if g.op_types[i] != "Variable")


def test_graph_is_a_dag_with_backward_scopes(mlp):
    nx = pytest.importorskip("networkx")
    g, _ = mlp
    assert nx.is_directed_acyclic_graph(g.to_networkx())
    assert all(s.startswith("gradient_tape") for s, p in zip(g.scope, g.phase, strict=True) if p == "backward")


def test_conv_flops_forward_and_both_backprops():
    cap = _Capture()
    model = keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Conv2D(5, 3, padding="same"),
                              keras.layers.Flatten(), keras.layers.Dense(2)])
    g = graph_from_keras(model, 4, cost=cap)
    per_type = {t: cap.flops[i] for i, t in enumerate(g.op_types) if t.startswith("Conv2D")}
    fwd = 2 * (4 * 8 * 8 * 5) * (3 * 3 * 3)
    # the input needs no gradient, so there is no Conv2DBackpropInput
    assert per_type == {"Conv2D": fwd, "Conv2DBackpropFilter": fwd}


def test_tf_colocation_attribute_is_kept():
    graph = tf.Graph()
    with graph.as_default():
        a = tf.compat.v1.placeholder(tf.float32, [4, 4], name="a")
        b = tf.math.square(a, name="b")
        with graph.colocate_with(b.op):
            c = tf.math.exp(b, name="c")
        tf.math.add(c, tf.identity(b, name="id"), name="d")
    g = graph_from_tf_graph(graph, name="coloc")
    assert g.colocate[g.index["b"]] == g.colocate[g.index["c"]] == "b"
    assert g.colocate[g.index["d"]] is None
    # the Identity is pruned and 'd' reads 'b' directly (4×4 float32)
    assert "id" not in g.index
    e = np.flatnonzero((g.edge_src == g.index["b"]) & (g.edge_dst == g.index["d"]))
    assert g.edge_bytes[e].tolist() == [64]


def test_graphdef_file_round_trip(tmp_path):
    model = _mlp()
    fn = tf.function(lambda x: model(x)).get_concrete_function(tf.TensorSpec([None, 8]))
    path = tmp_path / "mlp.pb"
    path.write_bytes(fn.graph.as_graph_def(add_shapes=True).SerializeToString())
    g = load_graph(path)
    assert Counter(g.op_types) == Counter({"Variable": 4, "MatMul": 2, "BiasAdd": 2, "Relu": 1, "Placeholder": 1})
    assert set(g.phase) == {"forward", None}
    assert g.output_bytes[g.op_types.index("Relu")] == 1 * 16 * 4  # unknown batch → 1


def test_saved_model_inference_graph(tmp_path):
    model = _mlp()
    model.export(str(tmp_path / "sm"), verbose=False)
    g = load_graph(tmp_path / "sm" / "saved_model.pb")
    assert Counter(g.op_types)["MatMul"] == 2 and Counter(g.op_types)["Variable"] == 4
    assert "backward" not in g.phase and "update" not in g.phase


def test_malformed_pb_is_one_line_graph_error(tmp_path):
    bad = tmp_path / "bad.pb"
    bad.write_bytes(b"\x0a\x10\x0a\x05hello\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff")
    with pytest.raises(GraphError) as err:
        load_graph(bad)
    assert "bad.pb" in str(err.value) and "\n" not in str(err.value)
    junk = tmp_path / "junk.pb"
    junk.write_bytes(bytes(range(200, 256)))
    with pytest.raises(GraphError, match="unrecognized graph format"):
        load_graph(junk)


def test_nasnet_rejects_unknown_variant():
    from engine.generators import from_spec

    with pytest.raises(SpecError, match="variant"):
        from_spec("gen:nasnet?variant=huge")


@pytest.mark.slow
def test_inception_v3_training_step_import(tmp_path, monkeypatch, capsys):
    from engine.generators import from_spec

    monkeypatch.setenv("PLACELAB_CACHE", str(tmp_path))
    t0 = time.perf_counter()
    g = from_spec("gen:inception-v3?batch=32")
    built = time.perf_counter() - t0
    t0 = time.perf_counter()
    again = from_spec("gen:inception-v3?batch=32")
    cached = time.perf_counter() - t0
    with capsys.disabled():
        print(f"\nInception-V3 training step: {g.num_ops} ops, {g.num_edges} edges, {Counter(g.phase)}; "
              f"built in {built:.1f} s, from cache in {cached:.2f} s")
    assert again.content_hash == g.content_hash
    assert len(os.listdir(tmp_path)) == 1
    counts = Counter(g.op_types)
    assert counts["Conv2D"] == counts["Conv2DBackpropFilter"] == 94
    assert counts["Conv2DBackpropInput"] == 93  # the first convolution's input is the image
    assert {"forward", "backward", "update"} <= set(g.phase)
    # Mirhoseini §4.1, "each branch as a group" (Keras' InceptionV3 layer graph, forward and backward
    # together): the stem chain 1; mixed0–2: 4 branches + the concat (3 × 5); mixed3: 3 + 1;
    # mixed4–7: 4 × 5; mixed8: 3 + 1; mixed9: 1×1, the 3×3 conv, its two splits and their concat,
    # the 3×3-dbl chain, its two splits and their concat, the pool branch and the block concat
    # (11); mixed10: the same less its block concat, which chains into the head (avg pool →
    # predictions → loss) (10 + 1); the optimizer's iteration counter 1 → 67 (paper: 83, TF-slim)
    from engine.grouping.rules import unit_groups

    assert int(unit_groups(g).max()) + 1 == 1 + 15 + 4 + 20 + 4 + 11 + 11 + 1


def test_resnet50_step_is_faster_on_v100x8_than_on_k80x2_by_the_rooflines():
    """Issue #35: ResNet50's single-device training step ran 703–719 ms on every preset. Now each preset
    runs its GPUs' roofline: the step on one device is worked out by hand from the FLOPs and bytes the
    importer counted (k80x2 is Placeto's simulator, 5.7 µs after every non-zero op; v100x8 adds none)."""
    from engine.costmodel import K80, V100, op_time
    from engine.presets import PRESETS
    from engine.sim.simulator import Simulator

    cap = _Capture()
    g = graph_from_keras(keras.applications.ResNet50(weights=None, input_shape=(224, 224, 3)), BATCH,
                         loss="categorical_crossentropy", cost=cap)
    busy = (cap.flops > 0) | (cap.touched > 0)
    on_k80 = Simulator(g, PRESETS["k80x2"]()).run(np.zeros(g.num_ops, int)).makespan
    on_v100 = Simulator(g, PRESETS["v100x8"]()).run(np.zeros(g.num_ops, int)).makespan
    k80 = float(op_time(cap.flops[busy], cap.touched[busy], K80).sum())
    v100 = float(op_time(cap.flops[busy], cap.touched[busy], V100).sum())
    assert on_k80 == pytest.approx(k80 + 5.7e-6 * int(busy.sum()), rel=1e-9)
    assert on_v100 == pytest.approx(v100, rel=1e-9)
    print(f"\nResNet50 training step (batch {BATCH}) on one device: k80x2 {on_k80 * 1e3:.1f} ms, "
          f"v100x8 {on_v100 * 1e3:.1f} ms ({k80 / v100:.2f}x)")
    # compute-bound ops speed up by the FLOP/s ratio (3.59x), memory-bound ones by the bandwidth ratio
    # (3.75x); the launch overhead is the same 5 µs on both
    assert 3.3 < k80 / v100 < V100.mem_bandwidth / K80.mem_bandwidth
