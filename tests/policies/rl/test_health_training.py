"""The learning-health verdict cannot be fooled (policies.rl.core.health), on trainings run for real: a frozen
policy, a one-device cluster, an entropy that settles on what the policy already placed, and a sampled runtime
that improves only as ε decays each get their own verdict, where the first rule said "learned" or "no better
than random search" (issue 56).

The graph: two chains of 8 ops (1 s each, 1 s transfers) on two identical devices. The best placement puts one
chain on each device (8 s); random placements split chains (~11 s for as many as these trainings evaluate).
GDP's critical-path teacher (Stage I) places it so; its ε-greedy Stage II from those weights samples worse
placements while ε is large."""

from __future__ import annotations

import json

import pytest
from rl_graphs import cluster_file, graph, graph_file

from placelab.cli import run_command

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SMALL = {"hidden": 16, "heads": 2, "segment": 2, "type_buckets": 8}


def chains(k: int = 8) -> object:
    ops = [{"name": f"{c}{i}", "compute": 1.0, "output_bytes": 1e9} for c in "ab" for i in range(k)]
    return graph(ops, [(f"{c}{i}", f"{c}{i + 1}") for c in "ab" for i in range(k - 1)], name="chains")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("health")
    return {"graph": graph_file(tmp, chains()), "c2": cluster_file(tmp), "c1": cluster_file(tmp, 1),
            "runs": str(tmp / "runs")}


def train(capsys, files, *args, placer="gdp", episodes=30, cluster="c2", params=SMALL):
    argv = ["train", "--placer", placer, "--graphs", files["graph"], "--cluster", files[cluster], "--episodes",
            str(episodes), "--seed", "0", "--threads", "1", "--runs-dir", files["runs"], "--json",
            *[f"--param={k}={v}" for k, v in params.items()], *args]
    assert run_command(argv) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["episodes"] == episodes  # exactly the episodes asked for
    return out


@pytest.fixture(scope="module")
def stage1(files):
    """GDP Stage I (the issue's first command), stored: it learns the teacher's placement. (A module's fixture has
    no capsys: its verdict is read from the stored run.)"""
    argv = ["train", "--placer", "gdp", "--graphs", files["graph"], "--cluster", files["c2"], "--episodes", "30",
            "--seed", "0", "--threads", "1", "--runs-dir", files["runs"], "--stage", "imitation", "--save",
            *[f"--param={k}={v}" for k, v in {**SMALL, "lr": 1e-2, "lr_final": 1e-2}.items()]]
    assert run_command(argv) == 0
    from engine.store.runs import RunStore

    (run,) = RunStore(files["runs"]).list(kind="train")
    return run.id, run.meta["metrics"]["learning_health"]


def test_stage_one_learned_the_teachers_placement(stage1):
    _, h = stage1
    # its greedy placement went from the start's to the best one: the policy changed and improved
    assert h["verdict"] == "learned", h["summary"]
    assert h["greedy_first_s"] > h["greedy_last_s"] == pytest.approx(8.0), h["summary"]
    assert h["weight_change"] > 1e-3 and h["exploration"] == ["epsilon"]


def test_a_frozen_policy_is_frozen_not_learned(capsys, files, stage1):
    """The issue's second command: Stage II from Stage I at a learning rate of 1e-12. ε decays from 0.2 to 0, so
    the sampled runtime improves and the entropy is far below uniform — what the first rule called learned."""
    out = train(capsys, files, "--init-from", stage1[0], params={**SMALL, "lr": 1e-12, "lr_final": 1e-12})
    h = out["learning_health"]
    assert h["verdict"] == "frozen" and h["label"] == "policy frozen", h["summary"]
    assert h["weight_change"] < 1e-9 and h["runtime_ratio"] <= 0.95 and h["entropy_last_ratio"] < 0.75
    assert h["exploration_first"]["epsilon"] > h["exploration_last"]["epsilon"]
    assert h["greedy_ratio"] == 1.0


def test_a_frozen_doppler_is_frozen_not_still_exploring(capsys, files):
    """DOPPLER has no uniform reference and its recorded entropy follows the states ε visits: its weights tell."""
    params = {"hidden": 8, "rounds": 1, "edge_hidden": 4, "head": 4, "lr": 1e-12, "lr_final": 1e-12}
    h = train(capsys, files, placer="doppler", episodes=20, params=params)["learning_health"]
    assert h["verdict"] == "frozen" and h["uniform_entropy"] is None and h["weight_change"] < 1e-9, h["summary"]


def test_an_improvement_that_is_only_epsilons_is_exploration_only(capsys, files, stage1):
    """Stage II at 1e-6: the weights move (not frozen), the greedy placement stays where Stage I left it, and the
    sampled runtime improves only because ε falls."""
    h = train(capsys, files, "--init-from", stage1[0], params={**SMALL, "lr": 1e-6, "lr_final": 1e-6})[
        "learning_health"]
    assert h["verdict"] == "exploration_only" and h["label"] == "only exploration improved", h["summary"]
    assert h["weight_change"] > 1e-6 and h["greedy_ratio"] == 1.0 and h["runtime_ratio"] <= 0.95
    assert h["exploration_first"]["epsilon"] > 0.15 > 0.05 > h["exploration_last"]["epsilon"]
    assert "as ε went" in h["message"] and "the greedy placement's runtime did not (×1.000)" in h["message"]


def test_an_entropy_that_settles_on_what_the_policy_placed_is_not_learning(capsys, files, stage1):
    """More Stage I, sampling from π (no ε): the entropy falls further, the greedy placement was the best already."""
    h = train(capsys, files, "--init-from", stage1[0], "--stage", "imitation", episodes=20,
              params={**SMALL, "acting": "sample", "lr": 3e-2, "lr_final": 3e-2})["learning_health"]
    assert h["verdict"] == "settled_without_improving", h["summary"]
    assert h["entropy_last"] <= 0.75 * h["entropy_first"] and h["greedy_ratio"] == 1.0
    assert h["exploration_first"] == h["exploration_last"] == {"epsilon": 0.0}


def test_a_one_device_cluster_has_nothing_to_choose(capsys, files):
    h = train(capsys, files, episodes=12, cluster="c1")["learning_health"]
    assert h["verdict"] == "nothing_to_choose" and h["nothing_to_choose"], h["summary"]
    assert h["random_ratio"] == pytest.approx(1.0)  # the first rule: "no better than random search"
