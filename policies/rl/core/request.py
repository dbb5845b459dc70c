"""One training request: what a ``placelab train`` trains, checked once and handed over as it is.

:func:`build_request` checks everything a training needs before any graph is built or any run stored, with
the engine's own checks, each a one-sentence :class:`~engine.errors.SpecError`: the placer and its config
(:func:`policies.rl.registry.make_config`), the graph specs (:func:`engine.specs.check_graph_spec`), the
cluster, the budget, the reward, the run a training starts from and the store it is saved in. The command
line builds it from its options; the app's Train page builds it from its form and writes it to a file that its
background process reads back (``placelab train --request FILE``, :meth:`TrainingRequest.read`) and trains
(:func:`policies.rl.core.training_runs.run_training`) without parsing or checking it again.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.cluster import Cluster, cluster_from_dict, cluster_to_dict
from engine.errors import PlacelabError, SpecError, first_line, quote
from engine.jsonio import atomic_write_json, read_json_file
from engine.specs import check_graph_spec, expand_graph_specs, load_cluster
from engine.store.runs import RunStore
from policies.rl.core.measured import REWARDS, check_executable
from policies.rl.core.reinforce import Budget, StoppingRule
from policies.rl.registry import make_config

__all__ = ["REQUEST_SCHEMA", "TrainingRequest", "build_request"]

REQUEST_SCHEMA = "placelab.train-request/1"


@dataclass(frozen=True)
class TrainingRequest:
    """A checked training: every field as :func:`build_request` resolved it."""

    placer: str
    graphs: str  # the multi-graph spec as given (the run records it)
    specs: tuple[str, ...]  # its single-graph specs, each checked
    cluster: Cluster
    params: dict[str, Any]  # the config's parameters as given, a Placeto family's group count added
    seed: int = 0
    budget: Budget = field(default_factory=lambda: Budget(episodes=1000))
    stopping: tuple[int, float] = (1000, 0.02)  # StoppingRule(window, tolerance); the rule itself keeps state
    reward: str = "simulated"
    init_from: str | None = None  # the id of the stored training run whose weights the policy starts from
    runs_dir: str | None = None  # where init_from is looked up
    store: str | None = None  # the run store the run is saved in (None: not saved)
    name: str | None = None
    tags: tuple[str, ...] = ()
    workers: int | None = None
    address: str | None = None
    max_random: int | None = None

    def stopping_rule(self) -> StoppingRule:
        return StoppingRule(*self.stopping)

    def to_dict(self) -> dict[str, Any]:
        doc = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        b = self.budget
        return {"schema": REQUEST_SCHEMA, **doc, "specs": list(self.specs), "cluster": cluster_to_dict(self.cluster),
                "budget": {"episodes": b.episodes, "placements": b.placements, "seconds": b.seconds},
                "stopping": list(self.stopping), "tags": list(self.tags)}

    @classmethod
    def from_dict(cls, doc: Any, where: str = "training request") -> TrainingRequest:
        """The request :meth:`to_dict` wrote; a document that is not one is one SpecError naming ``where``."""
        names = {f.name for f in dataclasses.fields(cls)}
        if not isinstance(doc, dict) or doc.get("schema") != REQUEST_SCHEMA or set(doc) - {"schema"} != names:
            raise SpecError(f"{where}: not a {REQUEST_SCHEMA} document (written by the app's Train page)")
        try:
            return cls(**{**{k: v for k, v in doc.items() if k != "schema"}, "specs": tuple(doc["specs"]),
                          "cluster": cluster_from_dict(doc["cluster"]), "budget": Budget(**doc["budget"]),
                          "stopping": tuple(doc["stopping"]), "tags": tuple(doc["tags"])})
        except (TypeError, ValueError, PlacelabError) as exc:
            raise SpecError(f"{where}: not a {REQUEST_SCHEMA} document ({quote(first_line(exc), bare=True)})") from None

    def write(self, path: str | os.PathLike) -> None:
        atomic_write_json(path, self.to_dict())

    @classmethod
    def read(cls, path: str | os.PathLike) -> TrainingRequest:
        where = f"training request {quote(os.fspath(path), bare=True)}"
        return cls.from_dict(read_json_file(path, error=SpecError), where)


def _family_groups(spec: str, params: dict[str, Any]) -> dict[str, Any]:
    """A family's own group count (Placeto §4: nmt 160, ptb/cifar10 128) unless ``groups`` is given."""
    if "groups" in params or not spec.strip().startswith("family:"):
        return params
    from engine.workloads.placeto_families import family

    return {**params, "groups": family(spec.strip().split(":")[1]).groups}


