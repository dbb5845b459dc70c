"""Tests for engine.store.summary: graph_summary and run_summary, with numbers worked out by hand.

The graph (seconds; bytes)::

    a (1, out 100, persistent 10) ─┬─> b (gpu 2 | cpu 5, out 200) ─┬─> d (cpu 4 only, persistent 5)
                                   └─> c (3, temp 40)             ─┘
    e (0.5)  on its own;  b and c form colocation group "g"

* fastest-kind compute: 1 + 2 + 3 + 4 + 0.5 = 10.5 s; critical path a→c→d = 1 + 3 + 4 = 8 s
  (a→b→d is 7 s).
* levels: {a, e}, {b, c}, {d} → profile [2, 2, 1].
* units to place: a, {b, c}, d, e → 4. Mirhoseini §3.3 rule: a's only consumer is {b, c}, and
  {a, b, c}'s only consumer is d → {a, b, c, d}, e → 2. Layer units (no scopes): a is a variable
  (a source with persistent bytes) whose users all lie in {b, c} → joins; d (a sink) and e stay → 3.
* per kind: gpu = a 1 + b 2 + c 3 + e 0.5 = 6.5 (d cannot run there); cpu = 1 + 5 + 3 + 4 + 0.5
  = 13.5; "any" (the ops with one time for every kind) = 1 + 3 + 0.5 = 4.5.
* memory: persistent 15, outputs 300, largest temp 40 → 355 bytes needed on one device.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.cluster import Cluster, Device, Link
from engine.graph.io import graph_from_dict
from engine.store.runs import RunStore
from engine.store.summary import graph_summary, run_summary

GRAPH = graph_from_dict({
    "schema": "placelab.graph/1", "name": "summary",
    "ops": [
        {"name": "a", "compute": 1.0, "output_bytes": 100, "persistent_bytes": 10},
        {"name": "b", "compute": {"gpu": 2.0, "cpu": 5.0}, "output_bytes": 200, "colocate": "g"},
        {"name": "c", "compute": 3.0, "temp_bytes": 40, "colocate": "g"},
        {"name": "d", "compute": {"cpu": 4.0}, "persistent_bytes": 5},
        {"name": "e", "compute": 0.5},
    ],
    "edges": [{"src": "a", "dst": "b"}, {"src": "a", "dst": "c"}, {"src": "b", "dst": "d"},
              {"src": "c", "dst": "d"}],
})


def cluster(cpu_memory: float, gpu_memory: float) -> Cluster:
    return Cluster("cg", (Device("cpu:0", "cpu", cpu_memory), Device("gpu:0", "gpu", gpu_memory)), Link(1e9))


def test_graph_summary_numbers():
    info = graph_summary(GRAPH)
    assert info["name"] == "summary"
    assert (info["ops"], info["edges"], info["groups"]) == (5, 4, 4)
    assert (info["rule_groups"], info["unit_groups"]) == (2, 3)
    assert info["total_compute_s"] == pytest.approx(10.5)
    assert info["critical_path_s"] == pytest.approx(8.0)
    assert info["compute_by_kind_s"] == pytest.approx({"gpu": 6.5, "cpu": 13.5, "any": 4.5})
    assert (info["persistent_bytes"], info["output_bytes"], info["temp_bytes_max"]) == (15.0, 300.0, 40.0)
    assert (info["levels"], info["max_width"], info["parallelism_profile"]) == (3, 2, [2, 2, 1])
    assert not {"cluster", "lower_bound_s", "fits_one_device"} & set(info)


def test_graph_summary_with_cluster():
    info = graph_summary(GRAPH, cluster(1000, 500))
    assert info["cluster"] == "cg"
    # fastest device per op is the same as the fastest kind here (speed 1): path 8 s,
    # work 10.5 / 2 = 5.25 s
    assert info["lower_bound_s"] == pytest.approx(8.0)
    assert info["fits_one_device"] is True  # 355 <= 1000 (the larger device)
    assert graph_summary(GRAPH, cluster(355, 100))["fits_one_device"] is True  # exactly fits
    assert graph_summary(GRAPH, cluster(354, 354))["fits_one_device"] is False


def test_single_device_peak_is_simulated_on_the_largest_device_that_runs_every_op():
    """Only cpu:0 runs d. On it (default mode, ties by op index): a 0–1, b 1–6, c 6–9, d 9–13, e 13–13.5.
    While c runs: persistent 15 + a's output 100 (c still to finish) + b's 200 (d to come) + c's temp 40
    = 355 bytes, the peak. A chain that frees its outputs peaks below the every-output-at-once test."""
    info = graph_summary(GRAPH, cluster(1000, 5000))
    assert (info["single_device"], info["single_device_peak_bytes"], info["single_device_memory_bytes"]) == (
        "cpu:0", 355.0, 1000.0)
    chain = graph_from_dict({"schema": "placelab.graph/1", "name": "chain",
                             "ops": [{"name": f"o{i}", "compute": 1.0, "output_bytes": 100} for i in range(4)],
                             "edges": [{"src": f"o{i}", "dst": f"o{i + 1}"} for i in range(3)]})
    info = graph_summary(chain, cluster(250, 150))
    # at most two outputs live at once: o_i's until o_{i+1} has finished -> 200 on cpu:0 (the larger)
    assert not info["fits_one_device"] and info["single_device_peak_bytes"] == 200.0
    assert info["single_device"] == "cpu:0"
    gpu_only = graph_from_dict({"schema": "placelab.graph/1", "name": "g",
                                "ops": [{"name": "x", "compute": {"gpu": 1.0}}, {"name": "y", "compute": {"cpu": 1.0}}],
                                "edges": []})
    assert graph_summary(gpu_only, cluster(10, 10))["single_device"] is None


def test_graph_summary_independent_levels():
    # the profile must agree with a plain longest-path level computation
    level = {}
    for name, preds in [("a", []), ("b", ["a"]), ("c", ["a"]), ("d", ["b", "c"]), ("e", [])]:
        level[name] = 1 + max((level[p] for p in preds), default=-1)
    assert np.bincount(list(level.values())).tolist() == graph_summary(GRAPH)["parallelism_profile"]


def test_run_summary_fields(tmp_path):
    store = RunStore(tmp_path)
    run = store.create("place", graph_name="summary", graph_hash=GRAPH.content_hash, cluster="cg",
                       placer="random", parameters={"budget": None}, seed=4, tags=["x"])
    run.finish("done", {"makespan_s": 9.5, "lower_bound_s": 8.0, "oom": False, "other": 1})
    s = run_summary(store.load(run.id))
    assert s == {"id": run.id, "name": run.id, "kind": "place", "status": "done",
                 "created": run.meta["created"], "graph": "summary", "cluster": "cg", "placer": "random",
                 "seed": 4, "tags": ["x"], "makespan_s": 9.5, "lower_bound_s": 8.0, "oom": False}


def test_run_summary_without_metrics(tmp_path):
    run = RunStore(tmp_path).create("train", graph_name="g", graph_hash="h", cluster="k80x2", placer=None,
                                    parameters={}, seed=None)
    run.fail("boom")
    s = run_summary(run)
    assert (s["status"], s["placer"], s["makespan_s"], s["lower_bound_s"], s["oom"]) == (
        "failed", None, None, None, None)
