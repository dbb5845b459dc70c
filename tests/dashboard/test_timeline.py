"""The timeline (dashboard/figures/timeline.py): lanes, per-op bars, busy time per pixel column, bins, colours."""

import importlib
import itertools

import numpy as np
import plotly.graph_objects as go
import pytest

from dashboard.figures import timeline
from dashboard.figures.colors import device_color, memcpy_color
from dashboard.figures.timeline import (
    LANE_MAX_OPS,
    _busy_outline,
    bin_at_points,
    busy_per_bin,
    lane_names,
    match_ops,
    ops_in_window,
    union_intervals,
)
from engine.generators import random_dag
from engine.graph.compgraph import CompGraph
from engine.presets import PRESETS
from engine.sim.simulator import simulate

TIMELINE = importlib.import_module("dashboard.figures.timeline")
_LANE = 0.8  # a lane's height in lane units: a full column of a binned lane


@pytest.fixture
def diamond():
    """a → b, a → c, b → d, c → d; b and d on gpu:1, so a→b and c→d cross devices."""
    g = CompGraph("diamond", ["a", "b", "c", "d"], compute_any=np.array([1e-3, 2e-3, 3e-3, 4e-3]),
                  output_bytes=np.array([7.6e6, 7.6e6, 7.6e6, 0.0]), persistent_bytes=np.array([1e9, 2e9, 0, 0]),
                  edge_src=[0, 0, 1, 2], edge_dst=[1, 2, 3, 3], op_types=["MatMul", "Relu", "MatMul", "Add"])
    c = PRESETS["k80x2"]()
    return g, c, simulate(g, c, np.array([0, 1, 0, 1]))


def _lane_of(fig):
    """y position → lane name, as the y axis labels them."""
    return dict(zip(fig.layout.yaxis.tickvals, fig.layout.yaxis.ticktext, strict=True))


def _by_lane(fig, kind):
    """Lane name → the trace drawing it: ``bar`` (one bar per op or transfer), ``busy`` (the outline of a
    binned lane) or ``bins`` (its hover and click markers)."""
    lane_of = _lane_of(fig)
    out = {}
    for t in fig.data:
        if (kind == "bar" and t.type == "bar") or (t.meta == kind and kind != "bar"):
            ys = [round(min(t.y) + _LANE / 2, 9)] if kind == "busy" else t.y  # an outline rises from its floor
            assert {lane_of[y] for y in ys} <= {t.name}
            out[t.name] = t
    return out


def _area(trace):
    """Area (ms × lane units) inside a closed outline (shoelace formula)."""
    x, y = np.asarray(trace.x, dtype=float), np.asarray(trace.y, dtype=float)
    return abs(float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))) / 2


def test_timeline_has_a_compute_and_a_memcpy_lane_per_device_and_a_legend_of_them(diamond):
    g, c, s = diamond
    fig = timeline(s, g, c)
    assert lane_names(c) == ["gpu:0", "gpu:0 memcpy", "gpu:1", "gpu:1 memcpy"]
    assert list(fig.layout.yaxis.ticktext) == lane_names(c)  # the first lane on top
    assert list(fig.layout.yaxis.tickvals) == [3.0, 2.0, 1.0, 0.0]
    bars = _by_lane(fig, "bar")
    assert list(bars) == lane_names(c)
    lane_of = _lane_of(fig)
    assert all(lane_of[y] == name for name, t in bars.items() for y in t.y)
    # one bar per op, placed where the schedule says (ms)
    assert sorted(b for n in ("gpu:0", "gpu:1") for b in bars[n].base) == pytest.approx(sorted(s.op_start * 1e3))
    # the memcpy lanes carry the two channel transfers, 7.6 MB at 7.6 GB/s = 1 ms each, sent by gpu:0
    assert list(bars["gpu:0 memcpy"].x) == pytest.approx([1.0, 1.0]) and len(bars["gpu:1 memcpy"].x) == 0
    # a legend entry per lane; compute in the device's colour, memcpy in its opaque lighter tint
    assert fig.layout.showlegend is True and [t.name for t in fig.data if t.showlegend is not False] == lane_names(c)
    assert [bars[n].marker.color for n in lane_names(c)] == [device_color(0), memcpy_color(0), device_color(1),
                                                            memcpy_color(1)]
    assert all(t.marker.opacity in (None, 1) for t in bars.values())


def test_idle_device_keeps_its_lanes():
    g = random_dag(ops=20, seed=1)
    c = PRESETS["k80x4"]()
    fig = timeline(simulate(g, c, np.zeros(20, dtype=int)), g, c)
    assert len(fig.layout.yaxis.ticktext) == 8 and len(_by_lane(fig, "bar")) == 8
    assert fig.layout.yaxis.range == (-0.5, 7.5)


