"""Tests for engine.sim.trace: Chrome Trace Event export of a schedule.

The expected timestamps are worked out by hand from CONTRACTS §4 for a five-op graph:

    a (10 µs, 4000 B) on gpu:0 ─┬─> b (5 µs) on gpu:1 ──┐
                                ├─> c (3 µs, 2000 B) on gpu:2 ─> e (2 µs) on gpu:1
                                └─> d (0 µs) on gpu:0

with a 1 GB/s link (1000 bytes per µs), δ1 = 1 µs after every non-zero op and δ2 = 2 µs
after every transfer.
"""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter

import numpy as np
import pytest

from engine.cluster import Cluster, Device, Link, SimulationSettings
from engine.generators import random_dag
from engine.graph.compgraph import CompGraph
from engine.sim.simulator import simulate
from engine.sim.trace import (
    COMPUTE_TID,
    MEMCPY_TID,
    device_pid,
    schedule_to_chrome_trace,
)

US = 1e-6
A, B, C, D, E = range(5)
X_KEYS = {"name", "ph", "ts", "dur", "pid", "tid"}


def tiny_graph() -> CompGraph:
    return CompGraph(
        "tiny", ["a", "b", "c", "d", "e"],
        compute_any=np.array([10, 5, 3, 0, 2]) * US,
        output_bytes=np.array([4000, 1000, 2000, 0, 500], dtype=float),
        persistent_bytes=np.array([100, 200, 300, 0, 0], dtype=float),
        edge_src=[A, A, A, B, C], edge_dst=[B, C, D, E, E],
        op_types=["MatMul", "Relu", "Conv2D", "NoOp", "Add"],
        phase=["forward", "forward", "backward", None, None],
        scope=["enc/l1", "enc/l1", "dec", "", ""],
    )


def tiny_cluster(mode: str, latency: float = 0.0) -> Cluster:
    devices = tuple(Device(f"gpu:{i}", "gpu", 1e9) for i in range(3))
    return Cluster(f"tiny-{mode}", devices, Link(1e9, latency), (),
                   SimulationSettings(mode, op_overhead_s=1 * US, transfer_gap_s=2 * US))


PLACEMENT = np.array([0, 1, 2, 0, 1])


def trace(mode: str, *, latency: float = 0.0, record_memory: bool = False):
    graph, cluster = tiny_graph(), tiny_cluster(mode, latency)
    schedule = simulate(graph, cluster, PLACEMENT, record_memory=record_memory)
    return schedule, schedule_to_chrome_trace(schedule, graph, cluster)


def by_ph(doc: dict, ph: str) -> list[dict]:
    return [e for e in doc["traceEvents"] if e["ph"] == ph]


def op_event(doc: dict, name: str) -> dict:
    (event,) = [e for e in by_ph(doc, "X") if e["name"] == name and e["cat"] != "transfer"]
    return event


# ---- placeto mode: one shared transfer for a ---------------------------------------------


def test_event_counts_per_phase_placeto():
    _, doc = trace("placeto")
    counts = Counter(e["ph"] for e in doc["traceEvents"])
    # 3 devices x (process name + sort index + 2 x (thread name + sort index)) = 18;
    # 5 ops + 2 channel transfers (a -> gpu:1,gpu:2 shared; c -> gpu:1) = 7;
    # 3 transfer rows -> 3 flow starts and 3 flow ends; no memory recorded -> no counters.
    assert counts == {"M": 18, "X": 7, "s": 3, "f": 3}


def test_op_times_in_microseconds_placeto():
    schedule, doc = trace("placeto")
    # a: 0-10; d (local, zero-duration) after a's δ1 at 11; a's transfer 10-14 lands b and
    # c at 14; c ends 17, its transfer 17-19; e waits for gpu:1's δ1 after b (19 + 1 = 20).
    expected = {"a": (0, 10), "b": (14, 5), "c": (14, 3), "d": (11, 0), "e": (20, 2)}
    for name, (ts, dur) in expected.items():
        event = op_event(doc, name)
        assert event["ts"] == pytest.approx(ts, abs=1e-9), name
        assert event["dur"] == pytest.approx(dur, abs=1e-9), name
    assert schedule.makespan == pytest.approx(23 * US)  # e ends at 22, + δ1
    assert doc["metadata"]["makespan_s"] == pytest.approx(23 * US)


