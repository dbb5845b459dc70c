"""Placeto (Addanki et al. 2019): the iterative-improvement MDP over op groups, trained with REINFORCE.

MDP (§2.1): a state is the group graph with per-group features (run time, output size,
one-hot current device, visited flag, current flag). The initial placement is arbitrary
(``init``: uniformly random, or every group on one device); groups are visited in a fixed
order (topological on the group graph, or a fresh random permutation per episode), and each
step re-places the current group. An episode has ``n·|V|`` steps (n = ``passes``, 1 or 2).

Rewards (§2.1, App. A.4, A.7): *intermediate* (default) ``r_t = R(p_t) − R(p_{t+1})`` or
*terminal* ``r_T = −R(p_T)``, with R the memory-penalised runtime. **Scaling (ours):**
rewards are divided by the graph's makespan lower bound, so graphs of different sizes weigh
alike when a policy trains on many (the papers do not say how they scale).

Training (App. A.1, A.7): REINFORCE with the per-step moving-average baseline over the last
k = 10 episodes, entropy bonus, Adam with linearly decaying learning rate. **Ours:** the
advantages of an update are divided by their standard deviation (``normalize_advantages``).
A step's runtime change is often under 1 % of the lower bound, so without it the entropy
bonus outweighs the policy gradient and the policy stays uniform (measured on the 128-group
NMT graph: entropy still ln 2 after 700 episodes).

**Defaults that differ from the paper, and why (measured on ``gen:family-nmt?index=0`` grouped
to 128 groups on ``k80x2``, 8 episodes per update):** with undiscounted returns (γ = 1) the
policy stayed uniform for 80 updates (entropy ln 2, sampled runtime flat at ~395 ms), because
the return of a step sums the noise of every later step; with ``discount=0`` (each action
credited with its own runtime change, the intermediate reward) the sampled runtime fell from
490 ms to 334 ms in 64 updates and the greedy placement reached 319 ms (expert: 368 ms).
``lr`` 3e-3 (the paper's range is 1e-3–1e-4: at 1e-3 nothing moved in 100 updates) and an
entropy weight of 3e-3 (1e-3 collapsed to a deterministic 396 ms policy). ``init="single"``
follows Fig. 8b ("starting from the initial trivial placement"); random starts add variance the
per-step baseline cannot remove. Set ``discount=1 init=random lr=1e-3`` for the paper's setup. Several episodes
are rolled out side by side and every step of all of them goes through one GNN call; the
update re-evaluates all visited states in one batched forward pass (the rollout runs without
autograd). Placeto used 8 workers with synchronous updates; ``batch`` plays that role.

A step whose action keeps the group's device leaves the placement unchanged: its runtime is
reused, not simulated again, and it is not counted as an evaluated placement.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch

from policies.rl.agent import EpisodeStats, PerTask
from policies.rl.placeto_net import PlacetoNet, SparsePair, StateBatch
from policies.rl.reinforce import StepBaseline, returns_to_go
from policies.rl.task import Evaluation, PlacementTask, check_grouping

__all__ = ["PlacetoAgent", "PlacetoConfig"]

_MAX_NODES_PER_CHUNK = 300_000


@dataclass
class PlacetoConfig:
    """Placeto's hyper-parameters (defaults: the appendix of the other version, Placeto App. A.7)."""

    groups: int | None = 128  # Merge-and-Colocate target N (§4: 128 for ptb/cifar10, 160 for nmt)
    grouping: str = "merge"  # merge: §3.3 rule + Merge-and-Colocate to `groups` | units: Mirhoseini §4.1 units
    unit_depth: int | None = None  # scope parts naming a layer for grouping=units (None: found from the scopes)
    passes: int = 1  # n: each group re-placed n times per episode
    rounds: int = 4  # k message-passing rounds (4 or 8)
    emb: int = 8
    hidden: int = 8
    head: int = 16
    variant: str = "full"  # full | simple-partitioner | simple-aggregator (§4.3)
    reward: str = "intermediate"  # intermediate | terminal
    baseline_window: int = 10  # k episodes
    normalize_advantages: bool = True  # ours: divide advantages by their std over the update
    discount: float = 0.0  # γ of the returns (ours; the paper sums rewards undiscounted, γ = 1)
    batch: int = 8  # episodes per update (rolled out together)
    init: str = "single"  # single (the "trivial placement" of Fig. 8b) | random
    order: str = "topological"  # topological | random
    memory_penalty: float = 2.0  # c, s per GB over the limit (A.7)
    lr: float = 3e-3
    lr_final: float = 3e-4
    entropy: float = 3e-3
    entropy_final: float = 1e-4
    clip_grad: float = 1.0

    def __post_init__(self) -> None:
        check_grouping(self.grouping, self.unit_depth)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _TaskCache:
    static: np.ndarray  # (N, 2) normalised run time and output size
    down: tuple[np.ndarray, np.ndarray]  # CSR (ptr, col): row v = v's parents
    up: tuple[np.ndarray, np.ndarray]  # CSR (ptr, col): row v = v's children
    sets: list[list[np.ndarray]]  # parents, children, parallel nodes of each node (for pooling)


