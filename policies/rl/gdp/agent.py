"""GDP (Zhou et al. 2019, "GDP: Generalized Device Placement for Dataflow Graphs", arXiv 1910.01578),
run as the DOPPLER authors ran it as a baseline (Yao et al. 2025, §6.1; github.com/xinyuyao/Doppler
at 87dda0d: ``scheduler/gdp_agent.py``, ``run_placement.py``, ``config_files/run_gdp/``).

What each part comes from: **[GDP]** the GDP paper's abstract (its text beyond the abstract could not be
read, so no section of it is cited: docs/guide/learned-placers.md, "Sources"); **[DOPPLER]** the DOPPLER
paper's description of how it ran GDP; **[code]** the DOPPLER authors' GDP code; **[ours]** none of these.

Policy [GDP: attention over a graph neural network; code: its layers and sizes]: one pass of the network
(:mod:`policies.rl.gdp.net`: GraphSAGE embedding and attention placement network with segment-level
recurrence, ``gdp_agent.py:17-151``; parameter superposition [GDP names it; its form ours])
gives every op group its device distribution at once, independently of the others' choices::

    π_θ(D | G) = Π_v softmax(logits_θ(G)_v)[d_v]          (infeasible devices masked)

Acting [DOPPLER §6.1, code ``gdp_agent.py:189-196``]: ε-greedy per op group — the argmax device, a
uniform feasible one with probability ε; ε decays linearly from ``epsilon`` = 0.2 to
``epsilon_final`` = 0 over ``decay_episodes`` (None: the training's episode budget, the
trainer calls :meth:`GdpAgent.fit_budget`). ``acting=sample`` [ours] samples every device from π_θ.
Each episode's ε is the learning curve's ``epsilon`` column (0 with ``acting=sample``), and a placement
that a uniform choice changed is marked as exploration's, not the policy's (:mod:`policies.rl.core.health`).
The placement is simulated once per episode; the curve's entropy is the mean over op groups of
the device choice's entropy, so the learning-health check compares it with the uniform policy's.

Reward and advantage [code ``run_placement.py:243-250``; DOPPLER §4.1]: the running mean of the
graph's previous makespans less this episode's makespan, in milliseconds (``reward_unit_s``),
the same advantage for every op group of the episode.

Update, Stage II (``stage=sim``) [ours: PPO, Schulman et al. 2017, our reading of GDP]: per episode i
and op group v, ``r_iv = π_θ(d_iv) / π_old(d_iv)`` with π_old the policy that chose d_iv, and the loss::

    L = −(1/W) Σ_batches (1/|batch|) Σ_i [ mean_v min(r_iv A_i, clip(r_iv, 1 − c, 1 + c) A_i) + β mean_v H(π_θ(·|v)) ]

over the update's own batch and the previous ``ppo_epochs`` − 1 batches (W of them), c = ``ppo_clip``,
β the entropy weight. Adam at the constant learning rate 1e-4 the authors' code steps at,
without gradient clipping.

Stage I (``stage=imitation``) [DOPPLER §5 eq. 9, applied to GDP's one policy; ours]: the loss
``−mean_v log π_θ(t_v)`` raises the probability of the critical-path teacher's device t_v for every
op group (DOPPLER's teacher, :func:`policies.rl.doppler.agent.teacher_placement`: largest b-level
first, earliest-start device). Stage II starts from it with ``--init-from``.

Deviations (numbered as in ``docs/guide/learned-placers.md``):

1. PPO's epochs are interleaved [ours]: the shared trainer takes one optimiser step per rollout, so
   each batch is reused in ``ppo_epochs`` consecutive updates (each one step on the clipped
   surrogate of its own batch and of the previous ones), not in ``ppo_epochs`` steps in a row. The
   window lives in the process that takes the gradient (a rollout worker keeps its own episodes)
   and is not checkpointed: a resumed training, or a restarted worker, starts it afresh.
2. REINFORCE vs PPO: the authors' GDP code updates with the plain policy gradient of the ε-greedy
   actions' log-probabilities (``gdp_agent.py:199, 237-247``); we keep its ε-greedy acting and
   add PPO (``ppo_epochs=1`` is their update). With ε-greedy acting π_old is the softmax
   policy, not the behaviour policy, as in their log-probabilities (``old_prob=behaviour`` divides by
   the ε-greedy choice's own probability instead).
3. Every op group gets the episode's advantage [ours: one reward per placement, as DOPPLER eq. 10]; the
   authors' code discounts it backwards over the node sequence with γ = 0.99 (``gdp_agent.py:219,
   229-234``), so its first nodes learn from ~0.33 of it on a 112-node graph.
4. The advantage's running mean is over the previous episodes (DOPPLER §4.1); the authors' code
   includes the current one (``run_placement.py:243-244``), which scales the (n+1)-th episode's
   advantage by n/(n+1).
5. Node features [ours]: op types hashed into embedding rows, z-scored compute, output bytes,
   degrees and order position, and no node ids (:mod:`policies.rl.gdp.features`); the authors'
   code feeds raw op-type one-hots, its successors' summed compute as the output shape and its
   predecessors' ids (``utils.py:52-83``).
6. GraphSAGE aggregates every non-empty neighbourhood; the authors' code leaves an op with a single
   neighbour at 0 (``len(neighbors) > 1``, ``gdp_agent.py:51``).
7. The recurrence memory is the previous segment's input to a layer (Transformer-XL), not its
   output as in the authors' code (``gdp_agent.py:143-147``). A sinusoidal encoding of the position
   in the placement order is added to the embeddings [ours, ``positions``; Transformer-XL encodes
   relative positions, the authors' code none]: without it the shards of a chainmm layer, alike in
   every feature, get alike logits.
8. Superposition (named in GDP's abstract; its form ours) is on by default; the authors' GDP has none.
9. The entropy is the policy's (the authors' code takes a softmax of the probabilities again,
   ``gdp_agent.py:201``); β = 1e-2 as DOPPLER §6.1 states, where the authors' GDP config has 0.
10. Stage I imitates the critical-path teacher [ours]: the authors' GDP code ignores its imitation
    weight (``gdp_agent.py:215``) and never loads the Stage I weights into Stage II
    (``run_placement.py:80-90``), so their GDP "imitation" run trains the entropy term alone.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from policies.rl.core.agent import Advantages, Agent, EpisodeStats, PerTask, Rollout
from policies.rl.core.epsilon import StagedEpsilon
from policies.rl.core.task import PlacementTask

from .config import ACTING, STAGES, GdpConfig
from .features import GdpInputs

if TYPE_CHECKING:
    import torch

__all__ = ["ACTING", "STAGES", "GdpAgent", "GdpConfig"]


class _Prepared:
    """A task's GDP inputs as tensors, and its teacher's placement (Stage I) when first asked for. It
    holds no reference to the task: :class:`~policies.rl.core.agent.PerTask` keys it weakly by the task."""

    def __init__(self, task: PlacementTask, buckets: int) -> None:
        from policies.rl.gdp.net import tensors

        self.tensors = tensors(GdpInputs.build(task, buckets))
        self._teacher: np.ndarray | None = None

    def teacher(self, task: PlacementTask) -> np.ndarray:
        """DOPPLER's critical-path teacher's group devices (largest b-level first, earliest-start device)."""
        if self._teacher is None:
            from policies.rl.doppler.agent import teacher_placement

            self._teacher = teacher_placement(task)
        return self._teacher


class GdpAgent(StagedEpsilon, Agent):
    """GDP's policy, its ε-greedy rollouts and its Stage I / Stage II updates (see the module docstring)."""

    same_graph_per_update = False
    network_sizes = ("hidden", "sage_layers", "layers", "type_buckets", "superposition")
    no_uniform_entropy = None  # the mean per-group device-choice entropy: compared with ln(feasible devices)
    exploration = ("epsilon",)

    def __init__(self, num_devices: int, config: GdpConfig | None = None, *, seed: int = 0,
                 tasks: Sequence[PlacementTask] = ()) -> None:
        import torch  # never at import time: listing placers must not load torch

        from policies.rl.gdp.net import GdpNet

        self.config = c = config or GdpConfig()
        self.num_devices = num_devices
        torch.manual_seed(seed)
        self.model = GdpNet(num_devices, hidden=c.hidden, sage_layers=c.sage_layers, layers=c.layers, heads=c.heads,
                            segment=c.segment, type_buckets=c.type_buckets, superposition=c.superposition,
                            positions=c.positions)
        self.init_epsilon()
        self.prepared = PerTask(num_devices, lambda task: _Prepared(task, c.type_buckets))
        self.window: deque[tuple[list, Advantages]] = deque(maxlen=max(c.ppo_epochs - 1, 0) or None)

    @property
    def episodes_per_update(self) -> int:
        return self.config.batch

    @property
    def curve_fields(self) -> dict[str, str]:
        """The stage every curve row was trained in (DOPPLER §5)."""
        return {"stage": self.config.stage}

    def _log_probs(self, task: PlacementTask) -> torch.Tensor:
        import torch

        return torch.log_softmax(self.model(self.prepared[task].tensors), dim=1)

    def _act(self, logp: np.ndarray, rng: np.random.Generator, eps: float, feasible: np.ndarray) -> np.ndarray:
        """One device per group: ε-greedy on the argmax, or sampled from π (``acting=sample``)."""
        if self.config.acting == "sample":
            return np.argmax(logp - np.log(-np.log(rng.random(logp.shape))), axis=1)  # Gumbel-max
        devices = np.argmax(logp, axis=1)
        explore = rng.random(len(devices)) < eps
        if explore.any():
            u = rng.random((int(explore.sum()), logp.shape[1])) * feasible[explore]
            devices[explore] = np.argmax(u, axis=1)  # a uniform feasible device
        return devices

    def _old_log_probs(self, logp: np.ndarray, devices: np.ndarray, eps: float, feasible: np.ndarray) -> np.ndarray:
        """log of the probability each chosen device is divided by in PPO's ratio: π_old's (``old_prob=policy``)
        or, acting ε-greedy, the behaviour policy's, (1 − ε)·[the argmax] + ε / its feasible devices
        (``old_prob=behaviour``: importance weighting of the exploring choices)."""
        rows = np.arange(len(devices))
        if self.config.old_prob == "policy" or self.config.acting == "sample":
            return logp[rows, devices].astype(np.float32)
        greedy = (np.argmax(logp, axis=1) == devices).astype(np.float64)
        behaviour = (1.0 - eps) * greedy + eps / feasible.sum(axis=1)
        return np.log(behaviour).astype(np.float32)

    # -- one update ------------------------------------------------------------------------

    def rollout(self, tasks: list[PlacementTask], keys: list[str], rng: np.random.Generator) -> Rollout:
        """One placement per task from one network pass each, simulated once; ``data``: per episode
        (key, devices, log π_old of each chosen device, makespan), numpy only."""
        import torch

        stats, samples = [], []
        for task, key in zip(tasks, keys, strict=True):
            with torch.no_grad():
                logp = self._log_probs(task).numpy().astype(np.float64)
            p = np.exp(logp)
            entropy = float(-(p * np.where(p > 0, logp, 0.0)).sum(axis=1).mean())
            eps = self.epsilon() if self.config.acting == "epsilon-greedy" else 0.0
            devices = self._act(logp, rng, eps, task.feasible)
            self.episodes += 1
            ev = task.evaluate(devices)
            chosen = self._old_log_probs(logp, devices, eps, task.feasible)
            # a sample of π is the policy's own; an ε-greedy placement is, when no uniform choice changed it
            own = self.config.acting == "sample" or np.array_equal(devices, np.argmax(logp, axis=1))
            stats.append(EpisodeStats(key, ev, ev, devices, -ev.makespan / self.config.reward_unit_s, entropy, 1,
                                      best_source="policy" if own else "epsilon", exploration={"epsilon": eps}))
            samples.append((key, devices, chosen, ev.makespan))
        return Rollout(stats, samples)

    def merge(self, parts: list[Rollout]) -> Rollout:
        """Rollout workers' parts as one, in worker order; the episode count (ε) advances as one
        ``rollout`` call would advance it (the workers act with the update's first ε)."""
        merged = Rollout([st for p in parts for st in p.episodes], [s for p in parts for s in p.data])
        self.episodes += len(merged.episodes)
        return merged

    def advantages(self, rollout: Rollout, tasks: Mapping[str, PlacementTask], *, step: int) -> Advantages:
        """Each episode's running-mean advantage in reward units, episode after episode (each moves the mean)."""
        per = [self.baseline.advantage(key, makespan) / self.config.reward_unit_s
               for key, _, _, makespan in rollout.data]
        return Advantages(per, len(per))

    def accumulate(self, data: list, advantages: Advantages, tasks: Mapping[str, PlacementTask], *,
                   entropy_coef: float) -> None:
        """Accumulate Stage I's imitation loss or Stage II's PPO loss (see the module docstring); the
        network runs once per distinct graph of each batch in the window, with autograd."""
        import torch

        if self.config.stage == "imitation":
            loss = 0.0
            for key, *_ in data:
                task = tasks[key]
                logp = self._log_probs(task)
                teacher = torch.from_numpy(self.prepared[task].teacher(task))
                loss = loss - logp[torch.arange(len(teacher)), teacher].mean()
            (loss / advantages.total).backward()
            return None
        batches = [*self.window, (data, advantages)]
        c = self.config.ppo_clip
        loss = 0.0
        for batch, adv in batches:
            logps = {key: None for key, *_ in batch}
            for key in logps:
                logps[key] = self._log_probs(tasks[key])
            for (key, devices, old, _), a in zip(batch, adv.per_episode, strict=True):
                logp = logps[key]
                new = logp[torch.arange(len(devices)), torch.tensor(np.asarray(devices))]
                ratio = torch.exp(new - torch.tensor(np.asarray(old, dtype=np.float32)))
                surrogate = torch.minimum(ratio * a, ratio.clamp(1 - c, 1 + c) * a).mean()
                p = logp.exp()
                entropy = -(p * torch.where(p > 0, logp, torch.zeros_like(logp))).sum(dim=1).mean()
                loss = loss - (surrogate + entropy_coef * entropy) / adv.total
        (loss / len(batches)).backward()
        if self.window.maxlen:
            self.window.append((data, advantages))
        return None

    def place(self, task: PlacementTask, rng: np.random.Generator, *, greedy: bool = True) -> np.ndarray:
        """Every group's argmax device (greedy), or one acting as in training."""
        import torch

        with torch.no_grad():
            logp = self._log_probs(task).numpy().astype(np.float64)
        if greedy:
            return np.argmax(logp, axis=1)
        return self._act(logp, rng, self.epsilon(), task.feasible)

    def load_weights(self, state: dict[str, torch.Tensor]) -> None:
        """Start from another GDP policy's weights (Stage I → II, another graph). The baseline and ε
        start afresh; the output layer has one row per device, so the device count must match."""
        rows = state.get("out.weight")
        if rows is not None and rows.shape[0] != self.num_devices:
            raise ValueError(f"its output layer places on {rows.shape[0]} devices, not {self.num_devices}")
        try:
            self.model.load_state_dict(state)
        except RuntimeError:
            raise ValueError("its networks differ in size (hidden, sage_layers, layers, type_buckets and "
                             "superposition must match)") from None
