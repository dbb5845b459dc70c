"""DOPPLER (Yao et al. 2025): dual-policy device assignment, SEL picks an op and PLC its device.

Episode — ASSIGN (§3, Fig. 2; §4.1): the candidates C start as the graph's entry ops; at each
step SEL picks v ∈ C, PLC picks a device d for v, v leaves C and every successor whose
predecessors are all placed joins C. One step per op; the placement is simulated once, at the
end (§5 Stage II). On a grouped task (``groups=N``, or a graph above 1,000 ops) the steps are its groups
(:mod:`policies.rl.doppler.units`). The ops of a colocation group share a device: the first one placed commits
it, and PLC's choice for the later ones is masked to it (our rule; DOPPLER's graphs have none).

Acting (eq. 4, 8): ε-greedy on each policy — the argmax with probability 1 − ε, else a uniform
candidate (device); ε decays linearly from ``epsilon`` to ``epsilon_final`` over
``decay_episodes`` episodes (§6.1: 0.2 → 0; None: over the training's episode budget, over which
the learning rate goes from ``lr`` to ``lr_final`` — the trainer calls
:meth:`DopplerAgent.fit_budget`). Each episode's ε is the learning curve's ``epsilon`` column. The
policy gradient uses the softmax policies' log-probabilities of the actions taken, as the paper's
eq. 10 does.

Stages (§5, ``stage``):

* ``imitation`` (Stage I, eq. 9): the learner rolls out (ε from ``epsilon_imitation`` = 1 to
  ``epsilon_final``) and the loss raises the log-probability of the critical-path teacher's
  choices in the states the learner visits. Teacher: SEL → the candidates with the largest
  b-level; PLC → the devices where v starts earliest under the running list-scheduling
  estimate (:class:`~policies.rl.doppler.features.EstimatedSchedule`). Ties are kept as a
  set: the target is ``log Σ_{a ∈ targets} π(a)`` (the authors' code: ``Σ log π(a)``, below). With
  ``handoff`` (ours) the stage ends with the last weights whose greedy placement reached the teacher's
  makespan, which Stage II then starts from (``--init-from``); §5 gives no end criterion.
* ``sim`` (Stage II, eq. 10): REINFORCE with the terminal reward ``−makespan`` less the
  running mean of all previous episodes' makespans on that graph (§4.1), in milliseconds
  (``reward_unit_s``: the authors' simulator's unit), plus the entropy bonus; Adam at the constant
  learning rate 1e-4 that the authors' code trains at, without gradient clipping (deviation from
  the paper's text below). Starts from Stage I's weights with ``--init-from``.
* ``real`` (Stage III): the same update on makespans measured by the real executor. The agent
  takes the makespan from ``task.evaluate`` in every stage; a Stage III training runs inside
  :func:`policies.rl.core.measured.measured_rewards` (``start_training`` sees to it: stage ``real``
  is ``--reward measured``, and the other stages are ``--reward simulated``), where
  ``evaluate`` executes the placement instead of simulating it — the path every learned placer
  takes for measured rewards.

Ablations (§6.2 Q2, Table 3): ``variant="sel-only"`` (DOPPLER-SEL: PLC replaced by the
critical-path device rule, the device where v starts earliest) and ``variant="plc-only"``
(DOPPLER-PLC: SEL replaced by the candidate with the longest path to an exit, its b-level).

Deviation from the paper's text, as the authors' code runs (github.com/xinyuyao/Doppler at
87dda0d): the learning rate is a constant 1e-4 (``lr_final = lr``). §6.1 states "1e-4 linearly
decreasing to 1e-7"; the code computes a linear decay (to 0 over its episodes,
``run_placement.py:59``) but assigns it to the optimisers' ``lr`` attribute
(``scheduler/rl_agent.py:336-338``), which Adam never reads (it reads its ``param_groups``), so
both its Adam optimisers step at 1e-4 throughout; ``--param lr_final=1e-7`` is the paper's
schedule. Taken from the authors' code where the paper says nothing: no gradient
clipping (``clip_grad = 0``; the code calls ``backward()`` then ``step()``,
``scheduler/rl_agent.py:381-382, 413-414``), and the edge network's hidden width 128
(``edge_hidden``; dgllife's ``MPNNGNN(edge_hidden_feats=hidden1)`` with ``hidden1 = 128``,
``scheduler/rl_agent.py:15, 26, 99, 107``).

Deviations from the authors' published code (not from the paper): the b- and t-level paths'
embeddings are summed over the right ops (the code indexes them in the wrong order); the teacher's
walk takes a largest-b-level op (the code's random tie-break indexes the candidates instead of the
tied ones, ``scheduler/rl_agent.py:313-317``). Per-step losses are averaged over the episode's steps
(ours), so graphs of different sizes weigh alike. Also ours (``greedy_search``): every ε-greedy episode
also evaluates the greedy placement of the same network outputs, so the best placement found counts the
argmax policy (one more simulation per episode; the update still learns from the sampled episode only).
With rollout workers ε is constant within one update (:meth:`DopplerAgent.merge`).

Also unlike the authors' code (docs/reference/deviations.md):

* every step gets the episode's advantage A (eq. 10); the code puts A on the last step, the others'
  rewards being 0, and discounts it backwards with γ = 0.99 (``scheduler/rl_agent.py:334, 352-356``;
  ``run_placement.py:364-372``; ``env/env.py:57-62``), so the first op of a 112-op graph gets a third
  (``--param discount=0.99``; measured, docs/lab/2026-11-29-doppler-stage2-discount-entropy.md);
* (a deviation from §6.1's text, not from the code) Stages II and III take the code's entropy weight 0
  (``config_files/run_doppler/rl_simulation_learning.json:10``, ``rl_real_sys_learning.json:10``), not §6.1's
  1e-2 (``--param entropy=1e-2 entropy_final=1e-2``; measured, the same note);

Not measured:

* Stage I's loss has no entropy term; the code's Stage I config weights it 0.001
  (``config_files/run_doppler/imitation_learning.json:10``);
* the running mean is over the previous episodes (§4.1); the code adds the current makespan first
  (``run_placement.py:365-366``), which scales the (n+1)-th episode's advantage by n/(n+1);
* tied teacher choices T give one target ``log Σ_{a∈T} π(a)``; the code sums ``log π(a)`` over T
  (``scheduler/rl_agent.py:262-265, 302-305``);
* LeakyReLU's slope is PyTorch's 0.01, in the heads only; the code's is 0.1, also after the MPNN and
  the feature projections (``scheduler/rl_agent.py:48, 124``);
* the code's configs run 2,000 episodes per stage (``imitation_learning.json:3``,
  ``rl_simulation_learning.json:3``); the benchmark runs §6.1's 4k / 8k in Stage II.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from policies.rl.core.agent import Advantages, Agent, EpisodeStats, PerTask, Rollout
from policies.rl.core.epsilon import StagedEpsilon
from policies.rl.core.task import PlacementTask
from policies.rl.doppler.config import STAGES, VARIANTS, DopplerConfig, stage_reward
from policies.rl.doppler.features import DopplerGraph, graph_tensors
from policies.rl.doppler.rollout import AssignEpisode, assign
from policies.rl.doppler.units import AssignUnits, assign_units

if TYPE_CHECKING:
    import torch

__all__ = ["STAGES", "VARIANTS", "DopplerAgent", "DopplerConfig", "stage_reward",
           "teacher_placement"]



class _Prepared:
    """A task's static DOPPLER data: numpy for the rollout, tensors for the networks."""

    def __init__(self, task: PlacementTask) -> None:
        self.task = task
        self.units = assign_units(task)  # the ops, or on a grouped task its groups (policies/rl/doppler/units.py)
        self.dg = DopplerGraph.build(self.units.graph, task.cluster)
        self.tensors = graph_tensors(self.dg)
        self._teacher_makespan: float | None = None

    def group_devices(self, ep: AssignEpisode) -> np.ndarray:
        """The task's group placement of one ASSIGN episode."""
        return self.units.group_devices(ep, self.task.num_groups)

    @property
    def teacher_makespan(self) -> float:
        """The simulated makespan of the critical-path teacher's placement (Stage I's handoff bar)."""
        if self._teacher_makespan is None:
            task = self.task
            teacher = self.group_devices(_teacher_episode(self.units, self.dg))
            self._teacher_makespan = float(task.sim.makespan_and_peak(task.expand(teacher))[0])
        return self._teacher_makespan


