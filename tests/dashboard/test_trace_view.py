"""The trace view: its payload decodes back to the schedule, and a click on an op reaches the explorer."""

import base64
import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from dashboard import trace_view
from dashboard.figures.theme import device_color, memcpy_color
from dashboard.figures.timeline import TIMELINE_MAX_OPS, lane_names, match_ops
from dashboard.trace_view import clicked_op, trace_payload
from engine.presets import PRESETS
from engine.sim.simulator import Simulator
from engine.specs import load_graph


def unb64(text: str, dtype: str) -> np.ndarray:
    """Decode one of the payload's arrays as the browser does: base64 of a little-endian typed array."""
    return np.frombuffer(base64.b64decode(text), dtype=np.dtype(dtype).newbyteorder("<"))


TIMEOUT = 300  # generous: only catches a hang; a busy machine must not fail a test on a clock (issue 34)
#: Just above the plotly timeline's limit, so the Place page shows the trace view.
LARGE = f"gen:random?ops={TIMELINE_MAX_OPS + 500}&seed=3"


@pytest.fixture(scope="module")
def placed():
    graph, cluster = load_graph("gen:nmt"), PRESETS["k80x4"]()
    devices = np.arange(graph.num_ops) % len(cluster.devices)
    return graph, cluster, Simulator(graph, cluster).run(devices)


def test_memcpy_lanes_are_an_opaque_tint_that_stands_out_on_the_dark_theme(placed):
    """Issue 58 follow-up: the trace view drew a memcpy lane in its device's colour at 0.45 opacity: device 0's
    #0072B2 over the dark theme's #0E1117 came out #083D5D, navy on near-black (1.65:1). It now sends the plotly
    timeline's opaque tint, 35 % of the way to white, drawn at full opacity: #0072B2 → #59A3CD (0 + 255 · 0.35 =
    89.25 → 0x59, 114 + 141 · 0.35 = 163.35 → 0xA3, 178 + 77 · 0.35 = 204.95 → 0xCD; 6.8:1 on #0E1117)."""
    graph, cluster, sched = placed
    p = trace_payload(sched, graph, cluster, view_id="v")
    assert p["memcpy_colors"][0] == "#59A3CD" and "memcpy_opacity" not in p
    assert len(p["memcpy_colors"]) == len(cluster.devices) == 4
    js = (Path(trace_view.__file__).parent / "trace_view.js").read_text()
    assert "data.memcpy_colors" in js and "globalAlpha" not in js


def test_payload_decodes_back_to_the_schedule(placed):
    graph, cluster, sched = placed
    marked = match_ops(graph, "decoder/layer1/step7/")
    p = json.loads(json.dumps(trace_payload(sched, graph, cluster, view_id="v1", marked=marked)))
    assert p["id"] == "v1" and p["lanes"] == lane_names(cluster)
    assert p["colors"] == [device_color(d) for d in range(4)]
    assert p["memcpy_colors"] == [memcpy_color(d) for d in range(4)] and "memcpy_opacity" not in p
    assert p["makespan_ms"] == pytest.approx(sched.makespan * 1e3)
    assert p["names"] == list(graph.op_names)
    # ops: every op once, grouped by device (offsets), sorted by start in each group, times in ms
    ops, start, dur = unb64(p["ops"]["op"], "i4"), unb64(p["ops"]["start"], "f8"), unb64(p["ops"]["dur"], "f4")
    assert p["ops"]["count"] == graph.num_ops == 7522 and sorted(ops.tolist()) == list(range(graph.num_ops))
    offsets = p["ops"]["offsets"]
    assert offsets[0] == 0 and offsets[-1] == graph.num_ops and len(offsets) == 5
    for d in range(4):
        rows = ops[offsets[d]:offsets[d + 1]]
        assert (sched.op_device[rows] == d).all() and len(rows) == (sched.op_device == d).sum()
        assert (np.diff(start[offsets[d]:offsets[d + 1]]) >= 0).all()
    np.testing.assert_array_equal(start, sched.op_start[ops] * 1e3)  # float64: exact
    np.testing.assert_allclose(dur, (sched.op_end[ops] - sched.op_start[ops]) * 1e3, rtol=1e-6)
    # types: indices into the list of distinct types
    types, idx = p["types"], unb64(p["type_idx"], p["type_dtype"])
    assert [types[i] for i in idx.tolist()] == [t or "-" for t in graph.op_types]
    # transfers: the primary rows, grouped by source device, with destination and bytes
    tr = p["transfers"]
    primary = np.flatnonzero(sched.transfer_primary)
    t_op, t_start = unb64(tr["op"], "i4"), unb64(tr["start"], "f8")
    assert tr["count"] == len(primary) > 1000 and tr["offsets"][-1] == len(primary)
    key = sorted(zip(sched.transfer_src[primary].tolist(), sched.transfer_start[primary].tolist(),
                     sched.transfer_op[primary].tolist(), sched.transfer_dst[primary].tolist(),
                     sched.transfer_bytes[primary].tolist(), strict=True))
    got = list(zip(np.repeat(np.arange(4), np.diff(tr["offsets"])).tolist(), (t_start / 1e3).tolist(),
                   t_op.tolist(), unb64(tr["dst"], "u2").tolist(), unb64(tr["bytes"], "f4").tolist(), strict=True))
    assert len(got) == len(key)
    for (s0, t0, o0, d0, b0), (s1, t1, o1, d1, b1) in zip(sorted(got), key, strict=True):
        assert (s0, o0, d0) == (s1, o1, d1) and t0 == pytest.approx(t1, abs=1e-12) and b0 == pytest.approx(b1, 1e-6)
    np.testing.assert_allclose(unb64(tr["dur"], "f4").sum(),
                               (sched.transfer_end - sched.transfer_start)[primary].sum() * 1e3, rtol=1e-5)
    assert unb64(p["marked"], "i4").tolist() == np.flatnonzero(marked).tolist() and marked.sum() > 0


