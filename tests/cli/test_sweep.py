"""``placelab sweep`` (and compare's ``--workers``/``--address``) in this process, no Ray.

Numbers worked out by hand for a three-op chain on two GPUs linked at 1 MB/s with 10 ms
latency and no overheads (1000 B take 1 ms on the wire):

    a (1 ms, out 1000 B) ──> b (1 ms, out 1000 B) ──> c (1 ms)

* lower bound = critical path = 3 ms; single-device: a, b, c back to back → 3 ms.
* round-robin deals a, b, c to gpu:0, gpu:1, gpu:0. ``default`` mode (latency counts):
  a [0,1], arrives 1+10+1 = 12, b [12,13], arrives 24, c [24,25] → 25 ms.
  ``--mode placeto`` (Placeto A.5: no latency): a [0,1], b [2,3], c [4,5] → 5 ms.
* cpu-only does not apply (no CPU device): an error row, not a failure.
"""

from __future__ import annotations

import json

import pytest
from cli_run import run_cli

from engine.store.runs import RunStore
from placelab.sweep import sweep_pivot, sweep_rows

MS = 1e-3
GRAPH = {"schema": "placelab.graph/1", "name": "chain3",
         "ops": [{"name": n, "compute": {"gpu": 0.001}, "output_bytes": 1000} for n in "abc"],
         "edges": [{"src": "a", "dst": "b"}, {"src": "b", "dst": "c"}]}
CLUSTER = {"schema": "placelab.cluster/1", "name": "two",
           "devices": [{"name": f"gpu:{i}", "kind": "gpu", "memory_bytes": 1e9} for i in range(2)],
           "link": {"bandwidth_bytes_per_s": 1e6, "latency_s": 0.01}, "simulation": {"mode": "default"}}


@pytest.fixture
def files(tmp_path):
    (tmp_path / "chain.json").write_text(json.dumps(GRAPH))
    (tmp_path / "two.json").write_text(json.dumps(CLUSTER))
    return tmp_path


def _sweep(capsys, files, *extra: str):
    code, out, err = run_cli(capsys, "sweep", "-g", str(files / "chain.json"), "-c", str(files / "two.json"),
                             "--runs-dir", str(files / "runs"), "--json", *extra)
    assert code == 0, err
    return json.loads(out)


def test_sweep_stores_a_run_per_result_and_an_index(capsys, files):
    out = _sweep(capsys, files, "--placers", "single-device,cpu-only,round-robin", "--seeds", "2", "--seed", "5")
    res = out["results"]
    assert [(r["task"], r["placer"], r["seed"]) for r in res] == [
        (0, "single-device", 5), (1, "single-device", 6), (2, "cpu-only", 5), (3, "cpu-only", 6),
        (4, "round-robin", 5), (5, "round-robin", 6)]
    assert [r["makespan_s"] for r in res] == pytest.approx([3 * MS, 3 * MS, None, None, 25 * MS, 25 * MS])
    assert res[0]["lower_bound_s"] == pytest.approx(3 * MS) and res[4]["ratio_to_lower_bound"] == pytest.approx(25 / 3)
    assert res[4]["communication_bytes"] == 2000 and res[4]["oom"] is False
    assert res[2]["error"] == "cluster 'two' has no cpu device" and res[2]["run_id"] is None
    store = RunStore(files / "runs")
    sweep = store.load(out["run_id"])
    assert sweep.meta["kind"] == "sweep" and sweep.meta["status"] == "done"
    assert sweep.meta["metrics"]["tasks"] == 6 and sweep.meta["metrics"]["errors"] == 2
    assert sweep_rows(sweep) == res
    stored = store.list(kind="compare", tag=f"sweep:{out['run_id']}")
    assert sorted(r.id for r in stored) == sorted(r["run_id"] for r in res if r["run_id"])
    assert store.load(res[4]["run_id"]).meta["metrics"]["makespan_s"] == pytest.approx(25 * MS)


def test_mode_overrides_every_cluster_and_is_stored_with_the_runs(capsys, files):
    out = _sweep(capsys, files, "--placers", "single-device,round-robin", "--mode", "placeto")
    assert [r["makespan_s"] for r in out["results"]] == pytest.approx([3 * MS, 5 * MS])
    run = RunStore(files / "runs").load(out["results"][1]["run_id"])
    assert run.read_json("cluster.json")["simulation"]["mode"] == "placeto"


def test_sim_param_applies_to_every_cluster_like_the_other_commands(capsys, files):
    # --mode placeto with δ1 = 1 ms after each op (Placeto A.5): single-device a [0,1] b [2,3] c [4,5], busy
    # to 6; round-robin a [0,1] on gpu:0 (arrives 2), b [2,3] on gpu:1 (arrives 4), c [4,5], busy to 6
    out = _sweep(capsys, files, "--placers", "single-device,round-robin", "--mode", "placeto",
                 "--sim-param", "op_overhead_s=0.001")
    assert [r["makespan_s"] for r in out["results"]] == pytest.approx([6 * MS, 6 * MS])
    sweep = RunStore(files / "runs").load(out["run_id"])
    assert sweep.meta["parameters"]["sim_params"] == ["op_overhead_s=0.001"]
    run = RunStore(files / "runs").load(out["results"][1]["run_id"])
    assert run.read_json("cluster.json")["simulation"]["op_overhead_s"] == pytest.approx(0.001)


