"""``placelab.runner.compare`` reports, per placer, the simulated makespan, the placer's own estimate, ×single-device
and ×lower bound, and stores them with each run (issue 55).

Worked out by hand on four ops and two GPUs, default mode, no overheads, a 1 MB/s link (1000 B take 1 ms)::

    a (1 ms, out 1000 B) ──> b (2 ms, out 2000 B) ──> c (3 ms);   d (4 ms) independent

* single-device: a, d, b, c one after another → 10 ms. Lower bound max(6 ms path, 10 ms / 2) = 6 ms.
* round-robin (a, d, b, c dealt to gpu:0, gpu:1, gpu:0, gpu:1): b's 2000 B reach gpu:1 at 5 ms, c [5, 8]
  → 8 ms: ×single-device 0.80, ×LB 1.33.
* heft: a, b, c on one device [0, 6], d on the other [0, 4]: its own schedule ends at 6 ms and so does the
  simulation: estimate 6 ms, ×single-device 0.60, ×LB 1.00.
"""

from __future__ import annotations

import pytest

from engine.cluster import Cluster, Device, Link, SimulationSettings
from engine.graph.io import graph_from_dict
from engine.store.runs import RunStore
from placelab.runner import compare, place_and_simulate, search_budget, single_device_makespan

MS = 1e-3


def hand() -> tuple:
    g = graph_from_dict({"schema": "placelab.graph/1", "name": "hand", "ops": [
        {"name": "a", "compute": 1e-3, "output_bytes": 1000}, {"name": "d", "compute": 4e-3},
        {"name": "b", "compute": 2e-3, "output_bytes": 2000}, {"name": "c", "compute": 3e-3}],
        "edges": [{"src": "a", "dst": "b"}, {"src": "b", "dst": "c"}]})
    devices = tuple(Device(f"gpu:{i}", "gpu", 1e9) for i in range(2))
    return g, Cluster("two", devices, Link(1e6), (), SimulationSettings("default"))


def test_every_row_has_its_estimate_and_its_ratios_single_device_simulated_when_not_asked_for():
    g, c = hand()
    assert single_device_makespan(g, c) == pytest.approx(10 * MS)
    rows = {r["placer"]: r for r in compare(g, c, ["round-robin", "heft"])}  # single-device not among them
    rr, heft = rows["round-robin"], rows["heft"]
    assert rr["makespan_s"] == pytest.approx(8 * MS) and rr["predicted_makespan_s"] is None
    assert rr["ratio_to_single_device"] == pytest.approx(0.8) and rr["ratio_to_lower_bound"] == pytest.approx(8 / 6)
    assert rr["single_device_makespan_s"] == pytest.approx(10 * MS)
    assert heft["makespan_s"] == pytest.approx(6 * MS) and heft["predicted_makespan_s"] == pytest.approx(6 * MS)
    assert heft["ratio_to_single_device"] == pytest.approx(0.6) and heft["ratio_to_lower_bound"] == pytest.approx(1.0)
    assert rr["estimate_warning"] is None and heft["estimate_warning"] is None  # none made; agrees
    assert "search_budget" not in rr


@pytest.mark.parametrize(("predicted_ms", "warning"), [(4.0, "est. off by -33 %"), (8.28, "est. off by +38 %"),
                                                       (6.2, None), (5.8, None)])
def test_an_estimate_far_off_the_simulation_is_a_warning(estimating_placer, predicted_ms, warning):
    # HEFT's placement simulates 6 ms: 4 ms is 33 % under, 8.28 ms 38 % over; 6.2 and 5.8 ms are 3 % off (agree)
    name = estimating_placer(predicted_ms * MS)
    (row,) = compare(*hand(), [name])
    assert row["makespan_s"] == pytest.approx(6 * MS)
    assert row["predicted_makespan_s"] == pytest.approx(predicted_ms * MS)
    assert row["estimate_warning"] == warning


def test_the_single_device_placer_is_one_times_itself():
    (row,) = compare(*hand(), ["single-device"])
    assert row["ratio_to_single_device"] == 1.0 and row["single_device_makespan_s"] == row["makespan_s"]


def test_estimate_and_ratios_are_stored_with_each_run(tmp_path, estimating_placer):
    g, c = hand()
    store = RunStore(tmp_path / "runs")
    name = estimating_placer(4 * MS)
    rows = {r["placer"]: r for r in compare(g, c, ["heft", name], store=store)}  # files encoded by the task
    placed = place_and_simulate(g, c, "round-robin", store=store)  # files encoded here
    for run_id, predicted, ratio in ((rows["heft"]["run_id"], 6 * MS, 0.6), (rows[name]["run_id"], 4 * MS, 0.6),
                                     (placed.run_id, None, 0.8)):
        m = store.load(run_id).meta["metrics"]
        assert m["predicted_makespan_s"] == (None if predicted is None else pytest.approx(predicted))
        assert m["single_device_makespan_s"] == pytest.approx(10 * MS)
        assert m["ratio_to_single_device"] == pytest.approx(ratio)


def test_a_search_placer_row_states_its_budget():
    rows = {r["placer"]: r for r in compare(*hand(), ["local-search", "round-robin"], seed=3)}
    assert rows["local-search"]["search_budget"] == "local-search: 2,000 evaluations, no time limit, seed 3"
    assert "search_budget" not in rows["round-robin"]
    # as a run stores them: the budget counts evaluations, a time limit in seconds
    assert search_budget("local-search", seed=1, params={"time_limit_s": 2.5}, budget=300) == (
        "local-search: 300 evaluations, 2.5 s, seed 1")
    # a search without an evaluation or time parameter states its parameters
    assert search_budget("enumerative", seed=0) == "enumerative: max_enumerate=50000, meta_ops=auto, seed 0"
