"""Work that survives a reload (issue #33): the view in the link, the Place results in the store, every
selection kept across pages. A reload is a new session: here a new AppTest given the link's parameters."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.data import link
from engine.runs import RunStore

APP = Path(__file__).resolve().parents[2] / "dashboard" / "app.py"
REPO_RUNS = Path(__file__).resolve().parents[2] / "runs"
TIMEOUT = 300  # generous: only catches a hang (issue 34)
GRAPH = "gen:random?ops=120&seed=3"


def _app() -> None:
    """The entry script's frame (link, kept widgets, sidebar, warnings, the link written back) around the page
    named by ``st.session_state["which"]`` (a stand-in for navigation; Place by default)."""
    import streamlit as st

    from dashboard.app_pages import compare, graphs, home, papers, place, runs, train
    from dashboard.context import retain_widgets, sidebar
    from dashboard.widgets.link import read_link, show_link_warnings, write_link

    read_link()
    retain_widgets()
    sidebar()
    show_link_warnings()
    pages = {"place": place, "graphs": graphs, "home": home, "compare": compare, "runs": runs, "train": train,
             "papers": papers}
    pages[st.session_state.get("which", "place")].page()
    write_link()


def app_with_link(params: dict[str, str], which: str = "place") -> AppTest:
    """A new session (a reload) of the app on page ``which`` with the link's ``params``."""
    app = AppTest.from_function(_app, default_timeout=TIMEOUT)
    for name, value in params.items():
        app.query_params[name] = value
    app.session_state["which"] = which
    return app


def go(app: AppTest, which: str) -> AppTest:
    app.session_state["which"] = which
    return app.run()


def params(app: AppTest) -> dict[str, str]:
    return {k: (v[-1] if isinstance(v, list) else v) for k, v in app.query_params.items()}


def warnings(app: AppTest) -> list[str]:
    return [w.value for w in app.warning]


def place_two(app: AppTest) -> AppTest:
    app.multiselect(key="place_placers").set_value(["round-robin", "critical-path"]).run()
    return app.button(key="place_run").click().run()


def test_a_reload_brings_back_the_graph_the_cluster_and_the_results(empty_runs):
    app = app_with_link({"graph": GRAPH}).run()
    app.selectbox(key="ctx_cluster").set_value("p100x4").run()
    before = place_two(app).dataframe[0].value
    assert not app.exception and not app.error
    link_params = params(app)
    assert link_params[link.GRAPH] == GRAPH and link_params[link.CLUSTER] == "p100x4"
    assert link_params[link.PLACERS] == "round-robin,critical-path"
    kept = link_params[link.RESULTS].split(",")
    assert len(kept) == 2 and all((empty_runs / ".scratch" / i).is_dir() for i in kept)
    assert RunStore(empty_runs).list() == []  # kept apart: no run of the user's store until *Save as run*

    again = app_with_link(link_params).run()  # the reload: a new session with the same link
    assert not again.exception and not again.error and not warnings(again)
    assert any(c.value.startswith("random-120-s3 · 120 ops") for c in again.sidebar.caption)
    assert again.selectbox(key="ctx_cluster").value == "p100x4"
    assert again.multiselect(key="place_placers").value == ["round-robin", "critical-path"]
    after = again.dataframe[0].value
    assert list(after["placer"]) == list(before["placer"])
    assert list(after["makespan (ms)"]) == pytest.approx(list(before["makespan (ms)"]))
    assert any(s.value == "Results: random-120-s3 on p100x4" for s in again.subheader)
    assert params(again) == link_params  # the link stays as it was


def test_a_saved_result_comes_back_saved(empty_runs):
    app = place_two(app_with_link({"graph": GRAPH}).run())
    app.button(key="place_save_1").click().run()
    [saved] = RunStore(empty_runs).list()
    assert params(app)[link.RESULTS].split(",")[1] == saved.id  # the link names the saved run
    again = app_with_link(params(app)).run()
    assert list(again.dataframe[0].value["run"]) == ["", saved.id]
    assert not [b for b in again.button if b.key == "place_save_1"]  # saved: no second Save button
    assert any(c.value == f"Stored as run `{saved.id}`" for c in again.caption)


def test_the_simulation_settings_come_back(empty_runs):
    app = app_with_link({link.GRAPH: GRAPH, link.CLUSTER: "k80x2", link.MODE: "default",
                         "sim_op_overhead_s": "2e-05"}).run()
    assert not app.exception and not warnings(app)
    assert app.selectbox(key="ctx_sim_mode").value == "default"
    assert app.number_input(key="ctx_sim_op_overhead_s").value == pytest.approx(2e-5)
    assert any("k80x2 (default)" in c.value for c in app.caption)
    assert params(app) == {link.GRAPH: GRAPH, link.CLUSTER: "k80x2", link.MODE: "default",
                           "sim_op_overhead_s": "2e-05", link.PLACERS: "single-device,round-robin"}


