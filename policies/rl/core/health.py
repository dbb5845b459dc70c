"""Learning health: did a training learn, or was it a random search with extra steps?

Every training gets a verdict (``placelab train``, its stored run, the app's Train and Compare
pages) from three comparisons, all computed from the learning curve (one row per episode,
:mod:`policies.rl.core.trainer`) and, for the last one, the training's tasks:

1. **Entropy**, first vs last **window** of episodes: the mean of the curve's ``entropy``
   column (nats per decision: the agents record an episode's mean per-decision entropy) and
   its ratio to the **uniform policy's entropy**. The window is :data:`WINDOW` = 100 episodes,
   or a fifth of the episodes when fewer than :data:`SHORT_TRAINING` = 500 were trained (at
   least 1). The uniform reference is the mean over a graph's op groups of ln(number of
   devices that can run the group), the entropy of the uniform policy over the *feasible*
   devices that Placeto and the RNN placer sample from (both mask the others); it is ln(number
   of devices) only when every group can run everywhere. When the tasks cannot be rebuilt (an
   old run's graph is gone) ln(number of devices) stands in, an upper bound. With several
   graphs each row is divided by its own graph's reference. DOPPLER's entropy adds its
   op-selection policy's (SEL), whose uniform value depends on the candidates at every step,
   so DOPPLER has no uniform reference: its entropy is compared with its first window only.
2. **Sampled runtime** (the makespan of each episode's placement, ``sampled_runtime``): the
   median of the first and of the last window and their ratio. With several graphs the ratio is
   the median over the graphs of each graph's last-window median over its first-window median
   (graphs with rows in both windows), so graphs of different sizes do not mix; a median of one
   window over all its graphs would mix them, so there are no first- and last-window runtimes
   then (``runtime_first_s`` and ``runtime_last_s`` are None), only the ratio.
3. **Best found vs random search**: the best placement the training evaluated on each graph
   (fewest OOM, then the lowest objective, as the trainer keeps it) against the best of the same
   number N of uniformly random placements — N = the placements the training evaluated on that
   graph, each op group on a uniformly random *feasible* device (:meth:`PlacementTask.random_placement`)
   — evaluated by the same :class:`~policies.rl.core.task.PlacementTask` (same simulator, same
   memory penalty), seeded by the training's seed and the graph's index. The ratio is best
   found over random best, on the objective (the memory-penalised runtime the training
   minimises); with several graphs, the geometric mean of the per-graph ratios. A caller may
   cap N (``max_random``); the N used is recorded. A training rewarded by measured runtimes
   gets no random comparison (the simulator would not compare with its measurements).

The verdict, the first that applies (thresholds are module constants):

* ``too_short`` — fewer than :data:`MIN_EPISODES` = 10 episodes;
* ``never_left_uniform`` — the last window's entropy is within :data:`UNIFORM_TOLERANCE` = 2 %
  of the uniform entropy (ratio ≥ 0.98): "the policy never left uniform: its sampled
  placements are a random search" (:data:`NEVER_LEFT_UNIFORM`);
* ``no_better_than_random`` — the best found is not at least 1 % better than random search's
  best (ratio > :data:`BEATS_RANDOM` = 0.99);
* ``learned`` — the entropy fell (last window ≤ :data:`SETTLED` = 0.75 of uniform; without a
  uniform reference, ≤ 0.75 of the first window) **and** the sampled runtime improved (last
  window's median ≤ :data:`IMPROVED` = 0.95 of the first's);
* ``settled_without_improving`` — the entropy fell, the sampled runtime did not improve;
* ``still_exploring`` — the sampled runtime improved, the entropy has not fallen that far;
* ``no_progress`` — neither.

No torch here: the app imports this module.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

import numpy as np

from policies.rl.core.task import Evaluation, PlacementTask

__all__ = ["BEATS_RANDOM", "IMPROVED", "MIN_EPISODES", "NEVER_LEFT_UNIFORM", "SETTLED", "SHORT_TRAINING",
           "UNIFORM_TOLERANCE", "VERDICTS", "WINDOW", "GraphComparison", "LearningHealth", "assess", "cli_lines",
           "entropy_reference", "learning_health", "random_search", "random_search_seed",
           "uniform_entropy", "window_size"]

WINDOW = 100  #: episodes per window
SHORT_TRAINING = 500  #: below this many episodes, a window is a fifth of them
MIN_EPISODES = 10  #: fewer episodes: too short to judge
UNIFORM_TOLERANCE = 0.02  #: last-window entropy within this share of uniform: never left uniform
SETTLED = 0.75  #: entropy fell: last window at most this share of uniform (or of the first window)
IMPROVED = 0.95  #: runtime improved: last window's median at most this share of the first's
BEATS_RANDOM = 0.99  #: better than random search: best found at most this share of the random best
RANDOM_CHUNK = 1024  #: random placements drawn at once (one generator call)
VERSION = 1

NEVER_LEFT_UNIFORM = "the policy never left uniform: its sampled placements are a random search"

#: verdict → short label (the CLI line, the app's tables)
VERDICTS = {
    "too_short": "too short to judge",
    "never_left_uniform": "never left uniform",
    "no_better_than_random": "no better than random search",
    "learned": "learned",
    "settled_without_improving": "settled without improving",
    "still_exploring": "still exploring",
    "no_progress": "no sign of learning",
}

def window_size(episodes: int) -> int:
    """Episodes per window: :data:`WINDOW`, or a fifth of ``episodes`` below :data:`SHORT_TRAINING` (≥ 1)."""
    return WINDOW if episodes >= SHORT_TRAINING else max(1, episodes // 5)


def uniform_entropy(task: PlacementTask) -> float:
    """Per-decision entropy of the uniform policy over feasible devices: mean over groups of ln(#feasible)."""
    return float(np.mean(np.log(np.maximum(task.feasible.sum(axis=1), 1))))


def entropy_reference(placer: str | None, num_devices: int | None,
                      tasks: Mapping[str, PlacementTask] | None = None) -> tuple[float | dict[str, float] | None, str]:
    """The uniform entropy the curve's entropy is compared with, and what it is (see the module docstring)."""
    from policies.rl.core.registry import learned_placers  # lazy: imports every placer's package

    info = learned_placers().get(placer) if placer else None
    why = f"placer {placer!r} records no per-device-decision entropy" if info is None else \
        info.agent.no_uniform_entropy
    if why:
        return None, f"no uniform reference: {why}"
    if tasks:
        return {str(k): uniform_entropy(t) for k, t in tasks.items()}, "mean over op groups of ln(feasible devices)"
    if num_devices is None:
        return None, "no uniform reference: the number of devices is unknown"
    if num_devices > 1:
        return math.log(num_devices), "ln(devices) (the tasks were not rebuilt: an upper bound)"
    return None, "no uniform reference: one device"


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

    @property
    def ratio(self) -> float:
        return _ratio(self.found_objective, self.random_objective)


@dataclass(frozen=True)
class LearningHealth:
    """The learning-health verdict of one training and its numbers (see the module docstring)."""

    episodes: int
    window: int
    entropy_first: float | None
    entropy_last: float | None
    uniform_entropy: float | None
    uniform_basis: str
    entropy_first_ratio: float | None  # of uniform
    entropy_last_ratio: float | None
    runtime_first_s: float | None
    runtime_last_s: float | None
    runtime_ratio: float | None
    random_search: list[GraphComparison] = field(default_factory=list)
    random_missing: str | None = None  # why there is no random comparison
    verdict: str = "too_short"
    graphs: int = 1  # graphs in the curve; with several, the runtime is compared per graph (ratio only)

    @property
    def random_ratio(self) -> float | None:
        """Best found over the random best: the geometric mean over graphs of their objective ratios."""
        ratios = [c.ratio for c in self.random_search if math.isfinite(c.ratio) and c.ratio > 0]
        return float(math.exp(np.mean(np.log(ratios)))) if ratios else None

    @property
    def random_placements(self) -> int:
        return sum(c.placements for c in self.random_search)

    @property
    def never_left_uniform(self) -> bool:
        return self.verdict == "never_left_uniform"

    @property
    def label(self) -> str:
        return VERDICTS.get(self.verdict, self.verdict)

    @property
    def message(self) -> str:
        """The verdict as one sentence."""
        r = self.random_ratio
        if self.verdict == "too_short":
            return f"too short to judge: {self.episodes} episodes (at least {MIN_EPISODES} needed)"
        if self.verdict == "never_left_uniform":
            return NEVER_LEFT_UNIFORM
        if self.verdict == "no_better_than_random":
            return (f"no better than random search: the best placement found is {r:.3f}× the best of "
                    f"{self.random_placements:,} uniformly random placements")
        if self.verdict == "learned":
            beat = f", and its best is {r:.3f}× random search's" if r is not None else ""
            return f"learned: the policy settled and its sampled runtime improved{beat}"
        if self.verdict == "settled_without_improving":
            return "the policy settled (its entropy fell) but its sampled runtime did not improve"
        if self.verdict == "still_exploring":
            return "the sampled runtime improved, but the policy is still exploring (its entropy stays high)"
        return "no sign of learning: the entropy barely fell and the sampled runtime did not improve"

    @property
    def detail(self) -> str:
        """The message after its verdict: the message without a leading "label:" (for a line that shows the
        label already)."""
        head = f"{self.label}: "
        return self.message[len(head):] if self.message.startswith(head) else self.message

    @property
    def summary(self) -> str:
        """The numbers in one line."""
        w = f"first vs last {self.window} episode{'s' if self.window != 1 else ''}"
        if self.entropy_last_ratio is not None and self.entropy_first_ratio is not None:
            ent = f"entropy {_pct(self.entropy_first_ratio)} → {_pct(self.entropy_last_ratio)} of uniform"
        elif self.entropy_first is not None and self.entropy_last is not None:
            ent = f"entropy {self.entropy_first:.3g} → {self.entropy_last:.3g} nats (no uniform reference)"
        else:
            ent = "entropy not recorded"
        if self.runtime_first_s is not None and self.runtime_last_s is not None:
            rt = f"sampled runtime {_ms(self.runtime_first_s)} → {_ms(self.runtime_last_s)}"
            if self.runtime_ratio is not None:
                rt += f" (×{self.runtime_ratio:.3f})"
        elif self.graphs > 1 and self.runtime_ratio is not None:
            rt = (f"sampled runtime ×{self.runtime_ratio:.3f} "
                  f"(median over {self.graphs} graphs of each one's last / first)")
        else:
            rt = "sampled runtime not recorded"
        r = self.random_ratio
        if r is None:
            rnd = f"random search: {self.random_missing or 'not compared'}"
        elif len(self.random_search) == 1:
            c = self.random_search[0]
            rnd = (f"best found {_ms(c.found_makespan_s)} vs {_ms(c.random_makespan_s)} for {c.placements:,} random "
                   f"placements (×{r:.3f})")
        else:
            rnd = (f"best found ×{r:.3f} of random search's (geometric mean over {len(self.random_search)} graphs, "
                   f"{self.random_placements:,} random placements)")
        trained = sum(c.placements_trained for c in self.random_search)
        if r is not None and self.random_placements < trained:
            rnd += f" (capped: the training evaluated {trained:,})"
        return f"{w}: {ent}, {rt}; {rnd}"

    def to_dict(self) -> dict[str, Any]:
        """What a run stores (``metrics.learning_health``) and ``train --json`` prints."""
        d = asdict(self)
        d["random_search"] = [{**asdict(c), "ratio": _finite(c.ratio)} for c in self.random_search]
        return {"version": VERSION, **d, "label": self.label, "message": self.message, "summary": self.summary,
                "never_left_uniform": self.never_left_uniform, "random_ratio": self.random_ratio,
                "random_placements": self.random_placements,
                "thresholds": {"window": WINDOW, "short_training": SHORT_TRAINING, "min_episodes": MIN_EPISODES,
                               "uniform_tolerance": UNIFORM_TOLERANCE, "settled": SETTLED, "improved": IMPROVED,
                               "beats_random": BEATS_RANDOM}}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> LearningHealth:
        """The record :meth:`to_dict` wrote (derived keys are recomputed)."""
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


def _pct(x: float) -> str:
    """A share of uniform: one decimal near the never-left-uniform threshold, where it matters."""
    return f"{x:.1%}" if 0.9 <= x < 1.0 else f"{x:.0%}"


def _ms(s: float) -> str:
    return f"{s * 1e3:.4g} ms"


def _ratio(a: float | None, b: float | None) -> float:
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)) or b <= 0:
        return float("nan")
    return float(a) / float(b)


