"""The RNN placer of Mirhoseini et al. 2017 (§3), placing op groups, trained with REINFORCE.

Policy (§3.2): the attentional seq2seq network of :mod:`policies.rl.rnn.net` reads the op groups
in the task's traversal order and emits one device per group; a placement is one decoder pass.

Objective (§3.1): minimise ``J(θ) = E_P[R(P)]`` with ``R(P) = sqrt(makespan)``, or the
*failing signal* when a device runs out of memory. Each update draws K placements of one graph
(§3.1 Eq. 3; §3.4: 4 or 8 workers per controller), decoded side by side, simulates them, and
descends (the log-probabilities come from one teacher-forced pass, see :mod:`policies.rl.rnn.net`)

    loss = 1/K Σ_i w_i (R(P_i) − B) / σ log p(P_i) − β · 1/K Σ_i Σ_t H(π_t(P_i))

with σ the standard deviation of the K rewards (deviation 5), B a moving-average baseline per
graph (§3.1 initialises it with the failing signal, "initializing the baseline B with the failing
signal results in more exploration"; we with the first update's mean reward, deviation 6), and
w_i = 1, except that
after ``failing_grace_steps`` updates a placement that fails gets w_i = 0 ("after 5,000 steps,
one performs a parameter update with a sampled placement P only if the placement executes").

Order of the code below: rollout (K placements sampled without autograd and simulated) →
rewards R(P_i) → advantages w_i (R(P_i) − B) → loss (a teacher-forced pass for log p(P_i)).

Our readings where §3.1 is silent, and deviations:

1. the advantage uses B as it was *before* this update; B then folds in the mean reward of the
   placements that took part in the update (w_i = 1) — one the update ignores as a failure
   does not move the baseline either, and an update where all fail leaves B unchanged;
2. the entropy bonus (Placeto App. A.7 adds one to both learned placers) is summed over the
   decoder steps like ``log p(P)``, so β weighs each device decision as Placeto's β does;
3. rewards are in sqrt-seconds, unscaled, as in §3.1 (the failing signal is in the same unit);
4. the network deviations are listed in :mod:`policies.rl.rnn.net`;
5. ``normalize_advantages``: the advantages are divided by the standard deviation of the K
   rewards of the update (when it is not 0). In sqrt-seconds the spread of R depends on the
   graph and the cluster (a few 1e-2 for ~200 ms steps, 1e-3 for a few ms), so the same entropy
   weight β outweighed the policy gradient and the sampled runtime stayed flat (cifar10 #0 on
   ``k80x2``, 200 episodes: median of the first 50 243.3 ms, of the last 50 243.3 ms); divided,
   242.6 → 233.7 ms (``benchmarks/bench_learning_matrix.py``), and the gradient's scale no
   longer depends on the cluster.
6. ``baseline_init="first"``: B starts at the mean reward of the graph's first update instead of
   the failing signal. Started at the failing signal, every sample of the first few dozen
   updates is far worse than B, and divided by σ (deviation 5) that common offset swamps the
   differences between samples: on ``gen:random?ops=200&seed=1`` on ``k80x2`` the sampled
   runtime rose, 10.08 → 11.65 ms over 200 episodes. ``baseline_init=failing
   normalize_advantages=false`` is §3.1's setup.

All randomness comes from the numpy generator passed in: devices are drawn with the Gumbel-max
trick on the detached log-probabilities, so a resumed run samples exactly what it would have.
torch is imported inside the functions that need it (see :mod:`policies.rl.registry`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from policies.rl.core.agent import Advantages, Agent, EpisodeStats, PerTask, Rollout
from policies.rl.core.reinforce import MovingAverageBaseline
from policies.rl.core.task import PlacementTask
from policies.rl.rnn.config import RNNConfig

__all__ = ["RNNAgent", "RNNConfig", "advantages", "max_group_count", "vocabulary"]


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


@dataclass
class _Samples:
    """An update's K placements (decoding order) and their rewards: what a rollout hands the update."""

    key: str
    actions: np.ndarray  # (K, groups)
    rewards: np.ndarray  # (K,) R(P_i)
    oom: np.ndarray  # (K,) bool


