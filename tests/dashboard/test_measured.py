"""Measured runs in the app: execute from the Place page (2 CPU workers, a 12-op graph), Compare's measured columns."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from test_pages import figure, page_app
from test_train import wait_for

from dashboard.background import launch, list_jobs
from dashboard.data.format import fmt_ms
from dashboard.data.measured import (
    execute_command,
    execution_job,
    execution_problem,
    failure_message,
    measured_summary,
)
from engine.executor import scale_graph
from engine.executor.calibration import machine_cluster
from engine.presets import PRESETS
from engine.sim.simulator import Simulator
from engine.specs import load_graph
from engine.store.runs import RunStore

GRAPH = "gen:random?ops=12&seed=3"
TWO_CORES = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="the executor needs 2 CPU cores")


# -- pure helpers ------------------------------------------------------------------------------


def test_measured_summary_is_simulated_against_measured():
    s = measured_summary({"makespan_s": 0.12, "measured_makespan_s": 0.1, "measured_std_s": 0.004,
                          "measured_repeats": 5, "time_scale": 2.5})
    assert s["simulated_s"] == 0.12 and s["measured_s"] == 0.1 and s["repeats"] == 5
    assert s["relative_error"] == pytest.approx(0.2)  # (0.12 - 0.1) / 0.1: the simulator is pessimistic
    assert s["time_scale"] == 2.5 and s["measured_std_s"] == 0.004
    assert measured_summary({"makespan_s": 0.12}) is None  # not executed


def test_execute_command_scales_or_runs_as_is(tmp_path):
    cmd = execute_command(Path("g.json"), Path("c.json"), Path("p.json"), placer="hash", repeats=4, step_ms=50.0,
                          name="mine", runs_dir=tmp_path)
    assert cmd[:5] == [sys.executable, "-m", "placelab.cli", "execute", "g.json"]
    assert cmd[cmd.index("--step-ms") + 1] == "50.0" and cmd[cmd.index("--repeats") + 1] == "4"
    assert cmd[cmd.index("--name") + 1] == "mine" and cmd[-4:] == ["--save", "--runs-dir", str(tmp_path), "--json"]
    as_is = execute_command(Path("g.json"), Path("c.json"), Path("p.json"), placer="hash", repeats=1, step_ms=None,
                            name=None, runs_dir=tmp_path)
    assert as_is[as_is.index("--time-scale") + 1] == "1" and "--step-ms" not in as_is and "--name" not in as_is


def test_execution_problem_names_what_this_machine_lacks():
    assert execution_problem(machine_cluster(1)) is None
    too_many = machine_cluster(len(os.sched_getaffinity(0)) + 1)
    assert "one worker per core is needed" in execution_problem(too_many)


def test_a_failed_execution_job_shows_its_error_line_and_is_kept_apart_from_training(tmp_path):
    store = RunStore(tmp_path)
    job = launch(tmp_path, [sys.executable, "-c", "import sys; print('loading'); "
                                                  "sys.exit('error: worker for device cpu:1 died')"],
                 label="x", kind="execute")
    wait_for("the job's exit code", lambda: list_jobs(tmp_path)[0].returncode is not None)
    assert [j.id for j in list_jobs(tmp_path, kind="execute")] == [job.id]
    assert list_jobs(tmp_path, kind="train") == []  # the Train page does not see it
    state, ended, run = execution_job(store, job.id)
    assert state == "failed" and run is None
    assert failure_message(ended) == "worker for device cpu:1 died"
    assert execution_job(store, "no-such-job")[0] == "gone"


# -- pages ---------------------------------------------------------------------------------------


def test_place_page_on_a_gpu_cluster_says_why_it_cannot_execute(empty_runs):
    app = page_app("place", GRAPH).run()
    app.multiselect(key="place_placers").set_value(["round-robin"]).run()
    app.button(key="place_run").click().run()
    assert not app.exception and not app.error
    # k80x2 (the default preset) has GPU devices; this test machine has none unless torch.cuda says so
    if execution_problem(PRESETS["k80x2"]()) is None:
        pytest.skip("this machine has 2 CUDA devices: k80x2 is executable here")
    assert any("torch.cuda reports" in i.value and "`local` preset" in i.value for i in app.info)
    assert not [b for b in app.button if b.key == "place_exec_0"]


@TWO_CORES
def test_place_page_executes_and_shows_measured_beside_simulated(empty_runs, local_two, kill_jobs_after):
    kill_jobs_after(empty_runs)
    app = page_app("place", GRAPH)
    app.session_state["ctx_cluster"] = "local"
    app.run()
    app.multiselect(key="place_placers").set_value(["round-robin"]).run()
    app.button(key="place_run").click().run()
    app.number_input(key="place_exec_repeats_0").set_value(2)
    app.number_input(key="place_exec_step_0").set_value(20.0)
    app.button(key="place_exec_0").click().run()
    assert not app.exception and not app.error
    assert any(i.value.startswith("Executing on this machine") for i in app.info)
    assert len(list_jobs(empty_runs, kind="execute")) == 1
    wait_for("the execution", lambda: not list_jobs(empty_runs, kind="execute")[0].alive, timeout=600)
    app.run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    [run] = RunStore(empty_runs).list(kind="place")
    m = run.meta["metrics"]
    assert run.meta["placer"] == "round-robin" and "app" in run.meta["tags"]
    # the stored simulated makespan is the simulation of the graph scaled to a 20 ms step (independent re-run)
    g = load_graph(GRAPH)
    scale = 20e-3 / (float(g.min_compute().sum()) / 2)
    assert m["time_scale"] == pytest.approx(scale)
    from engine.placement import placement_from_dict
    scaled = scale_graph(g, scale)
    placement = placement_from_dict(run.read_json("placement.json"), scaled, local_two)
    assert m["makespan_s"] == pytest.approx(Simulator(scaled, local_two).run(placement).makespan)
    assert m["measured_repeats"] == 2 and m["measured_makespan_s"] == pytest.approx(np.mean(m["measured_makespans_s"]))
    shown = {x.label: x.value for x in app.metric}
    assert shown["Simulated makespan"] == fmt_ms(m["makespan_s"])
    assert shown["Measured makespan"] == fmt_ms(m["measured_makespan_s"])
    assert shown["Measured std"] == fmt_ms(m["measured_std_s"])
    err = (m["makespan_s"] - m["measured_makespan_s"]) / m["measured_makespan_s"]
    assert shown["Simulated vs measured"] == f"{err:+.1%}"
    # the measured schedule drawn is the stored median repeat: its makespan is the last measured op or copy end
    ops, tr = run.read_table("measured_ops.csv"), run.read_table("measured_transfers.csv")
    end = max([*ops["end_s"], *tr["end_s"]])
    assert end == pytest.approx(min(m["measured_makespans_s"]))  # repeats=2: the median is the shorter one
    both = figure(app, f"{scaled.name}: measured {end * 1e3:.4g} ms, simulated {m['makespan_s'] * 1e3:.4g} ms")
    lanes = {t["name"] for t in both["data"]}
    assert {"cpu:0 measured", "cpu:1 measured"} <= lanes
    assert not list((empty_runs / ".jobs").glob("inputs-*"))  # the job's inputs are removed once it ended


@pytest.fixture
def executed_runs(empty_runs):
    """On one scaled 12-op graph and two CPU workers: round-robin executed (2 repeats), single-device simulated only."""
    from placelab.cli_exec import measuring
    from placelab.runner import place_and_simulate

    store, cluster = RunStore(empty_runs), machine_cluster(2, name="two")
    g = scale_graph(load_graph(GRAPH), 20e-3 / (float(load_graph(GRAPH).min_compute().sum()) / 2))
    plain = place_and_simulate(g, cluster, "single-device", store=store).run_id
    with measuring(cluster, repeats=2) as measure:
        executed = place_and_simulate(g, cluster, "round-robin", store=store, measure=measure).run_id
    return store, executed, plain


@TWO_CORES
def test_compare_shows_measured_numbers_of_executed_runs(executed_runs):
    store, executed, plain = executed_runs
    m = store.load(executed).meta["metrics"]
    app = page_app("compare").run()
    assert not app.exception and not app.error
    table = app.dataframe[0].value.set_index("placer")
    assert table.loc["round-robin", "measured (ms)"] == pytest.approx(m["measured_makespan_s"] * 1e3)
    assert table.loc["round-robin", "measured std (ms)"] == pytest.approx(m["measured_std_s"] * 1e3)
    assert table.loc["round-robin", "measured runs"] == 2
    assert np.isnan(table.loc["single-device", "measured (ms)"])  # simulated only
    meta = store.load(executed).meta
    graph = f"{meta['graph']['name']} [{meta['graph']['hash'][:8]}]"
    bars = figure(app, f"Simulated and measured makespan on {graph} · two")
    by_name = {t["name"]: t for t in bars["data"]}
    assert by_name["simulated"]["x"] == ["round-robin"]  # only the executed run
    assert by_name["simulated"]["y"] == pytest.approx([m["makespan_s"] * 1e3])
    assert by_name["measured"]["y"] == pytest.approx([m["measured_makespan_s"] * 1e3])
    assert by_name["measured"]["error_y"]["array"] == pytest.approx([m["measured_std_s"] * 1e3])
    # timelines: the executed run's measured schedule on request; the other side stays simulated
    app.selectbox(key="compare_left").set_value(executed).run()
    app.selectbox(key="compare_right").set_value(plain).run()
    app.radio(key="compare_tl_source").set_value("measured").run()
    assert not app.exception and not app.error
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in app.get("plotly_chart")]
    assert any(t.startswith("Measured · ") and "round-robin" in t for t in titles)
    assert any(t.startswith("Simulated · ") and "single-device" in t for t in titles)


def _panel(root: str, job_id: str) -> None:
    from dashboard.widgets.measured import execution_panel
    from engine.store.runs import RunStore

    execution_panel(RunStore(root), job_id, key="x")


def test_a_failed_execution_is_one_error_on_the_page(tmp_path):
    from streamlit.testing.v1 import AppTest

    job = launch(tmp_path, [sys.executable, "-c", "import sys; sys.exit('error: the cluster has 2 GPU devices but "
                                                  "torch.cuda reports 0')"], label="x", kind="execute")
    wait_for("the job's exit code", lambda: list_jobs(tmp_path)[0].returncode is not None)
    app = AppTest.from_function(_panel, args=(str(tmp_path), job.id), default_timeout=300).run()
    assert not app.exception
    assert [e.value for e in app.error] == ["Execution failed: the cluster has 2 GPU devices but torch.cuda reports 0"]


@TWO_CORES
def test_runs_page_shows_the_measured_numbers_of_an_executed_run(executed_runs):
    store, executed, _plain = executed_runs
    m = store.load(executed).meta["metrics"]
    app = page_app("runs").run()
    app.selectbox(key="runs_selected").set_value(executed).run()
    assert not app.exception and not app.error
    shown = {x.label: x.value for x in app.metric}
    assert shown["Measured makespan"] == fmt_ms(m["measured_makespan_s"])
    assert shown["Simulated makespan"] == fmt_ms(m["makespan_s"])
    assert {b.label for b in app.get("download_button")} >= {"Measured CSV (ops)", "Measured CSV (transfers)"}
