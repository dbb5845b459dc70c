"""Learning health (policies.rl.core.health): window statistics on hand-made curves, the random-search best
checked by an independent computation, the verdicts, and stored runs old and new."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from rl_graphs import cluster, cluster_file, graph, graph_file, two_chains

from engine.sim.objectives import GB, penalized_runtime
from engine.sim.simulator import Simulator
from engine.specs import load_graph
from engine.store.runs import RunStore
from policies.rl.core.health import (
    NEVER_LEFT_UNIFORM,
    VERDICTS,
    GraphComparison,
    LearningHealth,
    cli_lines,
    learning_health,
    random_search,
    random_search_seed,
    window_size,
)
from policies.rl.core.stored_health import stored_health
from policies.rl.core.task import make_task
from policies.rl.core.training_health import assess, entropy_reference, placements_per_graph, uniform_entropy

LN2 = math.log(2)


def curve(entropy, runtime, graphs=None, evaluations=None, **columns):
    """A learning curve with the trainer's columns (one row per episode), and any other ``columns``."""
    n = len(entropy)
    graphs = graphs or ["g"] * n
    evaluations = evaluations or [1] * n
    return {"episode": list(range(1, n + 1)), "graph": graphs, "sampled_runtime": list(runtime),
            "best_runtime": list(np.minimum.accumulate(runtime)), "entropy": list(entropy),
            "placements_evaluated": np.cumsum(evaluations).tolist(), **columns}


def checkpoints(n, values):
    """A greedy-checkpoint column of ``n`` rows: ``values`` by row index, None elsewhere."""
    return [values.get(i) for i in range(n)]


def test_window_size():
    assert [window_size(n) for n in (0, 1, 4, 5, 20, 499, 500, 10_000)] == [1, 1, 1, 1, 4, 99, 100, 100]


def test_window_statistics_of_a_hand_made_curve():
    # 20 episodes: windows of 4. First window entropy (0.6, 0.6, 0.7, 0.5): mean 0.6; last (0.2, 0.1, 0.3,
    # 0.2): mean 0.2. Sampled runtime first (4, 2, 3, 5): median 3.5; last (1, 2, 3, 2): median 2.
    entropy = [0.6, 0.6, 0.7, 0.5] + [0.4] * 12 + [0.2, 0.1, 0.3, 0.2]
    runtime = [4.0, 2.0, 3.0, 5.0] + [2.5] * 12 + [1.0, 2.0, 3.0, 2.0]
    h = learning_health(curve(entropy, runtime), uniform=LN2, uniform_basis="ln 2")
    assert (h.episodes, h.window) == (20, 4)
    assert h.entropy_first == pytest.approx(0.6) and h.entropy_last == pytest.approx(0.2)
    assert h.uniform_entropy == pytest.approx(LN2)
    assert h.entropy_first_ratio == pytest.approx(0.6 / LN2) and h.entropy_last_ratio == pytest.approx(0.2 / LN2)
    assert (h.runtime_first_s, h.runtime_last_s) == (3.5, 2.0)
    assert h.runtime_ratio == pytest.approx(2.0 / 3.5)
    # entropy 29 % of uniform (≤ 75 %), runtime ×0.57 (≤ 0.95), no random comparison given
    assert h.verdict == "learned" and h.random_ratio is None and h.random_missing == "not compared"
    assert "random search: not compared" in h.summary and "first vs last 4 episodes" in h.summary