def _finite(x: float | None) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def _column(curve: Mapping[str, Sequence], name: str, n: int) -> np.ndarray:
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


def placements_per_graph(curve: Mapping[str, Sequence]) -> dict[str, int]:
    """Placements the training evaluated on each graph: the steps of the cumulative ``placements_evaluated``."""
    graphs = [str(g) for g in curve.get("graph") or []]
    pe = _column(curve, "placements_evaluated", len(graphs))
    out: dict[str, int] = {}
    before = 0.0
    for g, total in zip(graphs, pe.tolist(), strict=True):
        if math.isfinite(total):
            out[g] = out.get(g, 0) + max(round(total - before), 0)
            before = total
    return out


def learning_health(curve: Mapping[str, Sequence], *, uniform: float | Mapping[str, float] | None = None,
                    uniform_basis: str = "", random_search: Sequence[GraphComparison] = (),
                    random_missing: str | None = None) -> LearningHealth | None:
    """The verdict of a learning curve (columns as the trainer writes them); None for an empty curve.

    ``uniform``: the uniform policy's entropy per decision, one value or one per graph key
    (:func:`entropy_reference`); None: unknown. ``random_search``: the per-graph comparisons
    (:func:`random_search`); when empty, ``random_missing`` says why.
    """
    graphs = [str(g) for g in curve.get("graph") or curve.get("episode") or []]
    n = len(graphs)
    if n == 0:
        return None
    w = window_size(n)
    first, last = slice(0, w), slice(n - w, n)
    entropy = _column(curve, "entropy", n)
    runtime = _column(curve, "sampled_runtime", n)
    if isinstance(uniform, Mapping):
        ref = np.array([float(uniform.get(g, np.nan)) for g in graphs])
    else:
        ref = np.full(n, np.nan if uniform is None else float(uniform))
    ref = np.where(ref > 0, ref, np.nan)
    ratio = entropy / ref
    h_first, h_last = _nanmean(entropy[first]), _nanmean(entropy[last])
    r_first, r_last = _nanmean(ratio[first]), _nanmean(ratio[last])
    rt_first, rt_last = _nanmedian(runtime[first]), _nanmedian(runtime[last])
    several = len(set(graphs)) > 1
    if several:
        per_graph = []
        g_arr = np.array(graphs)
        for g in dict.fromkeys(graphs):
            a, b = _nanmedian(runtime[first][g_arr[first] == g]), _nanmedian(runtime[last][g_arr[last] == g])
            if a is not None and b is not None and a > 0:
                per_graph.append(b / a)
        rt_ratio = float(np.median(per_graph)) if per_graph else None
        rt_first = rt_last = None  # a median over all graphs' rows mixes graphs of different sizes
    else:
        rt_ratio = _finite(_ratio(rt_last, rt_first))
    uniform_mean = _nanmean(ref)
    basis = uniform_basis if uniform_mean is not None else (uniform_basis or "no uniform reference")
    missing = None if random_search else (random_missing or "not compared")
    health = LearningHealth(n, w, h_first, h_last, uniform_mean, basis, r_first, r_last, rt_first, rt_last,
                            rt_ratio, list(random_search), missing, graphs=len(set(graphs)))
    return replace(health, verdict=_verdict(health))


