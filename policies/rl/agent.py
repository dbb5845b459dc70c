"""What a learned placer's agent provides to the shared trainer, what an episode reports, and the
per-task cache of what an agent derives from a graph."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from policies.rl.task import Evaluation, PlacementTask

__all__ = ["Agent", "EpisodeStats", "PerTask", "Rollout", "train_step"]

T = TypeVar("T")


class PerTask(Generic[T]):
    """What an agent derives from a task (features, sparse structure), built once per task.

    Entries are keyed by the task object itself and weakly: an entry goes when its task is
    freed, so a later task can never receive another graph's structures (keying by ``id(task)``
    did exactly that once CPython reused a freed task's id), and the cache keeps no graph alive.
    The agent's device count is checked on the way in.
    """

    def __init__(self, num_devices: int, build: Callable[[PlacementTask], T]) -> None:
        self.num_devices = num_devices
        self._build = build
        self._entries: weakref.WeakKeyDictionary[PlacementTask, T] = weakref.WeakKeyDictionary()

    def __getitem__(self, task: PlacementTask) -> T:
        entry = self._entries.get(task)
        if entry is None:
            if task.num_devices != self.num_devices:
                raise ValueError(f"this policy places on {self.num_devices} devices; cluster "
                                 f"'{task.cluster.name}' has {task.num_devices}")
            entry = self._entries[task] = self._build(task)
        return entry

    def __len__(self) -> int:
        return len(self._entries)


@dataclass
class EpisodeStats:
    """One episode (Placeto: one MDP episode; RNN placer: one sampled placement).

    ``final`` is the episode's resulting placement; ``best`` the best placement evaluated in
    it (for Placeto with intermediate rewards, every step's placement is evaluated).
    """

    key: str
    final: Evaluation
    best: Evaluation
    best_devices: np.ndarray
    reward: float
    entropy: float
    evaluations: int


@dataclass
class Rollout:
    """The episodes of one update, collected without autograd and without an optimizer.

    ``data`` is what the agent's :meth:`Agent.backward` needs (numpy arrays and graph keys, no
    tensors, no tasks), so a rollout can be collected in another process from the policy's
    weights and sent back to the learner.
    """

    episodes: list[EpisodeStats]
    data: Any


class Agent(Protocol):
    """A learned placer's policy and its REINFORCE update (see :mod:`policies.rl.trainer`).

    An update is ``rollout`` (sample episodes with the current weights, simulate them) then
    ``backward`` (returns → advantages → loss, gradient accumulated into ``model``); the trainer
    clips the gradient and steps the optimizer.

    Optional, called by the trainer when an agent has them: ``curve_fields`` (extra learning-curve
    columns), ``fit_budget(budget)`` before training (DOPPLER: ε decays over the episode budget) and
    ``end_training()`` after a training that ran to its budget or stopping rule (DOPPLER: Stage I's
    hand-off).
    """

    name: str
    model: Any  # torch.nn.Module
    config: Any  # the registered config dataclass (policies.rl.registry)
    #: episodes per parameter update (Placeto: rollouts batched through one GNN call; RNN: K)
    episodes_per_update: int
    #: True: all episodes of an update use one graph (RNN, §3.1's K samples of G)
    same_graph_per_update: bool

    def rollout(self, tasks: list[PlacementTask], keys: list[str], rng: np.random.Generator) -> Rollout:
        """One episode per task (``keys`` name the graphs), without autograd."""
        ...

    def backward(self, rollout: Rollout, tasks: Mapping[str, PlacementTask], *, entropy_coef: float,
                 step: int) -> None:
        """Accumulate the REINFORCE gradient of ``rollout`` into the model (``step``: updates so far)."""
        ...

    def merge(self, parts: list[Rollout]) -> Rollout:
        """One update's rollout from the parts that rollout workers collected, in worker order
        (:mod:`policies.rl.workers`): what :meth:`backward` would get from one ``rollout`` call."""
        ...

    def place(self, task: PlacementTask, rng: np.random.Generator, *, greedy: bool = True) -> np.ndarray:
        """A group placement (device per group) from the current policy, without learning."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """Non-parameter state (baselines) for checkpoints; JSON-able."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


def train_step(agent: Agent, tasks: Mapping[str, PlacementTask], keys: list[str], rng: np.random.Generator, *,
               entropy_coef: float, step: int) -> list[EpisodeStats]:
    """Roll out one episode per key in this process and accumulate the gradient (no optimizer step)."""
    rollout = agent.rollout([tasks[k] for k in keys], keys, rng)
    agent.backward(rollout, tasks, entropy_coef=entropy_coef, step=step)
    return rollout.episodes
