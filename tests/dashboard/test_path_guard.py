"""Issue 33: no input of the app reads the server's files or run stores, and no size or budget runs away.

The guard (``dashboard/input_guard.py``) on its own, then every page's inputs headless (AppTest): server paths
(``/etc/passwd``, ``/``, ``/root``, ``../../etc``, a real graph file, a real run store outside the app's, a
symlink out of the upload folder) all get the same message; oversized generator specs and budgets are
refused before any work, as one line with no traceback.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re

import pytest
from streamlit.testing.v1 import AppTest

from dashboard import input_guard
from dashboard.background import list_jobs
from dashboard.input_guard import PATH_REFUSED, POLICY_REFUSED, RUNS_DIR_REFUSED
from engine.errors import SpecError
from engine.generators import random_dag
from engine.graph.io import save_graph
from engine.store.runs import RunStore

TIMEOUT = 300  # generous: only catches a hang, never a busy machine's slowness (issue 34)
SERVER_PATHS = ["/etc/passwd", "/", "/root", "../../etc", "../../etc/passwd", "/etc/passwd?unit_s=1", "~",
                "/no/such/file.json", "file:///etc/passwd"]
#: In the outside graph file's content: it must never reach the page.
MARKER = "TOPSECRET-CONTENT"


@pytest.fixture
def outside(tmp_path):
    """A real graph file and a real run store (one training-like run) outside the app's store."""
    root = tmp_path / "elsewhere"
    root.mkdir()
    graph = root / "secret.json"
    save_graph(random_dag(ops=5, seed=0, name=MARKER), graph)
    store = RunStore(root / "runs")
    run = store.create("train", graph_name="secret", graph_hash="0", cluster="k80x2", placer="placeto",
                       parameters={}, seed=0)
    run.finish("done", {})
    return graph, run


def _probes(outside) -> list[str]:
    graph, run = outside
    return [*SERVER_PATHS, str(graph), str(graph.parent), str(run.path)]


def page_app(name: str, graph: str | None = None, *, sidebar: bool = False) -> AppTest:
    """The page ``name`` (with the sidebar); ``graph``: a spec made the current graph before the first run."""
    preset = ("from dashboard.context import set_graph, current_graph\nfrom engine.specs import load_graph\n"
              f"if current_graph() is None:\n    set_graph(load_graph({graph!r}), {graph!r}, {graph!r})\n"
              if graph else "")
    side = "from dashboard.context import sidebar\nsidebar()\n" if sidebar else ""
    return AppTest.from_string(f"{preset}{side}from dashboard.app_pages import {name}\n{name}.page()\n",
                               default_timeout=TIMEOUT)


def errors(app: AppTest) -> list[str]:
    """The page's error lines (no exception, and nothing of the outside file's content anywhere)."""
    assert not app.exception
    shown = [e.value for kind in ("markdown", "caption", "code", "error", "info", "success", "warning", "subheader")
             for e in app.get(kind)]
    assert not [t for t in shown if MARKER in str(t)]
    return [e.value for e in app.error]


# -- the guard on its own ----------------------------------------------------------------------


def test_every_server_path_gets_the_same_message(empty_runs, outside):
    for probe in _probes(outside):
        for check in (input_guard.graph_spec, input_guard.graphs_spec):
            with pytest.raises(SpecError) as err:
                check(probe)
            assert str(err.value) == PATH_REFUSED, probe  # existing or not, file or folder: one answer
    with pytest.raises(SpecError, match="not a graph the app serves"):
        input_guard.graphs_spec(f"gen:random?ops=5, {outside[0]}")


def test_generator_specs_examples_bench_and_families_pass(empty_runs):
    assert input_guard.graph_spec(" gen:random?ops=5 ") == "gen:random?ops=5"
    assert input_guard.graph_spec("/srv/listed.json", ["/srv/listed.json"]) == "/srv/listed.json"
    from engine.workloads.published import bench_descriptions

    bench = next(iter(bench_descriptions()))
    assert input_guard.graph_spec(bench) == bench
    assert input_guard.graphs_spec("gen:random?ops=5, family:cifar10:train") == "gen:random?ops=5,family:cifar10:train"
    with pytest.raises(SpecError, match="names no graph"):
        input_guard.graphs_spec(" , ")


