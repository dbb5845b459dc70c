"""The app's plotly figures, checked against hand-built schedules and the Schedule's own totals."""

import numpy as np
import pytest

from dashboard.figures import cdf_figure, learning_curves, load_profile, makespan_bars, memory_over_time
from dashboard.figures.charts import SINGLE_DEVICE_LABEL, copy_engine_load, phase_compute
from dashboard.figures.curves import bootstrap_band, ema, rolling_median, thin_rows
from engine.generators import random_dag
from engine.graph.compgraph import CompGraph
from engine.presets import PRESETS
from engine.sim.schedule import Schedule
from engine.sim.simulator import simulate

MEMCPY = "memcpy (copy engines busy)"


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


def test_load_profile_stacks_phases_to_compute_time(diamond):
    g, c, s = diamond
    fig = load_profile(s, g, c)
    by_name = {t.name: np.asarray(t.y) for t in fig.data}
    assert set(by_name) == {"forward", "backward", "update", "compute", MEMCPY}
    # a (forward) and c (update) ran on gpu:0, b (backward) and d (no phase) on gpu:1
    assert by_name["forward"] == pytest.approx([1.0, 0.0])
    assert by_name["update"] == pytest.approx([3.0, 0.0])
    assert by_name["backward"] == pytest.approx([0.0, 2.0])
    assert by_name["compute"] == pytest.approx([0.0, 4.0])
    stacked = sum(by_name[p] for p in ("forward", "backward", "update", "compute"))
    assert stacked == pytest.approx(s.compute_time * 1e3)
    # gpu:0 sends a's and c's outputs, 7.6 MB each at 7.6 GB/s: 1 ms each, one after the other
    assert by_name[MEMCPY] == pytest.approx([2.0, 0.0])
    assert by_name[MEMCPY] == pytest.approx(s.memcpy_time * 1e3)
    assert list(next(t for t in fig.data if t.name == MEMCPY).text) == ["15.2 MB sent", "0 B sent"]


def _two_sends(overlap: bool) -> tuple[CompGraph, object, Schedule]:
    """gpu:0 sends a's 2 MB output over [0, 2] ms (to gpu:1 and, as one shared placeto transfer, gpu:2) and
    b's 3 MB over [1, 3] ms — overlapping — or over [2, 4] ms when not ``overlap``; a 4-device cluster."""
    g = CompGraph("two sends", ["a", "b", "c", "d"], compute_any=np.full(4, 1e-3),
                  output_bytes=np.array([2e6, 3e6, 0, 0]), persistent_bytes=np.zeros(4), edge_src=[0, 1],
                  edge_dst=[2, 3])
    c = PRESETS["k80x4"]()
    b0 = 1e-3 if overlap else 2e-3
    s = Schedule(
        makespan=5e-3, op_device=np.array([0, 0, 1, 1]), op_start=np.array([0, 0, 3, 4]) * 1e-3,
        op_end=np.array([0, 0, 3, 4]) * 1e-3 + 1e-3, transfer_op=np.array([0, 0, 1]),
        transfer_src=np.array([0, 0, 0]), transfer_dst=np.array([1, 2, 1]), transfer_bytes=np.array([2e6, 2e6, 3e6]),
        transfer_start=np.array([0.0, 0.0, b0]), transfer_end=np.array([2e-3, 2e-3, b0 + 2e-3]),
        compute_time=np.array([2e-3, 2e-3, 0, 0]), memcpy_time=np.array([4e-3, 0, 0, 0]),
        peak_memory=np.zeros(4), memory_capacity=np.full(4, 11e9), persistent_memory=np.zeros(4),
        transfer_primary=np.array([True, False, True]), mode="placeto")
    return g, c, s


def test_load_profile_draws_memcpy_as_copy_engine_busy_time_not_summed_transfers():
    """Issue 58: HEFT's gpu:3 showed 110 ms of memcpy in an 84 ms step: the bar summed transfers in flight at
    once. Transfers over [0, 2] and [1, 3] ms keep the copy engines busy 3 ms (their union); summed they are
    4 ms, which the hover gives and explains. The shared placeto row counts once; 2 + 3 MB were sent."""
    g, c, s = _two_sends(overlap=True)
    load = copy_engine_load(s, 4)
    assert load["busy"] == pytest.approx([3e-3, 0, 0, 0]) and load["summed"] == pytest.approx([4e-3, 0, 0, 0])
    assert load["bytes"] == pytest.approx([5e6, 0, 0, 0])
    fig = load_profile(s, g, c)
    [bar] = [t for t in fig.data if t.name == MEMCPY]
    assert list(bar.y) == pytest.approx([3.0, 0, 0, 0]) and next(iter(bar.text)) == "5 MB sent"
    assert np.asarray(bar.customdata)[0, 0] == pytest.approx(4.0)
    assert "summed" in bar.hovertemplate and "overlap" in bar.hovertemplate
    assert fig.layout.yaxis.title.text == "busy time (ms)"
    # one after the other, [0, 2] and [2, 4] ms, busy and summed agree: 4 ms
    assert copy_engine_load(_two_sends(overlap=False)[2], 4)["busy"] == pytest.approx([4e-3, 0, 0, 0])


