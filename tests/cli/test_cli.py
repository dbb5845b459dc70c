"""Tests for the ``placelab`` command line (CONTRACTS §5), run in-process through ``main``.

Every number is worked out by hand for a four-op graph on a two-GPU cluster in ``default``
mode with zero overheads and a 1 MB/s link (so 1000 bytes take 1 ms):

    a (1 ms, out 1000 B) ──> b (2 ms, out 2000 B) ──> c (3 ms, temp 100 B)
    d (4 ms, persistent 500 B)          (independent; file order a, d, b, c)

* total compute 10 ms; critical path a→b→c = 6 ms; levels [a, d], [b], [c].
* lower bound on two devices = max(6 ms, 10 ms / 2) = 6 ms.
* everything on gpu:0: a [0,1], d [1,5] (runnable since 0, before b's 1), b [5,7],
  c [7,10] → makespan 10 ms. Memory on gpu:0: 500 persistent + a's output [0,7) +
  b's output [5,10) + c's temp [7,10) → peak 500 + 1000 + 2000 = 3500 B during [5,7).
* round-robin (topological order a, d, b, c dealt to gpu:0, gpu:1, gpu:0, gpu:1):
  gpu:0 runs a [0,1], b [1,3]; b's 2000 B go to gpu:1 over [3,5]; gpu:1 runs d [0,4],
  c [5,8] → makespan 8 ms, 2000 B communicated, one transfer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from cli_run import run_cli

MS = 1e-3


def graph_doc() -> dict:
    return {
        "schema": "placelab.graph/1",
        "name": "hand",
        "ops": [
            {"name": "a", "compute": 0.001, "output_bytes": 1000},
            {"name": "d", "compute": 0.004, "persistent_bytes": 500},
            {"name": "b", "compute": 0.002, "output_bytes": 2000},
            {"name": "c", "compute": 0.003, "temp_bytes": 100},
        ],
        "edges": [{"src": "a", "dst": "b"}, {"src": "b", "dst": "c"}],
    }


def cluster_doc(name: str = "two", memory0: float = 1e9) -> dict:
    return {
        "schema": "placelab.cluster/1",
        "name": name,
        "devices": [{"name": "gpu:0", "kind": "gpu", "memory_bytes": memory0},
                    {"name": "gpu:1", "kind": "gpu", "memory_bytes": 1e9}],
        "link": {"bandwidth_bytes_per_s": 1e6, "latency_s": 0.0},
        "simulation": {"mode": "default", "op_overhead_s": 0.0, "transfer_gap_s": 0.0},
    }


def placement_doc(devices: dict[str, str]) -> dict:
    return {"schema": "placelab.placement/1", "graph": "hand", "cluster": "two", "devices": devices}


ALL_GPU0 = {"a": "gpu:0", "d": "gpu:0", "b": "gpu:0", "c": "gpu:0"}
SPLIT = {"a": "gpu:0", "b": "gpu:0", "c": "gpu:0", "d": "gpu:1"}


class Files:
    """Paths of the hand-made inputs written to ``tmp_path``."""

    def __init__(self, root: Path) -> None:
        def write(name: str, doc: dict) -> str:
            path = root / name
            path.write_text(json.dumps(doc))
            return str(path)

        self.root = root
        self.graph = write("graph.json", graph_doc())
        self.cluster = write("cluster.json", cluster_doc())
        self.tight = write("tight.json", cluster_doc("tight", memory0=3000))
        self.one = write("one.json", {**cluster_doc("one"), "devices": cluster_doc()["devices"][:1]})
        self.all_gpu0 = write("all_gpu0.json", placement_doc(ALL_GPU0))
        self.split = write("split.json", placement_doc(SPLIT))
        self.runs = str(root / "runs")


@pytest.fixture
def files(tmp_path, monkeypatch) -> Files:
    monkeypatch.chdir(tmp_path)  # a command that forgets --runs-dir must not write into the repo
    monkeypatch.delenv("PLACELAB_RUNS_DIR", raising=False)
    return Files(tmp_path)




def run_json(capsys, *args: str) -> dict:
    """Run a ``--json`` command: exit 0 and stdout is exactly one JSON object."""
    code, out, err = run_cli(capsys, *args, "--json")
    assert code == 0, err
    assert out.endswith("\n") and out.count("\n") == 1, out  # one line: the object, nothing else
    obj = json.loads(out)
    assert isinstance(obj, dict)
    assert "Traceback" not in err
    return obj


# ---- graph info --------------------------------------------------------------------------


def test_graph_info_json(files, capsys):
    info = run_json(capsys, "graph", "info", files.graph)
    assert info["name"] == "hand"
    assert (info["ops"], info["edges"], info["groups"]) == (4, 2, 4)
    assert info["total_compute_s"] == pytest.approx(10 * MS)  # 1 + 4 + 2 + 3 ms
    assert info["critical_path_s"] == pytest.approx(6 * MS)  # a -> b -> c
    assert info["parallelism_profile"] == [2, 1, 1]  # {a, d}, {b}, {c}
    assert (info["levels"], info["max_width"]) == (3, 2)
    assert info["persistent_bytes"] == 500
    assert info["output_bytes"] == 3000  # 1000 + 2000
    assert "lower_bound_s" not in info  # only with a cluster


def test_graph_info_with_cluster(files, capsys):
    two = run_json(capsys, "graph", "info", files.graph, "--cluster", files.cluster)
    assert two["cluster"] == "two"
    assert two["lower_bound_s"] == pytest.approx(6 * MS)  # max(6 ms path, 10 ms / 2 devices)
    # 500 persistent + 3000 outputs + 100 largest temp = 3600 B <= 1 GB
    assert two["fits_one_device"] is True
    one = run_json(capsys, "graph", "info", files.graph, "-c", files.one)
    assert one["lower_bound_s"] == pytest.approx(10 * MS)  # max(6 ms, 10 ms / 1 device): work dominates


def test_graph_info_human(files, capsys):
    code, out, err = run_cli(capsys, "graph", "info", files.graph, "-c", files.cluster)
    assert code == 0 and err == ""
    assert "hand: 4 ops, 2 edges" in out
    # a→b→c merge into c (each has one consumer); d, alone, stays: 2 groups by either rule
    assert "groups: 4 colocation sets, 2 by the single-consumer rule (Mirhoseini 3.3), 2 layer units" in out
    assert "total compute 10.000 ms, critical path 6.000 ms" in out
    assert "lower bound 6.000 ms" in out
    assert "one device: 3.60 KB with every output held at once (fits); simulated on gpu:0 it peaks at" in out


def test_graph_info_generator_spec(capsys):
    info = run_json(capsys, "graph", "info", "gen:random?ops=5&degree=0&seed=3")
    # the generator names its graph random-<ops>-s<seed>; degree 0 draws no edges, so all
    # five ops sit on level 0 and the critical path is the single slowest op
    assert (info["name"], info["ops"], info["edges"]) == ("random-5-s3", 5, 0)
    assert info["parallelism_profile"] == [5] and info["max_width"] == 5
    assert 1e-6 <= info["critical_path_s"] <= 100e-6  # costs are drawn from [1, 100] µs
    assert info["critical_path_s"] < info["total_compute_s"] <= 5 * info["critical_path_s"]


# ---- simulate ----------------------------------------------------------------------------


def test_simulate_one_device_is_sum_of_compute(files, capsys):
    res = run_json(capsys, "simulate", files.graph, "--cluster", files.cluster, "--placement", files.all_gpu0)
    assert res["makespan_s"] == pytest.approx(10 * MS)  # 1 + 4 + 2 + 3 ms back to back
    assert res["lower_bound_s"] == pytest.approx(6 * MS)
    assert res["peak_memory_bytes"] == {"gpu:0": 3500.0, "gpu:1": 0.0}  # see module docstring
    assert res["oom"] is False and res["oom_devices"] == []
    assert res["communication_bytes"] == 0


def test_simulate_split_reaches_lower_bound(files, capsys):
    res = run_json(capsys, "simulate", files.graph, "-c", files.cluster, "--placement", files.split)
    # a, b, c on gpu:0 back to back (6 ms) while d runs on gpu:1 (4 ms): no transfer at all
    assert res["makespan_s"] == pytest.approx(6 * MS)
    assert res["makespan_s"] == pytest.approx(res["lower_bound_s"])
    # gpu:0: a's output [0,3) + b's output [1,6) = 3000 during [1,3); gpu:1: d's 500 persistent
    assert res["peak_memory_bytes"] == {"gpu:0": 3000.0, "gpu:1": 500.0}


def test_simulate_oom(files, capsys):
    res = run_json(capsys, "simulate", files.graph, "-c", files.tight, "--placement", files.all_gpu0)
    assert res["peak_memory_bytes"]["gpu:0"] == 3500.0  # > 3000 B capacity
    assert res["oom"] is True and res["oom_devices"] == ["gpu:0"]
    code, out, _ = run_cli(capsys, "simulate", files.graph, "-c", files.tight, "--placement", files.all_gpu0)
    assert code == 0
    assert "makespan 10.000 ms (lower bound 6.000 ms)" in out and "OOM on gpu:0" in out


def test_simulate_mode_override(files, capsys):
    # placeto mode on the same cluster: zero overheads and one device, so still 10 ms
    res = run_json(capsys, "simulate", files.graph, "-c", files.cluster, "--placement", files.all_gpu0,
                   "--mode", "placeto")
    assert res["mode"] == "placeto" and res["makespan_s"] == pytest.approx(10 * MS)


# ---- place ---------------------------------------------------------------------------------


def test_place_single_device(files, capsys):
    res = run_json(capsys, "place", files.graph, "-c", files.cluster, "--placer", "single-device")
    assert res["placer"] == "single-device"
    assert res["placement"] == ALL_GPU0
    assert res["makespan_s"] == pytest.approx(10 * MS)
    assert res["lower_bound_s"] == pytest.approx(6 * MS)
    assert res["peak_memory_bytes"] == {"gpu:0": 3500.0, "gpu:1": 0.0}
    assert res["oom"] is False
    assert res["seconds_to_place"] >= 0
    assert "run_id" not in res
    assert not Path(files.runs).exists() and not Path("runs").exists()


def test_place_save_and_output(files, capsys):
    out_file = files.root / "placed.json"
    res = run_json(capsys, "place", files.graph, "-c", files.cluster, "--placer", "round-robin", "--save",
                   "--runs-dir", files.runs, "-o", str(out_file))
    rr = {"a": "gpu:0", "d": "gpu:1", "b": "gpu:0", "c": "gpu:1"}  # topological order a, d, b, c dealt in turn
    assert res["placement"] == rr
    assert res["makespan_s"] == pytest.approx(8 * MS)  # see module docstring
    assert res["communication_bytes"] == 2000
    # gpu:0: a's output [0,3) + b's output [1,5) (until it has been sent) = 3000;
    # gpu:1: 500 persistent + b's copy [5,8) + c's temp [5,8) = 2600
    assert res["peak_memory_bytes"] == {"gpu:0": 3000.0, "gpu:1": 2600.0}
    run_dir = Path(files.runs) / res["run_id"]
    for name in ("run.json", "placement.json", "graph.json", "cluster.json", "schedule_ops.csv"):
        assert (run_dir / name).is_file(), name
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "done" and meta["placer"] == "round-robin"
    assert meta["metrics"]["makespan_s"] == pytest.approx(8 * MS)
    written = json.loads(out_file.read_text())
    assert written["schema"] == "placelab.placement/1" and written["devices"] == rr
    assert json.loads((run_dir / "placement.json").read_text())["devices"] == rr
    # the written placement file simulates back to the same makespan
    again = run_json(capsys, "simulate", files.graph, "-c", files.cluster, "--placement", str(out_file))
    assert again["makespan_s"] == pytest.approx(8 * MS)


def test_place_human(files, capsys):
    code, out, _ = run_cli(capsys, "place", files.graph, "-c", files.cluster, "--placer", "round-robin",
                           "--save", "--runs-dir", files.runs)
    assert code == 0
    assert out.startswith("round-robin: makespan 8.000 ms (lower bound 6.000 ms)")
    (run_id,) = os.listdir(files.runs)
    assert f"saved as run {run_id}" in out


# ---- compare -------------------------------------------------------------------------------


def test_compare(files, capsys):
    res = run_json(capsys, "compare", files.graph, "-c", files.cluster, "--placers",
                   "single-device,round-robin,cpu-only", "--runs-dir", files.runs)
    assert res["lower_bound_s"] == pytest.approx(6 * MS)
    rows = {r["placer"]: r for r in res["results"]}
    assert list(rows) == ["single-device", "round-robin", "cpu-only"]
    assert rows["single-device"]["makespan_s"] == pytest.approx(10 * MS)
    assert rows["round-robin"]["makespan_s"] == pytest.approx(8 * MS)
    for name in ("single-device", "round-robin"):
        r = rows[name]
        assert r["lower_bound_s"] == pytest.approx(6 * MS) and r["oom"] is False
        assert set(r) >= {"peak_memory_bytes", "seconds_to_place", "run_id"}
        assert (Path(files.runs) / r["run_id"] / "run.json").is_file()
    # a placer that does not apply gets a row with its one-line error, the others still run
    assert rows["cpu-only"] == {"placer": "cpu-only", "error": "cluster 'two' has no cpu device"}
    assert len(os.listdir(files.runs)) == 2


def test_compare_no_save_human(files, capsys):
    code, out, err = run_cli(capsys, "compare", files.graph, "-c", files.cluster, "--placers",
                             "single-device,round-robin", "--no-save", "--runs-dir", files.runs)
    assert code == 0
    assert out.startswith("hand on two (lower bound 6.000 ms, single-device 10.000 ms)")
    assert "placing with round-robin" in err  # progress goes to stderr
    # ×LB column: 10 ms / 6 ms = 1.67 and 8 ms / 6 ms = 1.33
    assert "1.67" in out and "1.33" in out
    assert not Path(files.runs).exists()


def test_compare_estimate_and_ratios(files, capsys):
    """Issue 55: per placer the simulated makespan, its own estimate, ×single-device (single-device's 10 ms simulated
    although it is not among --placers) and ×lower bound. heft: a, b, c on gpu:0 [0, 6], d on gpu:1 [0, 4];
    its schedule ends at 6 ms as the simulation does (×single 0.60, ×LB 1.00); round-robin 8 ms (0.80, 1.33)
    predicts nothing."""
    res = run_json(capsys, "compare", files.graph, "-c", files.cluster, "--placers", "round-robin,heft", "--no-save")
    assert res["single_device_makespan_s"] == pytest.approx(10 * MS)
    rr, heft = res["results"]
    assert (rr["predicted_makespan_s"], rr["estimate_warning"]) == (None, None)
    assert rr["ratio_to_single_device"] == pytest.approx(0.8) and rr["ratio_to_lower_bound"] == pytest.approx(8 / 6)
    assert heft["makespan_s"] == pytest.approx(6 * MS) and heft["predicted_makespan_s"] == pytest.approx(6 * MS)
    assert heft["ratio_to_single_device"] == pytest.approx(0.6) and heft["ratio_to_lower_bound"] == pytest.approx(1.0)
    assert heft["estimate_warning"] is None
    code, out, err = run_cli(capsys, "compare", files.graph, "-c", files.cluster, "--placers", "round-robin,heft",
                             "--no-save")
    assert code == 0 and "warning" not in err  # the estimate agrees with the simulation
    lines = out.splitlines()
    assert lines[1].split() == ["placer", "makespan", "est.", "×single", "×LB", "peak", "mem", "OOM", "comm", "time",
                                "run", "/", "note"]
    assert lines[3].split()[:7] == ["round-robin", "8.000", "ms", "-", "0.80", "1.33", "3.00"]
    assert lines[4].split()[:8] == ["heft", "6.000", "ms", "6.000", "ms", "0.60", "1.00", "3.00"]


def test_compare_warns_where_an_estimate_is_far_off(files, capsys, estimating_placer):
    """A placer that predicts 4 ms for heft's placement, which simulates 6 ms: 33 % under, more than 5 % off."""
    name = estimating_placer(4 * MS)
    code, out, err = run_cli(capsys, "compare", files.graph, "-c", files.cluster, "--placers", f"heft,{name}",
                             "--no-save")
    assert code == 0
    row = next(line for line in out.splitlines() if line.startswith(name))
    assert row.split()[:6] == [name, "6.000", "ms", "4.000", "ms", "0.60"] and row.endswith("est. off by -33 %")
    assert [line for line in err.splitlines() if line.startswith("warning:")] == [
        f"warning: {name}: its own estimate (4.000 ms) is more than 5 % off the simulated makespan (6.000 ms): "
        "est. off by -33 %"]
    res = run_json(capsys, "compare", files.graph, "-c", files.cluster, "--placers", f"heft,{name}", "--no-save")
    assert [r["estimate_warning"] for r in res["results"]] == [None, "est. off by -33 %"]