def _verdict(h: LearningHealth) -> str:
    if h.episodes < MIN_EPISODES:
        return "too_short"
    if h.entropy_last_ratio is not None and h.entropy_last_ratio >= 1.0 - UNIFORM_TOLERANCE:
        return "never_left_uniform"
    r = h.random_ratio
    if r is not None and r > BEATS_RANDOM:
        return "no_better_than_random"
    if h.entropy_last_ratio is not None:
        settled = h.entropy_last_ratio <= SETTLED
    else:
        settled = (h.entropy_first is not None and h.entropy_last is not None and h.entropy_first > 0
                   and h.entropy_last <= SETTLED * h.entropy_first)
    improved = h.runtime_ratio is not None and h.runtime_ratio <= IMPROVED
    if settled and improved:
        return "learned"
    if settled:
        return "settled_without_improving"
    if improved:
        return "still_exploring"
    return "no_progress"


# -- random search -----------------------------------------------------------------------------


def random_search_seed(seed: int, index: int) -> list[int]:
    """The seed of graph ``index``'s random search in a training seeded ``seed``."""
    return [int(seed) & 0xFFFF_FFFF_FFFF_FFFF, int(index)]


def random_search(task: PlacementTask, n: int, *, seed: int | Sequence[int] | np.random.Generator,
                  chunk: int = RANDOM_CHUNK) -> Evaluation | None:
    """The best (fewest OOM, then lowest objective) of ``n`` uniformly random feasible placements of ``task``.

    The placements are those of ``n`` calls of :meth:`PlacementTask.random_placement` with
    ``np.random.default_rng(seed)``, drawn ``chunk`` at a time in one generator call each, and
    evaluated by ``task.evaluate`` (its simulator and memory penalty); ``task.evaluations`` is
    left as it was. None when ``n`` is 0.
    """
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    best: Evaluation | None = None
    counted = task.evaluations
    try:
        done = 0
        while done < n:
            k = min(chunk, n - done)
            drawn = np.argmax(rng.random((k, *task.feasible.shape)) * task.feasible, axis=2).astype(np.int64)
            for devices in drawn:
                ev = task.evaluate(devices)
                if best is None or (ev.oom, ev.objective) < (best.oom, best.objective):
                    best = ev
            done += k
    finally:
        task.evaluations = counted
    return best


