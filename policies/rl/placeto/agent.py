"""Placeto (Addanki et al. 2019): the iterative-improvement MDP over op groups, trained with REINFORCE.

Code cited as ``file:line`` is the authors' (github.com/aravic/generalizable-device-placement,
commit e7fbb2e, ``model/``); where the paper is silent we follow it.

MDP (§2.1). A state is the group graph with per-group features and the group being placed
(:mod:`policies.rl.placeto.state`). Groups are visited in a fixed order (topological on the
group graph, ``progressive_placer_test.py:219``, or a fresh random permutation per episode); step
t re-places the current group v_t with ``a_t ~ π_θ(· | s_t)``. An episode has ``n·|V|`` steps
(n = ``passes``, 1 or 2, App. A.7). Every episode starts from the same placement: one random
placement drawn once per graph (``init=fixed-random``, the authors' default,
``progressive_placer.py:163, 178-187``). The network (``network``) is the authors' by default
(:mod:`policies.rl.placeto.sweep_net`: one message-passing sweep each way, sums, Glorot
initialisation, the simulated start-time feature), with its devices scored alike (``devices=shared``,
deviation 7); ``network=paper`` is the §2.2 text as we read it (:mod:`policies.rl.placeto.net`: k
rounds, means).

Rewards (§2.1, App. A.4, A.7), with R the memory-penalised runtime of :mod:`engine.sim.objectives`:

* intermediate (default): ``r_t = (R(p_t) − R(p_{t+1})) / L``
  (``progressive_placer.py:590-596``)
* terminal: ``r_T = −R(p_T) / L``, zero before

Returns and advantages (App. A.1 Eq. 1, A.7 "Baselines"): ``G_t = Σ_{t'≥t} γ^{t'−t} r_t'`` and
``A_t = G_t − b_t``, with ``b_t`` the mean of ``G_t`` over the last k = 10 episodes of the graph recorded
before this update (``progressive_placer.py:549-564``; k = 10: ``hyperparameters.txt:7``; a graph's first
update uses its own episodes' mean). The authors append the update's own returns before averaging
(``progressive_placer.py:242-248``), and their window defaults to 1,000 (``progressive_placer_test.py:175``).

Loss, over the S = ``batch`` episodes of an update (T_i steps each, H the policy's entropy):

    loss = −1/N Σ_i Σ_t [ Â_{i,t} log π_θ(a_{i,t} | s_{i,t}) + β H(π_θ(· | s_{i,t})) ],  N = Σ_i T_i

then Adam with the learning rate and β decaying linearly (A.7), and the gradient of this mean loss clipped
to norm ``clip_grad`` = 1.0. The authors clip the gradient summed over the steps and episodes at 1.25
(``rl_agent.py:128-130, 190-192``; the sums: ``progressive_placer.py:815-823, 882-888``).

Deviations, each measured with ``benchmarks/bench_placeto_learning.py`` (docs/lab/):

1. γ = 0.5 (``discount``): a move is credited with its own runtime change and, halved at every
   step, with the changes of the moves after it. With the paper's and the authors' γ = 1
   (``progressive_placer_test.py:168``) the return of step t is ``R(p_t) − R(p_T)``, which carries
   the noise of every other action of the episode; on identical devices the policy then drifts
   back to uniform, where the gradient of every group-only direction vanishes (a placement and
   its relabelling take the same time), and its sampled placements are a random search. With
   γ = 0 a move is credited with its own change only, which is myopic: putting a group beside its
   neighbours pays at once, and on a small graph the policy learned to pile the groups together
   (sampled runtime 10 % worse than at its start).
2. L, the graph's makespan lower bound, scales the rewards so that graphs of different sizes
   weigh alike when a policy trains on many (the authors use seconds, ``progressive_placer.py:591``).
3. ``Â = A / std(A)`` over the update (``normalize_advantages``), so that the entropy weight
   means the same on every graph; the authors do not normalise (``progressive_placer.py:811``).
4. ``lr`` 3e-3 decaying to 3e-4 and β 3e-3 decaying to 1e-4: the authors' sample learning rate is
   1e-3 → 1e-4 (``hyperparameters.txt:6``; the file gives no entropy weight); their ``rl_params.py``
   defaults are a constant learning rate 1e-3 (``:4, 6, 8``: the decay starts at step 10⁹ and floors at
   1e-3) and a constant entropy weight 1.0 (``:11, 13``).
5. The ``batch`` episodes of an update are rolled out side by side, every step one network call for
   all of them, and the update re-evaluates all visited states in one batched pass; the authors
   ran one episode per worker process (A.7 "Workers").
6. A step whose action keeps the group's device leaves the placement unchanged: its runtime (and
   its start times) are reused, not simulated again.
7. ``devices=shared``: one copy of the authors' network scores each device from that device's view of
   the state, instead of their output layer's one row per device (:mod:`policies.rl.placeto.device_views`;
   ``devices=separate`` is theirs). With their output layer the policy did not beat random search
   on ``gen:chainmm`` / ``p100x4``; scoring devices alike is what made it learn there.

torch is imported inside the functions that need it (see :mod:`policies.rl.registry`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from policies.rl.core.agent import Advantages, Agent, EpisodeStats, PerTask, Rollout
from policies.rl.core.reinforce import StepBaseline, returns_to_go
from policies.rl.core.task import Evaluation, PlacementTask
from policies.rl.placeto.config import DEVICE_SCORING, NETWORKS, VARIANTS, PlacetoConfig

__all__ = ["DEVICE_SCORING", "NETWORKS", "VARIANTS", "PlacetoAgent", "PlacetoConfig"]

_MAX_NODES_PER_CHUNK = 300_000


@dataclass
class _Episode:
    """One MDP episode in progress: the placement, the visited flags and what the update needs."""

    task: PlacementTask
    key: str
    dev: np.ndarray
    order: np.ndarray
    steps: int
    visited: np.ndarray
    best_dev: np.ndarray
    features: list[np.ndarray]
    current: list[int]
    actions: list[int]
    rewards: list[float]
    entropy: list[float]
    evaluations: int = 0
    now: Evaluation | None = None
    best: Evaluation | None = None
    forced: np.ndarray | None = None  # each group's device when the actions are given (``episodes(actions=…)``)

    def evaluate(self, start: bool = False) -> Evaluation:
        ev = self.task.evaluate(self.dev, start=start)
        self.evaluations += 1
        if self.best is None or ev.objective < self.best.objective:
            self.best, self.best_dev = ev, self.dev.copy()
        return ev


@dataclass
class _Steps:
    """An episode's visited states, actions and rewards (numpy): what a rollout hands the update."""

    key: str
    features: list[np.ndarray]
    current: list[int]
    actions: list[int]
    rewards: list[float]


