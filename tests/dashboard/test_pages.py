"""Every page of the app, run headless with AppTest: with no runs, with stored runs, and interacting."""

import base64
import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from dashboard.widgets.explorer import FIRST_VIEW_NODES

APP = Path(__file__).resolve().parents[2] / "dashboard" / "app.py"
TIMEOUT = 300  # generous: only catches a hang; a busy machine must not fail a page on a clock (issue 34)


def page_app(name: str, graph: str | None = None) -> AppTest:
    """The page ``name`` alone; ``graph``: a spec made the current graph before the first run."""
    preset = ("import streamlit as st\nfrom dashboard.context import set_graph, current_graph\n"
              "from engine.specs import load_graph\n"
              f"if current_graph() is None:\n    set_graph(load_graph({graph!r}), {graph!r}, {graph!r})\n"
              if graph else "")
    return AppTest.from_string(f"{preset}from dashboard.app_pages import {name}\n{name}.page()\n",
                               default_timeout=TIMEOUT)


def use_example(app: AppTest, label: str | None = None) -> AppTest:
    """Pick an example on the Graphs page (the first one by default) and click *Use this graph*."""
    if label is not None:
        app.selectbox(key="graphs_example").set_value(label)
    return app.button(key="graphs_use").click().run()


def charts(app: AppTest) -> list:
    return app.get("plotly_chart")


def values(x) -> list:
    """A plotly JSON array: a list, or numpy data as ``{"dtype", "bdata"}`` (base64)."""
    if isinstance(x, dict):
        return np.frombuffer(base64.b64decode(x["bdata"]), dtype=x["dtype"]).tolist()
    return list(x)


def figure(app: AppTest, title: str) -> dict:
    """The plotly figure (as JSON) of the chart titled ``title``."""
    specs = [json.loads(c.proto.spec) for c in charts(app)]
    found = [f for f in specs if (f["layout"].get("title") or {}).get("text") == title]
    assert len(found) == 1, [(f["layout"].get("title") or {}).get("text") for f in specs]
    return found[0]


def explorers(app: AppTest) -> list[dict]:
    """The graph explorers on the page: each component's arguments (elements, layout, ...)."""
    return [json.loads(c.proto.json_args) for c in app.get("component_instance")
            if c.proto.component_name.endswith("streamlit_cytoscape")]


def explorer_app(page: str, graph: str) -> AppTest:
    """``page`` on ``graph`` where ``st.session_state["event"]`` / ``["pick"]`` (set by a test) are applied to the
    explorer ``st.session_state["explorer"]`` before the page runs, as a click in the graph / timeline would."""
    hook = ("from dashboard.widgets.explorer import apply_event, pick_op\n"
            "if st.session_state.get('event'):\n"
            "    apply_event(st.session_state['explorer'], current_graph(), st.session_state.pop('event'))\n"
            "if st.session_state.get('pick') is not None:\n"
            "    pick_op(st.session_state['explorer'], current_graph(), st.session_state.pop('pick'))\n")
    preset = ("import streamlit as st\nfrom dashboard.context import set_graph, current_graph\n"
              "from engine.specs import load_graph\n"
              f"if current_graph() is None:\n    set_graph(load_graph({graph!r}), {graph!r}, {graph!r})\n")
    return AppTest.from_string(f"{preset}{hook}from dashboard.app_pages import {page}\n{page}.page()\n",
                               default_timeout=TIMEOUT)


@pytest.mark.parametrize("name", ["home", "graphs", "place", "train", "compare", "runs"])
@pytest.mark.parametrize("runs", ["empty_runs", "stored_runs", "learning_runs"])
def test_every_page_renders(name, runs, request):
    request.getfixturevalue(runs)
    app = page_app(name).run()
    assert not app.exception
    assert not app.error
    assert [t.value for t in app.title] == [name.capitalize() if name != "home" else "placelab"]


def test_app_navigation_and_presentation_toggle(stored_runs):
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    assert not app.exception
    assert [t.value for t in app.title] == ["placelab"]
    app.toggle(key="presentation").set_value(True).run()
    assert not app.exception
    assert any("font-size" in m.value for m in app.markdown)