def test_uploads_resolve_inside_the_upload_folder_only(empty_runs, tmp_path):
    g = random_dag(ops=7, seed=3, name="my graph/../x")
    spec = input_guard.keep_upload(g)
    assert spec.startswith("upload:") and "/" not in spec
    path = input_guard.graph_spec(spec)
    assert os.path.dirname(path) == str(input_guard.uploads_dir())
    assert input_guard.keep_upload(g) == spec  # once per content
    assert input_guard.shown_spec(f"{path},gen:random?ops=5") == f"{spec},gen:random?ops=5"
    secret = tmp_path / "secret.json"
    save_graph(random_dag(ops=5, seed=0), secret)
    (input_guard.uploads_dir() / "evil.json").symlink_to(secret)  # a symlink out of the upload folder
    (input_guard.uploads_dir() / "sub.json").mkdir()
    for probe in ["upload:evil", "upload:../../etc/passwd", "upload:/etc/passwd", "upload:.hidden", "upload:sub",
                  "upload:nothing-here", "upload:"]:
        with pytest.raises(SpecError) as err:
            input_guard.graph_spec(probe)
        assert str(err.value) == PATH_REFUSED, probe


@pytest.mark.parametrize(("spec", "limit"), [
    ("gen:random?ops=10000000&degree=1000", "gen:random: ops=10000000 is beyond the app's limit of 200,000"),
    ("gen:random?ops=150000&degree=10",
     "gen:random: ops × degree = 1.5e+06 edges is beyond the app's limit of 1,000,000"),
    ("gen:random?ops=1000&degree=inf", "gen:random: degree must be a finite number, got inf"),
    ("gen:nmt?layers=100&length=200", "gen:nmt: layers=100 is beyond the app's limit of 32"),
    ("gen:nmt?layers=30&length=400", "gen:nmt: layers×length = 12,000 is beyond the app's limit of 1,000"),
    ("gen:family-ptb?nodes=1024", "gen:family-ptb: nodes=1024 is beyond the app's limit of 128"),
    ("gen:nasnet?variant=large&batch=1000000000", "gen:nasnet: batch=1000000000 is beyond the app's limit of 4,096"),
    ("gen:inception-v3?batch=2147483647", "gen:inception-v3: batch=2147483647 is beyond the app's limit of 4,096"),
    ("gen:chainmm?size=0", "gen:chainmm: size must be >= 1, got 0"),
    ("gen:nasnet?variant=large&cache=false", "gen:nasnet: cache=false is for the command line"),
])
def test_oversized_generator_specs_are_refused_before_building(spec, limit, monkeypatch):
    from engine import generators

    generators.generator_descriptions()
    gen = generators.GENERATORS[spec[4:].partition("?")[0]]

    @functools.wraps(gen.make)  # same parameters; building would fail the test
    def never(**kwargs):
        raise AssertionError("the graph was built")

    monkeypatch.setitem(generators.GENERATORS, gen.name, dataclasses.replace(gen, make=never))
    with pytest.raises(SpecError) as err:
        input_guard.check_generator(spec)
    assert str(err.value).startswith(limit)


def test_generator_limits_leave_ordinary_specs_alone():
    for spec in ["gen:random?ops=200&seed=1", "gen:nmt", "gen:family-ptb?index=3", "gen:chainmm?gpus=8",
                 "gen:nasnet?variant=large&batch=4096", "gen:inception-v3"]:
        input_guard.check_generator(spec)
    with pytest.raises(SpecError, match="has no parameter 'nodes'"):
        input_guard.check_generator("gen:random?nodes=5")  # the engine's own message
    with pytest.raises(SpecError, match="unknown generator 'nope'"):
        input_guard.check_generator("gen:nope")