def test_several_graphs_each_against_its_own_reference_and_runtime():
    # 10 episodes (windows of 2), graphs alternate a, b. Reference: a ln 2, b ln 4.
    graphs = ["a", "b"] * 5
    entropy = [LN2, math.log(4), 0, 0, 0, 0, 0, 0, LN2 / 2, math.log(4) / 4]
    runtime = [2.0, 10.0, 1, 1, 1, 1, 1, 1, 1.0, 8.0]
    h = learning_health(curve(entropy, runtime, graphs, [3, 5] * 5), uniform={"a": LN2, "b": math.log(4)})
    assert h.entropy_first_ratio == pytest.approx(1.0)  # both rows exactly uniform for their graph
    assert h.entropy_last_ratio == pytest.approx((0.5 + 0.25) / 2)
    assert h.uniform_entropy == pytest.approx((LN2 + math.log(4)) / 2)
    assert h.runtime_ratio == pytest.approx(np.median([1.0 / 2.0, 8.0 / 10.0]))  # per graph, then the median
    # no window medians over both graphs' rows (first window 2 and 10 ms: its median, 6, is neither graph's):
    # the summary gives the per-graph ratio only, and a record stored before the field reads the same way
    assert h.graphs == 2 and h.runtime_first_s is None and h.runtime_last_s is None
    assert "sampled runtime ×0.650 (median over 2 graphs of each one's last / first)" in h.summary
    old = {k: v for k, v in h.to_dict().items() if k != "graphs"} | {"runtime_first_s": 6.0, "runtime_last_s": 4.5,
                                                                       "random_search": [vars(_comparison(1, 2))] * 2}
    assert LearningHealth.from_dict(old).graphs == 2 and LearningHealth.from_dict(old).runtime_first_s is None
    assert LearningHealth.from_dict(h.to_dict()) == h
    assert placements_per_graph(curve(entropy, runtime, graphs, [3, 5] * 5)) == {"a": 15, "b": 25}


def test_a_policy_whose_entropy_stays_at_ln2_never_left_uniform():
    rng = np.random.default_rng(0)
    h = learning_health(curve([LN2] * 50, rng.uniform(1, 2, 50)), uniform=LN2)
    assert h.verdict == "never_left_uniform" and h.never_left_uniform
    assert h.message == NEVER_LEFT_UNIFORM
    assert NEVER_LEFT_UNIFORM == "the policy never left uniform: its sampled placements are a random search"
    lines = cli_lines(h)
    assert lines[0].startswith("learning health: never left uniform; ") and lines[1] == NEVER_LEFT_UNIFORM
    # 98 % of uniform is still uniform; 97 % is not
    assert learning_health(curve([0.98 * LN2] * 50, [1.0] * 50), uniform=LN2).never_left_uniform
    assert not learning_health(curve([0.97 * LN2] * 50, [1.0] * 50), uniform=LN2).never_left_uniform


def _comparison(found, rand):
    return GraphComparison("g", 10, 10, [0, 0], found, found, False, rand, rand, False)


def test_verdicts():
    settles = [LN2] * 10 + [0.1] * 10
    improves = [2.0] * 10 + [1.0] * 10
    flat_h, flat_rt = [0.8 * LN2] * 20, [1.0] * 20
    assert learning_health(curve(settles[:9], improves[:9]), uniform=LN2).verdict == "too_short"
    assert learning_health(curve(settles, improves), uniform=LN2).verdict == "learned"
    # learned, but the best found is not 1 % better than random search's best
    h = learning_health(curve(settles, improves), uniform=LN2, random_search=[_comparison(1.0, 1.0)])
    assert h.verdict == "no_better_than_random" and h.random_ratio == pytest.approx(1.0)
    assert "the best of 10 uniformly random placements" in h.message
    assert h.detail == "the best placement found is 1.000× the best of 10 uniformly random placements"
    h = learning_health(curve(settles, improves), uniform=LN2, random_search=[_comparison(0.5, 1.0)])
    assert h.verdict == "learned" and "0.500× random search's" in h.message
    assert h.detail == h.message[len("learned: "):]  # the app shows the label beside it: not twice
    assert learning_health(curve(settles, flat_rt), uniform=LN2).verdict == "settled_without_improving"
    assert learning_health(curve(flat_h, improves), uniform=LN2).verdict == "still_exploring"
    assert learning_health(curve(flat_h, flat_rt), uniform=LN2).verdict == "no_progress"
    # no uniform reference (DOPPLER): the entropy is compared with its first window only
    h = learning_health(curve([2.0] * 10 + [1.4] * 10, improves), uniform=None)
    assert h.entropy_last_ratio is None and h.verdict == "learned"  # 1.4 / 2.0 = 0.70 ≤ 0.75
    assert learning_health(curve([2.0] * 10 + [1.6] * 10, improves)).verdict == "still_exploring"  # 0.80
    assert set(VERDICTS) == {"nothing_to_choose", "too_short", "never_left_uniform", "frozen", "no_better_than_random",
                             "exploration_only", "learned", "settled_without_improving", "still_exploring",
                             "no_progress"}


