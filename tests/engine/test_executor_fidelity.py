"""Fidelity statistics, the validate workflow, its figures and the Fidelity page."""

from __future__ import annotations

import dataclasses
import os
from typing import ClassVar

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from dashboard.figures.fidelity import fidelity_scatter, measured_vs_simulated
from engine.cluster import SIMULATION_MODES, Device, Link
from engine.errors import PlacelabError
from engine.executor.calibration import (
    bus_capacity,
    bus_states,
    derive,
    describe_bus,
    machine_cluster,
    median_figures,
    recalibrated,
    shared_bus_capacity,
)
from engine.executor.fidelity import (
    fidelity_stats,
    load_measured_schedule,
    noise_ceiling,
    refine_cluster,
    repeat_agreement,
    replay_graph,
    replay_makespan,
)
from engine.generators import random_dag
from engine.sim.simulator import Simulator
from engine.store.records import load_placement_run
from engine.store.runs import RunStore
from placelab.fidelity import validate
from policies.registry import make_placer
from tests.clusters import uniform_cluster


def test_fidelity_stats_by_hand():
    s = fidelity_stats([1.0, 2.0, 3.0, 4.0], [1.1, 1.8, 3.3, 4.0])
    # relative errors 0.1, 0.1, 0.1, 0: median 0.1, max 0.1; the order is kept: Spearman 1
    assert s["median_rel_error"] == pytest.approx(0.1) and s["max_rel_error"] == pytest.approx(0.1)
    assert s["spearman"] == pytest.approx(1.0)
    assert s["pearson"] == pytest.approx(np.corrcoef([1, 2, 3, 4], [1.1, 1.8, 3.3, 4.0])[0, 1])
    assert s["placements"] == 4 and s["mean_ratio"] == pytest.approx((1.1 + 0.9 + 1.1 + 1.0) / 4)
    # a reversed order: Spearman -1; constant predictions: correlations undefined
    assert fidelity_stats([1.0, 2.0, 3.0], [3.0, 2.0, 1.0])["spearman"] == pytest.approx(-1.0)
    flat = fidelity_stats([1.0, 2.0, 4.0], [2.0, 2.0, 2.0])
    assert flat["pearson"] is None and flat["spearman"] is None and flat["max_rel_error"] == pytest.approx(1.0)


def test_repeat_agreement_by_hand():
    # two repeats: run 1 = [1, 2, 3], run 2 = [2, 2, 5] over three placements
    s = repeat_agreement([[1.0, 2.0], [2.0, 2.0], [3.0, 5.0]])
    # deviations (-1, 0, 1) and (-1, -1, 2): Pearson 3 / sqrt(2 * 6); ranks (1, 2, 3) and (1.5, 1.5, 3):
    # 1.5 / sqrt(2 * 1.5); relative errors 1, 0, 2/3
    assert s["pearson"] == pytest.approx(3 / np.sqrt(12)) and s["spearman"] == pytest.approx(1.5 / np.sqrt(3))
    assert s["median_rel_error"] == pytest.approx(2 / 3) and s["max_rel_error"] == pytest.approx(1.0)
    assert s["placements"] == 3 and s["repeat_pairs"] == 1
    # three repeats: the median over the pairs (1,2), (1,3), (2,3) of each figure
    runs = [[1.0, 2.0, 1.0], [2.0, 2.0, 2.0], [3.0, 5.0, 3.0]]
    s3 = repeat_agreement(runs)
    pairs = [fidelity_stats([r[a] for r in runs], [r[b] for r in runs]) for a, b in ((0, 1), (0, 2), (1, 2))]
    assert s3["repeat_pairs"] == 3
    for key in ("pearson", "spearman", "median_rel_error", "max_rel_error", "mean_ratio"):
        assert s3[key] == pytest.approx(float(np.median([p[key] for p in pairs])))
    assert s3["spearman"] == pytest.approx(1.5 / np.sqrt(3))  # pairs: 0.866, 1, 0.866
    # identical repeats agree exactly; one repeat cannot be set against another
    same = repeat_agreement([[1.0, 1.0], [2.0, 2.0], [4.0, 4.0]])
    assert same["spearman"] == pytest.approx(1.0) and same["max_rel_error"] == 0.0
    assert repeat_agreement([[1.0], [2.0], [3.0]]) is None
    # a constant repeat leaves the correlations undefined
    assert repeat_agreement([[1.0, 2.0], [1.0, 3.0], [1.0, 4.0]])["pearson"] is None