def test_compare_states_each_search_budget_under_the_table(files, capsys):
    code, out, _ = run_cli(capsys, "compare", files.graph, "-c", files.cluster, "--placers",
                           "local-search,enumerative,heft", "--no-save", "--seed", "2")
    assert code == 0
    assert out.splitlines()[-1] == ("search budgets: local-search: 2,000 evaluations, no time limit, seed 2; "
                                    "enumerative: max_enumerate=50000, meta_ops=auto, seed 2")
    code, out, _ = run_cli(capsys, "compare", files.graph, "-c", files.cluster, "--placers", "heft", "--no-save")
    assert "budget" not in out  # no search, no line


def test_compare_without_placers_leaves_the_learned_ones_out_and_says_so(files, capsys):
    """Issue #33: `compare GRAPH` trained all the learned placers with their default budgets (over 15 minutes on
    a 112-op graph); without --placers it now runs every other placer and names the ones it left out."""
    code, out, err = run_cli(capsys, "compare", files.graph, "-c", files.cluster, "--no-save", "--json")
    assert code == 0
    ran = [r["placer"] for r in json.loads(out)["results"]]
    assert {"doppler", "gdp", "placeto", "rnn"}.isdisjoint(ran)
    assert {"single-device", "round-robin", "metis", "heft", "m-etf", "local-search", "enumerative"} <= set(ran)
    assert ("note: comparing every placer but the learned ones (doppler, gdp, placeto, rnn), which train for "
            "minutes to hours each; name them in --placers to include them") in err
    code, out, err = run_cli(capsys, "compare", files.graph, "-c", files.cluster, "--no-save", "--json",
                             "--placers", "single-device")
    assert code == 0 and "learned ones" not in err