def test_zero_duration_op_is_kept():
    _, doc = trace("placeto")
    d = op_event(doc, "d")
    assert d["dur"] == 0.0
    assert d["cat"] == "op"  # no phase


def test_op_args_and_categories():
    _, doc = trace("placeto")
    a = op_event(doc, "a")
    assert a["cat"] == "forward"
    assert a["args"] == {"index": 0, "type": "MatMul", "scope": "enc/l1", "phase": "forward",
                         "compute_s": pytest.approx(10 * US), "output_bytes": 4000.0}
    assert op_event(doc, "c")["cat"] == "backward"
    assert op_event(doc, "e")["args"]["phase"] is None


def test_pid_tid_mapping():
    _, doc = trace("placeto")
    for name, dev in zip("abcde", PLACEMENT.tolist(), strict=True):
        event = op_event(doc, name)
        assert (event["pid"], event["tid"]) == (device_pid(dev), COMPUTE_TID)
    assert [device_pid(d) for d in range(3)] == [1, 2, 3]
    meta = by_ph(doc, "M")
    names = {(e["pid"], e["tid"], e["name"]): e["args"] for e in meta}
    for d in range(3):
        pid = device_pid(d)
        assert names[(pid, 0, "process_name")] == {"name": f"gpu:{d} (gpu)"}
        assert names[(pid, 0, "process_sort_index")] == {"sort_index": d}
        assert names[(pid, COMPUTE_TID, "thread_name")] == {"name": "compute"}
        assert names[(pid, MEMCPY_TID, "thread_name")] == {"name": "memcpy (send)"}
        assert names[(pid, COMPUTE_TID, "thread_sort_index")]["sort_index"] < \
            names[(pid, MEMCPY_TID, "thread_sort_index")]["sort_index"]


def test_shared_placeto_transfer_is_drawn_once():
    _, doc = trace("placeto")
    sends = [e for e in by_ph(doc, "X") if e["cat"] == "transfer"]
    assert [(e["name"], e["pid"], e["tid"]) for e in sends] == [
        ("send a → gpu:1, gpu:2", device_pid(0), MEMCPY_TID),
        ("send c → gpu:1", device_pid(2), MEMCPY_TID),
    ]
    a_send, c_send = sends
    assert (a_send["ts"], a_send["dur"]) == (pytest.approx(10), pytest.approx(4))  # 4000 B at 1000 B/µs
    assert (c_send["ts"], c_send["dur"]) == (pytest.approx(17), pytest.approx(2))
    assert a_send["args"] == {"bytes": 4000.0, "src": "gpu:0", "dst": ["gpu:1", "gpu:2"],
                              "op": "a", "arrival_s": pytest.approx(14 * US)}


def test_flows_placeto():
    _, doc = trace("placeto")
    starts, ends = by_ph(doc, "s"), by_ph(doc, "f")
    # Flow starts sit on the sender's memcpy thread at the transfer start; flow ends on the
    # receiver's compute thread at the start of the first op there that reads the tensor.
    assert [(e["pid"], e["tid"], e["ts"]) for e in starts] == [
        (device_pid(0), MEMCPY_TID, pytest.approx(10)),
        (device_pid(0), MEMCPY_TID, pytest.approx(10)),
        (device_pid(2), MEMCPY_TID, pytest.approx(17)),
    ]
    assert [(e["pid"], e["tid"], e["ts"]) for e in ends] == [
        (device_pid(1), COMPUTE_TID, pytest.approx(14)),  # b
        (device_pid(2), COMPUTE_TID, pytest.approx(14)),  # c
        (device_pid(1), COMPUTE_TID, pytest.approx(20)),  # e
    ]
    assert all(e["bp"] == "e" for e in ends)


# ---- default mode: one transfer per destination, latency pipelined ------------------------