class RNNAgent(Agent):
    """The seq2seq policy, its K-sample REINFORCE update and its baseline (see the module docstring)."""

    same_graph_per_update = True

    def __init__(self, num_devices: int, config: RNNConfig | None = None, *, seed: int = 0,
                 tasks: Sequence[PlacementTask] = ()) -> None:
        import torch

        from policies.rl.rnn.net import RNNPlacerNet, group_inputs

        c = config or RNNConfig()
        # what the network is built with, written back so the stored config rebuilds it
        c = replace(c, vocab=list(c.vocab if c.vocab is not None else vocabulary(tasks)),
                    max_groups=int(c.max_groups if c.max_groups is not None else max_group_count(tasks)))
        self.config = c
        self.num_devices = num_devices
        torch.manual_seed(seed)
        self.model = RNNPlacerNet(num_devices, len(c.vocab), c.max_groups, type_dim=c.type_dim,
                                  shape_len=c.shape_len, hidden=c.hidden, device_dim=c.device_dim,
                                  attention=c.attention)
        self.baseline = MovingAverageBaseline(c.baseline_decay)
        self.inputs = PerTask(num_devices, lambda task: group_inputs(task, c.vocab, c.shape_len, c.max_groups))

    @property
    def episodes_per_update(self) -> int:
        return self.config.samples

    # -- rollout → rewards -------------------------------------------------------------------

    def rollout(self, tasks: list[PlacementTask], keys: list[str], rng: np.random.Generator) -> Rollout:
        """K placements of one graph sampled without autograd, simulated and rewarded (§3.1)."""
        task, key = tasks[0], keys[0]
        if any(t is not task for t in tasks) or any(k != key for k in keys):
            raise ValueError("the RNN placer samples all placements of an update from one graph")
        entropy = np.zeros((len(tasks), task.num_groups))

        def pick(step: int, logp: np.ndarray) -> np.ndarray:
            entropy[:, step] = -(np.exp(logp) * logp).sum(axis=1)
            return _gumbel(rng)(step, logp)

        actions = self.model.sample(self.inputs[task], len(tasks), pick)
        devices = _by_group(task, actions)
        evals = [task.evaluate(d) for d in devices]
        rewards = np.array([task.sqrt_reward(ev) for ev in evals])
        stats = [EpisodeStats(key, ev, ev, d, -r, h, 1)
                 for ev, d, r, h in zip(evals, devices, rewards.tolist(), entropy.mean(axis=1).tolist(), strict=True)]
        return Rollout(stats, _Samples(key, actions, rewards, np.array([ev.oom for ev in evals])))

    def merge(self, parts: list[Rollout]) -> Rollout:
        """Rollouts of several workers (samples of the same graph) as one: the K samples concatenate."""
        data: list[_Samples] = [p.data for p in parts]
        if any(d.key != data[0].key for d in data):
            raise ValueError("the RNN placer merges only samples of one graph")
        return Rollout([st for p in parts for st in p.episodes],
                       _Samples(data[0].key, np.concatenate([d.actions for d in data]),
                                np.concatenate([d.rewards for d in data]), np.concatenate([d.oom for d in data])))

    # -- advantages → loss -------------------------------------------------------------------

    def advantages(self, rollout: Rollout, tasks: Mapping[str, PlacementTask], *, step: int) -> Advantages:
        """``w_i (R_i − B)`` per sample (normalised by the spread of the samples that take part), then
        the baseline moves; the loss divides by K."""
        s: _Samples = rollout.data
        task = tasks[s.key]
        first = float(s.rewards.mean()) if self.config.baseline_init == "first" else task.failing_signal
        b = self.baseline.get(s.key, first)
        adv, used = advantages(s.rewards, s.oom, b, step=step, grace_steps=self.config.failing_grace_steps)
        spread = float(s.rewards[used].std()) if used.sum() > 1 else 0.0
        if self.config.normalize_advantages and spread > 0.0:
            adv = adv / spread
        if used.any():
            self.baseline.update(s.key, s.rewards[used], first)
        return Advantages(adv.tolist(), len(adv))

    def accumulate(self, data: _Samples, advantages: Advantages, tasks: Mapping[str, PlacementTask], *,
                   entropy_coef: float) -> None:
        """The gradient of ``loss`` (module docstring) over the samples in ``data``, accumulated."""
        import torch

        task = tasks[data.key]
        logp = torch.log_softmax(self.model(self.inputs[task], torch.from_numpy(data.actions)), dim=2)
        chosen = logp.gather(2, torch.from_numpy(data.actions).unsqueeze(2)).squeeze(2)  # (samples, groups)
        entropy = -(logp.exp() * logp).sum(dim=2)
        a = torch.tensor(advantages.per_episode, dtype=logp.dtype)
        loss = ((a * chosen.sum(dim=1)).sum() - entropy_coef * entropy.sum(dim=1).sum()) / advantages.total
        loss.backward()
        return None

    # -- use and checkpoints -----------------------------------------------------------------

    def place(self, task: PlacementTask, rng: np.random.Generator, *, greedy: bool = True) -> np.ndarray:
        actions = self.model.sample(self.inputs[task], 1, _argmax if greedy else _gumbel(rng))
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