def test_training_runs_come_from_the_app_store_only(learning_runs, outside, tmp_path):
    store, ids = learning_runs
    trained = ids["trained"]
    assert input_guard.training_run(trained).path == store.root / trained
    assert input_guard.training_run(trained[:-2]).id == trained  # a unique prefix
    _graph, foreign = outside
    for probe in [*SERVER_PATHS, str(foreign.path), str(store.root / trained), f"../{trained}", ".jobs"]:
        with pytest.raises(SpecError) as err:
            input_guard.training_run(probe)
        assert str(err.value) == POLICY_REFUSED, probe
    with pytest.raises(SpecError, match="no run of the app's run store has the id"):
        input_guard.training_run(foreign.id)  # a run of another store, by its id
    with pytest.raises(SpecError, match="is a place run"):
        input_guard.training_run(store.list(kind="place")[0].id)
    (store.root / "escape").symlink_to(foreign.path)  # a run folder that leads out of the store
    with pytest.raises(SpecError) as err:
        input_guard.training_run("escape")
    assert str(err.value) == POLICY_REFUSED


def test_placer_parameters_paths_and_budgets(learning_runs, outside):
    store, ids = learning_runs
    out = input_guard.placer_params("placeto", 0, 5, {"policy": ids["trained"], "groups": 8})
    assert out == {"policy": str(store.root / ids["trained"]), "groups": 8, "runs_dir": str(store.root)}
    assert input_guard.placer_params("placeto", 0, None, {})["runs_dir"] == str(store.root)
    graph, foreign = outside
    refusals = [
        ("placeto", None, {"policy": str(foreign.path)}, POLICY_REFUSED),
        ("placeto", None, {"runs_dir": str(foreign.path.parent)}, RUNS_DIR_REFUSED),
        ("placeto", None, {"runs_dir": "/"}, RUNS_DIR_REFUSED),
        ("expert", None, {"split": "/etc/passwd"}, PATH_REFUSED),
        ("expert", None, {"split": str(graph)}, PATH_REFUSED),
        ("placeto", None, {"grouping": "../../etc/passwd"}, PATH_REFUSED),
        ("local-search", None, {"evaluations": 10**12}, "APP_MAX_EVALUATIONS"),
        ("local-search", None, {"time_limit_s": 1e9}, "APP_MAX_SECONDS"),
        ("local-search", None, {"t0": float("nan")}, "finite"),
        ("critical-path", None, {"runs": 10**7}, "APP_MAX_RUNS"),
        ("placeto", None, {"episodes": 10**6}, "APP_MAX_EPISODES"),
        ("placeto", None, {"unit_depth": 10**9}, "MAX_COUNT"),
        ("local-search", 10**12, {}, "APP_MAX_EVALUATIONS"),
        ("placeto", 10**5, {}, "APP_MAX_EPISODES"),
    ]
    for placer, budget, params, message in refusals:
        with pytest.raises(SpecError, match=re.escape(message)):
            input_guard.placer_params(placer, 0, budget, params)
    with pytest.raises(SpecError, match="MAX_SEED"):
        input_guard.placer_params("random", 2**40, None, {})
    assert input_guard.placer_params("expert", 0, None, {"split": ""}) == {"split": None}


def test_background_jobs_and_training_sizes_are_bounded(empty_runs, monkeypatch):
    input_guard.check_training(500, 0, empty_runs)
    with pytest.raises(SpecError, match="MAX_COUNT"):
        input_guard.check_training(10**7, 0, empty_runs)
    with pytest.raises(SpecError, match="APP_MAX_WORKERS"):
        input_guard.check_training(5, 10**6, empty_runs)
    monkeypatch.setattr(input_guard, "APP_MAX_JOBS", 0)
    with pytest.raises(SpecError, match="APP_MAX_JOBS"):
        input_guard.check_jobs(empty_runs)


# -- every page's inputs -----------------------------------------------------------------------


def test_graphs_page_refuses_paths_and_oversized_specs(empty_runs, outside):
    app = page_app("graphs").run()
    app.radio(key="graphs_source").set_value("Generator spec").run()
    for probe in _probes(outside):
        app.text_input(key="graphs_spec").set_value(probe).run()
        app.button(key="graphs_use").click().run()
        assert errors(app) == [PATH_REFUSED], probe
        assert not app.metric  # nothing was loaded
    app.text_input(key="graphs_spec").set_value("gen:random?ops=10000000&degree=1000").run()
    app.button(key="graphs_use").click().run()
    assert errors(app) == ["gen:random: ops=10000000 is beyond the app's limit of 200,000"]
    app.text_input(key="graphs_spec").set_value(input_guard.keep_upload(random_dag(ops=7, seed=1))).run()
    app.button(key="graphs_use").click().run()  # a graph uploaded earlier, by its upload: name
    assert errors(app) == [] and {m.label: m.value for m in app.metric}["Ops"] == "7"


