"""Work that survives a reload (issue #33): the view in the link, the Place results in the store, every
selection kept across pages. A reload is a new session: here a new AppTest given the link's parameters."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.data import link
from engine.store.runs import RunStore

APP = Path(__file__).resolve().parents[2] / "dashboard" / "app.py"
REPO_RUNS = Path(__file__).resolve().parents[2] / "runs"
TIMEOUT = 300  # generous: only catches a hang (issue 34)
GRAPH = "gen:random?ops=120&seed=3"


def _app() -> None:
    """The entry script's frame (link, kept widgets, sidebar, warnings, the link written back) around the page
    named by ``st.session_state["which"]`` (a stand-in for navigation; Place by default)."""
    import streamlit as st

    from dashboard.app_pages import compare, fidelity, graphs, home, papers, place, runs, train
    from dashboard.context import retain_widgets, sidebar
    from dashboard.widgets.link import read_link, show_link_warnings, write_link

    read_link()
    retain_widgets()
    sidebar()
    show_link_warnings()
    pages = {"place": place, "graphs": graphs, "home": home, "compare": compare, "runs": runs, "train": train,
             "papers": papers, "fidelity": fidelity}
    pages[st.session_state.get("which", "place")].page()
    write_link()


def app_with_link(params: dict[str, str], which: str = "place") -> AppTest:
    """A new session (a reload) of the app on page ``which`` with the link's ``params``."""
    app = AppTest.from_function(_app, default_timeout=TIMEOUT)
    for name, value in params.items():
        app.query_params[name] = value
    app.session_state["which"] = which
    return app


def explorers(app: AppTest) -> list:
    return [c for c in app.get("component_instance") if c.proto.component_name.endswith("streamlit_cytoscape")]


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
    picker = app.selectbox(key="runs_selected")
    assert picker.value != ids[0]
    assert shown(picker) == picker.format_func(picker.value)  # the browser's picker is told, not left on ids[0]


def shown(picker) -> str | None:
    """What the browser's picker shows after this run: the value the app sent it, None where it sent none (the
    browser then goes on showing what it showed before)."""
    return picker.proto.raw_value if picker.proto.set_value else None


def test_a_delete_moves_the_picker_the_page_and_the_link_together(stored_runs):
    """Issue 58: after *Delete run* the picker shows the next run, and Edit, Downloads and the link act on it."""
    from dashboard.data.runs import list_runs

    store, _ids, _eval = stored_runs
    order = [r.id for r in list_runs()]
    gone = order[1]
    app = app_with_link({link.RUN: gone}, "runs").run()
    app.checkbox(key=f"runs_confirm_{gone}").check().run()
    app.button(key="runs_delete").click().run()
    assert not app.exception and not app.error
    assert gone not in [r.id for r in store.list()]
    after = order[2]  # the next in the list
    picker = app.selectbox(key="runs_selected")
    assert picker.value == after and shown(picker) == picker.format_func(after)
    assert params(app)[link.RUN] == after
    assert [t.key for t in app.text_input if t.key.startswith("runs_name_")] == [f"runs_name_{after}"]
    assert [c.label for c in app.checkbox if c.label.startswith("Yes, delete")] == [
        f"Yes, delete {after} and all its files"]
    app.checkbox(key=f"runs_confirm_{after}").check().run()
    app.button(key="runs_delete").click().run()  # the last in the list: the one before it is next
    assert app.selectbox(key="runs_selected").value == order[0] == params(app)[link.RUN]
    assert shown(app.selectbox(key="runs_selected")) == app.selectbox(key="runs_selected").format_func(order[0])


def test_a_reload_of_compare_keeps_the_pair_and_the_toggles(stored_runs):
    """Issue 58: the link holds Compare's pair of timelines and its toggles; a reload shows the same diff."""
    _store, ids, _eval = stored_runs
    app = app_with_link({link.RUNS: ",".join(ids)}, "compare").run()
    default_pair = (app.selectbox(key="compare_left").value, app.selectbox(key="compare_right").value)
    app.selectbox(key="compare_left").set_value(default_pair[1]).run()
    app.selectbox(key="compare_right").set_value(default_pair[0]).run()
    app.toggle(key="compare_diff_view").set_value(True).run()
    app.toggle(key="compare_mix").set_value(True).run()
    assert not app.exception and not app.error
    moved = [c.value for c in app.caption if " ops (" in c.value]
    linked = params(app)
    assert (linked["left"], linked["right"], linked["moved"], linked["mix"]) == (*default_pair[::-1], "on", "on")

    again = app_with_link(linked, "compare").run()  # the reload
    assert not again.exception and not again.error and not warnings(again)
    assert (again.selectbox(key="compare_left").value, again.selectbox(key="compare_right").value) == \
        default_pair[::-1]
    assert again.toggle(key="compare_diff_view").value and again.toggle(key="compare_mix").value
    assert [c.value for c in again.caption if " ops (" in c.value] == moved
    assert len(explorers(again)) == 1
    assert params(again) == linked

    old = app_with_link({link.RUNS: ",".join(ids)}, "compare").run()  # a link from before: today's defaults
    assert not old.exception and not warnings(old)
    assert (old.selectbox(key="compare_left").value, old.selectbox(key="compare_right").value) == default_pair
    assert not old.toggle(key="compare_diff_view").value and not old.toggle(key="compare_mix").value
    bad = app_with_link({link.RUNS: ",".join(ids), "left": "../../etc/passwd", "moved": "maybe"}, "compare").run()
    assert not bad.exception and not bad.error
    assert sorted(warnings(bad)) == ["Ignored the link's left: not one of the choices this page offers",
                                     "Ignored the link's moved: not one of the choices this page offers"]
    assert bad.selectbox(key="compare_left").value == default_pair[0]


