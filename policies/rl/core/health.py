"""Learning health: did a training learn, or was it a random search with extra steps?

Every training gets a verdict (``placelab train``, its stored run, the app's Train and Compare
pages) from comparisons computed from the learning curve (one row per episode,
:mod:`policies.rl.core.trainer`) and, for the random search, the training's tasks
(:func:`policies.rl.core.training_health.assess` gathers them; this module is the rule). "Learned"
requires the policy itself to change and improve; exploration alone (ε, a lucky perturbation)
does not count.

1. **Entropy**, first vs last **window** of episodes: the mean of the curve's ``entropy``
   column (nats per decision: the agents record an episode's mean per-decision entropy) and
   its ratio to the **uniform policy's entropy**. The window is :data:`WINDOW` = 100 episodes,
   or a fifth of the episodes when fewer than :data:`SHORT_TRAINING` = 500 were trained (at
   least 1). The uniform reference is the mean over a graph's op groups of ln(number of
   devices that can run the group), the entropy of the uniform policy over the *feasible*
   devices that the placers sample from (they mask the others); it is ln(number of devices)
   only when every group can run everywhere. When the tasks cannot be rebuilt (an old run's
   graph is gone) ln(number of devices) stands in, an upper bound. With several graphs each row
   is divided by its own graph's reference. DOPPLER's entropy adds its op-selection policy's
   (SEL), whose uniform value depends on the candidates at every step, so DOPPLER has no
   uniform reference. The placer is looked up by its card's name (the registry), the only
   place a placer's name is written. The entropy **settled** when the last window's is at most
   :data:`SETTLED` = 0.75 of the first window's *and*, where a uniform reference exists, at most
   0.75 of uniform.
2. **Policy change**: the curve's ``weight_change``, how far the weights moved over the training
   (the sum over the trainer's greedy checkpoints of ‖θ − θ_prev‖ / ‖θ_prev‖). At most
   :data:`FROZEN` = 1e-6: the policy is **frozen** (a learning rate of 1e-12, no gradient) and
   whatever its sampled runtime did is exploration's. A curve without the column (stored before
   it existed) is not judged frozen.
3. **Runtime at equal exploration.** The curve's ``greedy_objective`` (the objective of the
   policy's greedy placement — argmax at every decision, ε = 0 — of the row's graph, evaluated by
   the trainer at its greedy checkpoints, the first of them on the weights the training starts
   from): per graph, the median of the checkpoints in the last window (none there: the last
   checkpoint) against the first checkpoint — the policy the training started with —, with
   several graphs the median over the graphs with two checkpoints or more of last / first
   (``greedy_first_s`` and ``greedy_last_s`` are those of a single graph). A checkpoint places one
   graph, the last row's, so with several graphs they count only when they cover every graph whose
   sampled runtime is compared.
   Without greedy checkpoints (a curve stored before them), the **sampled runtime** (the makespan
   of each episode's placement, ``sampled_runtime``): the median of the first and of the last
   window and their ratio (several graphs: the median over the graphs of each graph's ratio, so
   graphs of different sizes do not mix; ``runtime_first_s`` and ``runtime_last_s`` are None
   then) — but only when the exploration is equal in both windows: each of the placer's
   **exploration parameters** (:attr:`~policies.rl.core.agent.Agent.exploration`: ε for GDP and
   DOPPLER; none for placers that sample their own policy) is a curve column, and its mean must
   be the same in both windows. An ε-greedy curve without the column is not compared. The
   runtime **improved** when the ratio compared is at most :data:`IMPROVED` = 0.95. The sampled
   ratio is always reported (``runtime_ratio``).
4. **Best found vs random search**: the best placement the training evaluated on each graph
   (fewest OOM, then the lowest objective, as the trainer keeps it) against the best of the same
   number N of uniformly random placements — N = the placements the training evaluated on that
   graph, each op group on a uniformly random *feasible* device (:meth:`PlacementTask.random_placement`)
   — evaluated by the same :class:`~policies.rl.core.task.PlacementTask` (same simulator, same
   memory penalty), seeded by the training's seed and the graph's index
   (:mod:`policies.rl.core.random_search`). The ratio is best found over random best, on the
   objective (the memory-penalised runtime the training minimises); with several graphs, the
   geometric mean of the per-graph ratios. A caller may cap N (``max_random``); the N used is
   recorded. A training rewarded by measured runtimes gets no random comparison (the simulator
   would not compare with its measurements).
5. **The best is the policy's own**: each graph's best records where it came from (``policy``: a
   sample of the policy or its argmax; ``greedy``: the greedy placement an ε-greedy episode also
   evaluated; ``epsilon``: an ε-greedy placement that a uniform choice changed). The policy's own
   best is the best found when it is the policy's (a placer without exploration parameters:
   always), and any greedy checkpoint's objective; its ratio to random search's best
   (``policy_ratio``) must be at most :data:`BEATS_RANDOM` = 0.99. Without a random comparison, no
   graph's best may be exploration's. An ε-greedy placer's record stored before the sources has no
   attribution: it is not held against it.

The verdict, the first that applies (the thresholds are constants of :mod:`policies.rl.core.health_record`,
importable from here):

* ``nothing_to_choose`` — every op group of every graph has one feasible device (a one-device
  cluster, or every op pinned): every placement is the same;
* ``too_short`` — fewer than :data:`MIN_EPISODES` = 10 episodes;
* ``frozen`` — the policy did not change (2.);
* ``never_left_uniform`` — the last window's entropy is within :data:`UNIFORM_TOLERANCE` = 2 %
  of the uniform entropy (ratio ≥ 0.98): "the policy never left uniform: its sampled
  placements are a random search" (:data:`NEVER_LEFT_UNIFORM`);
* ``no_better_than_random`` — the best found is not at least 1 % better than random search's
  best (ratio > :data:`BEATS_RANDOM` = 0.99);
* ``exploration_only`` — only exploration improved: the best is not the policy's own (5.), or the
  sampled runtime improved (ratio ≤ 0.95) while the exploration parameters changed between the
  windows and the runtime at equal exploration did not improve (or was not compared);
* ``learned`` — the entropy settled **and** the runtime at equal exploration improved (1., 3.);
* ``settled_without_improving`` — the entropy settled, the runtime did not improve (entropy only);
* ``still_exploring`` — the runtime improved, the entropy did not settle;
* ``no_progress`` — neither.

A verdict stored under an earlier rule (``version`` 1) is judged again by this one from the numbers
it holds (:func:`rejudge`; its curve had no greedy checkpoints, exploration columns or weight
change), keeping the old verdict in ``previous_verdict``.

The pieces: this module computes the numbers from the curve and applies the verdicts' order (and is where
every name below is imported from); :mod:`~policies.rl.core.health_record` holds the numbers, the thresholds
and the judgements read off them (settled, improved, frozen, the policy's own best);
:mod:`~policies.rl.core.health_words` says a verdict in words; :mod:`~policies.rl.core.training_health`
gathers a training's inputs, :mod:`~policies.rl.core.random_search` the random-search reference, and
:mod:`~policies.rl.core.stored_health` a stored run's verdict. No torch here: the app imports this module.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import numpy as np

from policies.rl.core import health_words
from policies.rl.core.health_record import (
    BEATS_RANDOM,
    FROZEN,
    IMPROVED,
    MIN_EPISODES,
    OWN_SOURCES,
    SETTLED,
    SHORT_TRAINING,
    UNIFORM_TOLERANCE,
    VERSION,
    WINDOW,
    GraphComparison,
    HealthNumbers,
    finite,
    ratio_of,
)
from policies.rl.core.health_words import NEVER_LEFT_UNIFORM, VERDICTS, symbol
from policies.rl.core.random_search import random_search, random_search_seed

__all__ = ["BEATS_RANDOM", "FROZEN", "IMPROVED", "MIN_EPISODES", "NEVER_LEFT_UNIFORM", "OWN_SOURCES", "SETTLED",
           "SHORT_TRAINING", "UNIFORM_TOLERANCE", "VERDICTS", "VERSION", "WINDOW", "GraphComparison",
           "LearningHealth", "cli_lines", "column", "learning_health", "random_search", "random_search_seed",
           "rejudge", "window_size"]


@dataclass(frozen=True)
class LearningHealth(HealthNumbers):
    """The learning-health verdict of one training, its numbers and judgements (:class:`HealthNumbers`), its
    words (:mod:`~policies.rl.core.health_words`) and the record a run stores."""

    @property
    def label(self) -> str:
        return health_words.label(self)

    @property
    def message(self) -> str:
        """The verdict as one sentence."""
        return health_words.message(self)

    @property
    def detail(self) -> str:
        """The message without a leading "label:" (for a line that shows the label already)."""
        return health_words.detail(self)

    @property
    def summary(self) -> str:
        """The numbers in one line."""
        return health_words.summary(self)

    def to_dict(self) -> dict[str, Any]:
        """What a run stores (``metrics.learning_health``) and ``train --json`` prints."""
        d = asdict(self)
        d["random_search"] = [{**asdict(c), "ratio": finite(c.ratio)} for c in self.random_search]
        return {"version": VERSION, **d, "label": self.label, "message": self.message, "summary": self.summary,
                "never_left_uniform": self.never_left_uniform, "random_ratio": self.random_ratio,
                "policy_ratio": self.policy_ratio, "random_placements": self.random_placements,
                "thresholds": {"window": WINDOW, "short_training": SHORT_TRAINING, "min_episodes": MIN_EPISODES,
                               "uniform_tolerance": UNIFORM_TOLERANCE, "settled": SETTLED, "improved": IMPROVED,
                               "beats_random": BEATS_RANDOM, "frozen": FROZEN}}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> LearningHealth:
        """The record :meth:`to_dict` wrote (derived keys are recomputed); a record of an earlier version
        reads with the fields it has (:func:`rejudge` applies this rule to it)."""
        names = {f.name for f in fields(cls)}
        cmp_names = {f.name for f in fields(GraphComparison)}
        kw = {k: v for k, v in doc.items() if k in names}
        kw["random_search"] = [GraphComparison(**{k: v for k, v in c.items() if k in cmp_names})
                               for c in doc.get("random_search") or []]
        if "graphs" not in doc:  # stored before the field: one comparison per graph trained on
            kw["graphs"] = max(len(kw["random_search"]), 1)
        if kw.get("graphs", 1) > 1:  # runs stored before kept medians over all graphs' rows: not comparable
            kw["runtime_first_s"] = kw["runtime_last_s"] = None
        return cls(**kw)


def window_size(episodes: int) -> int:
    """Episodes per window: :data:`WINDOW`, or a fifth of ``episodes`` below :data:`SHORT_TRAINING` (≥ 1)."""
    return WINDOW if episodes >= SHORT_TRAINING else max(1, episodes // 5)


def column(curve: Mapping[str, Sequence], name: str, n: int) -> np.ndarray:
    """Column ``name`` of ``curve`` as ``n`` floats (NaN where missing); all NaN when the column is absent or
    not ``n`` long."""
    values = curve.get(name)
    if values is None or len(values) != n:
        return np.full(n, np.nan)
    return np.array([np.nan if v is None or isinstance(v, str) else float(v) for v in values])


def _nanmean(x: np.ndarray) -> float | None:
    x = x[np.isfinite(x)]
    return float(x.mean()) if len(x) else None


def _nanmedian(x: np.ndarray) -> float | None:
    x = x[np.isfinite(x)]
    return float(np.median(x)) if len(x) else None


def _per_graph_ratio(values: np.ndarray, graphs: list[str], w: int, *,
                     sparse: bool) -> tuple[float | None, list[tuple[str, float, float]]]:
    """Each graph's (first-window median, last-window median) of ``values`` (finite ones only), for graphs with
    values in both windows — or, ``sparse`` (greedy checkpoints), for graphs with two values or more, its first
    value and the median of the last window's (none there: its last value) —; and the median of last / first."""
    n = len(graphs)
    pairs = []
    for g in dict.fromkeys(graphs):
        idx = [i for i in range(n) if graphs[i] == g and math.isfinite(values[i])]
        a = [values[i] for i in idx if i < w]
        b = [values[i] for i in idx if i >= n - w]
        if sparse and len(idx) >= 2:
            a, b = [values[idx[0]]], b or [values[idx[-1]]]
        if a and b and (fa := float(np.median(a))) > 0:
            pairs.append((g, fa, float(np.median(b))))
    return (float(np.median([b / a for _, a, b in pairs])) if pairs else None), pairs


