"""The app's data helpers on their own (no Streamlit session): the link's parameters, the Place results kept
as runs, the Fidelity page's rows, the figures' cache."""

from __future__ import annotations

import json

import pytest

from dashboard.data import link
from dashboard.data.fidelity import scatter_series, statistics_rows, timeline_modes
from dashboard.data.place import (
    keep_result,
    prune_scratch,
    result_from_run,
    results_from_runs,
    results_table,
    save_result,
)
from dashboard.data.runs import comparison_row, run_metrics
from engine.generators import random_dag
from engine.presets import PRESETS
from engine.sim.simulator import Simulator
from engine.store.records import SINGLE_DEVICE_KEYS
from engine.store.runs import RunStore
from placelab.runner import place_and_simulate


def test_the_view_goes_into_the_link_and_comes_back():
    cluster = PRESETS["k80x2"]().with_simulation("default", op_overhead_s=2e-5)
    params = link.view_params("gen:random?ops=40&seed=2", "gen:random?ops=40&seed=2", cluster)
    assert params == {"graph": "gen:random?ops=40&seed=2", "cluster": "k80x2", "mode": "default",
                      "sim_op_overhead_s": "2e-05"}
    view = link.read_link(params)
    assert view.warnings == []
    graph, label, spec = view.graph
    assert (graph.num_ops, label, spec) == (40, "gen:random?ops=40&seed=2", "gen:random?ops=40&seed=2")
    assert (view.cluster, view.mode, view.settings) == ("k80x2", "default", {"op_overhead_s": 2e-5})
    assert PRESETS[view.cluster]().with_simulation(view.mode, **view.settings) == cluster


def test_a_preset_as_it_is_needs_no_mode_and_no_settings():
    assert link.view_params(None, "", PRESETS["p100x4"]()) == {"cluster": "p100x4"}


def test_an_example_file_is_named_by_its_label_never_its_path(monkeypatch):
    from dashboard.data import graphs

    monkeypatch.setattr(graphs, "example_sources", lambda: {"file: a/b.json": "/srv/placelab/examples/a/b.json"})
    monkeypatch.setattr(link, "example_sources", graphs.example_sources)
    assert link.graph_text("/srv/placelab/examples/a/b.json", "file: a/b.json") == "file: a/b.json"
    assert link.graph_text("/srv/other.json", "upload: other.json") is None  # a path the link never shows


@pytest.mark.parametrize(("name", "value", "says"), [
    ("graph", "/etc/passwd", "not a graph the app serves"),
    ("graph", "gen:random?ops=900000", "gen:random: ops=900000 is beyond the app's limit of 200,000"),
    ("cluster", "k80x99", "no cluster preset is named 'k80x99'"),
    ("mode", "fastest", "simulation mode must be one of"),
    ("sim_noise", "loud", "noise must be a float"),
    ("sim_runs", "1e9", "runs must be a int"),
    ("sim_op_overhead_s", "nan", "must be a finite number"),
    ("sim_graph", "x", "no simulation setting of the sidebar"),
    ("colour", "red", "the app has no such parameter"),
    ("graph", "x" * 5000, "longer than 4,000 characters"),
])
def test_every_refused_value_is_one_warning_line(name, value, says):
    view = link.read_link({name: value})
    [line] = view.warnings
    assert line.startswith(f"Ignored the link's {name[:40]}: ") and says in line, line
    assert "\n" not in line and len(line) < 600
    assert view.graph is None and view.cluster is None and view.settings == {}


def test_page_parameters_wait_for_their_page():
    view = link.read_link({"placers": "round-robin", "results": "a,b", "runs": "c", "run": "d", "embed": "true"})
    assert view.pages == {"placers": "round-robin", "results": "a,b", "runs": "c", "run": "d"}
    assert view.warnings == []
    assert link.read_placers("round-robin, critical-path,round-robin") == ["round-robin", "critical-path"]
    with pytest.raises(Exception, match="no placer is named 'rm -rf'"):
        link.read_placers("round-robin,rm -rf")


