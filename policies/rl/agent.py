"""What a learned placer's agent provides to the shared trainer, and what an episode reports."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from policies.rl.task import Evaluation, PlacementTask

__all__ = ["Agent", "EpisodeStats"]


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