def test_graphs_page_example_summary_and_view(empty_runs):
    app = page_app("graphs").run()
    assert not app.metric and any("Use this graph" in i.value for i in app.info)  # nothing loads by itself
    use_example(app)
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Ops"] == "200"  # the first example: gen:random?ops=200
    assert "Lower bound on k80x2" in metrics
    assert len(charts(app)) == 1 and len(explorers(app)) == 1
    # no layer scopes: bands of levels, opened up to the first view's 40 nodes
    assert any(c.value.startswith("200 ops grouped by bands of topological levels") for c in app.caption)
    shown = [n for n in explorers(app)[0]["elements"]["nodes"] if n["data"]["label"] in ("op", "scope")]
    assert 20 <= len(shown) <= FIRST_VIEW_NODES == 40


def test_graphs_page_generator_spec_and_bad_spec(empty_runs):
    app = page_app("graphs").run()
    app.radio(key="graphs_source").set_value("Generator spec").run()
    app.text_input(key="graphs_spec").set_value("gen:random?ops=57&seed=3").run()
    app.button(key="graphs_use").click().run()
    assert not app.exception
    assert {m.label: m.value for m in app.metric}["Ops"] == "57"
    app.text_input(key="graphs_spec").set_value("gen:random?nodes=5").run()
    app.button(key="graphs_use").click().run()
    assert not app.exception
    assert [e.value for e in app.error] == ["gen:random has no parameter 'nodes' (parameters: ops, degree, seed, "
                                            "window, name)"]
    # the error, not the previous graph under it; the current graph is unchanged
    assert not app.metric
    assert any("still random-57-s3" in i.value for i in app.info)


def _shown(app: AppTest) -> dict[str, str]:
    """Id → kind ("op", "scope", "open"; "frame" for the view's two invisible corners) of the explorer's nodes."""
    return {n["data"]["id"]: n["data"]["label"] for n in explorers(app)[0]["elements"]["nodes"]}


def test_graphs_page_explorer_opens_and_closes_scopes_on_click(empty_runs):
    from engine.specs import load_graph

    g = load_graph("gen:chainmm")
    in_meta0 = [s for s in g.scope if s.split("/")[0] == "meta0"]
    app = explorer_app("graphs", "gen:chainmm")
    app.session_state["explorer"] = "graphs_gv"
    app.run()
    assert not app.exception
    first = _shown(app)  # the first view: the biggest scopes opened while at most 40 nodes show; meta0 is open
    opened = len(app.session_state["graphs_gv_explorer"]["expanded"])
    assert len([k for k in first.values() if k in ("op", "scope")]) <= FIRST_VIEW_NODES and first["s:meta0"] == "open"
    ops_first = sum(k == "op" for k in first.values())
    layout = explorers(app)[0]["layout"]
    assert layout["name"] == "preset" and layout["fit"] is True and "eles" not in layout  # fit to everything
    app.session_state["event"] = {"action": "tap_node", "data": {"target_id": "s:meta0"}, "timestamp": 1}
    app.run()  # a click on the open box closes meta0 and everything below it
    shown = _shown(app)
    assert shown["s:meta0"] == "scope" and sum(k == "op" for k in shown.values()) == ops_first - len(in_meta0)
    assert any(f"{opened - 1 - len(set(in_meta0))} scopes open" in c.value for c in app.caption)
    app.session_state["event"] = {"action": "tap_node", "data": {"target_id": "s:meta0"}, "timestamp": 2}
    app.run()  # a click on the closed scope opens it one level: its shards, closed
    shown = _shown(app)
    assert shown["s:meta0"] == "open"
    closed_first = {i for i, k in first.items() if k == "scope"}  # the scopes the first view left closed
    assert {i for i, k in shown.items() if k == "scope"} == closed_first | {f"s:{s}" for s in set(in_meta0)}
    name = g.op_names[0]
    app.session_state["event"] = {"action": "tap_node", "data": {"target_id": f"op:{name}"}, "timestamp": 3}
    app.run()
    assert any(f"selected: **{name}**" in c.value for c in app.caption)
    app.text_input(key="graphs_gv_search").set_value("m0.A/shard0").run()  # reveals and marks the match
    marked = [n["data"]["id"] for n in explorers(app)[0]["elements"]["nodes"] if n["data"].get("_bw", 0) >= 4]
    assert "op:m0.A/shard0" in marked
    # and the view fits to it and its neighbours (a preset layout fits its eles)
    focus = explorers(app)[0]["layout"]["eles"]
    assert '[id = "op:m0.A/shard0"]' in focus.split(", ") and len(focus.split(", ")) > 1
    app.radio(key="graphs_gv_color_by").set_value("memory").run()  # another rerun keeps the view where it is
    assert explorers(app)[0]["layout"]["eles"] == focus
    app.text_input(key="graphs_gv_search").set_value("").run()  # the search cleared: the whole graph again
    assert "eles" not in explorers(app)[0]["layout"]
    app.text_input(key="graphs_gv_search").set_value("nosuchop").run()  # said, not silent (issue #33)
    assert any(c.value == "No op matches 'nosuchop' (0 matches in names, types and scopes)." for c in app.caption)
    app.radio(key="graphs_gv_color_by").set_value("compute").run()
    assert not app.exception and not app.error


