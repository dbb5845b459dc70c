"""Reading eval and experiment results and learning curves from stored runs (no Streamlit session)."""

import pytest

from dashboard.app_pages.stored import cdf_series, curves_by_name, eval_series, experiment_series, learning_curve
from engine.runs import RunStore


def _run(store, kind, name):
    return store.create(kind, graph_name="g", graph_hash="0", cluster="k80x2", placer="placeto", parameters={},
                        seed=0, name=name)


def test_experiment_series_by_method_in_placeto_order(tmp_path):
    store = RunStore(tmp_path)
    run = _run(store, "experiment", "exp")
    run.write_table("results.csv", {
        "graph": ["g0", "g0", "g0", "g1", "g1", "g1", "g1"],
        "method": ["random", "optimized", "zero-shot", "random", "optimized", "zero-shot", "heft"],
        "makespan_s": [4.0, 2.5, 3.0, 9.0, 4.5, None, 6.0],
        "lower_bound_s": [2.0, 2.0, 2.0, 3.0, 3.0, 3.0, 3.0],
        "oom": [False] * 7,
    })
    # g1's zero-shot makespan is missing: left out, not counted as 0
    assert experiment_series(run) == {"Zero-Shot": [1.5], "Optimized": [1.25, 1.5], "Random": [2.0, 3.0],
                                      "heft": [2.0]}
    assert eval_series(run) == [2.0, 1.25, 1.5, 3.0, 1.5, 2.0]  # the same rows, any method


def test_eval_series_from_metrics_or_table(tmp_path):
    store = RunStore(tmp_path)
    from_metrics = _run(store, "eval", "m")
    from_metrics.finish("done", {"results": [{"makespan_s": 3.0, "lower_bound_s": 2.0},
                                             {"makespan_s": 0.5, "lower_bound_s": 0.0}]})  # no bound: the makespan
    assert eval_series(from_metrics) == [1.5, 0.5]
    from_table = _run(store, "eval", "t")
    from_table.write_table("results.csv", {"graph": ["a"], "makespan_s": [6.0], "lower_bound_s": [4.0]})
    assert eval_series(from_table) == [1.5]
    assert eval_series(_run(store, "eval", "none")) == []


def test_cdf_series_names(tmp_path):
    store = RunStore(tmp_path)
    exps = []
    for name in ("nmt", "ptb"):
        run = _run(store, "experiment", name)
        run.write_table("results.csv", {"graph": ["g"], "method": ["zero-shot"], "makespan_s": [2.0],
                                        "lower_bound_s": [1.0]})
        exps.append(run)
    assert cdf_series([], exps[:1]) == {"Zero-Shot": [2.0]}
    assert cdf_series([], exps) == {"Zero-Shot · nmt": [2.0], "Zero-Shot · ptb": [2.0]}


def test_learning_curves_by_name_follow_appended_rows(tmp_path):
    store = RunStore(tmp_path)
    a, b, c = _run(store, "train", "same"), _run(store, "train", "same"), _run(store, "train", "empty")
    for run in (a, b):
        run.append_rows("learning_curve.csv", [{"episode": 1, "best_runtime": 2.0}])
    assert learning_curve(c) is None
    curves = curves_by_name([a, b, c])
    assert curves == {f"same ({a.id})": {"episode": [1], "best_runtime": [2.0]},
                      f"same ({b.id})": {"episode": [1], "best_runtime": [2.0]}}
    a.append_rows("learning_curve.csv", [{"episode": 2, "best_runtime": 1.5}])
    assert learning_curve(a)["best_runtime"] == pytest.approx([2.0, 1.5])  # not a stale cached read