# ---- bench simulate ------------------------------------------------------------------------


def test_bench_simulate(files, capsys):
    res = run_json(capsys, "bench", "simulate", files.graph, "-c", files.cluster, "--placement", files.all_gpu0,
                   "--repeat", "3")
    assert res["makespan_s"] == pytest.approx(10 * MS)
    assert res["seconds_per_simulation"] > 0
    assert (res["repeat"], res["ops"]) == (3, 4)
    assert res["ops_per_second"] == pytest.approx(4 / res["seconds_per_simulation"])


# ---- placers / clusters --------------------------------------------------------------------


def test_placers_and_clusters(capsys):
    placers = run_json(capsys, "placers")
    assert {"single-device", "cpu-only", "random", "round-robin"} <= set(placers)
    assert all(isinstance(v, str) and v and "\n" not in v for v in placers.values())
    clusters = run_json(capsys, "clusters")
    assert {"k80x2", "k80x4", "cpu+k80x2", "cpu+k80x4", "p100x4", "v100x8", "h100x8"} <= set(clusters)
    assert "11 GB" in clusters["k80x2"]
    code, out, _ = run_cli(capsys, "placers")
    assert code == 0 and "round-robin" in out and "description" in out
    code, out, _ = run_cli(capsys, "clusters")
    assert code == 0 and "cpu+k80x4" in out