def test_noise_ceiling_by_hand():
    # two repeats, one split: run 1 = (1, 2, 3), run 2 = (2, 1, 3); ranks differ by 1, 1, 0, so
    # Spearman = 1 - 6 * 2 / (3 * 8) = 0.5; Spearman-Brown 2 * 0.5 / 1.5 = 2/3; ceiling sqrt(2/3)
    s = noise_ceiling([[1.0, 2.0], [2.0, 1.0], [3.0, 3.0]])
    assert s["splits"] == 1 and s["split_half_spearman"] == pytest.approx(0.5)
    assert s["reliability"] == pytest.approx(2 / 3) and s["spearman_ceiling"] == pytest.approx(np.sqrt(2 / 3))
    # identical repeats: no noise, the ceiling is 1
    assert noise_ceiling([[1.0, 1.0, 1.0, 1.0], [3.0] * 4, [2.0] * 4])["spearman_ceiling"] == pytest.approx(1.0)
    # every split once: 4 repeats in 3 ways, 3 in 3 ({0}, {1}, {2} against the rest), 5 in 10
    assert [noise_ceiling(np.arange(12.0).reshape(4, 3) if r == 3 else np.add.outer(np.arange(4.0), np.zeros(r)))
            ["splits"] for r in (4, 3, 5)] == [3, 3, 10]
    # undefined: one repeat, two placements, constant halves
    assert noise_ceiling([[1.0], [2.0], [3.0]]) is None and noise_ceiling([[1.0, 2.0], [2.0, 3.0]]) is None
    assert noise_ceiling([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]) is None


def test_noise_ceiling_matches_the_normal_theory():
    """True makespans ~ N(0, 1), each run adds N(0, 2²) noise, 10 runs: a half's mean of 5 runs has
    noise variance 4 / 5, so the halves correlate (Pearson) at rho = 1 / (1 + 4/5); for a bivariate
    normal, Spearman = (6 / pi) asin(rho / 2) (Pearson 1907)."""
    rng = np.random.default_rng(0)
    true = rng.normal(0.0, 1.0, 4000)
    s = noise_ceiling(true[:, None] + rng.normal(0.0, 2.0, (4000, 10)))
    rho = 1.0 / (1.0 + 4.0 / 5.0)
    expected = 6.0 / np.pi * np.arcsin(rho / 2.0)
    assert s["splits"] == 126 and s["split_half_spearman"] == pytest.approx(expected, abs=0.02)
    assert s["reliability"] == pytest.approx(2 * expected / (1 + expected), abs=0.02)


def test_scatter_has_one_series_per_mode_and_the_diagonal():
    fig = fidelity_scatter([0.010, 0.020], {"placeto": [0.011, 0.019], "default": [0.012, 0.018]},
                           sources=["a", "b"])
    names = [t.name for t in fig.data]
    assert names == ["placeto", "default", "simulated = measured"]
    assert list(fig.data[0].x) == pytest.approx([10.0, 20.0]) and list(fig.data[1].y) == pytest.approx([12.0, 18.0])
    diag = fig.data[2]
    assert list(diag.x) == list(diag.y) == pytest.approx([10.0, 20.0])  # spans every point, both axes


@pytest.fixture(scope="module")
def validation(tmp_path_factory):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("validation executes on 2 CPU workers")
    root = tmp_path_factory.mktemp("runs")
    g = random_dag(ops=12, seed=3)
    g = type(g)(g.name, g.op_names, compute_any=g.min_compute() * (2e-3 / g.min_compute().max()),
                edge_src=g.edge_src, edge_dst=g.edge_dst, edge_bytes=np.full(g.num_edges, 20_000.0))
    c = machine_cluster(2)
    v = validate(g, c, placements=4, placers=["round-robin"], repeats=2, warmup=0, store=RunStore(root))
    return v, RunStore(root), g, c