def test_place_timeline_and_explorer_are_linked(empty_runs):
    from dashboard.figures import timeline
    from dashboard.widgets.schedule import op_at_points

    app = explorer_app("place", "gen:chainmm")
    app.session_state["explorer"] = "place_0_gv"
    app.run()
    app.multiselect(key="place_placers").set_value(["round-robin"]).run()
    app.button(key="place_run").click().run()
    assert not app.exception and len(explorers(app)) == 1
    app.session_state["pick"] = 5  # as a click on op 5's bar in the timeline would
    app.run()
    state = app.session_state["place_0_gv_explorer"]
    g_names = [n["data"]["id"] for n in explorers(app)[0]["elements"]["nodes"]
               if n["data"].get("_bw") == 6.0]
    assert state["selected"] == 5 and len(g_names) == 1 and g_names[0].startswith("op:")
    assert f'[id = "{g_names[0]}"]' in explorers(app)[0]["layout"]["eles"].split(", ")  # the view goes to it
    # and back: the op selected in the graph is marked in the timeline, with its name
    caption = [c.value for c in app.caption if c.value.startswith("Selected in the graph:")]
    assert len(caption) == 1 and g_names[0][3:] in caption[0]
    fig = figure(app, next(f["layout"]["title"]["text"] for f in map(lambda c: json.loads(c.proto.spec),
                                                                        charts(app))
                           if f["layout"]["title"]["text"].startswith("round-robin ·")))
    marker = [t for t in fig["data"] if t.get("name") == "matches"]
    assert len(marker) == 1 and marker[0]["text"] == [g_names[0][3:]]
    # a click on a bar of the timeline names its op: trace 0 is device 0's op bars
    from engine.presets import PRESETS
    from engine.sim.simulator import Simulator
    from engine.specs import load_graph
    from placelab.runner import place_and_simulate

    g, c = load_graph("gen:chainmm"), PRESETS["k80x2"]()
    sched = Simulator(g, c).run(place_and_simulate(g, c, "round-robin").placement)
    tl = timeline(sched, g, c)
    names = {n: i for i, n in enumerate(g.op_names)}
    first_on_0 = int(np.flatnonzero(sched.op_device == 0)[0])
    assert op_at_points(tl, [{"curve_number": 0, "point_index": 0}], names) == first_on_0


def test_place_two_placers_and_save(empty_runs):
    from engine.store.runs import RunStore

    app = page_app("place", "gen:random?ops=200&seed=1").run()
    assert not app.exception
    app.multiselect(key="place_placers").set_value(["single-device", "round-robin"]).run()
    app.button(key="place_run").click().run()
    assert not app.exception and not app.error
    table = app.dataframe[0].value
    assert list(table["placer"]) == ["single-device", "round-robin"]
    assert (table["ratio to lower bound"] >= 1.0 - 1e-9).all()
    # makespan bars + (timeline, load, memory) per placer; one graph view per placer
    assert len(charts(app)) == 1 + 3 * 2
    assert len(explorers(app)) == 2
    assert {m.label for m in app.metric} >= {"Makespan", "Ratio to lower bound", "Peak memory (max)",
                                            "Out of memory", "Communication"}
    app.button(key="place_save_1").click().run()
    assert not app.exception
    runs = RunStore(empty_runs).list()
    assert [r.meta["placer"] for r in runs] == ["round-robin"]
    assert runs[0].meta["metrics"]["makespan_s"] == pytest.approx(float(table["makespan (ms)"][1]) / 1e3)
    assert any(s.value.startswith("Saved as run") for s in app.success)
    assert runs[0].meta["name"] == "round-robin · random-200-s1 · k80x2"  # the default name asked for
    assert list(app.dataframe[0].value["run"]) == ["", runs[0].id]  # the saved id shows in the table
    assert not [b for b in app.button if b.key == "place_save_1"]  # saved: no second Save button