def test_the_entropy_settles_only_by_falling_from_its_own_first_window_and_below_uniform():
    improves = [2.0] * 10 + [1.0] * 10
    # 30 % of uniform from the start (a policy trained before): low, but it did not fall
    h = learning_health(curve([0.3 * LN2] * 20, improves), uniform=LN2)
    assert not h.settled and h.verdict == "still_exploring"
    assert "its entropy did not fall from its first window's" in h.message
    # 90 % → 70 % of uniform: below 75 % of uniform, but 0.78 of its first window
    assert learning_health(curve([0.9 * LN2] * 10 + [0.7 * LN2] * 10, improves), uniform=LN2).verdict == \
        "still_exploring"
    assert learning_health(curve([0.9 * LN2] * 10 + [0.6 * LN2] * 10, improves), uniform=LN2).verdict == "learned"


def test_a_policy_whose_weights_did_not_move_is_frozen_whatever_its_curve_shows():
    # entropy at uniform (it would read "never left uniform") and a sampled runtime that halves: the weights moved
    # 1e-12 of their norm, so neither is the policy's doing
    n = 20
    h = learning_health(curve([LN2] * n, [2.0] * 10 + [1.0] * 10, weight_change=checkpoints(n, {0: 0.0, 19: 1e-12})),
                        uniform=LN2)
    assert h.weight_change == 1e-12 and h.frozen and h.verdict == "frozen" and h.label == "policy frozen"
    assert h.message.startswith("policy frozen: its weights moved 1e-12 of their norm")
    moved = curve([LN2] * 10 + [0.1] * 10, [2.0] * 10 + [1.0] * 10, weight_change=checkpoints(n, {19: 2e-6}))
    assert learning_health(moved, uniform=LN2).verdict == "learned"  # 2e-6 > FROZEN = 1e-6
    assert learning_health(curve([LN2] * n, [1.0] * n), uniform=LN2).weight_change is None  # not recorded


def test_the_greedy_checkpoints_are_the_runtime_at_equal_exploration():
    n, settles = 20, [LN2] * 10 + [0.1] * 10
    eps = np.linspace(0.2, 0.0, n).tolist()
    improves = [2.0] * 10 + [1.0] * 10
    # greedy: 3.0 at the start (row 0), then 2.0, 1.5, and 1.0, 1.2 in the last window (rows 16-19): median 1.1
    greedy = checkpoints(n, {0: 3.0, 5: 2.0, 10: 1.5, 16: 1.0, 19: 1.2})
    h = learning_health(curve(settles, improves, epsilon=eps, greedy_objective=greedy), uniform=LN2,
                        exploration=["epsilon"])
    assert (h.greedy_first_s, h.greedy_last_s, h.greedy_checkpoints) == (3.0, pytest.approx(1.1), 5)
    assert h.greedy_ratio == pytest.approx(1.1 / 3.0) and h.compared_on == "greedy" and h.verdict == "learned"
    assert h.exploration_first == {"epsilon": pytest.approx(np.mean(eps[:4]))}
    assert "greedy placement 3000 ms → 1100 ms (×0.367) over 5 checkpoints" in h.summary
    assert "as ε went 0.184 → 0.0158" in h.summary
    # the same sampled runtimes while the greedy placement stays at 2.0: the improvement is ε's
    flat = checkpoints(n, {0: 2.0, 10: 2.0, 19: 2.0})
    h = learning_health(curve(settles, improves, epsilon=eps, greedy_objective=flat), uniform=LN2,
                        exploration=["epsilon"])
    assert h.verdict == "exploration_only" and h.label == "only exploration improved"
    assert h.message == ("only exploration improved: the sampled runtime improved (×0.500) as ε went 0.184 → 0.0158, "
                         "but the greedy placement's runtime did not (×1.000); the policy settled (its entropy fell) "
                         "on what it already placed")
    # ... and with the sampled runtime flat too, only the entropy changed
    assert learning_health(curve(settles, [1.0] * n, epsilon=eps, greedy_objective=flat), uniform=LN2,
                           exploration=["epsilon"]).verdict == "settled_without_improving"


