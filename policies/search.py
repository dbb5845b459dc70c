"""Local search over placements, scored by the simulator (simulated annealing / hill climbing).

``local-search`` starts from the best of {``single-device``, ``m-etf``, ``critical-path``
with ``start_runs`` runs} and then proposes, per step, one of

* a **move**: one unit (colocation group) to another device that can run it — with
  probability ½ the device of one of its ops' neighbours (a producer or consumer), which
  removes a transfer, otherwise a uniformly random device;
* a **swap**: two units on different devices exchange devices (both must be able to run
  there), which keeps the load balance.

Every candidate costs one :meth:`~engine.sim.simulator.Simulator.makespan_and_peak` call and is
scored by the memory-penalized runtime (Placeto A.7, see
:func:`policies.list_scheduling.memory_penalized`), so a placement that does not fit is
penalized rather than forbidden. Acceptance is Metropolis (Kirkpatrick et al. 1983) with a
temperature falling linearly from ``t0 · start cost`` to 0; ``t0 = 0`` is plain hill
climbing. The budget is a number of simulator evaluations (the start's evaluations
included), optionally cut short by ``time_limit_s``. The best placement seen is returned, so
the result is never worse than the start.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np

from engine.cluster import Cluster
from engine.graph.compgraph import CompGraph
from engine.placement import Placement
from engine.sim.simulator import Simulator
from policies.base import PlacementUnits, Progress, placer
from policies.list_scheduling import CriticalPath, MEtf, memory_penalized
from policies.trivial import SingleDevice

__all__ = ["LocalSearch"]


@placer("local-search", "simulated annealing over unit moves and swaps, scored by the simulator; "
          "starts from the best list schedule", family="search")
class LocalSearch:
    """Simulated annealing / hill climbing; ``budget`` = simulator evaluations (default ``evaluations``)."""


    def __init__(self, evaluations: int = 2000, time_limit_s: float | None = None, t0: float = 0.01,
                 swap_prob: float = 0.3, start_runs: int = 10) -> None:
        self.evaluations = evaluations
        self.time_limit_s = time_limit_s
        self.t0 = t0
        self.swap_prob = swap_prob
        self.start_runs = start_runs

    def starts(self, graph: CompGraph, cluster: Cluster, seed: int) -> list[Placement]:
        return [SingleDevice().place(graph, cluster), MEtf().place(graph, cluster),
                CriticalPath(runs=self.start_runs).place(graph, cluster, seed=seed)]

    def place(self, graph: CompGraph, cluster: Cluster, *, seed: int = 0, budget: int | None = None,
              progress: Progress | None = None, start: Placement | None = None) -> Placement:
        """``start`` (optional) replaces the default starting points."""
        total = int(budget if budget is not None else self.evaluations)
        deadline = None if self.time_limit_s is None else time.perf_counter() + self.time_limit_s
        units = PlacementUnits(graph, cluster)
        sim = Simulator(graph, cluster)
        cap = cluster.memory

        def cost(devices: np.ndarray) -> float:
            return memory_penalized(*sim.makespan_and_peak(devices), cap)

        starts = [start] if start is not None else self.starts(graph, cluster, seed)
        used = self.start_runs if start is None else 0
        scored = [(cost(p.devices), k, p) for k, p in enumerate(starts)]
        used += len(scored)
        cur_cost, _, best = min(scored, key=lambda t: (t[0], t[1]))
        unit_dev = np.zeros(units.num_units, dtype=np.int64)
        unit_dev[units.op_unit] = best.devices
        best_cost, best_units = cur_cost, unit_dev.copy()
        rng = np.random.default_rng(seed)
        movable = np.flatnonzero(units.feasible.sum(axis=1) > 1)
        steps = total - used
        if len(movable) == 0 or steps <= 0:
            return replace(best, predicted_makespan_s=None)
        op_unit = units.op_unit
        # ops of movable units, to draw a unit with probability proportional to its size
        movable_ops = np.flatnonzero(np.isin(op_unit, movable))
        g = graph
        temp0 = self.t0 * cur_cost
        evals = attempts = 0
        while evals < steps and attempts < 20 * steps:  # infeasible proposals cost no evaluation
            attempts += 1
            if deadline is not None and time.perf_counter() > deadline:
                break
            cand = unit_dev.copy()
            o = int(movable_ops[rng.integers(len(movable_ops))])
            u = int(op_unit[o])
            if rng.random() < self.swap_prob:
                v = int(movable[rng.integers(len(movable))])
                du, dv = cand[u], cand[v]
                if du == dv or not (units.feasible[u, dv] and units.feasible[v, du]):
                    continue
                cand[u], cand[v] = dv, du
            else:
                target = -1
                if rng.random() < 0.5:
                    nbrs = np.concatenate([g.successors(o), g.predecessors(o)])
                    if len(nbrs):
                        target = int(cand[op_unit[nbrs[rng.integers(len(nbrs))]]])
                if target < 0 or target == cand[u]:
                    choices = np.flatnonzero(units.feasible[u])
                    choices = choices[choices != cand[u]]
                    target = int(choices[rng.integers(len(choices))])
                if not units.feasible[u, target]:
                    continue
                cand[u] = target
            c = cost(cand[op_unit])
            evals += 1
            temp = temp0 * (1.0 - evals / steps)
            delta = c - cur_cost
            if delta <= 0 or (temp > 0 and rng.random() < math.exp(-delta / temp)):
                unit_dev, cur_cost = cand, c
                if c < best_cost:
                    best_cost, best_units = c, cand.copy()
            if progress is not None and evals % 100 == 0:
                progress(used + evals, total, f"best {best_cost:.6g} s")
        if best_cost < min(s[0] for s in scored):
            return units.to_placement(best_units)
        return replace(best, predicted_makespan_s=None)  # a start as it is: the search predicts nothing itself