BAD = {
    link.GRAPH: "/etc/passwd",
    link.CLUSTER: "k80x99",
    link.MODE: "fastest",
    "sim_noise": "loud",
    "sim_op_overhead_s": "inf",
    link.PLACERS: "round-robin,rm -rf",
    link.RESULTS: "../../etc,20990101-000000-place-none-0000",
    "colour": "red",
}


def test_a_bad_link_gives_one_warning_per_value_and_is_ignored(empty_runs):
    app = app_with_link(BAD).run()
    assert not app.exception and not app.error
    shown = warnings(app)
    assert len(shown) == len(BAD) + 1  # the two run ids of "results" are refused one by one
    assert all(w.startswith("Ignored the link's ") for w in shown)
    assert not [w for w in shown if "passwd" in w or "root:" in w]  # never a byte of a server file
    assert app.selectbox(key="ctx_cluster").value == "k80x2"  # the defaults, as without a link
    assert any("Choose a graph on the Graphs page first" in i.value for i in app.info)  # no graph, no results
    assert params(app) == {link.CLUSTER: "k80x2"}  # the link cleaned up
    app.run()
    assert warnings(app) == []  # shown once


@pytest.mark.parametrize("graph", ["gen:random?ops=10000000", "upload:../../secret", "bench:nope", "~/x.json"])
def test_a_linked_graph_passes_the_guard(empty_runs, graph):
    app = app_with_link({link.GRAPH: graph}).run()
    assert not app.exception
    [shown] = warnings(app)
    assert shown.startswith("Ignored the link's graph: ")
    assert any(c.value.startswith("none yet") for c in app.sidebar.caption)


def test_an_example_and_the_picker_come_back(empty_runs):
    app = app_with_link({link.GRAPH: "random DAG, 200 ops"}, "graphs").run()
    assert not app.exception and not warnings(app)
    assert app.radio(key="graphs_source").value == "Example"
    assert app.selectbox(key="graphs_example").value == "random DAG, 200 ops"
    assert {m.label: m.value for m in app.metric}["Ops"] == "200"
    assert params(app)[link.GRAPH] == "gen:random?ops=200&seed=1"
    typed = app_with_link({link.GRAPH: "gen:random?ops=57&seed=3"}, "graphs").run()
    assert typed.radio(key="graphs_source").value == "Generator spec"
    assert typed.text_input(key="graphs_spec").value == "gen:random?ops=57&seed=3"


def test_compare_and_runs_reopen_the_runs_the_link_names(stored_runs):
    _store, ids, _eval = stored_runs
    app = app_with_link({link.RUNS: ids[1]}, "compare").run()
    assert not app.exception and not warnings(app)
    assert app.multiselect(key="compare_runs").value == [ids[1]]
    assert params(app)[link.RUNS] == ids[1]
    app = app_with_link({link.RUN: ids[0]}, "runs").run()
    assert not app.exception and not warnings(app)
    assert app.selectbox(key="runs_selected").value == ids[0]
    assert params(app)[link.RUN] == ids[0]
    app = app_with_link({link.RUN: "no-such-run"}, "runs").run()
    assert [w for w in warnings(app) if w.startswith("Ignored the link's run: ")]


def test_the_entry_script_reads_and_writes_the_link(empty_runs):
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    app.query_params[link.GRAPH] = GRAPH
    app.query_params[link.CLUSTER] = "p100x4"
    app.run()
    assert not app.exception and not warnings(app)
    assert any(c.value.startswith("random-120-s3 · 120 ops") for c in app.sidebar.caption)
    assert app.selectbox(key="ctx_cluster").value == "p100x4"
    assert params(app) == {link.GRAPH: GRAPH, link.CLUSTER: "p100x4"}


