"""Tests for the human-expert placer (policies.expert): expected devices worked out by hand."""

from __future__ import annotations

import itertools
import sys

import numpy as np
import pytest

from engine.errors import PlacementError
from engine.graph.compgraph import CompGraph
from engine.graph.io import graph_from_dict
from engine.placement import check_placement
from engine.presets import PRESETS
from policies.expert import expert_keys
from policies.registry import make_placer


def graph(ops: list[dict], edges: list[tuple[str, str]]) -> CompGraph:
    return graph_from_dict({"schema": "placelab.graph/1", "name": "t", "ops": ops,
                            "edges": [{"src": s, "dst": d} for s, d in edges]})


def place(g: CompGraph, cluster: str, **params) -> dict[str, str]:
    c = PRESETS[cluster]()
    p = make_placer("expert", **params).place(g, c)
    check_placement(g, c, p)
    return p.to_mapping(g, c)


def nmt(layers: int) -> CompGraph:
    """embedding -> encoder layers -> decoder layers -> attention -> softmax -> loss, plus backward/update."""
    ops = [{"name": "emb", "compute": 1e-3, "scope": "embedding"}]
    chain = ["emb"]
    for part in ("encoder", "decoder"):
        for k in range(1, layers + 1):  # 1-based layer numbers: ranks 0, 1, ... are what count
            ops.append({"name": f"{part}{k}", "compute": 1e-3, "scope": f"{part}/layer{k}/lstm_cell"})
            chain.append(f"{part}{k}")
    ops += [{"name": "att", "compute": 1e-3, "scope": "decoder/attention"},
            {"name": "sm", "compute": 1e-3, "scope": "softmax"},
            {"name": "loss", "compute": 1e-3, "scope": "loss"},
            {"name": "g_sm", "compute": 1e-3, "scope": "gradients/softmax", "phase": "backward"},
            {"name": "g_dec", "compute": 1e-3, "scope": f"gradients/decoder/layer{layers}/lstm_cell",
             "phase": "backward"},
            {"name": "g_att", "compute": 1e-3, "scope": "gradients/decoder/attention", "phase": "backward"},
            {"name": "up_enc1", "compute": 1e-3, "scope": "update/encoder/layer1/kernel", "phase": "update"},
            {"name": "up_emb", "compute": 1e-3, "scope": "train/embedding/ApplyAdam", "phase": "update"}]
    chain += ["att", "sm", "loss", "g_sm", "g_dec", "g_att", "up_enc1", "up_emb"]
    return graph(ops, list(itertools.pairwise(chain)))


@pytest.mark.parametrize("cluster", ["k80x2", "k80x4"])
def test_nmt_two_layers(cluster):
    # layer1 -> gpu:0, layer2 -> gpu:1 (encoder and decoder layer k share a device, GNMT);
    # attention and softmax with the last layer, embedding with the first; loss follows
    # softmax (its producer); gradients and updates follow their forward scope.
    assert place(nmt(2), cluster) == {
        "emb": "gpu:0", "encoder1": "gpu:0", "encoder2": "gpu:1", "decoder1": "gpu:0", "decoder2": "gpu:1",
        "att": "gpu:1", "sm": "gpu:1", "loss": "gpu:1", "g_sm": "gpu:1", "g_dec": "gpu:1", "g_att": "gpu:1",
        "up_enc1": "gpu:0", "up_emb": "gpu:0"}


def test_nmt_three_layers_wraps_around_on_two_gpus():
    m2, m4 = place(nmt(3), "k80x2"), place(nmt(3), "k80x4")
    assert [m2[f"encoder{k}"] for k in (1, 2, 3)] == ["gpu:0", "gpu:1", "gpu:0"]
    assert [m4[f"decoder{k}"] for k in (1, 2, 3)] == ["gpu:0", "gpu:1", "gpu:2"]
    assert (m2["att"], m2["sm"], m4["att"], m4["sm"]) == ("gpu:0", "gpu:0", "gpu:2", "gpu:2")
    assert m2["emb"] == m4["emb"] == "gpu:0"


