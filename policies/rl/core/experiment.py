"""Placeto §4.2 / Fig. 5: does a policy trained on a family generalise to the family's unseen graphs?

For a family (``nmt``, ``ptb``, ``cifar10``; App. A.3) the learned placer is trained on the 16
graphs of the train split (one stored ``train`` run). Then, on each of the 16 test graphs:

* **Zero-Shot** — the trained policy's greedy placement, no retraining;
* **Optimized** — a fresh policy trained on that graph alone for ``optimized_episodes``
  episodes; its best placement found;
* **Random** — the median makespan of ``random_samples`` uniformly random group placements.

The per-graph makespans go to the ``experiment`` run's ``results.csv`` (long format: one row
per graph and method, for the app's CDFs) and ``per_graph.csv`` (one row per graph).

The Optimized trainings are independent tasks run through :class:`engine.parallel.tasks.ParallelMap`
(in this process by default; on Ray with ``placelab experiment --workers N / --address A``);
each is seeded by ``seed`` alone, so the results are the same either way.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from engine.cluster import Cluster
from engine.parallel.tasks import ParallelMap
from engine.specs import load_cluster
from engine.store.runs import RunStore
from engine.workloads.placeto_families import family
from policies.rl.core.reinforce import Budget, StoppingRule
from policies.rl.core.trainer import Trainer
from policies.rl.core.training_runs import load_policy, load_tasks, policy_place, start_training
from policies.rl.registry import make_agent, make_config

__all__ = ["METHODS", "generalization"]

METHODS = ("zero-shot", "optimized", "random")


def generalization(store: RunStore, family_name: str, cluster: str, *, placer: str = "placeto", episodes: int = 3000,
                   optimized_episodes: int = 300, random_samples: int = 10, test_graphs: int | None = None,
                   params: dict[str, Any] | None = None, seed: int = 0,
                   progress: Callable[[int, int, str], None] | None = None,
                   executor: ParallelMap | None = None) -> dict[str, Any]:
    """Run the experiment; returns ``{run_id, policy_run_id, per_graph, summary}`` (see the module docstring)."""
    executor = executor or ParallelMap()
    fam = family(family_name)
    c = load_cluster(cluster)
    tests = fam.test[:test_graphs] if test_graphs else fam.test
    total = 1 + len(tests)
    t0 = time.perf_counter()
    run = store.create("experiment", graph_name=f"family:{fam.name}",
                       graph_hash=hashlib.sha256("\x00".join(tests).encode()).hexdigest()[:16], cluster=c.name,
                       placer=placer, parameters={"family": fam.name, "episodes": episodes,
                                                  "optimized_episodes": optimized_episodes,
                                                  "random_samples": random_samples, "test_graphs": len(tests),
                                                  **(params or {})}, seed=seed, tags=["generalization"])
    with run:
        if progress:
            progress(0, total, f"training {placer} on the {len(fam.train)} train graphs of family:{fam.name}")
        outcome = start_training(placer, f"family:{fam.name}:train", c, params=params, seed=seed,
                                 budget=Budget(episodes=episodes), stopping=StoppingRule(window=0), store=store,
                                 tags=[f"experiment:{run.id}"], name=f"{placer} on family:{fam.name}:train")
        agent, doc = load_policy(store.load(outcome.run_id))
        config = agent.config
        finished: list[str] = []

        def optimized_done(i: int, _: Any) -> None:
            finished.append(tests[i])
            if progress:
                progress(len(finished), total, f"optimized {tests[i]}")

        optimized = executor.map(_optimized, [(placer, config.to_dict(), spec, c, seed, optimized_episodes)
                                              for spec in tests], on_result=optimized_done)
        per_graph = []
        for spec, best in zip(tests, optimized, strict=True):
            task = load_tasks([spec], c, config)[spec]
            zero = task.evaluate(policy_place(agent, doc, task, seed))
            rng = np.random.default_rng(seed)
            randoms = [task.evaluate(task.random_placement(rng)) for _ in range(random_samples)]
            per_graph.append({
                "graph": spec, "lower_bound_s": task.scale,
                "zero_shot_s": zero.makespan, "zero_shot_oom": zero.oom,
                "optimized_s": best["makespan"], "optimized_oom": best["oom"],
                "optimized_placements": best["placements_evaluated"],
                "random_s": float(np.median([r.makespan for r in randoms])),
                "random_oom": bool(np.mean([r.oom for r in randoms]) > 0.5),
            })
        run.write_table("per_graph.csv", {k: [r[k] for r in per_graph] for k in per_graph[0]})
        long_rows = [{"graph": r["graph"], "method": m, "makespan_s": r[f"{key}_s"],
                      "lower_bound_s": r["lower_bound_s"], "oom": r[f"{key}_oom"]}
                     for r in per_graph for m, key in zip(METHODS, ("zero_shot", "optimized", "random"), strict=True)]
        run.write_table("results.csv", {k: [r[k] for r in long_rows] for k in long_rows[0]})
        ratio = [r["zero_shot_s"] / r["optimized_s"] for r in per_graph]
        summary = {
            "median_zero_shot_s": float(np.median([r["zero_shot_s"] for r in per_graph])),
            "median_optimized_s": float(np.median([r["optimized_s"] for r in per_graph])),
            "median_random_s": float(np.median([r["random_s"] for r in per_graph])),
            "median_zero_shot_over_optimized": float(np.median(ratio)),
            "policy_run": outcome.run_id, "train_episodes": outcome.episodes, "wall_s": time.perf_counter() - t0,
        }
        run.finish("done", summary)
    if progress:
        progress(total, total, "done")
    return {"run_id": run.id, "policy_run_id": outcome.run_id, "per_graph": per_graph, "summary": summary}


def _optimized(placer: str, config: dict[str, Any], spec: str, cluster: Cluster, seed: int,
               episodes: int) -> dict[str, Any]:
    """Optimized on one test graph (a task for :class:`ParallelMap`): a fresh policy trained on it alone;
    its best placement's makespan, OOM flag and when it was found."""
    task = load_tasks([spec], cluster, make_config(placer, config))[spec]
    fresh = make_agent(placer, cluster.num_devices, config, seed=seed, tasks=[task])
    trainer = Trainer(fresh, {spec: task}, seed=seed, budget=Budget(episodes=episodes),
                      stopping=StoppingRule(window=0))
    trainer.train()
    best = trainer.best[spec]
    return {"makespan": best.makespan, "oom": best.oom, "placements_evaluated": best.placements_evaluated}
