"""Tests for the search reference ``anneal`` (policies.simulated_annealing): the optimum of a hand-worked graph
(checked by brute force), never worse than its start, the same placement for the same seed and evaluations, the
budget and what stopped it recorded, colocation / pins / memory honoured, bad parameters refused."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from engine.errors import SpecError
from engine.generators import random_dag
from engine.graph.compgraph import CompGraph
from engine.placement import check_placement
from engine.presets import PRESETS
from engine.sim.simulator import Simulator, simulate
from policies.list_scheduling import MEtf
from policies.registry import PLACERS, make_placer
from policies.simulated_annealing import Anneal, budget_text
from tests.policies.test_search import cluster, cost, graph

GB = 1e9


def trap() -> CompGraph:
    """Six ops: o1 alone (4 s); o0 → o3 (1 s each); o2, o4 → o5 (1 s each); o0, o2 and o4 output 3 GB (3 s over
    the 1 GB/s link), the others nothing that is sent."""
    compute = [1.0, 4.0, 1.0, 1.0, 1.0, 1.0]
    out = [3 * GB, 0, 3 * GB, 0, 3 * GB, 0]
    ops = [{"name": f"o{i}", "compute": compute[i], "output_bytes": out[i]} for i in range(6)]
    return graph(ops, [("o0", "o3"), ("o2", "o5"), ("o4", "o5")])


def test_finds_the_optimum_of_a_hand_worked_graph_that_m_etf_misses():
    # By hand: o1 alone takes 4 s, so no placement beats 4 s; 4 s is reached with o1 on its own device, o0 and o3
    # on one (2 s), o2, o4 and o5 on one (3 s, no transfer). m-ETF starts o2 and o4 at 0 on two devices (each
    # starts earliest there), so o5 waits for a 3 s transfer: 1 + 3 + 1 = 5 s. Brute force over all 4^6
    # placements agrees on 4 s.
    g, c = trap(), cluster(4)
    sim = Simulator(g, c)
    assert min(sim.makespan(np.array(p)) for p in itertools.product(range(4), repeat=6)) == pytest.approx(4.0)
    assert sim.makespan(MEtf().place(g, c)) == pytest.approx(5.0)
    anneal = Anneal(evaluations=300)
    assert sim.makespan(anneal.place(g, c, seed=0)) == pytest.approx(4.0)
    assert anneal.report.start_cost > anneal.report.best_cost  # the search, not a start, found it


@pytest.mark.parametrize("seed", [0, 1])
def test_never_worse_than_its_start(seed):
    g, c = random_dag(ops=80, seed=seed), PRESETS["v100x8"]()
    anneal = Anneal(evaluations=150, start_runs=2)
    p = anneal.place(g, c, seed=seed)
    starts = anneal.starts(g, c, seed)
    assert cost(g, c, p) <= min(cost(g, c, s) for s in starts.values()) + 1e-12
    assert anneal.report.best_cost == pytest.approx(cost(g, c, p), rel=1e-12)


def test_same_seed_and_evaluations_give_the_same_placement():
    g, c = random_dag(ops=80, seed=4), PRESETS["p100x4"]()
    a, b = Anneal(evaluations=200, start_runs=2), Anneal(evaluations=200, start_runs=2)
    assert a.place(g, c, seed=3) == b.place(g, c, seed=3)
    same = ("evaluations_used", "simulations", "stopped_by", "start", "start_cost", "best_cost")
    assert [getattr(a.report, k) for k in same] == [getattr(b.report, k) for k in same]
    # ``budget`` stands for ``evaluations``, as for local-search
    assert make_placer("anneal", start_runs=2).place(g, c, seed=3, budget=200) == a.place(g, c, seed=3)


def test_the_report_records_the_budget_and_what_stopped_it():
    g, c = random_dag(ops=60, seed=0), PRESETS["p100x4"]()
    anneal = Anneal(evaluations=100, start_runs=2)
    anneal.place(g, c, seed=5)
    r = anneal.report
    assert (r.evaluations, r.time_limit_s, r.seed, r.stopped_by) == (100, None, 5, "evaluations")
    assert r.evaluations_used == 100 and 0 < r.simulations <= 100  # cached candidates count, cost no simulation
    assert r.budget() == "anneal: 100 evaluations, no time limit, seed 5"
    # a time limit that has passed before the first move: the start is returned, and the report says why
    quick = Anneal(evaluations=10_000, time_limit_s=0.0, start_runs=1)
    check_placement(g, c, quick.place(g, c, seed=0))
    assert quick.report.stopped_by == "time limit" and quick.report.evaluations_used == 5
    assert budget_text(20_000, 30.0, 1) == "anneal: 20,000 evaluations, 30 s, seed 1"
    # one device: nothing can move
    one = Anneal(evaluations=50, start_runs=1)
    one.place(g, cluster(1), seed=0)
    assert one.report.stopped_by == "nothing to move"


def test_registered_as_a_search_with_its_budget_in_its_parameters():
    info = PLACERS["anneal"]
    assert info.family == "search"
    assert info.parameters["evaluations"] == 20_000 and info.parameters["time_limit_s"] is None


def test_respects_colocation_pins_and_memory():
    # six 3 GB ops in a chain on two 10 GB devices (at most three per device); a0 and a5 colocated, a2 pinned
    # to gpu:1. On one device they need 18 GB: the memory penalty keeps the search to placements that fit.
    ops = [{"name": f"a{i}", "compute": 1e-3, "output_bytes": 1e6, "persistent_bytes": 3 * GB,
            "colocate": "g" if i in (0, 5) else None, "device": "gpu:1" if i == 2 else None} for i in range(6)]
    g = graph(ops, [(f"a{i}", f"a{i + 1}") for i in range(5)])
    c = cluster(2, memory=10 * GB)
    p = make_placer("anneal", evaluations=200).place(g, c, seed=0)
    check_placement(g, c, p)
    assert p.devices[0] == p.devices[5] and p.devices[2] == 1
    assert simulate(g, c, p).any_oom is False


@pytest.mark.parametrize(("params", "text"), [
    ({"evaluations": 0}, "evaluations must be a whole number >= 1"),
    ({"evaluations": 2.5}, "evaluations must be a whole number >= 1"),
    ({"time_limit_s": -1.0}, "time_limit_s must be a number >= 0"),
    ({"accept0": 1.0}, "accept0 must be a number strictly between 0 and 1, got 1.0"),
    ({"segment": 1}, "segment must be a whole number >= 2"),
    ({"swap_prob": 0.6, "segment_prob": 0.6}, "segment_prob must be a number in [0, 0.4]"),
])
def test_bad_parameters_are_refused_in_one_sentence(params, text):
    with pytest.raises(SpecError) as exc:
        make_placer("anneal", **params)
    assert text in str(exc.value) and str(exc.value).startswith("placer 'anneal': ")
