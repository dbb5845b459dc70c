"""Training runs in the run store: start, resume, load a trained policy, evaluate it zero-shot.

A ``train`` run holds (besides ``run.json``; names in :mod:`policies.rl.run_files`):
``policy.json`` (the placer, its config — including what the agent fixed from the training
graphs, such as the RNN placer's vocabulary —, the cluster, the training graphs' specs),
``checkpoint.pt``, ``learning_curve.csv``, ``tensorboard/``, and — when it trained on one
graph — the best placement found with its schedule (``graph.json``, ``placement.json``, …),
so the app replays and compares it like any placement run.

An ``eval`` run holds the zero-shot results of a trained policy on some graphs:
``metrics.results`` and ``results.csv``, one row per graph (``placelab eval``).
"""

from __future__ import annotations

import hashlib
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.cluster import Cluster, cluster_from_dict, cluster_to_dict, load_cluster
from engine.errors import RunError, SpecError
from engine.graph import CompGraph
from engine.objectives import lower_bound
from engine.placement import Placement
from engine.run_records import write_placement_files
from engine.runs import Run, RunStore
from engine.simulator import Simulator
from engine.sources import expand_graph_specs, load_graph
from policies.rl.measured import REWARDS, check_executable, rewards_for
from policies.rl.registry import make_agent, make_config
from policies.rl.reinforce import Budget, StoppingRule
from policies.rl.run_files import CHECKPOINT, CURVE, POLICY, STOP_REQUEST
from policies.rl.task import PlacementTask, make_task
from policies.rl.trainer import Trainer

__all__ = ["TrainOutcome", "evaluate_policy", "load_policy", "load_tasks", "policy_place", "resume_training",
           "start_training", "task_for"]

Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class TrainOutcome:
    run_id: str | None
    episodes: int
    placements_evaluated: int
    best_makespan_s: float | None
    wall_s: float
    stop_reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "episodes": self.episodes, "placements_evaluated": self.placements_evaluated,
                "best_makespan_s": self.best_makespan_s, "wall_s": self.wall_s, "stop_reason": self.stop_reason}


def _default_groups(placer: str, spec: str, params: dict[str, Any]) -> dict[str, Any]:
    """A family's own group count (Placeto §4: nmt 160, ptb/cifar10 128) unless ``groups`` is given."""
    if "groups" in params or not spec.strip().startswith("family:"):
        return params
    from engine.workloads.placeto_families import family

    return {**params, "groups": family(spec.strip().split(":")[1]).groups}


def task_for(graph: CompGraph, cluster: Cluster, config: Any) -> PlacementTask:
    """``graph`` grouped and featurised as a learned placer with ``config`` needs it."""
    return make_task(graph, cluster, groups=config.groups, memory_penalty=config.memory_penalty,
                     grouping=config.grouping, unit_depth=config.unit_depth)


def load_tasks(specs: list[str], cluster: Cluster, config: Any) -> dict[str, PlacementTask]:
    """Load and group every graph spec for a learned placer (key = the spec)."""
    return {spec: task_for(load_graph(spec), cluster, config) for spec in specs}


def _budget_doc(b: Budget) -> dict[str, Any]:
    return {"episodes": b.episodes, "placements": b.placements, "seconds": b.seconds}