class DopplerAgent(StagedEpsilon, Agent):
    """DOPPLER's policies, ASSIGN rollouts and the Stage I/II/III updates (see the module docstring)."""

    same_graph_per_update = False
    network_sizes = ("hidden", "edge_hidden", "head")  # the config fields that set the weights' shapes
    no_uniform_entropy = ("DOPPLER's entropy adds its op-selection policy's, whose uniform value depends on the "
                          "candidates")
    exploration = ("epsilon",)

    def __init__(self, num_devices: int, config: DopplerConfig | None = None, *, seed: int = 0,
                 tasks: Sequence[PlacementTask] = ()) -> None:
        self.config = c = config or DopplerConfig()
        self.num_devices = num_devices
        import torch

        from policies.rl.doppler.net import DopplerNet

        torch.manual_seed(seed)
        self.model = DopplerNet(c.hidden, c.rounds, c.edge_hidden, c.head)
        self.init_epsilon()
        self.prepared = PerTask(num_devices, _Prepared)
        self.handoff_weights: dict[str, torch.Tensor] | None = None  # Stage I's handoff (``handoff``)
        self._forward: dict[int, tuple] = {}  # this update's forward passes (:meth:`_encoded`)

    @property
    def episodes_per_update(self) -> int:
        return self.config.batch

    @property
    def curve_fields(self) -> dict[str, str]:
        """Extra learning-curve columns: the stage every row was trained in (§5) and what its reward
        came from (Stage III: the executor's measurements)."""
        return {"stage": self.config.stage, "reward_kind": stage_reward(self.config.stage)}

    def prepare(self, task: PlacementTask) -> _Prepared:
        return self.prepared[task]

    # -- one episode ----------------------------------------------------------------------

    def _encode(self, p: _Prepared) -> tuple[torch.Tensor | None, tuple[torch.Tensor, torch.Tensor] | None]:
        v = self.config.variant
        scores = self.model.sel(p.tensors) if v != "plc-only" else None
        hz = self.model.plc.embed(p.tensors) if v != "sel-only" else None
        return scores, hz

    def _encoded(self, p: _Prepared) -> tuple[torch.Tensor | None, tuple[torch.Tensor, torch.Tensor] | None]:
        """:meth:`_encode` with autograd, computed once per graph and weights: a rollout's forward pass is
        the one its update differentiates (the trainer and a rollout worker both call :meth:`accumulate`
        after :meth:`rollout` with the same weights), and each episode of one graph in a rollout shares it.
        The weights' version counters (torch bumps them at every in-place change: an optimiser step, a
        ``load_state_dict``) tell whether the memo is still theirs."""
        import torch

        version = (torch.is_grad_enabled(), *(t._version for t in self.model.parameters()))
        hit = self._forward.get(id(p))
        if hit is None or hit[0] != version:
            hit = self._forward[id(p)] = (version, *self._encode(p))
        return hit[1], hit[2]

    def _assign(self, p: _Prepared, scores, hz, rng: np.random.Generator, eps: float, record: bool) -> AssignEpisode:
        import torch

        weights = None
        if hz is not None:
            with torch.no_grad():
                weights = {k: t.numpy().astype(np.float64)
                           for k, t in self.model.plc.act_weights(hz[0].detach(), hz[1].detach()).items()}
        sel = scores.detach().numpy().astype(np.float64) if scores is not None else None
        return assign(p.dg, p.units.feasible, p.units.node_group, sel, weights, rng, eps, record=record)

    def _loss(self, p: _Prepared, ep: AssignEpisode, scores, hz, advantage: float,
              entropy_coef: float) -> tuple[torch.Tensor, float]:
        from policies.rl.doppler.net import episode_loss

        return episode_loss(self.model.plc, self.num_devices, ep, scores, hz, advantage, entropy_coef,
                            imitation=self.config.stage == "imitation", discount=self.config.discount)

    def rollout(self, tasks: list[PlacementTask], keys: list[str], rng: np.random.Generator) -> Rollout:
        """One ASSIGN episode per task with the current weights (§4.3: each network runs once per
        episode; its forward pass, with autograd, is kept for the update: :meth:`_encoded`), each
        placement evaluated once (simulated; in Stage III, inside
        :func:`~policies.rl.core.measured.measured_rewards`, executed and measured).
        ``data``: per episode (key, episode, makespan), numpy only."""
        stats, samples = [], []
        reached = self.config.stage == "imitation" and self.config.handoff
        self._forward.clear()
        for task, key in zip(tasks, keys, strict=True):
            p = self.prepare(task)
            scores, hz = self._encoded(p)
            eps = self.epsilon()
            ep = self._assign(p, scores, hz, rng, eps, record=True)
            self.episodes += 1
            group_dev = p.group_devices(ep)
            ev = task.evaluate(group_dev)
            best, best_dev, evaluations = ev, group_dev, 1
            # whose placement the best is: ε = 0 or equal to the greedy one, the policy's; else ε's (without
            # greedy_search an ε-greedy episode is not compared with the greedy one: counted as ε's)
            source = "policy" if eps == 0 else "epsilon"
            greedy_ev = ev if eps == 0 else None
            if self.config.greedy_search and eps > 0:
                greedy = p.group_devices(self._assign(p, scores, hz, rng, 0.0, record=False))
                greedy_ev = ev
                if np.array_equal(greedy, group_dev):
                    source = "policy"
                else:
                    greedy_ev = gev = task.evaluate(greedy)
                    evaluations = 2
                    if (gev.oom, gev.objective) < (ev.oom, ev.objective):
                        best, best_dev, source = gev, greedy, "greedy"
            reached = reached and greedy_ev is not None and not greedy_ev.oom \
                and greedy_ev.makespan <= p.teacher_makespan * (1 + 1e-9)
            stats.append(EpisodeStats(key, ev, best, best_dev, -ev.makespan / self.config.reward_unit_s, 0.0,
                                      evaluations, best_source=source, exploration={"epsilon": eps}))
            samples.append((key, ep, ev.makespan))
        if reached:  # these weights (the update comes after the rollout) reached the teacher
            self.handoff_weights = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        return Rollout(stats, samples)

    def end_training(self) -> None:
        """Called by the trainer when a training ends (budget or stopping rule, not a stop request):
        Stage I hands over the last weights that reached the teacher (``handoff``). The snapshot
        lives in memory: a Stage I resumed from a checkpoint looks for it afresh."""
        if self.config.stage == "imitation" and self.config.handoff and self.handoff_weights is not None:
            self.model.load_state_dict(self.handoff_weights)

    def merge(self, parts: list[Rollout]) -> Rollout:
        """Rollouts of several workers as one (:mod:`policies.rl.core.workers`): the episodes concatenate in
        worker order, and this (the learner's) episode count advances as one ``rollout`` call would
        advance it. The workers act with the learner's count at the update's start (it reaches them
        with :meth:`state_dict`), so ε within one update is the update's first ε (in-process, it
        decays from episode to episode: a difference of ``batch / decay_episodes`` × ε at most)."""
        merged = Rollout([st for p in parts for st in p.episodes], [s for p in parts for s in p.data])
        self.episodes += len(merged.episodes)
        return merged

    def advantages(self, rollout: Rollout, tasks: Mapping[str, PlacementTask], *, step: int) -> Advantages:
        """Each episode's advantage against the running-mean baseline (§4.1), in reward units, episode
        after episode (each moves the baseline); eq. 9/10 average over the episodes."""
        per = [self.baseline.advantage(key, makespan) / self.config.reward_unit_s
               for key, _, makespan in rollout.data]
        return Advantages(per, len(per))

    def accumulate(self, data: list[tuple[str, AssignEpisode, float]], advantages: Advantages,
                   tasks: Mapping[str, PlacementTask], *, entropy_coef: float) -> list[float]:
        """Accumulate the gradient of eq. 9 (Stage I) or eq. 10 (Stages II, III) over the episodes in
        ``data``, on the rollout's forward pass where this process rolled them out with these weights (else the
        networks run again). Returns the episodes' entropies."""
        entropies = []
        for (key, ep, _), adv in zip(data, advantages.per_episode, strict=True):
            p = self.prepare(tasks[key])
            scores, hz = self._encoded(p)
            loss, h = self._loss(p, ep, scores, hz, adv, entropy_coef)
            (loss / advantages.total).backward(retain_graph=True)  # the next episode of the graph may share it
            entropies.append(h)
        self._forward.clear()  # frees the forward passes
        return entropies

    def place(self, task: PlacementTask, rng: np.random.Generator, *, greedy: bool = True) -> np.ndarray:
        """The group placement of one ASSIGN episode (greedy: ε = 0, argmax on both policies)."""
        import torch

        p = self.prepare(task)
        with torch.no_grad():
            scores, hz = self._encode(p)
        return p.group_devices(self._assign(p, scores, hz, rng, 0.0 if greedy else self.epsilon(), record=False))

    def load_weights(self, state: dict[str, torch.Tensor]) -> None:
        """Start from another policy's weights (Stage I → II → III, and transfer: Tables 4, 10, 11).

        The baseline and ε start afresh: the new stage or graph has its own makespans. The
        networks do not depend on the device count, so a policy moves between clusters.
        """
        try:
            self.model.load_state_dict(state)
        except RuntimeError:
            raise ValueError("its networks differ in size (hidden, edge_hidden and head must match)") from None


def _teacher_episode(units: AssignUnits, dg: DopplerGraph) -> AssignEpisode:
    """The critical-path teacher's own ASSIGN episode (largest b-level, earliest start; ties: lower index)."""
    return assign(dg, units.feasible, units.node_group, None, None, np.random.default_rng(0), 0.0, record=False)


def teacher_placement(task: PlacementTask) -> np.ndarray:
    """The group placement of the critical-path teacher's ASSIGN episode (:func:`_teacher_episode`)."""
    units = assign_units(task)
    return units.group_devices(_teacher_episode(units, DopplerGraph.build(units.graph, task.cluster)),
                               task.num_groups)