# ---- runs ----------------------------------------------------------------------------------


def test_runs_list_show_export_delete(files, capsys):
    placed = run_json(capsys, "place", files.graph, "-c", files.cluster, "--placer", "round-robin", "--save",
                      "--runs-dir", files.runs)
    run_id = placed["run_id"]

    listed = run_json(capsys, "runs", "list", "--runs-dir", files.runs)
    (row,) = listed["runs"]
    assert row["id"] == run_id
    assert (row["kind"], row["status"], row["graph"], row["cluster"], row["placer"]) == (
        "place", "done", "hand", "two", "round-robin")
    assert row["makespan_s"] == pytest.approx(8 * MS) and row["lower_bound_s"] == pytest.approx(6 * MS)

    shown = run_json(capsys, "runs", "show", run_id[:-2], "--runs-dir", files.runs)  # a unique prefix works
    assert shown["id"] == run_id and shown["schema"] == "placelab.run/1"
    assert shown["graph"]["name"] == "hand" and len(shown["graph"]["hash"]) == 16
    assert shown["metrics"]["communication_bytes"] == 2000
    assert {"run.json", "placement.json", "schedule_ops.csv"} <= set(shown["files"])

    trace_file = files.root / "trace.json"
    info = run_json(capsys, "runs", "export-trace", run_id, "-o", str(trace_file), "--runs-dir", files.runs)
    doc = json.loads(trace_file.read_text())
    assert info["events"] == len(doc["traceEvents"])
    # one complete event per op (4) plus one per transfer (b -> gpu:1)
    assert sum(e["ph"] == "X" for e in doc["traceEvents"]) == 5
    assert doc["metadata"]["makespan_s"] == pytest.approx(8 * MS)

    deleted = run_json(capsys, "runs", "delete", run_id, "--runs-dir", files.runs)
    assert deleted == {"deleted": run_id}
    assert not (Path(files.runs) / run_id).exists()
    assert run_json(capsys, "runs", "list", "--runs-dir", files.runs) == {"runs": []}


