"""Placeto (Addanki et al. 2019): the iterative-improvement MDP over op groups, trained with REINFORCE.

MDP (§2.1). A state is the group graph with per-group features (run time, output size,
one-hot current device, visited flag, current flag; :mod:`policies.rl.placeto_state`). Groups
are visited in a fixed order (topological on the group graph, or a fresh random permutation
per episode); step t re-places the current group v_t with ``a_t ~ π_θ(· | s_t)`` (the GNN of
:mod:`policies.rl.placeto_net`). An episode has ``n·|V|`` steps (n = ``passes``, 1 or 2, A.7).

Rewards (§2.1, App. A.4, A.7), with R the memory-penalised runtime of :mod:`engine.objectives`:

* intermediate (default): ``r_t = (R(p_t) − R(p_{t+1})) / L``
* terminal: ``r_T = −R(p_T) / L``, zero before

Returns and advantages (App. A.1 Eq. 1, A.7 "Baselines"): ``G_t = Σ_{t'≥t} γ^{t'−t} r_t'`` and
``A_t = G_t − b_t``, with ``b_t`` the mean of ``G_t`` over the last k = 10 episodes of the graph.

Loss, over the S = ``batch`` episodes of an update (T_i steps each, H the policy's entropy):

    loss = −1/N Σ_i Σ_t [ Â_{i,t} log π_θ(a_{i,t} | s_{i,t}) + β H(π_θ(· | s_{i,t})) ],  N = Σ_i T_i

then Adam with the learning rate and β decaying linearly (A.7), and a gradient-norm clip.

Deviations (measured on ``gen:family-nmt?index=0`` at 128 groups on ``k80x2``, 8 episodes per update):

1. L, the graph's makespan lower bound, scales the rewards so that graphs of different sizes
   weigh alike when a policy trains on many (the paper does not say how it scales).
2. ``Â = A / std(A)`` over the update (``normalize_advantages``): a step's runtime change is often
   under 1 % of L, and without it the entropy bonus outweighed the policy gradient (entropy
   still ln 2 after 700 episodes).
3. Superseded (γ is the paper's 1 again): γ = 0 had been the default, crediting each action
   with its own runtime change only. Tuned on the NMT graph it learned there (sampled runtime
   490 → 334 ms in 64 updates, where γ = 1 stayed flat at ~395 ms for 80 updates), but it is
   myopic: from the single-device start, moving one group away rarely pays before its
   successors move too, so on ``gen:random?ops=200&seed=1`` on ``p100x4`` the policy learned to
   keep groups together and the sampled runtime *rose* (median of episodes 1–40 vs 81–120:
   4.22 → 4.72 ms with γ = 0, 4.20 → 4.63 ms with γ = 0.9, 4.21 → 4.05 ms with γ = 1, the best
   reaching m-ETF's 3.30 ms; ``benchmarks/bench_learning_matrix.py``). A return that sums the
   rest of the episode (``R(p_t) − R(p_T)``) credits a move with what it enables later.
4. ``lr`` 3e-3 (the paper's range 1e-3–1e-4 moved nothing in 100 updates) and β 3e-3 (1e-3
   collapsed to a deterministic 396 ms policy).
5. ``init="single"``, the "trivial placement" of Fig. 8b, rather than a random start whose
   variance the per-step baseline cannot remove. ``init=random lr=1e-3`` is the paper's setup.
6. The ``batch`` episodes of an update are rolled out side by side, every step one GNN call for
   all of them, and the update re-evaluates all visited states in one batched pass (the rollout
   runs without autograd); Placeto used 8 workers with synchronous updates (A.7 "Workers").
7. A step whose action keeps the group's device leaves the placement unchanged: its runtime is
   reused, not simulated again, and it is not counted as an evaluated placement.

Known limit (``benchmarks/bench_placeto_budget.py``, ``gen:nmt`` on ``k80x2``, 20,400 placements):
from the single-device start, moving every group with one probability p regardless of the group
is best at p = 1/2 (mean runtime 536.8 ms against 689 ms at p = 0 or 1), which on two devices is
the uniform policy. More generally, on identical devices a placement and its relabelling take the
same time (``tests/engine/test_simulator_properties.py``), so the expected runtime is unchanged
when every group's probability q of moving becomes 1 − q, and at the uniform policy the gradient
vanishes along every direction that depends on the group alone. Toward the best of 2,000 random
placements the mean runtime stays within 3.4 ms of the uniform 536 ms out to q = 1/2 ± 0.1 (a
plateau). What is left depends on where the other groups are, and the simplest such direction
does not pay: putting a group where a placed parent went, with probability c, takes 542.9 ms at
c = 1/2 and more as c grows (599.8 ms at c = 1). Against the noise of a return summed over 128
actions, the policy learned in 4 of 54 runs over 18 settings (entropy, learning rate, batch, group
count, passes, discount, baseline window, the paper's random start), all with seed 0 and each
one whose first episodes had already left uniform; the others stayed at or near it or left it
the wrong way. ``placelab reproduce placeto-table1`` therefore groups NMT into 32 op groups, where
the same random re-placements find better placements (README "Reproducing the papers").

torch is imported inside the functions that need it (see :mod:`policies.rl.registry`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from policies.rl.agent import Advantages, EpisodeStats, PerTask, Rollout
from policies.rl.registry import LearnedConfig, param, register_learned
from policies.rl.reinforce import StepBaseline, returns_to_go
from policies.rl.task import Evaluation, PlacementTask

__all__ = ["VARIANTS", "PlacetoAgent", "PlacetoConfig"]

#: §4.3's ablations besides the full network (see :mod:`policies.rl.placeto_net`).
VARIANTS = ("full", "simple-partitioner", "simple-aggregator")
_MAX_NODES_PER_CHUNK = 300_000


@dataclass
class PlacetoConfig(LearnedConfig):
    """Placeto's hyper-parameters; each field's metadata cites its default's source."""

    passes: int = param(1, "n: each group re-placed n times per episode", "Placeto App. A.7 (n = 1 or 2)", low=1)
    rounds: int = param(4, "k message-passing rounds", "Placeto §2.2 (k a tunable hyper-parameter; 4 or 8)", low=0)
    emb: int = param(8, "node embedding size |E|", "Placeto App. A.7", low=1)
    hidden: int = param(8, "hidden units d of every f, g, l, h (two layers)", "Placeto App. A.7", low=1)
    head: int = param(16, "hidden units of the two-layer policy head", "Placeto App. A.7", low=1)
    variant: str = param("full", "network: full, or a §4.3 ablation", "Placeto §4.3", choices=VARIANTS)
    reward: str = param("intermediate", "intermediate: r_t = R(p_t) − R(p_t+1); terminal: −R(p_T) at the end",
                        "Placeto §2.1, App. A.4 (intermediate: lower variance, Fig. 8a)",
                        choices=("intermediate", "terminal"))
    baseline_window: int = param(10, "k episodes averaged by the per-step baseline", "Placeto App. A.7", low=1)
    normalize_advantages: bool = param(True, "divide the advantages by their standard deviation over the update",
                                       "ours: deviation 2 of the module docstring")
    discount: float = param(1.0, "γ of the returns", "Placeto App. A.1 Eq. 1 (undiscounted); γ = 0 learned the "
                            "wrong thing off its tuning graph (deviation 3)", low=0.0, high=1.0)
    batch: int = param(8, "episodes per update, rolled out together", "Placeto App. A.7: 8 synchronous workers",
                       low=1)
    init: str = param("single", "initial placement: every group on its first feasible device, or random",
                      "Placeto Fig. 8b (\"the initial trivial placement\"); deviation 5", choices=("single", "random"))
    order: str = param("topological", "order in which the groups are visited", "Placeto §2.1",
                       choices=("topological", "random"))
    lr: float = param(3e-3, "Adam learning rate, decayed linearly to lr_final",
                      "ours: deviation 4 (the paper's 1e-3–1e-4, App. A.7, moved nothing)", low=1e-12)
    lr_final: float = param(3e-4, "learning rate at the end of the budget", "ours: lr / 10, as A.7's range",
                            low=0.0)
    entropy: float = param(3e-3, "entropy weight β, decayed linearly to entropy_final",
                           "ours: deviation 4 (A.7 tunes it per model)", low=0.0)
    entropy_final: float = param(1e-4, "entropy weight at the end of the budget", "Placeto App. A.7 (\"a low value\")",
                                 low=0.0)


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

    def evaluate(self) -> Evaluation:
        ev = self.task.evaluate(self.dev)
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


