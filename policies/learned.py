"""Every learned placer of :mod:`policies.rl.registry` as a placer (``placelab place``, the Place page).

Its parameters are ``policy``, ``episodes`` and ``runs_dir`` followed by the fields of its
registered config, with the config's defaults. As placers they work two ways:

* ``policy=RUN`` — *zero-shot*: apply the policy trained in run RUN (``placelab train``) to the
  graph as is, without retraining (Placeto §4.2);
* no policy — *optimized*: train a fresh policy on this graph alone for ``episodes`` episodes
  (``--budget`` overrides) and return the best placement found during training, as the
  papers report (Placeto Table 1, Mirhoseini Table 2).

torch is imported only when a learned placer places.
"""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Any

from engine.cluster import Cluster
from engine.errors import SpecError
from engine.graph import CompGraph
from engine.placement import Placement
from engine.runs import Run, RunStore
from policies.base import Progress, register
from policies.rl.registry import LearnedPlacerInfo, learned_placers

__all__ = ["LearnedPlacer", "placer_factory", "resolve_run"]


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
        from policies.rl.jobs import load_policy, policy_place, task_for
        from policies.rl.registry import make_agent, make_config
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
        agent = make_agent(self.name, cluster.num_devices, config.to_dict(), seed=seed, tasks=[task])
        trainer = Trainer(agent, {"graph": task}, seed=seed, budget=Budget(episodes=budget or self.episodes),
                          progress=progress)
        trainer.train()
        return Placement(task.expand(trainer.best["graph"].devices))


def placer_factory(info: LearnedPlacerInfo):
    """The placer factory of learned placer ``info``: keyword parameters ``policy``, ``episodes``,
    ``runs_dir`` and the config's fields (its signature is what ``make_placer`` validates against)."""

    def factory(policy: str | None = None, episodes: int = info.episodes, runs_dir: str = "runs",
                **params: Any) -> LearnedPlacer:
        return LearnedPlacer(info.name, policy, episodes, runs_dir, params)

    fixed = list(inspect.signature(factory).parameters.values())[:3]
    config = [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY,
                                default=f.default_factory() if f.default is dataclasses.MISSING else f.default)
              for f in dataclasses.fields(info.config)]
    factory.__signature__ = inspect.Signature([*fixed, *config])  # type: ignore[attr-defined]
    factory.__name__ = info.name
    return factory


for _info in learned_placers().values():
    register(_info.name, _info.description, family="learned")(placer_factory(_info))
