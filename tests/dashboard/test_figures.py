"""The app's plotly figures, checked against hand-built schedules and the Schedule's own totals."""

import importlib
import itertools

import numpy as np
import plotly.graph_objects as go
import pytest

from dashboard.figures import (
    TIMELINE_MAX_OPS,
    cdf_figure,
    learning_curves,
    load_profile,
    makespan_bars,
    memory_over_time,
    timeline,
)
from dashboard.figures.charts import SINGLE_DEVICE_LABEL, phase_compute
from dashboard.figures.curves import bootstrap_band, ema, rolling_median, thin_rows
from dashboard.figures.timeline import busy_per_bin, lane_names
from engine.generators import random_dag
from engine.graph import CompGraph
from engine.presets import PRESETS
from engine.simulator import simulate


@pytest.fixture
def diamond():
    """a → b, a → c, b → d, c → d; b and d on gpu:1, so a→b and c→d cross devices."""
    g = CompGraph("diamond", ["a", "b", "c", "d"], compute_any=np.array([1e-3, 2e-3, 3e-3, 4e-3]),
                  output_bytes=np.array([7.6e6, 7.6e6, 7.6e6, 0.0]), persistent_bytes=np.array([1e9, 2e9, 0, 0]),
                  edge_src=[0, 0, 1, 2], edge_dst=[1, 2, 3, 3], op_types=["MatMul", "Relu", "MatMul", "Add"],
                  phase=["forward", "backward", "update", None])
    c = PRESETS["k80x2"]()
    s = simulate(g, c, np.array([0, 1, 0, 1]), record_memory=True)
    return g, c, s


def _bars(fig):
    return [t for t in fig.data if t.type == "bar"]


def test_timeline_has_a_compute_and_a_memcpy_lane_per_device(diamond):
    g, c, s = diamond
    fig = timeline(s, g, c)
    lanes = {y for t in fig.data for y in t.y}
    assert lanes == {"gpu:0", "gpu:0 memcpy", "gpu:1", "gpu:1 memcpy"}
    assert lane_names(c) == ["gpu:0", "gpu:0 memcpy", "gpu:1", "gpu:1 memcpy"]
    compute = [t for t in _bars(fig) if t.name.endswith("compute")]
    # one bar per op, placed where the schedule says (ms)
    assert sorted(b for t in compute for b in t.base) == pytest.approx(sorted(s.op_start * 1e3))
    assert sum(len(t.x) for t in compute) == 4
    # the memcpy lanes carry the two channel transfers, 7.6 MB at 7.6 GB/s = 1 ms each
    memcpy = [t for t in _bars(fig) if t.name.endswith("memcpy")]
    assert [list(t.x) for t in memcpy] == [pytest.approx([1.0, 1.0]), []]
    assert sum(sum(t.x) for t in memcpy) == pytest.approx(s.memcpy_time.sum() * 1e3)


def test_idle_device_keeps_its_lanes():
    g = random_dag(ops=20, seed=1)
    c = PRESETS["k80x4"]()
    s = simulate(g, c, np.zeros(20, dtype=int))
    lanes = {y for t in timeline(s, g, c).data for y in t.y}
    assert len(lanes) == 8


def test_large_timeline_is_binned_and_keeps_busy_time():
    n = TIMELINE_MAX_OPS + 1000
    g = random_dag(ops=n, seed=3)
    c = PRESETS["k80x2"]()
    s = simulate(g, c, np.arange(n) % 2)
    fig = timeline(s, g, c)
    bars = _bars(fig)
    assert sum(len(t.x) for t in bars) <= 4 * 200  # at most one bar per bin per lane
    for d, dev in enumerate(c.devices):
        t = next(t for t in bars if t.name == dev.name)
        assert float(np.sum(t.x)) / 1e3 == pytest.approx(s.compute_time[d], rel=1e-9)  # bars as long as the busy time


