"""The RNN placer of Mirhoseini et al. 2017 (§3), placing op groups, trained with REINFORCE.

Policy (§3.2): the attentional seq2seq network of :mod:`policies.rl.rnn_net` reads the op groups
in the task's traversal order and emits one device per group; a placement is one decoder pass.

Objective (§3.1): minimise ``J(θ) = E_P[R(P)]`` with ``R(P) = sqrt(makespan)``, or the
*failing signal* when a device runs out of memory. Each update draws K placements of one graph
(§3.1 Eq. 3; §3.4: 4 or 8 workers per controller), decoded side by side, simulates them, and
descends (the log-probabilities come from one teacher-forced pass, see :mod:`policies.rl.rnn_net`)

    loss = 1/K Σ_i w_i (R(P_i) − B) log p(P_i) − β · 1/K Σ_i Σ_t H(π_t(P_i))

with B a moving-average baseline per graph, initialised with the failing signal ("initializing
the baseline B with the failing signal results in more exploration"), and w_i = 1, except that
after ``failing_grace_steps`` updates a placement that fails gets w_i = 0 ("after 5,000 steps,
one performs a parameter update with a sampled placement P only if the placement executes").

Our readings where §3.1 is silent:

* the advantage uses B as it was *before* this update; B then folds in the mean reward of the
  placements that took part in the update (w_i = 1) — one the update ignores as a failure
  does not move the baseline either, and an update where all fail leaves B unchanged;
* the entropy bonus (Placeto App. A.7 adds one to both learned placers) is summed over the
  decoder steps like ``log p(P)``, so β weighs each device decision as Placeto's β does;
* rewards are in sqrt-seconds, unscaled, as in §3.1 (the failing signal is in the same unit).

All randomness comes from the numpy generator passed in: devices are drawn with the Gumbel-max
trick on the detached log-probabilities, so a resumed run samples exactly what it would have.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import torch

from policies.rl.agent import EpisodeStats, PerTask
from policies.rl.reinforce import MovingAverageBaseline
from policies.rl.rnn_net import GroupInputs, RNNPlacerNet, group_inputs
from policies.rl.task import PlacementTask, check_grouping

__all__ = ["RNNAgent", "RNNConfig", "advantages", "max_group_count", "vocabulary"]


@dataclass
class RNNConfig:
    """The RNN placer's hyper-parameters (Mirhoseini §3; Placeto App. A.7 for the RNN baseline)."""

    groups: int | None = 128  # op groups to place (Placeto §4 feeds both placers the same 128)
    grouping: str = "merge"  # merge: §3.3 rule + Merge-and-Colocate to `groups` | units: Mirhoseini §4.1 units
    unit_depth: int | None = None  # scope parts naming a layer for grouping=units (None: found from the scopes)
    hidden: int = 512  # bi-LSTM width, both directions together (Placeto A.7: "hidden size of 512 units")
    type_dim: int = 32  # op-type embedding (§3.2 "tunable embedding vector"; size not given)
    device_dim: int = 32  # device embedding fed to the next decoder step (§3.2; size not given)
    attention: int = 64  # Bahdanau attention units (not given; the scores cost K·groups²·units per update)
    shape_len: int = 8  # outgoing tensor sizes kept per group (§3.2 "fixed-size zero-padded list")
    samples: int = 8  # K placements per update (§3.4: 4 or 8 workers per controller)
    baseline_decay: float = 0.95  # moving-average baseline B (§3.1; decay not given)
    failing_grace_steps: int = 5000  # after this many updates failing placements are skipped (§3.1)
    memory_penalty: float = 2.0  # c of the reported objective (Placeto A.7); the reward uses the failing signal
    lr: float = 1e-3  # Adam, decayed linearly to lr_final (Placeto A.7 "Optimization"; tuned per model there)
    lr_final: float = 1e-4
    entropy: float = 1e-2  # β, decayed linearly to entropy_final (Placeto A.7 "Entropy")
    entropy_final: float = 1e-4
    clip_grad: float = 1.0  # gradient-norm clip (ours, as for Placeto)
    max_groups: int | None = None  # adjacency one-hot length; None: the most groups among the tasks
    vocab: list[str] | None = None  # op types with an embedding; None: those of the tasks

    def __post_init__(self) -> None:
        check_grouping(self.grouping, self.unit_depth)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def vocabulary(tasks: Sequence[PlacementTask]) -> list[str]:
    """The sorted op types of ``tasks``: the type embeddings a network is built with."""
    return sorted({t for task in tasks for t in task.graph.op_types})


def max_group_count(tasks: Sequence[PlacementTask]) -> int:
    """The most groups among ``tasks``: the adjacency one-hot length a network is built with."""
    if not tasks:
        raise ValueError("max_groups is taken from the training graphs, and none was given")
    return max(task.num_groups for task in tasks)


