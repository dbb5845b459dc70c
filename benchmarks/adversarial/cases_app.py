"""Cases of the class ``app`` (the Graphs page's spec box and upload, the Place form, the sidebar's simulation
settings), and :func:`play`, the worker that plays one app case through Streamlit's ``AppTest`` in its own
process (``adversarial_pass.py --app-case FILE``) and prints what the page showed.

An app case is data: ``app={"kind": ..., ...}`` with kind ``spec`` (a generator spec typed in the Graphs
page), ``upload`` (a file uploaded there, base64), ``place`` (the Place form's seed, budget and parameters),
``sim`` (a sidebar simulation setting, then Place) or ``link`` (the app opened with a link's parameters).
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

from .fixtures import ESC, TEXT_SEEDS, Case, G, Outcome, chain, malicious_pickle, no_pwned

#: The app's frame around the Graphs page, as dashboard/app.py draws it: the link read first, written last.
LINKED_PAGE = """
from dashboard.app_pages import graphs
from dashboard.context import retain_widgets, sidebar
from dashboard.widgets.link import read_link, show_link_warnings, write_link

read_link()
retain_widgets()
sidebar()
show_link_warnings()
graphs.page()
write_link()
"""
TIMEOUT = 240  # each AppTest run: only catches a hang (the case's own timeout is shorter)


def app() -> Iterator[Case]:
    """The Graphs page's spec box and upload, the Place form and the sidebar with hostile values."""
    case = partial(Case, "app")
    specs = ["gen:random?ops=10000000&degree=1e15", "gen:nmt?length=1000000000", "", "/etc/passwd",
             f"gen:random?ops=5&name={ESC}", "gen:random?ops=" + "9" * 5000, "upload:nosuch",
             "gen:random?ops=10&seed=4294967295"]
    for s in specs:
        yield case(f"graph spec {s[:50]!r}", [], app={"kind": "spec", "spec": s})
    uploads = {
        "empty.json": b"", "random.bin": os.urandom(3000),
        "cycle.json": chain(100_000, cycle=True).encode(),
        "long-names.json": chain(3, lambda i: "n" * 300_000 + str(i), cycle=True).encode(),
        "glued.txt": TEXT_SEEDS["doppler-text"].replace(b"1 2,3,3", b"16,6 2,3,3"),
        "laughs.graphml": b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">'
                          b'<!ENTITY b "&a;&a;&a;&a;&a;&a;">]>'
                          b'<graphml><graph edgedefault="directed"><node id="&b;"/></graph></graphml>',
        "pickle.pt": malicious_pickle(), f"../../{ESC}.json": TEXT_SEEDS["placelab"], "nested.json":
            b'{"schema": "placelab.graph/1", "ops": ' + b"[" * 200_000 + b"]" * 200_000 + b"}",
    }
    for name, data in uploads.items():
        yield case(f"upload {name[:40]!r}", [], app={"kind": "upload", "name": name,
                                                     "data": base64.b64encode(data).decode()}, check=no_pwned)
    for placer, seed, budget, params in [("local-search", 0, 2**63 - 1, {}), ("critical-path", 0, 2_000_000_000, {}),
                                         ("kahip", 2**32 - 1, 0, {}), ("rnn", 0, 2, {"hidden": 10**10}),
                                         ("local-search", 0, 0, {"evaluations": 10**11})]:
        yield case(f"place form {placer} seed {seed} budget {budget} {params}", [],
                   app={"kind": "place", "placer": placer, "seed": seed, "budget": budget, "params": params})
    for setting, value in [("noise", 1e300), ("runs", 10**12), ("copy_bus_capacity", 0.0)]:
        yield case(f"sidebar {setting}={value}", [], app={"kind": "sim", "setting": setting, "value": value})


def refused(o: Outcome, d: Path, data: Any) -> str | None:
    """A check: the page said no (a warning or an error alert) to what the case gave it."""
    r = json.loads([ln for ln in o.out.splitlines() if ln.startswith("{")][-1])
    return None if r["errors"] or r.get("warnings") else "the page took it without a warning or an error"


# ---- the worker -------------------------------------------------------------------------------------------


def click(app: Any, key: str) -> None:
    """Click the button ``key`` unless the page disabled it (a visitor could not click it either)."""
    button = app.button(key=key)
    if not button.disabled:
        button.click().run()


def _graphs_page(spec: dict) -> Any:
    from streamlit.testing.v1 import AppTest

    app = AppTest.from_string("from dashboard.app_pages import graphs\ngraphs.page()\n",
                              default_timeout=TIMEOUT).run()
    if spec["kind"] == "spec":
        app.radio(key="graphs_source").set_value("Generator spec").run()
        app.text_input(key="graphs_spec").set_value(spec["spec"]).run()
        click(app, "graphs_use")
    else:
        app.radio(key="graphs_source").set_value("Upload a file").run()
        data = base64.b64decode(spec["data"])
        app.file_uploader(key="graphs_upload").set_value((spec["name"], data, "application/octet-stream")).run()
    return app


def _place_page(spec: dict) -> Any:
    from streamlit.testing.v1 import AppTest

    from dashboard import state as keys
    from engine.specs import load_graph

    sidebar = spec["kind"] == "sim"
    script = ("from dashboard.context import sidebar\nfrom dashboard.app_pages import place\nsidebar()\nplace.page()\n"
              if sidebar else "from dashboard.app_pages import place\nplace.page()\n")
    app = AppTest.from_string(script, default_timeout=TIMEOUT)
    app.session_state[keys.GRAPH] = load_graph(G)
    app.run()
    if sidebar:
        app.selectbox(key=keys.SIM_MODE).set_value("work_conserving").run()
        app.number_input(key=keys.sim_setting(spec["setting"])).set_value(spec["value"]).run()
    else:
        name = spec["placer"]
        app.multiselect(key=keys.PLACE_PLACERS).set_value([name]).run()
        app.number_input(key=keys.place_seed(name)).set_value(spec["seed"])
        app.number_input(key=keys.place_budget(name)).set_value(spec["budget"])
        for k, v in spec["params"].items():
            widget = keys.place_param(name, k)
            try:
                app.number_input(key=widget).set_value(v)
            except KeyError:
                app.text_input(key=widget).set_value(str(v))
        app.run()
    click(app, keys.PLACE_RUN)
    return app


def _linked_page(spec: dict) -> Any:
    from streamlit.testing.v1 import AppTest

    app = AppTest.from_string(LINKED_PAGE, default_timeout=TIMEOUT)
    for name, value in spec["params"].items():
        app.query_params[name] = value
    return app.run()


def play(path: str) -> None:
    """Play one app case (``--app-case FILE``) and print one JSON line: exceptions, error and warning alerts."""
    spec = json.loads(Path(path).read_text())
    kind = spec["kind"]
    app = (_graphs_page(spec) if kind in ("spec", "upload") else _linked_page(spec) if kind == "link"
           else _place_page(spec))
    errors = [str(e.value) for e in app.error]
    warnings = [str(w.value) for w in app.warning]
    exceptions = [str(getattr(e, "message", e.value))[:500] for e in app.exception]
    print(json.dumps({"errors": errors, "warnings": warnings, "exceptions": exceptions}))
