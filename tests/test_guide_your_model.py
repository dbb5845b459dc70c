"""``docs/guide/your-model.md`` followed as written: its model file, then every ``placelab`` command of the shell
blocks of its steps 1–5 in order, in a temporary folder (the slide's figures included), then the app on the runs
they stored as a visitor sees it, with AppTest. A guide whose commands or app step stop working fails here. Step 6
(Hugging Face models, ONNX exports) is run by ``tests/engine/test_import_pytorch_hf.py``, its ``bert`` and ``vit``
commands included."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.figures.theme import SYSTEM_CHROMIUM
from engine.placement import load_placement
from engine.specs import load_cluster, load_graph
from engine.store.runs import RunStore
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


def _graphs_place_compare() -> None:
    """The sidebar and one of the Graphs, Place and Compare pages, picked by ``st.session_state["page"]``
    (AppTest's stand-in for the navigation)."""
    import streamlit as st

    from dashboard.app_pages import compare, graphs, place
    from dashboard.context import retain_widgets, sidebar

    retain_widgets()
    sidebar()
    {"place": place, "compare": compare}.get(st.session_state.get("page"), graphs).page()


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_the_guide_from_a_model_to_a_slide_runs_as_written(tmp_path, monkeypatch, capsys):
    text = GUIDE.read_text().split("\n## 6.")[0]
    model = blocks(text, "python")[0]
    (tmp_path / "models.py").write_text(model)
    commands = [line for block in blocks(text, "bash") for line in block.splitlines() if line.startswith("placelab ")]
    assert [c.split()[1] for c in commands] == ["graph", "graph", "compare", "plot", "place", "plot", "plot"]
    if not SYSTEM_CHROMIUM.exists():  # images need chromium: the same figures as HTML
        commands = [c.replace(".png", ".html") if c.startswith("placelab plot") else c for c in commands]
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
    # step 5's figures: the compare's three runs as bars, then the placed run's timeline and graph, slide-sized
    compared, placed = [r.id for r in runs[1:]][::-1], runs[0].id
    assert outputs[3].startswith(f"wrote tiny-makespan.{'png' if SYSTEM_CHROMIUM.exists() else 'html'}: "
                                 f"bars of {', '.join(compared)} ")
    assert f"timeline of {placed} " in outputs[5] and f"placement of {placed} " in outputs[6]
    if SYSTEM_CHROMIUM.exists():
        for name in ("tiny-makespan", "tiny-timeline", "tiny-graph"):
            assert _png_size(tmp_path / f"{name}.png") == (1600, 900)
    placement = load_placement(tmp_path / "tiny-placement.json", g, load_cluster("k80x2"))
    assert len(placement.devices) == g.num_ops
    _app_step(tmp_path, monkeypatch, g, runs)


def _app_step(folder: Path, monkeypatch, g, runs) -> None:
    """§5's app paragraph: Compare on ``PLACELAB_RUNS_DIR=lab-runs`` lists the runs the commands stored. Before it,
    a cross-check of what the figures show: ``tiny.json`` uploaded on Graphs and placed by m-etf on Place (on the
    sidebar's k80x2) makes the makespan the commands stored."""
    monkeypatch.setenv("PLACELAB_RUNS_DIR", str(folder / "lab-runs"))
    monkeypatch.setenv("PLACELAB_EXAMPLE_RUNS_DIR", str(folder / "no-examples"))
    app = AppTest.from_function(_graphs_place_compare, default_timeout=300).run()
    app.radio(key="graphs_source").set_value("Upload a file").run()
    app.file_uploader(key="graphs_upload").set_value(("tiny.json", (folder / "tiny.json").read_bytes(),
                                                      "application/json")).run()
    assert not app.exception and not app.error
    assert {m.label: m.value for m in app.metric}["Ops"] == f"{g.num_ops:,}"
    app.session_state["page"] = "place"
    app.run()
    app.multiselect(key="place_placers").set_value(["m-etf"]).run()
    app.button(key="place_run").click().run()
    assert not app.exception and not app.error
    # the app's m-etf on the uploaded graph is what `compare` and `place --save` stored (m-etf is deterministic)
    table = app.dataframe[0].value
    assert list(table["placer"]) == ["m-etf"]
    stored = [r.meta["metrics"]["makespan_s"] for r in runs if r.meta["placer"] == "m-etf"]
    assert len(stored) == 2
    assert [float(table["makespan (ms)"][0]) / 1e3] * 2 == pytest.approx(stored, rel=1e-3)
    assert len(app.get("plotly_chart")) == 1 + 3  # makespan bars; the timeline, load and memory of m-etf
    app.session_state["page"] = "compare"
    app.run()
    assert not app.exception
    assert sorted(app.dataframe[0].value["placer"]) == sorted(r.meta["placer"] for r in runs)