def advantages(rewards: np.ndarray, oom: np.ndarray, baseline: float, *, step: int,
               grace_steps: int) -> tuple[np.ndarray, np.ndarray]:
    """``w_i (R_i − B)`` and the mask ``w_i = 1`` of the samples that take part in the update (§3.1)."""
    used = np.ones(len(rewards), dtype=bool) if step < grace_steps else ~np.asarray(oom, dtype=bool)
    return np.where(used, np.asarray(rewards, dtype=float) - baseline, 0.0), used


class RNNAgent:
    """The seq2seq policy, its K-sample REINFORCE update and its baseline (see the module docstring)."""

    name = "rnn"
    same_graph_per_update = True

    def __init__(self, num_devices: int, config: RNNConfig | None = None, *, seed: int = 0,
                 vocab: Sequence[str] | None = None, max_groups: int | None = None) -> None:
        c = config or RNNConfig()
        vocab = vocab if c.vocab is None else c.vocab  # the config's, when set, overrides the tasks'
        max_groups = max_groups if c.max_groups is None else c.max_groups
        if vocab is None or max_groups is None:
            raise ValueError("the RNN placer needs its op-type vocabulary and max_groups (see vocabulary(), "
                             "max_group_count())")
        if max_groups < 1 or c.samples < 1 or c.shape_len < 0:
            raise ValueError("max_groups and samples must be at least 1 and shape_len at least 0")
        self.config = replace(c, vocab=list(vocab), max_groups=int(max_groups))  # what the model was built with
        self.num_devices = num_devices
        torch.manual_seed(seed)
        self.model = RNNPlacerNet(num_devices, len(vocab), int(max_groups), type_dim=c.type_dim,
                                  shape_len=c.shape_len, hidden=c.hidden, device_dim=c.device_dim,
                                  attention=c.attention)
        self.baseline = MovingAverageBaseline(c.baseline_decay)
        c = self.config
        self._cache = PerTask(num_devices, lambda task: group_inputs(task, c.vocab, c.shape_len, c.max_groups))

    @property
    def episodes_per_update(self) -> int:
        return self.config.samples

    def _prepare(self, task: PlacementTask) -> GroupInputs:
        return self._cache[task]

    def train_step(self, tasks: list[PlacementTask], keys: list[str], *, entropy_coef: float, step: int,
                   rng: np.random.Generator) -> list[EpisodeStats]:
        task, key = tasks[0], keys[0]
        if any(t is not task for t in tasks) or any(k != key for k in keys):
            raise ValueError("the RNN placer samples all placements of an update from one graph")
        x = self._prepare(task)
        actions = self.model.sample(x, len(tasks), _gumbel(rng))
        logp = torch.log_softmax(self.model(x, torch.from_numpy(actions)), dim=2)
        chosen = logp.gather(2, torch.from_numpy(actions).unsqueeze(2)).squeeze(2)  # (K, groups)
        entropy = -(logp.exp() * logp).sum(dim=2)
        devices = _by_group(task, actions)
        evals = [task.evaluate(d) for d in devices]
        rewards = np.array([task.sqrt_reward(ev) for ev in evals])
        b = self.baseline.get(key, task.failing_signal)
        adv, used = advantages(rewards, np.array([ev.oom for ev in evals]), b, step=step,
                               grace_steps=self.config.failing_grace_steps)
        a = torch.from_numpy(adv).to(logp.dtype)
        loss = (a * chosen.sum(dim=1)).mean() - entropy_coef * entropy.sum(dim=1).mean()
        loss.backward()
        if used.any():
            self.baseline.update(key, rewards[used], task.failing_signal)
        ent = entropy.detach().mean(dim=1).tolist()
        return [EpisodeStats(key, ev, ev, d, -r, h, 1)
                for ev, d, r, h in zip(evals, devices, rewards.tolist(), ent, strict=True)]

    def place(self, task: PlacementTask, rng: np.random.Generator, *, greedy: bool = True) -> np.ndarray:
        actions = self.model.sample(self._prepare(task), 1, _argmax if greedy else _gumbel(rng))
        return _by_group(task, actions)[0]

    def state_dict(self) -> dict[str, Any]:
        return {"baseline": self.baseline.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.baseline.load_state_dict(state["baseline"])


def _by_group(task: PlacementTask, actions: np.ndarray) -> np.ndarray:
    """Devices in decoding order (samples, groups) → devices by group id."""
    devices = np.empty_like(actions)
    devices[:, task.order] = actions
    return devices


def _argmax(step: int, logp: np.ndarray) -> np.ndarray:
    return np.argmax(logp, axis=1)


def _gumbel(rng: np.random.Generator):
    """Gumbel-max sampling of one device per row of the log-probabilities, with ``rng``."""

    def pick(step: int, logp: np.ndarray) -> np.ndarray:
        return np.argmax(logp - np.log(-np.log(rng.random(logp.shape))), axis=1)

    return pick
