"""The app's entry script renders its home page without a browser."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = Path(__file__).resolve().parents[2] / "dashboard" / "app.py"
# Streamlit's default is 3 s, which a busy machine exceeded (issue 34): the limit only catches a hang
TIMEOUT = 300


def test_home_with_no_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("PLACELAB_RUNS_DIR", str(tmp_path))
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()

    assert not app.exception
    assert [t.value for t in app.title] == ["placelab"]
    assert any(info.value.startswith("No runs yet") for info in app.info)


def test_home_with_missing_runs_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PLACELAB_RUNS_DIR", str(tmp_path / "absent"))
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()

    assert not app.exception
    assert any(info.value.startswith("No runs yet") for info in app.info)


def test_home_lists_stored_runs(tmp_path, monkeypatch):
    from engine.generators import random_dag
    from engine.presets import PRESETS
    from engine.store.runs import RunStore
    from placelab.runner import place_and_simulate

    graph, cluster = random_dag(ops=30, seed=2), PRESETS["k80x2"]()
    res = place_and_simulate(graph, cluster, "round-robin", store=RunStore(tmp_path))
    monkeypatch.setenv("PLACELAB_RUNS_DIR", str(tmp_path))
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()

    assert not app.exception
    assert not app.info
    rows = app.dataframe[0].value.to_dict("records")
    assert len(rows) == 1
    row = rows[0]
    assert (row["id"], row["kind"], row["status"], row["placer"], row["cluster"], row["graph"]) == (
        res.run_id, "place", "done", "round-robin", "k80x2", "random-30-s2")
    assert row["makespan (ms)"] == res.schedule.makespan * 1e3  # ms, as on every other page
