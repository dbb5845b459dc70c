"""The app's run listings survive a corrupt run (issue 34, item 5): the other runs are shown, the bad one named."""

import json

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.data.runs import list_runs

TIMEOUT = 300  # only catches a hang


def page_app(name: str) -> AppTest:
    return AppTest.from_string(f"from dashboard.app_pages import {name}\n{name}.page()\n", default_timeout=TIMEOUT)


@pytest.fixture
def corrupt_runs(stored_runs):
    """``stored_runs`` plus two runs whose run.json holds a word and a NaN where a makespan belongs."""
    store, ids, eval_id = stored_runs
    bad = []
    for value in ('"fast"', "NaN"):
        meta = json.loads((store.root / ids[0] / "run.json").read_text())
        run_id = f"20990101-000000-place-bad-{len(bad)}"
        meta.update(id=run_id, name=run_id)
        meta["metrics"]["makespan_s"] = "@@"
        (store.root / run_id).mkdir()
        (store.root / run_id / "run.json").write_text(json.dumps(meta).replace('"@@"', value))
        bad.append(run_id)
    return store, [*ids, eval_id], bad


def test_list_runs_names_each_unreadable_run(corrupt_runs):
    _store, good, bad = corrupt_runs
    problems: list[str] = []
    assert sorted(r.id for r in list_runs(problems=problems)) == sorted(good)
    assert len(problems) == 2 and all(any(b in p for p in problems) for b in bad)


@pytest.mark.parametrize("name", ["runs", "home", "compare", "train"])
def test_pages_that_list_runs_survive_a_corrupt_run(corrupt_runs, name):
    _store, good, bad = corrupt_runs
    app = page_app(name).run()
    assert not app.exception, app.exception  # before: TypeError / ValueError from the bad makespans
    if name == "runs":
        assert len(app.dataframe[0].value) == len(good)
        (warning,) = [w.value for w in app.warning]
        assert warning.startswith("Skipped unreadable runs: ") and all(b in warning for b in bad)