def test_train_page_refuses_paths_and_starts_nothing(empty_runs, outside):
    app = page_app("train").run()
    for probe in _probes(outside):
        app.text_input(key="train_graphs").set_value(probe).run()
        app.button(key="train_start").click().run()
        assert errors(app) == [f"Cannot start training: {PATH_REFUSED}"], probe
    assert list_jobs(empty_runs) == []


def test_train_page_refuses_oversized_graphs_and_budgets(empty_runs):
    app = page_app("train").run()
    app.text_input(key="train_graphs").set_value("gen:random?ops=60&seed=1, gen:nmt?layers=200").run()
    app.button(key="train_start").click().run()
    assert errors(app) == ["Cannot start training: gen:nmt: layers=200 is beyond the app's limit of 32"]
    app.text_input(key="train_graphs").set_value("gen:random?ops=60&seed=1").run()
    app.number_input(key="train_episodes").set_value(10**7).run()
    app.button(key="train_start").click().run()
    assert errors(app) == ["Cannot start training: episodes must be <= 1,000,000 (placelab's limit MAX_COUNT), "
                           "got 10,000,000"]
    app.number_input(key="train_episodes").set_value(5).run()
    app.number_input(key="train_workers").set_value(10**6).run()
    app.button(key="train_start").click().run()
    assert len(errors(app)) == 1 and "APP_MAX_WORKERS" in app.error[0].value
    assert list_jobs(empty_runs) == []


def test_train_page_refuses_an_oversized_resume(learning_runs):
    store, ids = learning_runs
    app = page_app("train").run()
    app.number_input(key=f"train_resume_eps_{ids['trained']}").set_value(10**7).run()
    app.button(key=f"train_resume_{ids['trained']}").click().run()
    assert errors(app) == ["Cannot resume: episodes must be <= 1,000,000 (placelab's limit MAX_COUNT), got 10,000,000"]
    assert list_jobs(store.root) == []


def test_train_page_refuses_a_symlink_out_of_the_upload_folder(empty_runs, outside):
    graph, _run = outside
    input_guard.uploads_dir().mkdir(parents=True)
    (input_guard.uploads_dir() / "evil.json").symlink_to(graph)
    app = page_app("train").run()
    app.text_input(key="train_graphs").set_value("upload:evil").run()
    app.button(key="train_start").click().run()
    assert errors(app) == [f"Cannot start training: {PATH_REFUSED}"]
    assert list_jobs(empty_runs) == []


def test_place_page_policy_is_a_run_of_the_app_store(learning_runs, outside):
    app = page_app("place", "gen:random?ops=30&seed=1").run()
    app.multiselect(key="place_placers").set_value(["placeto"]).run()
    keys = {w.key for kind in ("text_input", "number_input") for w in app.get(kind)}
    assert "place_param_placeto_policy" in keys
    assert not [k for k in keys if "runs_dir" in k]  # no run store to name: the app reads its own
    for probe in _probes(outside):
        app.text_input(key="place_param_placeto_policy").set_value(probe).run()
        app.button(key="place_run").click().run()
        assert errors(app) == [f"placeto: {POLICY_REFUSED}"], probe
        assert not app.dataframe  # nothing placed, nothing trained
    app.text_input(key="place_param_placeto_policy").set_value("s").run()
    app.button(key="place_run").click().run()
    assert errors(app) == ["placeto: no run of the app's run store has the id 's' (ids are on the Runs page)"]


def test_place_page_policy_of_the_app_store_places_zero_shot(learning_runs):
    _store, ids = learning_runs
    app = page_app("place", "gen:random?ops=60&seed=1").run()
    app.multiselect(key="place_placers").set_value(["placeto"]).run()
    app.text_input(key="place_param_placeto_policy").set_value(ids["trained"]).run()
    app.button(key="place_run").click().run()
    assert errors(app) == []
    assert list(app.dataframe[0].value["placer"]) == ["placeto"]


