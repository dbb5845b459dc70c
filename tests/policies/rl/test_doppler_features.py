"""DOPPLER's features, levels, paths, device features and masks on a hand-drawn graph (numbers by hand).

The graph (2 identical GPUs, 1 GB/s, no latency or overheads): s → {l, r} → t, and u alone.
compute s 1, l 2, r 3, t 4, u 2 (s); outputs s 1 GB, l 2 GB, r 0.5 GB → transfer costs 1, 2, 0.5 s.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.cluster import Cluster, Device, Link, SimulationSettings
from engine.generators import random_dag
from engine.graph.io import graph_from_dict
from policies.rl.doppler.features import DopplerGraph, EstimatedSchedule, zscore
from policies.rl.doppler.rollout import assign

GB = 1e9
S, L, R, T, U = range(5)


def two_gpus(n: int = 2) -> Cluster:
    return Cluster("test", tuple(Device(f"gpu:{i}", "gpu", 100 * GB) for i in range(n)), Link(1 * GB), (),
                   SimulationSettings("default"))


def hand_graph():
    ops = [{"name": "s", "compute": 1.0, "output_bytes": 1e9}, {"name": "l", "compute": 2.0, "output_bytes": 2e9},
           {"name": "r", "compute": 3.0, "output_bytes": 0.5e9}, {"name": "t", "compute": 4.0},
           {"name": "u", "compute": 2.0}]
    edges = [("s", "l"), ("s", "r"), ("l", "t"), ("r", "t")]
    return graph_from_dict({"schema": "placelab.graph/1", "name": "hand", "ops": ops,
                            "edges": [{"src": a, "dst": b} for a, b in edges]})


@pytest.fixture(scope="module")
def dg() -> DopplerGraph:
    return DopplerGraph.build(hand_graph(), two_gpus())


def test_levels_and_static_features_by_hand(dg):
    np.testing.assert_allclose(dg.edge_cost, [1, 1, 2, 0.5])  # s→l, s→r, l→t, r→t: the producer's output
    # b-level: t 4; l 2+2+4 = 8; r 3+0.5+4 = 7.5; s 1+max(1+8, 1+7.5) = 10; u 2
    np.testing.assert_allclose(dg.b_level, [10, 8, 7.5, 4, 2])
    # t-level: l, r 0+1+1 = 2; t max(2+2+2, 2+3+0.5) = 6
    np.testing.assert_allclose(dg.t_level, [0, 2, 2, 6, 0])
    raw = np.array([[1, 10, 0, 0, 2], [2, 8, 2, 1, 2], [3, 7.5, 2, 1, 0.5], [4, 4, 6, 2.5, 0], [2, 2, 0, 0, 0]])
    np.testing.assert_allclose(dg.x_v, (raw - raw.mean(0)) / raw.std(0), rtol=1e-6)
    # compute column written out: mean 2.4, population variance 5.2 / 5
    np.testing.assert_allclose(dg.x_v[:, 0], (np.array([1, 2, 3, 4, 2]) - 2.4) / np.sqrt(1.04), rtol=1e-6)


def test_edge_features_are_the_bidirected_producer_costs(dg):
    assert dg.edge_index.tolist() == [[S, S, L, R, L, R, T, T], [L, R, T, T, S, S, L, R]]
    z = (np.array([1, 1, 2, 0.5]) - 1.125) / np.sqrt(0.296875)
    np.testing.assert_allclose(dg.edge_attr[:, 0], np.tile(z, 2), rtol=1e-6)


def _paths(rows_cols):
    rows, cols = rows_cols
    return {int(v): sorted(cols[rows == v].tolist()) for v in np.unique(rows)}


def test_b_and_t_level_paths(dg):
    assert _paths(dg.b_path) == {S: [S, L, T], L: [L, T], R: [R, T], T: [T], U: [U]}
    assert _paths(dg.t_path) == {S: [S], L: [S, L], R: [S, R], T: [S, L, T], U: [U]}


def test_zscore_constant_column_is_zero():
    np.testing.assert_array_equal(zscore(np.array([[3.0, 1.0], [3.0, 3.0]])), [[0, -1], [0, 1]])


def test_device_features_by_hand(dg):
    est = EstimatedSchedule(dg)
    est.place(S, 0, 0.0)  # s on gpu:0 from 0 to 1
    x, e = est.features(L)
    np.testing.assert_allclose(x, [[1, 1, 0, 1, 1], [0, 0, 0, 0, 2]])  # on gpu:1 s's output arrives at 1 + 1
    est.place(L, 1, 2.0)  # l on gpu:1 from 2 to 4
    est.place(R, 0, 1.0)  # r on gpu:0 from 1 to 4
    x, e = est.features(T)
    # load 1+3, 2; preds' compute r 3, l 2; first start r 1, l 2; last end 4, 4;
    # t starts on gpu:0 when l's output arrives (4 + 2), on gpu:1 when r's does (4 + 0.5)
    np.testing.assert_allclose(x, [[4, 3, 1, 4, 6], [2, 2, 2, 4, 4.5]])
    np.testing.assert_allclose(e, [6, 4.5])


def test_teacher_episode_candidates_masks_and_targets(dg):
    ro = assign(dg, np.ones((5, 2), bool), np.arange(5), None, None, np.random.default_rng(0), 0.0, record=True)
    assert ro.ops.tolist() == [S, L, R, T, U]  # largest b-level among the candidates
    cand = [[S, U], [L, R, U], [R, U], [T, U], [U]]
    assert [np.flatnonzero(c).tolist() for c in ro.cand] == cand
    assert [np.flatnonzero(t).tolist() for t in ro.sel_target] == [[S], [L], [R], [T], [U]]
    # earliest starts: s [0, 0] (a tie: both targets); l [1, 2]; r [3, 2]; t [5.5, 5]; u [3, 9]
    assert ro.plc_target.tolist() == [[True, True], [True, False], [False, True], [False, True], [True, False]]
    assert ro.devs.tolist() == [0, 0, 1, 1, 0]
    assert ro.dev_mask.all()
    # X_D of step 3 (t): raw [[3, 2, 1, 3, 5.5], [3, 3, 2, 5, 5]] z-scored over the two devices
    np.testing.assert_allclose(ro.x_d[3], [[0, -1, -1, -1, 1], [0, 1, 1, 1, -1]])


def test_colocated_ops_share_the_first_ones_device():
    g = hand_graph()
    dg = DopplerGraph.build(g, two_gpus())
    op_group = np.array([0, 1, 2, 3, 1])  # u colocated with l
    feasible = np.ones((5, 2), bool)
    ro = assign(dg, feasible, op_group, None, None, np.random.default_rng(0), 0.0, record=True)
    step_u = int(np.flatnonzero(ro.ops == U)[0])
    assert ro.dev_mask[step_u].tolist() == [True, False]  # l went to gpu:0 first
    assert ro.op_device[U] == ro.op_device[L]
    assert ro.group_devices(4).tolist() == [0, 0, 1, 1]


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 40), st.integers(0, 10_000), st.floats(0.0, 1.0), st.integers(1, 4))
def test_random_episode_is_a_topological_assignment(n, seed, eps, nd):
    g = random_dag(ops=n, degree=2.0, seed=seed, window=5)
    dg = DopplerGraph.build(g, two_gpus(nd))
    rng = np.random.default_rng(seed)
    sel = rng.normal(size=n)
    ro = assign(dg, np.ones((n, nd), bool), np.arange(n), sel, None, rng, eps, record=True)
    assert sorted(ro.ops.tolist()) == list(range(n))
    pos = np.empty(n, int)
    pos[ro.ops] = np.arange(n)
    assert (pos[g.edge_src] < pos[g.edge_dst]).all()  # every op is placed after its predecessors
    assert all(ro.cand[t, v] for t, v in enumerate(ro.ops))
    assert ((ro.op_device >= 0) & (ro.op_device < nd)).all()


def test_exploration_picks_uniformly_among_candidates_and_allowed_devices():
    """ε = 1 on the hand graph (2 GPUs): step 0 chooses s or u (the two entry ops) and then a device, each
    uniformly whatever the policies' scores say; s and u both on gpu:0 strongly preferred by PLC's weights.
    Over 4,000 episodes each of the 2 × 2 outcomes should come 1,000 times (binomial sd ≈ 27)."""
    dg = DopplerGraph.build(hand_graph(), two_gpus())
    sel = np.array([100.0, 0, 0, 0, -100.0])  # SEL's argmax would always be s
    h = 4
    plc = {"A": np.zeros((h, 5)), "a0": np.zeros(h), "C": np.zeros((5, h)), "G": np.zeros((5, h)),
           "w2": np.zeros(h), "b2": np.zeros(1)}  # PLC's scores tie: its argmax would always be gpu:0
    rng = np.random.default_rng(7)
    counts = np.zeros((5, 2), int)
    for _ in range(4000):
        ro = assign(dg, np.ones((5, 2), bool), np.arange(5), sel, plc, rng, 1.0, record=False)
        counts[ro.ops[0], ro.devs[0]] += 1
    assert counts[[S, U]].sum() == 4000
    assert np.abs(counts[[S, U]] - 1000).max() < 150  # more than 5 sd
    greedy = assign(dg, np.ones((5, 2), bool), np.arange(5), sel, plc, rng, 0.0, record=False)
    assert (greedy.ops[0], greedy.devs[0]) == (S, 0)


def test_given_edge_transfer_times_replace_the_links():
    doc = {"schema": "placelab.graph/1", "name": "tt",
           "ops": [{"name": "a", "compute": 1.0, "output_bytes": 1e9}, {"name": "b", "compute": 1.0}],
           "edges": [{"src": "a", "dst": "b", "transfer_s": 3.0}]}
    dg = DopplerGraph.build(graph_from_dict(doc), two_gpus())
    np.testing.assert_allclose(dg.edge_cost, [3.0])  # not the 1 s the 1 GB/s link would take
    np.testing.assert_allclose(dg.b_level, [1 + 3 + 1, 1])
    est = EstimatedSchedule(dg)
    est.place(0, 0, 0.0)
    np.testing.assert_allclose(est.earliest_start(1), [1.0, 1.0 + 3.0])