def test_resume_of_a_finished_sweep_runs_nothing(capsys, files):
    first = _sweep(capsys, files, "--placers", "round-robin")
    code, out, err = run_cli(capsys, "sweep", "--resume", first["run_id"], "--runs-dir", str(files / "runs"), "--json")
    assert code == 0, err
    again = json.loads(out)
    assert again["ran"] == 0 and again["results"] == first["results"]


def test_sweep_pivot_is_table_1_shaped():
    rows = [{"graph_name": "g", "cluster": "c", "seed": 0, "placer": "p", "makespan_s": 1.0},
            {"graph_name": "g", "cluster": "c", "seed": 0, "placer": "q", "makespan_s": 2.0},
            {"graph_name": "g", "cluster": "c", "seed": 1, "placer": "p", "makespan_s": 3.0}]
    assert sweep_pivot(rows) == [{"graph": "g", "cluster": "c", "seed": 0, "p": 1.0, "q": 2.0},
                                 {"graph": "g", "cluster": "c", "seed": 1, "p": 3.0}]


@pytest.mark.parametrize(("args", "message"), [
    (["--placers", "nope"], "nope"),
    (["--placers", "round-robin", "--seeds", "0"], "--seeds must be at least 1"),
    (["--placers", "round-robin", "--workers", "0"], "--workers must be at least 1"),
    (["--placers", "round-robin", "--workers", "2", "--address", "auto"], "not both"),
    (["--placers", "round-robin", "--mode", "bogus"], "simulation mode must be one of"),
    (["--placers", " , "], "--placers names nothing"),
    (["--placers", "round-robin", "--sim-param", "bogus=1"], "unknown simulation setting 'bogus'"),
    (["--placers", "round-robin", "--address", "127.0.0.1:1"], "cannot reach the Ray cluster at 127.0.0.1:1"),
    (["--placers", "round-robin", "--address", "headnode"], "--address expects auto, HOST:PORT or ray://"),
])
def test_bad_sweep_input_is_one_line_and_stores_nothing(capsys, files, args, message):
    code, out, err = run_cli(capsys, "sweep", "-g", str(files / "chain.json"), "-c", str(files / "two.json"),
                             "--runs-dir", str(files / "runs"), *args)
    assert code == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1
    assert RunStore(files / "runs").list() == []


def test_resume_needs_a_sweep_run_and_nothing_else(capsys, files):
    first = _sweep(capsys, files, "--placers", "round-robin")
    runs = str(files / "runs")
    code, _, err = run_cli(capsys, "sweep", "--resume", first["results"][0]["run_id"], "--runs-dir", runs)
    assert code == 2 and "not a sweep" in err
    code, _, err = run_cli(capsys, "sweep", "--resume", first["run_id"], "--placers", "random", "--runs-dir", runs)
    assert code == 2 and "--resume finishes a stored sweep" in err
    code, _, err = run_cli(capsys, "sweep", "--placers", "random", "--runs-dir", runs)
    assert code == 2 and "sweep needs --graphs, --clusters" in err


def test_compare_refuses_bad_worker_options(capsys, files):
    code, _, err = run_cli(capsys, "compare", str(files / "chain.json"), "-c", str(files / "two.json"),
                           "--workers", "0", "--runs-dir", str(files / "runs"))
    assert code == 2 and "--workers must be at least 1" in err


def test_search_reference_runs_once_per_graph_and_divides_every_result(capsys, files):
    # anneal (50 evaluations, seed 5) finds the 3 ms of one device (the chain's critical path, the lower bound):
    # ×search = 3 / 3 = 1 for single-device and 25 / 3 for round-robin, on both seeds
    out = _sweep(capsys, files, "--placers", "single-device,round-robin", "--seeds", "2", "--seed", "5",
                 "--search", "50")
    res = out["results"]
    assert [(r["task"], r["placer"], r["seed"]) for r in res][-1] == (4, "anneal", 5)
    assert res[-1]["makespan_s"] == pytest.approx(3 * MS)
    two = str(files / "two.json")
    assert out["search_ratios"] == [
        {"graph": "chain3", "cluster": two, "seed": 5, "single-device": pytest.approx(1.0),
         "round-robin": pytest.approx(25 / 3)},
        {"graph": "chain3", "cluster": two, "seed": 6, "single-device": pytest.approx(1.0),
         "round-robin": pytest.approx(25 / 3)}]
    assert out["search"] == ("search reference (anneal column): anneal: 50 evaluations, no time limit, seed 5; "
                             "×search: each makespan ÷ its on the same graph and cluster")
    store = RunStore(files / "runs")
    assert store.load(out["run_id"]).meta["parameters"]["search"] == 50
    assert store.load(res[-1]["run_id"]).meta["parameters"] == {"evaluations": 50, "budget": None}
    # resumed, the plan is the same: nothing runs again
    code, text, err = run_cli(capsys, "sweep", "--resume", out["run_id"], "--runs-dir", str(files / "runs"))
    assert code == 0, err
    assert "round-robin ×search" in text and "8.333" in text and "anneal: 50 evaluations, no time limit, seed 5" in text
    assert "(0 run now" in text


@pytest.mark.parametrize(("args", "message"), [
    (["--placers", "round-robin,anneal", "--search", "100"], "leave anneal out of --placers"),
    (["--placers", "round-robin", "--search", "0"], "--search (the search reference's evaluations) must be at least"),
])
def test_bad_search_reference_is_one_line(capsys, files, args, message):
    code, out, err = run_cli(capsys, "sweep", "-g", str(files / "chain.json"), "-c", str(files / "two.json"),
                             "--runs-dir", str(files / "runs"), *args)
    assert code == 2 and out == "" and message in err
    assert RunStore(files / "runs").list() == []