def test_validate_executes_and_simulates_every_placement(validation):
    v, store, g, c = validation
    assert v.sources[0] == "round-robin" and len(v.sources) == 4 and v.sources[1].startswith("random#")
    assert len({p.tobytes() for p in v.placements}) == 4
    assert set(v.stats) | set(v.unavailable) == set(SIMULATION_MODES)
    for mode, values in v.predicted.items():
        assert values == pytest.approx([Simulator(g, c, mode=mode).makespan(p) for p in v.placements])
        assert v.stats[mode] == fidelity_stats(v.measured_mean, values)
    assert all(m > 0 for m in v.measured_mean)
    assert len(v.replayed) == len(v.op_time_ratio) == 4 and all(r > 0 for r in v.replayed + v.op_time_ratio)
    assert v.replay_stats == fidelity_stats(v.measured_mean, v.replayed)
    # every repeat's schedule is kept, per placement, and they average to the measured means
    assert [len(runs) for runs in v.schedules] == [2] * 4 and any(s is v.example for s in v.schedules[0])
    assert v.measured_mean == pytest.approx([np.mean([s.makespan for s in runs]) for runs in v.schedules])
    assert v.refined is None  # refine=False
    # the first placement's stored run, replayed, is the replay of that one run
    one = Simulator(replay_graph(g, v.placements[0], v.example), c).run(v.placements[0])
    np.testing.assert_allclose(one.op_end - one.op_start, v.example.op_end - v.example.op_start, atol=1e-12)
    run = store.load(v.run_id)
    assert run.meta["kind"] == "validate" and run.meta["metrics"]["placements"] == 4
    assert run.read_table("fidelity.csv")["source"] == v.sources
    assert run.read_table("fidelity.csv")["replayed_s"] == pytest.approx(v.replayed)
    assert run.meta["metrics"]["replay"] == pytest.approx(v.replay_stats)
    repeats = [[s.makespan for s in runs] for runs in v.schedules]
    assert v.repeat_stats == repeat_agreement(repeats) and v.repeat_stats["repeat_pairs"] == 1
    assert run.meta["metrics"]["repeat_agreement"] == pytest.approx(v.repeat_stats)
    pr = load_placement_run(run)
    measured = load_measured_schedule(run, pr.graph, pr.cluster)
    np.testing.assert_array_equal(measured.op_device, v.placements[0])
    assert measured.makespan == pytest.approx(v.example.makespan)


@pytest.fixture
def fake_executor(monkeypatch):
    """``validate``'s executor replaced: each call is logged as ``(placement bytes, repeats, warmup)``; a
    "measured" run is the simulated schedule, its makespan times ``stretch(calls so far)``."""
    import placelab.fidelity as fid
    from engine.executor import Measurement
    from engine.placement import Placement

    class FakeExecutor:
        log: ClassVar[list] = []  # a fresh class per test
        stretch = staticmethod(lambda calls: 1.0)

        def __init__(self, cluster):
            self.cluster = cluster

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def run(self, graph, dev, *, repeats, warmup):
            self.log.append((dev.tobytes(), repeats, warmup))
            s = Simulator(graph, self.cluster).run(Placement(dev))
            k = self.stretch(len(self.log))
            return Measurement([dataclasses.replace(s, makespan=s.makespan * k) for _ in range(repeats)])

    monkeypatch.setattr(fid, "Executor", FakeExecutor)
    return FakeExecutor


@pytest.mark.parametrize("interleave", [True, False])
def test_validate_runs_the_repeats_in_rounds_unless_told_otherwise(fake_executor, interleave):
    """Interleaved (the default): every placement once per round, each call with its warm-up; blocked:
    one call per placement with all its repeats. Either way each placement keeps every run."""
    calls = fake_executor.log
    fake_executor.stretch = staticmethod(lambda n: float(n))  # a run's makespan × the call count
    g, c = random_dag(ops=10, seed=1), machine_cluster(2)
    v = validate(g, c, placements=3, placers=["round-robin"], repeats=2, warmup=1, interleave=interleave)
    keys = [p.tobytes() for p in v.placements]
    if interleave:
        assert calls == [(k, 1, 1) for k in keys] * 2
        makespans = [[i + 1, i + 4] for i in range(3)]  # placement i ran in calls i + 1 and i + 4
    else:
        assert calls == [(k, 2, 1) for k in keys]
        makespans = [[i + 1, i + 1] for i in range(3)]
    sims = [Simulator(g, c).makespan(p) for p in v.placements]
    np.testing.assert_allclose([[s.makespan for s in runs] for runs in v.schedules],
                               [[m * sim for m in ms] for ms, sim in zip(makespans, sims, strict=True)])
    assert v.measured_mean == pytest.approx([np.mean(m) * sim for m, sim in zip(makespans, sims, strict=True)])


