"""What a learned placer's agent provides to the shared trainer, what an episode reports, and the
per-task cache of what an agent derives from a graph."""

from __future__ import annotations

import abc
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np

from engine.errors import quote
from policies.rl.core.task import Evaluation, PlacementTask

__all__ = ["Advantages", "Agent", "EpisodeStats", "PerTask", "Rollout", "backward", "record_entropies"]

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
                                 f"{quote(task.cluster.name)} has {task.num_devices}")
            entry = self._entries[task] = self._build(task)
        return entry

    def __len__(self) -> int:
        return len(self._entries)


@dataclass
class EpisodeStats:
    """One episode (Placeto: one MDP episode; RNN placer: one sampled placement).

    ``final`` is the episode's resulting placement; ``best`` the best placement evaluated in
    it (for Placeto with intermediate rewards, every step's placement is evaluated).
    ``evaluations`` counts the placements simulated (or executed) in the episode;
    ``sampled`` the placements it counts towards a placement budget, in its paper's unit
    (``docs/budgets.md``): one per episode for Placeto, the RNN placer and DOPPLER alike.
    ``best_source`` says whose placement ``best`` is, for the learning-health check
    (:mod:`policies.rl.core.health`): ``policy`` (a sample of the policy, or its argmax),
    ``epsilon`` (an ε-greedy placement with at least one uniformly random choice, or one not told
    apart from such) or ``greedy`` (the greedy placement an ε-greedy episode also evaluated).
    ``exploration`` holds the values of the agent's exploration parameters the episode acted with
    (:attr:`Agent.exploration`: ε), which become learning-curve columns.
    """

    key: str
    final: Evaluation
    best: Evaluation
    best_devices: np.ndarray
    reward: float
    entropy: float
    evaluations: int
    sampled: int = 1
    best_source: str = "policy"
    exploration: dict[str, float] = field(default_factory=dict)


@dataclass
class Rollout:
    """The episodes of one update, collected without autograd and without an optimizer.

    ``data`` is what the agent's :meth:`Agent.accumulate` needs (numpy arrays and graph keys, no
    tensors, no tasks), so a rollout can be collected in another process from the policy's
    weights and sent back to the learner.
    """

    episodes: list[EpisodeStats]
    data: Any


@dataclass
class Advantages:
    """An update's advantages, as the learner hands them to whoever takes the gradient.

    ``per_episode`` holds one entry per episode of the rollout, in its order (Placeto: the
    episode's per-step ``Â_t``; RNN placer and DOPPLER: the episode's scalar advantage). The loss
    is a sum of per-episode terms divided by ``total`` (the update's steps or episodes), so the
    gradients of consecutive slices of the episodes (:meth:`part`) add up to the update's
    gradient: this is how rollout workers take the gradient of their own episodes
    (:mod:`policies.rl.core.workers`).
    """

    per_episode: list
    total: int

    def part(self, start: int, stop: int) -> Advantages:
        return Advantages(self.per_episode[start:stop], self.total)