def test_memory_of_a_graph_without_sizes_is_unknown_not_zero():
    """Issue 58: memory over time drew flat 0 GB lines for a graph whose source gives no sizes."""
    _g, c, s = _two_sends(overlap=True)  # no byte held anywhere: the schedule says nothing about memory
    for fig in (memory_over_time(s, c), memory_over_time(s, c, memory_known=False)):
        assert not fig.data and "unknown" in fig.layout.title.text
        assert "unknown" in fig.layout.annotations[0].text
    unknown = CompGraph("doppler-like", ["a", "b"], compute_any=np.full(2, 1e-3), output_bytes=np.zeros(2),
                        persistent_bytes=np.zeros(2), edge_src=[0], edge_dst=[1], memory_known=False)
    sim = simulate(unknown, c, np.array([0, 1]), record_memory=True)
    assert not memory_over_time(sim, c, memory_known=unknown.memory_known).data
    [bar] = [t for t in load_profile(sim, unknown, c).data if t.name == MEMCPY]
    assert set(bar.text) == {"bytes unknown"}


def test_the_pages_tell_memory_over_time_what_the_graph_knows():
    """Issue 58 follow-up: the Place / Compare schedule tabs and the Runs page's figure pass ``graph.memory_known``,
    so a graph whose source gives sizes, all of them 0 B, draws each device's line at 0 GB, not "unknown" (which a
    schedule holding no byte would otherwise suggest)."""
    from types import SimpleNamespace

    from dashboard.widgets.run_panel import FIGURES
    from dashboard.widgets.schedule import schedule_figure

    g = CompGraph("no bytes", ["a", "b"], compute_any=np.full(2, 1e-3), output_bytes=np.zeros(2),
                  persistent_bytes=np.zeros(2), edge_src=[0], edge_dst=[1])
    c = PRESETS["k80x2"]()
    s = simulate(g, c, np.array([0, 1]), record_memory=True)
    assert g.memory_known and not s.peak_memory.any()
    for fig in (schedule_figure("memory", s, g, c, None), FIGURES["memory over time"](s, SimpleNamespace(graph=g,
                                                                                                       cluster=c))):
        assert [t.name for t in fig.data] == ["gpu:0", "gpu:1"]
        assert all(max(t.y) == 0.0 for t in fig.data) and "unknown" not in fig.layout.title.text


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


def test_the_entropy_axis_starts_at_zero_and_reaches_uniform():
    """Issue 58 follow-up: an entropy falling 0.3 % (0.6931 → 0.6910 nats) filled the panel's height and read as a
    collapse. The axis runs from 0 to the largest entropy drawn (0.6931 · 1.05 = 0.72776) or, given, the uniform
    policy's (ln 4 = 1.38629 · 1.05 = 1.45561), drawn dotted."""
    import math

    curve = {"episode": [1, 2, 3, 4], "sampled_runtime": [1e-3] * 4, "entropy": [0.6931, 0.6924, 0.6917, 0.6910]}
    fig = learning_curves({"run": curve}, smoothing=0.0)
    assert fig.layout.annotations[2].text == "entropy" and fig.layout.yaxis3.range == pytest.approx((0.0, 0.727755))
    fig = learning_curves({"run": curve}, smoothing=0.0, uniform_entropy=math.log(4))
    assert fig.layout.yaxis3.range == pytest.approx((0.0, 1.455609), abs=1e-6)
    [uniform] = [s for s in fig.layout.shapes if s.yref == "y3"]
    assert uniform.y0 == uniform.y1 == pytest.approx(math.log(4)) and uniform.line.dash == "dot"
    seeds = learning_curves({"two seeds": [curve, {**curve, "entropy": [0.8, 0.7, 0.6, 0.5]}]}, smoothing=0.0)
    assert seeds.layout.yaxis3.range == pytest.approx((0.0, 0.84))  # 0.8 · 1.05


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