@pytest.mark.parametrize("placers", [["round-robin"], []])
def test_the_perturbed_sample_goes_from_the_placers_placements_to_random(fake_executor, placers):
    """The k-th of the m placements after the placers' has a share k / m of its ops redrawn at random:
    on two devices about half of those land on the other device, so it differs from its base in about
    k / (2m) of the ops (no placers: the base is every op on device 0)."""
    g, c = random_dag(ops=400, seed=3), machine_cluster(2)
    v = validate(g, c, placements=len(placers) + 5, placers=placers, repeats=2, sample="perturbed")
    base = make_placer("round-robin").place(g, c, seed=0).devices if placers else np.zeros(g.num_ops, int)
    assert v.sources[:len(placers)] == placers
    name = placers[0] if placers else "single-device"
    assert v.sources[len(placers):] == [f"{name}~{k / 5:.2f}" for k in range(1, 6)]
    moved = [float(np.mean(p != base)) for p in v.placements[len(placers):]]
    assert moved == pytest.approx([k / 10 for k in range(1, 6)], abs=0.06)
    assert v.noise_stats["splits"] == 1 and v.noise_stats["spearman_ceiling"] == pytest.approx(1.0)  # fake runs
    with pytest.raises(PlacelabError, match="unknown placement sample 'nosuch'"):
        validate(g, c, placements=2, sample="nosuch")


def _figures(hop_scale: float, dispatch: float) -> dict:
    """Raw calibration figures (:func:`engine.executor.calibration.measure`) worked out by hand."""
    return {"op_overhead_s_per_device": [dispatch, 3 * dispatch], "dispatch_s_per_zero_op": 1e-6,
            "copy_bytes": [1_000, 3_000], "copy_hop_s": [2e-6 * hop_scale, 4e-6 * hop_scale],
            "copy_alone_s": 1e-3 * hop_scale, "copy_both_s": 1.5e-3 * hop_scale}


def test_derive_and_median_figures_by_hand():
    link, sim = derive(_figures(1.0, 2e-6))
    # bandwidth: 2,000 more bytes in 2 µs more; latency: the small hop less its bytes at that rate
    assert link.bandwidth_bytes_per_s == pytest.approx(1e9) and link.latency_s == pytest.approx(1e-6)
    assert [b for b, _ in link.copy_curve] == [1_000, 3_000]
    assert [t for _, t in link.copy_curve] == pytest.approx([1e-6, 3e-6])
    assert sim.mode == "work_conserving" and sim.copy_occupies_sender and sim.copy_bus_shared
    assert sim.dispatch_s == pytest.approx(4e-6)  # the mean of the devices' overheads
    assert sim.copy_bus_capacity == pytest.approx(2 / 1.5)
    med = median_figures([_figures(1.0, 2e-6), _figures(3.0, 4e-6), _figures(2.0, 9e-6)])
    assert med["copy_hop_s"] == pytest.approx([4e-6, 8e-6]) and med["copy_bytes"] == [1_000, 3_000]
    assert med["op_overhead_s_per_device"] == pytest.approx([4e-6, 12e-6]) and med["copy_alone_s"] == 2e-3
    fewer = _figures(9.0, 9e-6) | {"copy_bytes": [1_000], "copy_hop_s": [1.0]}  # less shared memory free
    assert median_figures([_figures(1.0, 2e-6), _figures(3.0, 4e-6), fewer]) == \
        median_figures([_figures(1.0, 2e-6), _figures(3.0, 4e-6)])
    one = derive(_figures(1.0, 2e-6) | {"copy_bytes": [], "copy_hop_s": [], "copy_alone_s": None,
                                         "copy_both_s": None})
    assert one[0].bandwidth_bytes_per_s == 1e12 and not one[1].copy_bus_shared  # one device: no copies