def makespan_bars_of(app: AppTest) -> dict[str, dict]:
    """The makespan bars on the page (the one figure titled "Makespan on ..."): each bar's trace by its label."""
    specs = [json.loads(c.proto.spec) for c in charts(app)]
    (fig,) = [f for f in specs if ((f["layout"].get("title") or {}).get("text") or "").startswith("Makespan on")]
    assert fig["layout"]["xaxis"]["title"]["text"].startswith("bar labels: makespan (ms) · ×single-device")
    return {t["name"]: t for t in fig["data"] if t["type"] == "bar"}


def test_place_shows_the_ratio_to_single_device_and_a_far_off_estimate(empty_runs, estimating_placer):
    """Issue 55: beside each bar its ×single-device (the table's "ratio to single device": makespan ÷ single-device's);
    a placer whose own estimate is far off the simulation (1 µs) gets a warning; one whose estimate agrees (3 % over)
    or that makes none gets none."""
    from engine.presets import PRESETS
    from engine.specs import load_graph
    from placelab.runner import place_and_simulate

    spec = "gen:random?ops=200&seed=1"
    heft = place_and_simulate(load_graph(spec), PRESETS["k80x2"](), "heft").metrics["makespan_s"]
    close, far = estimating_placer(1.03 * heft, "estimating-close"), estimating_placer(1e-6, "estimating-far")
    app = page_app("place", spec).run()
    app.multiselect(key="place_placers").set_value(["single-device", "round-robin", close, far]).run()
    app.button(key="place_run").click().run()
    assert not app.exception and not app.error
    table = app.dataframe[0].value
    makespan = dict(zip(table["placer"], table["makespan (ms)"], strict=True))
    ratio = dict(zip(table["placer"], table["ratio to single device"], strict=True))
    assert makespan[close] == makespan[far] == pytest.approx(heft * 1e3)
    for name in ("single-device", "round-robin", close):
        assert ratio[name] == pytest.approx(makespan[name] / makespan["single-device"])
    bars = makespan_bars_of(app)
    assert bars["single-device"]["text"][0].endswith(" · ×1.00")
    assert bars["round-robin"]["text"][0].endswith(f" · ×{ratio['round-robin']:.2f}")
    assert bars[close]["text"][0].endswith(f" · ×{ratio[close]:.2f}")  # agrees: no mark
    assert bars[far]["text"][0].endswith(f" · ×{ratio[far]:.2f} ⚠")
    (warning,) = app.warning
    assert f"**{far}**: est. off by -100 %" in warning.value and close not in warning.value


def test_place_reports_an_infeasible_placer(empty_runs):
    app = page_app("place", "gen:random?ops=200&seed=1").run()
    app.multiselect(key="place_placers").set_value(["cpu-only", "round-robin"]).run()
    app.button(key="place_run").click().run()
    assert not app.exception
    assert len(app.error) == 1 and app.error[0].value.startswith("cpu-only:")
    assert list(app.dataframe[0].value["placer"]) == ["round-robin"]


def test_compare_selected_runs(stored_runs):
    _store, ids, _ = stored_runs
    app = page_app("compare").run()
    assert not app.exception
    table = app.dataframe[0].value
    assert sorted(table["placer"]) == ["round-robin", "single-device"]
    # bars, two timelines, the eval CDF
    assert len(charts(app)) == 4
    # the placement diff in the explorer: the ops that moved get a red border
    from engine.store.records import load_placement_run

    runs = [load_placement_run(_store.load(i)) for i in ids]
    moved = int((runs[0].placement.devices != runs[1].placement.devices).sum())
    assert 0 < moved < 40
    app.toggle(key="compare_diff_view").set_value(True).run()
    assert not app.exception and len(explorers(app)) == 1
    assert any(c.value == f"Red border: moved ({moved:,} ops)." for c in app.caption)
    app.multiselect(key="compare_runs").set_value([ids[0]]).run()
    assert not app.exception
    assert list(app.dataframe[0].value["placer"]) == ["single-device"]


