"""The learning health of a stored training run: the verdict it stored — judged again by the current rule when it
was stored under an earlier one (:func:`policies.rl.core.health.rejudge`) —, or computed now for runs stored
before verdicts existed (or still training), with the random search on its graphs rebuilt from ``policy.json``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.cluster import cluster_from_dict
from engine.specs import load_graph
from policies.rl.core.health import VERSION, LearningHealth, rejudge
from policies.rl.core.run_files import CURVE, POLICY
from policies.rl.core.task import PlacementTask, same_graphs, task_for
from policies.rl.core.training_health import assess, no_choice, placer_exploration
from policies.rl.registry import make_config

__all__ = ["stored_health"]


def _stored_tasks(doc: Mapping[str, Any], run_meta: Mapping[str, Any]) -> dict[str, PlacementTask]:
    """The tasks of a stored training, rebuilt from its ``policy.json`` (as ``jobs.task_for`` builds them);
    raises when a graph cannot be loaded or differs from the one trained on."""
    cluster = cluster_from_dict(doc["cluster"], source="policy.json")
    config = make_config(doc["placer"], {**doc["config"], **(doc.get("extras") or {})})
    specs = [str(s) for s in doc["graphs"]]
    graphs = [load_graph(s) for s in specs]
    stored = str((run_meta.get("graph") or {}).get("hash") or "")
    if stored and not same_graphs(stored, graphs):
        raise ValueError("the graphs rebuilt from their specs differ from those trained on")
    return {s: task_for(g, cluster, config) for s, g in zip(specs, graphs, strict=True)}


def stored_health(run: Any, *, random: bool = True, max_random: int | None = None) -> LearningHealth | None:
    """A training run's learning health: the stored ``metrics.learning_health`` (one stored under an earlier
    rule judged again by this one from its numbers, the old verdict kept in ``previous_verdict``), or — for
    runs stored before it existed, or still training — computed now from its learning curve (and, with
    ``random``, the random search on its tasks rebuilt from ``policy.json``; when they cannot be rebuilt the
    record says so). None when the run has no learning curve yet."""
    meta = run.meta
    metrics = meta.get("metrics") or {}
    stored = metrics.get("learning_health")
    files = run.files()
    doc: Mapping[str, Any] = {}
    if POLICY in files:
        try:
            doc = run.read_json(POLICY)
        except (OSError, ValueError):
            doc = {}
    placer = doc.get("placer") or meta.get("placer")
    if isinstance(stored, Mapping) and meta.get("status") != "running":
        try:
            health = LearningHealth.from_dict(stored)
        except (TypeError, ValueError, KeyError):
            pass  # an unreadable record: compute it again
        else:
            version, devices = stored.get("version"), doc.get("num_devices")
            if isinstance(version, int) and version >= VERSION:
                return health
            return rejudge(health, exploration=placer_exploration(placer),
                           nothing=no_choice(None, devices if isinstance(devices, int) else None))
    if CURVE not in files:
        return None
    try:
        curve = run.read_table(CURVE)
    except (OSError, ValueError):
        return None
    tasks, missing = None, None
    if not random:
        missing = "not computed"
    elif not doc:
        missing = "the run has no readable policy.json to rebuild its graphs from"
    else:
        try:
            tasks = _stored_tasks(doc, meta)
        except Exception as exc:  # any failure to rebuild only drops the random comparison
            missing = f"the training's graphs could not be rebuilt ({str(exc) or type(exc).__name__})"
    return assess(curve, tasks, placer=placer,
                  num_devices=doc.get("num_devices"), seed=int(doc.get("seed", meta.get("seed") or 0)),
                  best=metrics.get("best_by_graph"), reward=str(doc.get("reward") or "simulated"),
                  max_random=max_random, random_missing=missing)
