"""The Graphs page's upload takes the model formats of ``placelab graph import`` (issue #35): an ONNX file and a
``.keras`` file become the current graph as a visitor drops them in, and a broken model file is one alert that
leaves the current graph as it was. No uploaded code ever runs (the formats are data)."""

from __future__ import annotations

from collections import Counter

import pytest
from streamlit.testing.v1 import AppTest

from tests.engine.test_import_onnx import _mlp

TIMEOUT = 300  # generous: only catches a hang; a busy machine must not fail a test on a clock (issue 34)


def _graphs_page() -> AppTest:
    app = AppTest.from_string("from dashboard.app_pages import graphs\ngraphs.page()\n", default_timeout=TIMEOUT).run()
    return app.radio(key="graphs_source").set_value("Upload a file").run()


def _upload(app: AppTest, name: str, data: bytes) -> AppTest:
    return app.file_uploader(key="graphs_upload").set_value((name, data, "application/octet-stream")).run()


def _metrics(app: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in app.metric}


def _current_graph(app: AppTest):
    from dashboard import state as keys

    return app.session_state[keys.GRAPH]


def test_an_onnx_upload_is_a_training_step_counted_by_hand(empty_runs):
    """The ONNX MLP of ``tests/engine/test_import_onnx.py`` (Gemm 8→16, Relu, Gemm 16→4): forward 1 Input + 2 Gemm
    + 1 Relu, 4 Variables, backward 1 GemmGrad + 2 GemmWeightGrad + 1 ReluGrad, 4 SGDUpdate = 16 ops."""
    app = _upload(_graphs_page(), "mlp.onnx", _mlp().SerializeToString())
    assert not app.exception and not app.error
    assert _metrics(app)["Ops"] == "16"
    assert "Graph: mlp" in [s.value for s in app.subheader]
    assert any(c.value.startswith("Source: upload: mlp.onnx") for c in app.caption)
    g = _current_graph(app)
    assert Counter(g.op_types) == {"Input": 1, "Gemm": 2, "Relu": 1, "Variable": 4, "GemmGrad": 1,
                                   "GemmWeightGrad": 2, "ReluGrad": 1, "SGDUpdate": 4}


def test_a_keras_upload_is_the_file_the_cli_reads(empty_runs, tmp_path):
    keras = pytest.importorskip("keras")
    from engine.specs import load_graph

    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(4)])
    model.save(tmp_path / "mlp.keras")
    app = _upload(_graphs_page(), "mlp.keras", (tmp_path / "mlp.keras").read_bytes())
    assert not app.exception and not app.error
    g, on_disk = _current_graph(app), load_graph(tmp_path / "mlp.keras")
    assert g.op_names == on_disk.op_names and g.num_ops > 0
    assert _metrics(app)["Ops"] == f"{on_disk.num_ops:,}"
    # a training step of batch 32 (the format's default): the first Dense kernel 8×16 float32 is persistent
    assert {"forward", "backward", "update"} <= set(g.phase)
    assert 8 * 16 * 4 in g.persistent_bytes


def test_a_broken_model_upload_is_one_alert_and_keeps_the_current_graph(empty_runs):
    app = _upload(_graphs_page(), "mlp.onnx", _mlp().SerializeToString())
    before = _current_graph(app)
    app = _upload(app, "broken.onnx", _mlp().SerializeToString()[:40])
    assert not app.exception
    (alert,) = [e.value for e in app.error]
    assert "broken.onnx" in alert and "\n" not in alert and "/tmp" not in alert
    assert _current_graph(app) is before


def test_a_graph_without_sizes_says_unknown_rather_than_zero_bytes(empty_runs):
    """A DOPPLER text file gives compute and transfer times but no byte counts (``memory_known`` False): the Graphs
    page and the Place page's table and headline numbers say "unknown" where they used to show "0 B" (issue #33)."""
    from tests.engine.test_import_doppler import SAMPLE

    app = _upload(_graphs_page(), "chain.txt", SAMPLE.encode())
    assert not app.exception and not app.error
    assert _metrics(app)["Persistent memory"] == "unknown"
    assert any(c.value.startswith("Memory: unknown (the source gives no sizes") for c in app.caption)
    graph = _current_graph(app)
    place = AppTest.from_string("from dashboard.app_pages import place\nplace.page()\n", default_timeout=TIMEOUT)
    place.session_state["ctx_graph"] = graph
    place.run()
    place.multiselect(key="place_placers").set_value(["single-device", "round-robin"]).run()
    place.button(key="place_run").click().run()
    assert not place.exception and not place.error
    table = place.dataframe[0].value  # no sizes: "unknown" in every cell (tests/dashboard/test_table_view.py)
    assert (table[["peak memory (GB)", "communication (MB)"]] == "unknown").all().all()
    assert {m.label: m.value for m in place.metric}["Peak memory (max)"] == "unknown"
    assert {m.label: m.value for m in place.metric}["Communication"] == "unknown"
    # a graph with sizes keeps them: round-robin on the ONNX MLP moves bytes between its two GPUs
    place.session_state["ctx_graph"] = _current_graph(_upload(_graphs_page(), "mlp.onnx", _mlp().SerializeToString()))
    place.button(key="place_run").click().run()
    table = place.dataframe[0].value
    assert table["peak memory (GB)"].notna().all() and table["communication (MB)"][0] == 0
    assert table["communication (MB)"][1] > 0