def test_with_several_graphs_the_greedy_checkpoints_count_only_when_they_cover_them():
    graphs = ["a", "b"] * 10
    settles, improves = [LN2] * 10 + [0.1] * 10, [2.0] * 10 + [1.0] * 10
    only_a = checkpoints(20, {0: 3.0, 18: 3.0})  # graph a's greedy placement did not improve; b's was not evaluated
    h = learning_health(curve(settles, improves, graphs, greedy_objective=only_a), uniform=LN2)
    assert h.greedy_ratio is None and h.compared_on == "sampled" and h.verdict == "learned"
    h = learning_health(curve(settles, improves, graphs, epsilon=np.linspace(0.2, 0, 20).tolist(),
                              greedy_objective=only_a), uniform=LN2, exploration=["epsilon"])
    assert h.compared_on is None and h.not_compared.endswith("and greedy checkpoints on 1 of 2 graphs")
    both = checkpoints(20, {0: 3.0, 1: 3.0, 18: 3.0, 19: 1.0})  # a ×1, b ×1/3: the median, ×0.667
    h = learning_health(curve(settles, improves, graphs, greedy_objective=both), uniform=LN2)
    assert h.compared_on == "greedy" and h.greedy_ratio == pytest.approx(2 / 3) and h.greedy_first_s is None


def test_without_greedy_checkpoints_sampled_runtimes_compare_only_at_equal_exploration():
    n, settles, improves = 20, [LN2] * 10 + [0.1] * 10, [2.0] * 10 + [1.0] * 10
    same = learning_health(curve(settles, improves, epsilon=[0.1] * n), uniform=LN2, exploration=["epsilon"])
    assert same.compared_on == "sampled" and same.verdict == "learned" and "at ε 0.1" in same.summary
    decays = learning_health(curve(settles, improves, epsilon=np.linspace(0.2, 0, n).tolist()), uniform=LN2,
                             exploration=["epsilon"])
    assert decays.compared_on is None and decays.verdict == "exploration_only"
    assert decays.not_compared == "ε 0.184 in the first window, 0.0158 in the last, and no greedy checkpoints"
    assert "nothing was compared at equal exploration" in decays.message
    unrecorded = learning_health(curve(settles, improves), uniform=LN2, exploration=["epsilon"])  # an old ε curve
    assert unrecorded.compared_on is None and unrecorded.verdict == "settled_without_improving"
    assert "ε not recorded and no greedy checkpoints" in unrecorded.message
    # a placer without exploration parameters samples its own policy: its sampled runtime is compared
    assert learning_health(curve(settles, improves), uniform=LN2).compared_on == "sampled"


def test_the_best_must_be_the_policys_own():
    settles, improves = [LN2] * 10 + [0.1] * 10, [2.0] * 10 + [1.0] * 10
    c = curve(settles, improves, epsilon=[0.1] * 20)  # at equal ε: the sampled runtime improved

    def judge(policy_objective, source):
        cmp = GraphComparison("g", 10, 10, [0, 0], 0.5, 0.5, False, 1.0, 1.0, False, policy_objective)
        return learning_health(c, uniform=LN2, random_search=[cmp], exploration=["epsilon"],
                               best_sources={"g": source})

    # the best (0.5× random search's) is an ε perturbation; the policy's own best is 0.995×: not 1 % better
    h = judge(0.995, "epsilon")
    assert h.random_ratio == 0.5 and h.policy_ratio == pytest.approx(0.995) and h.verdict == "exploration_only"
    assert h.message == ("only exploration improved: the best placement found (0.500× random search's) is "
                         "exploration's, and the policy's own best is 0.995× random search's")
    assert judge(None, "epsilon").message.endswith("the policy placed none of its own as good")
    assert judge(0.6, "epsilon").verdict == "learned"  # a greedy checkpoint of its own beat random search
    assert judge(None, "greedy").verdict == "learned" and judge(None, "policy").policy_ratio == 0.5
    # no random comparison (measured rewards): the sources alone
    h = learning_health(c, uniform=LN2, exploration=["epsilon"], best_sources={"g": "epsilon"})
    assert h.verdict == "exploration_only" and "the best placement of g is exploration's" in h.message