def test_navigation_keeps_every_selection(stored_runs, monkeypatch):
    """Place's placers and parameters, the Graphs source, the Train form, Compare's and Runs' choices and the
    Papers choice, each left for another page and found again."""
    _store, ids, _eval = stored_runs
    monkeypatch.setenv("PLACELAB_EXAMPLE_RUNS_DIR", str(REPO_RUNS))  # the bundled reproductions, for Papers
    app = app_with_link({link.GRAPH: GRAPH}, "graphs").run()
    app.radio(key="graphs_source").set_value("Generator spec").run()
    app.text_input(key="graphs_spec").set_value("gen:random?ops=33&seed=1").run()
    go(app, "place")
    app.multiselect(key="place_placers").set_value(["m-topo", "random"]).run()
    app.number_input(key="place_seed_random").set_value(7).run()
    go(app, "train")
    app.selectbox(key="train_placer").set_value("placeto").run()
    app.text_input(key="train_graphs").set_value("family:nmt:train").run()
    app.number_input(key="train_episodes").set_value(40).run()
    app.text_input(key="train_name").set_value("kept").run()
    go(app, "compare")
    app.multiselect(key="compare_runs").set_value([ids[0]]).run()
    go(app, "runs")
    app.selectbox(key="runs_kind").set_value("place").run()
    app.selectbox(key="runs_selected").set_value(ids[1]).run()
    go(app, "papers")
    reproductions = app.selectbox(key="papers_pick").options
    assert len(reproductions) > 1
    app.selectbox(key="papers_pick").set_value(reproductions[1]).run()
    go(app, "home")
    assert not app.exception

    assert go(app, "graphs").radio(key="graphs_source").value == "Generator spec"
    assert app.text_input(key="graphs_spec").value == "gen:random?ops=33&seed=1"
    assert go(app, "place").multiselect(key="place_placers").value == ["m-topo", "random"]
    assert app.number_input(key="place_seed_random").value == 7
    go(app, "train")
    assert (app.selectbox(key="train_placer").value, app.text_input(key="train_graphs").value,
            app.number_input(key="train_episodes").value, app.text_input(key="train_name").value) == (
        "placeto", "family:nmt:train", 40, "kept")
    assert go(app, "compare").multiselect(key="compare_runs").value == [ids[0]]
    go(app, "runs")
    assert (app.selectbox(key="runs_kind").value, app.selectbox(key="runs_selected").value) == ("place", ids[1])
    assert go(app, "papers").selectbox(key="papers_pick").value == reproductions[1]
    assert not app.exception and not app.error


def test_a_kept_value_no_longer_offered_falls_back(stored_runs):
    store, ids, _eval = stored_runs
    app = app_with_link({link.RUN: ids[0]}, "runs").run()
    go(app, "home")
    store.delete(ids[0])  # deleted elsewhere (the CLI, another tab) while the visitor was away
    go(app, "runs")
    assert not app.exception and not app.error
    assert app.selectbox(key="runs_selected").value != ids[0]


@pytest.mark.parametrize(("graph", "says"), [
    ("gen:nasnet?variant=large&batch=1000000000", "gen:nasnet: batch=1000000000 is beyond the app's limit of 4,096"),
    ("gen:inception-v3?batch=2147483647", "gen:inception-v3: batch=2147483647 is beyond the app's limit of 4,096"),
])
def test_a_linked_generator_beyond_its_bounds_is_one_warning_and_never_built(empty_runs, graph, says, monkeypatch):
    import dataclasses
    import functools

    from engine import generators

    generators.generator_descriptions()
    gen = generators.GENERATORS[graph[4:].partition("?")[0]]

    @functools.wraps(gen.make)  # same parameters; building (minutes for NASNet-Large) would fail the test
    def never(**kwargs):
        raise AssertionError("the graph was built")

    monkeypatch.setitem(generators.GENERATORS, gen.name, dataclasses.replace(gen, make=never))
    app = app_with_link({link.GRAPH: graph}).run()
    assert not app.exception and not app.error
    assert warnings(app) == [f"Ignored the link's graph: {says}"]
    assert any(c.value.startswith("none yet") for c in app.sidebar.caption)
    assert link.GRAPH not in params(app)


@pytest.mark.parametrize(("name", "page"), [(link.RUN, "runs"), (link.RUNS, "compare"), (link.RESULTS, "place")])
def test_a_refused_run_id_says_what_is_wrong_for_its_parameter(stored_runs, name, page):
    from dashboard.visitor import RUN_REFUSED

    app = app_with_link({name: "../../etc/passwd"}, page).run()
    assert not app.exception and not app.error
    assert warnings(app) == [f"Ignored the link's {name}: {RUN_REFUSED}"]
    assert "policy" not in RUN_REFUSED and "training run" not in RUN_REFUSED
    app = app_with_link({name: "20990101-000000-place-none-0000"}, page).run()
    assert warnings(app) == [f"Ignored the link's {name}: no run of the app's run store has the id "
                             "'20990101-000000-place-none-0000' (ids are on the Runs page)"]