@register_learned("placeto", config=PlacetoConfig, episodes=200,
                  description="Placeto GNN policy (Addanki et al. 2019): trains on the graph, or policy=RUN applies "
                              "a trained one zero-shot")
class PlacetoAgent:
    """Placeto's policy, rollouts and REINFORCE update (see the module docstring)."""

    name = "placeto"
    same_graph_per_update = False

    def __init__(self, num_devices: int, config: PlacetoConfig | None = None, *, seed: int = 0,
                 tasks: Sequence[PlacementTask] = ()) -> None:
        import torch

        from policies.rl.placeto_net import PlacetoNet
        from policies.rl.placeto_state import graph_structure

        self.config = c = config or PlacetoConfig()
        self.num_devices = num_devices
        torch.manual_seed(seed)
        self.model = PlacetoNet(num_devices, emb=c.emb, hidden=c.hidden, head=c.head, rounds=c.rounds,
                                variant=c.variant)
        self.baseline = StepBaseline(c.baseline_window)
        self.structure = PerTask(num_devices, graph_structure)

    @property
    def episodes_per_update(self) -> int:
        return self.config.batch

    # -- rollout ---------------------------------------------------------------------------

    def _start(self, task: PlacementTask, key: str, rng: np.random.Generator) -> _Episode:
        c = self.config
        single = np.argmax(task.feasible, axis=1).astype(np.int64)  # the first device that can run it
        dev = task.random_placement(rng) if c.init == "random" else single
        order = task.order if c.order == "topological" else rng.permutation(task.num_groups)
        return _Episode(task, key, dev, order, c.passes * task.num_groups, np.zeros(task.num_groups, dtype=bool),
                        dev.copy(), [], [], [], [], [])

    def _features(self, ep: _Episode, v: int) -> np.ndarray:
        from policies.rl.placeto_state import node_features

        return node_features(self.structure[ep.task], ep.dev, ep.visited, v, self.num_devices)

    def _logits(self, states: list[tuple[PlacementTask, np.ndarray, int]], grad: bool = False):
        """The policy's masked logits for states ``(task, features, current node)``."""
        from policies.rl.placeto_state import state_batch

        return self.model(state_batch([(self.structure[t], t.feasible, x, v) for t, x, v in states], grad))

    def episodes(self, tasks: list[PlacementTask], keys: list[str], rng: np.random.Generator, *,
                 greedy: bool = False, record: bool = True) -> list[_Episode]:
        """Run one episode per task side by side; every step is one GNN call for all of them."""
        import torch

        c = self.config
        eps = [self._start(t, k, rng) for t, k in zip(tasks, keys, strict=True)]
        simulate_steps = record and c.reward == "intermediate"
        for ep in eps:
            if simulate_steps:
                ep.now = ep.evaluate()
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
            if greedy:
                acts = np.argmax(logp, axis=1)
            else:
                acts = np.argmax(logp - np.log(-np.log(rng.random(logp.shape))), axis=1)
            for ep, (_, _, v), a, lp in zip(live, states, acts.tolist(), logp, strict=True):
                moved = ep.dev[v] != a
                ep.dev[v] = a
                ep.visited[v] = True
                if not record:
                    continue
                ep.actions.append(a)
                p = np.exp(lp)
                ep.entropy.append(float(-(p * np.where(p > 0, lp, 0.0)).sum()))
                if simulate_steps:
                    before = ep.now
                    ep.now = ep.evaluate() if moved else before
                    ep.rewards.append((before.objective - ep.now.objective) / ep.task.scale)
                else:
                    ep.rewards.append(0.0)
        if record and c.reward == "terminal":
            for ep in eps:
                ep.now = ep.evaluate()
                ep.rewards[-1] = -ep.now.objective / ep.task.scale
        return eps

    def rollout(self, tasks: list[PlacementTask], keys: list[str], rng: np.random.Generator) -> Rollout:
        """One episode per task, without autograd (see :class:`policies.rl.agent.Agent`)."""
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
        return {"baseline": self.baseline.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.baseline.load_state_dict(state["baseline"])