def test_payload_is_compact_and_skips_ops_that_never_ran(placed):
    graph, cluster, sched = placed
    size = len(json.dumps(trace_payload(sched, graph, cluster, view_id="v")))
    rows = graph.num_ops + int(sched.transfer_primary.sum())
    assert size < 40 * rows + len(json.dumps(graph.op_names))  # ~35 bytes per op or transfer, names apart
    start = sched.op_start.copy()
    start[:10] = np.nan  # a memory deadlock: these ops never ran
    stalled = dataclasses.replace(sched, op_start=start)
    p = trace_payload(stalled, graph, cluster, view_id="v")
    assert p["ops"]["count"] == graph.num_ops - 10
    assert set(unb64(p["ops"]["op"], "i4").tolist()) == set(range(10, graph.num_ops))


@pytest.mark.parametrize(("value", "op"), [(5, 5), (5.0, 5), (0, 0), (99, 99), (100, None), (-1, None),
                                           (2.5, None), (True, None), (None, None), ("5", None)])
def test_clicked_op_accepts_only_op_indices(value, op):
    assert clicked_op(value, 100) == op


def _place_large(explorer: str = "place_0_gv") -> AppTest:
    """The Place page on a graph above TIMELINE_MAX_OPS, round-robin placed; ``pick`` hook as in test_pages."""
    from tests.dashboard.test_pages import explorer_app

    app = explorer_app("place", LARGE)
    app.default_timeout = TIMEOUT
    app.session_state["explorer"] = explorer
    app.run()
    app.multiselect(key="place_placers").set_value(["round-robin"]).run()
    app.button(key="place_run").click().run()
    assert not app.exception and not app.error
    return app


def trace_views(app: AppTest) -> list:
    return [e for e in app.get("bidi_component") if e.proto.component_name == "placelab.trace_view"]


def click_trace_op(app: AppTest, op: int) -> AppTest:
    """Run ``app`` as the browser does after a click on ``op`` in the trace view: the component's ``op`` trigger
    (Streamlit's trigger aggregator widget of the component) carries the op index, the other widgets keep
    their values. AppTest has no API for custom components' triggers, hence its private ``_tree`` / ``_run``."""
    from streamlit.components.v2.bidi_component.main import _make_trigger_id
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    states = app._tree.get_widget_states()
    state = WidgetState(id=_make_trigger_id(trace_views(app)[0].proto.id, "events"))
    state.json_trigger_value = json.dumps([{"event": "op", "value": op}])
    states.widgets.append(state)
    return app._run(states)


def test_place_page_shows_the_trace_view_above_the_limit_and_a_click_selects_the_op(empty_runs):
    app = _place_large()
    views = trace_views(app)
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in app.get("plotly_chart")]
    assert len(views) == 1 and not [t for t in titles if t.startswith("round-robin ·")], titles  # no plotly timeline
    payload = json.loads(views[0].proto.json)
    assert payload["ops"]["count"] == TIMELINE_MAX_OPS + 500 and payload["lanes"] == ["gpu:0", "gpu:0 memcpy",
                                                                                       "gpu:1", "gpu:1 memcpy"]
    assert any(c.value.startswith(f"Trace view of {TIMELINE_MAX_OPS + 500:,} ops: wheel to zoom, drag to pan, "
                                  "double-click to fit, click an op to select it") for c in app.caption)
    name = load_graph(LARGE).op_names[1234]
    click_trace_op(app, 1234)
    assert not app.exception
    assert app.session_state["place_0_gv_explorer"]["selected"] == 1234
    caption = [c.value for c in app.caption if c.value.startswith("Selected in the graph:")]
    assert len(caption) == 1 and f"**{name}**" in caption[0] and caption[0].endswith("(red outline)")
    # the selected op is marked (red outline) in the trace view, alone without a search
    assert unb64(json.loads(trace_views(app)[0].proto.json)["marked"], "i4").tolist() == [1234]
    # the toggle brings the plotly figure back (binned above the limit), for exports and box zoom
    app.toggle(key="place_0_tl_plotly").set_value(True).run()
    assert not app.exception and not trace_views(app)
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in app.get("plotly_chart")]
    assert any(t.startswith("round-robin ·") and t.endswith("binned") for t in titles), titles


def test_small_schedules_keep_the_plotly_timeline(empty_runs):
    from tests.dashboard.test_pages import page_app

    app = page_app("place", "gen:chainmm").run()
    app.multiselect(key="place_placers").set_value(["round-robin"]).run()
    app.button(key="place_run").click().run()
    assert not app.exception and not trace_views(app)
    assert not [t for t in app.toggle if t.key == "place_0_tl_plotly"]