def test_nmt_on_cpu_cluster_uses_the_gpus():
    # cpu+k80x2: the expert spreads layers over the GPUs; the CPU is left out
    m = place(nmt(2), "cpu+k80x2")
    assert m["encoder1"] == "gpu:0" and m["encoder2"] == "gpu:1" and "cpu:0" not in m.values()


def inception_block() -> CompGraph:
    # stem -> block1/{branch0, branch1, branch2} -> block1/concat -> head
    ops = [{"name": "stem", "compute": 1e-3, "scope": "stem/conv"}]
    for j in range(3):
        ops += [{"name": f"b{j}a", "compute": 1e-3, "scope": f"block1/branch{j}/conv_a"},
                {"name": f"b{j}b", "compute": 1e-3, "scope": f"block1/branch{j}/conv_b"}]
    ops += [{"name": "concat", "compute": 1e-3, "scope": "block1/concat"},
            {"name": "head", "compute": 1e-3, "scope": "logits"}]
    edges = [e for j in range(3) for e in (("stem", f"b{j}a"), (f"b{j}a", f"b{j}b"), (f"b{j}b", "concat"))]
    return graph(ops, [*edges, ("concat", "head")])


def test_vision_branches_on_their_own_devices():
    # k80x4: branch j -> gpu:j; concat follows its heaviest producer (equal bytes: the first,
    # branch0); head follows concat; the stem follows its consumer (first: branch0's conv_a)
    m = place(inception_block(), "k80x4")
    assert [m[f"b{j}{s}"] for j in range(3) for s in "ab"] == ["gpu:0", "gpu:0", "gpu:1", "gpu:1",
                                                                 "gpu:2", "gpu:2"]
    assert (m["stem"], m["concat"], m["head"]) == ("gpu:0", "gpu:0", "gpu:0")
    m2 = place(inception_block(), "k80x2")  # three branches on two GPUs: branch2 wraps to gpu:0
    assert [m2[f"b{j}a"] for j in range(3)] == ["gpu:0", "gpu:1", "gpu:0"]


def test_contiguous_equal_layer_split():
    # six layers, no branches: k80x2 -> layers 1-3 | 4-6; k80x4 -> r * 4 // 6 = 0,0,1,2,2,3
    ops = [{"name": f"l{k}", "compute": 1e-3, "scope": f"block{k}/conv"} for k in range(1, 7)]
    g = graph(ops, [(f"l{k}", f"l{k + 1}") for k in range(1, 6)])
    assert list(place(g, "k80x2").values()) == ["gpu:0"] * 3 + ["gpu:1"] * 3
    assert list(place(g, "k80x4").values()) == ["gpu:0", "gpu:0", "gpu:1", "gpu:2", "gpu:2", "gpu:3"]


def test_says_clearly_when_it_cannot_apply():
    g = graph([{"name": "a", "compute": 1.0, "scope": "foo"}, {"name": "b", "compute": 1.0}], [("a", "b")])
    with pytest.raises(PlacementError) as err:
        place(g, "k80x2")
    assert str(err.value) == ("expert placement needs layer scopes (encoder/layer{k}, decoder/layer{k}, "
                              "block{k}/branch{j} or layer{k}); this graph has none")


def test_kinds_pins_and_groups():
    # encoder2 pinned to gpu:0 (its layer's device is gpu:1); decoder1 has no GPU kernel on
    # cpu+k80x2 -> the CPU; att colocated with emb -> the group follows emb (first member) to gpu:0
    g = nmt(2)
    ops = []
    for i, name in enumerate(g.op_names):
        op = {"name": name, "compute": 1e-3, "scope": g.scope[i], "phase": g.phase[i]}
        if name == "encoder2":
            op["device"] = "gpu:0"
        if name == "decoder1":
            op["compute"] = {"cpu": 1e-3}
        if name in ("emb", "att"):
            op["colocate"] = "g"
        ops.append(op)
    g2 = graph(ops, [(g.op_names[s], g.op_names[d]) for s, d in zip(g.edge_src, g.edge_dst, strict=True)])
    m = place(g2, "cpu+k80x2")
    assert (m["encoder2"], m["decoder1"], m["emb"], m["att"]) == ("gpu:0", "cpu:0", "gpu:0", "gpu:0")


