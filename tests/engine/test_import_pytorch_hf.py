"""PyTorch importer on Hugging Face models (issue 57): GPT-2, BERT, a Llama-style decoder and ViT, each built
from a tiny config with random weights (nothing is downloaded), returning ``ModelOutput`` dicts.

Independent figures: each graph's parameters are the model's own (``sum(p.numel())``, the tied GPT-2
embedding counted once); FLOPs of the ops named below are worked out from the configs:

* GPT-2's language-model head, hidden (B·T × E) times the tied embedding (E × V): ``2·B·T·E·V``;
* ViT's patch embedding, a P × P convolution with stride P over 3 channels: ``2·B·(S/P)²·H·3·P²``.
"""

from __future__ import annotations

import json
import re
import shlex
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from engine.errors import GraphError

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from engine.importers.pytorch_graph import graph_from_torch, trace_step  # noqa: E402
from engine.importers.tensorflow_graph import roofline_cost  # noqa: E402
from engine.model_import import import_model  # noqa: E402
from placelab.cli import main  # noqa: E402

B, T = 2, 8  # rows, tokens per row
E, V = 32, 100  # GPT-2 width and vocabulary


class _Capture:
    def __call__(self, flops, touched):
        self.flops = np.array(flops)
        return roofline_cost(flops, touched)


def _gpt2(**extra):
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=1, n_embd=E, n_head=2, vocab_size=V, n_positions=16, **extra)
    return transformers.GPT2LMHeadModel(cfg)


def _ids():
    return (torch.randint(0, V, (B, T)),)


def _parameters(g) -> int:
    """Elements of the graph's Parameter ops (float32)."""
    return int(sum(b for b, t in zip(g.persistent_bytes, g.op_types, strict=True) if t == "Parameter") // 4)


def _updated(g) -> set[str]:
    return {c for c, p in zip(g.colocate, g.phase, strict=True) if p == "update" and c}


def test_gpt2_imports_as_a_training_step_of_its_logits():
    model, cap = _gpt2(), _Capture()
    g = graph_from_torch(model, _ids(), cost=cap)
    assert trace_step(model, _ids()).via == "export"
    assert _parameters(g) == sum(p.numel() for p in model.parameters())  # 16,480; lm_head tied to wte
    names = [k for k, _ in model.named_parameters()]
    assert _updated(g) == set(names) and "transformer.wte.weight" in names
    assert {"forward", "backward", "update"} <= set(g.phase)
    head = [i for i, (t, s) in enumerate(zip(g.op_types, g.scope, strict=True)) if t == "mm" and s == "lm_head"]
    assert [cap.flops[i] for i in head] == [2 * B * T * E * V]


def test_gpt2_without_its_cache_imports():
    """``use_cache=False`` sends transformers' mask code through a check of the positions' values, where the
    eager trace stopped (issue 57); the exported program resolves it."""
    model = _gpt2(use_cache=False)
    g = graph_from_torch(model, _ids())
    assert _parameters(g) == sum(p.numel() for p in model.parameters())


class _WithLabels(torch.nn.Module):
    def __init__(self, model) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(ids, labels=ids)


def _typed(g) -> Counter:
    return Counter(zip(g.op_types, g.phase, strict=True))


def test_gpt2_given_labels_trains_on_its_own_cross_entropy():
    """With ``labels`` the output holds ``loss``: the step differentiates the model's cross-entropy, which the
    default (its logits' mean square) has none of."""
    own = _typed(graph_from_torch(_WithLabels(_gpt2()), _ids()))
    assert own[("nll_loss_forward", "forward")] == 1 and own[("nll_loss_backward", "backward")] == 1
    assert _typed(graph_from_torch(_gpt2(), _ids()))[("nll_loss_forward", "forward")] == 0


@pytest.fixture(scope="module")
def bert():
    torch.manual_seed(0)
    return transformers.BertModel(transformers.BertConfig(
        num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64, vocab_size=V,
        max_position_embeddings=16))


def test_bert_reads_its_last_hidden_state_or_the_named_output(bert):
    """BertModel returns ``last_hidden_state`` first: its pooler gets no gradient, unless the loss reads
    ``pooler_output``."""
    g = graph_from_torch(bert, _ids())
    assert _parameters(g) == sum(p.numel() for p in bert.parameters())
    assert "pooler.dense.weight" not in _updated(g) and "encoder.layer.0.output.dense.weight" in _updated(g)
    assert "pooler.dense.weight" in _updated(graph_from_torch(bert, _ids(), output_key="pooler_output"))


def test_llama_style_decoder_with_grouped_query_attention():
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(
        num_hidden_layers=1, hidden_size=32, num_attention_heads=4, num_key_value_heads=2, intermediate_size=64,
        vocab_size=V, max_position_embeddings=16))
    g = graph_from_torch(model, _ids())
    assert _parameters(g) == sum(p.numel() for p in model.parameters())
    assert _updated(g) == {k for k, _ in model.named_parameters()}
    assert {"model.layers.0.self_attn.k_proj", "grad/model.layers.0.mlp.down_proj"} <= set(g.scope)