def test_default_mode_transfers_and_latency():
    _, doc = trace("default", latency=1 * US)
    counts = Counter(e["ph"] for e in doc["traceEvents"])
    assert counts == {"M": 18, "X": 8, "s": 3, "f": 3}  # 5 ops + 3 sends
    sends = [e for e in by_ph(doc, "X") if e["cat"] == "transfer"]
    # gpu:0 sends a to gpu:1 at 10 (lands 10 + 1 + 4 = 15), then to gpu:2 after δ2 at 16
    # (lands 21); c (21-24) goes to gpu:1 at 24 (lands 27). Slices show the copy only.
    assert [(e["name"], e["ts"], e["dur"], e["args"]["arrival_s"]) for e in sends] == [
        ("send a → gpu:1", pytest.approx(10), pytest.approx(4), pytest.approx(15 * US)),
        ("send a → gpu:2", pytest.approx(16), pytest.approx(4), pytest.approx(21 * US)),
        ("send c → gpu:1", pytest.approx(24), pytest.approx(2), pytest.approx(27 * US)),
    ]
    assert [e["ts"] for e in by_ph(doc, "f")] == [pytest.approx(15), pytest.approx(21),
                                                   pytest.approx(27)]
    assert op_event(doc, "e")["ts"] == pytest.approx(27)
    assert doc["metadata"]["mode"] == "default"
    assert doc["metadata"]["makespan_s"] == pytest.approx(30 * US)


# ---- memory counters ----------------------------------------------------------------------


def test_memory_counters_follow_the_timeline():
    schedule, doc = trace("placeto", record_memory=True)
    timeline = schedule.memory_timeline()
    counters = by_ph(doc, "C")
    assert len(counters) == sum(len(t) for t in timeline.times)
    for d in range(3):
        mine = [e for e in counters if e["pid"] == device_pid(d)]
        assert [e["ts"] for e in mine] == pytest.approx((timeline.times[d] / US).tolist())
        assert [e["args"]["bytes"] for e in mine] == timeline.bytes[d].tolist()
        assert all(e["name"] == "memory" for e in mine)
    # By hand (persistent + outputs + received copies, CONTRACTS §4):
    # gpu:0 holds a's output (4000) from 0 until its transfer lands at 14;
    # gpu:1 gets a's copy and b's output at 14, frees the copy when b ends (19), gets c's
    # copy at 19, e's output at 20, and frees everything at e's end (22);
    # gpu:2 gets a's copy and c's output at 14, frees the copy at 17 and c's output once
    # c's transfer lands (19).
    expected = {
        0: [(0, 4100), (14, 100)],
        1: [(0, 200), (14, 5200), (19, 1200), (19, 3200), (20, 3700), (22, 200)],
        2: [(0, 300), (14, 6300), (17, 2300), (19, 300)],
    }
    for d, steps in expected.items():
        mine = [(e["ts"], e["args"]["bytes"]) for e in counters if e["pid"] == device_pid(d)]
        assert mine == [(pytest.approx(t), b) for t, b in steps]
        assert max(b for _, b in steps) == schedule.peak_memory[d]


def test_no_memory_counters_without_record_memory():
    _, doc = trace("default")
    assert by_ph(doc, "C") == []


# ---- structure, serialization, files ------------------------------------------------------


def check_structure(doc: dict) -> None:
    assert set(doc) == {"traceEvents", "displayTimeUnit", "metadata"}
    assert doc["displayTimeUnit"] == "ms"
    events = doc["traceEvents"]
    phs = [e["ph"] for e in events]
    n_meta = phs.count("M")
    assert phs[:n_meta] == ["M"] * n_meta, "metadata events must come first"
    for e in events:
        if e["ph"] == "X":
            assert set(e) >= X_KEYS, e
            assert e["dur"] >= 0 and math.isfinite(e["ts"]) and math.isfinite(e["dur"])
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert len(starts) == phs.count("s") and len(ends) == phs.count("f"), "flow ids repeat"
    assert starts.keys() == ends.keys()
    for fid, s in starts.items():
        f = ends[fid]
        assert (s["cat"], s["name"]) == (f["cat"], f["name"]) == ("transfer", s["name"])
        assert f["bp"] == "e" and f["tid"] == COMPUTE_TID and s["tid"] == MEMCPY_TID
        assert s["ts"] <= f["ts"]
    json.dumps(doc, allow_nan=False)


@pytest.mark.parametrize("mode", ["placeto", "default"])
def test_structure_tiny(mode):
    _, doc = trace(mode, record_memory=True)
    check_structure(doc)


