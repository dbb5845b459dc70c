"""The app's plotly figures, checked against hand-built schedules and the Schedule's own totals."""

import itertools

import numpy as np
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
from dashboard.figures.charts import phase_compute
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
        busy = float(np.sum(np.asarray(t.customdata) / 100 * np.asarray(t.x))) / 1e3
        # the utilization per bin is rounded to 0.1 %, so compare loosely
        assert busy == pytest.approx(s.compute_time[d], rel=2e-3)


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


def test_makespan_bars_with_shared_and_separate_lower_bounds():
    rows = [{"label": "a", "makespan_s": 2e-3, "lower_bound_s": 1e-3},
            {"label": "b", "makespan_s": 3e-3, "lower_bound_s": 1e-3, "oom": True}]
    fig = makespan_bars(rows)
    assert list(fig.data[0].y) == pytest.approx([2.0, 3.0])
    assert fig.data[0].marker.color[1] != fig.data[0].marker.color[0]
    assert [sh.y0 for sh in fig.layout.shapes] == pytest.approx([1.0])
    rows[1]["lower_bound_s"] = 2e-3
    fig = makespan_bars(rows)
    assert list(fig.data[1].y) == pytest.approx([1.0, 2.0])


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
    colors = dict(zip(fig.data[0].x, fig.data[0].marker.color, strict=True))
    assert dict(zip(again.data[0].x, again.data[0].marker.color, strict=True)) == colors  # colour follows the label
    assert list(fig.data[0].customdata) == ["run-1", ""]
    assert list(fig.data[0].marker.pattern.shape) == ["", "x"]


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
    base, width = np.asarray(fig.data[lane].base), np.asarray(fig.data[lane].x)
    clicked = bin_at_points(fig, [{"curve_number": lane, "point_index": 3}])
    assert clicked == pytest.approx((base[3], base[3] + width[3]))
    assert width[3] == pytest.approx(s.makespan * 1e3 / 200)  # 200 bins over the makespan
    # an op's bar or the invisible lane markers are no bin
    lanes = next(i for i, t in enumerate(fig.data) if t.name == "lanes")
    assert bin_at_points(fig, [{"curve_number": lanes, "point_index": 0}]) is None
    # a window over the first two thirds still holds more than TIMELINE_MAX_OPS ops: 200 bins across it
    window = (0.0, float(s.makespan * 1e3 * 2 / 3))
    assert ops_in_window(s, window).sum() > TIMELINE_MAX_OPS
    zoomed = timeline(s, g, c, window_ms=window)
    bins = [t for t in zoomed.data if t.meta == "bins"]
    assert bins and all(np.asarray(t.x) == pytest.approx(window[1] / 200) for t in bins)
    busy = sum(float(np.sum(np.asarray(t.customdata) / 100 * np.asarray(t.x))) for t in bins if t.name == "gpu:0")
    inside = np.minimum(s.op_end, window[1] / 1e3) - np.minimum(s.op_start, window[1] / 1e3)
    assert busy / 1e3 == pytest.approx(float(inside[s.op_device == 0].sum()), rel=2e-3)
    # one bin of it holds few ops: the timeline zoomed into a bin draws them one by one
    span = bin_at_points(zoomed, [{"curve_number": zoomed.data.index(bins[0]), "point_index": 0}])
    assert "binned" not in timeline(s, g, c, window_ms=span).layout.title.text