def test_busy_per_bin_matches_brute_force():
    rng = np.random.default_rng(0)
    start = rng.uniform(0, 10, 50)
    end = start + rng.uniform(0, 1, 50)
    edges = np.linspace(0, 11, 12)
    expected = [sum(max(0.0, min(e, hi) - max(s, lo)) for s, e in zip(start, end, strict=True))
                for lo, hi in itertools.pairwise(edges)]
    assert busy_per_bin(start, end, edges) == pytest.approx(expected)


def test_load_profile_stacks_phases_to_compute_time(diamond):
    g, c, s = diamond
    fig = load_profile(s, g, c)
    by_name = {t.name: np.asarray(t.y) for t in fig.data}
    assert set(by_name) == {"forward", "backward", "update", "compute", "memcpy"}
    # a (forward) and c (update) ran on gpu:0, b (backward) and d (no phase) on gpu:1
    assert by_name["forward"] == pytest.approx([1.0, 0.0])
    assert by_name["update"] == pytest.approx([3.0, 0.0])
    assert by_name["backward"] == pytest.approx([0.0, 2.0])
    assert by_name["compute"] == pytest.approx([0.0, 4.0])
    stacked = sum(by_name[p] for p in ("forward", "backward", "update", "compute"))
    assert stacked == pytest.approx(s.compute_time * 1e3)
    assert by_name["memcpy"] == pytest.approx(s.memcpy_time * 1e3)


def test_phase_compute_on_graph_without_phases():
    g = random_dag(ops=100, seed=4)
    c = PRESETS["k80x4"]()
    s = simulate(g, c, np.arange(100) % 4)
    parts = phase_compute(s, g, 4)
    assert parts["compute"] == pytest.approx(s.compute_time)
    assert not parts["forward"].any()


def test_memory_over_time_peaks_at_peak_memory(diamond):
    _g, c, s = diamond
    fig = memory_over_time(s, c)
    lines = [t for t in fig.data if t.type == "scatter"]
    assert [t.name for t in lines] == ["gpu:0", "gpu:1"]
    for d, t in enumerate(lines):
        assert max(t.y) * 1e9 == pytest.approx(s.peak_memory[d])
        assert t.line.shape == "hv"
    # at t = 0: gpu:0 holds a's weights (1 GB) and a's output (7.6 MB) as a starts; gpu:1 holds b's 2 GB
    assert lines[0].y[0] == pytest.approx(1.0076) and lines[1].y[0] == pytest.approx(2.0)
    capacity = [s for s in fig.layout.shapes if s.y0 == s.y1]
    assert [sh.y0 for sh in capacity] == pytest.approx([11.0])


def _bar_traces(fig):
    return {t.name: t for t in fig.data if t.type == "bar"}


def test_makespan_bars_with_shared_and_separate_lower_bounds():
    rows = [{"label": "a", "makespan_s": 2e-3, "lower_bound_s": 1e-3},
            {"label": "b", "makespan_s": 3e-3, "lower_bound_s": 1e-3, "oom": True}]
    fig = makespan_bars(rows)
    bars = _bar_traces(fig)
    assert [list(t.y) for t in bars.values()] == [pytest.approx([2.0]), pytest.approx([3.0])]
    assert bars["a"].marker.color != bars["b"].marker.color
    assert [sh.y0 for sh in fig.layout.shapes] == pytest.approx([1.0])
    [lb] = [t for t in fig.data if t.type == "scatter"]
    assert lb.name == "lower bound (1 ms)" and lb.showlegend is not False and lb.line.dash == "dash"
    rows[1]["lower_bound_s"] = 2e-3
    fig = makespan_bars(rows)
    [marks] = [t for t in fig.data if t.type == "scatter"]
    assert marks.name == "lower bound" and list(marks.y) == pytest.approx([1.0, 2.0])


