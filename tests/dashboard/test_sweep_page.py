"""The Compare page shows a stored sweep as a table: a row per graph, cluster and seed, a column per placer."""

from streamlit.testing.v1 import AppTest

from engine.store.runs import RunStore
from placelab.sweep import SweepSpec, run_sweep


def test_compare_page_reads_a_sweep(tmp_path, monkeypatch):
    store = RunStore(tmp_path / "runs")
    out = run_sweep(store, SweepSpec.from_specs("gen:random?ops=30&seed=3", "k80x2", "single-device,round-robin",
                                                seeds=2))
    monkeypatch.setenv("PLACELAB_RUNS_DIR", str(store.root))
    app = AppTest.from_string("from dashboard.app_pages import compare\ncompare.page()\n", default_timeout=300).run()
    assert not app.exception
    assert app.selectbox(key="compare_sweep").value == out["run_id"]
    (table,) = [d.value for d in app.dataframe if "seed" in d.value.columns]
    assert list(table["seed"]) == [0, 1]
    expected = {r["placer"]: r["makespan_s"] for r in out["results"] if r["seed"] == 0}
    assert table.iloc[0]["single-device"] == expected["single-device"]
    assert table.iloc[0]["round-robin"] == expected["round-robin"]
