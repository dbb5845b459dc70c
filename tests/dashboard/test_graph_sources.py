"""The Graphs page's spec box is not a way to read server files (issue 18)."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

TIMEOUT = 300  # generous: only catches a hang; a busy machine must not fail a test on a clock (issue 34)


def test_spec_box_refuses_a_server_path(empty_runs, tmp_path):
    secret = tmp_path / "secret.json"  # a valid graph file on the server
    secret.write_text(json.dumps({"schema": "placelab.graph/1", "name": "secret",
                                  "ops": [{"name": "a", "compute": 1.0}], "edges": []}))
    app = AppTest.from_string("from dashboard.app_pages import graphs\ngraphs.page()\n", default_timeout=TIMEOUT).run()
    app.radio(key="graphs_source").set_value("Generator spec").run()
    app.text_input(key="graphs_spec").set_value(str(secret)).run()
    app.button(key="graphs_use").click().run()
    assert not app.exception
    from dashboard.input_guard import PATH_REFUSED

    assert [e.value for e in app.error] == [PATH_REFUSED]  # the app's one answer to a path (dashboard/input_guard.py)
    # before: the file was loaded and summarized; now the page shows no graph of it
    assert all("secret" not in h.value for h in app.subheader)
    assert all("secret" not in m.value for m in [*app.markdown, *app.caption])
    app.text_input(key="graphs_spec").set_value("gen:random?ops=9&seed=1").run()
    app.button(key="graphs_use").click().run()
    assert not app.error
    assert {m.label: m.value for m in app.metric}["Ops"] == "9"


def test_a_long_error_is_one_short_alert_with_escapes_shown(empty_runs):
    """An error holding a megabyte or terminal escapes is shown as the CLI prints it: one line of at most
    ``MAX_LINE`` characters, control characters escaped (issue 34; before, the app showed a million-character
    alert). The parameter's name is quoted cut to 80 characters, start and end kept (issue 54)."""
    from engine.errors import MAX_LINE

    spec = "gen:random?\x1b]0;owned\x07" + "z" * 200_000 + "=1"
    app = AppTest.from_string("from dashboard.app_pages import graphs\ngraphs.page()\n", default_timeout=TIMEOUT).run()
    app.radio(key="graphs_source").set_value("Generator spec").run()
    app.text_input(key="graphs_spec").set_value(spec).run()
    app.button(key="graphs_use").click().run()
    assert not app.exception
    (alert,) = [e.value for e in app.error]
    assert len(alert) <= MAX_LINE
    assert alert.startswith("gen:random has no parameter '\\x1b]0;owned\\x07zzz")
    assert alert.endswith("zzz' (parameters: ops, degree, seed, window, name)")
    quoted = alert.split("no parameter ", 1)[1].split(" (parameters", 1)[0]
    # 80 characters (53, "…", 26), two quotes, and 3 more for each of the two controls written as \\x1b, \\x07
    assert len(quoted) == 80 + 2 + 2 * 3 and quoted.count("…") == 1
    assert "\x1b" not in alert and "\x07" not in alert
