"""The numbers a learning-health verdict rests on, the rule's thresholds, and the judgements the rule reads off
the numbers (settled, improved, frozen, the policy's own best). :mod:`policies.rl.core.health` states the rule
and computes the numbers from a learning curve. No torch here: the app imports this module."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["BEATS_RANDOM", "FROZEN", "IMPROVED", "MIN_EPISODES", "OWN_SOURCES", "SETTLED", "SHORT_TRAINING",
           "UNIFORM_TOLERANCE", "VERSION", "WINDOW", "GraphComparison", "HealthNumbers", "finite", "geomean",
           "ratio_of"]

WINDOW = 100  #: episodes per window
SHORT_TRAINING = 500  #: below this many episodes, a window is a fifth of them
MIN_EPISODES = 10  #: fewer episodes: too short to judge
UNIFORM_TOLERANCE = 0.02  #: last-window entropy within this share of uniform: never left uniform
SETTLED = 0.75  #: entropy settled: last window at most this share of the first window's and of uniform
IMPROVED = 0.95  #: runtime improved: last window's median at most this share of the first's
BEATS_RANDOM = 0.99  #: better than random search: best found at most this share of the random best
FROZEN = 1e-6  #: the policy did not change: its weights moved at most this share of their norm in all
VERSION = 2  #: the rule's version (1: entropy against uniform only, sampled runtimes at any exploration)

#: best sources that are the policy's own placements (:mod:`policies.rl.core.health`, 5.)
OWN_SOURCES = ("policy", "greedy")


def ratio_of(a: float | None, b: float | None) -> float:
    """``a / b``; NaN when either is missing or not finite, or ``b`` is not positive."""
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)) or b <= 0:
        return float("nan")
    return float(a) / float(b)


def geomean(ratios: Sequence[float]) -> float | None:
    """The geometric mean of the finite positive ``ratios``; None when there is none."""
    ok = [r for r in ratios if math.isfinite(r) and r > 0]
    return float(math.exp(np.mean(np.log(ok)))) if ok else None


def finite(x: float | None) -> float | None:
    """``x`` as a float, or None when it is missing or not finite."""
    return float(x) if x is not None and math.isfinite(x) else None


@dataclass(frozen=True)
class GraphComparison:
    """One graph's best found vs the best of ``placements`` uniformly random placements."""

    graph: str
    placements_trained: int  # placements the training evaluated on this graph
    placements: int  # random placements evaluated (= placements_trained unless capped)
    seed: list[int]
    found_objective: float
    found_makespan_s: float
    found_oom: bool | None
    random_objective: float
    random_makespan_s: float
    random_oom: bool
    policy_objective: float | None = None  # the policy's own best (health rule, 5.); None: none or unknown

    @property
    def ratio(self) -> float:
        return ratio_of(self.found_objective, self.random_objective)


@dataclass(frozen=True)
class HealthNumbers:
    """One training's learning-health numbers and verdict, and the judgements the rule reads off them
    (:class:`policies.rl.core.health.LearningHealth` adds their words and stored form)."""

    episodes: int
    window: int
    entropy_first: float | None
    entropy_last: float | None
    uniform_entropy: float | None
    uniform_basis: str
    entropy_first_ratio: float | None  # of uniform
    entropy_last_ratio: float | None
    runtime_first_s: float | None  # sampled runtime
    runtime_last_s: float | None
    runtime_ratio: float | None
    random_search: list[GraphComparison] = field(default_factory=list)
    random_missing: str | None = None  # why there is no random comparison
    verdict: str = "too_short"
    graphs: int = 1  # graphs in the curve; with several, the runtime is compared per graph (ratio only)
    nothing_to_choose: bool = False
    exploration: list[str] = field(default_factory=list)  # the placer's exploration parameters
    exploration_first: dict[str, float] = field(default_factory=dict)  # their window means (recorded ones)
    exploration_last: dict[str, float] = field(default_factory=dict)
    greedy_first_s: float | None = None  # greedy placement's objective: first checkpoint / last window (one graph)
    greedy_last_s: float | None = None
    greedy_ratio: float | None = None
    greedy_checkpoints: int = 0
    weight_change: float | None = None  # None: not recorded
    compared_on: str | None = None  # "greedy", "sampled", or None: no runtime compared at equal exploration
    not_compared: str | None = None  # why not
    best_sources: dict[str, str | None] = field(default_factory=dict)  # graph → where its best came from
    previous_verdict: str | None = None  # the verdict of the earlier rule this record was stored under

    @property
    def random_ratio(self) -> float | None:
        """Best found over the random best: the geometric mean over graphs of their objective ratios."""
        return geomean([c.ratio for c in self.random_search])

    @property
    def policy_ratio(self) -> float | None:
        """The policy's own best over the random best (geometric mean over graphs); None when a graph has no
        placement of the policy's own, or without a random comparison."""
        ratios = []
        for c in self.random_search:
            own = c.policy_objective
            if own is None and self.own_source(self.best_sources.get(c.graph)):
                own = c.found_objective
            ratios.append(ratio_of(own, c.random_objective))
        return geomean(ratios) if ratios and all(math.isfinite(r) and r > 0 for r in ratios) else None

    def own_source(self, source: str | None) -> bool:
        """Whether a best from ``source`` is the policy's own (an unrecorded source is, without exploration)."""
        return source in OWN_SOURCES or (source is None and not self.exploration)

    @property
    def attributable(self) -> bool | None:
        """Whether the best is the policy's own (:mod:`policies.rl.core.health`, 5.); None: unknown (a record of
        an ε-greedy placer stored before the sources were)."""
        unknown = bool(self.exploration) and any(
            c.policy_objective is None and self.best_sources.get(c.graph) is None for c in self.random_search)
        if self.random_search:
            p = self.policy_ratio
            return None if unknown else p is not None and p <= BEATS_RANDOM
        if any(s is not None and s not in OWN_SOURCES for s in self.best_sources.values()):
            return False
        return None if self.exploration and None in self.best_sources.values() else True

    @property
    def random_placements(self) -> int:
        return sum(c.placements for c in self.random_search)

    @property
    def frozen(self) -> bool:
        return self.weight_change is not None and self.weight_change <= FROZEN

    @property
    def settled(self) -> bool:
        """The entropy fell to at most :data:`SETTLED` of its first window's and, where defined, of uniform."""
        fell = (self.entropy_first is not None and self.entropy_last is not None and self.entropy_first > 0
                and self.entropy_last <= SETTLED * self.entropy_first)
        return fell and (self.entropy_last_ratio is None or self.entropy_last_ratio <= SETTLED)

    @property
    def compared_ratio(self) -> float | None:
        """Last over first window of the runtime compared at equal exploration (None: not compared)."""
        return {"greedy": self.greedy_ratio, "sampled": self.runtime_ratio}.get(self.compared_on or "")

    @property
    def improved(self) -> bool:
        r = self.compared_ratio
        return r is not None and r <= IMPROVED

    @property
    def exploration_changed(self) -> bool:
        """Whether an exploration parameter's mean differs between the windows."""
        return any(not math.isclose(v, self.exploration_last[k], rel_tol=1e-9, abs_tol=1e-12)
                   for k, v in self.exploration_first.items() if k in self.exploration_last)

    @property
    def exploration_improved(self) -> bool:
        """The sampled runtime improved only with a change of exploration (:mod:`policies.rl.core.health`,
        the verdicts)."""
        return (not self.improved and self.runtime_ratio is not None and self.runtime_ratio <= IMPROVED
                and self.exploration_changed)

    @property
    def never_left_uniform(self) -> bool:
        return self.verdict == "never_left_uniform"