class Agent(abc.ABC):
    """A learned placer's policy and its REINFORCE update: the base class of every placer's agent
    (see :mod:`policies.rl.core.trainer`).

    An update is ``rollout`` (sample episodes with the current weights, simulate them), then
    ``advantages`` (returns → baseline → advantages; the baselines move) and ``accumulate`` (the
    loss's gradient accumulated into ``model``), which :func:`backward` chains; the trainer clips
    the gradient and steps the optimizer. ``advantages`` runs in the learner only;
    ``accumulate`` may run on slices of the episodes in rollout workers.

    The abstract methods are what a placer must write. The hooks below them have defaults that
    do nothing; a placer overrides the ones it needs (DOPPLER overrides all of them).
    """

    model: Any  # torch.nn.Module
    config: Any  # the placer's config dataclass (policies.rl.core.config.LearnedConfig)
    #: episodes per parameter update (Placeto: rollouts batched through one GNN call; RNN: K)
    episodes_per_update: int = 1
    #: True: all episodes of an update use one graph (RNN, §3.1's K samples of G)
    same_graph_per_update: bool = False
    #: the config fields that set the weights' shapes: named in ``--init-from``'s hint when weights do not fit
    network_sizes: tuple[str, ...] = ()
    #: why the entropy the agent records has no uniform reference to compare with; None: it is the mean
    #: over op groups of the device choice's entropy, compared with ln(feasible devices) (policies.rl.core.health)
    no_uniform_entropy: str | None = None
    #: the exploration parameters the agent acts with besides its policy (ε-greedy: ``("epsilon",)``): each
    #: episode's value is a learning-curve column, and the learning-health check compares sampled runtimes
    #: only at equal values (policies.rl.core.health); none: every placement is a sample of the policy
    exploration: tuple[str, ...] = ()

    @abc.abstractmethod
    def rollout(self, tasks: list[PlacementTask], keys: list[str], rng: np.random.Generator) -> Rollout:
        """One episode per task (``keys`` name the graphs), without autograd."""

    @abc.abstractmethod
    def advantages(self, rollout: Rollout, tasks: Mapping[str, PlacementTask], *, step: int) -> Advantages:
        """The advantages of ``rollout``'s episodes (``step``: updates so far); records the episodes
        in the baselines."""

    @abc.abstractmethod
    def accumulate(self, data: Any, advantages: Advantages, tasks: Mapping[str, PlacementTask], *,
                   entropy_coef: float) -> list[float] | None:
        """Accumulate the gradient of the loss terms of the episodes in ``data`` (a rollout's data,
        or the data of a slice of its episodes, with the matching slice of ``advantages``).
        Returns the episodes' entropies where the loss computes them (DOPPLER), else None."""

    @abc.abstractmethod
    def merge(self, parts: list[Rollout]) -> Rollout:
        """One update's rollout from the parts that rollout workers collected, in worker order
        (:mod:`policies.rl.core.workers`): what one ``rollout`` call would have returned."""

    @abc.abstractmethod
    def place(self, task: PlacementTask, rng: np.random.Generator, *, greedy: bool = True) -> np.ndarray:
        """A group placement (device per group) from the current policy, without learning."""

    @abc.abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """Non-parameter state (baselines) for checkpoints; JSON-able."""

    @abc.abstractmethod
    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""

    # -- hooks: defaults that do nothing ----------------------------------------------------------

    @property
    def curve_fields(self) -> dict[str, Any]:
        """Extra learning-curve columns for the update just made (DOPPLER: its stage and ε); none."""
        return {}

    def fit_budget(self, budget: Any) -> None:
        """Called once before training with its :class:`~policies.rl.core.reinforce.Budget` (DOPPLER:
        ε decays over the episode budget, §6.1); nothing."""
        return None

    def end_training(self) -> None:
        """Called after a training that ran to its budget or stopping rule, before the final checkpoint
        (DOPPLER: Stage I's hand-off); nothing."""
        return None

    def load_weights(self, state: dict[str, Any]) -> None:
        """Start from another trained policy's weights (``--init-from``, a stored policy).

        Raises
        ------
        ValueError
            The weights do not fit this agent's networks.
        """
        try:
            self.model.load_state_dict(state)
        except (RuntimeError, TypeError, ValueError):
            raise ValueError("its networks differ in size from this configuration's") from None


def backward(agent: Agent, rollout: Rollout, tasks: Mapping[str, PlacementTask], *, entropy_coef: float,
             step: int) -> None:
    """The REINFORCE gradient of ``rollout`` accumulated into the agent's model, in this process
    (``step``: updates so far); the baselines move and entropies the loss computes are recorded."""
    record_entropies(rollout, agent.accumulate(rollout.data, agent.advantages(rollout, tasks, step=step), tasks,
                                               entropy_coef=entropy_coef))


def record_entropies(rollout: Rollout, entropies: list[float] | None) -> None:
    """Each episode's policy entropy, where the loss computed them (``accumulate``'s result), on its stats."""
    if entropies is not None:
        for st, h in zip(rollout.episodes, entropies, strict=True):
            st.entropy = h