def _check_budget(budget: Budget) -> None:
    for what, v in (("--episodes", budget.episodes), ("--max-placements", budget.placements),
                    ("--max-seconds", budget.seconds)):
        if v is not None and v <= 0:
            raise SpecError(f"{what} must be positive")


def build_request(placer: str, graphs: str, cluster: str | Cluster, *, params: dict[str, Any] | None = None,
                  seed: int = 0, budget: Budget | None = None, stopping: StoppingRule | None = None,
                  reward: str | None = None, init_from: str | None = None, runs_dir: str | None = None,
                  store: str | os.PathLike | None = None, name: str | None = None, tags: Sequence[str] = (),
                  workers: int | None = None, address: str | None = None,
                  max_random: int | None = None) -> TrainingRequest:
    """Check a training and return it as a :class:`TrainingRequest` (see the module docstring).

    ``init_from``: a stored training run of the same placer (an id or unique prefix in ``runs_dir``; anything
    else — a path, ``..``, ``''`` — is refused, as ``eval`` and ``--resume`` refuse it) whose weights the new
    policy starts from — DOPPLER's next stage (§5) and transfer to another graph or cluster (Tables 4, 10, 11).
    ``reward="measured"`` executes every evaluated placement on the cluster's devices and rewards its measured
    makespan (:mod:`policies.rl.core.measured`); None: ``simulated``, except DOPPLER's stage ``real`` (Stage
    III), which is always ``measured``. ``workers``/``address``: collect the rollouts on Ray workers
    (:mod:`policies.rl.core.workers`). ``max_random``: cap the random placements per graph of the
    learning-health comparison (None: as many as the training evaluated; :mod:`policies.rl.core.health`).
    ``store``: the run store to save the run in (None: not saved).
    """
    if reward is not None and reward not in REWARDS:
        raise SpecError(f"reward must be one of {', '.join(REWARDS)}, got {quote(reward)}")
    budget = budget or Budget(episodes=1000)
    _check_budget(budget)
    if store is not None:
        RunStore(store).check_writable()  # a read-only or full store: one line before the graphs load
    source = RunStore(runs_dir).load(init_from).id if init_from is not None else None
    specs = expand_graph_specs(graphs)
    for spec in specs:
        check_graph_spec(spec)
    params = _family_groups(graphs, dict(params or {}))
    config = make_config(placer, params)
    try:
        reward = config.reward_kind(reward)
    except ValueError as exc:
        raise SpecError(str(exc)) from None
    if reward != "simulated" and (workers is not None or address is not None):
        raise SpecError("--reward measured executes placements on this machine's devices, one at a time: "
                        "it cannot be combined with --workers or --address")
    c = cluster if isinstance(cluster, Cluster) else load_cluster(cluster)
    if reward == "measured":
        check_executable(c)
    stopping = stopping or StoppingRule()
    return TrainingRequest(placer, graphs, tuple(specs), c, params, seed, budget, (stopping.window, stopping.tolerance),
                           reward, source, None if runs_dir is None else os.fspath(runs_dir),
                           None if store is None else os.fspath(store), name, tuple(tags), workers, address,
                           max_random)
