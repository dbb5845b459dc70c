"""REINFORCE bookkeeping (policies.rl.core.reinforce): returns, both baselines, decays, stopping rule
and budgets, on sequences worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from policies.rl.core.reinforce import Budget, MovingAverageBaseline, StepBaseline, StoppingRule, linear, returns_to_go


def test_returns_to_go():
    np.testing.assert_allclose(returns_to_go(np.array([1.0, 2.0, 3.0])), [6.0, 5.0, 3.0])
    np.testing.assert_allclose(returns_to_go(np.array([0.5, -1.0])), [-0.5, -1.0])


def test_step_baseline_hand_worked():
    b = StepBaseline(k=2)
    # no history: the same call's mean per step, [2, 1]
    a1, a2 = b.advantages(["g", "g"], [np.array([3.0, 1.0]), np.array([1.0, 1.0])])
    np.testing.assert_allclose(a1, [1.0, 0.0])
    np.testing.assert_allclose(a2, [-1.0, 0.0])
    # history [3,1], [1,1] → baseline [2, 1]
    (a3,) = b.advantages(["g"], [np.array([5.0, 2.0])])
    np.testing.assert_allclose(a3, [3.0, 1.0])
    # k = 2 keeps [1,1] and [5,2] → baseline [3, 1.5]
    (a4,) = b.advantages(["g"], [np.array([0.0, 0.0])])
    np.testing.assert_allclose(a4, [-3.0, -1.5])
    # another graph has its own history
    (a5,) = b.advantages(["h"], [np.array([7.0])])
    np.testing.assert_allclose(a5, [0.0])


def test_step_baseline_longer_episode_uses_same_call_mean_beyond_history():
    b = StepBaseline(k=10)
    b.advantages(["g"], [np.array([1.0])])
    (a,) = b.advantages(["g"], [np.array([3.0, 4.0])])
    np.testing.assert_allclose(a, [2.0, 0.0])  # step 0 vs history 1; step 1 vs its own mean


def test_step_baseline_state_round_trip():
    b = StepBaseline(k=3)
    b.advantages(["g", "h"], [np.array([1.0, 2.0]), np.array([3.0])])
    c = StepBaseline()
    c.load_state_dict(b.state_dict())
    assert c.k == 3
    np.testing.assert_allclose(c.baseline("g", 2), [1.0, 2.0])
    np.testing.assert_allclose(c.baseline("h", 1), [3.0])


def test_moving_average_baseline_starts_at_the_failing_signal():
    b = MovingAverageBaseline(decay=0.5)
    assert b.get("g", 10.0) == 10.0
    assert b.update("g", np.array([2.0, 4.0]), 10.0) == pytest.approx(0.5 * 10 + 0.5 * 3)
    assert b.update("g", np.array([1.0]), 10.0) == pytest.approx(0.5 * 6.5 + 0.5 * 1)
    with pytest.raises(ValueError):
        MovingAverageBaseline(decay=1.0)


def test_linear_decay():
    assert linear(1e-3, 1e-4, 0.0) == 1e-3
    assert linear(1e-3, 1e-4, 0.5) == pytest.approx(5.5e-4)
    assert linear(1e-3, 1e-4, 2.0) == pytest.approx(1e-4)


def test_stopping_rule_two_percent_over_a_window():
    r = StoppingRule(window=3, tolerance=0.02)
    assert not any(r.add(v) for v in [1.0, 1.0, 1.0, 1.01, 1.0])
    assert r.add(1.0)  # latest mean 1.0033 vs 1.0: within 2 %
    r = StoppingRule(window=3, tolerance=0.02)
    assert not any(r.add(v) for v in [1.0, 1.0, 1.0, 0.9, 0.9, 0.9])  # 10 % change
    assert not StoppingRule(window=0).add(1.0)


def test_budget_limits_and_progress():
    b = Budget(episodes=100, placements=None, seconds=60.0)
    assert b.exhausted(99, 10**6, 59.0) is None
    assert b.exhausted(100, 0, 0.0) == "episodes"
    assert b.exhausted(0, 0, 60.0) == "seconds"
    assert Budget(placements=5).exhausted(0, 5, 0.0) == "placements"
    # the decays follow the count limits; the wall-time limit only stops training (45 of 60 s: still half-way)
    assert b.progress(50, 0, 45.0) == pytest.approx(0.5)
    assert b.progress(50, 0, 0.1) == b.progress(50, 0, 59.0)  # a slow machine and a fast one: the same schedule
    assert Budget(episodes=100, placements=40).progress(30, 30, 0.0) == pytest.approx(0.75)  # the tighter count
    assert Budget(seconds=60.0).progress(50, 50, 45.0) == pytest.approx(0.75)  # no count limit: the time
    assert Budget(episodes=10).progress(20, 0, 0.0) == 1.0
    assert Budget().progress(10, 10, 10.0) == 0.0


def test_discounted_returns():
    # γ = 0.5: G2 = 3, G1 = 2 + 0.5·3 = 3.5, G0 = 1 + 0.5·3.5 = 2.75
    np.testing.assert_allclose(returns_to_go(np.array([1.0, 2.0, 3.0]), 0.5), [2.75, 3.5, 3.0])
    np.testing.assert_allclose(returns_to_go(np.array([1.0, 2.0, 3.0]), 0.0), [1.0, 2.0, 3.0])
