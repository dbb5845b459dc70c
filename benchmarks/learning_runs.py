"""What the learning benchmarks share: one fresh policy trained on one graph, and its curve summarized.

``bench_learning_matrix.py``, ``bench_placeto_budget.py`` and ``bench_learned_gaps.py`` ask the
same two questions of a training run: what did it find, and did its policy move (entropy per
decision, sampled runtime) between its first and its last episodes.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from engine.cluster import Cluster
from engine.graph.compgraph import CompGraph
from engine.specs import load_cluster, load_graph
from policies.rl.core.reinforce import Budget, StoppingRule
from policies.rl.core.task import PlacementTask, task_for
from policies.rl.core.trainer import Trainer
from policies.rl.registry import make_agent, make_config

__all__ = ["learning_setting", "parse_params", "train_agent", "train_alone", "window_medians"]


def parse_params(pairs: Sequence[str]) -> dict[str, Any]:
    """``KEY=VALUE`` options (``--param``) as a parameter dict: each value read as JSON where it parses
    (``3e-3``, ``true``, ``[1, 2]``), else kept as text (``network=paper``)."""
    params: dict[str, Any] = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        try:
            params[key] = json.loads(value)
        except json.JSONDecodeError:
            params[key] = value
    return params


def learning_setting(placer: str, graph_spec: str, cluster_name: str, mode: str | None,
                     params: Mapping[str, Any]) -> tuple[CompGraph, Cluster, Any, PlacementTask]:
    """A learning benchmark's setting: the graph, the cluster (in simulation ``mode`` when given), the
    placer's config from ``params`` and the task it trains on."""
    graph = load_graph(graph_spec)
    cluster = load_cluster(cluster_name)
    if mode:
        cluster = cluster.with_simulation(mode=mode)
    config = make_config(placer, dict(params))
    return graph, cluster, config, task_for(graph, cluster, config)


def train_alone(placer: str, graph: CompGraph, cluster: Cluster, params: Mapping[str, Any], budget: Budget,
                seed: int) -> tuple[Trainer, PlacementTask, list[dict[str, Any]]]:
    """Train a fresh ``placer`` policy on ``graph`` alone until ``budget`` runs out, with no stopping
    rule (the learning rate and entropy weight decay over the budget); its learning-curve rows."""
    config = make_config(placer, dict(params))
    task = task_for(graph, cluster, config)
    agent = make_agent(placer, cluster.num_devices, config.to_dict(), seed=seed, tasks=[task])
    trainer, rows = train_agent(agent, task, budget, seed)
    return trainer, task, rows


def train_agent(agent: Any, task: PlacementTask, budget: Budget, seed: int,
                each: Callable[[int], None] | None = None) -> tuple[Trainer, list[dict[str, Any]]]:
    """Train ``agent`` (fresh or not) on ``task`` alone until ``budget`` runs out, with no stopping rule;
    its learning-curve rows (the task's key is ``"g"``). ``each(episodes so far)`` runs before every update."""
    trainer = Trainer(agent, {"g": task}, seed=seed, budget=budget, stopping=StoppingRule(0))
    rows: list[dict[str, Any]] = []
    while trainer.exhausted() is None:  # placements: sampled, one per episode (docs/budgets.md)
        if each is not None:
            each(len(rows))
        rows += trainer.step()
    return trainer, rows


def window_medians(rows: Sequence[Mapping[str, Any]], keys: Sequence[str], window: int,
                   most: float = 1.0) -> dict[str, float]:
    """The median of each of ``keys`` over the first and the last ``window`` rows, a window taking at
    most the fraction ``most`` of the rows (at most half: the windows do not overlap); ``KEY_first``
    and ``KEY_last``."""
    w = max(1, min(window, int(len(rows) * most)))
    out = {}
    for key in keys:
        out[f"{key}_first"] = statistics.median(float(r[key]) for r in rows[:w])
        out[f"{key}_last"] = statistics.median(float(r[key]) for r in rows[-w:])
    return out