def chart_titles(app: AppTest) -> list[str]:
    return [(json.loads(c.proto.spec)["layout"].get("title") or {}).get("text") or "" for c in charts(app)]


def test_compare_titles_its_timelines_by_placer_and_refuses_a_self_diff(stored_runs):
    """Issue 58: the side-by-side timelines are titled by the placers (the graph and cluster are the page's), short
    enough for half the page; one run, or the same run on both sides, is drawn once and never diffed against
    itself."""
    store, ids, _ = stored_runs
    app = page_app("compare").run()
    left, right = app.selectbox(key="compare_left").value, app.selectbox(key="compare_right").value
    placers = {i: store.load(i).meta["placer"] for i in ids}
    makespans = {i: store.load(i).meta["metrics"]["makespan_s"] * 1e3 for i in ids}
    titles = chart_titles(app)
    assert [t for t in titles if " — makespan " in t] == [f"{placers[i]} — makespan {makespans[i]:.4g} ms"
                                                          for i in (left, right)]
    assert any(" ops (" in c.value for c in app.caption)  # the diff
    app.selectbox(key="compare_right").set_value(left).run()
    assert not app.exception and not app.error
    assert [t for t in chart_titles(app) if " — makespan " in t] == [
        f"{placers[left]} — makespan {makespans[left]:.4g} ms"]
    assert not any(" ops (" in c.value for c in app.caption)
    assert "Left and right are the same run: pick another run on one side to see what moved." in [
        i.value for i in app.info]
    app.multiselect(key="compare_runs").set_value([ids[0]]).run()
    assert not app.exception and not app.error
    assert not [s for s in app.selectbox if s.key in ("compare_left", "compare_right")]
    assert [t for t in chart_titles(app) if " — makespan " in t] == [
        f"{placers[ids[0]]} — makespan {makespans[ids[0]]:.4g} ms"]
    assert not any(" ops (" in c.value for c in app.caption)
    assert any(c.value.startswith("One run with a placement is selected") for c in app.caption)


def test_home_shows_the_newest_comparison(stored_runs, monkeypatch):
    """Issue 58: Home draws the newest comparison (its stored makespans), the bundled examples' on a new install."""
    store, ids, _ = stored_runs
    app = page_app("home").run()
    assert not app.exception and not app.error
    bars = figure(app, "Newest comparison: makespan on random-40-s2 · k80x2")
    stored = {store.load(i).meta["placer"]: store.load(i).meta["metrics"]["makespan_s"] * 1e3 for i in ids}
    assert {t["name"]: values(t["y"])[0] for t in bars["data"] if t["type"] == "bar"} == pytest.approx(stored)
    monkeypatch.setenv("PLACELAB_RUNS_DIR", str(store.root.parent / "new-install"))
    monkeypatch.setenv("PLACELAB_EXAMPLE_RUNS_DIR", str(Path(__file__).resolve().parents[2] / "runs"))
    app = page_app("home").run()
    assert not app.exception and not app.error
    assert [t for t in chart_titles(app) if t.startswith("Newest comparison: makespan on ")]


def test_compare_shows_the_ratio_to_single_device_also_for_runs_stored_before_it(stored_runs, estimating_placer):
    """Issue 55: the bars carry each run's ×single-device: stored with the run, or (a run stored before it was
    recorded) the single-device placer simulated on the run's own graph and cluster; a run whose placer's
    estimate is far off its simulation is a warning."""
    from engine.generators import random_dag
    from engine.presets import PRESETS
    from placelab.runner import place_and_simulate

    store, ids, _ = stored_runs
    single, rr = (store.load(i).meta["metrics"] for i in ids)
    assert single["ratio_to_single_device"] == 1.0
    assert rr["ratio_to_single_device"] == pytest.approx(rr["makespan_s"] / single["makespan_s"])
    old = json.loads((store.root / ids[1] / "run.json").read_text())  # round-robin as stored before issue 55
    for key in ("predicted_makespan_s", "single_device_makespan_s", "ratio_to_single_device"):
        del old["metrics"][key]
    (store.root / ids[1] / "run.json").write_text(json.dumps(old))
    app = page_app("compare").run()
    assert not app.exception and not app.warning
    bars = makespan_bars_of(app)
    assert bars["single-device"]["text"][0].endswith(" · ×1.00")
    assert bars["round-robin"]["text"][0].endswith(f" · ×{rr['ratio_to_single_device']:.2f}")
    table = app.dataframe[0].value
    assert dict(zip(table["placer"], table["ratio to single device"], strict=True))["round-robin"] == pytest.approx(
        rr["ratio_to_single_device"])
    far = estimating_placer(1e-6)
    place_and_simulate(random_dag(ops=40, seed=2), PRESETS["k80x2"](), far, store=store)
    app = page_app("compare").run()
    assert not app.exception
    assert makespan_bars_of(app)[far]["text"][0].endswith(" ⚠")
    (warning,) = app.warning
    assert f"**{far}**: est. off by -100 %" in warning.value