@dataclass(frozen=True)
class _Found:
    objective: float
    makespan: float
    oom: bool | None


def _found_from(best: Mapping[str, Any] | None, curve: Mapping[str, Sequence]) -> dict[str, _Found]:
    """Best found per graph: the trainer's ``Best`` objects or a run's ``best_by_graph``, else the curve's
    last ``best_runtime`` (objective taken as the makespan)."""
    out: dict[str, _Found] = {}
    for k, b in (best or {}).items():
        if isinstance(b, Mapping):
            out[str(k)] = _Found(float(b["objective"]), float(b["makespan_s"]), b.get("oom"))
        else:
            out[str(k)] = _Found(float(b.objective), float(b.makespan), bool(b.oom))
    given = set(out)
    graphs = [str(g) for g in curve.get("graph") or []]
    for g, v in zip(graphs, curve.get("best_runtime") or [None] * len(graphs), strict=False):
        if g not in given and isinstance(v, int | float) and math.isfinite(v):
            out[g] = _Found(float(v), float(v), None)  # the last row of the graph wins
    return out


def assess(curve: Mapping[str, Sequence], tasks: Mapping[str, PlacementTask] | None, *, placer: str | None,
           num_devices: int | None, seed: int = 0, best: Mapping[str, Any] | None = None,
           reward: str = "simulated", max_random: int | None = None, random_missing: str | None = None,
           progress: Callable[[str], None] | None = None) -> LearningHealth | None:
    """The learning health of a training: :func:`learning_health` with the uniform entropy of ``placer``'s
    decisions and, when ``tasks`` (key → task, in the training's order) are given, the random search of
    each graph (``max_random`` caps its placements per graph). ``best``: the best found per graph (the
    trainer's ``best``, or a stored run's ``metrics.best_by_graph``)."""
    uniform, basis = entropy_reference(placer, num_devices, tasks)
    comparisons: list[GraphComparison] = []
    if reward != "simulated":
        random_missing = "the training was rewarded by measured runtimes; random search on the simulator would " \
                         "not compare"
    elif tasks is None:
        random_missing = random_missing or "the training's graphs were not rebuilt"
    else:
        counts = placements_per_graph(curve)
        found = _found_from(best, curve)
        planned = sum(min(c, max_random) if max_random is not None else c for c in counts.values())
        if progress is not None and planned:
            progress(f"learning health: evaluating {planned:,} random placements")
        for i, (key, task) in enumerate(tasks.items()):
            key = str(key)
            trained = counts.get(key, 0)
            n = trained if max_random is None else min(trained, max(int(max_random), 0))
            if key not in found or n == 0:
                continue
            s = random_search_seed(seed, i)
            rb = random_search(task, n, seed=s)
            f = found[key]
            comparisons.append(GraphComparison(key, trained, n, s, f.objective, f.makespan, f.oom, rb.objective,
                                               rb.makespan, rb.oom))
        if not comparisons:
            random_missing = "the curve records no placements evaluated"
    return learning_health(curve, uniform=uniform, uniform_basis=basis, random_search=comparisons,
                           random_missing=random_missing)


def cli_lines(health: LearningHealth | Mapping[str, Any]) -> list[str]:
    """The CLI's lines: ``learning health: <verdict>; <numbers>``, and the never-left-uniform line when it applies."""
    h = health if isinstance(health, LearningHealth) else LearningHealth.from_dict(health)
    lines = [f"learning health: {h.label}; {h.summary}"]
    if h.never_left_uniform:
        lines.append(NEVER_LEFT_UNIFORM)
    return lines