@pytest.fixture
def kept(tmp_path):
    """A scratch store holding two results of a 40-op graph on k80x2, and the user's store holding one."""
    graph, cluster = random_dag(ops=40, seed=2), PRESETS["k80x2"]()
    sim, scratch, mine = Simulator(graph, cluster), RunStore(tmp_path / ".scratch"), RunStore(tmp_path / "mine")
    results = []
    for name in ("single-device", "round-robin"):
        res = place_and_simulate(graph, cluster, name)
        results.append({"placer": name, "params": {}, "seed": 0, "budget": None, "placement": res.placement,
                        "schedule": sim.run(res.placement, record_memory=True), "metrics": res.metrics,
                        "seconds": res.seconds_to_place, "startup": None, "run_id": None, "kept_id": None})
    ids = [keep_result(scratch, graph, cluster, r) for r in results]
    saved = place_and_simulate(graph, cluster, "critical-path", store=mine).run_id
    return graph, cluster, scratch, mine, results, ids, saved


def test_results_kept_as_runs_come_back_whole(kept):
    graph, cluster, scratch, mine, results, ids, saved = kept
    runs, warnings = link.read_runs(",".join([*ids, saved]), [scratch, mine], ("place",), name=link.RESULTS)
    assert warnings == [] and [r.id for r in runs] == [*ids, saved]
    state, warnings = results_from_runs(runs, scratch)
    assert warnings == []
    assert state["graph"].content_hash == graph.content_hash and state["cluster"] == cluster
    back = state["results"]
    assert [r["placer"] for r in back] == ["single-device", "round-robin", "critical-path"]
    assert [(r["run_id"], r["kept_id"]) for r in back] == [(None, ids[0]), (None, ids[1]), (saved, None)]
    for old, new in zip(results, back, strict=False):
        assert new["metrics"]["makespan_s"] == pytest.approx(old["metrics"]["makespan_s"])
        assert (new["placement"].devices == old["placement"].devices).all()
        assert new["schedule"].makespan == pytest.approx(old["schedule"].makespan)


def test_a_kept_result_keeps_its_estimate_and_its_ratio_to_single_device(kept, tmp_path):
    """Issue 55: critical-path's own estimate and every result's ×single-device are stored with the run, come back
    with it (its placement carries the estimate again, so saving it once more keeps it) and go into the tables."""
    graph, cluster, scratch, mine, results, ids, saved = kept
    single = results[0]["metrics"]["makespan_s"]
    run = mine.load(saved)
    m = run.meta["metrics"]
    assert m["predicted_makespan_s"] > 0 and m["single_device_makespan_s"] == single
    assert m["ratio_to_single_device"] == pytest.approx(m["makespan_s"] / single)
    assert scratch.load(ids[1]).meta["metrics"]["ratio_to_single_device"] == pytest.approx(
        results[1]["metrics"]["makespan_s"] / single)
    _, _, r = result_from_run(run, saved=True)
    assert r["placement"].predicted_makespan_s == m["predicted_makespan_s"]
    again = save_result(RunStore(tmp_path / "again"), graph, cluster, r, ["app"])
    assert {k: again.meta["metrics"][k] for k in ("predicted_makespan_s", *SINGLE_DEVICE_KEYS)} == {
        k: m[k] for k in ("predicted_makespan_s", *SINGLE_DEVICE_KEYS)}
    table = results_table([r])
    assert table["own estimate (ms)"][0] == pytest.approx(m["predicted_makespan_s"] * 1e3)
    assert table["ratio to single device"][0] == pytest.approx(m["ratio_to_single_device"])
    row = comparison_row(run)
    assert (row["own estimate (ms)"], row["ratio to single device"]) == (
        pytest.approx(m["predicted_makespan_s"] * 1e3), pytest.approx(m["ratio_to_single_device"]))


def test_a_run_stored_before_the_ratio_gets_it_from_its_own_graph_and_cluster(kept):
    """A run without ``single_device_makespan_s`` (stored before issue 55) has single-device simulated on its own
    graph and cluster; one whose graph cannot be read has none, and no error."""
    _graph, _cluster, _scratch, mine, results, _ids, saved = kept
    path = mine.root / saved / "run.json"
    meta = json.loads(path.read_text())
    for key in ("predicted_makespan_s", *SINGLE_DEVICE_KEYS):
        del meta["metrics"][key]
    path.write_text(json.dumps(meta))
    single = results[0]["metrics"]["makespan_s"]
    m = run_metrics(mine.load(saved))
    assert m["single_device_makespan_s"] == pytest.approx(single)
    assert m["ratio_to_single_device"] == pytest.approx(meta["metrics"]["makespan_s"] / single)
    assert "predicted_makespan_s" not in m and comparison_row(mine.load(saved))["own estimate (ms)"] is None
    meta["updated"] = "later"  # a new version of the run: not the cached answer
    path.write_text(json.dumps(meta))
    (mine.root / saved / "graph.json").write_text("{")
    m = run_metrics(mine.load(saved))
    assert (m["single_device_makespan_s"], m["ratio_to_single_device"]) == (None, None)