def test_compare_without_runs_explains(empty_runs):
    app = page_app("compare").run()
    assert not app.exception
    assert any("eval" in i.value and "experiment" in i.value for i in app.info)
    assert any(i.value.startswith("No training runs yet") for i in app.info)
    assert not charts(app)


def test_compare_experiment_cdf_and_learning_curves(learning_runs):
    _store, ids = learning_runs
    app = page_app("compare").run()
    assert not app.exception and not app.error
    cdf = figure(app, "CDF over test graphs")
    lines = {t["name"]: values(t["x"]) for t in cdf["data"]}
    eval_line = next(k for k in lines if k.endswith("k80x2") and "test-set" in k)
    # makespan / lower bound of the hand-made experiment (conftest), each CDF line starting at its minimum
    assert lines.pop(eval_line) == pytest.approx([1.0, 1.0, 1.1, 1.2, 1.3, 1.4])
    assert lines == {"Zero-Shot": pytest.approx([1.2, 1.2, 1.5]), "Optimized": pytest.approx([1.1, 1.1, 1.3]),
                     "Random": pytest.approx([2.0, 2.0, 3.0])}
    curves = figure(app, "Learning curves (smoothing 0.6)")
    best = [t for t in curves["data"] if t["name"] == "tiny placeto best"]
    assert len(best) == 1 and values(best[0]["x"]) == [1, 2, 3, 4]
    names = {t["name"] for t in curves["data"]}
    assert {"tiny placeto reward", "tiny placeto entropy", "tiny placeto learning_rate"} <= names
    app.radio(key="compare_curve_x").set_value("placements evaluated").run()
    best = [t for t in figure(app, "Learning curves (smoothing 0.6)")["data"] if t["name"] == "tiny placeto best"]
    assert values(best[0]["x"])[-1] > 4  # placements evaluated grow faster than episodes
    # only the experiment in the CDF: its three methods
    app.multiselect(key="compare_cdf_runs").set_value([ids["experiment"]]).run()
    assert [t["name"] for t in figure(app, "CDF over test graphs")["data"]] == ["Zero-Shot", "Optimized", "Random"]


def test_compare_gives_a_placer_one_colour_in_every_figure(learning_runs):
    """Issue 58 follow-up: a placer's colour (dashboard/figures/colors.py: round-robin #009E73, placeto #A59600) in
    the bars, the CDF and the learning curves alike, whatever a line's label says: the eval run's label is its id
    (it would take a hash colour, #69A500 for one such id), the training run's its given name ("tiny placeto")."""
    from dashboard.figures.colors import placer_colors

    assert (placer_colors()["round-robin"], placer_colors()["placeto"]) == ("#009E73", "#A59600")
    app = page_app("compare").run()
    assert not app.exception and not app.error
    assert makespan_bars_of(app)["round-robin"]["marker"]["color"] == "#009E73"
    cdf = figure(app, "CDF over test graphs")
    [eval_line] = [t for t in cdf["data"] if "test-set" in t["name"]]
    assert eval_line["line"]["color"] == "#009E73"
    curves = figure(app, "Learning curves (smoothing 0.6)")
    assert {t["line"]["color"] for t in curves["data"] if t["name"].startswith("tiny placeto")} == {"#A59600"}


def test_compare_learning_curves_show_each_runs_learning_health(learning_runs):
    _store, ids = learning_runs
    app = page_app("compare").run()
    app.multiselect(key="compare_train_runs").set_value([ids["trained"], ids["broken"]]).run()
    assert not app.exception and not app.error
    table = next(d.value for d in app.dataframe if "learning health" in d.value.columns)
    assert list(table["learning health"]) == ["too short to judge", "no curve"]  # the failed run has no curve
    row = table.iloc[0]
    assert row["episodes"] == 4 and row["random placements"] > 0 and row["verdict from"] == "the run (stored)"
    assert row["entropy, of uniform (first → last)"].endswith("%")


