"""``placelab graph import`` (issue #35): a user's PyTorch or Keras code, a ``.keras`` file and a SavedModel
folder become ``placelab.graph/1`` files; bad input gets one line and exit 2, nothing overwritten.

Numbers are worked out by hand for a two-layer perceptron (8 → 16 → 4, batch 32): its first ``addmm``
does 2·32·8·16 FLOPs and reads and writes (16 + 32·8 + 8·16 + 32·16)·4 bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import run_cli

from engine.costmodel import K80, V100, op_time
from engine.specs import load_graph

MODELS = '''
import torch


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = torch.nn.Linear(8, 16)
        self.head = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.head(torch.relu(self.encoder(x)))


def tiny():
    return Tiny()


def keras_mlp():
    import keras
    return keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(4)])


def broken():
    raise RuntimeError("no weights here\\nsecond line")


def not_a_model():
    return 42
'''


@pytest.fixture
def models(tmp_path: Path) -> Path:
    (tmp_path / "models.py").write_text(MODELS)
    return tmp_path / "models.py"


def phases(g) -> dict:
    return {p: sum(1 for q in g.phase if q == p) for p in ("forward", "backward", "update")}


def test_pytorch_code_becomes_a_training_step_or_a_forward_pass(capsys, models, tmp_path):
    out = tmp_path / "tiny.json"
    code, stdout, err = run_cli(capsys, "graph", "import", f"{models}:tiny", "-o", str(out), "--input-shape", "8",
                                "--json")
    assert code == 0, err
    info = json.loads(stdout)
    g = load_graph(out)
    assert info["ops"] == g.num_ops and g.name == "Tiny-train"
    # forward: x, t(W1), addmm, relu, t(W2), addmm; every parameter is updated, colocated with its update
    assert phases(g)["forward"] >= 6 and phases(g)["backward"] > 0 and phases(g)["update"] >= 4
    for p in ("encoder.weight", "encoder.bias", "head.weight", "head.bias"):
        assert sum(1 for c in g.colocate if c == p) >= 2
    forward = load_graph(_imported(capsys, models, tmp_path, "--inference"))
    assert forward.name == "Tiny-infer" and set(phases(forward)) and phases(forward)["backward"] == 0
    assert phases(forward)["update"] == 0 and forward.op_types.count("addmm") == 2
    first = forward.op_types.index("addmm")
    moved = (16 + 32 * 8 + 8 * 16 + 32 * 16) * 4
    assert forward.compute_on("gpu", "K80")[first] == pytest.approx(op_time(2 * 32 * 8 * 16, moved, K80))
    assert forward.compute_on("gpu", "V100")[first] == pytest.approx(op_time(2 * 32 * 8 * 16, moved, V100))


def _imported(capsys, models: Path, tmp_path: Path, *extra: str) -> Path:
    out = tmp_path / f"g{len(list(tmp_path.glob('g*.json')))}.json"
    code, _, err = run_cli(capsys, "graph", "import", f"{models}:tiny", "-o", str(out), "--input-shape", "8", *extra)
    assert code == 0, err
    return out


def test_keras_code_a_keras_file_and_a_savedmodel_folder(capsys, models, tmp_path):
    keras = pytest.importorskip("keras")
    import importlib.util

    spec = importlib.util.spec_from_file_location("user_models_keras", models)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    model = mod.keras_mlp()
    model.save(tmp_path / "mlp.keras")
    model.export(str(tmp_path / "mlp_saved"))
    del keras
    runs = {}
    for what, source, extra in (("code", f"{models}:keras_mlp", ()), ("file", str(tmp_path / "mlp.keras"), ()),
                                ("file-infer", str(tmp_path / "mlp.keras"), ("--inference",)),
                                ("saved", str(tmp_path / "mlp_saved"), ())):
        out = tmp_path / f"{what}.json"
        code, _, err = run_cli(capsys, "graph", "import", source, "-o", str(out), "--batch", "16", *extra)
        assert code == 0, (what, err)
        assert err == "", (what, err)  # no TensorFlow start-up lines
        runs[what] = load_graph(out)
    # the same model from its code and from its file: the same training step
    assert phases(runs["code"]) == phases(runs["file"]) and runs["code"].num_ops == runs["file"].num_ops
    # a SavedModel holds the exported forward pass, as --inference traces it; batch 16 sizes its input
    assert phases(runs["saved"])["backward"] == phases(runs["file-infer"])["backward"] == 0
    assert runs["saved"].op_types.count("MatMul") == runs["file-infer"].op_types.count("MatMul") == 2
    matmul = runs["saved"].op_types.index("MatMul")
    assert runs["saved"].output_bytes[matmul] == 16 * 16 * 4  # batch 16 × 16 units × 4 bytes


@pytest.mark.parametrize(("args", "message"), [
    (("{models}:broken",), "error: {models}:broken failed: RuntimeError: no weights here"),
    (("{models}:not_a_model",), "error: {models}:not_a_model returned an object of type 'int', not a "
     "torch.nn.Module or a keras.Model"),
    (("{models}:nothere",), "error: {models} defines no function 'nothere'"),
    (("{models}:tiny",), "error: a PyTorch module needs the shape of each input: --input-shape 3,224,224"),
    (("{models}:tiny", "--input-shape", "8,a"), "error: input shape '8,a': dimensions must be whole numbers"),
    (("{models}:tiny", "--input-shape", "8:int8"), "error: input shape '8:int8': dtype must be one of"),
    (("{tmp}/none.py:f",), "error: {tmp}/none.py: no such Python file (expected FILE.py:FACTORY)"),
    (("{tmp}",), "error: {tmp} is a folder without saved_model.pb"),
    (("{tmp}/g.json", "--measure"), "error: --measure needs the model's code (FILE.py:FACTORY)"),
])
def test_bad_sources_get_one_line_and_exit_2(capsys, models, tmp_path, args, message):
    (tmp_path / "g.json").write_text(json.dumps({"schema": "placelab.graph/1", "name": "g",
                                                 "ops": [{"name": "a", "compute": 1.0}], "edges": []}))
    fill = {"models": str(models), "tmp": str(tmp_path)}
    code, out, err = run_cli(capsys, "graph", "import", *(a.format(**fill) for a in args), "-o",
                             str(tmp_path / "out.json"))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith(message.format(**fill)), err
    assert not (tmp_path / "out.json").exists()


def test_an_existing_output_is_kept_without_force(capsys, models, tmp_path):
    out = tmp_path / "tiny.json"
    out.write_text("my notes")
    code, _, err = run_cli(capsys, "graph", "import", f"{models}:tiny", "-o", str(out), "--input-shape", "8")
    assert code == 2 and err.strip() == f"error: {out} exists: pass --force to replace it"
    assert out.read_text() == "my notes"
    code, _, err = run_cli(capsys, "graph", "import", f"{models}:tiny", "-o", str(out), "--input-shape", "8",
                           "--force")
    assert code == 0 and load_graph(out).name == "Tiny-train"


def test_a_measured_graph_runs_on_the_cpu_and_says_so_on_a_gpu_preset(capsys, models, tmp_path):
    out = tmp_path / "measured.json"
    code, stdout, err = run_cli(capsys, "graph", "import", f"{models}:tiny", "-o", str(out), "--input-shape", "8",
                                "--measure")
    assert code == 0, err
    assert "next: placelab compare" in stdout and "-c local" in stdout
    g = load_graph(out)
    assert g.base_kinds == ("cpu",) and (g.compute_for_kind("cpu") >= 0).all()
    code, _, err = run_cli(capsys, "compare", str(out), "-c", "k80x2", "--placers", "single-device", "--runs-dir",
                           str(tmp_path / "runs"))
    assert code == 2 and "can run on no device of 'k80x2' (gpu)" in err


def test_every_graph_argument_and_the_app_upload_take_keras_files_and_savedmodel_folders(tmp_path):
    keras = pytest.importorskip("keras")
    from engine.specs import load_uploaded_graph

    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(4)])
    model.save(tmp_path / "mlp.keras")
    model.export(str(tmp_path / "mlp_saved"))
    from_file = load_graph(tmp_path / "mlp.keras")
    uploaded = load_uploaded_graph("mlp.keras", (tmp_path / "mlp.keras").read_bytes())
    assert from_file.content_hash == uploaded.content_hash and phases(from_file)["update"] > 0
    batch = load_graph(f"{tmp_path / 'mlp.keras'}?batch_size=8")
    matmul = batch.op_types.index("MatMul")
    assert batch.output_bytes[matmul] == 8 * 16 * 4 and from_file.output_bytes[matmul] == 32 * 16 * 4
    assert load_graph(tmp_path / "mlp_saved").op_types.count("MatMul") == 2