def test_expert_split_paths_are_refused(empty_runs, outside):
    app = page_app("place", "gen:random?ops=30&seed=1").run()
    app.multiselect(key="place_placers").set_value(["expert"]).run()
    for probe in [*SERVER_PATHS[:3], str(outside[0])]:
        app.text_input(key="place_param_expert_split").set_value(probe).run()
        app.button(key="place_run").click().run()
        assert errors(app) == [f"expert: split: {PATH_REFUSED}"], probe


def test_place_page_oversized_budgets_are_refused_before_any_placer_runs(empty_runs):
    app = page_app("place", "gen:random?ops=30&seed=1").run()
    app.multiselect(key="place_placers").set_value(["round-robin", "local-search"]).run()
    app.number_input(key="place_param_local-search_evaluations").set_value(10**12).run()
    app.button(key="place_run").click().run()
    assert errors(app) == ["local-search: evaluations must be <= 100,000 (the app's limit APP_MAX_EVALUATIONS), "
                           "got 1,000,000,000,000"]
    assert not app.dataframe  # round-robin did not run either
    app.number_input(key="place_param_local-search_evaluations").set_value(50).run()
    app.number_input(key="place_budget_local-search").set_value(10**12).run()
    app.button(key="place_run").click().run()
    assert errors(app) == ["local-search: budget must be <= 100,000 (the app's limit APP_MAX_EVALUATIONS), "
                           "got 1,000,000,000,000"]
    app.number_input(key="place_budget_local-search").set_value(0).run()
    app.button(key="place_run").click().run()
    assert errors(app) == []
    assert list(app.dataframe[0].value["placer"]) == ["round-robin", "local-search"]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="the executor needs 2 CPU cores")
def test_place_page_execution_beyond_the_step_limit_starts_nothing(empty_runs, tmp_path, monkeypatch):
    from engine.cluster import cluster_to_dict
    from engine.executor.calibration import local_cache_path, machine_cluster

    monkeypatch.setenv("PLACELAB_CACHE_DIR", str(tmp_path / "cache"))  # `local`: two uncalibrated CPU workers
    local_cache_path().parent.mkdir(parents=True)
    local_cache_path().write_text(json.dumps(cluster_to_dict(machine_cluster(2, name="local"))))
    app = page_app("place", "gen:random?ops=12&seed=3")
    app.session_state["ctx_cluster"] = "local"
    app.run()
    app.multiselect(key="place_placers").set_value(["round-robin"]).run()
    app.button(key="place_run").click().run()
    app.number_input(key="place_exec_step_0").set_value(1e9)
    app.button(key="place_exec_0").click().run()
    assert errors(app) == ["Execute: scale to a step of (ms) must be <= 10,000.0 (the app's limit APP_MAX_STEP_MS), "
                           "got 1,000,000,000.0"]
    assert list_jobs(empty_runs) == []


def test_sidebar_simulation_settings_beyond_the_limits_are_one_line(empty_runs):
    app = page_app("place", "gen:random?ops=30&seed=1", sidebar=True).run()
    assert app.number_input(key="ctx_sim_runs").disabled  # k80x2's placeto mode does not read it
    app.selectbox(key="ctx_sim_mode").set_value("work_conserving").run()
    assert errors(app) == []  # the preset's δ1/δ2 do not follow into work_conserving (was an uncaught error)
    app.number_input(key="ctx_sim_runs").set_value(10**12).run()
    assert errors(app) == ["simulation.runs must be <= 10,000 (placelab's limit MAX_SIM_RUNS), got "
                           "1,000,000,000,000; the preset's own settings apply."]
    assert app.title[0].value == "Place"


#: Text boxes that name no graph, file, run or store (names, tags, searches, figure titles, JSON config values).
HARMLESS_TEXT = ("_x_title", "_search", "_tl_find", "runs_name_", "runs_tags_", "train_name", "place_name_",
                 "train_cluster_shown", "train_placeto_", "train_rnn_", "train_doppler_")
GUARDED_TEXT = ("graphs_spec", "train_graphs", "place_param_")


