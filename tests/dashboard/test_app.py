"""The app's entry script renders its home page without a browser."""

import sys
from pathlib import Path
from types import ModuleType

from streamlit.testing.v1 import AppTest

APP = Path(__file__).resolve().parents[2] / "dashboard" / "app.py"


def test_home_with_no_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("PLACELAB_RUNS_DIR", str(tmp_path))
    app = AppTest.from_file(str(APP)).run()

    assert not app.exception
    assert [t.value for t in app.title] == ["placelab"]
    assert any(info.value.startswith("No runs yet") for info in app.info)


def test_home_with_missing_runs_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PLACELAB_RUNS_DIR", str(tmp_path / "absent"))
    app = AppTest.from_file(str(APP)).run()

    assert not app.exception
    assert any(info.value.startswith("No runs yet") for info in app.info)


class _StubRun:
    def __init__(self, run_id: str, meta: dict):
        self.id = run_id
        self.meta = meta
        self.status = meta["status"]


class _StubRunStore:
    """Stands in for ``engine.runs.RunStore``: the home page only needs ``list()``."""

    def __init__(self, root):
        self.root = Path(root)

    def list(self):
        meta = {
            "name": "heft on toy",
            "kind": "place",
            "status": "done",
            "placer": "heft",
            "cluster": "k80x2",
            "graph": {"name": "toy"},
            "metrics": {"makespan_s": 0.25},
        }
        return [_StubRun("20250101-000000-heft", meta)]


def test_home_lists_stored_runs(tmp_path, monkeypatch):
    stub = ModuleType("engine.runs")
    stub.RunStore = _StubRunStore
    monkeypatch.setitem(sys.modules, "engine.runs", stub)
    monkeypatch.setenv("PLACELAB_RUNS_DIR", str(tmp_path))
    app = AppTest.from_file(str(APP)).run()

    assert not app.exception
    assert not app.info
    table = app.dataframe[0].value
    assert table.to_dict("records") == [
        {
            "run": "20250101-000000-heft",
            "name": "heft on toy",
            "kind": "place",
            "status": "done",
            "placer": "heft",
            "cluster": "k80x2",
            "graph": "toy",
            "makespan (s)": 0.25,
        }
    ]