def test_a_reload_of_compare_keeps_its_cdf_and_learning_curves(learning_runs):
    _store, ids = learning_runs
    app = app_with_link({}, "compare").run()
    app.multiselect(key="compare_cdf_runs").set_value([ids["experiment"]]).run()
    app.multiselect(key="compare_train_runs").set_value([ids["trained"]]).run()
    app.radio(key="compare_curve_x").set_value("placements evaluated").run()
    app.slider(key="compare_curve_smoothing").set_value(0.3).run()
    linked = params(app)
    assert (linked["cdf"], linked["curves"], linked["x"], linked["smoothing"]) == (
        ids["experiment"], ids["trained"], "placements evaluated", "0.3")
    again = app_with_link(linked, "compare").run()
    assert not again.exception and not again.error and not warnings(again)
    assert again.multiselect(key="compare_cdf_runs").value == [ids["experiment"]]
    assert again.multiselect(key="compare_train_runs").value == [ids["trained"]]
    assert again.radio(key="compare_curve_x").value == "placements evaluated"
    assert again.slider(key="compare_curve_smoothing").value == pytest.approx(0.3)
    assert params(again) == linked
    app.multiselect(key="compare_cdf_runs").set_value([]).run()
    assert params(app)["cdf"] == "none"
    assert app_with_link(params(app), "compare").run().multiselect(key="compare_cdf_runs").value == []


def test_a_reload_of_runs_papers_and_fidelity_keeps_what_they_show(stored_runs, monkeypatch):
    _store, ids, _eval = stored_runs
    app = app_with_link({}, "runs").run()
    app.selectbox(key="runs_kind").set_value("place").run()
    app.selectbox(key="runs_selected").set_value(ids[1]).run()
    app.selectbox(key="runs_figure").set_value("memory over time").run()
    linked = params(app)
    again = app_with_link(linked, "runs").run()
    assert not again.exception and not warnings(again)
    assert (again.selectbox(key="runs_kind").value, again.selectbox(key="runs_selected").value,
            again.selectbox(key="runs_figure").value) == ("place", ids[1], "memory over time")
    assert params(again) == linked

    monkeypatch.setenv("PLACELAB_EXAMPLE_RUNS_DIR", str(REPO_RUNS))  # the bundled reproductions and validation
    app = app_with_link({}, "papers").run()
    app.selectbox(key="papers_pick").set_value("doppler-table2 (quick)").run()
    app.toggle(key="papers_norm").set_value(not app.toggle(key="papers_norm").value).run()
    again = app_with_link(params(app), "papers").run()
    assert not again.exception and not warnings(again)
    assert again.selectbox(key="papers_pick").value == "doppler-table2 (quick)"
    assert again.toggle(key="papers_norm").value == app.toggle(key="papers_norm").value
    assert params(again) == params(app)

    app = app_with_link({}, "fidelity").run()
    modes = app.selectbox(key="fidelity_mode").options
    other = next(m for m in modes if m != app.selectbox(key="fidelity_mode").value)
    app.selectbox(key="fidelity_mode").set_value(other).run()
    again = app_with_link(params(app), "fidelity").run()
    assert not again.exception and not warnings(again)
    assert again.selectbox(key="fidelity_mode").value == other
    assert params(again) == params(app)


#: The page parameters each page keeps in the link, as the pages write them (``run``: Runs' and Fidelity's).
PAGES_HOLD = {"place": ("placers", "results", "edits"),
              "compare": ("runs", "left", "right", "schedules", "moved", "mix", "sweep", "cdf", "curves", "x",
                          "smoothing"),
              "runs": ("run", "kind", "status", "tag", "figure"), "papers": ("reproduction", "normalised"),
              "fidelity": ("run", "timeline")}


def test_the_link_reads_every_page_parameter_as_the_pages_own():
    """Issue 58 follow-up: ``read_link`` knows the 22 parameters the pages keep (it called 17 of them unknown and the
    app stripped them before reading the link); each waits for its page, unchecked here, and the module says what
    each is."""
    every = {name for names in PAGES_HOLD.values() for name in names}
    assert len(every) == 22 and set(link.PAGE_PARAMS) == every
    values = {name: f"{name} value" for name in sorted(every)}
    view = link.read_link(values)
    assert view.warnings == [] and view.pages == values
    assert [name for name in sorted(every) if f"``{name}``" not in link.__doc__] == []
    assert link.read_link({"colour": "red"}).warnings == ["Ignored the link's colour: the app has no such parameter"]


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
    from dashboard.input_guard import RUN_REFUSED

    app = app_with_link({name: "../../etc/passwd"}, page).run()
    assert not app.exception and not app.error
    assert warnings(app) == [f"Ignored the link's {name}: {RUN_REFUSED}"]
    assert "policy" not in RUN_REFUSED and "training run" not in RUN_REFUSED
    app = app_with_link({name: "20990101-000000-place-none-0000"}, page).run()
    assert warnings(app) == [f"Ignored the link's {name}: no run of the app's run store has the id "
                             "'20990101-000000-place-none-0000' (ids are on the Runs page)"]