@pytest.mark.parametrize("name", ["home", "graphs", "place", "train", "compare", "runs", "papers", "fidelity"])
def test_every_text_box_of_every_page_is_guarded_or_harmless(name, learning_runs):
    app = page_app(name, "gen:random?ops=30&seed=1").run()
    if name == "graphs":
        app.radio(key="graphs_source").set_value("Generator spec").run()
    if name == "place":
        from policies.registry import PLACERS

        app.multiselect(key="place_placers").set_value(list(PLACERS)).run()
    assert not app.exception
    for box in app.text_input:
        assert box.key.startswith(GUARDED_TEXT) or any(h in box.key for h in HARMLESS_TEXT), box.key


# -- training on the graph in hand -------------------------------------------------------------


def _upload_app(tmp_path) -> tuple[AppTest, object]:
    """The Train page whose current graph was uploaded (60 ops, parsed as the Graphs page parses an upload)."""
    from engine.graph.io import graph_to_dict
    from engine.specs import load_uploaded_graph

    data = json.dumps(graph_to_dict(random_dag(ops=60, seed=4, name="my-upload"))).encode()
    blob = tmp_path / "upload.bin"
    blob.write_bytes(data)
    preset = ("from dashboard.context import set_graph, current_graph\nfrom engine.specs import load_uploaded_graph\n"
              f"if current_graph() is None:\n    set_graph(load_uploaded_graph('my.json', open({str(blob)!r}, 'rb')"
              ".read()), 'upload: my.json')\n")
    app = AppTest.from_string(f"{preset}from dashboard.app_pages import train\ntrain.page()\n", default_timeout=TIMEOUT)
    return app, load_uploaded_graph("my.json", data)


def test_train_page_defaults_to_the_current_graph(empty_runs):
    app = page_app("train", "gen:random?ops=77&seed=2").run()
    assert app.text_input(key="train_graphs").value == "gen:random?ops=77&seed=2"
    assert app.selectbox(key="train_suggestion").options[0].startswith("gen:random?ops=77&seed=2 — the current graph")
    app = page_app("train").run()  # no current graph: the first suggestion, as before
    assert app.text_input(key="train_graphs").value == "gen:random?ops=200&seed=1"


@pytest.mark.slow
def test_training_on_an_uploaded_graph_end_to_end(empty_runs, kill_jobs_after, tmp_path):
    import time

    from policies.rl.core.request import TrainingRequest

    kill_jobs_after(empty_runs)
    app, graph = _upload_app(tmp_path)
    app.run()
    spec = app.text_input(key="train_graphs").value
    assert spec == f"upload:my-upload-{graph.content_hash[:12]}"
    assert (input_guard.uploads_dir() / f"{spec[7:]}.json").is_file()
    app.selectbox(key="train_placer").set_value("placeto").run()
    app.number_input(key="train_placeto_groups").set_value(8)
    app.number_input(key="train_placeto_batch").set_value(2)
    app.number_input(key="train_episodes").set_value(4)  # two batches of 2
    app.text_input(key="train_name").set_value("on my upload")
    app.run()
    assert "--graphs upload:my-upload-" in app.code[0].value  # the visitor never sees or types a server path
    app.button(key="train_start").click().run()
    assert errors(app) == []
    [job] = list_jobs(empty_runs)
    request = TrainingRequest.read(job.command[job.command.index("--request") + 1])  # what the process trains
    assert request.graphs == str(input_guard.uploads_dir() / f"{spec[7:]}.json")
    store = RunStore(empty_runs)
    deadline = time.monotonic() + TIMEOUT
    while not store.list(kind="train", status="done") and time.monotonic() < deadline:
        assert list_jobs(empty_runs)[0].returncode in (None, 0), list_jobs(empty_runs)[0].log_tail()
        time.sleep(0.5)
    [run] = store.list(kind="train", status="done")
    assert run.meta["name"] == "on my upload" and run.meta["progress"]["episodes"] == 4
    assert run.meta["graph"]["hash"] == graph.content_hash  # trained on the uploaded graph itself
    app.run()
    assert list(app.dataframe[0].value["graphs"]) == [spec]
    assert errors(app) == []

