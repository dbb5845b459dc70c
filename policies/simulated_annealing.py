"""Simulated annealing over placements, scored by the simulator: the strong search reference (``anneal``).

``anneal`` is the search the other placers are measured against ("how far is each method from a strong
search?"): a budget of simulator evaluations and a seed fix its result, and a wall-time limit may cut it
short. It is simulated annealing (Kirkpatrick, Gelatt & Vecchi 1983) with

* **a good start**: the best, by the cost below, of ``single-device``, ``m-etf``, ``heft``, ``m-topo`` and
  ``critical-path`` with ``start_runs`` runs (each run one evaluation, as in ``local-search``);
* **four moves** on units (colocation groups, :class:`~policies.base.PlacementUnits`): one unit to the
  device of one of its ops' neighbours (a producer or consumer: removes a transfer), one unit to a
  uniformly random device, a **swap** of two units on different devices (keeps the load), and a
  **segment** move: 2 to ``segment`` consecutive ops of the static critical path through a random op
  (each op followed by the successor with the largest communication cost + b-level, DOPPLER App. E's
  b-level with the cluster's default link, :func:`engine.graph.dag.b_level`) all go to one device, the device
  of the segment's producer or a random one. The schedule's own critical path would need a full
  schedule per step; the static one is computed once;
* **a calibrated temperature**: the first ``max(20, min(200, evaluations / 50))`` moves are greedy
  (improvements only) and their cost increases set the initial temperature so that the mean increase is
  accepted with probability ``accept0`` (the classic calibration, Kirkpatrick et al. 1983; Johnson et al.
  1989); it then falls geometrically to ``cooling_to`` of itself over each round;
* **restarts from the best**: the remaining evaluations are split into ``restarts + 1`` rounds; each
  round starts from the best placement found so far, at half the previous round's initial temperature.

Cost: Placeto A.7's memory-penalized runtime (:func:`policies.list_scheduling.memory_penalized`) from one
:meth:`~engine.sim.simulator.Simulator.makespan_and_peak` call; where no placement can run out of memory
(the graph's bytes, all of them together, fit on the smallest device: DOPPLER's files carry none) the
cheaper :meth:`~engine.sim.simulator.Simulator.makespan` and no penalty. A move can shift every later event,
so the cost is not updated incrementally: each new candidate is one simulation. Candidates seen before
are looked up (a bounded cache; near the end most proposals revisit placements), which saves time and
nothing else: every scored candidate counts as an evaluation, cached or not, so the same seed and
evaluation budget give the same placement on any machine.

Acceptance is Metropolis: a candidate ``Δ`` seconds worse is taken with probability ``exp(−Δ / T)``.
The best placement seen is returned, so the result is never worse than the start. After each
:meth:`Anneal.place` the placer's :attr:`Anneal.report` (:class:`SearchReport`) says what ran: the budget,
the evaluations used, which limit stopped the search (``evaluations``, ``time limit``, or ``nothing to
move``) and the winning start.
"""

from __future__ import annotations

import math
import numbers
import time
from dataclasses import dataclass, replace

import numpy as np

from engine.cluster import Cluster, edge_transfer_cost
from engine.errors import SpecError, quote
from engine.graph.compgraph import CompGraph
from engine.graph.dag import b_level
from engine.placement import Placement
from engine.sim.simulator import Simulator
from policies.base import PlacementUnits, Progress, budget_words, placer
from policies.list_scheduling import CriticalPath, Heft, MEtf, MTopo, memory_penalized
from policies.trivial import SingleDevice

__all__ = ["Anneal", "SearchReport", "budget_text"]

#: Each later round starts at this fraction of the previous round's initial temperature.
REHEAT = 0.5
#: Candidates remembered (placement → cost); the cache is emptied when full.
CACHE_SIZE = 1 << 16
#: Proposals in a row that name no feasible move (all pinned, one device) before the search gives up.
MAX_FUTILE = 1000