def test_a_link_names_only_runs_of_the_apps_stores(kept, tmp_path):
    _graph, _cluster, scratch, mine, _results, ids, _saved = kept
    outside = RunStore(tmp_path / "elsewhere")
    other = place_and_simulate(random_dag(ops=10, seed=1), PRESETS["k80x2"](), "round-robin", store=outside).run_id
    text = ",".join([other, "../" + ids[0], ids[0][:10], "x" * 300, ids[0]])
    runs, warnings = link.read_runs(text, [scratch, mine], ("place",), name=link.RESULTS)
    assert [r.id for r in runs] == [ids[0]]  # an exact id of the app's stores only: no prefix, no path
    assert len(warnings) == 4 and all(w.startswith("Ignored the link's results: ") for w in warnings)
    assert not [w for w in warnings if str(tmp_path) in w]


def test_results_on_another_graph_are_left_out(kept, tmp_path):
    _graph, _cluster, scratch, mine, _results, ids, _saved = kept
    other = place_and_simulate(random_dag(ops=10, seed=1), PRESETS["k80x2"](), "round-robin", store=mine).run_id
    state, warnings = results_from_runs([scratch.load(ids[0]), mine.load(other)], scratch)
    assert [r["kept_id"] for r in state["results"]] == [ids[0]]
    assert len(warnings) == 1 and "another graph or cluster" in warnings[0]


def test_the_scratch_store_keeps_the_newest(kept):
    _graph, _cluster, scratch, _mine, _results, ids, _saved = kept
    prune_scratch(scratch, kept=1)
    assert [r.id for r in scratch.list()] == [ids[-1]]  # the last kept
    _, _, r = result_from_run(scratch.load(ids[-1]), saved=False)
    assert r["kept_id"] == ids[-1]


def test_fidelity_rows_notes_and_series_read_a_validate_run():
    metrics = {"fidelity": {"default": {"spearman": 0.7}, "placeto": {"spearman": 0.6}},
               "recalibrated": {"spearman": 0.8}, "recalibrated_per_run": {"spearman": 0.85},
               "replay": {"spearman": 0.9}, "repeat_agreement": {"spearman": 0.95, "repeat_pairs": 3}}
    rows = statistics_rows(metrics)
    assert [r["mode"] for r in rows] == ["default", "placeto", "recalibrated", "recalibrated per run", "replay",
                                         "repeats"]
    assert "repeat_pairs" not in rows[-1]
    table = {"measured_mean_s": [1.0], "simulated_default_s": [1.1], "simulated_recalibrated_s": [1.05],
             "simulated_recalibrated_per_run_s": [1.02], "replayed_s": [1.01], "source": ["random"]}
    assert list(scatter_series(table)) == ["default", "recalibrated", "recalibrated per run", "replay"]
    assert timeline_modes(table) == ["default", "recalibrated"]  # a run-by-run prediction has no one cluster


def test_a_figure_of_a_stored_schedule_is_built_once():
    from dashboard.widgets.schedule import schedule_figure

    graph, cluster = random_dag(ops=30, seed=1), PRESETS["k80x2"]()
    schedule = Simulator(graph, cluster).run(place_and_simulate(graph, cluster, "round-robin").placement,
                                             record_memory=True)
    first = schedule_figure("load", schedule, graph, cluster, "t", "run-1")
    assert schedule_figure("load", schedule, graph, cluster, "t", "run-1") is first  # cached by run id
    assert schedule_figure("load", schedule, graph, cluster, "t", "run-2") is not first
    assert schedule_figure("load", schedule, graph, cluster, "t") is not first  # no id: built each time
    assert first.layout.title.text.endswith(" — t")
