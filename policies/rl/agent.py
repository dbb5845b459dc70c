"""What a learned placer's agent provides to the shared trainer, what an episode reports, and the
per-task cache of what an agent derives from a graph."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from policies.rl.task import Evaluation, PlacementTask

__all__ = ["Agent", "EpisodeStats", "PerTask"]

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


class Agent(Protocol):
    """A learned placer's policy and its REINFORCE update (see :mod:`policies.rl.trainer`)."""

    name: str
    model: Any  # torch.nn.Module
    config: Any  # a dataclass of JSON-able hyper-parameters
    #: episodes per parameter update (Placeto: rollouts batched through one GNN call; RNN: K)
    episodes_per_update: int
    #: True: all episodes of an update use one graph (RNN, §3.1's K samples of G)
    same_graph_per_update: bool

    def train_step(self, tasks: list[PlacementTask], keys: list[str], *, entropy_coef: float, step: int,
                   rng: np.random.Generator) -> list[EpisodeStats]:
        """Run one episode per task, then accumulate the REINFORCE gradient (``backward``) into the model."""
        ...

    def place(self, task: PlacementTask, rng: np.random.Generator, *, greedy: bool = True) -> np.ndarray:
        """A group placement (device per group) from the current policy, without learning."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """Non-parameter state (baselines) for checkpoints; JSON-able."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...