def _annotations_over_bars(fig, width_px=1000, height_px=420, char_px=7.0, line_px=16.0):
    """The annotations whose text box (estimated from its length, anchor and a 12 px font) overlaps a bar,
    in a plot of about ``width_px`` × ``height_px``; x in category units, y in data units."""
    bars = [t for t in fig.data if t.type == "bar"]
    categories = list(dict.fromkeys(x for t in bars for x in t.x))
    n, top = len(categories), fig.layout.yaxis.range[1]
    hits = []
    for a in fig.layout.annotations:
        w = char_px * len(a.text or "") / width_px * n  # in categories
        h = line_px / height_px * top
        x = a.x * n - 0.5 if a.xref == "x domain" else categories.index(a.x)
        x0 = {"right": x - w, "center": x - w / 2}.get(a.xanchor, x)
        y0 = {"top": a.y - h, "middle": a.y - h / 2}.get(a.yanchor, a.y)
        for t in bars:
            c = categories.index(t.x[0])
            if x0 < c + 0.4 and x0 + w > c - 0.4 and y0 < t.y[0] and y0 + h > 0:
                hits.append((a.text, t.x[0]))
    return hits


def test_makespan_bars_keep_the_lower_bound_label_off_the_bars():
    """Issue 33: "lower bound 1 ms" was written at the bottom right of its line, inside the last (taller)
    bar. It is named in the legend now, and no annotation sits inside a bar's extent."""
    rows = [{"label": p, "makespan_s": m, "lower_bound_s": 1e-3} for p, m in (("metis", 2e-3), ("heft", 1.5e-3))]
    fig = makespan_bars(rows)
    assert any(t.name == "lower bound (1 ms)" for t in fig.data if t.showlegend is not False)
    assert _annotations_over_bars(fig) == []
    # the check sees the old label: the same line annotated as it used to be
    old = makespan_bars(rows)
    old.add_hline(y=1.0, annotation_text="lower bound 1 ms", annotation_position="bottom right")
    assert _annotations_over_bars(old) == [("lower bound 1 ms", "heft")]


def test_makespan_bars_one_colour_and_legend_entry_per_placer():
    placers = ["metis", "heft", "m-etf", "scotch", "single-device", "round-robin", "critical-path", "local-search",
               "random", "placeto", "rnn", "doppler"]
    fig = makespan_bars([{"label": p, "makespan_s": 1e-3 * (i + 1)} for i, p in enumerate(placers)])
    bars = _bar_traces(fig)
    assert list(bars) == placers and fig.layout.showlegend is True
    colors = [t.marker.color for t in bars.values()]
    assert len(set(colors)) == len(placers)  # twelve placers, twelve colours
    assert fig.layout.barmode == "overlay"  # one bar per category, not shrunk into groups
def test_cdf_steps_to_one():
    fig = cdf_figure({"x": [3.0, 1.0, 2.0], "empty": [], "y": [1.0, float("nan")]})
    assert [t.name for t in fig.data] == ["x", "y"]
    assert list(fig.data[0].x) == [1.0, 1.0, 2.0, 3.0]
    assert list(fig.data[0].y) == pytest.approx([0.0, 1 / 3, 2 / 3, 1.0])
    assert list(fig.data[1].y) == [0.0, 1.0]


def test_thin_rows_keeps_every_kth_row_and_the_last():
    assert list(thin_rows(5, None)) == [0, 1, 2, 3, 4]
    assert list(thin_rows(5, 5)) == [0, 1, 2, 3, 4]
    assert list(thin_rows(10, 4)) == [0, 3, 6, 9]  # k = ceil(10 / 4) = 3; 9 is also the last row
    assert list(thin_rows(11, 4)) == [0, 3, 6, 9, 10]


def _curve(n, runtime, **extra):
    return {"episode": list(range(1, n + 1)), "sampled_runtime": runtime, "best_runtime": list(np.minimum.accumulate(
        runtime)), "placements_evaluated": [5 * i for i in range(1, n + 1)], **extra}


def _traces(fig, name):
    return {t.name: t for t in fig.data if t.name == name or t.name.startswith(name + " ")}