def test_runs_filter_rename_tag_delete(stored_runs):
    store, ids, eval_id = stored_runs
    app = page_app("runs").run()
    assert len(app.dataframe[0].value) == 3
    app.selectbox(key="runs_kind").set_value("place").run()
    assert len(app.dataframe[0].value) == 2
    app.selectbox(key="runs_selected").set_value(ids[0]).run()
    app.text_input(key=f"runs_name_{ids[0]}").set_value("baseline A").run()
    app.button(key="runs_rename").click().run()
    assert store.load(ids[0]).meta["name"] == "baseline A"
    assert app.selectbox(key="runs_selected").value == ids[0]  # the renamed run stays selected
    app.text_input(key=f"runs_tags_{ids[0]}").set_value("x, y").run()
    app.button(key="runs_save_tags").click().run()
    assert store.load(ids[0]).meta["tags"] == ["x", "y"]
    assert not app.exception
    assert app.button(key="runs_delete").disabled
    app.checkbox(key=f"runs_confirm_{ids[0]}").check().run()
    app.button(key="runs_delete").click().run()
    assert not app.exception
    assert sorted(r.id for r in store.list()) == sorted([ids[1], eval_id])


def test_runs_downloads(stored_runs):
    _store, ids, eval_id = stored_runs
    app = page_app("runs").run()
    assert app.selectbox(key="runs_selected").value == eval_id  # newest first; it has no placement
    assert any("no placement" in c.value for c in app.caption)
    app.selectbox(key="runs_selected").set_value(ids[1]).run()
    labels = [b.proto.label for b in app.get("download_button")]
    assert labels[:2] == ["CSV", "LaTeX"]  # the runs table
    assert labels[2:6] == ["Schedule CSV (ops)", "Schedule CSV (transfers)", "Placement JSON",
                           "Chrome trace (Perfetto)"]
    assert labels[6] == "Download PNG"  # the figure export, PNG first
    assert not app.exception


def test_place_every_registered_placer_with_its_parameter_widgets(empty_runs):
    from policies.registry import PLACERS

    app = page_app("place", "gen:random?ops=200&seed=1").run()
    app.multiselect(key="place_placers").set_value(list(PLACERS)).run()
    assert not app.exception
    from policies.rl.registry import learned_placers, make_config

    for name in learned_placers():  # the learned placers train on the graph: a few episodes (on 8 groups)
        app.number_input(key=f"place_budget_{name}").set_value(2)
        if make_config(name, {}).groups is not None:  # DOPPLER places every op
            app.number_input(key=f"place_param_{name}_groups").set_value(8)
    app.button(key="place_run").click().run()
    assert not app.exception
    placed = list(app.dataframe[0].value["placer"])
    refused = [e.value.split(":")[0] for e in app.error]  # a placer may not apply (cpu-only on k80x2)
    assert sorted(placed + refused) == sorted(PLACERS)


def _two_pages() -> None:
    """Sidebar and one of two pages, picked by ``st.session_state["which"]`` (a stand-in for navigation)."""
    import streamlit as st

    from dashboard.app_pages import graphs, place
    from dashboard.context import retain_widgets, sidebar

    retain_widgets()
    sidebar()
    (place if st.session_state.get("which") == "place" else graphs).page()


def test_graph_cluster_and_results_survive_navigation(empty_runs):
    app = AppTest.from_function(_two_pages, default_timeout=TIMEOUT).run()
    use_example(app, "random DAG, 2,000 ops")
    app.selectbox(key="ctx_cluster").set_value("p100x4").run()
    app.session_state["which"] = "place"
    app.run()
    assert any("random-2000-s1" in c.value and "p100x4" in c.value for c in app.caption)
    app.multiselect(key="place_placers").set_value(["round-robin"]).run()
    app.button(key="place_run").click().run()
    assert list(app.dataframe[0].value["placer"]) == ["round-robin"]
    app.session_state["which"] = "graphs"
    app.run()
    # back on Graphs: the example chosen there is still chosen, the graph is still the current one
    assert app.selectbox(key="graphs_example").value == "random DAG, 2,000 ops"
    assert {m.label: m.value for m in app.metric}["Ops"] == "2,000"
    app.session_state["which"] = "place"
    app.run()
    # the placer choice and the results are still there
    assert app.multiselect(key="place_placers").value == ["round-robin"]
    assert list(app.dataframe[0].value["placer"]) == ["round-robin"]
    assert not app.exception


