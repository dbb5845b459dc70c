"""``docs/guide/your-model.md`` followed as written: its model file, then every ``placelab`` command of its
shell blocks in order, in a temporary folder. A guide whose commands stop working fails here."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from engine.placement import load_placement
from engine.runs import RunStore
from engine.specs import load_cluster, load_graph
from placelab.cli import main

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guide" / "your-model.md"


def blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def run(capsys, argv: list[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = 0 if exc.code is None else exc.code
    out, err = capsys.readouterr()
    return code, out, err


def test_the_guide_from_a_model_to_a_slide_runs_as_written(tmp_path, monkeypatch, capsys):
    text = GUIDE.read_text()
    (model,) = blocks(text, "python")
    (tmp_path / "models.py").write_text(model)
    commands = [line for block in blocks(text, "bash") for line in block.splitlines() if line.startswith("placelab ")]
    assert [c.split()[1] for c in commands] == ["graph", "graph", "compare", "place"]
    monkeypatch.chdir(tmp_path)
    outputs = []
    for command in commands:
        code, out, err = run(capsys, shlex.split(command)[1:])
        assert code == 0, (command, err)
        outputs.append(out)
    g = load_graph(tmp_path / "tiny.json")
    # step 2: one training step of batch 32 of the 64 → 256 → 10 perceptron
    assert g.name == "Tiny-train" and g.op_types.count("addmm") == 2
    first = g.op_types.index("addmm")
    assert g.output_bytes[first] == 32 * 256 * 4
    assert {"forward", "backward", "update"} <= set(g.phase)
    # step 3: the lines the guide tells the reader to check
    assert "costs: gpu: K80 roofline, with columns for K80, P100, V100, A100, H100" in outputs[1]
    assert "its devices run the gpu@V100 times" in outputs[1]
    # step 4: a row per placer, each stored; step 5: the placement file and its stored run
    for placer in ("single-device", "m-etf", "metis"):
        assert re.search(rf"^{placer}\s+\d", outputs[2], flags=re.M), outputs[2]
    runs = RunStore(tmp_path / "lab-runs").list()
    assert sorted(r.meta["placer"] for r in runs) == ["m-etf", "m-etf", "metis", "single-device"]
    placement = load_placement(tmp_path / "tiny-placement.json", g, load_cluster("k80x2"))
    assert len(placement.devices) == g.num_ops
