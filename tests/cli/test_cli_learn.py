"""``placelab train`` / ``eval`` / ``place --placer placeto --param policy=RUN`` (CONTRACTS §5) and
their one-line errors, on a six-op graph (two chains, see tests/policies/rl_graphs.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import run_cli

GB = 1e9


@pytest.fixture
def files(tmp_path):
    ops = [{"name": f"{c}{i}", "compute": 1.0, "output_bytes": 0.1 * GB} for c in "ab" for i in range(3)]
    edges = [{"src": s, "dst": d} for s, d in (("a0", "a1"), ("a1", "a2"), ("b0", "b1"), ("b1", "b2"))]
    g = tmp_path / "chains.json"
    g.write_text(json.dumps({"schema": "placelab.graph/1", "name": "chains", "ops": ops, "edges": edges}))
    c2, c3 = tmp_path / "c2.json", tmp_path / "c3.json"
    for path, n in ((c2, 2), (c3, 3)):
        path.write_text(json.dumps({"schema": "placelab.cluster/1", "name": f"two{n}",
                                    "devices": [{"name": f"gpu:{i}", "kind": "gpu", "memory_bytes": 100 * GB}
                                                for i in range(n)],
                                    "link": {"bandwidth_bytes_per_s": GB}, "simulation": {"mode": "default"}}))
    return {"graph": str(g), "c2": str(c2), "c3": str(c3), "runs": str(tmp_path / "runs")}


def _train(capsys, f, *extra):
    return run_cli(capsys, "train", "--placer", "placeto", "--graphs", f["graph"], "--cluster", f["c2"],
                   "--episodes", "8", "--param", "batch=4", "--runs-dir", f["runs"], "--json", *extra)


def test_train_eval_place_and_resume(capsys, files):
    code, out, err = _train(capsys, files, "--save")
    assert code == 0, err
    res = json.loads(out)
    assert set(res) >= {"run_id", "episodes", "placements_evaluated", "best_makespan_s", "wall_s"}
    assert res["episodes"] == 8 and res["best_makespan_s"] >= 3.0 - 1e-9
    assert "episodes" in err  # the progress bar goes to stderr
    rid = res["run_id"]

    code, out, err = run_cli(capsys, "eval", rid, "--graphs", files["graph"], "--runs-dir", files["runs"], "--json",
                             "--save")
    assert code == 0, err
    ev = json.loads(out)
    (row,) = ev["results"]
    assert row["graph"] == files["graph"] and set(row) >= {"makespan_s", "lower_bound_s", "oom"}
    assert row["lower_bound_s"] == pytest.approx(3.0)

    code, out, err = run_cli(capsys, "place", files["graph"], "--cluster", files["c2"], "--placer", "placeto",
                             "--param", f"policy={rid}", "--param", f"runs_dir={files['runs']}", "--json")
    assert code == 0, err
    placed = json.loads(out)
    assert placed["makespan_s"] == pytest.approx(row["makespan_s"])  # the same greedy zero-shot placement

    code, out, err = run_cli(capsys, "train", "--resume", rid, "--episodes", "12", "--runs-dir", files["runs"],
                             "--json")
    assert code == 0, err
    assert json.loads(out)["episodes"] == 12 and json.loads(out)["run_id"] == rid


def test_train_without_save_stores_nothing(capsys, files):
    code, out, err = _train(capsys, files)
    assert code == 0, err
    assert json.loads(out)["run_id"] is None


def test_train_reports_its_learning_health(capsys, files):
    """``train --json`` holds the learning-health verdict; the stored run keeps it; the text output says it in one
    line (policies/rl/core/health.py)."""
    from policies.rl.core.health import VERDICTS

    code, out, err = run_cli(capsys, "train", "--placer", "placeto", "--graphs", files["graph"], "--cluster",
                             files["c2"], "--episodes", "20", "--param", "batch=4", "--runs-dir", files["runs"],
                             "--json", "--save")
    assert code == 0, err
    res = json.loads(out)
    health = res["learning_health"]
    assert health["verdict"] in VERDICTS and health["label"] == VERDICTS[health["verdict"]]
    assert health["episodes"] == 20 and health["window"] == 4
    (cmp,) = health["random_search"]  # as many random placements as the training evaluated
    assert cmp["placements"] == cmp["placements_trained"] == res["placements_evaluated"]
    assert cmp["found_makespan_s"] == pytest.approx(res["best_makespan_s"])
    assert health["entropy_first"] > 0 and health["runtime_first_s"] > 0
    run = json.loads((Path(files["runs"]) / res["run_id"] / "run.json").read_text())
    assert run["metrics"]["learning_health"] == health

    code, out, err = run_cli(capsys, "train", "--placer", "placeto", "--graphs", files["graph"], "--cluster",
                             files["c2"], "--episodes", "12", "--param", "batch=4", "--health-max-random", "5")
    assert code == 0, err
    lines = out.splitlines()
    line = next(x for x in lines if x.startswith("learning health: "))
    assert "of uniform" in line and "sampled runtime" in line and "for 5 random placements" in line
    uniform = "the policy never left uniform: its sampled placements are a random search"
    assert (uniform in lines) == line.startswith("learning health: never left uniform;")


def test_params_take_true_and_false_as_bools():
    """``--param`` turns true/false (any case) into bools, numbers into numbers, anything else stays text."""
    from placelab.cli_common import parse_params
    from policies.rl.registry import make_config

    assert parse_params(["a=true", "b=FALSE", "c=False", "d=1", "e=0.5", "f=full", "g=yes"]) == {
        "a": True, "b": False, "c": False, "d": 1, "e": 0.5, "f": "full", "g": "yes"}
    assert make_config("placeto", parse_params(["normalize_advantages=false"])).normalize_advantages is False


@pytest.mark.parametrize("args, message", [
    (["train", "--placer", "metis", "--graphs", "G", "--cluster", "C2", "--episodes", "4"], "not a learned placer"),
    (["train", "--placer", "placeto", "--cluster", "C2"], "needs --graphs"),
    (["train", "--placer", "placeto", "--graphs", "G", "--cluster", "C2", "--episodes", "0"], "must be positive"),
    (["train", "--placer", "placeto", "--graphs", "G", "--cluster", "C2", "--param", "rounds=-1"], "in [0, 64]"),
    (["train", "--placer", "placeto", "--graphs", "G", "--cluster", "C2", "--param", "batch=abc"], "must be int"),
    (["train", "--placer", "placeto", "--graphs", "G", "--cluster", "C2", "--param", "lr=-1"], "must be > 0"),
    (["train", "--placer", "placeto", "--graphs", "G", "--cluster", "C2", "--param", "normalize_advantages=maybe"],
     "must be bool, got 'maybe'"),
    (["train", "--placer", "rnn", "--graphs", "G", "--cluster", "C2", "--param", "samples=0"], "must be in [1, 1024]"),
    (["train", "--placer", "rnn", "--graphs", "G", "--cluster", "C2", "--param", "grouping=layers"],
     "must be one of merge, units, ops, got 'layers'"),
    (["train", "--placer", "placeto", "--graphs", "G", "--cluster", "C2", "--param", "unit_depth=0"], "must be >= 1"),
    (["train", "--placer", "placeto", "--graphs", "family:imagenet", "--cluster", "C2"], "unknown graph family"),
    (["train", "--resume", "nope"], "no run"),
    (["eval", "nope", "--graphs", "G"], "no run"),
])
def test_bad_input_one_line(capsys, files, args, message):
    args = [{"G": files["graph"], "C2": files["c2"]}.get(a, a) for a in args]
    code, out, err = run_cli(capsys, *args, "--runs-dir", files["runs"])
    assert code == 2
    assert err.count("\n") == 1 and message in err
    assert out == ""


def test_eval_on_a_cluster_with_another_device_count(capsys, files):
    code, out, _ = _train(capsys, files, "--save")
    rid = json.loads(out)["run_id"]
    code, out, err = run_cli(capsys, "eval", rid, "--graphs", files["graph"], "--cluster", files["c3"],
                             "--runs-dir", files["runs"])
    assert code == 2 and "trained for 2 devices" in err and err.count("\n") == 1


def test_eval_on_sixteen_graphs_of_different_sizes(capsys, files):
    # the issue's reproduction: a policy evaluated on a list of 16 graphs once mixed up the graphs'
    # cached structures ("could not broadcast (32,2) into (86,2)"); each row must equal the
    # trained policy's placement of that graph alone. (Whether a freed task's id is reused here
    # depends on the allocator; tests/policies/rl/test_agent.py forces the reuse.)
    import numpy as np

    from engine.specs import load_cluster, load_graph
    from engine.store.runs import RunStore
    from policies.rl.core.task import task_for
    from policies.rl.core.training_runs import load_policy, policy_place

    code, out, err = _train(capsys, files, "--save", "--param", "groups=6")
    assert code == 0, err
    rid = json.loads(out)["run_id"]
    specs = [f"gen:random?ops={10 + 3 * (i % 5)}&seed={i}" for i in range(16)]
    code, out, err = run_cli(capsys, "eval", rid, "--graphs", ",".join(specs), "--runs-dir", files["runs"], "--json")
    assert code == 0, err
    rows = json.loads(out)["results"]
    assert [r["graph"] for r in rows] == specs
    agent, doc = load_policy(RunStore(files["runs"]).load(rid))
    cluster = load_cluster(files["c2"])
    for spec, row in zip(specs, rows, strict=True):
        task = task_for(load_graph(spec), cluster, agent.config)
        alone = task.evaluate(policy_place(agent, doc, task)).makespan
        assert row["makespan_s"] == pytest.approx(alone), spec
        assert np.isfinite(row["lower_bound_s"]) and row["makespan_s"] >= row["lower_bound_s"] - 1e-12


def test_train_prints_no_tensorflow_start_up_lines(tmp_path):
    """torch's TensorBoard writer imports tensorflow, whose C++ start-up notices went to stderr (issue 18):
    in a fresh process, stderr holds only the progress line."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("TF_")}
    env["PYTHONPATH"] = os.getcwd()
    proc = subprocess.run([sys.executable, "-m", "placelab.cli", "train", "--placer", "rnn", "-g",
                           "gen:random?ops=8&seed=1", "-c", "k80x2", "--episodes", "2", "--save",
                           "--runs-dir", str(tmp_path), "--json"], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert list((tmp_path).glob("*/tensorboard/events.out.tfevents.*")), "the TensorBoard writer ran"
    lines = [ln for ln in proc.stderr.replace("\r", "\n").splitlines() if ln.strip()]
    assert lines and all("episodes" in ln for ln in lines), lines
