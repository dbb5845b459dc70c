"""*Open in Perfetto* on the Runs page: the trace handed to the user's own Perfetto UI."""

from __future__ import annotations

import json

import pytest
from test_pages import page_app

from dashboard.perfetto import DEFAULT_URL, perfetto_url
from engine.store.records import export_trace


def _perfetto(app) -> list:
    return [e for e in app.get("bidi_component") if e.proto.component_name == "placelab.open_in_perfetto"]


@pytest.mark.parametrize(("value", "expected"), [
    (None, DEFAULT_URL), ("", DEFAULT_URL), ("http://localhost:10000", "http://localhost:10000"),
    ("https://perfetto.example.org/ui/", "https://perfetto.example.org/ui/"), ("file:///tmp/x.html", None),
    ("ui.perfetto.dev", None), ("javascript:alert(1)", None)])
def test_the_perfetto_url_is_the_setting_when_it_is_an_http_url(value, expected, monkeypatch):
    if value is None:
        monkeypatch.delenv("PLACELAB_PERFETTO_URL", raising=False)
    else:
        monkeypatch.setenv("PLACELAB_PERFETTO_URL", value)
    assert perfetto_url() == expected


def test_runs_page_hands_the_runs_trace_to_perfetto(stored_runs, tmp_path, monkeypatch):
    store, ids, _ = stored_runs
    monkeypatch.setenv("PLACELAB_PERFETTO_URL", "http://127.0.0.1:9001/ui/")
    app = page_app("runs").run()
    assert _perfetto(app) == []  # the newest run (an eval) has no placement, so no trace
    app.selectbox(key="runs_selected").set_value(ids[1]).run()
    assert not app.exception and not app.error
    (button,) = _perfetto(app)
    data = json.loads(button.proto.json)
    export_trace(store.load(ids[1]), str(tmp_path / "trace.json"))
    assert data["trace"] == (tmp_path / "trace.json").read_text(encoding="utf-8")  # the download's bytes
    assert any(e.get("ph") == "X" for e in json.loads(data["trace"])["traceEvents"])
    assert data["url"] == "http://127.0.0.1:9001/ui/" and data["origin"] == "http://127.0.0.1:9001"
    assert data["file_name"] == f"{ids[1]}-trace.json" and ids[1] in data["title"]


def test_a_bad_setting_or_a_huge_trace_says_why_there_is_no_button(stored_runs, monkeypatch):
    _, ids, _ = stored_runs
    monkeypatch.setenv("PLACELAB_PERFETTO_URL", "file:///etc/passwd")
    app = page_app("runs").run()
    app.selectbox(key="runs_selected").set_value(ids[1]).run()
    assert _perfetto(app) == [] and not app.exception
    assert any("PLACELAB_PERFETTO_URL is no http(s) URL" in c.value for c in app.caption)
    monkeypatch.setattr("dashboard.perfetto.MAX_TRACE_BYTES", 100)
    monkeypatch.delenv("PLACELAB_PERFETTO_URL")
    app.run()
    assert _perfetto(app) == [] and not app.exception
    assert any("the page hands over; download it and open it in Perfetto" in c.value for c in app.caption)
