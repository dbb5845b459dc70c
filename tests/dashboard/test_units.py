"""Issue 33, units and missing values: the Home table in ms with dashes and local times, training progress
past its episode budget told as it is."""

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.data.run_tables import local_time, runs_table, summary_table
from dashboard.data.training import episode_progress
from dashboard.figures.tables import MISSING


def test_local_time_is_readable_in_the_viewers_zone():
    assert local_time("2026-11-24T09:46:01.801790+00:00", "Europe/Berlin") == "2026-11-24 10:46"
    assert local_time("2026-11-24T09:46:01+00:00", "UTC") == "2026-11-24 09:46"
    assert local_time(None) is None and local_time("") is None and local_time("yesterday") is None
    assert local_time("2026-11-24T09:46:01+00:00", "Not/AZone") is None


def test_home_table_in_ms_with_missing_values_as_none(tmp_path):
    from engine.generators import random_dag
    from engine.presets import PRESETS
    from engine.store.runs import RunStore
    from placelab.runner import place_and_simulate

    store = RunStore(tmp_path)
    res = place_and_simulate(random_dag(ops=30, seed=2), PRESETS["k80x2"](), "round-robin", store=store)
    bare = store.create("reproduce", graph_name="placeto-table1", graph_hash="0", cluster="", placer=None,
                        parameters={}, seed=None)
    bare.finish("done", {})
    table = runs_table(tmp_path, "UTC").set_index("id")
    assert "makespan_s" not in table.columns
    assert table.loc[res.run_id, "makespan (ms)"] == pytest.approx(res.schedule.makespan * 1e3)
    assert table.loc[bare.id, ["cluster", "placer", "makespan (ms)"]].isna().all()  # "" and None alike: missing
    assert table.loc[bare.id, "created"] == local_time(bare.meta["created"], "UTC")


def test_runs_page_table_in_ms_and_local_times(tmp_path):
    """The Runs page showed makespans in seconds and raw ISO timestamps (2026-11-27T06:03:48.942448+00:00)."""
    from engine.generators import random_dag
    from engine.presets import PRESETS
    from engine.store.runs import RunStore
    from placelab.runner import place_and_simulate

    store = RunStore(tmp_path)
    res = place_and_simulate(random_dag(ops=30, seed=2), PRESETS["k80x2"](), "round-robin", store=store)
    (run,) = store.list()
    table = summary_table([run], ["yours"], "Europe/Berlin")
    assert list(table.columns[:3]) == ["source", "id", "name"] and "makespan_s" not in table.columns
    assert table.loc[0, "makespan (ms)"] == pytest.approx(res.schedule.makespan * 1e3)
    assert table.loc[0, "lower bound (ms)"] == pytest.approx(run.meta["metrics"]["lower_bound_s"] * 1e3)
    assert table.loc[0, "created"] == local_time(run.meta["created"], "Europe/Berlin")


def test_home_page_shows_dashes_not_none(tmp_path, monkeypatch):
    from engine.store.runs import RunStore

    run = RunStore(tmp_path).create("reproduce", graph_name="g", graph_hash="0", cluster="", placer=None,
                                    parameters={}, seed=None)
    run.finish("done", {})
    monkeypatch.setenv("PLACELAB_RUNS_DIR", str(tmp_path))
    app = AppTest.from_string("from dashboard.app_pages import home\nhome.page()\n", default_timeout=300).run()
    assert not app.exception
    import pyarrow as pa

    shown = pa.ipc.open_stream(app.dataframe[0].proto.arrow_data.styler.display_values).read_all().to_pandas()
    row = shown.iloc[0].astype(str).tolist()
    assert row.count(MISSING) >= 3 and "None" not in row and "nan" not in row  # cluster, placer, makespan
    # ... and the grid's placeholder: the browser draws an empty cell as that, not as the Styler's text (it was
    # "None" in the browser while the display values above held the dash)
    assert app.dataframe[0].proto.placeholder == MISSING
    row = app.dataframe[0].value.iloc[0]
    assert row["created"].count(":") == 1 and "T" not in row["created"]  # 2026-11-24 10:46, not ISO


def test_episodes_past_the_budget_are_told_as_they_are():
    """A finished run read "304 / 300 episodes": the budget is checked after each update, and an update trains
    a whole batch of episodes, so the last one can overshoot."""
    assert episode_progress({"episodes": 120, "episodes_total": 300}) == "120 / 300"
    assert episode_progress({"episodes": 300, "episodes_total": 300}, "episodes") == "300 / 300 episodes"
    assert episode_progress({"episodes": 304, "episodes_total": 300}, "episodes") == (
        "304 episodes (budget 300, overshot by the last batch)")
    assert episode_progress({"episodes": 7}) == "7" and episode_progress({}, "episodes") == "0 episodes"