def test_learning_curves_panels_smoothing_and_rolling_median():
    runtime = [0.004, 0.006, 0.005, 0.007]
    curve = _curve(4, runtime, reward=[-1.0, -2.0, -1.0, -3.0], entropy=[0.7, 0.6, 0.5, 0.4],
                   learning_rate=[0.01, 0.008, 0.006, 0.004])
    fig = learning_curves({"pl": curve}, smoothing=0.5, median_window=2)
    t = _traces(fig, "pl")
    assert list(t["pl sampled"].y) == pytest.approx([4.0, 6.0, 5.0, 7.0])  # ms
    # debiased EMA with w = 0.5: 4, (0.5·2 + 3)/0.75 = 5.333..., ...
    assert list(t["pl"].y)[:2] == pytest.approx([4.0, (0.5 * 0.5 * 4 + 0.5 * 6) / 0.75])
    assert list(t["pl rolling median (2)"].y) == pytest.approx([4.0, 5.0, 5.5, 6.0])
    assert list(t["pl best"].y) == pytest.approx([4.0, 4.0, 4.0, 4.0])
    assert list(t["pl learning_rate"].y) == pytest.approx([0.01, 0.008, 0.006, 0.004])  # never smoothed
    assert {"pl reward", "pl entropy"} <= set(t)
    fig = learning_curves({"pl": curve}, x="placements evaluated")
    assert list(_traces(fig, "pl")["pl"].x) == [5, 10, 15, 20]


def test_learning_curves_of_several_seeds_are_a_mean_with_a_band():
    a, b = _curve(3, [1.0, 2.0, 3.0]), _curve(3, [3.0, 4.0, 5.0])
    fig = learning_curves({"two": [a, b]}, smoothing=0.0)
    t = _traces(fig, "two")
    mean = t["two mean of 2 seeds"]
    assert list(mean.y) == pytest.approx([2000.0, 3000.0, 4000.0])
    band = next(tr for tr in fig.data if tr.name == "two 95% CI")
    # the bootstrap band of the mean of two runs lies between them
    assert min(band.y) >= 1000.0 - 1e-9 and max(band.y) <= 5000.0 + 1e-9


def test_learning_curves_over_several_graphs_are_relative():
    curve = _curve(4, [2.0, 10.0, 1.0, 5.0], graph=["a", "b", "a", "b"])
    fig = learning_curves({"m": curve}, smoothing=0.0)
    t = _traces(fig, "m")
    assert list(t["m sampled"].y) == pytest.approx([2.0, 2.0, 1.0, 1.0])  # each over its graph's best
    assert "m best" not in t  # a best across graphs would jump


def test_learning_curves_thinned_for_display():
    n = 10
    curve = _curve(n, [float(n - i) for i in range(n)])
    fig = learning_curves({"a": curve, "b": curve}, max_points=4, smoothing=0.0)
    best_a = _traces(fig, "a")["a best"]
    assert list(best_a.x) == [1, 4, 7, 10]
    assert list(best_a.y) == pytest.approx([10000.0, 7000.0, 4000.0, 1000.0])
    assert _traces(fig, "a")["a"].line.color != _traces(fig, "b")["b"].line.color


def test_ema_matches_tensorboard_debiasing():
    assert list(ema([1.0, 2.0, 3.0], 0.0)) == [1.0, 2.0, 3.0]
    w = 0.9
    s1 = 0.1 * 1.0
    s2 = w * s1 + 0.1 * 3.0
    assert list(ema([1.0, float("nan"), 3.0], w)) == pytest.approx([s1 / 0.1, s1 / 0.1, s2 / (1 - w ** 2)])
    with pytest.raises(ValueError):
        ema([1.0], 1.0)


def test_rolling_median_trails():
    assert list(rolling_median([5.0, 1.0, 3.0, 10.0, 2.0], 3)) == [5.0, 3.0, 3.0, 3.0, 3.0]
    assert len(rolling_median([], 4)) == 0