def test_bus_capacity_and_bus_states_by_hand():
    assert bus_capacity(1e-3, 1.5e-3) == pytest.approx(2 / 1.5)
    assert bus_capacity(1e-3, 0.5e-3) == 2.0 and bus_capacity(1e-3, 3e-3) == 1.0  # clipped to [1, 2]
    s = bus_states([1.1, 1.2, 2.0, 1.9, 1.1, 1.0, 1.05])
    # shared, shared | full, full | shared × 3: two switches, the longest stretch the last three
    assert s == {"readings": 7, "full_share": pytest.approx(2 / 7), "shared_median": pytest.approx(1.1),
                 "full_median": pytest.approx(1.95), "switches": 2, "longest_stretch": 3}
    steady = bus_states([1.2, 1.3, 1.1])
    assert steady["switches"] == 0 and steady["full_median"] is None and steady["longest_stretch"] == 3
    assert bus_states([2.0, 1.0], split=0.5)["full_share"] == 1.0
    assert bus_states([])["readings"] == 0
    plain = machine_cluster(2)
    assert shared_bus_capacity(plain) is None  # its copies share no bus: no capacity to set against
    shared = plain.with_simulation(mode="work_conserving", copy_occupies_sender=True, copy_bus_shared=True,
                                   copy_bus_capacity=1.2)
    assert shared_bus_capacity(shared) == 1.2


def test_describe_bus_says_when_the_machine_switched_state_or_the_calibration_met_the_other():
    switching = [1.1, 2.0, 1.2]
    text = describe_bus(switching)
    assert text.startswith("the probes read a capacity of 1.10–2.00 copies at full speed")
    assert "switched 2 times between the shared (~1.15) and the full (~2.00) state" in text
    assert "the recalibrated per run row predicts each run" in text
    steady = [1.1, 1.2]
    assert describe_bus(steady) == "the probes read a capacity of 1.10–1.20 copies at full speed"
    # a steady bus in the other state than the calibration met: say which row to read
    assert "calibrated at 1.98, in the other state" in describe_bus(steady, 1.98)
    assert describe_bus(steady, 1.16) == describe_bus(steady)
    assert "other state" not in describe_bus(switching, 1.98)  # switching: said otherwise
    assert describe_bus([]) == "no readings"


def test_validate_recalibrates_in_every_round(fake_executor, monkeypatch):
    """The probes run before each round and after the last; the recalibrated cluster is their median."""
    import placelab.fidelity as fid

    scales = iter([1.0, 5.0, 2.0, 3.0])
    both = iter([1.5, 1.0, 1.5, 1.5])  # the bus: shared, full, shared, shared

    def fake_measure(ex, *, kind, repeats):
        fake_executor.log.append("probe")
        assert kind == "cpu" and repeats == 1
        s = next(scales)
        return _figures(s, 2e-6) | {"copy_both_s": next(both) * 1e-3 * s}

    ticks = iter(range(1000))  # the clock advances by 1 at every reading
    monkeypatch.setattr(fid, "measure", fake_measure)
    monkeypatch.setattr(fid, "_clock", lambda: float(next(ticks)))
    g = random_dag(ops=10, seed=1)
    g = type(g)(g.name, g.op_names, compute_any=g.min_compute(), edge_src=g.edge_src, edge_dst=g.edge_dst,
                edge_bytes=np.full(g.num_edges, 2_000.0))
    c = machine_cluster(2)
    v = validate(g, c, placements=2, placers=["round-robin"], repeats=3, recalibrate=True)
    order = ["probe" if call == "probe" else "run" for call in fake_executor.log]
    assert order == ["probe", "run", "run"] * 3 + ["probe"]
    # median of the hop scales 1, 5, 2, 3 is 2.5: hops of 5 and 10 µs, so 0.4 GB/s and 2.5 µs latency
    link = v.recalibrated.link
    assert link.bandwidth_bytes_per_s == pytest.approx(2_000 / 5e-6) and link.latency_s == pytest.approx(2.5e-6)
    assert v.recalibrated.devices == c.devices and v.recalibrated.simulation.dispatch_s == pytest.approx(4e-6)
    assert v.recalibrated_predicted == pytest.approx([Simulator(g, v.recalibrated).makespan(p) for p in v.placements])
    assert v.recalibrated_stats == fidelity_stats(v.measured_mean, v.recalibrated_predicted)
    assert v.rows()["simulated_recalibrated_s"] == v.recalibrated_predicted
    assert recalibrated(c, median_figures(v.probes)) == v.recalibrated and len(v.probes) == 4
    assert v.bus_capacities == pytest.approx([2 / 1.5, 2.0, 2 / 1.5, 2 / 1.5])
    # per run: probe k spans ticks 6k and 6k + 1 (midpoint 6k + 0.5), the round's two runs follow at
    # 6k + 2.5 and 6k + 4.5: a third and two thirds of the way to the next probe
    on_probe = [[Simulator(g, recalibrated(c, raw)).makespan(p) for raw in v.probes] for p in v.placements]
    assert on_probe[0][1] > on_probe[0][0]  # probe 2's copies were 5× as slow as probe 1's
    expected = [np.mean([(1 - w) * m[r] + w * m[r + 1] for r in range(3)])
                for m, w in zip(on_probe, (1 / 3, 2 / 3), strict=True)]
    assert v.per_run_predicted == pytest.approx(expected)
    assert v.per_run_stats == fidelity_stats(v.measured_mean, v.per_run_predicted)
    assert v.rows()["simulated_recalibrated_per_run_s"] == v.per_run_predicted
    assert v.bus_stats["switches"] == 2 and v.bus_stats["full_share"] == 0.25
    plain = validate(g, c, placements=2, placers=["round-robin"], repeats=1)
    assert plain.recalibrated is None and plain.recalibrated_stats is None
    assert plain.bus_capacities == [] and plain.bus_stats is None
    assert "simulated_recalibrated_s" not in plain.rows()
    assert plain.per_run_predicted == [] and plain.per_run_stats is None


