"""The learning health of a training (:mod:`policies.rl.core.health` states the rule): the inputs the
verdict needs besides the learning curve — the placer's uniform entropy and exploration parameters, looked
up by its card's name; whether there is anything to choose; the random search on each graph; the best found
and whose placement it is — and :func:`assess`, which gathers them. No torch here: the app imports this
module."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from policies.rl.core.health import OWN_SOURCES, GraphComparison, LearningHealth, column, learning_health
from policies.rl.core.random_search import random_search, random_search_seed
from policies.rl.core.task import PlacementTask

__all__ = ["assess", "entropy_reference", "no_choice", "placements_per_graph", "placer_exploration",
           "uniform_entropy"]


def uniform_entropy(task: PlacementTask) -> float:
    """Per-decision entropy of the uniform policy over feasible devices: mean over groups of ln(#feasible)."""
    return float(np.mean(np.log(np.maximum(task.feasible.sum(axis=1), 1))))


def _card(placer: str | None) -> Any:
    from policies.rl.registry import learned_placers  # lazy: imports every placer's package

    return learned_placers().get(placer) if placer else None


def placer_exploration(placer: str | None) -> tuple[str, ...]:
    """The exploration parameters (curve columns) of learned placer ``placer``'s agent; none when unknown."""
    info = _card(placer)
    return tuple(getattr(info.agent, "exploration", ())) if info is not None else ()


def entropy_reference(placer: str | None, num_devices: int | None,
                      tasks: Mapping[str, PlacementTask] | None = None) -> tuple[float | dict[str, float] | None, str]:
    """The uniform entropy the curve's entropy is compared with, and what it is (:mod:`policies.rl.core.health`,
    1.)."""
    info = _card(placer)
    why = f"placer {placer!r} records no per-device-decision entropy" if info is None else \
        info.agent.no_uniform_entropy
    if why:
        return None, f"no uniform reference: {why}"
    if tasks:
        return {str(k): uniform_entropy(t) for k, t in tasks.items()}, "mean over op groups of ln(feasible devices)"
    if num_devices is None:
        return None, "no uniform reference: the number of devices is unknown"
    if num_devices > 1:
        return math.log(num_devices), "ln(devices) (the tasks were not rebuilt: an upper bound)"
    return None, "no uniform reference: one device"


def no_choice(tasks: Mapping[str, PlacementTask] | None, num_devices: int | None) -> bool:
    """Whether every op group of every task has one feasible device (without tasks: one device)."""
    if tasks:
        return all(bool((t.feasible.sum(axis=1) <= 1).all()) for t in tasks.values())
    return num_devices is not None and num_devices <= 1


def placements_per_graph(curve: Mapping[str, Sequence]) -> dict[str, int]:
    """Placements the training evaluated on each graph: the steps of the cumulative ``placements_evaluated``."""
    graphs = [str(g) for g in curve.get("graph") or []]
    pe = column(curve, "placements_evaluated", len(graphs))
    out: dict[str, int] = {}
    before = 0.0
    for g, total in zip(graphs, pe.tolist(), strict=True):
        if math.isfinite(total):
            out[g] = out.get(g, 0) + max(round(total - before), 0)
            before = total
    return out


@dataclass(frozen=True)
class _Found:
    objective: float
    makespan: float
    oom: bool | None
    source: str | None = None


def _found_from(best: Mapping[str, Any] | None, curve: Mapping[str, Sequence]) -> dict[str, _Found]:
    """Best found per graph: the trainer's ``Best`` objects or a run's ``best_by_graph``, else the curve's
    last ``best_runtime`` (objective taken as the makespan)."""
    out: dict[str, _Found] = {}
    for k, b in (best or {}).items():
        if isinstance(b, Mapping):
            out[str(k)] = _Found(float(b["objective"]), float(b["makespan_s"]), b.get("oom"), b.get("source"))
        else:
            out[str(k)] = _Found(float(b.objective), float(b.makespan), bool(b.oom), getattr(b, "source", None))
    given = set(out)
    graphs = [str(g) for g in curve.get("graph") or []]
    for g, v in zip(graphs, curve.get("best_runtime") or [None] * len(graphs), strict=False):
        if g not in given and isinstance(v, int | float) and math.isfinite(v):
            out[g] = _Found(float(v), float(v), None)  # the last row of the graph wins
    return out


def _policy_best(found: _Found, graph: str, curve: Mapping[str, Sequence], exploration: Sequence[str]) -> float | None:
    """The policy's own best objective on ``graph``: the best found when it is the policy's, and the greedy
    checkpoints (:mod:`policies.rl.core.health`, 5.); None when
    there is none."""
    graphs = [str(g) for g in curve.get("graph") or []]
    greedy = column(curve, "greedy_objective", len(graphs))
    own = [float(v) for g, v in zip(graphs, greedy.tolist(), strict=True) if g == graph and math.isfinite(v)]
    if found.source in OWN_SOURCES or (found.source is None and not exploration):
        own.append(found.objective)
    return min(own) if own else None


def assess(curve: Mapping[str, Sequence], tasks: Mapping[str, PlacementTask] | None, *, placer: str | None,
           num_devices: int | None, seed: int = 0, best: Mapping[str, Any] | None = None,
           reward: str = "simulated", max_random: int | None = None, random_missing: str | None = None,
           progress: Callable[[str], None] | None = None) -> LearningHealth | None:
    """The learning health of a training: :func:`learning_health` with the uniform entropy and the exploration
    parameters of learned placer ``placer`` (its card's name) and, when ``tasks`` (key → task, in the training's
    order) are given, the random search of each graph (``max_random`` caps its placements per graph).
    ``best``: the best found per graph (the trainer's ``best``, or a stored run's ``metrics.best_by_graph``)."""
    uniform, basis = entropy_reference(placer, num_devices, tasks)
    exploration = placer_exploration(placer)
    found = _found_from(best, curve)
    comparisons: list[GraphComparison] = []
    if reward != "simulated":
        random_missing = "the training was rewarded by measured runtimes; random search on the simulator would " \
                         "not compare"
    elif tasks is None:
        random_missing = random_missing or "the training's graphs were not rebuilt"
    else:
        counts = placements_per_graph(curve)
        planned = sum(min(c, max_random) if max_random is not None else c for c in counts.values())
        if progress is not None and planned:
            progress(f"learning health: evaluating {planned:,} random placements")
        for i, (key, task) in enumerate(tasks.items()):
            key = str(key)
            trained = counts.get(key, 0)
            n = trained if max_random is None else min(trained, max(int(max_random), 0))
            if key not in found or n == 0:
                continue
            s = random_search_seed(seed, i)
            rb = random_search(task, n, seed=s)
            f = found[key]
            comparisons.append(GraphComparison(key, trained, n, s, f.objective, f.makespan, f.oom, rb.objective,
                                               rb.makespan, rb.oom, _policy_best(f, key, curve, exploration)))
        if not comparisons:
            random_missing = "the curve records no placements evaluated"
    return learning_health(curve, uniform=uniform, uniform_basis=basis, random_search=comparisons,
                           random_missing=random_missing, exploration=exploration,
                           nothing_to_choose=no_choice(tasks, num_devices),
                           best_sources={k: f.source for k, f in found.items()})
