"""``docs/guide/your-model.md`` followed as written: its model file, then every ``placelab`` command of its
shell blocks in order, in a temporary folder, then its app step (§5) as a visitor does it, with AppTest. A guide
whose commands or app step stop working fails here."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

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


def _graphs_place_compare() -> None:
    """The sidebar and one of the Graphs, Place and Compare pages, picked by ``st.session_state["page"]``
    (AppTest's stand-in for the navigation)."""
    import streamlit as st

    from dashboard.app_pages import compare, graphs, place
    from dashboard.context import retain_widgets, sidebar

    retain_widgets()
    sidebar()
    {"place": place, "compare": compare}.get(st.session_state.get("page"), graphs).page()


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
    _app_step(tmp_path, monkeypatch, g, runs)


def _app_step(folder: Path, monkeypatch, g, runs) -> None:
    """§5 in the app: upload ``tiny.json`` on Graphs, run m-etf on Place (on the k80x2 of the sidebar), then
    Compare on ``PLACELAB_RUNS_DIR=lab-runs`` lists the runs the commands stored."""
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
