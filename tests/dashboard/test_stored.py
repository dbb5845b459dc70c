"""Reading eval and experiment results and learning curves from stored runs (no Streamlit session)."""

import pytest

from dashboard.data.learning import learning_curve, seed_groups
from dashboard.data.runs import setting_of
from dashboard.data.series import cdf_series, eval_series, experiment_series
from engine.store.runs import RunStore


def _run(store, kind, name, seed=0, parameters=None):
    return store.create(kind, graph_name="g", graph_hash="0", cluster="k80x2", placer="placeto",
                        parameters=parameters or {}, seed=seed, name=name)


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


def test_seed_groups_put_seeds_together_and_follow_appended_rows(tmp_path):
    store = RunStore(tmp_path)
    spec = {"graphs": "gen:chainmm", "lr": 0.01}
    a, b = _run(store, "train", "s0", 0, spec), _run(store, "train", "s1", 1, spec)
    other = _run(store, "train", "other lr", 0, {"graphs": "gen:chainmm", "lr": 0.1})
    empty = _run(store, "train", "empty", 0, spec)
    for run in (a, b, other):
        run.append_rows("learning_curve.csv", [{"episode": 1, "best_runtime": 2.0}])
    assert learning_curve(empty) is None
    groups = seed_groups([a, b, other, empty])
    # a and b differ only in their seed: one group of two curves; "other" has another learning rate
    assert groups == {"placeto on gen:chainmm · k80x2 (2 seeds)": [{"episode": [1], "best_runtime": [2.0]}] * 2,
                      "other lr": [{"episode": [1], "best_runtime": [2.0]}]}
    a.append_rows("learning_curve.csv", [{"episode": 2, "best_runtime": 1.5}])
    assert learning_curve(a)["best_runtime"] == pytest.approx([2.0, 1.5])  # not a stale cached read


def test_setting_of_names_graph_and_cluster(tmp_path):
    store = RunStore(tmp_path)
    place = store.create("place", graph_name="chainmm", graph_hash="abcdef0123", cluster="p100x4",
                         placer="metis", parameters={}, seed=0)
    train = _run(store, "train", "t", 0, {"graphs": "family:nmt:train"})
    assert setting_of(place) == ("chainmm [abcdef01]", "p100x4")
    assert setting_of(train) == ("family:nmt:train", "k80x2")


# -- issue 58: names, never server paths, in titles, legends and CSVs ---------------------------------------

UPLOAD = "/srv/placelab/runs/.uploads/gdp_ffnn_192nodes-96744939d6a5.json"


def test_graph_label_names_files_never_by_their_path():
    from dashboard.data.format import graph_label

    assert graph_label(UPLOAD) == "gdp_ffnn_192nodes"  # an upload: the graph it holds, as Place runs name it
    assert graph_label("/home/me/graphs/nmt.pbtxt") == "nmt.pbtxt"  # any other file: its file name
    assert graph_label("graphs/nmt.json") == "nmt.json"
    assert graph_label(f"{UPLOAD},gen:chainmm,family:nmt:train") == "gdp_ffnn_192nodes,gen:chainmm,family:nmt:train"
    for name in ("chainmm", "gen:random?ops=200&seed=1", "upload:gdp-96744939d6a5", "encoder/layer1"):
        assert graph_label(name) == name
    # a file named like an upload outside the upload folder keeps its whole name
    assert graph_label("/tmp/gdp_ffnn_192nodes-96744939d6a5.json") == "gdp_ffnn_192nodes-96744939d6a5.json"


def test_a_training_on_an_upload_is_named_by_its_graph_in_titles_labels_and_tables(tmp_path):
    """The Compare chart was titled 'Makespan on /…/runs/.uploads/gdp_ffnn_192nodes-96744939d6a5.json · p100x4'."""
    from dashboard.data.runs import comparison_row, run_label

    store = RunStore(tmp_path)
    train = store.create("train", graph_name=UPLOAD, graph_hash="96744939d6a5", cluster="p100x4", placer="gdp",
                         parameters={"graphs": UPLOAD}, seed=0, name="mine")
    assert setting_of(train) == ("gdp_ffnn_192nodes", "p100x4")
    assert run_label(train) == "mine · gdp · gdp_ffnn_192nodes · p100x4"
    assert comparison_row(train)["graph"] == "gdp_ffnn_192nodes"
    from dashboard.data.run_tables import summary_table

    assert list(summary_table([train], ["yours"], "UTC")["graph"]) == ["gdp_ffnn_192nodes"]  # Runs page, its CSV
    several = _run(store, "train", "t", 0, {"graphs": f"{UPLOAD},gen:chainmm"})
    assert setting_of(several) == ("gdp_ffnn_192nodes,gen:chainmm", "k80x2")


def test_learning_curve_and_its_csv_name_graphs_not_paths(tmp_path):
    from dashboard.data.learning import learning_curve_csv

    store = RunStore(tmp_path)
    run = _run(store, "train", "t", 0, {"graphs": f"{UPLOAD},gen:chainmm"})
    run.append_rows("learning_curve.csv", [{"episode": 1, "graph": UPLOAD, "sampled_runtime": 0.25},
                                           {"episode": 2, "graph": "gen:chainmm", "sampled_runtime": 0.125}])
    assert learning_curve(run)["graph"] == ["gdp_ffnn_192nodes", "gen:chainmm"]
    assert learning_curve(run)["sampled_runtime"] == [0.25, 0.125]
    csv = learning_curve_csv(run).decode()
    assert csv == ("episode,graph,sampled_runtime\r\n1,gdp_ffnn_192nodes,0.25\r\n2,gen:chainmm,0.125\r\n")
    assert "/srv" not in csv and learning_curve_csv(_run(store, "train", "empty")) is None


def test_seed_groups_and_cdf_series_say_each_lines_placer(tmp_path):
    store = RunStore(tmp_path)
    spec = {"graphs": "gen:chainmm"}
    a, b = _run(store, "train", "s0", 0, spec), _run(store, "train", "s1", 1, spec)
    for run in (a, b):
        run.append_rows("learning_curve.csv", [{"episode": 1, "best_runtime": 2.0}])
    placers: dict = {}
    groups = seed_groups([a, b], placers)
    assert placers == {name: "placeto" for name in groups} and len(groups) == 1
    ev = _run(store, "eval", "ev")
    ev.finish("done", {"results": [{"makespan_s": 3.0, "lower_bound_s": 2.0}]})
    placers = {}
    series = cdf_series([ev], [], placers)
    assert placers == {name: "placeto" for name in series}
