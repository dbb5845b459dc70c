"""``--mode`` / ``--sim-param`` on the commands that simulate, and DOPPLER text files end to end.

The DOPPLER file is the diamond of ``tests/engine/test_simulator_wc.py`` in the published
layout: a (1 s) -> b (2 s), c (3 s) -> d (1 s), comm = 4 x comp, 1e13 authors' units = 1 s.
All on gpu:0 the work-conserving makespan is 7 s; with c alone on gpu:1 it is 21 s.
"""

from __future__ import annotations

import json

import pytest
from cli_run import run_cli

from engine.generators import from_spec
from engine.graph.io import save_graph

S = 10**13
DIAMOND = "6\n4,5,\n0,0,1,2,\n1,2,3,3,\n" + "".join(f"{c},{4 * c},einsummable,\n" for c in (S, 2 * S, 3 * S, S))


@pytest.fixture
def files(tmp_path):
    g = tmp_path / "diamond.txt"
    g.write_text(DIAMOND)
    place = tmp_path / "split.json"
    place.write_text(json.dumps({"schema": "placelab.placement/1", "graph": "diamond", "cluster": "p100x4",
                                 "devices": {"0": "gpu:0", "1": "gpu:0", "2": "gpu:1", "3": "gpu:0"}}))
    return tmp_path, str(g), str(place)