def start_training(placer: str, graphs: str, cluster: str | Cluster, *, params: dict[str, Any] | None = None,
                   seed: int = 0, budget: Budget | None = None, stopping: StoppingRule | None = None,
                   store: RunStore | None = None, tags: list[str] | None = None, name: str | None = None,
                   progress: Progress | None = None, init_from: str | None = None,
                   runs_dir: str = "runs", reward: str | None = None,
                   workers: int | None = None, address: str | None = None) -> TrainOutcome:
    """Train learned placer ``placer`` on the graphs of ``graphs`` (a multi-graph spec) and store the run.

    ``init_from``: a stored training run of the same placer (an id in ``runs_dir``, or the run's
    directory) whose weights the new policy starts from — DOPPLER's next stage (§5) and
    transfer to another graph or cluster (Tables 4, 10, 11). ``reward="measured"`` executes
    every evaluated placement on the cluster's devices and rewards its measured makespan
    (:mod:`policies.rl.measured`); None: ``simulated``, except DOPPLER's stage ``real`` (Stage III),
    which is always ``measured``. ``workers``/``address``: collect the rollouts on Ray workers
    (:mod:`policies.rl.workers`).
    """
    if reward is not None and reward not in REWARDS:
        raise SpecError(f"reward must be one of {', '.join(REWARDS)}, got {reward!r}")
    specs = expand_graph_specs(graphs)
    params = _default_groups(placer, graphs, dict(params or {}))
    config = make_config(placer, params)
    reward = _reward_kind(config, reward)
    if reward != "simulated" and (workers is not None or address is not None):
        raise SpecError("--reward measured executes placements on this machine's devices, one at a time: "
                        "it cannot be combined with --workers or --address")
    c = cluster if isinstance(cluster, Cluster) else load_cluster(cluster)
    if reward == "measured":
        check_executable(c)  # before the run is created: one sentence, nothing stored
    budget = budget or Budget(episodes=1000)
    stopping = stopping or StoppingRule()
    tasks = load_tasks(specs, c, config)
    agent = make_agent(placer, c.num_devices, config.to_dict(), seed=seed, tasks=list(tasks.values()))
    source = _init_weights(agent, placer, init_from, runs_dir) if init_from else None
    rollouts = _workers(placer, agent, tasks, workers, address)  # bad worker options: refused before the run
    run = None
    if store is not None:
        first = next(iter(tasks.values())).graph
        graph_name = first.name if len(specs) == 1 else graphs
        graph_hash = first.content_hash if len(specs) == 1 else hashlib.sha256(
            "\x00".join(t.graph.content_hash for t in tasks.values()).encode()).hexdigest()[:16]
        run = store.create("train", graph_name=graph_name, graph_hash=graph_hash, cluster=c.name, placer=placer,
                           parameters={**config.to_dict(), "graphs": graphs, "budget": _budget_doc(budget),
                                       "reward": reward, **({"init_from": source} if source else {})},
                           seed=seed, tags=list(tags or []), name=name)
        run.write_json(POLICY, {"placer": placer, "config": agent.config.to_dict(),
                                "num_devices": c.num_devices, "cluster": cluster_to_dict(c), "graphs": specs,
                                "seed": seed, "budget": _budget_doc(budget), "reward": reward,
                                "stopping": {"window": stopping.window, "tolerance": stopping.tolerance}})
    trainer = Trainer(agent, tasks, seed=seed, budget=budget, stopping=stopping, run=run, progress=progress,
                      rollouts=rollouts)
    return _train_and_finish(trainer, run, reward)


def _reward_kind(config: Any, reward: str | None) -> str:
    """The reward a training uses: ``reward`` as asked (default ``simulated``); a DOPPLER stage fixes
    it (§5: Stages I and II train on the simulator, Stage III on measured makespans)."""
    stage = getattr(config, "stage", None)
    if stage is None:
        return reward or "simulated"
    from policies.rl.doppler import stage_reward

    kind = stage_reward(stage)
    if reward is not None and reward != kind:
        raise SpecError(f"DOPPLER's stage '{stage}' trains on {kind} makespans (§5), not {reward} ones: "
                        f"{'use --stage real' if reward == 'measured' else 'leave out --reward'} for Stage III")
    return kind


def _workers(placer: str, agent: Any, tasks: dict[str, PlacementTask], workers: int | None,
             address: str | None) -> Any:
    """Rollout workers on Ray when asked for, else None (roll out in this process)."""
    if workers is None and address is None:
        return None
    if not callable(getattr(agent, "merge", None)):
        raise SpecError(f"learned placer '{placer}' cannot roll out on workers: its agent has no merge() "
                        "(policies.rl.agent.Agent); train it without --workers")
    from policies.rl.workers import RolloutWorkers

    return RolloutWorkers(placer, agent, tasks, workers=workers, address=address)