def test_sidebar_simulation_mode_applies_to_the_cluster(empty_runs):
    from engine.cluster import SIMULATION_MODES

    app = AppTest.from_function(_two_pages, default_timeout=TIMEOUT).run()
    assert app.selectbox(key="ctx_sim_mode").options == list(SIMULATION_MODES)
    assert app.selectbox(key="ctx_sim_mode").value == "placeto"  # k80x2's own mode
    other = next(m for m in SIMULATION_MODES if m != "placeto")
    app.selectbox(key="ctx_sim_mode").set_value(other).run()
    use_example(app)
    assert any(f"k80x2 ({other})" in c.value for c in app.caption)
    app.selectbox(key="ctx_cluster").set_value("p100x4").run()  # a new preset brings its own settings
    assert app.selectbox(key="ctx_sim_mode").value == "work_conserving"  # DOPPLER's setting (engine/presets.py)


def _tree(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in sorted(root.rglob("*"))}


def test_bundled_examples_are_listed_labelled_and_never_written(example_runs):
    root, example = example_runs
    before = _tree(root)
    app = page_app("home").run()
    assert [s.value for s in app.subheader] == ["Your runs", "Bundled examples (read-only)"]
    assert list(app.dataframe[1].value["id"]) == [example]
    app = page_app("runs").run()
    table = app.dataframe[0].value
    assert dict(zip(table["id"], table["source"], strict=True))[example] == "example"
    app.selectbox(key="runs_selected").set_value(example).run()
    assert not app.exception
    assert not [b for b in app.button if b.key in ("runs_rename", "runs_delete", "runs_save_tags")]
    assert any("read-only" in c.value for c in app.caption)
    app = page_app("compare").run()
    assert not app.exception
    assert any(o.startswith("example · ") for o in app.multiselect(key="compare_runs").options)
    assert _tree(root) == before  # the app wrote nothing there


def test_a_click_on_a_timeline_bin_or_a_dragged_range_zooms_the_window_and_a_click_on_an_op_selects_it(
        monkeypatch):
    import streamlit as st

    from dashboard.figures import timeline
    from dashboard.widgets import schedule as views
    from engine.generators import random_dag
    from engine.presets import PRESETS
    from engine.sim.simulator import Simulator

    g, c = random_dag(ops=6000, seed=2), PRESETS["k80x2"]()
    sched = Simulator(g, c).run(np.arange(g.num_ops) % 2)
    end = float(sched.makespan * 1e3)
    binned, picks = timeline(sched, g, c), []
    lane = next(i for i, t in enumerate(binned.data) if t.meta == "bins")
    state = {"k_timeline": {"selection": {"points": [{"curve_number": lane, "point_index": 5}]}}}
    monkeypatch.setattr(st, "session_state", state)
    monkeypatch.setattr(views, "pick_op", lambda key, graph, op: picks.append((key, op)))
    views._on_timeline_select("k", "gv", g, binned, end)
    lo = float(binned.data[lane].customdata[5][2])  # the bin's start (ms)
    assert state["k_tl_window"] == pytest.approx((lo, lo + end / 200)) and picks == []
    # zoomed in, the ops are bars: a click on one selects its op in the explorer (and leaves the window)
    zoomed = timeline(sched, g, c, window_ms=state["k_tl_window"])
    state["k_timeline"] = {"selection": {"points": [{"curve_number": 0, "point_index": 0}]}}
    views._on_timeline_select("k", "gv", g, zoomed, end)
    assert picks == [("gv", g.op_names.index(zoomed.data[0].customdata[0][0]))]
    assert state["k_tl_window"] == pytest.approx((lo, lo + end / 200))
    # a time range dragged across the binned timeline (a box selection) becomes the window, clipped to the run
    state["k_timeline"] = {"selection": {"points": [], "box": [{"x": [end * 0.6, -3.0], "y": [0, 1]}]}}
    views._on_timeline_select("k", "gv", g, binned, end)
    assert state["k_tl_window"] == pytest.approx((0.0, end * 0.6))