def test_runs_human(files, capsys):
    code, out, _ = run_cli(capsys, "runs", "list", "--runs-dir", files.runs)
    assert code == 0 and out.strip() == "no runs"
    run_json(capsys, "place", files.graph, "-c", files.cluster, "--placer", "single-device", "--save",
             "--runs-dir", files.runs)
    code, out, _ = run_cli(capsys, "runs", "list", "--runs-dir", files.runs)
    assert code == 0 and "single-device" in out and "10.000 ms" in out
    (run_id,) = os.listdir(files.runs)
    code, out, _ = run_cli(capsys, "runs", "show", run_id, "--runs-dir", files.runs)
    assert code == 0 and f"id: {run_id}" in out and "status: done" in out
    code, out, _ = run_cli(capsys, "runs", "delete", run_id, "--runs-dir", files.runs)
    assert code == 0 and out.strip() == f"deleted {run_id}"


def test_runs_dir_from_environment(files, capsys, monkeypatch):
    monkeypatch.setenv("PLACELAB_RUNS_DIR", files.runs)
    res = run_json(capsys, "place", files.graph, "-c", files.cluster, "--placer", "single-device", "--save")
    assert (Path(files.runs) / res["run_id"] / "run.json").is_file()


# ---- the installed entry point -------------------------------------------------------------


def test_console_script_entry_point(files):
    (ep,) = entry_points(group="console_scripts", name="placelab")
    assert ep.value == "placelab.cli:main"
    script = Path(sys.executable).with_name("placelab")
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "placelab.cli"]
    ok = subprocess.run([*cmd, "simulate", files.graph, "-c", files.cluster, "--placement", files.all_gpu0,
                         "--json"], capture_output=True, text=True, timeout=300, check=False)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["makespan_s"] == pytest.approx(10 * MS)
    bad = subprocess.run([*cmd, "graph", "info", str(files.root / "missing.json")], capture_output=True,
                         text=True, timeout=300, check=False)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.count("\n") == 1 and "missing.json: no such file" in bad.stderr