def test_timeline_figure_puts_both_schedules_on_one_axis(validation):
    v, _, g, c = validation
    sim = Simulator(g, c).run(v.placements[0])
    fig = measured_vs_simulated(v.example, sim, g, c)
    lanes = {t.y[0] for t in fig.data}
    assert lanes == {f"cpu:{d} {kind}" for d in (0, 1) for kind in ("measured", "simulated (default)")}
    measured_ops = sum(len(t.x) for t in fig.data if t.name.endswith("measured"))
    assert measured_ops == g.num_ops


def test_fidelity_page_shows_the_stored_validation(validation, monkeypatch):
    v, store, _, _ = validation
    monkeypatch.setenv("PLACELAB_RUNS_DIR", str(store.root))
    app = AppTest.from_string("from dashboard.app_pages import fidelity\nfidelity.page()\n", default_timeout=300).run()
    assert not app.exception and not app.error
    assert [t.value for t in app.title] == ["Fidelity"]
    assert len(app.get("plotly_chart")) == 2
    modes = list(app.dataframe[0].value["prediction"])
    assert set(modes[:-2]) <= set(SIMULATION_MODES) and modes[-2:] == ["replay", "repeats"]
    assert any("measured op and copy durations" in c.value for c in app.caption)
    assert any(c.value.startswith("repeats: one run of each placement") and "over 1 pair(s) of runs" in c.value
               for c in app.caption)
    assert "repeat_pairs" not in app.dataframe[0].value.columns  # in the caption, not a column of empty cells
    ceiling = f"(random sample) at Spearman about {v.noise_stats['spearman_ceiling']:.3f} against the mean of their 2"
    assert any(c.value.startswith("noise ceiling: ") and ceiling in c.value for c in app.caption)


def test_fidelity_page_without_runs(tmp_path, monkeypatch):
    """No run of the user's and no bundled example: the page says how to make one (its form, or the CLI)."""
    monkeypatch.setenv("PLACELAB_RUNS_DIR", str(tmp_path / "none"))
    monkeypatch.setenv("PLACELAB_EXAMPLE_RUNS_DIR", str(tmp_path / "no-examples"))
    app = AppTest.from_string("from dashboard.app_pages import fidelity\nfidelity.page()\n", default_timeout=300).run()
    assert not app.exception
    assert [i.value for i in app.info if i.value.startswith("No validation runs yet")] == [
        "No validation runs yet: start one above, or from the command line "
        "(`placelab validate GRAPH -c local --placements 20`)."]