def test_busy_per_bin_matches_brute_force():
    rng = np.random.default_rng(0)
    start = rng.uniform(0, 10, 50)
    end = start + rng.uniform(0, 1, 50)
    edges = np.linspace(0, 11, 12)
    expected = [sum(max(0.0, min(e, hi) - max(s, lo)) for s, e in zip(start, end, strict=True))
                for lo, hi in itertools.pairwise(edges)]
    assert busy_per_bin(start, end, edges) == pytest.approx(expected)


def test_busy_outline_is_as_high_as_each_columns_busy_share():
    """Three 1 s columns busy 1, 0.5 and 0 s: a full-height step, a half-height one, then the lane's floor;
    the outline encloses 0.8 × 1 + 0.4 × 1 = 1.2 = 0.8 (a lane's height) × 1.5 s busy."""
    xs, ys = _busy_outline(np.array([1.0, 0.5, 0.0]), np.array([0.0, 1.0, 2.0, 3.0]), bottom=0.0)
    assert list(xs) == [0, 0, 1, 1, 2, 2, 3, 3, 0]
    assert list(ys) == pytest.approx([0, 0.8, 0.8, 0.4, 0.4, 0, 0, 0, 0])
    assert _area(go.Scatter(x=xs, y=ys)) == pytest.approx(1.2)
    # equal neighbours are one step: four full columns are two points
    xs, ys = _busy_outline(np.ones(4), np.arange(5.0), bottom=2.6)
    assert list(xs) == [0, 0, 4, 4, 0] and list(ys) == pytest.approx([2.6, 3.4, 3.4, 2.6, 2.6])


def test_a_crowded_lane_is_drawn_as_its_busy_time_per_pixel_column():
    """Issue 57: thousands of ops drew as hairlines. A lane of more than LANE_MAX_OPS ops is one outline as high
    as the busy share of each of 1000 columns (its area is the lane's busy time), plus 200 bins that answer
    hovers and clicks; the pages find a binned figure by its first trace."""
    g, c = random_dag(ops=2 * LANE_MAX_OPS + 100, seed=3), PRESETS["k80x2"]()
    s = simulate(g, c, np.arange(g.num_ops) % 2)
    fig = timeline(s, g, c)
    assert "binned" in fig.layout.title.text and fig.data[0].meta == "bins"
    busy, bins = _by_lane(fig, "busy"), _by_lane(fig, "bins")
    assert set(busy) == set(bins) == {"gpu:0", "gpu:1"}  # fewer transfers than LANE_MAX_OPS: one bar each
    for d, dev in enumerate(c.devices):
        compute_ms = s.compute_time[d] * 1e3
        assert _area(busy[dev.name]) / _LANE == pytest.approx(compute_ms, rel=1e-6)
        assert len(busy[dev.name].x) <= 2 * 1000 + 3 and busy[dev.name].fillcolor == device_color(d)
        marks = np.asarray(bins[dev.name].customdata)
        assert len(marks) <= 200 and marks[:, 0].sum() == pytest.approx(compute_ms, rel=1e-9)
        assert bins[dev.name].marker.opacity == 0 and bins[dev.name].showlegend is False


def test_a_click_on_a_search_match_over_a_binned_lane_picks_the_match():
    """Found by the browser walk (issue 58 follow-up): a click on a red match diamond of a binned lane zoomed into the
    bin beneath it. plotly gives a click inside several markers to the one nearest by ``max(r - radius, 1 - 3 /
    radius)`` (plotly.js scatter hover, ``r`` the distance from its centre): inside both, a bin's 12 px square scores
    1 - 3/6 = 0.5 and the 14 px diamond 1 - 3/7 = 0.571, so the bin won; an 11 px diamond scores 1 - 3/5.5 = 0.455."""
    g, c = random_dag(ops=2 * LANE_MAX_OPS + 100, seed=3), PRESETS["k80x2"]()
    s = simulate(g, c, np.arange(g.num_ops) % 2)
    fig = timeline(s, g, c, highlight=np.arange(g.num_ops) == 7)
    bins = next(t for t in fig.data if t.meta == "bins")
    [match] = [t for t in fig.data if t.name == "matches"]
    assert (bins.marker.size, match.marker.size) == (12, 11)

    def inside(size: float) -> float:
        return 1 - 3 / max(3.0, size / 2)

    assert inside(match.marker.size) == pytest.approx(1 - 3 / 5.5) and inside(bins.marker.size) == 0.5
    assert inside(match.marker.size) < inside(bins.marker.size)