def learning_health(curve: Mapping[str, Sequence], *, uniform: float | Mapping[str, float] | None = None,
                    uniform_basis: str = "", random_search: Sequence[GraphComparison] = (),
                    random_missing: str | None = None, exploration: Sequence[str] = (),
                    nothing_to_choose: bool = False,
                    best_sources: Mapping[str, str | None] | None = None) -> LearningHealth | None:
    """The verdict of a learning curve (columns as the trainer writes them); None for an empty curve.

    ``uniform``: the uniform policy's entropy per decision, one value or one per graph key
    (:func:`entropy_reference`); None: unknown. ``random_search``: the per-graph comparisons
    (:func:`assess`); when empty, ``random_missing`` says why. ``exploration``: the placer's
    exploration parameters (:func:`placer_exploration`); ``nothing_to_choose``: every op group has one
    feasible device; ``best_sources``: graph → where its best came from (module docstring, 5.).
    """
    graphs = [str(g) for g in curve.get("graph") or curve.get("episode") or []]
    n = len(graphs)
    if n == 0:
        return None
    w = window_size(n)
    first, last = slice(0, w), slice(n - w, n)
    entropy = column(curve, "entropy", n)
    runtime = column(curve, "sampled_runtime", n)
    if isinstance(uniform, Mapping):
        ref = np.array([float(uniform.get(g, np.nan)) for g in graphs])
    else:
        ref = np.full(n, np.nan if uniform is None else float(uniform))
    ref = np.where(ref > 0, ref, np.nan)
    ratio = entropy / ref
    h_first, h_last = _nanmean(entropy[first]), _nanmean(entropy[last])
    r_first, r_last = _nanmean(ratio[first]), _nanmean(ratio[last])
    several = len(set(graphs)) > 1
    rt_pairs: list[tuple[str, float, float]] = []
    if several:  # a median over all graphs' rows would mix graphs of different sizes
        rt_ratio, rt_pairs = _per_graph_ratio(runtime, graphs, w, sparse=False)
        rt_first = rt_last = None
    else:
        rt_first, rt_last = _nanmedian(runtime[first]), _nanmedian(runtime[last])
        rt_ratio = finite(ratio_of(rt_last, rt_first))
    greedy = column(curve, "greedy_objective", n)
    g_ratio, pairs = _per_graph_ratio(greedy, graphs, w, sparse=True)
    g_first, g_last = (pairs[0][1], pairs[0][2]) if len(pairs) == 1 and not several else (None, None)
    no_greedy = "no greedy checkpoints"
    uncovered = {g for g, _, _ in rt_pairs} - {g for g, _, _ in pairs}
    if g_ratio is not None and uncovered:  # several graphs: the checkpoints must cover the graphs compared
        no_greedy = f"greedy checkpoints on {len(pairs)} of {len(pairs) + len(uncovered)} graphs"
        g_ratio = None
    changes = column(curve, "weight_change", n)
    changes = changes[np.isfinite(changes)]
    explored = {k: column(curve, k, n) for k in exploration}
    e_first = {k: v for k, x in explored.items() if (v := _nanmean(x[first])) is not None}
    e_last = {k: v for k, x in explored.items() if (v := _nanmean(x[last])) is not None}
    compared_on, not_compared = _equal_exploration(g_ratio, exploration, e_first, e_last, no_greedy)
    uniform_mean = _nanmean(ref)
    basis = uniform_basis if uniform_mean is not None else (uniform_basis or "no uniform reference")
    missing = None if random_search else (random_missing or "not compared")
    health = LearningHealth(n, w, h_first, h_last, uniform_mean, basis, r_first, r_last, rt_first, rt_last,
                            rt_ratio, list(random_search), missing, graphs=len(set(graphs)),
                            nothing_to_choose=nothing_to_choose, exploration=list(exploration),
                            exploration_first=e_first, exploration_last=e_last, greedy_first_s=g_first,
                            greedy_last_s=g_last, greedy_ratio=g_ratio,
                            greedy_checkpoints=int(np.isfinite(greedy).sum()),
                            weight_change=float(changes[-1]) if len(changes) else None, compared_on=compared_on,
                            not_compared=not_compared, best_sources=dict(best_sources or {}))
    return replace(health, verdict=_verdict(health))