def _cluster(devices: int, dispatch: float):
    """A calibrated cluster's settings: work-conserving, copies on the sender, a per-op cost."""
    c = uniform_cluster("c", [Device(f"cpu:{i}", "cpu", 1e12) for i in range(devices)], 1e9,
                        mode="work_conserving", copy_occupies_sender=True, dispatch_s=dispatch)
    return dataclasses.replace(c, link=Link(1e9, 1e-5))


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 40), st.integers(0, 10_000), st.integers(2, 4), st.floats(0.0, 1e-4), st.booleans())
def test_replaying_a_simulated_run_reproduces_it_exactly(ops, seed, devices, dispatch, shared):
    """Given its own op and copy durations, the simulator repeats a schedule op for op: so a
    replay's error against a measured run is that of the simulator's rules, not of the durations.
    Copies that shared a bus took the time they took: the replay does not share it again."""
    g = random_dag(ops=ops, seed=seed)
    c = _cluster(devices, dispatch).with_simulation(copy_bus_shared=shared)
    p = np.random.default_rng(seed).integers(devices, size=ops)
    s = Simulator(g, c).run(p)
    r = Simulator(replay_graph(g, p, s), c.with_simulation(copy_bus_shared=False)).run(p)
    assert r.makespan == pytest.approx(s.makespan, rel=1e-12)
    np.testing.assert_allclose(r.op_start, s.op_start, rtol=1e-12, atol=1e-15)
    assert replay_makespan(g, c, p, [s]) == pytest.approx(s.makespan, rel=1e-12)


def test_a_half_replay_takes_only_the_measured_durations_it_names():
    """Runs made with slower devices (same link) are reproduced by replaying their ops alone, runs
    made with another link (same devices) by replaying their copies alone; the other half fails."""
    g = random_dag(ops=30, seed=4)
    nominal = _cluster(2, 1e-5)
    slow_ops = dataclasses.replace(nominal, devices=tuple(dataclasses.replace(d, speed=0.7) for d in nominal.devices))
    # (the latency is in flight: no measured copy interval carries it, the replay takes the cluster's)
    slow_copies = dataclasses.replace(nominal, link=dataclasses.replace(nominal.link, bandwidth_bytes_per_s=2e8))
    p = np.arange(g.num_ops) % 2
    for made_by, right, wrong in ((slow_ops, {"copies": False}, {"ops": False}),
                                  (slow_copies, {"ops": False}, {"copies": False})):
        s = Simulator(g, made_by).run(p)
        assert Simulator(replay_graph(g, p, s, **right), nominal).makespan(p) == pytest.approx(s.makespan, rel=1e-12)
        assert Simulator(replay_graph(g, p, s, **wrong), nominal).makespan(p) < s.makespan * 0.99


def test_replay_of_a_run_of_another_placement_is_refused():
    g = random_dag(ops=12, seed=3)
    c = _cluster(2, 0.0)
    s = Simulator(g, c).run(np.zeros(12, int))  # everything on one device: no copies
    with pytest.raises(ValueError, match="not a run of this placement"):
        replay_graph(g, np.arange(12) % 2, s)


def test_refining_recovers_the_speeds_and_the_link_that_made_the_runs():
    """Runs made by a cluster whose devices are 0.8× / 0.9× as fast and whose copies run at 2 GB/s:
    refining the nominal cluster on them finds exactly those figures, and keeps its latency."""
    g = random_dag(ops=40, seed=5)
    nominal = dataclasses.replace(_cluster(2, 1e-5), link=Link(5e9, 3e-5))
    true = dataclasses.replace(nominal, devices=(dataclasses.replace(nominal.devices[0], speed=0.8),
                                                 dataclasses.replace(nominal.devices[1], speed=0.9)),
                               link=Link(2e9, 3e-5))
    placements = [np.random.default_rng(k).integers(2, size=g.num_ops) for k in range(4)]
    runs = [(p, Simulator(g, true).run(p)) for p in placements]
    refined = refine_cluster(nominal, g, runs)
    assert [d.speed for d in refined.devices] == pytest.approx([0.8, 0.9], rel=1e-9)
    assert refined.link.bandwidth_bytes_per_s == pytest.approx(2e9, rel=1e-6)
    assert refined.link.latency_s == pytest.approx(3e-5, rel=1e-6)
    assert refined.simulation == nominal.simulation and "refined on 4 measured runs" in refined.description
    for p, s in runs:  # the refined cluster predicts the runs it was fitted to
        assert Simulator(g, refined).makespan(p) == pytest.approx(s.makespan, rel=1e-9)
    # a copy's interval is the sender's (as the executor measures it): the latency, in flight, is not
    # in it, so refining keeps whatever latency the cluster has
    other = dataclasses.replace(nominal, link=Link(5e9, 7e-5))
    assert refine_cluster(other, g, runs).link.latency_s == 7e-5
    with pytest.raises(ValueError, match="at least one measured run"):
        refine_cluster(nominal, g, [])