class PlacetoAgent(Agent):
    """Placeto's policy, rollouts and REINFORCE update (see the module docstring)."""

    same_graph_per_update = False
    network_sizes = ("network", "devices", "variant", "emb", "hidden", "head")  # the fields that shape the weights

    def __init__(self, num_devices: int, config: PlacetoConfig | None = None, *, seed: int = 0,
                 tasks: Sequence[PlacementTask] = ()) -> None:
        import torch

        from policies.rl.placeto.state import graph_structure

        self.config = c = config or PlacetoConfig()
        self.num_devices = num_devices
        torch.manual_seed(seed)
        if c.network == "authors" and c.devices == "shared":
            from policies.rl.placeto.device_views import SharedDeviceSweepNet

            self.model = SharedDeviceSweepNet(num_devices, variant=c.variant)
        elif c.network == "authors":
            from policies.rl.placeto.sweep_net import GROUP_COLUMNS, SweepNet

            self.model = SweepNet(num_devices, GROUP_COLUMNS + num_devices, variant=c.variant)
        else:
            from policies.rl.placeto.net import PlacetoNet

            self.model = PlacetoNet(num_devices, emb=c.emb, hidden=c.hidden, head=c.head, rounds=c.rounds,
                                    variant=c.variant)
        self.baseline = StepBaseline(c.baseline_window)
        self.structure = PerTask(num_devices, graph_structure)
        self.start_seed = seed  # init=fixed-random: each graph's start placement, drawn once from this seed
        self.fixed_start = PerTask(num_devices, self._draw_start)

    @property
    def episodes_per_update(self) -> int:
        return self.config.batch

    def _draw_start(self, task: PlacementTask) -> np.ndarray:
        return task.random_placement(np.random.default_rng(self.start_seed))

    # -- rollout ---------------------------------------------------------------------------

    def _start(self, task: PlacementTask, key: str, rng: np.random.Generator) -> _Episode:
        c = self.config
        if c.init == "fixed-random":
            dev = self.fixed_start[task].copy()
        elif c.init == "random":
            dev = task.random_placement(rng)
        else:
            dev = np.argmax(task.feasible, axis=1).astype(np.int64)  # the first device that can run it
        order = task.order if c.order == "topological" else rng.permutation(task.num_groups)
        return _Episode(task, key, dev, order, c.passes * task.num_groups, np.zeros(task.num_groups, dtype=np.int64),
                        dev.copy(), [], [], [], [], [])

    def _features(self, ep: _Episode, v: int) -> np.ndarray:
        from policies.rl.placeto.state import node_features, sweep_features

        if self.config.network == "authors":
            start = ep.now.group_start if ep.now is not None else None
            return sweep_features(self.structure[ep.task], ep.dev, ep.visited, v, start, self.num_devices)
        return node_features(self.structure[ep.task], ep.dev, ep.visited > 0, v, self.num_devices)

    def _logits(self, states: list[tuple[PlacementTask, np.ndarray, int]], grad: bool = False):
        """The policy's masked logits for states ``(task, features, current node)``."""
        from policies.rl.placeto.state import state_batch, sweep_batch

        items = [(self.structure[t], t.feasible, x, v) for t, x, v in states]
        if self.config.network == "authors":
            return self.model(sweep_batch(items))
        return self.model(state_batch(items, grad))

    def episodes(self, tasks: list[PlacementTask], keys: list[str], rng: np.random.Generator, *,
                 greedy: bool = False, record: bool = True,
                 actions: Sequence[np.ndarray] | None = None) -> list[_Episode]:
        """Run one episode per task side by side; every step is one GNN call for all of them.
        ``actions``: each episode's device for every group, taken at every step instead of the policy's
        choice (a teacher's walk along the MDP); the states, logits and rewards are those of any episode."""
        import torch

        c = self.config
        eps = [self._start(t, k, rng) for t, k in zip(tasks, keys, strict=True)]
        if actions is not None:  # one array of devices per episode
            for ep, forced in zip(eps, actions, strict=True):
                ep.forced = np.asarray(forced, dtype=np.int64)
        simulate_steps = record and c.reward == "intermediate"
        start = c.network == "authors"  # the start-time feature comes from the last simulation
        for ep in eps:
            if simulate_steps or start:
                ep.now = ep.evaluate(start)
        for t in range(max(ep.steps for ep in eps)):
            live = [ep for ep in eps if t < ep.steps]
            states = []
            for ep in live:
                v = int(ep.order[t % ep.task.num_groups])
                x = self._features(ep, v)
                states.append((ep.task, x, v))
                if record:
                    ep.features.append(x)
                    ep.current.append(v)
            with torch.no_grad():
                logp = torch.log_softmax(self._logits(states), dim=1).numpy()
            if actions is not None:
                acts = np.array([ep.forced[v] for ep, (_, _, v) in zip(live, states, strict=True)])
            elif greedy:
                acts = np.argmax(logp, axis=1)
            else:
                acts = np.argmax(logp - np.log(-np.log(rng.random(logp.shape))), axis=1)
            for ep, (_, _, v), a, lp in zip(live, states, acts.tolist(), logp, strict=True):
                moved = ep.dev[v] != a
                ep.dev[v] = a
                ep.visited[v] += 1
                before = ep.now
                if moved and (simulate_steps or start):
                    ep.now = ep.evaluate(start)
                if not record:
                    continue
                ep.actions.append(a)
                p = np.exp(lp)
                ep.entropy.append(float(-(p * np.where(p > 0, lp, 0.0)).sum()))
                ep.rewards.append((before.objective - ep.now.objective) / ep.task.scale if simulate_steps else 0.0)
        if record and c.reward == "terminal":
            for ep in eps:
                ep.now = ep.evaluate()
                ep.rewards[-1] = -ep.now.objective / ep.task.scale
        return eps

    def rollout(self, tasks: list[PlacementTask], keys: list[str], rng: np.random.Generator) -> Rollout:
        """One episode per task, without autograd (see :class:`policies.rl.core.agent.Agent`)."""
        eps = self.episodes(tasks, keys, rng)
        return Rollout([EpisodeStats(ep.key, ep.now, ep.best, ep.best_dev, float(np.sum(ep.rewards)),
                                     float(np.mean(ep.entropy)), ep.evaluations) for ep in eps],
                       [_Steps(ep.key, ep.features, ep.current, ep.actions, ep.rewards) for ep in eps])

    def merge(self, parts: list[Rollout]) -> Rollout:
        """Rollouts of several workers as one: the per-episode lists concatenate."""
        return Rollout([st for p in parts for st in p.episodes], [s for p in parts for s in p.data])

    # -- returns → advantages → loss ---------------------------------------------------------

    def advantages(self, rollout: Rollout, tasks: Mapping[str, PlacementTask], *, step: int) -> Advantages:
        """``Â_t`` of every step of the update per episode (returns, baseline, normalisation over the
        whole update); the loss divides by N, the update's steps."""
        c = self.config
        steps: list[_Steps] = rollout.data
        per = self.baseline.advantages([s.key for s in steps],
                                       [returns_to_go(np.array(s.rewards), c.discount) for s in steps])
        adv = np.concatenate(per)
        if c.normalize_advantages and len(adv) > 1:
            std = adv.std() + 1e-8
            per = [a / std for a in per]
        return Advantages(per, len(adv))

    def accumulate(self, data: list[_Steps], advantages: Advantages, tasks: Mapping[str, PlacementTask], *,
                   entropy_coef: float) -> None:
        """Accumulate the loss's gradient (module docstring) into the model, in chunks that bound memory."""
        import torch

        advantage = np.concatenate(advantages.per_episode)
        states = [(tasks[s.key], x, v) for s in data for x, v in zip(s.features, s.current, strict=True)]
        actions = np.concatenate([s.actions for s in data])
        total = len(states)
        start = 0
        while start < total:
            stop, nodes = start, 0
            while stop < total and (stop == start or nodes + states[stop][0].num_groups <= _MAX_NODES_PER_CHUNK):
                nodes += states[stop][0].num_groups
                stop += 1
            logp = torch.log_softmax(self._logits(states[start:stop], grad=True), dim=1)
            chosen = logp[torch.arange(stop - start), torch.from_numpy(actions[start:stop])]
            ent = -(logp.exp() * logp).sum(dim=1)
            a = torch.from_numpy(advantage[start:stop]).to(logp.dtype)
            loss = (-(a * chosen).sum() - entropy_coef * ent.sum()) / advantages.total
            loss.backward()
            start = stop
        return None

    # -- use and checkpoints -----------------------------------------------------------------

    def place(self, task: PlacementTask, rng: np.random.Generator, *, greedy: bool = True) -> np.ndarray:
        ep = self.episodes([task], ["place"], rng, greedy=greedy, record=False)[0]
        return ep.dev

    def state_dict(self) -> dict[str, Any]:
        return {"baseline": self.baseline.state_dict(), "start_seed": self.start_seed}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.baseline.load_state_dict(state["baseline"])
        if state.get("start_seed", self.start_seed) != self.start_seed:  # older checkpoints: the agent's seed
            self.start_seed = int(state["start_seed"])
            self.fixed_start = PerTask(self.num_devices, self._draw_start)
