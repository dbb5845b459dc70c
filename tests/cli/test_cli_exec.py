"""``placelab calibrate``, ``validate`` and ``place/compare --execute`` (2 CPU workers, tiny graphs)."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest
from cli_run import run_cli

from engine.cluster import SIMULATION_MODES, cluster_to_dict
from engine.executor import calibration
from engine.executor.calibration import machine_cluster
from engine.specs import load_cluster
from engine.store.runs import RunStore

pytestmark = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="the executor needs 2 CPU cores")

GRAPH = "gen:random?ops=12&seed=3"


@pytest.fixture
def two(tmp_path):
    path = tmp_path / "two.json"
    path.write_text(json.dumps(cluster_to_dict(machine_cluster(2, name="two"))))
    return str(path)


def test_calibrate_writes_a_cluster_that_loads(capsys, tmp_path):
    out = tmp_path / "c.json"
    code, stdout, _ = run_cli(capsys, "calibrate", "-o", str(out), "--devices", "2", "--json")
    assert code == 0
    doc = json.loads(stdout)
    c = load_cluster(str(out))
    assert [d.name for d in c.devices] == ["cpu:0", "cpu:1"] and c.name == "local"
    assert c.link.bandwidth_bytes_per_s > 0 and c.link.latency_s >= 0 and c.simulation.dispatch_s >= 0
    assert c.simulation.mode == "work_conserving" and c.simulation.copy_occupies_sender
    cal = json.loads(out.read_text())["calibration"]
    assert [w["device"] for w in cal["workers"]] == ["cpu:0", "cpu:1"]
    assert all(w["matmul_flops_per_s"] > 1e8 for w in cal["workers"])
    assert len(cal["copy_hop_s"]) == len(cal["copy_bytes"]) and doc["path"] == str(out)
    # the copy curve: one point per measured size, each hop less the latency in flight
    assert [b for b, _ in c.link.copy_curve] == cal["copy_bytes"] and c.simulation.copy_bus_shared
    # the bus carries 2 · alone / both copies at full speed, between 1 and 2
    assert c.simulation.copy_bus_capacity == pytest.approx(min(max(2 * cal["copy_alone_s"] / cal["copy_both_s"], 1), 2))
    hops = np.maximum.accumulate(np.maximum(np.array(cal["copy_hop_s"]) - c.link.latency_s, 0.0))
    assert [t for _, t in c.link.copy_curve] == pytest.approx(hops.tolist(), rel=1e-12, abs=1e-15)


def test_calibrating_one_device_says_its_copies_were_not_measured(capsys, tmp_path):
    out = tmp_path / "one.json"
    code, stdout, _ = run_cli(capsys, "calibrate", "-o", str(out), "--devices", "1")
    assert code == 0 and json.loads(out.read_text())["calibration"]["copy_bytes"] == []
    assert stdout.startswith(f"wrote {out}: 1 × cpu, op overhead ")
    assert stdout.rstrip().endswith("µs, no copies measured (one device: the link is a placeholder)")


def test_local_preset_is_calibrated_once_then_read_from_the_cache(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("PLACELAB_CACHE_DIR", str(tmp_path / "cache"))
    calls = []

    def fake(n, **_kw):  # the measurement itself is tested above; here only the caching
        calls.append(n)
        return cluster_to_dict(machine_cluster(n))

    monkeypatch.setattr(calibration, "calibrate", fake)
    first = load_cluster("local")
    assert calls == [calibration.local_devices()] and calibration.local_cache_path().exists()
    assert str(tmp_path / "cache") in str(calibration.local_cache_path())
    assert load_cluster("local") == first and len(calls) == 1  # cached: no second calibration
    path = calibration.local_cache_path()  # a calibration of an older version is redone
    old = {**json.loads(path.read_text()), "calibration": {"version": calibration.CALIBRATION_VERSION - 1}}
    path.write_text(json.dumps(old))
    assert load_cluster("local") == first and len(calls) == 2
    assert load_cluster("local") == first and len(calls) == 2
    code, _, _ = run_cli(capsys, "calibrate", "--json")  # refresh
    assert code == 0 and len(calls) == 3


def test_validate_reports_every_mode_and_stores_a_run(capsys, tmp_path, two):
    runs = tmp_path / "runs"
    code, stdout, _ = run_cli(capsys, "validate", GRAPH, "-c", two, "--placements", "3", "--placers", "round-robin",
                              "--repeats", "1", "--step-ms", "5", "--blocked", "--recalibrate", "--runs-dir",
                              str(runs), "--json")
    assert code == 0
    res = json.loads(stdout)
    assert res["placements"] == 3 and res["rows"]["source"][0] == "round-robin"
    assert set(res["modes"]) | set(res["unavailable_modes"]) == set(SIMULATION_MODES)
    for stats in res["modes"].values():
        assert stats["placements"] == 3 and stats["median_rel_error"] >= 0
    assert res["replay"]["placements"] == 3 and len(res["rows"]["replayed_s"]) == 3 and res["op_time_ratio_median"] > 0
    assert res["repeats"] == 1 and res["repeat_agreement"] is None  # nothing to set one run against
    run = RunStore(runs).load(res["run_id"])
    assert {"fidelity.csv", "measured_ops.csv", "schedule_ops.csv"} <= set(run.files())
    assert run.meta["parameters"]["interleave"] is False  # --blocked
    # --recalibrate: the probes ran before the one round and after it, and the recalibrated row is stored
    assert run.meta["parameters"]["recalibrate"] is True and res["recalibrated"]["placements"] == 3
    assert run.meta["metrics"]["recalibrated"] == pytest.approx(res["recalibrated"])
    assert len(res["rows"]["simulated_recalibrated_s"]) == 3
    assert res["recalibrated_per_run"]["placements"] == 3 and len(res["rows"]["simulated_recalibrated_per_run_s"]) == 3
    assert run.meta["metrics"]["recalibrated_per_run"] == pytest.approx(res["recalibrated_per_run"])
    doc = run.read_json("recalibrated_cluster.json")
    assert len(doc["calibration"]["probes"]) == 2
    # the probes' readings of the copy bus, each 2 · alone / both of its copies
    caps = [min(max(2 * p["copy_alone_s"] / p["copy_both_s"], 1), 2) for p in doc["calibration"]["probes"]]
    assert res["copy_bus_capacity_probes"] == pytest.approx(caps) and res["copy_bus"]["readings"] == 2
    assert run.meta["metrics"]["copy_bus_capacity_probes"] == pytest.approx(caps)
    text = run_cli(capsys, "validate", GRAPH, "-c", two, "--placements", "2", "--placers", "round-robin", "--repeats",
                   "1", "--step-ms", "5", "--recalibrate", "--no-save")[1]
    low, high = re.search(r"copy bus: the probes read a capacity of ([\d.]+)–([\d.]+) copies", text).groups()
    assert 1.0 <= float(low) <= float(high) <= 2.0
    assert re.search(r"^recalibrated per run +[-\d.]+ +[-\d.]+ +[\d.]+%", text, re.M)
    again = load_cluster(str(run.path / "recalibrated_cluster.json"))  # an ordinary cluster file
    assert [d.name for d in again.devices] == ["cpu:0", "cpu:1"] and again.simulation.copy_occupies_sender
    refined = tmp_path / "refined.json"
    code, stdout, _ = run_cli(capsys, "validate", GRAPH, "-c", two, "--placements", "3", "--repeats", "2",
                              "--step-ms", "5", "--no-save", "--refine-out", str(refined), "--placers", "round-robin",
                              "--sample", "perturbed")
    assert code == 0
    assert f"refined cluster written to {refined}" in stdout
    c = load_cluster(str(refined))
    assert c.num_devices == 2 and all(d.speed > 0 for d in c.devices) and "refined on 6 measured runs" in c.description
    replay = next(line for line in stdout.splitlines() if line.startswith("replay "))
    assert len(replay.split()) == 5  # Pearson, Spearman, median and max error
    repeats = next(line for line in stdout.splitlines() if line.startswith("repeats "))
    assert len(repeats.split()) == 5 and "limited by its model, not by the noise" in stdout
    assert "the error of the simulator's rules alone" in stdout and "their predicted time" in stdout
    # --sample perturbed: the placer's placement, then it with a half and all of its ops redrawn
    assert "3 placements (perturbed sample)" in stdout and "noise ceiling: an error-free prediction" in stdout


def test_place_execute_stores_the_measured_schedule(capsys, tmp_path, two):
    runs = tmp_path / "runs"
    code, stdout, _ = run_cli(capsys, "place", GRAPH, "-c", two, "--placer", "round-robin", "--execute",
                              "--repeats", "2", "--time-scale", "1", "--save", "--runs-dir", str(runs), "--json")
    assert code == 0
    res = json.loads(stdout)
    assert res["measured_repeats"] == 2 and len(res["measured_makespans_s"]) == 2
    assert res["measured_makespan_s"] == pytest.approx(sum(res["measured_makespans_s"]) / 2)
    run = RunStore(runs).load(res["run_id"])
    assert {"measured_ops.csv", "measured_transfers.csv", "schedule_ops.csv"} <= set(run.files())
    assert run.meta["metrics"]["measured_makespan_s"] == res["measured_makespan_s"]
    assert run.read_table("measured_ops.csv")["device"] == run.read_table("schedule_ops.csv")["device"]


def test_compare_execute_measures_every_placer(capsys, tmp_path, two):
    code, stdout, _ = run_cli(capsys, "compare", GRAPH, "-c", two, "--placers", "round-robin,heft", "--execute",
                              "--repeats", "1", "--time-scale", "0.5", "--runs-dir", str(tmp_path / "runs"), "--json")
    assert code == 0
    rows = json.loads(stdout)["results"]
    assert [r["placer"] for r in rows] == ["round-robin", "heft"]
    assert all(r["measured_makespan_s"] > 0 and r["measured_repeats"] == 1 for r in rows)


def test_execute_a_placement_file_stores_measured_beside_simulated(capsys, tmp_path, two):
    from engine.executor import scale_graph
    from engine.placement import load_placement
    from engine.sim.simulator import Simulator
    from engine.specs import load_graph

    placement = tmp_path / "p.json"
    code, _, _ = run_cli(capsys, "place", GRAPH, "-c", two, "--placer", "round-robin", "-o", str(placement))
    assert code == 0
    runs = tmp_path / "runs"
    code, stdout, _ = run_cli(capsys, "execute", GRAPH, "-c", two, "--placement", str(placement), "--repeats", "2",
                              "--step-ms", "10", "--placer", "round-robin", "--name", "mine", "--save",
                              "--runs-dir", str(runs), "--json")
    assert code == 0
    res = json.loads(stdout)
    g = load_graph(GRAPH)
    scale = 10e-3 / (float(g.min_compute().sum()) / 2)  # one device's share of the compute takes 10 ms
    assert res["time_scale"] == pytest.approx(scale)
    scaled, c = scale_graph(g, scale), load_cluster(two)
    assert res["makespan_s"] == pytest.approx(Simulator(scaled, c).run(load_placement(str(placement), scaled,
                                                                                      c)).makespan)
    assert res["measured_makespan_s"] == pytest.approx(sum(res["measured_makespans_s"]) / 2)
    run = RunStore(runs).load(res["run_id"])
    assert run.meta["name"] == "mine" and run.meta["placer"] == "round-robin" and "executed" in run.meta["tags"]
    assert run.meta["metrics"]["measured_makespan_s"] == res["measured_makespan_s"]
    assert run.read_table("measured_ops.csv")["device"] == run.read_table("schedule_ops.csv")["device"]


def test_execute_a_placement_of_another_cluster_is_one_line(capsys, tmp_path, two):
    placement = tmp_path / "p.json"
    run_cli(capsys, "place", GRAPH, "-c", "k80x2", "--placer", "round-robin", "-o", str(placement))
    code, stdout, stderr = run_cli(capsys, "execute", GRAPH, "-c", two, "--placement", str(placement))
    assert code == 2 and stdout == "" and "unknown device 'gpu:0'" in stderr and stderr.count("\n") == 1


@pytest.mark.parametrize("args, words", [
    (["validate", GRAPH, "-c", "TWO", "--placers", "nosuch"], "unknown placer 'nosuch'"),
    (["validate", GRAPH, "-c", "TWO", "--time-scale", "-1"], "--time-scale must be >= 0"),
    (["validate", GRAPH, "-c", "TWO", "--time-scale", "0"], "time_scale must be a finite number > 0"),
    (["validate", GRAPH, "-c", "TWO", "--param", "oops"], "PLACER.key=value"),
    (["validate", GRAPH, "-c", "TWO", "--sample", "nosuch"], "unknown placement sample 'nosuch'"),
    (["validate", GRAPH, "-c", "TWO", "--refine-out", "/nonexistent-placelab/x.json"],
     "the folder /nonexistent-placelab does not exist"),  # refused before anything is measured
    (["calibrate", "-o", "x.json", "--kind", "tpu"], "--kind must be cpu or gpu"),
    (["calibrate", "--devices", "2"], "need --output"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, two, args, words):
    code, stdout, stderr = run_cli(capsys, *[two if a == "TWO" else a for a in args])
    assert code == 2 and stdout == ""
    assert words in stderr and stderr.count("\n") == 1


def test_calibrate_gpu_without_a_gpu_is_one_line(capsys, tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the no-GPU message cannot be checked here")
    code, _, stderr = run_cli(capsys, "calibrate", "-o", str(tmp_path / "g.json"), "--kind", "gpu")
    assert code == 2 and "torch.cuda reports no GPU" in stderr and stderr.count("\n") == 1