def test_refining_on_a_shared_bus_scales_the_copy_curve_by_the_copies_that_ran_alone():
    """Runs made with every copy twice as slow (curve and bandwidth) on a shared bus: the copies that
    ran beside another took longer still, so only those that ran alone give the factor, exactly 2."""
    g = random_dag(ops=40, seed=5)
    curve = ((1e3, 2e-6), (1e7, 5e-3))
    nominal = dataclasses.replace(_cluster(2, 1e-5), link=Link(1e9, 3e-5, curve)).with_simulation(
        copy_bus_shared=True)
    true = dataclasses.replace(nominal, link=Link(5e8, 3e-5, tuple((b, 2 * t) for b, t in curve)))
    runs = [(p, Simulator(g, true).run(p)) for p in (np.random.default_rng(k).integers(2, size=40) for k in range(4))]
    assert any(s.transfer_end.max() > 0 for _, s in runs)
    refined = refine_cluster(nominal, g, runs)
    assert refined.link.bandwidth_bytes_per_s == pytest.approx(5e8, rel=1e-9)
    assert np.array(refined.link.copy_curve) == pytest.approx(np.array(true.link.copy_curve), rel=1e-9)
    for p, s in runs:
        assert Simulator(g, refined).makespan(p) == pytest.approx(s.makespan, rel=1e-9)


def test_a_run_without_copies_of_two_sizes_keeps_the_link():
    g = random_dag(ops=12, seed=3)
    c = _cluster(2, 0.0)
    one_device = np.zeros(12, int)
    refined = refine_cluster(c, g, [(one_device, Simulator(g, c).run(one_device))])
    assert refined.link == c.link and [d.speed for d in refined.devices] == pytest.approx([1.0, 1.0])


def test_fidelity_page_shows_a_recalibrated_validation(fake_executor, monkeypatch, tmp_path):
    """The recalibrated row in the table and the scatter, and its timeline on the run's own cluster file."""
    import placelab.fidelity as fid

    monkeypatch.setattr(fid, "measure", lambda ex, *, kind, repeats: _figures(1.0, 2e-6))
    g = random_dag(ops=10, seed=2)
    v = validate(g, machine_cluster(2), placements=2, placers=["round-robin"], repeats=2, recalibrate=True,
                 store=RunStore(tmp_path))
    monkeypatch.setenv("PLACELAB_RUNS_DIR", str(tmp_path))
    app = AppTest.from_string("from dashboard.app_pages import fidelity\nfidelity.page()\n", default_timeout=300).run()
    assert not app.exception and not app.error
    table = app.dataframe[0].value
    row = table[table["prediction"] == "recalibrated"].iloc[0]  # headed in words, errors in %
    assert row["Spearman rank correlation"] == pytest.approx(v.recalibrated_stats["spearman"], nan_ok=True)
    assert row["median error (%)"] == pytest.approx(v.recalibrated_stats["median_rel_error"] * 100)
    assert any(c.value.startswith("recalibrated: ") for c in app.caption)
    row = table[table["prediction"] == "recalibrated per run"].iloc[0]
    assert row["median error (%)"] == pytest.approx(v.per_run_stats["median_rel_error"] * 100)
    # the per-run prediction has no one cluster to draw: it is in the scatter, not in the timeline's choice
    assert "recalibrated_per_run" not in app.selectbox(key="fidelity_mode").options
    assert "recalibrated" in app.selectbox(key="fidelity_mode").options
    # each probe read 2 · 1 ms / 1.5 ms of the bus; the cluster's copies share none, so nothing to set against
    assert "copy bus: the probes read a capacity of 1.33–1.33 copies at full speed." in [c.value for c in app.caption]
    assert v.bus_capacities == pytest.approx([2 / 1.5] * 3)
    scatter = app.get("plotly_chart")[0].proto.spec
    assert '"name":"recalibrated"' in scatter.replace(" ", "")
    assert '"name":"recalibrated per run"' in scatter
    app.selectbox(key="fidelity_mode").set_value("recalibrated").run()
    assert not app.exception and not app.error and len(app.get("plotly_chart")) == 2