def _init_weights(agent: Any, placer: str, ref: str, runs_dir: str) -> str:
    """Load the weights of training run ``ref`` into ``agent``; returns the run's id."""
    import torch

    from policies.learned import resolve_run

    run = resolve_run(ref, runs_dir)
    doc = _policy_doc(run)
    if doc["placer"] != placer:
        raise SpecError(f"--init-from {run.id}: that run trained '{doc['placer']}', not '{placer}'")
    if CHECKPOINT not in run.files():
        raise RunError(f"run {run.id} has no trained weights yet ({CHECKPOINT} is missing)")
    state = torch.load(run.path / CHECKPOINT, weights_only=True)["model"]
    try:
        agent.model.load_state_dict(state)
    except RuntimeError:
        raise SpecError(f"--init-from {run.id}: its networks differ in size from this configuration's") from None
    return run.id


def _train_and_finish(trainer: Trainer, run: Run | None, reward: str = "simulated") -> TrainOutcome:
    try:
        with rewards_for(trainer.tasks, reward):
            reason = trainer.train()
    except KeyboardInterrupt:
        if run is not None:
            trainer.save_checkpoint(run.path / CHECKPOINT)
            run.update(progress=trainer.status())
            run.finish("interrupted")
        raise
    except BaseException as exc:
        if run is not None:
            run.fail(str(exc) or type(exc).__name__)
        raise
    finally:
        trainer.close()
    outcome = TrainOutcome(run.id if run else None, trainer.episodes, trainer.placements, trainer.best_makespan(),
                           trainer.wall, reason)
    if run is not None:
        metrics: dict[str, Any] = {
            "episodes": trainer.episodes, "updates": trainer.updates, "placements_evaluated": trainer.placements,
            "best_makespan_s": outcome.best_makespan_s, "wall_s": trainer.wall, "stop_reason": reason,
            "episodes_per_minute": 60.0 * trainer.episodes / max(trainer.wall, 1e-9),
            "best_by_graph": {k: {"makespan_s": b.makespan, "objective": b.objective, "oom": b.oom,
                                  "placements_evaluated": b.placements_evaluated} for k, b in trainer.best.items()},
        }
        if len(trainer.tasks) == 1:  # a single graph: store its best placement like any placement run
            key, task = next(iter(trainer.tasks.items()))
            devices = task.expand(trainer.best[key].devices)
            schedule = Simulator(task.graph, task.cluster).run(devices)
            metrics.update(write_placement_files(run, task.graph, task.cluster, Placement(devices), schedule))
        run.update(progress=trainer.status())
        run.finish("interrupted" if reason == "stopped" else "done", metrics)
    return outcome


def _policy_doc(run: Run) -> dict[str, Any]:
    if run.meta.get("kind") != "train" or POLICY not in run.files():
        raise RunError(f"run {run.id} is not a training run of a learned placer (it has no {POLICY})")
    return run.read_json(POLICY)


def resume_training(store: RunStore, ref: str, *, episodes: int | None = None, seconds: float | None = None,
                    progress: Progress | None = None, workers: int | None = None,
                    address: str | None = None) -> TrainOutcome:
    """Continue a stopped or interrupted training run from its checkpoint, in the same run.

    ``episodes`` replaces the episode budget (a total, not an increment); ``seconds`` the
    wall-time budget (also a total).
    """
    run = store.load(ref)
    if run.status == "running":
        raise RunError(f"run {run.id} is still training (pid {run.meta.get('pid')})")
    doc = _policy_doc(run)
    if CHECKPOINT not in run.files():
        raise RunError(f"run {run.id} has no checkpoint to resume from")
    c = cluster_from_dict(doc["cluster"], source=f"run {run.id}")
    if doc.get("reward") == "measured":
        check_executable(c)
    agent = _stored_agent(doc)
    tasks = load_tasks(list(doc["graphs"]), c, agent.config)
    b = doc["budget"]
    budget = Budget(episodes if episodes is not None else b["episodes"], b["placements"],
                    seconds if seconds is not None else b["seconds"])
    stopping = StoppingRule(**doc["stopping"])
    trainer = Trainer(agent, tasks, seed=doc["seed"], budget=budget, stopping=stopping, run=run, progress=progress,
                      rollouts=_workers(doc["placer"], agent, tasks, workers, address))
    trainer.load_checkpoint(run.path / CHECKPOINT)
    run.cut_table(CURVE, "episode", trainer.episodes)  # episodes after the checkpoint are trained again
    (run.path / STOP_REQUEST).unlink(missing_ok=True)
    if budget != Budget(**b):
        run.write_json(POLICY, {**doc, "budget": _budget_doc(budget)})
    run.update(status="running", pid=os.getpid(), host=socket.gethostname(), error=None)
    return _train_and_finish(trainer, run, doc.get("reward", "simulated"))


