"""The Train page headless (AppTest): stored training runs, input errors, and real background training
started, stopped and resumed from the page."""

import os
import signal
import sys
import time

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.background import launch, list_jobs
from engine.store.runs import RunStore

# Generous limits (issue 34): they only catch a hang, so a busy machine (a 2-core CI box at load 14) never fails a
# test on a clock. A training process needs ~10 s on an idle machine to import torch before its first episode.
TIMEOUT = 300
WAIT_S = 300
TINY_GRAPH = "gen:random?ops=60&seed=1"  # as in conftest: 60 ops, trains in well under a second


def train_app() -> AppTest:
    return AppTest.from_string("from dashboard.app_pages import train\ntrain.page()\n", default_timeout=TIMEOUT)


def wait_for(what, predicate, timeout=WAIT_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


def progress_texts(app: AppTest) -> list[str]:
    return [p.proto.text for p in app.get("progress")]


def fill_tiny_training(app: AppTest, episodes: int, name: str) -> None:
    app.selectbox(key="train_placer").set_value("placeto").run()
    app.text_input(key="train_graphs").set_value(TINY_GRAPH)
    app.number_input(key="train_placeto_groups").set_value(8)
    app.number_input(key="train_placeto_batch").set_value(2)
    app.number_input(key="train_episodes").set_value(episodes)
    app.text_input(key="train_name").set_value(name)
    app.run()


def test_train_page_without_runs(empty_runs):
    app = train_app().run()
    assert not app.exception and not app.error
    assert [t.value for t in app.title] == ["Train"]
    assert [i.value for i in app.info] == ["No training runs yet — start one above, or run `placelab train --placer "
                                           "placeto --graphs SPEC --cluster C --save`."]
    assert app.selectbox(key="train_placer").options == ["DOPPLER dual policy (Yao et al. 2025)",
                                                        "GDP (Zhou et al. 2019)",
                                                        "Placeto GNN policy (Addanki et al. 2019)",
                                                        "RNN seq2seq placer (Mirhoseini et al. 2017)"]
    app.selectbox(key="train_placer").set_value("rnn").run()
    assert not app.exception
    assert app.number_input(key="train_rnn_samples").value == 8  # RNNConfig's default K
    # the form is the registered config: one widget per field, keyed by it, with the config's defaults
    from policies.rl.registry import config_fields, make_config

    defaults = make_config("rnn", {}).to_dict()
    shown = {w.key: w.value for kind in ("number_input", "selectbox", "checkbox", "text_input")
             for w in app.get(kind) if (w.key or "").startswith("train_rnn_")}
    assert set(shown) == {f"train_rnn_{f.name}" for f in config_fields("rnn")}
    assert shown["train_rnn_baseline_decay"] == defaults["baseline_decay"]
    assert shown["train_rnn_grouping"] == defaults["grouping"] and shown["train_rnn_vocab"] == ""


def test_train_page_lists_runs_and_curves(learning_runs):
    _store, ids = learning_runs
    app = train_app().run()
    assert not app.exception
    table = app.dataframe[0].value
    assert list(table["id"]) == [ids["trained"], ids["broken"]]  # newest first, training runs only
    assert list(table["status"]) == ["done", "failed"]
    assert list(table["episodes"]) == ["4 / 4", "0"]
    # the newest run is shown: its progress, its curve, and Resume (it is done and has a checkpoint)
    assert app.multiselect(key="train_selected").value == [ids["trained"]]
    assert progress_texts(app)[0].startswith("done · 4 / 4 episodes · best ")
    assert len(app.get("plotly_chart")) == 1
    assert app.button(key=f"train_resume_{ids['trained']}").label == "Resume"
    assert app.number_input(key=f"train_resume_eps_{ids['trained']}").min == 5

    app.multiselect(key="train_selected").set_value([ids["trained"], ids["broken"]]).run()
    assert not app.exception
    assert [e.value for e in app.error] == ["Training failed: out of patience"]
    assert len(app.get("plotly_chart")) == 2  # the overlay and the trained run's curve; the broken one has none
    assert any(c.value == "No episode has finished yet." for c in app.caption)


def test_a_run_card_names_the_run_and_gives_its_id_once(learning_runs):
    """Issue 58: a run started without a name (named by its id) is headed by its placer and graphs; the id is
    written once, never in the curve's legend."""
    import json

    store, ids = learning_runs
    run_id = ids["trained"]
    store.rename(run_id, run_id)  # as a run started without a name is stored
    app = train_app().run()
    assert not app.exception and app.multiselect(key="train_selected").value == [run_id]
    texts = [m.value for m in app.markdown] + [c.value for c in app.caption]
    assert "**placeto on `gen:random?ops=60&seed=1` · k80x2**" in texts
    assert sum(t.count(run_id) for t in texts) == 1
    [curve] = [json.loads(c.proto.spec) for c in app.get("plotly_chart")]
    names = {t.get("name") or "" for t in curve["data"]}
    assert "placeto" in names and not [n for n in names if run_id in n]
    store.rename(run_id, "tiny placeto")
    app = train_app().run()
    assert "**tiny placeto** · placeto on `gen:random?ops=60&seed=1` · k80x2" in [m.value for m in app.markdown]
    assert "tiny placeto" in {t.get("name") for t in json.loads(app.get("plotly_chart")[0].proto.spec)["data"]}


def test_a_run_card_draws_its_placers_colour_and_downloads_its_curve_without_a_server_path(learning_runs,
                                                                                            monkeypatch):
    """Issue 58 follow-up: the card's curve and the overlay draw placeto's colour (#A59600, dashboard/figures/colors.py)
    though the run is named "tiny placeto", and the overlay a second run in rnn's (#007869); the CSV download names
    an uploaded graph by its name, never by the server path the stored curve holds."""
    import json

    import streamlit

    from engine.store.tables import read_csv
    from policies.rl.core.run_files import CURVE

    store, ids = learning_runs
    run = store.load(ids["trained"])
    upload = "/srv/placelab/runs/.uploads/gdp_ffnn_192nodes-96744939d6a5.json"
    table = read_csv(run.path / CURVE)
    run.write_table(CURVE, {**table, "graph": [upload] * len(table["episode"])})
    downloads = {}
    monkeypatch.setattr(streamlit, "download_button",
                        lambda label, data, **kw: downloads.__setitem__(label, data) or False)
    app = train_app().run()
    assert not app.exception and not app.error
    [card] = [json.loads(c.proto.spec) for c in app.get("plotly_chart")]
    assert {t["line"]["color"] for t in card["data"]} == {"#A59600"}
    text = downloads["Learning curve (CSV)"]().decode()
    assert "/srv" not in text and ".uploads" not in text
    header, *rows = text.splitlines()
    graph = header.split(",").index("graph")
    assert [r.split(",")[graph] for r in rows] == ["gdp_ffnn_192nodes"] * 4
    other = store.create("train", graph_name="random-60-s1", graph_hash="0", cluster="k80x2", placer="rnn",
                         parameters={"graphs": TINY_GRAPH}, seed=0, name="second rnn")
    other.write_table(CURVE, {**table, "entropy": [1.0] * len(table["episode"])})
    other.finish("done", {"episodes": 4})
    app = train_app().run()
    app.multiselect(key="train_selected").set_value([ids["trained"], other.id]).run()
    assert not app.exception
    overlay = json.loads(app.get("plotly_chart")[0].proto.spec)
    colors = {t["name"].split(" ")[0]: t["line"]["color"] for t in overlay["data"] if t["name"].endswith("entropy")}
    assert colors == {"tiny": "#A59600", "second": "#007869"}  # rnn's; a hash gave "tiny placeto" #007869


def _old_uniform_run(store: RunStore) -> str:
    """A training run as stored before learning-health verdicts: a 30-episode curve whose entropy stays at ln 2,
    no verdict in its metrics, and a policy.json whose graph file is gone (so its graphs cannot be rebuilt)."""
    import math

    from engine.cluster import cluster_to_dict
    from engine.presets import PRESETS
    from policies.rl.core.run_files import CURVE, POLICY
    from policies.rl.registry import make_config

    run = store.create("train", graph_name="random-60-s1", graph_hash="0", cluster="k80x2", placer="placeto",
                       parameters={"graphs": TINY_GRAPH}, seed=0, name="old uniform")
    n = 30
    run.write_table(CURVE, {"episode": list(range(1, n + 1)), "graph": [TINY_GRAPH] * n,
                            "sampled_runtime": [1e-3 * (1 + (i % 3) / 10) for i in range(n)],
                            "best_runtime": [1e-3] * n, "entropy": [math.log(2)] * n,
                            "placements_evaluated": list(range(1, n + 1))})
    run.write_json(POLICY, {"placer": "placeto", "config": make_config("placeto", {}).to_dict(), "num_devices": 2,
                            "cluster": cluster_to_dict(PRESETS["k80x2"]()), "graphs": [str(store.root / "gone.json")],
                            "seed": 0})
    run.finish("done", {"episodes": n, "stop_reason": "episodes"})
    return run.id


def test_train_page_shows_the_learning_health_of_stored_runs(learning_runs):
    store, ids = learning_runs
    old = _old_uniform_run(store)
    app = train_app().run()
    app.multiselect(key="train_selected").set_value([ids["trained"], old]).run()
    assert not app.exception and not app.error
    # the finished 4-episode run stored its verdict
    assert [i.value for i in app.info if "Learning health" in i.value] == [
        "**Learning health: too short to judge.** 4 episodes (at least 10 needed)."]
    stored = store.load(ids["trained"]).meta["metrics"]["learning_health"]
    assert stored["verdict"] == "too_short" and stored["random_search"][0]["placements"] > 0
    assert any(c.value.startswith(stored["summary"]) for c in app.caption)
    # the old run: computed from its curve, in one line, and the random comparison said to be missing
    assert [w.value for w in app.warning] == ["**Learning health:** The policy never left uniform: its sampled "
                                              "placements are a random search."]
    caption = next(c.value for c in app.caption if "first vs last 6 episodes" in c.value)
    assert "entropy 100% → 100% of uniform" in caption and "Computed now from the stored learning curve" in caption
    assert "Uniform entropy: ln(devices)" in caption and "random search: the training's graphs could not be rebuilt" \
        in caption
    tables = [d.value for d in app.dataframe if "last window" in d.value.columns]
    assert len(tables) == 2  # one per finished run: entropy (nats, share of uniform) and sampled runtime
    assert list(tables[1]["last window"]) == pytest.approx([0.6931471805599453, 1.0, 1.1])


@pytest.mark.parametrize(("spec", "message"), [
    ("gen:nope", "Cannot start training: unknown generator 'nope'"),
    ("family:cifar10:val", "Cannot start training: 'family:cifar10:val': a family split is 'train' or 'test'"),
    (" , ", "Cannot start training: graph spec ',' names no graph"),
])
def test_bad_graph_spec_is_one_sentence_and_starts_nothing(empty_runs, spec, message):
    app = train_app().run()
    app.text_input(key="train_graphs").set_value(spec).run()
    app.button(key="train_start").click().run()
    assert not app.exception
    assert len(app.error) == 1 and app.error[0].value.startswith(message)
    assert list_jobs(empty_runs) == []


def test_suggestion_fills_the_graph_spec(empty_runs):
    app = train_app().run()
    app.selectbox(key="train_suggestion").set_value("family:cifar10:train").run()
    assert app.text_input(key="train_graphs").value == "family:cifar10:train"
    assert "--graphs family:cifar10:train" in app.code[0].value


@pytest.mark.slow
def test_start_button_trains_in_a_background_process(empty_runs, kill_jobs_after):
    kill_jobs_after(empty_runs)
    store = RunStore(empty_runs)
    app = train_app().run()
    fill_tiny_training(app, episodes=6, name="from the page")
    app.button(key="train_start").click().run()
    assert not app.exception and not app.error
    [job] = list_jobs(empty_runs)
    assert job.pid != os.getpid()
    assert app.success[0].value.startswith(f"Started training from the page (process {job.pid})")

    run = wait_for("a finished training run", lambda: next(iter(store.list(kind="train", status="done")), None))
    assert run.meta["name"] == "from the page" and run.meta["pid"] == job.pid
    assert run.meta["parameters"]["groups"] == 8 and run.meta["parameters"]["batch"] == 2
    assert run.read_table("learning_curve.csv")["episode"] == [1, 2, 3, 4, 5, 6]
    wait_for("the job's exit code", lambda: list_jobs(empty_runs)[0].returncode == 0)

    app.run()
    assert not app.exception and not app.error
    assert list(app.dataframe[0].value["status"]) == ["done"]
    assert app.multiselect(key="train_selected").value == [run.id]  # a new run joins the shown ones
    assert progress_texts(app)[0].startswith("done · 6 / 6 episodes")
    assert len(app.get("plotly_chart")) == 1


@pytest.mark.slow
def test_stop_then_resume_a_running_training(empty_runs, kill_jobs_after):
    kill_jobs_after(empty_runs)
    store = RunStore(empty_runs)
    app = train_app().run()
    fill_tiny_training(app, episodes=100_000, name="long")
    app.button(key="train_start").click().run()

    def running_with_curve():
        runs = store.list(kind="train", status="running")
        return runs and "learning_curve.csv" in runs[0].files() and runs[0]

    run = wait_for("a running training with a learning curve", running_with_curve)
    app.run()
    assert progress_texts(app)[0].startswith("running · ")
    app.button(key=f"train_stop_{run.id}").click().run()
    assert not app.exception
    run = wait_for("the run to end as interrupted",
                   lambda: (r := store.load(run.id)).status == "interrupted" and r)
    done = run.meta["progress"]["episodes"]
    assert 0 < done < 100_000 and run.meta["metrics"]["stop_reason"] == "stopped"

    app.run()
    assert app.multiselect(key="train_selected").value == [run.id]
    app.number_input(key=f"train_resume_eps_{run.id}").set_value(done + 4).run()
    app.button(key=f"train_resume_{run.id}").click().run()
    assert not app.exception and not app.error
    run = wait_for("the resumed run to finish", lambda: (r := store.load(run.id)).status == "done" and r)
    assert run.meta["progress"]["episodes"] == done + 4
    curve = run.read_table("learning_curve.csv")["episode"]
    assert curve == list(range(1, done + 5))  # the resumed episodes continue the same curve


def test_a_job_that_dies_before_its_run_is_reported_with_its_log(empty_runs):
    launch(empty_runs, [sys.executable, "-c", "print('loading'); print('error: no such graph'); raise SystemExit(2)"],
           label="doomed")
    wait_for("the job's exit code", lambda: list_jobs(empty_runs)[0].returncode is not None)
    app = train_app().run()
    assert not app.exception
    assert [e.value for e in app.error] == ["Training doomed ended before creating its run (exit code 2): "
                                            "error: no such graph"]
    assert app.code[-1].value == "loading\nerror: no such graph"
    [job] = list_jobs(empty_runs)
    app.button(key=f"train_dismiss_{job.id}").click().run()
    assert not app.error and list_jobs(empty_runs) == []


def test_cancel_a_starting_job(empty_runs, kill_jobs_after):
    kill_jobs_after(empty_runs)
    # sleeps far longer than any wait here: it must still be starting when Cancel is clicked (kill_jobs_after ends it)
    launch(empty_runs, [sys.executable, "-c", "import time; time.sleep(3600)"], label="sleepy")
    app = train_app().run()
    [job] = list_jobs(empty_runs)
    assert [i.value for i in app.info] == [f"Starting sleepy (process {job.pid}): loading the graphs and the learned "
                                           "placer ..."]
    app.button(key=f"train_cancel_{job.id}").click().run()
    job = wait_for("the job to end", lambda: (j := list_jobs(empty_runs)[0]).returncode is not None and j)
    assert job.returncode == -signal.SIGINT and not job.failed
    app.run()
    assert not app.error and not any(i.value.startswith("Starting") for i in app.info)


def test_status_phrases_and_shell_quoted_command(tmp_path):
    from dashboard.background import train_command
    from dashboard.data.training import command_text, stop_phrase

    assert stop_phrase("stopped") == "stopped on request"  # not "stopped by stopped"
    assert stop_phrase("episodes") == "ended: episode budget reached"
    cmd = train_command("placeto", "gen:random?ops=60&seed=1", "k80x2", episodes=5, params={"lr": 0.01}, seed=0,
                        name="my run", runs_dir=tmp_path)
    text = command_text(cmd)
    assert text.startswith("placelab train --placer placeto --graphs 'gen:random?ops=60&seed=1' ")
    assert "--name 'my run'" in text
    import shlex

    assert shlex.split(text)[1:] == cmd[3:]  # pasting it into a shell gives the same arguments