def test_bootstrap_band_contains_the_mean_and_shrinks_with_agreement():
    rng = np.random.default_rng(1)
    runs = rng.normal(10.0, 1.0, size=(8, 50))
    mean, lo, hi = bootstrap_band(runs)
    assert mean == pytest.approx(runs.mean(axis=0))
    assert np.all(lo <= mean) and np.all(mean <= hi)
    # the 95 % band of a mean of 8 draws of sd 1 is about ±2·1/√8 ≈ ±0.7 wide
    assert 0.3 < float(np.median(hi - lo)) / 2 < 1.1
    same = np.tile(np.arange(5.0), (4, 1))
    _, lo, hi = bootstrap_band(same)
    assert list(lo) == list(hi) == [0.0, 1.0, 2.0, 3.0, 4.0]
    m, lo, hi = bootstrap_band([[1.0, 2.0, 3.0], [3.0, 4.0]])  # cut to the shortest
    assert list(m) == [2.0, 3.0]


def test_makespan_bars_start_at_zero_and_keep_colours():
    rows = [{"label": "metis", "makespan_s": 0.002, "hover": "run-1"},
            {"label": "heft", "makespan_s": 0.001, "oom": True}]
    fig = makespan_bars(rows, title="Makespan on g · k80x2")
    assert fig.layout.title.text == "Makespan on g · k80x2"
    assert fig.layout.yaxis.range[0] == 0 and fig.layout.yaxis.range[1] == pytest.approx(2.0 * 1.18)
    again = makespan_bars(list(reversed(rows)))
    colors = {n: t.marker.color for n, t in _bar_traces(fig).items()}
    assert {n: t.marker.color for n, t in _bar_traces(again).items()} == colors  # colour follows the label
    bars = _bar_traces(fig)
    assert list(bars["metis"].customdata) == ["run-1"] and list(bars["heft"].customdata) == [""]
    assert [bars[n].marker.pattern.shape for n in ("metis", "heft")] == ["", "x"]
    assert list(bars["heft"].text) == ["1 (OOM)"] and list(bars["metis"].text) == ["2"]


def test_makespan_bars_show_the_ratio_to_single_device_and_an_estimate_far_off():
    """Issue 55: each bar's value is followed by its ×single-device (the x axis title names it); a placer's own
    estimate shows on hover, and one more than 5 % off the simulation marks the bar ⚠ with the note on hover.
    heft 6 ms of single-device's 10 ms: ×0.60, its estimate 6 ms agrees; m-etf 8 ms: ×0.80, its 4 ms estimate is
    50 % under."""
    rows = [{"label": "single-device", "makespan_s": 10e-3, "ratio_to_single_device": 1.0},
            {"label": "heft", "makespan_s": 6e-3, "ratio_to_single_device": 0.6, "predicted_makespan_s": 6e-3},
            {"label": "m-etf", "makespan_s": 8e-3, "ratio_to_single_device": 0.8, "predicted_makespan_s": 4e-3,
             "hover": "run-2"}]
    fig = makespan_bars(rows)
    bars = _bar_traces(fig)
    assert [list(bars[n].text) for n in bars] == [["10 · ×1.00"], ["6 · ×0.60"], ["8 · ×0.80 ⚠"]]
    assert list(bars["heft"].customdata) == ["×0.600 single-device<br>own estimate 6 ms"]
    assert list(bars["m-etf"].customdata) == ["run-2<br>×0.800 single-device<br>own estimate 4 ms<br>"
                                              "⚠ est. off by -50 %"]
    assert fig.layout.xaxis.title.text == SINGLE_DEVICE_LABEL
    # without ratios (runs stored before they were recorded, single-device not applicable): no label
    plain = makespan_bars([{"label": "heft", "makespan_s": 6e-3}])
    assert list(_bar_traces(plain)["heft"].text) == ["6"] and plain.layout.xaxis.title.text is None


