"""Every learned placer of :mod:`policies.rl.registry` as a placer (``placelab place``, the Place page):
:func:`learned_placer_cards`, which :mod:`policies.registry` lists.

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
from collections.abc import Callable
from typing import Any

from engine.cluster import Cluster
from engine.errors import SpecError, quote
from engine.graph.compgraph import CompGraph
from engine.placement import Placement
from engine.store.runs import resolve_run
from policies.base import PlacerInfo, Progress
from policies.rl.core.config import LearnedPlacerInfo
from policies.rl.registry import learned_placers

__all__ = ["LearnedPlacer", "learned_placer_cards", "placer_factory"]


class LearnedPlacer:
    """A learned placer used as a placer: zero-shot with a trained policy, or trained on the graph."""

    def __init__(self, name: str, policy: str | None, episodes: int, runs_dir: str | None,
                 params: dict[str, Any]) -> None:
        if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
            raise SpecError(f"placer {quote(name)}: episodes must be a whole number >= 1, got {quote(episodes)}")
        self.name = name
        self.policy = policy
        self.episodes = episodes
        self.runs_dir = runs_dir
        self.params = params

    def place(self, graph: CompGraph, cluster: Cluster, *, seed: int = 0, budget: int | None = None,
              progress: Progress | None = None) -> Placement:
        from policies.rl.core.reinforce import Budget
        from policies.rl.core.task import task_for
        from policies.rl.core.trainer import Trainer
        from policies.rl.core.training_runs import load_policy, policy_place
        from policies.rl.registry import make_agent, make_config

        if self.policy:
            agent, doc = load_policy(resolve_run(self.policy, self.runs_dir))
            task = task_for(graph, cluster, agent.config)
            return Placement(task.expand(policy_place(agent, doc, task, seed)))
        if budget is not None and budget < 1:
            raise SpecError(f"placer {quote(self.name)}: the budget (episodes) must be at least 1, got {budget}")
        config = make_config(self.name, self.params)
        task = task_for(graph, cluster, config)
        agent = make_agent(self.name, cluster.num_devices, config.to_dict(), seed=seed, tasks=[task])
        trainer = Trainer(agent, {"graph": task}, seed=seed, budget=Budget(episodes=budget or self.episodes),
                          progress=progress)
        trainer.train()
        return Placement(task.expand(trainer.best["graph"].devices))


def placer_factory(info: LearnedPlacerInfo) -> tuple[Callable[..., LearnedPlacer], dict[str, Any]]:
    """The placer factory of learned placer ``info`` and its parameters with their defaults: ``policy``,
    ``episodes``, ``runs_dir`` and the config's fields (what ``make_placer`` validates against)."""

    def factory(policy: str | None = None, episodes: int = info.episodes, runs_dir: str | None = None,
                **params: Any) -> LearnedPlacer:
        return LearnedPlacer(info.name, policy, episodes, runs_dir, params)

    config = {f.name: f.default_factory() if f.default is dataclasses.MISSING else f.default
              for f in dataclasses.fields(info.config)}
    return factory, {"policy": None, "episodes": info.episodes, "runs_dir": None, **config}


def learned_placer_cards() -> dict[str, PlacerInfo]:
    """The placer card of every learned placer, by name (family ``learned``)."""
    cards = {}
    for info in learned_placers().values():
        factory, parameters = placer_factory(info)
        cards[info.name] = PlacerInfo(info.name, info.description, factory, "learned", parameters)
    return cards
