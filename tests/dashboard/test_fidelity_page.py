"""The Fidelity page produces a validation (issue #33): ``placelab validate`` on the current graph and cluster in
the background (2 CPU workers, a 12-op graph), polled until its run is shown; the bundled example when the user
has none; one message when the cluster cannot execute here or the job fails."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_measured import GRAPH, TWO_CORES
from test_pages import page_app
from test_train import wait_for

from dashboard.background import launch, list_jobs
from dashboard.data.measured import validate_command, validation_job
from engine.executor.calibration import machine_cluster
from engine.placement import placement_from_dict
from engine.sim.simulator import Simulator
from engine.specs import load_cluster, load_graph
from engine.store.runs import RunStore
from placelab.fidelity import validate


def test_validate_command_scales_or_runs_as_is(tmp_path):
    cmd = validate_command(Path("g.json"), Path("c.json"), placements=4, repeats=2, step_ms=20.0, runs_dir=tmp_path)
    assert cmd[:4] == [sys.executable, "-m", "placelab.cli", "validate"]
    assert cmd[4:] == ["g.json", "--cluster", "c.json", "--placements", "4", "--repeats", "2", "--step-ms", "20.0",
                       "--save", "--runs-dir", str(tmp_path), "--json"]
    as_is = validate_command(Path("g.json"), Path("c.json"), placements=4, repeats=2, step_ms=None, runs_dir=tmp_path)
    assert as_is[as_is.index("--time-scale") + 1] == "1" and "--step-ms" not in as_is


def test_without_runs_the_form_is_open_and_a_gpu_cluster_says_why_it_cannot_validate(empty_runs):
    app = page_app("fidelity", GRAPH).run()
    assert not app.exception and not app.error
    assert any("No validation runs yet" in i.value for i in app.info)
    assert any("torch.cuda reports" in i.value and "`local` preset" in i.value for i in app.info)
    assert not [b for b in app.button if b.key == "fidelity_start"]


def test_without_a_graph_the_form_asks_for_one(empty_runs):
    app = page_app("fidelity").run()
    assert any(i.value.startswith("Choose a graph on the Graphs page first") for i in app.info)


@TWO_CORES
def test_the_page_validates_the_current_graph_in_the_background_and_shows_the_run(empty_runs, local_two,
                                                                                   kill_jobs_after):
    kill_jobs_after(empty_runs)
    app = page_app("fidelity", GRAPH)
    app.session_state["ctx_cluster"] = "local"
    app.run()
    app.number_input(key="fidelity_placements").set_value(3)
    app.number_input(key="fidelity_repeats").set_value(1)
    app.number_input(key="fidelity_step").set_value(20.0)
    app.button(key="fidelity_start").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    [job] = list_jobs(empty_runs, kind="validate")
    assert any(i.value.startswith("Validating on this machine") for i in app.info)
    assert "No validation runs yet: the one above is running, and shows here once it is stored." in [
        i.value for i in app.info]
    wait_for("the validation", lambda: not list_jobs(empty_runs, kind="validate")[0].alive, timeout=600)
    app.run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    [run] = RunStore(empty_runs).list(kind="validate")
    assert validation_job(RunStore(empty_runs), job.id)[0] == "done"
    assert [s.value for s in app.success] == [f"Validation stored as run {run.id}"]
    assert app.selectbox(key="fidelity_run").value == run.id
    assert "fidelity_job" not in app.session_state  # the job is done with: a new one may start
    table = run.read_table("fidelity.csv")
    assert len(table["source"]) == 3
    # placement 0's stored simulated makespan is the simulation of the stored (scaled) graph: an independent re-run
    graph = load_graph(run.path / "graph.json")
    cluster = load_cluster(str(run.path / "cluster.json"))
    placement = placement_from_dict(run.read_json("placement.json"), graph, cluster)
    mode = cluster.simulation.mode
    assert table[f"simulated_{mode}_s"][0] == pytest.approx(Simulator(graph, cluster).run(placement).makespan)
    assert list((empty_runs / ".jobs").glob("inputs-*")) == []  # the job's inputs are removed once it ended


@TWO_CORES
def test_the_bundled_example_validation_shows_when_the_user_has_none(empty_runs, tmp_path, monkeypatch):
    examples = tmp_path / "examples"
    graph = load_graph(GRAPH)
    from engine.executor import scale_graph

    two = machine_cluster(2, name="two")
    validate(scale_graph(graph, 20e-3 / (float(graph.min_compute().sum()) / 2)), two, placements=2, repeats=1,
             store=RunStore(examples))
    monkeypatch.setenv("PLACELAB_EXAMPLE_RUNS_DIR", str(examples))
    app = page_app("fidelity", GRAPH).run()
    assert not app.exception and not app.error
    [example] = RunStore(examples).list(kind="validate")
    assert app.selectbox(key="fidelity_run").value == example.id
    assert "example" in app.selectbox(key="fidelity_run").format_func(example.id)
    assert not any("No validation runs yet" in i.value for i in app.info)


def test_a_failed_validation_is_one_error_on_the_page(empty_runs):
    job = launch(empty_runs, [sys.executable, "-c", "import sys; sys.exit('error: the graph needs 3 devices')"],
                 label="validate on g", kind="validate")
    wait_for("the job to end", lambda: not list_jobs(empty_runs, kind="validate")[0].alive)
    app = page_app("fidelity", GRAPH)
    app.session_state["fidelity_job"] = job.id
    app.run()
    assert [e.value for e in app.error] == ["Validation failed: the graph needs 3 devices"]
    assert "fidelity_job" not in app.session_state


def test_the_shipped_example_validation_loads_with_its_table_scatter_and_timeline(empty_runs, monkeypatch):
    """The validation bundled in runs/ (``make bundled-runs``) is what a new user sees on the page."""
    bundled = Path(__file__).resolve().parents[2] / "runs"
    monkeypatch.setenv("PLACELAB_EXAMPLE_RUNS_DIR", str(bundled))
    app = page_app("fidelity").run()
    assert not app.exception and not app.error
    [example] = RunStore(bundled).list(kind="validate")
    picker = app.selectbox(key="fidelity_run")
    assert picker.value == example.id and picker.format_func(example.id).startswith("example · ")
    stats = app.dataframe[0].value
    modes = set(stats["prediction"])
    assert {"placeto", "default", "work_conserving"} <= modes
    assert len(example.read_table("fidelity.csv")["source"]) == example.meta["metrics"]["placements"]
    # issue 58: headed in words, errors in % of the measured makespan; the timeline on the most accurate mode
    assert list(stats.columns) == ["prediction", "placements", "Pearson correlation", "Spearman rank correlation",
                                   "median error (%)", "largest error (%)", "predicted / measured (mean)"]
    fidelity = example.meta["metrics"]["fidelity"]
    by_mode = dict(zip(stats["prediction"], stats["median error (%)"], strict=True))
    assert by_mode["placeto"] == pytest.approx(fidelity["placeto"]["median_rel_error"] * 100)
    best = min(fidelity, key=lambda m: fidelity[m]["median_rel_error"])
    assert best == "work_conserving"  # 6.3 % against placeto's 36 % and default's 36 %
    assert app.selectbox(key="fidelity_mode").value == best