def tracks(doc: dict, tid: int, cat_filter) -> dict[int, list[tuple[float, float]]]:
    out: dict[int, list[tuple[float, float]]] = {}
    for e in by_ph(doc, "X"):
        if e["tid"] == tid and cat_filter(e["cat"]):
            out.setdefault(e["pid"], []).append((e["ts"], e["ts"] + e["dur"]))
    return out


@pytest.mark.parametrize("cluster_mode", ["placeto", "default"])
def test_random_graph_trace_is_well_formed(cluster_mode):
    graph = random_dag(ops=300, degree=2.0, seed=3)
    devices = tuple(Device(f"gpu:{i}", "gpu", 1e12) for i in range(4))
    cluster = Cluster("r4", devices, Link(5e9, 3e-6), (),
                      SimulationSettings(cluster_mode, op_overhead_s=2e-6, transfer_gap_s=1e-6))
    placement = np.random.default_rng(0).integers(0, 4, graph.num_ops)
    schedule = simulate(graph, cluster, placement, record_memory=True)
    doc = schedule_to_chrome_trace(schedule, graph, cluster, name="r")
    check_structure(doc)
    counts = Counter(e["ph"] for e in doc["traceEvents"])
    rows = len(schedule.transfer_op)
    assert counts["X"] == graph.num_ops + int(schedule.transfer_primary.sum())
    assert counts["s"] == counts["f"] == rows
    # Slices on one thread never overlap (Perfetto needs them nested or disjoint).
    for tid, keep in ((COMPUTE_TID, lambda c: c != "transfer"), (MEMCPY_TID, lambda c: c == "transfer")):
        for spans in tracks(doc, tid, keep).values():
            spans.sort()
            for (_, end), (nxt, _) in itertools.pairwise(spans):
                assert end <= nxt + 1e-6
    # Every flow end sits on the start of an op on its thread, so it binds to that slice.
    starts = {(e["pid"], round(e["ts"], 6)) for e in by_ph(doc, "X") if e["tid"] == COMPUTE_TID}
    assert all((f["pid"], round(f["ts"], 6)) in starts for f in by_ph(doc, "f"))
    assert doc["metadata"]["name"] == "r"


def test_trace_metadata_names_graph_and_cluster():
    graph, cluster = tiny_graph(), tiny_cluster("placeto")
    doc = schedule_to_chrome_trace(simulate(graph, cluster, PLACEMENT), graph, cluster)
    assert doc["metadata"]["graph"] == "tiny"
    assert doc["metadata"]["cluster"] == "tiny-placeto"
    assert doc["metadata"]["name"] == "tiny on tiny-placeto"


def test_mismatched_schedule_is_rejected():
    graph, cluster = tiny_graph(), tiny_cluster("placeto")
    schedule = simulate(graph, cluster, PLACEMENT)
    other = random_dag(ops=7)
    with pytest.raises(ValueError, match="7 ops"):
        schedule_to_chrome_trace(schedule, other, cluster)


# ---- work_conserving: a transfer's whole time is drawn ----------------------------------------


def test_work_conserving_sends_are_drawn_for_their_whole_time():
    """No channel pipelines the latency here (CONTRACTS §4 is about default mode): a send lasts latency +
    bytes / bandwidth, as the schedule's transfer rows and schedule_transfers.csv say."""
    graph = tiny_graph()
    cluster = Cluster("tiny-wc", tuple(Device(f"gpu:{i}", "gpu", 1e9) for i in range(3)), Link(1e9, 1 * US), (),
                      SimulationSettings("work_conserving"))
    schedule = simulate(graph, cluster, PLACEMENT)
    doc = schedule_to_chrome_trace(schedule, graph, cluster)
    sends = sorted((e["name"], e["ts"], e["dur"]) for e in by_ph(doc, "X") if e["cat"] == "transfer")
    # a (0-10 us on gpu:0) sends 4000 B to gpu:1 and gpu:2: 1 + 4 us each, both at 10; c (on gpu:2 from 15 to
    # 18) sends 2000 B to gpu:1 at 18: 1 + 2 us
    assert sends == [("send a → gpu:1", pytest.approx(10), pytest.approx(5)),
                     ("send a → gpu:2", pytest.approx(10), pytest.approx(5)),
                     ("send c → gpu:1", pytest.approx(18), pytest.approx(3))]
    rows = schedule.transfer_end - schedule.transfer_start
    assert sorted(e[2] for e in sends) == pytest.approx(sorted(rows / US))