def budget_text(evaluations: int, time_limit_s: float | None, seed: int) -> str:
    """The search's budget in words, as every table that shows it states it:
    ``anneal: 20,000 evaluations, no time limit, seed 0``."""
    return budget_words("anneal", evaluations, time_limit_s, seed)


@dataclass(frozen=True)
class SearchReport:
    """What one :meth:`Anneal.place` ran: its budget, what it used, and what stopped it.

    ``stopped_by``: ``"evaluations"`` (the budget was used up), ``"time limit"`` (``time_limit_s`` came
    first: then the result depends on the machine's speed) or ``"nothing to move"`` (every unit is pinned
    or has one device it can run on). Costs are memory-penalized runtimes (s).
    """

    evaluations: int
    time_limit_s: float | None
    seed: int
    evaluations_used: int
    simulations: int
    stopped_by: str
    seconds: float
    start: str
    start_cost: float
    best_cost: float

    def budget(self) -> str:
        """:func:`budget_text` of this run."""
        return budget_text(self.evaluations, self.time_limit_s, self.seed)


def _check(name: str, value: object, low: float, high: float | None = None, *, integer: bool = False,
           bounds: str | None = None) -> None:
    """Refuse a parameter outside ``[low, high]`` (or not whole, with ``integer``) in one sentence."""
    kind = numbers.Integral if integer else numbers.Real
    ok = isinstance(value, kind) and not isinstance(value, bool) and math.isfinite(value)
    if not (ok and low <= value and (high is None or value <= high)):
        bounds = bounds or (f"in [{low:g}, {high:g}]" if high is not None else f">= {low:g}")
        raise SpecError(f"placer 'anneal': {name} must be {'a whole number' if integer else 'a number'} {bounds}, "
                        f"got {quote(value)}")


@placer("anneal", "simulated annealing from the best list schedule: neighbour, random, swap and critical-path "
          "segment moves, calibrated temperature, restarts from the best; the strong search reference",
          family="search")
class Anneal:
    """Simulated annealing; ``budget`` (simulator evaluations) replaces ``evaluations``. See the module docstring."""


    def __init__(self, evaluations: int = 20_000, time_limit_s: float | None = None, restarts: int = 3,
                 start_runs: int = 10, accept0: float = 0.05, cooling_to: float = 1e-3, swap_prob: float = 0.2,
                 segment_prob: float = 0.2, segment: int = 8) -> None:
        _check("evaluations", evaluations, 1, integer=True)
        if time_limit_s is not None:
            _check("time_limit_s", time_limit_s, 0)
        _check("restarts", restarts, 0, integer=True)
        _check("start_runs", start_runs, 1, integer=True)
        _check("accept0", accept0, 1e-12, 1 - 1e-12, bounds="strictly between 0 and 1")
        _check("cooling_to", cooling_to, 1e-12, 1, bounds="in (0, 1]")
        _check("swap_prob", swap_prob, 0, 1)
        _check("segment_prob", segment_prob, 0, 1 - swap_prob)
        _check("segment", segment, 2, integer=True)
        self.evaluations = int(evaluations)
        self.time_limit_s = None if time_limit_s is None else float(time_limit_s)
        self.restarts = int(restarts)
        self.start_runs = int(start_runs)
        self.accept0 = float(accept0)
        self.cooling_to = float(cooling_to)
        self.swap_prob = float(swap_prob)
        self.segment_prob = float(segment_prob)
        self.segment = int(segment)
        #: What the last :meth:`place` ran (None before the first).
        self.report: SearchReport | None = None

    def starts(self, graph: CompGraph, cluster: Cluster, seed: int) -> dict[str, Placement]:
        """The starting points, by placer name (``critical-path`` uses ``start_runs`` evaluations)."""
        return {"single-device": SingleDevice().place(graph, cluster), "m-etf": MEtf().place(graph, cluster),
                "heft": Heft().place(graph, cluster), "m-topo": MTopo().place(graph, cluster),
                "critical-path": CriticalPath(runs=self.start_runs).place(graph, cluster, seed=seed)}

    def place(self, graph: CompGraph, cluster: Cluster, *, seed: int = 0, budget: int | None = None,
              progress: Progress | None = None) -> Placement:
        if budget is not None:
            _check("budget", budget, 1, integer=True)
        total = int(budget if budget is not None else self.evaluations)
        t0 = time.perf_counter()
        deadline = None if self.time_limit_s is None else t0 + self.time_limit_s
        units = PlacementUnits(graph, cluster)
        search = _Search(graph, cluster, units, self)
        starts = self.starts(graph, cluster, seed)
        costs = {name: search.cost(units_of(units, p)) for name, p in starts.items()}
        start = min(costs, key=costs.__getitem__)  # ties: the first in starts() order
        used = self.start_runs + len(costs) - 1  # critical-path's runs are one evaluation each
        search.run(units_of(units, starts[start]), costs[start], total - used, np.random.default_rng(seed),
                   deadline, progress=None if progress is None else (lambda k, m: progress(used + k, total, m)))
        self.report = SearchReport(total, self.time_limit_s, seed, used + search.used, search.simulations,
                                   search.stopped, time.perf_counter() - t0, start, costs[start], search.best_cost)
        if search.best_cost < costs[start]:
            return units.to_placement(search.best)
        return replace(starts[start], predicted_makespan_s=None)  # a start as it is: no list scheduler's estimate