def _stored_agent(doc: dict[str, Any]) -> Any:
    """A fresh agent built from a ``policy.json`` (runs before the registry kept what the RNN placer
    fixes from its graphs in ``extras``; they join the config)."""
    return make_agent(doc["placer"], int(doc["num_devices"]), {**doc["config"], **(doc.get("extras") or {})},
                      seed=doc["seed"])


def load_policy(run: Run) -> tuple[Any, dict[str, Any]]:
    """The trained agent of a ``train`` run (weights from its checkpoint) and its ``policy.json``."""
    import torch

    doc = _policy_doc(run)
    if CHECKPOINT not in run.files():
        raise RunError(f"run {run.id} has no trained weights yet ({CHECKPOINT} is missing)")
    agent = _stored_agent(doc)
    agent.model.load_state_dict(torch.load(run.path / CHECKPOINT, weights_only=True)["model"])
    agent.model.eval()
    return agent, doc


def policy_place(agent: Any, doc: dict[str, Any], task: PlacementTask, seed: int = 0) -> np.ndarray:
    """Zero-shot: the trained policy's greedy group placement of ``task``."""
    if task.num_devices != int(doc["num_devices"]):
        raise SpecError(f"the policy was trained for {doc['num_devices']} devices; cluster '{task.cluster.name}' "
                        f"has {task.num_devices}")
    return agent.place(task, np.random.default_rng(seed), greedy=True)


def evaluate_policy(store: RunStore, ref: str, graphs: str, *, cluster: str | None = None, seed: int = 0,
                    save: bool = True, progress: Progress | None = None) -> tuple[list[dict[str, Any]], str | None]:
    """Apply a trained policy, without retraining, to every graph of ``graphs``.

    Returns the rows ``{graph, makespan_s, lower_bound_s, oom, seconds_to_place}`` and the
    id of the ``eval`` run that stores them (None with ``save=False``).
    """
    run = store.load(ref)
    agent, doc = load_policy(run)
    c = load_cluster(cluster) if cluster else cluster_from_dict(doc["cluster"], source=f"run {run.id}")
    specs = expand_graph_specs(graphs)
    rows = []
    for i, spec in enumerate(specs):
        if progress is not None:
            progress(i, len(specs), f"placing {spec}")
        task = load_tasks([spec], c, agent.config)[spec]
        t0 = time.perf_counter()
        group_devices = policy_place(agent, doc, task, seed)
        seconds = time.perf_counter() - t0
        ev = task.evaluate(group_devices)
        rows.append({"graph": spec, "makespan_s": ev.makespan, "lower_bound_s": lower_bound(task.graph, c),
                     "oom": ev.oom, "seconds_to_place": seconds})
    eval_id = None
    if save:
        ev_run = store.create("eval", graph_name=graphs, graph_hash=hashlib.sha256(graphs.encode()).hexdigest()[:16],
                              cluster=c.name, placer=doc["placer"],
                              parameters={"policy": run.id, "graphs": graphs}, seed=seed)
        with ev_run:
            ev_run.write_table("results.csv", {k: [r[k] for r in rows] for k in rows[0]} if rows else {})
            ms = [r["makespan_s"] for r in rows]
            ev_run.finish("done", {"results": rows, "median_makespan_s": float(np.median(ms)) if ms else None,
                                   "policy": run.id})
        eval_id = ev_run.id
    return rows, eval_id
