"""The Graphs page's spec box is not a way to read server files (issue 18)."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

TIMEOUT = 120


def test_spec_box_refuses_a_server_path(empty_runs, tmp_path):
    secret = tmp_path / "secret.json"  # a valid graph file on the server
    secret.write_text(json.dumps({"schema": "placelab.graph/1", "name": "secret",
                                  "ops": [{"name": "a", "compute": 1.0}], "edges": []}))
    app = AppTest.from_string("from dashboard.app_pages import graphs\ngraphs.page()\n", default_timeout=TIMEOUT).run()
    app.radio(key="graphs_source").set_value("Generator spec").run()
    app.text_input(key="graphs_spec").set_value(str(secret)).run()
    app.button(key="graphs_use").click().run()
    assert not app.exception
    assert [e.value for e in app.error] == ["type a generator spec gen:NAME?key=value&... (to load a file, upload it)"]
    # before: the file was loaded and summarized; now the page shows no graph of it
    assert all("secret" not in h.value for h in app.subheader)
    assert all("secret" not in m.value for m in [*app.markdown, *app.caption])
    app.text_input(key="graphs_spec").set_value("gen:random?ops=9&seed=1").run()
    app.button(key="graphs_use").click().run()
    assert not app.error
    assert {m.label: m.value for m in app.metric}["Ops"] == "9"