def _equal_exploration(greedy_ratio: float | None, exploration: Sequence[str], first: Mapping[str, float],
                       last: Mapping[str, float],
                       no_greedy: str = "no greedy checkpoints") -> tuple[str | None, str | None]:
    """What the runtime is compared on at equal exploration (module docstring, 3.), or None and why not
    (``no_greedy``: why the greedy checkpoints are not compared)."""
    if greedy_ratio is not None:
        return "greedy", None
    unrecorded = [symbol(k) for k in exploration if k not in first or k not in last]
    if unrecorded:
        return None, f"{', '.join(unrecorded)} not recorded and {no_greedy}"
    differ = [k for k in exploration if not math.isclose(first[k], last[k], rel_tol=1e-9, abs_tol=1e-12)]
    if differ:
        return None, ", ".join(f"{symbol(k)} {first[k]:.3g} in the first window, {last[k]:.3g} in the last"
                               for k in differ) + f", and {no_greedy}"
    return "sampled", None


def _verdict(h: HealthNumbers) -> str:
    """The first verdict that applies (module docstring, the verdicts)."""
    if h.nothing_to_choose:
        return "nothing_to_choose"
    if h.episodes < MIN_EPISODES:
        return "too_short"
    if h.frozen:
        return "frozen"
    if h.entropy_last_ratio is not None and h.entropy_last_ratio >= 1.0 - UNIFORM_TOLERANCE:
        return "never_left_uniform"
    r = h.random_ratio
    if r is not None and r > BEATS_RANDOM:
        return "no_better_than_random"
    if h.attributable is False or h.exploration_improved:
        return "exploration_only"
    if h.settled and h.improved:
        return "learned"
    if h.settled:
        return "settled_without_improving"
    if h.improved:
        return "still_exploring"
    return "no_progress"


def rejudge(health: LearningHealth, *, exploration: Sequence[str] = (), nothing: bool = False) -> LearningHealth:
    """A record stored under rule version 1 judged by this rule, from the numbers it holds: its curve had no
    greedy checkpoints, exploration columns or weight change, so its sampled runtime stands for the runtime at
    equal exploration when the placer has no exploration parameters, and nothing does when it has."""
    compared_on, not_compared = _equal_exploration(None, exploration, {}, {})
    again = replace(health, exploration=list(exploration), nothing_to_choose=nothing, compared_on=compared_on,
                    not_compared=not_compared, previous_verdict=health.verdict)
    return replace(again, verdict=_verdict(again))


def cli_lines(health: LearningHealth | Mapping[str, Any]) -> list[str]:
    """The CLI's lines: ``learning health: <verdict>; <numbers>``, and the never-left-uniform line when it applies."""
    h = health if isinstance(health, LearningHealth) else LearningHealth.from_dict(health)
    lines = [f"learning health: {h.label}; {h.summary}"]
    if h.never_left_uniform:
        lines.append(NEVER_LEFT_UNIFORM)
    return lines