def test_nothing_to_choose_comes_first():
    h = learning_health(curve([0.0] * 5, [1.0] * 5), nothing_to_choose=True)
    assert h.verdict == "nothing_to_choose" and h.message.startswith("nothing to choose: every op group has one")


def test_entropy_reference_uses_feasible_devices():
    ops = [{"name": f"o{i}", "compute": 1.0} for i in range(4)]
    ops[0]["device"] = "gpu:1"  # pinned: one feasible device, entropy 0
    task = make_task(graph(ops, [("o0", "o1"), ("o1", "o2")]), cluster(3), groups=None)
    assert uniform_entropy(task) == pytest.approx(3 * math.log(3) / 4)
    ref, basis = entropy_reference("placeto", 3, {"k": task})
    assert ref == {"k": pytest.approx(3 * math.log(3) / 4)} and "feasible" in basis
    assert entropy_reference("rnn", 3)[0] == pytest.approx(math.log(3))  # without tasks: ln(devices)
    assert entropy_reference("doppler", 3)[0] is None


def test_random_search_best_matches_an_independent_computation():
    g, c = load_graph("gen:random?ops=20&seed=3"), cluster(3, memory=0.002 * GB)  # tight memory: some OOM
    task = make_task(g, c, groups=None, memory_penalty=2.0)
    n, seed = 57, random_search_seed(7, 1)
    best = random_search(task, n, seed=seed, chunk=10)  # chunks do not change the placements drawn
    assert task.evaluations == 0

    rng, sim, expected = np.random.default_rng(seed), Simulator(g, c), None
    for _ in range(n):
        devices = task.random_placement(rng)
        ms, peak = sim.makespan_and_peak(devices[task.op_group])
        ev = (bool((peak > c.memory).any()), penalized_runtime(ms, peak, c.memory, c=2.0), ms)
        expected = ev if expected is None or ev[:2] < expected[:2] else expected
    assert (best.oom, best.objective, best.makespan) == pytest.approx(expected)
    assert random_search(task, n, seed=seed) == best and random_search(task, 0, seed=seed) is None


def test_assess_evaluates_as_many_random_placements_as_the_training(tmp_path):
    g = load_graph("gen:random?ops=20&seed=3")
    tasks = {"x": make_task(g, cluster(2), groups=None), "y": make_task(two_chains(0.1e9), cluster(2), groups=None)}
    c = curve([LN2] * 12, [1.0] * 12, ["x", "y", "y"] * 4, [2, 1, 3] * 4)
    best = {"x": {"objective": 1e-3, "makespan_s": 1e-3, "oom": False},
            "y": {"objective": 3.0, "makespan_s": 3.0, "oom": False}}
    h = assess(c, tasks, placer="placeto", num_devices=2, seed=5, best=best)
    assert [(r.graph, r.placements_trained, r.placements, r.seed) for r in h.random_search] == [
        ("x", 8, 8, [5, 0]), ("y", 16, 16, [5, 1])]
    expected = random_search(tasks["y"], 16, seed=[5, 1])
    assert h.random_search[1].random_objective == expected.objective
    assert h.random_ratio == pytest.approx(math.sqrt(h.random_search[0].ratio * h.random_search[1].ratio))
    capped = assess(c, tasks, placer="placeto", num_devices=2, best=best, max_random=5)
    assert [r.placements for r in capped.random_search] == [5, 5] and capped.random_placements == 10
    assert "(capped: the training evaluated 24)" in capped.summary and "capped" not in h.summary
    measured = assess(c, tasks, placer="placeto", num_devices=2, best=best, reward="measured")
    assert measured.random_search == [] and "measured" in measured.random_missing
    # the record survives JSON and reads back
    doc = json.loads(json.dumps(h.to_dict()))
    assert doc["verdict"] == h.verdict and doc["random_placements"] == 24 and doc["message"] == h.message
    assert LearningHealth.from_dict(doc) == h