def test_vit_patch_embedding_flops():
    torch.manual_seed(0)
    size, patch, hidden = 16, 8, 32
    model = transformers.ViTForImageClassification(transformers.ViTConfig(
        image_size=size, patch_size=patch, num_hidden_layers=1, hidden_size=hidden, num_attention_heads=2,
        intermediate_size=64, num_labels=5))
    cap = _Capture()
    g = graph_from_torch(model, (torch.randn(B, 3, size, size),), cost=cap)
    assert _parameters(g) == sum(p.numel() for p in model.parameters())
    conv = g.op_types.index("convolution")
    assert g.scope[conv] == "vit.embeddings.patch_embeddings.projection"
    assert cap.flops[conv] == 2 * B * (size // patch) ** 2 * hidden * 3 * patch * patch


FACTORY = '''
from transformers import GPT2Config, GPT2LMHeadModel


def gpt2():
    return GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=100, n_positions=16))
'''


def test_import_model_passes_the_output_key(tmp_path):
    (tmp_path / "hf.py").write_text(FACTORY)
    source = f"{tmp_path / 'hf.py'}:gpt2"
    g = import_model(source, batch=B, input_shapes=[f"{T}:int64"], output_key="logits")
    assert _parameters(g) == 16_480  # wte 100·32 + wpe 16·32 + one block 12,704 + ln_f 64
    with pytest.raises(GraphError) as err:
        import_model(source, batch=B, input_shapes=[f"{T}:int64"], output_key="probs")
    assert str(err.value) == "'GPT2LMHeadModel' returns no tensor 'probs': its tensor outputs are logits"


GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "your-model.md"


def test_the_guides_hugging_face_models_import_as_written(tmp_path, monkeypatch, capsys):
    """``docs/guide/your-model.md`` §6: its model file and its commands, with the op counts it states; GPT-2
    small's are measured in ``benchmarks/bench_hf_import.py`` instead (a 124M-parameter model)."""
    section = GUIDE.read_text().split("**Hugging Face")[1].split("**timm.**")[0]
    (tmp_path / "hf_models.py").write_text(re.search(r"```python\n(.*?)```", section, re.S).group(1))
    commands = [shlex.split(line) for line in re.search(r"```sh\n(.*?)```", section, re.S).group(1).splitlines()
                if line.startswith("placelab graph import")]
    monkeypatch.chdir(tmp_path)
    ops = {}
    for argv in commands:
        factory = argv[3].split(":")[1]
        if factory.startswith("gpt2"):
            continue
        capsys.readouterr()
        try:
            main([*argv[1:], "--json"])
        except SystemExit as exc:
            assert not exc.code, capsys.readouterr().err
        ops[factory] = json.loads(capsys.readouterr().out)["ops"]
    assert set(ops) == {"bert", "vit"}
    assert f"{ops['bert']} and {ops['vit']} ops for `gpt2`, `bert` and `vit`" in " ".join(section.split())