def _csr_of(n: int, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.lexsort((cols, rows))
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=ptr[1:])
    return ptr, cols[order].astype(np.int64)


def _csr_tensor(crow: np.ndarray, col: np.ndarray, shape: tuple[int, int],
                values: np.ndarray | None = None) -> torch.Tensor:
    vals = torch.ones(len(col), dtype=torch.float32) if values is None else torch.from_numpy(values)
    return torch.sparse_csr_tensor(torch.from_numpy(crow), torch.from_numpy(col), vals, size=shape,
                                   check_invariants=False)


def _mean_adjacency(a: tuple[np.ndarray, np.ndarray], a_t: tuple[np.ndarray, np.ndarray], n: int) -> SparsePair:
    """Row-normalised adjacency (mean over in-neighbours) from CSR ``a`` and the CSR of its pattern's transpose."""
    (ptr, col), (t_ptr, t_col) = a, a_t
    inv = (1.0 / np.maximum(np.diff(ptr), 1)).astype(np.float32)
    vals = np.repeat(inv, np.diff(ptr))
    return SparsePair(_csr_tensor(ptr, col, (n, n), vals), _csr_tensor(t_ptr, t_col, (n, n), inv[t_col]))


def _selection(ptr: np.ndarray, col: np.ndarray, shape: tuple[int, int], grad: bool) -> SparsePair:
    """A row-averaging matrix (CSR ``ptr``, ``col``; row s = 1/|row| on its columns) and, when
    gradients are needed, its transpose."""
    counts = np.diff(ptr)
    vals = np.repeat((1.0 / np.maximum(counts, 1)).astype(np.float32), counts)
    a = _csr_tensor(ptr, col, shape, vals)
    if not grad:
        return SparsePair(a, None)
    rows = np.repeat(np.arange(shape[0]), counts)
    order = np.lexsort((rows, col))
    t_ptr = np.zeros(shape[1] + 1, dtype=np.int64)
    np.cumsum(np.bincount(col, minlength=shape[1]), out=t_ptr[1:])
    return SparsePair(a, _csr_tensor(t_ptr, rows[order].astype(np.int64), (shape[1], shape[0]), vals[order]))


def _task_cache(task: PlacementTask) -> _TaskCache:
    t, b = task.group_time, task.group_out_bytes
    static = np.log1p(np.column_stack([t / max(t.mean(), 1e-30), b / max(b.mean(), 1e-30)]))
    n = task.num_groups
    r = task.reach.copy()
    np.fill_diagonal(r, False)
    par = ~(r | r.T)
    np.fill_diagonal(par, False)
    sets = [[np.flatnonzero(r[:, v]) for v in range(n)], [np.flatnonzero(r[v]) for v in range(n)],
            [np.flatnonzero(par[v]) for v in range(n)]]
    src, dst = task.edges
    return _TaskCache(static, _csr_of(n, dst, src), _csr_of(n, src, dst), sets)