def test_keys():
    rule, keys = expert_keys(nmt(2))
    assert rule == "rnn"
    assert keys[:3] == [("embedding",), ("layer", 1), ("layer", 2)]
    assert keys[nmt(2).index["loss"]] is None


def test_pytorch_module_paths_are_layers():
    """The PyTorch importer's dotted module paths (nn.Transformer: ``t.encoder.layers.0.self_attn``, its backward
    under ``grad/``): ``layers.k`` is layer k, so encoder and decoder layer k share a device (the rnn rule)."""
    ops, chain = [{"name": "emb", "compute": 1e-3, "scope": "embed"}], ["emb"]
    for part in ("encoder", "decoder"):
        for k in range(3):
            for sub in ("self_attn", "linear1"):
                ops.append({"name": f"{part}{k}{sub}", "compute": 1e-3, "scope": f"t.{part}.layers.{k}.{sub}"})
                chain.append(f"{part}{k}{sub}")
    ops += [{"name": "head", "compute": 1e-3, "scope": "t.decoder.norm"},
            {"name": "g_dec1", "compute": 1e-3, "scope": "grad/t.decoder.layers.1.linear1", "phase": "backward"},
            {"name": "w_enc2", "compute": 1e-3, "scope": "t.encoder.layers.2.linear1.weight", "phase": "update"}]
    chain += ["head", "g_dec1", "w_enc2"]
    g = graph(ops, list(itertools.pairwise(chain)))
    rule, keys = expert_keys(g)
    assert rule == "rnn" and keys[g.index["encoder1self_attn"]] == ("layer", 1)
    m = place(g, "k80x2")
    # layers 0, 1, 2 on gpu:0, gpu:1, gpu:0; the embedding with the first; the norm after the last decoder
    # layer follows its producer; the backward and update ops carry their layer number themselves
    assert [m[f"encoder{k}linear1"] for k in range(3)] == ["gpu:0", "gpu:1", "gpu:0"]
    assert [m[f"decoder{k}self_attn"] for k in range(3)] == ["gpu:0", "gpu:1", "gpu:0"]
    assert (m["emb"], m["head"], m["g_dec1"], m["w_enc2"]) == ("gpu:0", "gpu:0", "gpu:1", "gpu:0")
    # GPT-2's ``h.k`` and nn.Sequential's ``blocks.k`` are numbered layers too: equal contiguous runs
    gpt = graph([{"name": f"op{k}", "compute": 1e-3, "scope": f"transformer.h.{k}.mlp"} for k in range(4)],
                [(f"op{k}", f"op{k + 1}") for k in range(3)])
    assert expert_keys(gpt) == ("layers", [("block", f"layer{k}") for k in range(4)])
    assert [place(gpt, "k80x2")[f"op{k}"] for k in range(4)] == ["gpu:0", "gpu:0", "gpu:1", "gpu:1"]


def test_split_file_without_importer(monkeypatch):
    monkeypatch.setitem(sys.modules, "engine.importers.dnn_partitioning", None)  # import fails
    with pytest.raises(PlacementError, match=r"needs engine\.importers\.dnn_partitioning\.load_expert_placement"):
        place(nmt(2), "k80x2", split="x.json")


def test_split_file_with_importer(monkeypatch):
    import types

    mod = types.ModuleType("engine.importers.dnn_partitioning")
    mod.load_expert_placement = lambda path, g, c: np.arange(g.num_ops) % 2
    monkeypatch.setitem(sys.modules, "engine.importers.dnn_partitioning", mod)
    m = place(nmt(2), "k80x2", split="x.json")
    assert list(m.values())[:3] == ["gpu:0", "gpu:1", "gpu:0"]