def as_json(capsys, *args: str) -> dict:
    code, out, err = run_cli(capsys, *args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_graph_info_says_memory_is_unknown(files, capsys):
    _, g, _ = files
    info = as_json(capsys, "graph", "info", g)
    assert info["memory_known"] is False and info["transfer_times_given"] is True
    code, out, _ = run_cli(capsys, "graph", "info", g)
    assert code == 0 and "memory: unknown" in out


def test_simulate_in_each_mode(files, capsys):
    _, g, p = files
    res = as_json(capsys, "simulate", g, "--cluster", "p100x4", "--placement", p)
    assert res["mode"] == "work_conserving" and res["makespan_s"] == pytest.approx(21.0) and not res["oom"]
    # default mode: one outgoing channel per device, same transfer times here -> same makespan
    res = as_json(capsys, "simulate", g, "--cluster", "p100x4", "--placement", p, "--mode", "default")
    assert res["mode"] == "default" and res["makespan_s"] == pytest.approx(21.0)
    res = as_json(capsys, "simulate", g, "--cluster", "p100x4", "--placement", p,
                  "--sim-param", "noise=0.2", "--sim-param", "runs=4", "--sim-param", "seed=1")
    assert res["runs"] == 4 and res["makespan_std_s"] > 0
    assert res["simulation"] == {"noise": 0.2, "runs": 4, "seed": 1}


def test_place_and_compare_without_oom_on_p100x4(files, capsys):
    tmp, g, _ = files
    res = as_json(capsys, "place", g, "--cluster", "p100x4", "--placer", "single-device")
    assert res["makespan_s"] == pytest.approx(7.0) and not res["oom"]
    res = as_json(capsys, "compare", g, "--cluster", "p100x4", "--placers", "single-device,round-robin,heft",
                  "--runs-dir", str(tmp / "runs"))
    assert all(r["oom"] is False for r in res["results"])
    res = as_json(capsys, "place", g, "--cluster", "k80x2", "--placer", "single-device", "--mode",
                  "work_conserving", "--sim-param", "choose=b_level", "--save", "--runs-dir", str(tmp / "runs"))
    stored = json.loads((tmp / "runs" / res["run_id"] / "cluster.json").read_text())
    assert stored["simulation"]["mode"] == "work_conserving" and stored["simulation"]["choose"] == "b_level"


def test_bench_simulate_takes_the_mode(files, capsys):
    _, g, p = files
    res = as_json(capsys, "bench", "simulate", g, "--cluster", "p100x4", "--placement", p, "--repeat", "2",
                  "--mode", "placeto")
    assert res["mode"] == "placeto" and res["makespan_s"] > 0


@pytest.mark.parametrize(("args", "fragment"), [
    (["--mode", "nonsense"], "simulation mode must be one of"),
    (["--sim-param", "speed=2"], "unknown simulation setting 'speed'"),
    (["--sim-param", "runs=many"], "simulation setting 'runs' must be int"),
    (["--sim-param", "noise"], "--sim-param expects key=value"),
    (["--sim-param", "noise=-1"], "simulation.noise must be a finite number >= 0"),
    (["--mode", "placeto", "--sim-param", "choose=b_level"], "applies to work_conserving"),
])
def test_bad_mode_or_sim_param_is_one_line_exit_2(files, capsys, args, fragment):
    _, g, p = files
    for cmd in (["simulate", g, "--cluster", "p100x4", "--placement", p],
                ["place", g, "--cluster", "p100x4", "--placer", "random"]):
        code, out, err = run_cli(capsys, *cmd, *args)
        assert code == 2 and out == ""
        assert err.count("\n") == 1 and fragment in err


def test_negative_transfer_time_is_one_line_exit_2(tmp_path, capsys):
    f = tmp_path / "g.json"
    f.write_text(json.dumps({"schema": "placelab.graph/1",
                             "ops": [{"name": "a", "compute": 1}, {"name": "b", "compute": 1}],
                             "edges": [{"src": "a", "dst": "b", "transfer_s": -0.5}]}))
    code, _, err = run_cli(capsys, "graph", "info", str(f))
    assert code == 2 and err.count("\n") == 1 and "edge 'a' -> 'b': transfer_s must be a finite number >= 0" in err


def test_train_and_eval_take_the_mode(files, capsys):
    tmp, g, _ = files
    runs = str(tmp / "runs")
    res = as_json(capsys, "train", "--placer", "placeto", "--graphs", g, "--cluster", "k80x2", "--episodes", "2",
                  "--param", "batch=2", "--mode", "work_conserving", "--sim-param", "choose=b_level", "--save",
                  "--runs-dir", runs)
    run_dir = tmp / "runs" / res["run_id"]
    stored = [json.loads(p.read_text()) for p in run_dir.rglob("*.json")]
    sims = [d["cluster"]["simulation"] for d in stored if isinstance(d.get("cluster"), dict)]
    sims += [d["simulation"] for d in stored if d.get("schema") == "placelab.cluster/1"]
    assert sims and all(s["mode"] == "work_conserving" and s["choose"] == "b_level" for s in sims)
    ev = as_json(capsys, "eval", res["run_id"], "--graphs", g, "--cluster", "k80x2", "--mode", "work_conserving",
                 "--runs-dir", runs)
    # 7 s (all on one device) is optimal: any cross-device edge adds a transfer of >= 4 s
    assert ev["results"][0]["makespan_s"] >= 7.0 - 1e-9
    code, _, err = run_cli(capsys, "eval", res["run_id"], "--graphs", g, "--mode", "placeto", "--runs-dir", runs)
    assert code == 2 and "need --cluster" in err


def test_import_options_follow_the_path(files, capsys):
    # unit_s: seconds per authors' unit. Half the default 1e-3 halves every time: 21 s -> 10.5 s.
    _, g, p = files
    res = as_json(capsys, "simulate", g + "?unit_s=0.0005", "--cluster", "p100x4", "--placement", p)
    assert res["makespan_s"] == pytest.approx(10.5)
    # App. E reading: comp in FLOP at 1e12 FLOP/s (1e13 -> 10 s), comm = 4 x output bytes
    info = as_json(capsys, "graph", "info", g + "?reading=app_e&flops_per_s=1e13")
    assert info["memory_known"] is True and info["transfer_times_given"] is False
    assert info["total_compute_s"] == pytest.approx(7.0)


@pytest.mark.parametrize(("query", "words"), [
    ("unit=1", "diamond.txt (doppler-text format) has no parameter 'unit' (parameters: reading, unit_s, flops_per_s)"),
    ("unit_s=fast", "parameter 'unit_s' must be float, got 'fast'"),
    ("unit_s=-1", "unit_s must be a finite number > 0"),
    ("reading=flops", "reading must be one of"),
])
def test_bad_import_options_are_one_line(files, capsys, query, words):
    _, g, _ = files
    code, out, err = run_cli(capsys, "graph", "info", f"{g}?{query}")
    assert code == 2 and out == "" and words in err and err.count("\n") == 1


def test_a_format_without_options_says_so(tmp_path, capsys):
    save_graph(from_spec("gen:random?ops=5"), tmp_path / "c.json")
    code, _, err = run_cli(capsys, "graph", "info", str(tmp_path / "c.json") + "?unit_s=1")
    assert code == 2 and "c.json (placelab format) has no parameter 'unit_s' (parameters: none)" in err