def test_a_lane_is_binned_only_above_the_threshold(diamond, monkeypatch):
    g, c, s = diamond
    monkeypatch.setattr(TIMELINE, "LANE_MAX_OPS", 2)  # gpu:0 and gpu:1 ran 2 ops each, gpu:0 sent 2 transfers
    assert not _by_lane(timeline(s, g, c), "busy")
    monkeypatch.setattr(TIMELINE, "LANE_MAX_OPS", 1)
    fig = timeline(s, g, c)
    assert set(_by_lane(fig, "busy")) == {"gpu:0", "gpu:1", "gpu:0 memcpy"}
    assert set(_by_lane(fig, "bar")) == {"gpu:1 memcpy"}
    # busy 1 ms then 3 ms on gpu:0 (a then c): 4 ms in all
    assert _area(_by_lane(fig, "busy")["gpu:0"]) / _LANE == pytest.approx(4.0, rel=1e-6)


def test_timeline_window_shows_single_named_ops_of_a_large_graph():
    g, c = random_dag(ops=2 * LANE_MAX_OPS + 500, seed=3), PRESETS["k80x2"]()
    s = simulate(g, c, np.arange(g.num_ops) % 2)
    assert "binned" in timeline(s, g, c).layout.title.text
    # a window holding a few ops: every op overlapping it is a bar of its own, with its name
    mid = float(s.op_start[g.num_ops // 2]) * 1e3
    window = (mid, mid + 1e-6)
    shown = ops_in_window(s, window)
    fig = timeline(s, g, c, window_ms=window)
    assert "binned" not in fig.layout.title.text and list(fig.layout.xaxis.range) == list(window)
    compute = [t for name, t in _by_lane(fig, "bar").items() if not name.endswith("memcpy")]
    assert sum(len(t.x) for t in compute) == int(shown.sum()) >= 1
    assert sorted(n for t in compute for n in t.text) == sorted(g.op_names[i] for i in np.flatnonzero(shown))


def test_timeline_search_marks_matches_and_arrows_follow_edges(diamond):
    g, c, s = diamond
    assert match_ops(g, "matmul").tolist() == [True, False, True, False]  # by type, any case
    assert match_ops(g, "  ").tolist() == [False] * 4
    fig = timeline(s, g, c, highlight=match_ops(g, "MatMul"), arrows=True)
    [marks] = [t for t in fig.data if t.name == "matches"]
    assert list(marks.text) == ["a", "c"]
    assert list(marks.x) == pytest.approx([(s.op_start[i] + s.op_end[i]) * 500 for i in (0, 2)])
    assert [_lane_of(fig)[y] for y in marks.y] == ["gpu:0", "gpu:0"]
    # a→b and c→d cross devices (dashed, transfers); a→c and b→d stay (solid)
    lines = {t.name: t for t in fig.data if t.name in ("dependency", "transfer")}
    assert lines["transfer"].line.dash == "dash" and len(lines["transfer"].x) == 6
    assert len(lines["dependency"].x) == 6
    assert list(lines["dependency"].x[:2]) == pytest.approx([s.op_end[0] * 1e3, s.op_start[2] * 1e3])
    assert [_lane_of(fig)[y] for y in lines["transfer"].y[:2]] == ["gpu:0", "gpu:1"]


def test_a_click_on_a_busy_bin_names_its_span_and_a_window_still_too_full_is_binned_again():
    g, c = random_dag(ops=6 * LANE_MAX_OPS, seed=4), PRESETS["k80x2"]()
    s = simulate(g, c, np.arange(g.num_ops) % 2)
    fig = timeline(s, g, c)
    lane = next(i for i, t in enumerate(fig.data) if t.meta == "bins" and t.name == "gpu:0")
    marks = np.asarray(fig.data[lane].customdata)
    assert bin_at_points(fig, [{"curve_number": lane, "point_index": 3}]) == pytest.approx((marks[3, 2], marks[3, 3]))
    assert marks[3, 3] - marks[3, 2] == pytest.approx(s.makespan * 1e3 / 200)  # 200 bins over the makespan
    # the outline of a lane is no bin
    outline = next(i for i, t in enumerate(fig.data) if t.meta == "busy")
    assert bin_at_points(fig, [{"curve_number": outline, "point_index": 0}]) is None
    # a window over the first two thirds still crowds the lanes: 200 bins across it
    window = (0.0, float(s.makespan * 1e3 * 2 / 3))
    zoomed = timeline(s, g, c, window_ms=window)
    bins = _by_lane(zoomed, "bins")
    assert "gpu:0" in bins
    assert all(np.asarray(t.customdata)[:, 3] - np.asarray(t.customdata)[:, 2] == pytest.approx(window[1] / 200)
               for t in bins.values())
    inside = np.minimum(s.op_end, window[1] / 1e3) - np.minimum(s.op_start, window[1] / 1e3)
    busy = np.asarray(bins["gpu:0"].customdata)[:, 0].sum()
    assert busy / 1e3 == pytest.approx(float(inside[s.op_device == 0].sum()), rel=1e-9)
    assert _area(_by_lane(zoomed, "busy")["gpu:0"]) / _LANE == pytest.approx(busy, rel=1e-6)
    # one bin of it holds few ops: the timeline zoomed into a bin draws them one by one
    span = bin_at_points(zoomed, [{"curve_number": zoomed.data.index(bins["gpu:0"]), "point_index": 0}])
    assert "binned" not in timeline(s, g, c, window_ms=span).layout.title.text


# -- issue 33: the binned timeline draws each lane as busy as the schedule's tables say -------------------


def _union_in(intervals, lo, hi):
    """Seconds of [lo, hi] covered by at least one of ``intervals`` (plain Python, a sweep over sorted starts)."""
    covered, reach = 0.0, lo
    for s, e in sorted((max(s, lo), min(e, hi)) for s, e in intervals if np.isfinite(s) and e > lo and s < hi):
        if e > reach:
            covered += e - max(s, reach)
            reach = e
    return covered


def _tables(tmp_path, g, c, s):
    """``schedule_ops.csv`` and ``schedule_transfers.csv`` as a stored run writes them (the CSV export)."""
    from engine.store.records import write_schedule_tables
    from engine.store.runs import RunStore

    run = RunStore(tmp_path / "runs").create("place", graph_name=g.name, graph_hash="0", cluster=c.name, placer="x",
                                             parameters={}, seed=0)
    write_schedule_tables(run, g, c, s)
    return run.read_table("schedule_ops.csv"), run.read_table("schedule_transfers.csv")


def _lane_records(ops, transfers, device):
    """Busy intervals of a device's compute lane (its ops) and memcpy lane (the transfers it sends)."""
    compute = [(float(a), float(b)) for d, a, b in zip(ops["device"], ops["start_s"], ops["end_s"], strict=True)
               if d == device]
    memcpy = [(float(a), float(b)) for d, a, b in
              zip(transfers["src"], transfers["start_s"], transfers["end_s"], strict=True) if d == device]
    return {device: compute, f"{device} memcpy": memcpy}


SETTINGS = {  # preset, simulation settings: channels, latency in flight, overlapping sends, copies on the sender
    "placeto": ("k80x2", {}),
    "default": ("k80x4", {"mode": "default"}),
    "work_conserving": ("p100x4", {}),
    "work_conserving per_device": ("p100x4", {"contention": "per_device"}),
    "copies on the sender": ("p100x4", {"copy_occupies_sender": True}),
}


@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_binned_lanes_are_as_busy_as_the_schedule_tables_say(setting, tmp_path, monkeypatch):
    """Issue 33: on gen:nmt gpu:0's memcpy lane was drawn solid across 850–1020 ms, busy 5.6 ms there by the
    transfers CSV: any bin with a transfer in it was drawn full. Each binned lane's bins, and the area of its
    outline, add up to the time the lane is busy (at least one op or transfer running) by the exported
    tables, over the whole schedule and over a zoomed window."""
    monkeypatch.setattr(TIMELINE, "LANE_MAX_OPS", 0)  # bin every lane of 300 ops
    preset, sim = SETTINGS[setting]
    c = PRESETS[preset]().with_simulation(**sim) if sim else PRESETS[preset]()
    g = random_dag(ops=300, seed=5)
    s = simulate(g, c, np.random.default_rng(1).integers(0, c.num_devices, g.num_ops))
    ops, transfers = _tables(tmp_path, g, c, s)
    assert len(transfers["op"]) > 10
    end = s.makespan * 1e3
    for window in (None, (0.3 * end, 0.55 * end)):
        fig = timeline(s, g, c, window_ms=window)
        lo, hi = (0.0, s.makespan) if window is None else (window[0] / 1e3, window[1] / 1e3)
        bins, outlines = _by_lane(fig, "bins"), _by_lane(fig, "busy")
        for dev in c.devices:
            for lane, intervals in _lane_records(ops, transfers, dev.name).items():
                expected = _union_in(intervals, lo, hi)
                drawn = float(np.asarray(bins[lane].customdata)[:, 0].sum()) / 1e3 if lane in bins else 0.0
                assert drawn == pytest.approx(expected, rel=1e-9, abs=1e-12), (lane, window)
                assert _area(outlines[lane]) / _LANE / 1e3 == pytest.approx(expected, rel=1e-6, abs=1e-9)
        for t in bins.values():  # no bin busier than it is long, the percentage its share of the bin
            marks = np.asarray(t.customdata)
            width = marks[:, 3] - marks[:, 2]
            assert np.all(marks[:, 0] <= width * (1 + 1e-9))
            assert marks[:, 1] == pytest.approx(marks[:, 0] / width * 100, abs=0.051)


def test_binned_memcpy_lane_of_serial_sends_adds_up_to_the_copy_time(monkeypatch):
    """Placeto mode: one channel per device and no latency, so a memcpy lane is busy exactly the schedule's
    ``memcpy_time`` (the load profile's memcpy bar): the two figures agree."""
    monkeypatch.setattr(TIMELINE, "LANE_MAX_OPS", 0)
    g, c = random_dag(ops=300, seed=5), PRESETS["k80x2"]()
    s = simulate(g, c, np.arange(g.num_ops) % 2)
    bins = _by_lane(timeline(s, g, c), "bins")
    for d, dev in enumerate(c.devices):
        drawn = float(np.asarray(bins[f"{dev.name} memcpy"].customdata)[:, 0].sum())
        assert drawn / 1e3 == pytest.approx(s.memcpy_time[d], rel=1e-9)
        assert s.memcpy_time[d] > 0


def test_union_intervals_merges_overlaps_and_drops_ops_that_never_ran():
    s, e = union_intervals(np.array([5.0, 0.0, 1.0, 2.0, np.nan, 7.0]), np.array([6.0, 2.0, 1.5, 3.0, np.nan, 7.0]))
    assert list(s) == [0.0, 5.0, 7.0] and list(e) == [3.0, 6.0, 7.0]
    assert [len(x) for x in union_intervals(np.array([]), np.array([]))] == [0, 0]


def test_a_click_on_a_bin_selects_no_op():
    """A bin's customdata holds numbers; an op named like one of them is not picked by a click on the bin."""
    from dashboard.widgets.schedule import op_at_points

    fig = go.Figure(go.Scatter(x=[1.0], y=[0.0], customdata=[[50.0, 2.0, 1.0, 2.0, 1.0]], meta="bins"))
    assert op_at_points(fig, [{"curve_number": 0, "point_index": 0}], {"50.0": 0}) is None


def test_an_image_leaves_out_the_hover_markers_and_html_keeps_them(monkeypatch):
    """The bins' invisible markers answer hovers and clicks; an image has neither, and they were half its SVG."""
    from dashboard.figures import theme

    g, c = random_dag(ops=2 * LANE_MAX_OPS + 100, seed=3), PRESETS["k80x2"]()
    fig = timeline(simulate(g, c, np.arange(g.num_ops) % 2), g, c)
    drawn = {}
    monkeypatch.setattr(theme, "figure_image", lambda out, fmt, **_: drawn.setdefault(fmt, out) and b"image")
    assert theme.export_bytes(fig, "svg") == b"image"
    assert {t.visible for t in drawn["svg"].data if t.meta == "bins"} == {False}
    assert all(t.visible is not False for t in drawn["svg"].data if t.meta != "bins")
    assert all(t.visible is not False for t in fig.data)  # the app's figure keeps them
    assert b'"meta":"bins"' in theme.export_bytes(fig, "html").replace(b" ", b"")


@pytest.mark.skipif(not importlib.import_module("dashboard.figures.theme").SYSTEM_CHROMIUM.exists(),
                    reason="kaleido needs the system chromium")
def test_a_crowded_timeline_exports_as_one_outline_per_lane():
    """The SVG of a binned timeline draws each crowded lane as one filled path, no per-op element."""
    import re

    from dashboard.figures.theme import export_bytes

    g, c = random_dag(ops=2 * LANE_MAX_OPS + 100, seed=3), PRESETS["k80x2"]()
    fig = timeline(simulate(g, c, np.arange(g.num_ops) % 2), g, c)
    text = export_bytes(fig, "svg", width=900, height=500).decode()
    transfers = sum(len(t.x) for t in _by_lane(fig, "bar").values())
    assert text.startswith("<svg") and text.count('class="point"') == transfers < g.num_ops  # no op, no bin
    fills = re.findall(r'<path class="js-fill"', text)
    assert len(fills) == 2 * 2  # gpu:0 and gpu:1 (the memcpy lanes hold few transfers: bars), and their legend keys
    assert {"gpu:0", "gpu:1 memcpy"} <= set(re.findall(r">(gpu:\d(?: memcpy)?)<", text))