def test_timeline_window_shows_single_named_ops_of_a_large_graph():
    from dashboard.figures.timeline import ops_in_window

    g, c = random_dag(ops=TIMELINE_MAX_OPS + 500, seed=3), PRESETS["k80x2"]()
    s = simulate(g, c, np.arange(g.num_ops) % 2)
    assert "binned" in timeline(s, g, c).layout.title.text
    # a window holding a few ops: every op overlapping it is a bar of its own, with its name
    mid = float(s.op_start[g.num_ops // 2]) * 1e3
    window = (mid, mid + 1e-6)
    shown = ops_in_window(s, window)
    fig = timeline(s, g, c, window_ms=window)
    assert "binned" not in fig.layout.title.text and list(fig.layout.xaxis.range) == list(window)
    compute = [t for t in _bars(fig) if t.name.endswith("compute")]
    assert sum(len(t.x) for t in compute) == int(shown.sum()) >= 1
    assert sorted(n for t in compute for n in t.text) == sorted(g.op_names[i] for i in np.flatnonzero(shown))


def test_timeline_search_marks_matches_and_arrows_follow_edges(diamond):
    from dashboard.figures.timeline import match_ops

    g, c, s = diamond
    assert match_ops(g, "matmul").tolist() == [True, False, True, False]  # by type, any case
    assert match_ops(g, "  ").tolist() == [False] * 4
    fig = timeline(s, g, c, highlight=match_ops(g, "MatMul"), arrows=True)
    [marks] = [t for t in fig.data if t.name == "matches"]
    assert list(marks.text) == ["a", "c"]
    assert list(marks.x) == pytest.approx([(s.op_start[i] + s.op_end[i]) * 500 for i in (0, 2)])
    # a→b and c→d cross devices (dashed, transfers); a→c and b→d stay (solid)
    lines = {t.name: t for t in fig.data if t.name in ("dependency", "transfer")}
    assert lines["transfer"].line.dash == "dash" and len(lines["transfer"].x) == 6
    assert len(lines["dependency"].x) == 6
    assert list(lines["dependency"].x[:2]) == pytest.approx([s.op_end[0] * 1e3, s.op_start[2] * 1e3])


def test_a_click_on_a_busy_bin_names_its_span_and_a_window_still_too_full_is_binned_again():
    from dashboard.figures.timeline import bin_at_points, ops_in_window

    g, c = random_dag(ops=3 * TIMELINE_MAX_OPS, seed=4), PRESETS["k80x2"]()
    s = simulate(g, c, np.arange(g.num_ops) % 2)
    fig = timeline(s, g, c)
    lane = next(i for i, t in enumerate(fig.data) if t.meta == "bins" and t.name == "gpu:0")
    base, ends = np.asarray(fig.data[lane].base), np.asarray(fig.data[lane].customdata)[:, 1]
    clicked = bin_at_points(fig, [{"curve_number": lane, "point_index": 3}])
    assert clicked == pytest.approx((base[3], ends[3]))
    assert ends[3] - base[3] == pytest.approx(s.makespan * 1e3 / 200)  # 200 bins over the makespan
    # an op's bar or the invisible lane markers are no bin
    lanes = next(i for i, t in enumerate(fig.data) if t.name == "lanes")
    assert bin_at_points(fig, [{"curve_number": lanes, "point_index": 0}]) is None
    # a window over the first two thirds still holds more than TIMELINE_MAX_OPS ops: 200 bins across it
    window = (0.0, float(s.makespan * 1e3 * 2 / 3))
    assert ops_in_window(s, window).sum() > TIMELINE_MAX_OPS
    zoomed = timeline(s, g, c, window_ms=window)
    bins = [t for t in zoomed.data if t.meta == "bins"]
    assert bins and all(np.asarray(t.customdata)[:, 1] - np.asarray(t.base) == pytest.approx(window[1] / 200)
                        for t in bins)
    busy = sum(float(np.sum(t.x)) for t in bins if t.name == "gpu:0")
    inside = np.minimum(s.op_end, window[1] / 1e3) - np.minimum(s.op_start, window[1] / 1e3)
    assert busy / 1e3 == pytest.approx(float(inside[s.op_device == 0].sum()), rel=1e-9)
    # one bin of it holds few ops: the timeline zoomed into a bin draws them one by one
    span = bin_at_points(zoomed, [{"curve_number": zoomed.data.index(bins[0]), "point_index": 0}])
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
    from engine.run_records import write_schedule_tables
    from engine.runs import RunStore

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
    transfers CSV: any bin with a transfer in it was drawn full. Now each lane's bars add up to the time the
    lane is busy (at least one op or transfer running) by the exported tables, over the whole schedule and
    over a zoomed window."""
    monkeypatch.setattr(importlib.import_module("dashboard.figures.timeline"), "TIMELINE_MAX_OPS", 0)  # bin 300 ops
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
        for dev in c.devices:
            for lane, intervals in _lane_records(ops, transfers, dev.name).items():
                drawn = sum(float(np.sum(t.x)) for t in fig.data if t.meta == "bins" and t.name == lane) / 1e3
                assert drawn == pytest.approx(_union_in(intervals, lo, hi), rel=1e-9, abs=1e-12), (lane, window)
        busy = {t.name: t for t in fig.data if t.meta == "bins"}
        for t in busy.values():  # no bar longer than its bin, the percentage its share of the bin
            bins = np.asarray(t.customdata)[:, 1] - np.asarray(t.base)
            assert np.all(np.asarray(t.x) <= bins * (1 + 1e-9))
            assert np.asarray(t.customdata)[:, 0] == pytest.approx(np.asarray(t.x) / bins * 100, abs=0.051)


def test_binned_memcpy_lane_of_serial_sends_adds_up_to_the_copy_time(monkeypatch):
    """Placeto mode: one channel per device and no latency, so a memcpy lane is busy exactly the schedule's
    ``memcpy_time`` (the load profile's memcpy bar): the two figures agree."""
    monkeypatch.setattr(importlib.import_module("dashboard.figures.timeline"), "TIMELINE_MAX_OPS", 0)
    g, c = random_dag(ops=300, seed=5), PRESETS["k80x2"]()
    s = simulate(g, c, np.arange(g.num_ops) % 2)
    fig = timeline(s, g, c)
    for d, dev in enumerate(c.devices):
        drawn = sum(float(np.sum(t.x)) for t in fig.data if t.meta == "bins" and t.name == f"{dev.name} memcpy")
        assert drawn / 1e3 == pytest.approx(s.memcpy_time[d], rel=1e-9)
        assert s.memcpy_time[d] > 0


def test_union_intervals_merges_overlaps_and_drops_ops_that_never_ran():
    from dashboard.figures.timeline import union_intervals

    s, e = union_intervals(np.array([5.0, 0.0, 1.0, 2.0, np.nan, 7.0]), np.array([6.0, 2.0, 1.5, 3.0, np.nan, 7.0]))
    assert list(s) == [0.0, 5.0, 7.0] and list(e) == [3.0, 6.0, 7.0]
    assert [len(x) for x in union_intervals(np.array([]), np.array([]))] == [0, 0]


def test_a_click_on_a_bin_selects_no_op():
    """A bin's customdata holds numbers; an op named like one of them is not picked by a click on the bin."""
    from dashboard.widgets.schedule import op_at_points

    fig = go.Figure(go.Bar(x=[1.0], base=[0.0], customdata=[[50.0, 2.0, 1.0]], meta="bins", y=["gpu:0"]))
    assert op_at_points(fig, [{"curve_number": 0, "point_index": 0}], {"50.0": 0}) is None


# -- issue 33: one colour per run or placer, the same in every figure, and a legend for every line ---------


def _colliding_names(count):
    """``count`` run names that all hash to one home colour (as two Compare runs once did: #56B4E9 twice)."""
    from dashboard.figures.theme import run_color

    names = [f"run {i}" for i in range(500)]
    home = run_color(names[0])
    return [n for n in names if run_color(n) == home][:count]


@pytest.mark.parametrize("count", [2, 3, 10, 14])
def test_runs_shown_together_never_share_a_colour(count):
    from dashboard.figures.theme import run_color, run_colors

    colliding = _colliding_names(3)[:min(count, 3)]
    home = run_color(colliding[0])
    others = [n for n in (f"placer-{i}" for i in range(500)) if run_color(n) != home][:count - len(colliding)]
    names = colliding + others
    colors = run_colors(names)
    assert sorted(colors) == sorted(names) and len(set(colors.values())) == count
    assert run_colors(list(reversed(names))) == colors  # the set decides, not the order
    assert colors[min(colliding)] == home  # the first of those sharing a home colour keeps it


def test_a_run_keeps_its_home_colour_unless_another_claims_it_first():
    from dashboard.figures.theme import run_color, run_colors

    a, b = _colliding_names(2)
    assert run_colors([a])[a] == run_color(a) == run_color(b)
    assert run_colors([a, b])[min(a, b)] == run_color(a) and run_colors([a, b])[max(a, b)] != run_color(a)


def test_learning_curves_give_each_run_its_colour_and_every_line_a_legend_entry():
    """Compare drew two runs in one colour (#56B4E9) and named only the smoothed line in the legend."""
    a, b = _colliding_names(2)
    curve = _curve(4, [0.004, 0.006, 0.005, 0.007], reward=[-1.0, -2.0, -1.0, -3.0], entropy=[0.7, 0.6, 0.5, 0.4],
                   learning_rate=[0.01, 0.008, 0.006, 0.004])
    seeds = [_curve(4, [0.004, 0.005, 0.005, 0.006]), _curve(4, [0.005, 0.006, 0.004, 0.005])]
    fig = learning_curves({a: curve, b: curve, "seeded": seeds})
    colors = {name: _traces(fig, name)[name].line.color for name in (a, b)}
    colors["seeded"] = _traces(fig, "seeded")["seeded mean of 2 seeds"].line.color
    assert len(set(colors.values())) == 3
    for t in fig.data:  # every trace named, every line drawn in its run's colour
        run = next(n for n in (a, b, "seeded") if t.name == n or t.name.startswith(n + " "))
        assert t.name and (t.line.color or t.fillcolor) == colors[run]
    shown = {t.legendgroup: t.name for t in fig.data if t.showlegend is not False}
    assert {t.legendgroup for t in fig.data} == set(shown)  # every kind of line of every run in the legend
    assert {shown[g] for g in shown if g.startswith(a)} == {a, f"{a} sampled", f"{a} rolling median (25)", f"{a} best"}
    assert {shown[g] for g in shown if g.startswith("seeded")} == {"seeded mean of 2 seeds", "seeded 95% CI"}
    # one entry per kind of line: a run's smoothed line is one entry for its four panels
    assert sum(t.showlegend is not False for t in fig.data if t.legendgroup == a) == 1
    assert len([t for t in fig.data if t.legendgroup == a]) == 4


def test_the_same_run_has_the_same_colour_in_every_figure():
    a, b = _colliding_names(2)
    curves = learning_curves({a: _curve(3, [1.0, 2.0, 3.0]), b: _curve(3, [2.0, 2.0, 1.0])})
    bars = makespan_bars([{"label": b, "makespan_s": 1.0}, {"label": a, "makespan_s": 2.0}])
    cdf = cdf_figure({a: [1.0, 2.0], b: [1.5]})
    for name in (a, b):
        color = _traces(curves, name)[name].line.color
        assert _bar_traces(bars)[name].marker.color == color
        assert next(t for t in cdf.data if t.name == name).line.color == color


def test_learning_rate_axis_prints_plain_numbers():
    """A learning rate of 1e-4 read "100µ" on the axis (plotly's SI prefixes)."""
    from dashboard.figures.theme import SYSTEM_CHROMIUM, figure_image

    fig = learning_curves({"a": _curve(3, [1.0, 2.0, 3.0], learning_rate=[1e-4, 1e-4, 5e-5])})
    axes = [name for name in fig.layout.to_plotly_json() if name.startswith("yaxis")]
    assert len(axes) == 4 and {fig.layout[name].tickformat for name in axes} == {"~g"}
    if SYSTEM_CHROMIUM.exists():  # as drawn: kaleido's SVG
        import re

        svg = figure_image(fig, "svg", width=1000, height=640).decode()
        labels = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
        assert "0.0001" in labels and not any("µ" in t or "μ" in t for t in labels)
