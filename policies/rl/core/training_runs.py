"""Training runs in the run store: start, resume, load a trained policy, evaluate it zero-shot.

A ``train`` run holds (besides ``run.json``; names in :mod:`policies.rl.core.run_files`):
``policy.json`` (the placer, its config — including what the agent fixed from the training
graphs, such as the RNN placer's vocabulary —, the cluster, the training graphs' specs),
``checkpoint.pt``, ``learning_curve.csv``, ``tensorboard/``, and — when it trained on one
graph — the best placement found with its schedule (``graph.json``, ``placement.json``, …),
so the app replays and compares it like any placement run. When a training ends, its
learning-health verdict (:mod:`policies.rl.core.health`) is computed once and stored in the run's
``metrics.learning_health`` (and returned in :class:`TrainOutcome`, stored or not).

An ``eval`` run holds the zero-shot results of a trained policy on some graphs:
``metrics.results`` and ``results.csv``, one row per graph (``placelab eval``).

Failures name the run, as one :class:`~engine.errors.RunError` (exit 2 on the command line): a
``checkpoint.pt`` that cannot be loaded or does not fit, a ``policy.json`` with a key missing or of the
wrong type, a resume whose graphs changed since the run started (their content hash differs from the
run's). A full disk while a run trains ends the run as ``failed`` with the reason in its ``error``,
removes its checkpoint temp files, and raises one ``RunError``; a Ctrl-C is held off while an interrupted
run saves its checkpoint and status, so a second Ctrl-C cannot leave it half-saved.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.cluster import Cluster, cluster_from_dict, cluster_to_dict
from engine.errors import PlacelabError, RunError, SpecError, quote
from engine.limits import MAX_DEVICES
from engine.placement import Placement
from engine.sim.objectives import lower_bound
from engine.sim.simulator import Simulator
from engine.specs import expand_graph_specs, load_cluster, load_graph
from engine.store.records import write_placement_files
from engine.store.runs import Run, RunStore
from policies.rl.core.measured import check_executable, rewards_for
from policies.rl.core.reinforce import Budget, StoppingRule
from policies.rl.core.request import TrainingRequest, build_request
from policies.rl.core.run_files import CHECKPOINT, CURVE, POLICY, STOP_REQUEST
from policies.rl.core.run_safety import (
    fail_run,
    one_line,
    release_space,
    remove_temp_files,
    reserve_space,
    sigint_held,
    stop_run,
)
from policies.rl.core.task import PlacementTask, graphs_hash, same_graphs, task_for
from policies.rl.core.trainer import Trainer, read_checkpoint
from policies.rl.registry import make_agent, make_config, stored_params

__all__ = ["TrainOutcome", "evaluate_policy", "load_policy", "load_tasks", "policy_place", "resume_training",
           "run_training", "start_training"]

Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class TrainOutcome:
    run_id: str | None
    episodes: int
    placements_evaluated: int
    best_makespan_s: float | None
    wall_s: float
    stop_reason: str
    learning_health: dict[str, Any] | None = None  # policies.rl.core.health.LearningHealth.to_dict()
    placements_sampled: int | None = None  # the papers' unit, what --max-placements counts (docs/budgets.md)

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "episodes": self.episodes, "placements_evaluated": self.placements_evaluated,
                "placements_sampled": self.placements_sampled,
                "best_makespan_s": self.best_makespan_s, "wall_s": self.wall_s, "stop_reason": self.stop_reason,
                "learning_health": self.learning_health}


class _CurveKeepingTrainer(Trainer):
    """A trainer that also keeps its learning curve in memory, every column as logged (with the greedy
    checkpoints'), for the learning-health verdict of a training that is not stored (a stored one reads it back
    from its ``learning_curve.csv``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.curve: dict[str, list] = {}

    def _log(self, rows: list[dict[str, Any]]) -> None:
        super()._log(rows)
        for row in rows:  # as logged: with the greedy checkpoint's columns
            for k, v in row.items():
                self.curve.setdefault(k, []).append(v)


def load_tasks(specs: list[str], cluster: Cluster, config: Any) -> dict[str, PlacementTask]:
    """Load and group every graph spec for a learned placer (key = the spec)."""
    return {spec: task_for(load_graph(spec), cluster, config) for spec in specs}


def _budget_doc(b: Budget) -> dict[str, Any]:
    return {"episodes": b.episodes, "placements": b.placements, "seconds": b.seconds}


def start_training(placer: str, graphs: str, cluster: str | Cluster, *, store: RunStore | None = None,
                   progress: Progress | None = None, **options: Any) -> TrainOutcome:
    """Train learned placer ``placer`` on the graphs of ``graphs`` (a multi-graph spec), stored in ``store``
    when given: :func:`run_training` of :func:`~policies.rl.core.request.build_request` (``options`` are its
    keyword arguments)."""
    request = build_request(placer, graphs, cluster, store=None if store is None else store.root, **options)
    return run_training(request, progress=progress)


def run_training(request: TrainingRequest, *, progress: Progress | None = None) -> TrainOutcome:
    """Train as ``request`` says (checked when it was built: nothing here parses or checks it again)."""
    r = request
    c = r.cluster
    config = make_config(r.placer, r.params)
    tasks = load_tasks(list(r.specs), c, config)
    agent = make_agent(r.placer, c.num_devices, config.to_dict(), seed=r.seed, tasks=list(tasks.values()))
    source = _init_weights(agent, r.placer, RunStore(r.runs_dir).load(r.init_from)) if r.init_from else None
    rollouts = _workers(r.placer, agent, tasks, r.workers, r.address)  # bad worker options: refused before the run
    run = None
    if r.store is not None:
        # each single graph by its name, never by its file's path (an upload lives in the app's server folder)
        graph_name = ",".join(tasks[p].graph.name if p in tasks else p for p in (s.strip() for s in r.graphs.split(","))
                              if p)
        run = RunStore(r.store).create(
            "train", graph_name=graph_name, graph_hash=graphs_hash([t.graph for t in tasks.values()]),
            cluster=c.name, placer=r.placer,
            parameters={**config.to_dict(), "graphs": r.graphs, "budget": _budget_doc(r.budget), "reward": r.reward,
                        **({"init_from": source} if source else {})},
            seed=r.seed, tags=list(r.tags), name=r.name)
        try:
            run.write_json(POLICY, {"placer": r.placer, "config": agent.config.to_dict(), "num_devices": c.num_devices,
                                    "cluster": cluster_to_dict(c), "graphs": list(r.specs), "seed": r.seed,
                                    "budget": _budget_doc(r.budget), "reward": r.reward,
                                    "stopping": {"window": r.stopping[0], "tolerance": r.stopping[1]}})
        except BaseException as exc:
            fail_run(run, exc)
            raise
    trainer = (Trainer if run is not None else _CurveKeepingTrainer)(
        agent, tasks, seed=r.seed, budget=r.budget, stopping=r.stopping_rule(), run=run, progress=progress,
        rollouts=rollouts)
    return _train_and_finish(trainer, run, r.placer, r.reward, seed=r.seed, max_random=r.max_random)


def _workers(placer: str, agent: Any, tasks: dict[str, PlacementTask], workers: int | None,
             address: str | None) -> Any:
    """Rollout workers on Ray when asked for, else None (roll out in this process)."""
    if workers is None and address is None:
        return None
    from policies.rl.core.workers import RolloutWorkers

    return RolloutWorkers(placer, agent, tasks, workers=workers, address=address)


def _init_weights(agent: Any, placer: str, run: Run) -> str:
    """Load the weights of training run ``run`` into ``agent``; returns the run's id."""
    doc = _policy_doc(run)
    if doc["placer"] != placer:
        raise SpecError(f"--init-from {run.id}: that run trained {quote(doc['placer'])}, not {quote(placer)}")
    if CHECKPOINT not in run.files():
        raise RunError(f"run {run.id} has no trained weights yet ({CHECKPOINT} is missing)")
    state = read_checkpoint(run.path / CHECKPOINT, f"run {run.id}: {CHECKPOINT}")["model"]
    try:
        agent.load_weights(state)
    except ValueError:
        stored = stored_params(doc["placer"], doc["config"])  # a field added since stands for its old value
        differ = [f"{k}={stored[k]!r}" for k in agent.network_sizes
                  if k in stored and stored[k] != getattr(agent.config, k)]
        hint = f" (that run has {', '.join(differ)}: pass --param {' --param '.join(differ)})" if differ else ""
        raise SpecError(f"--init-from {run.id}: its networks differ in size from this configuration's{hint}") from None
    return run.id


def _learning_health(trainer: Trainer, run: Run | None, placer: str, reward: str, seed: int,
                     max_random: int | None) -> dict[str, Any] | None:
    """The training's learning-health verdict (:mod:`policies.rl.core.health`), from its whole learning curve (a
    stored run's file, so a resumed run counts every episode); None, with a warning, when it cannot be
    computed — it never fails a training."""
    from policies.rl.core.training_health import assess

    try:
        curve = run.read_table(CURVE) if run is not None and CURVE in run.files() else getattr(trainer, "curve", None)
        if not curve or not curve.get("episode"):
            return None

        def note(message: str) -> None:
            if trainer.progress is not None:
                trainer.progress(trainer.episodes, trainer.budget.episodes or 0, message)

        health = assess(curve, trainer.tasks, placer=placer,
                        num_devices=next(iter(trainer.tasks.values())).num_devices, seed=seed, best=trainer.best,
                        reward=reward, max_random=max_random, progress=note)
        return None if health is None else health.to_dict()
    except Exception as exc:  # the verdict is a report: a failure to compute it must not lose the training
        warnings.warn(f"learning health not computed: {str(exc) or type(exc).__name__}", stacklevel=2)
        return None


def _train_and_finish(trainer: Trainer, run: Run | None, placer: str, reward: str = "simulated", *, seed: int = 0,
                      max_random: int | None = None) -> TrainOutcome:
    if run is None:
        return _train_and_store(trainer, run, placer, reward, seed=seed, max_random=max_random)
    reserve_space(run)
    try:
        return _train_and_store(trainer, run, placer, reward, seed=seed, max_random=max_random)
    finally:
        release_space(run)


def _train_and_store(trainer: Trainer, run: Run | None, placer: str, reward: str, *, seed: int,
                     max_random: int | None) -> TrainOutcome:
    try:
        with rewards_for(trainer.tasks, reward):
            reason = trainer.train()
    except KeyboardInterrupt:
        with sigint_held():  # a second Ctrl-C must not leave the run half-saved
            with contextlib.suppress(Exception):
                trainer.close()
            if run is not None:
                stop_run(trainer, run)
        raise
    except BaseException as exc:
        with contextlib.suppress(Exception):  # closing flushes TensorBoard, which fails again on a full disk
            trainer.close()
        if run is not None:
            fail_run(run, exc)
        raise
    try:
        trainer.close()
    except BaseException as exc:
        if run is not None:
            fail_run(run, exc)
        raise
    interrupted = False
    try:
        health = _learning_health(trainer, run, placer, reward, seed, max_random)
    except KeyboardInterrupt:  # while the random search runs: finish the run without the verdict, then stop
        health, interrupted = None, True
    outcome = TrainOutcome(run.id if run else None, trainer.episodes, trainer.placements, trainer.best_makespan(),
                           trainer.wall, reason, health, placements_sampled=trainer.sampled)
    if run is not None:
        with sigint_held() as pending:
            try:
                _store_outcome(trainer, run, outcome, health, interrupted)
            except BaseException as exc:
                fail_run(run, exc)
                raise
        interrupted = interrupted or bool(pending)
    if interrupted:
        raise KeyboardInterrupt
    return outcome


def _store_outcome(trainer: Trainer, run: Run, outcome: TrainOutcome, health: dict[str, Any] | None,
                   interrupted: bool) -> None:
    """Write a finished training's metrics (and, on one graph, its best placement) and end the run."""
    reason = outcome.stop_reason
    metrics: dict[str, Any] = {
        "episodes": trainer.episodes, "updates": trainer.updates, "placements_evaluated": trainer.placements,
        "placements_sampled": trainer.sampled, "best_makespan_s": outcome.best_makespan_s, "wall_s": trainer.wall,
        "stop_reason": reason,
        "episodes_per_minute": 60.0 * trainer.episodes / max(trainer.wall, 1e-9),
        "best_by_graph": {k: {"makespan_s": b.makespan, "objective": b.objective, "oom": b.oom,
                              "placements_evaluated": b.placements_evaluated,
                              "placements_sampled": b.placements_sampled, "source": b.source}
                          for k, b in trainer.best.items()},
    }
    if len(trainer.tasks) == 1:  # a single graph: store its best placement like any placement run
        key, task = next(iter(trainer.tasks.items()))
        devices = task.expand(trainer.best[key].devices)
        schedule = Simulator(task.graph, task.cluster).run(devices)
        metrics.update(write_placement_files(run, task.graph, task.cluster, Placement(devices), schedule))
    if health is not None:
        metrics["learning_health"] = health
    run.update(progress=trainer.status())
    run.finish("interrupted" if reason == "stopped" or interrupted else "done", metrics)


#: Keys of ``policy.json`` and their JSON types: every reader needs the first six; a resume also the last two.
_POLICY_KEYS: dict[str, type | tuple[type, ...]] = {
    "placer": str, "config": dict, "num_devices": int, "cluster": dict, "graphs": list, "seed": int,
    "budget": dict, "stopping": dict,
}
_RESUME_ONLY = ("budget", "stopping")


def _policy_doc(run: Run, *, resume: bool = False) -> dict[str, Any]:
    """The run's ``policy.json``, checked: a key missing or of the wrong type is one RunError naming the run."""
    if run.meta.get("kind") != "train" or POLICY not in run.files():
        raise RunError(f"run {run.id} is not a training run of a learned placer (it has no {POLICY})")
    doc = run.read_json(POLICY)
    if not isinstance(doc, dict):
        raise RunError(f"run {run.id}: {POLICY} is not a JSON object")
    for key, kind in _POLICY_KEYS.items():
        if key in _RESUME_ONLY and not resume:
            continue
        if key not in doc:
            raise RunError(f"run {run.id}: {POLICY} has no {quote(key)}; it is damaged or not written by placelab")
        if not isinstance(doc[key], kind) or isinstance(doc[key], bool):
            raise RunError(f"run {run.id}: {POLICY} key {quote(key)} has the wrong type ({type(doc[key]).__name__})")
    if not 1 <= doc["num_devices"] <= MAX_DEVICES:  # a network sized by it: 10^12 overflowed torch
        raise RunError(f"run {run.id}: {POLICY} has num_devices {doc['num_devices']:,}, not 1 to {MAX_DEVICES:,}")
    return doc


def resume_training(store: RunStore, ref: str, *, episodes: int | None = None, seconds: float | None = None,
                    progress: Progress | None = None, workers: int | None = None,
                    address: str | None = None, max_random: int | None = None) -> TrainOutcome:
    """Continue a stopped or interrupted training run from its checkpoint, in the same run.

    ``episodes`` replaces the episode budget (a total, not an increment); ``seconds`` the
    wall-time budget (also a total). The learning-health verdict is computed again over every
    episode (``max_random`` as in :func:`start_training`).
    """
    store.check_writable()  # a read-only store: one line, not an OSError half-way through the run's files
    run = store.load(ref)
    if run.status == "running":
        raise RunError(f"run {run.id} is still training (pid {run.meta.get('pid')})")
    if not run.claim():  # before any file of the run is read or changed: of resumes at once, one goes on
        raise RunError(f"run {run.id} is running in another process; it cannot run twice at once")
    try:
        trainer, doc = _resumed_trainer(run, episodes, seconds, progress, workers, address)
    except BaseException:
        run.release()
        raise
    return _train_and_finish(trainer, run, doc["placer"], doc.get("reward", "simulated"), seed=int(doc["seed"]),
                             max_random=max_random)


def _resumed_trainer(run: Run, episodes: int | None, seconds: float | None, progress: Progress | None,
                     workers: int | None, address: str | None) -> tuple[Trainer, dict[str, Any]]:
    """The trainer of :func:`resume_training`, its checkpoint loaded, and the run's ``policy.json``; the run is
    made ready (temp files removed, the curve cut back to the checkpoint) and marked ``running``."""
    doc = _policy_doc(run, resume=True)
    if CHECKPOINT not in run.files():
        raise RunError(f"run {run.id} has no checkpoint to resume from")
    c = cluster_from_dict(doc["cluster"], source=f"run {run.id}")
    if doc.get("reward") == "measured":
        check_executable(c)
    agent = _stored_agent(doc, run.id)
    specs = list(doc["graphs"])
    tasks = load_tasks(specs, c, agent.config)
    _check_same_graphs(run, specs, tasks)
    b = doc["budget"]
    try:
        budget = Budget(episodes if episodes is not None else b["episodes"], b["placements"],
                        seconds if seconds is not None else b["seconds"])
        stopping = StoppingRule(**doc["stopping"])
    except (KeyError, TypeError, ValueError) as exc:
        raise RunError(f"run {run.id}: {POLICY} has a damaged budget or stopping rule ({one_line(exc)})") from None
    trainer = Trainer(agent, tasks, seed=doc["seed"], budget=budget, stopping=stopping, run=run, progress=progress,
                      rollouts=_workers(doc["placer"], agent, tasks, workers, address))
    trainer.load_checkpoint(run.path / CHECKPOINT)
    remove_temp_files(run)  # left by a process killed while it wrote a checkpoint
    run.cut_table(CURVE, "episode", trainer.episodes)  # episodes after the checkpoint are trained again
    (run.path / STOP_REQUEST).unlink(missing_ok=True)
    if budget != Budget(**b):
        run.write_json(POLICY, {**doc, "budget": _budget_doc(budget)})
    run.update(status="running", pid=os.getpid(), host=socket.gethostname(), error=None)
    return trainer, doc


def _check_same_graphs(run: Run, specs: list[str], tasks: dict[str, PlacementTask]) -> None:
    """Refuse to resume a training whose graphs are not the ones it started on (a graph file edited since):
    the run would mix two versions of a graph in one learning curve."""
    stored = (run.meta.get("graph") or {}).get("hash")
    graphs = [t.graph for t in tasks.values()]
    now = graphs_hash(graphs)
    if stored and not same_graphs(stored, graphs):
        raise RunError(f"run {run.id} cannot resume: its graphs ({', '.join(specs)}) changed since it started "
                       f"(graph hash {stored}, now {now}); start a new training on them instead")


def _stored_agent(doc: dict[str, Any], run_id: str) -> Any:
    """A fresh agent built from a ``policy.json`` (runs before the registry kept what the RNN placer
    fixes from its graphs in ``extras``; they join the config)."""
    try:
        params = stored_params(doc["placer"], {**doc["config"], **(doc.get("extras") or {})})
        return make_agent(doc["placer"], int(doc["num_devices"]), params, seed=doc["seed"])
    except (PlacelabError, KeyError, TypeError, ValueError) as exc:
        raise RunError(f"run {run_id}: {POLICY} does not describe a policy this placelab can build "
                       f"({one_line(exc)})") from None


def load_policy(run: Run) -> tuple[Any, dict[str, Any]]:
    """The trained agent of a ``train`` run (weights from its checkpoint) and its ``policy.json``."""
    doc = _policy_doc(run)
    if CHECKPOINT not in run.files():
        raise RunError(f"run {run.id} has no trained weights yet ({CHECKPOINT} is missing)")
    agent = _stored_agent(doc, run.id)
    what = f"run {run.id}: {CHECKPOINT}"
    state = read_checkpoint(run.path / CHECKPOINT, what)["model"]
    try:
        agent.load_weights(state)
    except ValueError:
        raise RunError(f"{what} does not fit the run's {POLICY} (its networks differ)") from None
    agent.model.eval()
    return agent, doc


def policy_place(agent: Any, doc: dict[str, Any], task: PlacementTask, seed: int = 0) -> np.ndarray:
    """Zero-shot: the trained policy's greedy group placement of ``task``."""
    if task.num_devices != int(doc["num_devices"]):
        raise SpecError(f"the policy was trained for {doc['num_devices']} devices; cluster {quote(task.cluster.name)} "
                        f"has {task.num_devices}")
    return agent.place(task, np.random.default_rng(seed), greedy=True)


def evaluate_policy(store: RunStore, ref: str, graphs: str, *, cluster: str | None = None, seed: int = 0,
                    save: bool = True, progress: Progress | None = None) -> tuple[list[dict[str, Any]], str | None]:
    """Apply a trained policy, without retraining, to every graph of ``graphs``.

    Returns the rows ``{graph, makespan_s, lower_bound_s, oom, seconds_to_place}`` and the
    id of the ``eval`` run that stores them (None with ``save=False``).
    """
    run = store.load(ref)
    if save:
        store.check_writable()  # before the graphs are placed
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
