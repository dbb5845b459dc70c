"""The shared training loop (policies.rl.core.trainer): learning-curve rows, schedules, checkpoints and
exact resume."""

from __future__ import annotations

import time

import pytest
import torch
from rl_graphs import cluster, two_chains

from policies.rl.core.reinforce import Budget, StoppingRule
from policies.rl.core.task import make_task
from policies.rl.core.trainer import Trainer
from policies.rl.placeto.agent import PlacetoAgent
from policies.rl.placeto.config import PlacetoConfig

torch.set_num_threads(1)

CONFIG = {"groups": None, "batch": 4}


def _trainer(seed: int = 0, episodes: int = 40) -> Trainer:
    t = make_task(two_chains(0.1e9), cluster(), groups=None)
    agent = PlacetoAgent(2, PlacetoConfig(**CONFIG), seed=seed)
    return Trainer(agent, {"g": t}, seed=seed, budget=Budget(episodes=episodes), stopping=StoppingRule(0))


def test_checkpoint_then_resume_gives_the_same_next_step(tmp_path):
    a = _trainer()
    a.step()
    a.save_checkpoint(tmp_path / "ckpt.pt")
    rows_a = a.step()
    params_a = [p.detach().clone() for p in a.agent.model.parameters()]

    b = _trainer(seed=7)  # different init and generator: everything comes from the checkpoint
    b.load_checkpoint(tmp_path / "ckpt.pt")
    assert b.episodes == 4 and b.updates == 1
    rows_b = b.step()
    for ra, rb in zip(rows_a, rows_b, strict=True):
        assert {k: v for k, v in ra.items() if k != "wall_time"} == {k: v for k, v in rb.items() if k != "wall_time"}
    for pa, pb in zip(params_a, b.agent.model.parameters(), strict=True):
        assert torch.equal(pa, pb)



def test_learning_curve_rows_follow_the_contract():
    tr = _trainer(episodes=8)
    tr.train()
    assert tr.episodes == 8 and tr.updates == 2
    row = tr.last_rows[-1]
    assert set(row) >= {"episode", "sampled_runtime", "best_runtime", "reward", "entropy", "learning_rate",
                        "placements_evaluated", "wall_time"}
    assert row["episode"] == 8 and row["placements_evaluated"] == tr.placements
    assert row["best_runtime"] == pytest.approx(tr.best["g"].makespan)
    assert row["best_runtime"] <= min(r["sampled_runtime"] for r in tr.last_rows)



def test_an_episode_budget_is_never_overshot():
    """Issue 56: ``--episodes 10`` with 4 episodes per update ran 12; the last update now collects the 2 left."""
    tr = _trainer(episodes=10)
    tr.train()
    assert (tr.episodes, tr.updates, tr.sampled) == (10, 3, 10)
    assert [r["episode"] for r in tr.last_rows] == [9, 10]


def test_greedy_checkpoints_start_from_the_initial_weights_and_are_not_counted():
    """The first row holds the starting weights' greedy placement (weights moved 0); later checkpoints come every
    half window (a window of 8 of 40 episodes: every 4, so at every update's last row) and at the last update.
    None is counted among the placements evaluated."""
    tr = _trainer(episodes=40)
    start = tr._greedy("g")
    logged: list[dict] = []
    log = tr._log
    tr._log = lambda rows: (logged.extend(rows), log(rows))
    tr.train()
    marked = [r for r in logged if r["greedy_objective"] is not None]
    assert tr.greedy_every() == 4 and [r["episode"] for r in marked] == [1, *range(4, 41, 4)]
    assert (marked[0]["greedy_objective"], marked[0]["weight_change"]) == (start.objective, 0.0)
    changes = [r["weight_change"] for r in marked]
    assert changes == sorted(changes) and changes[-1] == tr.weight_change > 0
    assert tr.tasks["g"].evaluations == tr.placements == logged[-1]["placements_evaluated"]


def test_learning_rate_and_entropy_decay_linearly():
    tr = _trainer(episodes=8)
    cfg = tr.agent.config
    first = tr.step()[0]
    second = tr.step()[0]
    assert first["learning_rate"] == pytest.approx(cfg.lr)
    assert second["learning_rate"] == pytest.approx(cfg.lr + (cfg.lr_final - cfg.lr) * 0.5)
    assert second["entropy_coef"] == pytest.approx(cfg.entropy + (cfg.entropy_final - cfg.entropy) * 0.5)


def test_resume_leaves_tensorboard_one_event_per_episode(tmp_path):
    """A process killed after its checkpoint wrote events past it; the resumed run's writer purges them
    (issue 18: the learning curve CSV was cut back, TensorBoard still showed the episodes twice)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from engine.store.runs import RunStore

    run = RunStore(tmp_path / "runs").create("train", graph_name="g", graph_hash="", cluster="c", placer="placeto",
                                             parameters={}, seed=0)

    def trainer(seed: int, episodes: int) -> Trainer:
        t = make_task(two_chains(0.1e9), cluster(), groups=None)
        return Trainer(PlacetoAgent(2, PlacetoConfig(**CONFIG), seed=seed), {"g": t}, seed=seed,
                       budget=Budget(episodes=episodes), stopping=StoppingRule(0), run=run)

    a = trainer(0, 4)
    a.train()                                  # episodes 1-4 (one update of batch 4)
    a.save_checkpoint(tmp_path / "ckpt.pt")
    a.budget = Budget(episodes=8)
    a.train()                                  # episodes 5-8: lost when the process dies
    a.close()
    # TensorBoard reads a run's event files in name order, and a name starts with its writer's creation time in
    # whole seconds: the resumed writer's file must be named after the first one's, as a process resumed after a
    # kill is. Two writers in one second of one process sorted by their counter ("10" before "9": once seen).
    [first] = (run.path / "tensorboard").glob("events.out.tfevents.*")
    while int(time.time()) <= int(first.name.split(".")[3]):
        time.sleep(0.05)
    b = trainer(7, 12)
    b.load_checkpoint(tmp_path / "ckpt.pt")
    b.train()                                  # episodes 5-8 again, then 9-12
    b.close()
    acc = EventAccumulator(str(run.path / "tensorboard"))
    acc.Reload()
    steps = [e.step for e in acc.Scalars("train/sampled_runtime")]
    assert sorted(steps) == list(range(1, 13))
