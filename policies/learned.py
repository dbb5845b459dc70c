"""Registry entries of the learned placers: ``placeto`` and ``rnn`` (see :mod:`policies.rl`).

As placers they work two ways:

* ``policy=RUN`` — *zero-shot*: apply the policy trained in run RUN (``placelab train``) to the
  graph as is, without retraining (Placeto §4.2);
* no policy — *optimized*: train a fresh policy on this graph alone for ``episodes`` episodes
  (``--budget`` overrides) and return the best placement found during training, as the
  papers report (Placeto Table 1, Mirhoseini Table 2).

torch is imported only when a learned placer places.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.cluster import Cluster
from engine.errors import SpecError
from engine.graph import CompGraph
from engine.placement import Placement
from engine.runs import Run, RunStore
from policies.base import Progress, register

__all__ = ["LearnedPlacer", "resolve_run"]


def resolve_run(ref: str, runs_dir: str = "runs") -> Run:
    """A run given by id (or unique prefix) in ``runs_dir``, or by the path of its directory."""
    p = Path(ref)
    if p.is_dir() and (p / "run.json").is_file():
        return RunStore(p.parent).load(p.name)
    return RunStore(runs_dir).load(ref)


class LearnedPlacer:
    """A learned placer used as a placer: zero-shot with a trained policy, or trained on the graph."""

    def __init__(self, name: str, policy: str | None, episodes: int, runs_dir: str, params: dict[str, Any]) -> None:
        if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
            raise SpecError(f"placer '{name}': episodes must be a whole number >= 1, got {episodes!r}")
        self.name = name
        self.policy = policy
        self.episodes = episodes
        self.runs_dir = runs_dir
        self.params = params

    def place(self, graph: CompGraph, cluster: Cluster, *, seed: int = 0, budget: int | None = None,
              progress: Progress | None = None) -> Placement:
        from policies.rl.agents import make_agent, make_config
        from policies.rl.jobs import load_policy, policy_place, task_for
        from policies.rl.reinforce import Budget
        from policies.rl.trainer import Trainer

        if self.policy:
            agent, doc = load_policy(resolve_run(self.policy, self.runs_dir))
            task = task_for(graph, cluster, agent.config)
            return Placement(task.expand(policy_place(agent, doc, task, seed)))
        if budget is not None and budget < 1:
            raise SpecError(f"placer '{self.name}': the budget (episodes) must be at least 1, got {budget}")
        config = make_config(self.name, self.params)
        task = task_for(graph, cluster, config)
        agent, _ = make_agent(self.name, cluster.num_devices, config.to_dict(), seed=seed, tasks=[task])
        trainer = Trainer(agent, {"graph": task}, seed=seed, budget=Budget(episodes=budget or self.episodes),
                          progress=progress)
        trainer.train()
        return Placement(task.expand(trainer.best["graph"].devices))


@register("placeto", "Placeto GNN policy (Addanki et al. 2019): trains on the graph, or policy=RUN applies a "
          "trained one zero-shot", family="learned")
def placeto(policy: str | None = None, episodes: int = 200, groups: int = 128, rounds: int = 4,
            variant: str = "full", reward: str = "intermediate", grouping: str = "merge", unit_depth: int | None = None,
            runs_dir: str = "runs") -> LearnedPlacer:
    return LearnedPlacer("placeto", policy, episodes, runs_dir,
                         {"groups": groups, "rounds": rounds, "variant": variant, "reward": reward,
                          "grouping": grouping, "unit_depth": unit_depth})


@register("rnn", "RNN seq2seq placer (Mirhoseini et al. 2017): trains on the graph, or policy=RUN applies a "
          "trained one zero-shot", family="learned")
def rnn(policy: str | None = None, episodes: int = 400, groups: int = 128, grouping: str = "merge",
        unit_depth: int | None = None, runs_dir: str = "runs") -> LearnedPlacer:
    return LearnedPlacer("rnn", policy, episodes, runs_dir,
                         {"groups": groups, "grouping": grouping, "unit_depth": unit_depth})
