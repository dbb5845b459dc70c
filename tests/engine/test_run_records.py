"""Tests for engine.store.records: storing a placed-and-simulated run and reading it back.

Graph and schedule, worked out by hand (1 GB/s link, so 10^6 bytes take 1 ms; no overheads)::

    a (1 ms, out 10^6 B) on gpu:0 ─┬─> b (1 ms) on gpu:1
                                   ├─> c (2 ms) on gpu:2
                                   └─> d (0.5 ms) on gpu:0   (local: no transfer)

* placeto mode: one transfer of a's output serves gpu:1 and gpu:2 (two rows, one primary),
  over [1, 2] ms; b runs [2, 3], c [2, 4], d [1, 1.5] → makespan 4 ms.
* default mode: one transfer per destination, serialized on gpu:0's channel: to gpu:1 over
  [1, 2], to gpu:2 over [2, 3]; b [2, 3], c [3, 5] → makespan 5 ms.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from engine.cluster import Cluster, Device, Link, SimulationSettings
from engine.errors import RunError
from engine.graph.io import graph_from_dict
from engine.placement import Placement
from engine.sim.simulator import Simulator
from engine.store.records import (
    ESTIMATE_TOLERANCE,
    SINGLE_DEVICE_KEYS,
    estimate_error,
    estimate_warning,
    export_trace,
    load_placement_run,
    placement_metrics,
    save_placement_run,
    single_device_metrics,
)
from engine.store.runs import RunStore
from engine.store.summary import run_summary

MS = 1e-3
DEVICES = [0, 1, 2, 0]  # a, b, c, d

GRAPH = graph_from_dict({
    "schema": "placelab.graph/1", "name": "fanout",
    "ops": [
        {"name": "a", "type": "MatMul", "compute": {"gpu": 0.001, "cpu": 0.004}, "output_bytes": 1_000_000,
         "persistent_bytes": 500, "phase": "forward", "scope": "enc/l1"},
        {"name": "b", "compute": 0.001, "colocate": "tail", "phase": "backward"},
        {"name": "c", "compute": 0.002, "temp_bytes": 64, "device": "gpu:2"},
        {"name": "d", "compute": 0.0005, "colocate": "head"},
    ],
    "edges": [{"src": "a", "dst": "b"}, {"src": "a", "dst": "c"}, {"src": "a", "dst": "d", "bytes": 7}],
})


def cluster(mode: str) -> Cluster:
    devices = tuple(Device(f"gpu:{i}", "gpu", 1e9) for i in range(3))
    return Cluster(f"three-{mode}", devices, Link(1e9), (), SimulationSettings(mode), "three GPUs")


def save(tmp_path, mode: str = "placeto", placement: Placement | None = None, **kw):
    c = cluster(mode)
    p = Placement(np.array(DEVICES)) if placement is None else placement
    schedule = Simulator(GRAPH, c).run(p)
    store = RunStore(tmp_path / "runs")
    args = dict(placer="manual", parameters={"note": "by hand"}, seed=3, seconds_to_place=0.25)
    args.update(kw)
    run = save_placement_run(store, GRAPH, c, p, schedule, **args)
    return store, run, schedule


@pytest.mark.parametrize(("mode", "expected"), [("placeto", 4 * MS), ("default", 5 * MS)])
def test_hand_makespans(mode, expected):
    assert Simulator(GRAPH, cluster(mode)).run(Placement(np.array(DEVICES))).makespan == pytest.approx(expected)


def test_save_writes_run_files(tmp_path):
    _, run, schedule = save(tmp_path, tags=["hand"], extra_metrics={"episodes": 0})
    assert run.files() == ["cluster.json", "graph.json", "placement.json", "run.json", "schedule_ops.csv",
                           "schedule_transfers.csv"]
    meta = json.loads((run.path / "run.json").read_text())
    assert meta["status"] == "done" and meta["kind"] == "place" and meta["placer"] == "manual"
    assert meta["graph"] == {"name": "fanout", "hash": GRAPH.content_hash}
    assert (meta["cluster"], meta["seed"], meta["parameters"], meta["tags"]) == (
        "three-placeto", 3, {"note": "by hand"}, ["hand"])
    m = meta["metrics"]
    assert m["makespan_s"] == pytest.approx(4 * MS)
    # lower bound: path a -> c = 1 + 2 = 3 ms; work 4.5 ms / 3 devices = 1.5 ms
    assert m["lower_bound_s"] == pytest.approx(3 * MS)
    assert m["seconds_to_place"] == 0.25 and m["episodes"] == 0
    assert m["communication_bytes"] == 1_000_000  # one shared placeto transfer
    assert m == {**placement_metrics(GRAPH, cluster("placeto"), schedule), "seconds_to_place": 0.25,
                 "episodes": 0}
    assert json.loads((run.path / "placement.json").read_text()) == {
        "schema": "placelab.placement/1", "graph": "fanout", "cluster": "three-placeto",
        "devices": {"a": "gpu:0", "b": "gpu:1", "c": "gpu:2", "d": "gpu:0"}}


def test_schedule_tables(tmp_path):
    _, run, _ = save(tmp_path)
    ops = run.read_table("schedule_ops.csv")
    assert ops["op"] == ["a", "b", "c", "d"] and ops["index"] == [0, 1, 2, 3]
    assert ops["device"] == ["gpu:0", "gpu:1", "gpu:2", "gpu:0"]
    # d runs on a's device as soon as a is done; b and c once the shared transfer has arrived
    assert ops["start_s"] == pytest.approx([0.0, 2 * MS, 2 * MS, 1 * MS])
    assert ops["end_s"] == pytest.approx([1 * MS, 3 * MS, 4 * MS, 1.5 * MS])
    assert ops["phase"] == ["forward", "backward", None, None]
    tr = run.read_table("schedule_transfers.csv")
    assert (tr["op"], tr["src"], tr["dst"]) == (["a", "a"], ["gpu:0", "gpu:0"], ["gpu:1", "gpu:2"])
    assert tr["bytes"] == [1_000_000.0, 1_000_000.0]
    assert tr["start_s"] == pytest.approx([1 * MS, 1 * MS]) and tr["end_s"] == pytest.approx([2 * MS, 2 * MS])


@pytest.mark.parametrize("mode", ["placeto", "default"])
def test_round_trip(tmp_path, mode):
    store, run, schedule = save(tmp_path, mode)
    pr = load_placement_run(store.load(run.id))
    assert pr.run.id == run.id
    assert pr.graph.content_hash == GRAPH.content_hash == run.meta["graph"]["hash"]
    assert pr.graph.op_names == GRAPH.op_names and pr.graph.pin == GRAPH.pin
    assert pr.cluster == cluster(mode)
    assert pr.placement.devices.tolist() == DEVICES
    again = Simulator(pr.graph, pr.cluster).run(pr.placement)
    assert again.makespan == run.meta["metrics"]["makespan_s"] == schedule.makespan
    np.testing.assert_array_equal(again.op_start, schedule.op_start)
    np.testing.assert_array_equal(again.peak_memory, schedule.peak_memory)


def test_run_summary_of_saved_run(tmp_path):
    store, run, _ = save(tmp_path, kind="compare")
    s = run_summary(store.load(run.id))
    assert (s["id"], s["kind"], s["status"], s["graph"], s["cluster"], s["placer"], s["seed"]) == (
        run.id, "compare", "done", "fanout", "three-placeto", "manual", 3)
    assert s["makespan_s"] == pytest.approx(4 * MS) and s["lower_bound_s"] == pytest.approx(3 * MS)
    assert s["oom"] is False


@pytest.mark.parametrize(("mode", "primary"), [("placeto", 1), ("default", 2)])
def test_export_trace(tmp_path, mode, primary):
    store, run, _ = save(tmp_path, mode)
    out = tmp_path / "trace.json"
    info = export_trace(store.load(run.id), str(out))
    doc = json.loads(out.read_text())
    assert info == {"run_id": run.id, "path": str(out), "events": len(doc["traceEvents"])}
    x_events = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    # one complete event per op, one per channel transfer (placeto: a's shared transfer once)
    assert len(x_events) == 4 + primary
    sends = [e for e in x_events if e["cat"] == "transfer"]
    assert len(sends) == primary and all(e["args"]["op"] == "a" for e in sends)
    # one flow arrow (start + end) per transfer row: two rows in both modes
    assert sum(e["ph"] in ("s", "f") for e in doc["traceEvents"]) == 4
    assert any(e["ph"] == "C" for e in doc["traceEvents"])  # memory counters (record_memory)
    assert doc["metadata"]["transfers"] == primary
    assert doc["metadata"]["makespan_s"] == pytest.approx(run.meta["metrics"]["makespan_s"])
    (c_event,) = [e for e in x_events if e["name"] == "c"]
    assert c_event["dur"] == pytest.approx(2000.0)  # 2 ms in microseconds


def test_load_run_without_placement(tmp_path):
    store = RunStore(tmp_path / "runs")
    run = store.create("train", graph_name="g", graph_hash="h", cluster="k80x2", placer=None, parameters={},
                       seed=None)
    run.write_json("placement.json", {})
    with pytest.raises(RunError) as err:
        load_placement_run(run)
    assert str(err.value) == f"run {run.id} has no placement to show (missing graph.json, cluster.json)"
    with pytest.raises(RunError):
        export_trace(run, str(tmp_path / "t.json"))
    assert not (tmp_path / "t.json").exists()


def test_the_placers_estimate_is_stored_beside_the_simulated_makespan(tmp_path):
    """Issue 55: default mode simulates 5 ms (module docstring); a placer that predicted 4 ms has that stored as
    ``predicted_makespan_s``, 20 % under the simulation: a warning (more than 5 % off)."""
    estimated = Placement(np.array(DEVICES), predicted_makespan_s=4 * MS)
    store, run, schedule = save(tmp_path, "default", placement=estimated)
    m = store.load(run.id).meta["metrics"]
    assert m["makespan_s"] == pytest.approx(5 * MS) and m["predicted_makespan_s"] == 4 * MS
    assert m == {**placement_metrics(GRAPH, cluster("default"), schedule, 4 * MS), "seconds_to_place": 0.25}
    assert estimate_error(m["makespan_s"], m["predicted_makespan_s"]) == pytest.approx(-0.2)
    assert estimate_warning(m["makespan_s"], m["predicted_makespan_s"]) == "est. off by -20 %"
    # a placer that predicts nothing: null, and nothing to warn about
    _, plain, _ = save(tmp_path / "plain", "default")
    assert plain.meta["metrics"]["predicted_makespan_s"] is None
    assert estimate_warning(5 * MS, None) is None and estimate_error(5 * MS, None) is None


@pytest.mark.parametrize(("predicted_ms", "warning"), [
    (5.0, None), (5.2, None), (4.8, None),  # 4 % either way: within the 5 % tolerance
    (6.9, "est. off by +38 %"), (3.0, "est. off by -40 %"), (5.3, "est. off by +6 %")])
def test_estimate_warning_beyond_five_percent(predicted_ms, warning):
    assert ESTIMATE_TOLERANCE == 0.05
    assert estimate_warning(5 * MS, predicted_ms * MS) == warning


def test_ratio_to_single_device():
    # 8 ms against single-device's 10 ms; undefined (None) without a single-device makespan or with a zero one
    assert single_device_metrics(8 * MS, 10 * MS) == {"single_device_makespan_s": 10 * MS,
                                                      "ratio_to_single_device": pytest.approx(0.8)}
    assert single_device_metrics(8 * MS, None) == {"single_device_makespan_s": None, "ratio_to_single_device": None}
    assert single_device_metrics(0.0, 0.0)["ratio_to_single_device"] is None
    assert tuple(single_device_metrics(1.0, 1.0)) == SINGLE_DEVICE_KEYS


def test_a_run_stored_before_estimates_were_recorded_still_loads(tmp_path):
    store, run, _ = save(tmp_path, "default")
    meta = json.loads((run.path / "run.json").read_text())
    for key in ("predicted_makespan_s", *SINGLE_DEVICE_KEYS):
        meta["metrics"].pop(key, None)
    (run.path / "run.json").write_text(json.dumps(meta))
    old = store.load(run.id)
    assert "predicted_makespan_s" not in old.meta["metrics"]
    pr = load_placement_run(old)
    assert pr.placement.predicted_makespan_s is None and pr.placement.devices.tolist() == DEVICES
    assert run_summary(old)["makespan_s"] == pytest.approx(5 * MS)