def units_of(units: PlacementUnits, placement: Placement) -> np.ndarray:
    """The device of every unit under ``placement`` (its ops share one)."""
    out = np.zeros(units.num_units, dtype=np.int64)
    out[units.op_unit] = placement.devices
    return out


class _Search:
    """One annealing run's state: the cost function, the moves, the current and the best placement (per unit)."""

    def __init__(self, graph: CompGraph, cluster: Cluster, units: PlacementUnits, params: Anneal) -> None:
        self.graph, self.units, self.p = graph, units, params
        self.op_unit = units.op_unit
        self.num_devices = cluster.num_devices
        sim, cap = Simulator(graph, cluster), cluster.memory
        all_bytes = (graph.persistent_bytes.sum() + graph.output_bytes.sum() + graph.temp_bytes.sum()
                     + graph.edge_bytes.sum())
        if all_bytes <= cap.min():  # no placement can run out of memory: no penalty, no memory bookkeeping
            self._simulate = sim.makespan
        else:
            self._simulate = lambda devices: memory_penalized(*sim.makespan_and_peak(devices), cap)
        self._key_type = np.int8 if cluster.num_devices <= 127 else np.int16
        key_bytes = units.num_units * np.dtype(self._key_type).itemsize
        self._cache: dict[bytes, float] = {}
        self._cache_size = max(0, min(CACHE_SIZE, (64 << 20) // max(1, key_bytes)))
        self.movable_ops = np.flatnonzero(units.feasible.sum(axis=1)[units.op_unit] > 1)
        ptr, idx = graph.succ.ptr, graph.succ.idx
        ranked = edge_transfer_cost(graph, cluster)[graph.succ.edge] + b_level(
            graph, edge_cost=edge_transfer_cost(graph, cluster))[idx]
        self.next_op = np.full(graph.num_ops, -1, dtype=np.int64)  # the static critical path's next op
        for o in np.flatnonzero(np.diff(ptr)).tolist():
            self.next_op[o] = idx[ptr[o] + int(np.argmax(ranked[ptr[o]:ptr[o + 1]]))]
        self.simulations = 0
        self.used = 0
        self.stopped = "evaluations"
        self.best = np.zeros(0, dtype=np.int64)
        self.best_cost = math.inf

    def cost(self, unit_devices: np.ndarray) -> float:
        """The cost of a placement given per unit (cached)."""
        key = unit_devices.astype(self._key_type).tobytes()
        c = self._cache.get(key)
        if c is None:
            c = float(self._simulate(unit_devices[self.op_unit]))
            self.simulations += 1
            if len(self._cache) >= self._cache_size:
                self._cache.clear()
            if self._cache_size:
                self._cache[key] = c
        return c

    def propose(self, cur: np.ndarray, rng: np.random.Generator) -> np.ndarray | None:
        """A neighbour of ``cur`` (per unit), or None where the drawn move is not possible."""
        feasible, op_unit = self.units.feasible, self.op_unit
        r = rng.random()
        o = int(self.movable_ops[rng.integers(len(self.movable_ops))])
        u = int(op_unit[o])
        cand = cur.copy()
        if r < self.p.swap_prob:
            v = int(op_unit[self.movable_ops[rng.integers(len(self.movable_ops))]])
            du, dv = cur[u], cur[v]
            if du == dv or not (feasible[u, dv] and feasible[v, du]):
                return None
            cand[u], cand[v] = dv, du
            return cand
        if r < self.p.swap_prob + self.p.segment_prob:
            ops = [o]
            for _ in range(int(rng.integers(1, self.p.segment))):
                if self.next_op[ops[-1]] < 0:
                    break
                ops.append(int(self.next_op[ops[-1]]))
            target = self._target(o, cur, rng)
            seg = np.unique(op_unit[ops])
            seg = seg[feasible[seg, target] & (cur[seg] != target)]
            if len(seg) == 0:
                return None
            cand[seg] = target
            return cand
        target = self._target(o, cur, rng) if rng.random() < 0.5 else int(rng.integers(self.num_devices))
        if target == cur[u] or not feasible[u, target]:
            return None
        cand[u] = target
        return cand

    def _target(self, o: int, cur: np.ndarray, rng: np.random.Generator) -> int:
        """The device of a random neighbour of op ``o`` (a random device where it has none)."""
        g = self.graph
        nbrs = np.concatenate([g.predecessors(o), g.successors(o)])
        if len(nbrs) == 0:
            return int(rng.integers(self.num_devices))
        return int(cur[self.op_unit[nbrs[rng.integers(len(nbrs))]]])

    def run(self, start: np.ndarray, start_cost: float, steps: int, rng: np.random.Generator,
            deadline: float | None, progress) -> None:
        """Anneal from ``start`` for at most ``steps`` evaluations; sets ``best``, ``best_cost``, ``used``,
        ``stopped``."""
        self.best, self.best_cost = start.copy(), start_cost
        if steps <= 0:
            return
        if len(self.movable_ops) == 0:
            self.stopped = "nothing to move"
            return
        cur, cur_cost = start, start_cost
        calib = min(steps, max(20, min(200, steps // 50)))
        rounds = self.p.restarts + 1
        bounds = [calib + ((steps - calib) * k) // rounds for k in range(rounds + 1)]
        ups: list[float] = []
        t_init = 0.0
        for k in range(-1, rounds):  # round -1: the greedy calibration moves
            lo, hi = (0, calib) if k < 0 else (bounds[k], bounds[k + 1])
            if k == 0:
                t_init = (-float(np.mean(ups)) / math.log(self.p.accept0)) if ups else 0.01 * self.best_cost
            if k >= 0:
                cur, cur_cost = self.best.copy(), self.best_cost
            top = t_init * REHEAT ** max(k, 0)
            for i in range(lo, hi):
                if deadline is not None and time.perf_counter() > deadline:
                    self.stopped = "time limit"
                    return
                cand = self.propose(cur, rng)
                futile = 0
                while cand is None:
                    futile += 1
                    if futile >= MAX_FUTILE:
                        self.stopped = "nothing to move"
                        return
                    cand = self.propose(cur, rng)
                c = self.cost(cand)
                self.used += 1
                if progress is not None and self.used % 500 == 0:
                    progress(self.used, f"best {self.best_cost:.6g} s")
                delta = c - cur_cost
                if k < 0:
                    if delta > 0:
                        ups.append(delta)
                        continue
                else:
                    temp = top * self.p.cooling_to ** ((i - lo) / max(1, hi - lo - 1))
                    if delta > 0 and not (temp > 0 and rng.random() < math.exp(-delta / temp)):
                        continue
                cur, cur_cost = cand, c
                if c < self.best_cost:
                    self.best, self.best_cost = cand.copy(), c