def test_stored_runs_new_and_old(tmp_path):
    from policies.rl.core.reinforce import Budget
    from policies.rl.core.training_runs import start_training

    store = RunStore(tmp_path / "runs")
    out = start_training("placeto", graph_file(tmp_path), cluster_file(tmp_path), params={"groups": None, "batch": 4},
                         budget=Budget(episodes=12), store=store)
    run = store.load(out.run_id)
    stored = run.meta["metrics"]["learning_health"]
    assert stored == out.learning_health and stored["episodes"] == 12
    (cmp,) = stored["random_search"]
    assert cmp["placements"] == cmp["placements_trained"] == run.meta["metrics"]["placements_evaluated"]
    assert stored_health(run).to_dict() == stored

    # a run stored before verdicts: computed from its curve, with the random search on its rebuilt graph
    metrics = {k: v for k, v in run.meta["metrics"].items() if k != "learning_health"}
    run.update(metrics=metrics)
    old = store.load(out.run_id)
    assert stored_health(old).to_dict() == stored
    # ... and when its graph cannot be rebuilt, the entropy and runtime parts only, saying why
    doc = old.read_json("policy.json")
    old.write_json("policy.json", {**doc, "graphs": [str(tmp_path / "gone.json")]})
    h = stored_health(store.load(out.run_id))
    assert h.random_search == [] and "could not be rebuilt" in h.random_missing
    assert h.entropy_first == stored["entropy_first"] and "random search: the training's graphs" in h.summary


def test_a_verdict_stored_under_the_first_rule_is_judged_again(tmp_path):
    """A record of rule version 1 (the bundled runs' kind): "learned" from an entropy that never fell from its
    first window, and from an ε-greedy placer's sampled runtimes, reads under this rule with its old verdict
    kept; the run keeps loading."""
    store = RunStore(tmp_path / "runs")
    v1 = {"version": 1, "episodes": 400, "window": 80, "entropy_first": 0.2, "entropy_last": 0.19,
          "uniform_entropy": LN2, "uniform_basis": "ln(devices)", "entropy_first_ratio": 0.2 / LN2,
          "entropy_last_ratio": 0.19 / LN2, "runtime_first_s": 2.0, "runtime_last_s": 1.0, "runtime_ratio": 0.5,
          "random_search": [vars(_comparison(0.5, 1.0)) | {"ratio": 0.5}], "random_missing": None,
          "verdict": "learned", "label": "learned", "message": "learned: …", "summary": "…"}

    def stored(placer, record):
        run = store.create("train", graph_name="g", graph_hash="", cluster="test", placer=placer, parameters={},
                           seed=0)
        run.write_json("policy.json", {"placer": placer, "num_devices": 2})
        run.finish("done", {"learning_health": record})
        return stored_health(store.load(run.id))

    h = stored("placeto", v1)
    assert (h.previous_verdict, h.verdict) == ("learned", "still_exploring")  # 0.19 / 0.2: it did not fall
    assert "judged again by rule 2, stored as 'learned'" in h.summary
    settled = {**v1, "entropy_last": 0.01, "entropy_last_ratio": 0.01 / LN2}
    assert stored("placeto", settled).verdict == "learned" and stored("placeto", settled).compared_on == "sampled"
    h = stored("gdp", settled)  # ε-greedy: sampled runtimes without ε recorded compare nothing
    assert h.verdict == "settled_without_improving" and h.not_compared == "ε not recorded and no greedy checkpoints"
    assert stored("placeto", {**settled, "version": 2}).verdict == "learned"  # a current record is read as stored