class _Episode:
    def __init__(self, task: PlacementTask, key: str, devices: np.ndarray, order: np.ndarray, steps: int) -> None:
        self.task, self.key, self.dev, self.order, self.steps = task, key, devices, order, steps
        self.visited = np.zeros(task.num_groups, dtype=bool)
        self.features: list[np.ndarray] = []
        self.current: list[int] = []
        self.actions: list[int] = []
        self.rewards: list[float] = []
        self.entropy: list[float] = []
        self.evaluations = 0
        self.now: Evaluation | None = None
        self.best: Evaluation | None = None
        self.best_dev = devices.copy()

    def evaluate(self) -> Evaluation:
        ev = self.task.evaluate(self.dev)
        self.evaluations += 1
        if self.best is None or ev.objective < self.best.objective:
            self.best, self.best_dev = ev, self.dev.copy()
        return ev


class PlacetoAgent:
    """Placeto's policy, rollouts and REINFORCE update (see the module docstring)."""

    name = "placeto"
    same_graph_per_update = False

    def __init__(self, num_devices: int, config: PlacetoConfig | None = None, *, seed: int = 0) -> None:
        self.config = config or PlacetoConfig()
        c = self.config
        if c.reward not in ("intermediate", "terminal"):
            raise ValueError(f"reward must be 'intermediate' or 'terminal', got {c.reward!r}")
        if c.init not in ("random", "single") or c.order not in ("topological", "random"):
            raise ValueError("init must be 'random' or 'single' and order 'topological' or 'random'")
        if c.passes < 1 or c.batch < 1 or c.rounds < 0:
            raise ValueError("passes and batch must be at least 1 and rounds at least 0")
        self.num_devices = num_devices
        torch.manual_seed(seed)
        self.model = PlacetoNet(num_devices, emb=c.emb, hidden=c.hidden, head=c.head, rounds=c.rounds,
                                variant=c.variant)
        self.baseline = StepBaseline(c.baseline_window)
        self._cache = PerTask(num_devices, _task_cache)

    @property
    def episodes_per_update(self) -> int:
        return self.config.batch

    # -- states ---------------------------------------------------------------------------

    def _prepare(self, task: PlacementTask) -> _TaskCache:
        return self._cache[task]

    def _features(self, ep: _Episode, v: int) -> np.ndarray:
        n, d = ep.task.num_groups, self.num_devices
        x = np.zeros((n, 4 + d), dtype=np.float32)
        x[:, :2] = self._prepare(ep.task).static
        x[np.arange(n), 2 + ep.dev] = 1.0
        x[:, 2 + d] = ep.visited
        x[v, 3 + d] = 1.0
        return x

    def _batch(self, items: list[tuple[PlacementTask, np.ndarray, int]], grad: bool = False) -> StateBatch:
        """The states ``(task, features, current node)`` as one :class:`StateBatch`."""
        xs, current, masks = [], [], []
        graph_ptr: dict[str, list[np.ndarray]] = {"down": [], "up": []}
        graph_col: dict[str, list[np.ndarray]] = {"down": [], "up": []}
        nnz = {"down": 0, "up": 0}
        pool_ptr: list[list[int]] = [[], [], []]
        pool_col: list[list[np.ndarray]] = [[], [], []]
        member_col = []
        off = 0
        for task, x, v in items:
            n = task.num_groups
            tc = self._prepare(task)
            xs.append(x)
            for name in ("down", "up"):
                ptr, col = getattr(tc, name)
                graph_ptr[name].append(ptr[1:] + nnz[name])
                graph_col[name].append(col + off)
                nnz[name] += len(col)
            current.append(off + v)
            masks.append(task.feasible[v])
            for i in range(3):
                idx = tc.sets[i][v]
                pool_col[i].append(idx + off)
                pool_ptr[i].append((pool_ptr[i][-1] if pool_ptr[i] else 0) + len(idx))
            member_col.append(np.arange(off, off + n))
            off += n
        s = len(items)
        pools = [_selection(np.concatenate([[0], pool_ptr[i]]).astype(np.int64), np.concatenate(pool_col[i]), (s, off),
                            grad) for i in range(3)]
        members = _selection(np.concatenate([[0], np.cumsum([len(m) for m in member_col])]).astype(np.int64),
                             np.concatenate(member_col), (s, off), grad)
        down = (np.concatenate([[0], *graph_ptr["down"]]).astype(np.int64), np.concatenate(graph_col["down"]))
        up = (np.concatenate([[0], *graph_ptr["up"]]).astype(np.int64), np.concatenate(graph_col["up"]))
        return StateBatch(torch.from_numpy(np.concatenate(xs)), _mean_adjacency(down, up, off),
                          _mean_adjacency(up, down, off), torch.tensor(current, dtype=torch.long), pools, members,
                          torch.from_numpy(np.stack(masks)))

    # -- rollouts -------------------------------------------------------------------------

    def _start(self, task: PlacementTask, key: str, rng: np.random.Generator) -> _Episode:
        c = self.config
        single = np.argmax(task.feasible, axis=1).astype(np.int64)  # the first device that can run it
        dev = task.random_placement(rng) if c.init == "random" else single
        order = task.order if c.order == "topological" else rng.permutation(task.num_groups)
        return _Episode(task, key, dev, order, c.passes * task.num_groups)

    def rollout(self, tasks: list[PlacementTask], keys: list[str], rng: np.random.Generator, *,
                greedy: bool = False, record: bool = True) -> list[_Episode]:
        """Run one episode per task side by side; every step is one GNN call for all of them."""
        c = self.config
        eps = [self._start(t, k, rng) for t, k in zip(tasks, keys, strict=True)]
        simulate_steps = record and c.reward == "intermediate"
        for ep in eps:
            if simulate_steps:
                ep.now = ep.evaluate()
        for t in range(max(ep.steps for ep in eps)):
            live = [ep for ep in eps if t < ep.steps]
            items = []
            for ep in live:
                v = int(ep.order[t % ep.task.num_groups])
                x = self._features(ep, v)
                items.append((ep.task, x, v))
                if record:
                    ep.features.append(x)
                    ep.current.append(v)
            with torch.no_grad():
                logp = torch.log_softmax(self.model(self._batch(items)), dim=1).numpy()
            if greedy:
                acts = np.argmax(logp, axis=1)
            else:
                acts = np.argmax(logp - np.log(-np.log(rng.random(logp.shape))), axis=1)
            for ep, (_, _, v), a, lp in zip(live, items, acts.tolist(), logp, strict=True):
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

    def train_step(self, tasks: list[PlacementTask], keys: list[str], *, entropy_coef: float, step: int,
                   rng: np.random.Generator) -> list[EpisodeStats]:
        c = self.config
        eps = self.rollout(tasks, keys, rng)
        adv = self.baseline.advantages([ep.key for ep in eps],
                                       [returns_to_go(np.array(ep.rewards), c.discount) for ep in eps])
        states = [(ep.task, x, v) for ep in eps for x, v in zip(ep.features, ep.current, strict=True)]
        actions = np.concatenate([ep.actions for ep in eps])
        advantage = np.concatenate(adv)
        if c.normalize_advantages and len(advantage) > 1:
            advantage = advantage / (advantage.std() + 1e-8)
        total = len(states)
        start = 0
        while start < total:  # chunks bound memory; gradients add up
            stop, nodes = start, 0
            while stop < total and (stop == start or nodes + states[stop][0].num_groups <= _MAX_NODES_PER_CHUNK):
                nodes += states[stop][0].num_groups
                stop += 1
            logp = torch.log_softmax(self.model(self._batch(states[start:stop], grad=True)), dim=1)
            chosen = logp[torch.arange(stop - start), torch.from_numpy(actions[start:stop])]
            ent = -(logp.exp() * logp).sum(dim=1)
            a = torch.from_numpy(advantage[start:stop]).to(logp.dtype)
            loss = (-(a * chosen).sum() - entropy_coef * ent.sum()) / total
            loss.backward()
            start = stop
        return [EpisodeStats(ep.key, ep.now, ep.best, ep.best_dev, float(np.sum(ep.rewards)),
                             float(np.mean(ep.entropy)), ep.evaluations) for ep in eps]

    def place(self, task: PlacementTask, rng: np.random.Generator, *, greedy: bool = True) -> np.ndarray:
        ep = self.rollout([task], ["place"], rng, greedy=greedy, record=False)[0]
        return ep.dev

    def state_dict(self) -> dict[str, Any]:
        return {"baseline": self.baseline.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.baseline.load_state_dict(state["baseline"])
