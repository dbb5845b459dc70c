"""The toy placer's policy and its REINFORCE update.

Each group is described by a one-hot of its topological position (``buckets`` equal slices of the
traversal order); a linear layer maps it to one logit per device, infeasible devices masked.
An update samples ``samples`` placements of one graph, rewards each with ``−objective / scale``
(the makespan with Placeto's memory penalty, in lower-bound units) and follows
``∇ Σ_i (R_i − mean R) log π(P_i) / K`` plus the entropy bonus.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from policies.rl.core.agent import Advantages, Agent, EpisodeStats, PerTask, Rollout
from policies.rl.core.task import PlacementTask

from .config import TemplateConfig


class TemplateAgent(Agent):
    same_graph_per_update = True

    def __init__(self, num_devices: int, config: TemplateConfig | None = None, *, seed: int = 0,
                 tasks: Sequence[PlacementTask] = ()) -> None:
        import torch  # never at import time: listing placers must not load torch

        self.config = config or TemplateConfig()
        self.num_devices = num_devices
        torch.manual_seed(seed)
        self.model = torch.nn.Linear(self.config.buckets, num_devices)
        self.inputs = PerTask(num_devices, self._inputs)

    @property
    def episodes_per_update(self) -> int:
        return self.config.samples

    def _inputs(self, task: PlacementTask) -> tuple[Any, Any]:
        """Each group's one-hot position bucket, and the mask of its infeasible devices."""
        import torch

        rank = np.empty(task.num_groups, dtype=np.int64)
        rank[task.order] = np.arange(task.num_groups)
        onehot = np.eye(self.config.buckets, dtype=np.float32)[rank * self.config.buckets // task.num_groups]
        return torch.from_numpy(onehot), torch.from_numpy(~task.feasible)

    def _log_probs(self, task: PlacementTask) -> Any:
        import torch

        x, infeasible = self.inputs[task]
        return torch.log_softmax(self.model(x).masked_fill(infeasible, -torch.inf), dim=1)

    def rollout(self, tasks: list[PlacementTask], keys: list[str], rng: np.random.Generator) -> Rollout:
        import torch

        task, key = tasks[0], keys[0]
        with torch.no_grad():
            p = self._log_probs(task).exp().numpy()
        entropy = float(-(p * np.log(np.where(p > 0, p, 1.0))).sum(axis=1).mean())
        cdf = p.cumsum(axis=1)
        devices = [(rng.random((task.num_groups, 1)) * cdf[:, -1:] >= cdf).sum(axis=1) for _ in tasks]
        evals = [task.evaluate(d) for d in devices]
        rewards = [-ev.objective / task.scale for ev in evals]
        stats = [EpisodeStats(key, ev, ev, d, r, entropy, 1) for ev, d, r in zip(evals, devices, rewards, strict=True)]
        return Rollout(stats, (key, np.stack(devices), np.array(rewards)))

    def merge(self, parts: list[Rollout]) -> Rollout:
        key = parts[0].data[0]
        return Rollout([st for p in parts for st in p.episodes], (key, np.concatenate([p.data[1] for p in parts]),
                                                                  np.concatenate([p.data[2] for p in parts])))

    def advantages(self, rollout: Rollout, tasks: Mapping[str, PlacementTask], *, step: int) -> Advantages:
        rewards = rollout.data[2]
        adv = rewards - rewards.mean()
        return Advantages((adv / (adv.std() or 1.0)).tolist(), len(adv))

    def accumulate(self, data: Any, advantages: Advantages, tasks: Mapping[str, PlacementTask], *,
                   entropy_coef: float) -> None:
        import torch

        key, devices, _ = data
        logp = self._log_probs(tasks[key])  # (groups, devices)
        chosen = logp[torch.arange(logp.shape[0]), torch.from_numpy(devices)].sum(dim=1)  # (samples,)
        entropy = -(logp.exp() * logp.nan_to_num(neginf=0.0)).sum()
        a = torch.tensor(advantages.per_episode, dtype=logp.dtype)
        (-(a * chosen).sum() / advantages.total - entropy_coef * entropy).backward()

    def place(self, task: PlacementTask, rng: np.random.Generator, *, greedy: bool = True) -> np.ndarray:
        import torch

        with torch.no_grad():
            logp = self._log_probs(task).numpy()
        if not greedy:
            logp = logp - np.log(-np.log(rng.random(logp.shape)))  # Gumbel-max sampling
        return np.argmax(logp, axis=1)

    def state_dict(self) -> dict[str, Any]:
        return {}  # the toy's baseline is each update's own mean: nothing to keep

    def load_state_dict(self, state: dict[str, Any]) -> None:
        return None
