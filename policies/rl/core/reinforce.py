"""REINFORCE bookkeeping shared by the learned placers: returns, baselines, schedules, stopping, budgets.

Everything here is plain numpy so the arithmetic can be checked by hand (tests do).

* :func:`returns_to_go` — ``G_t = Σ_{t' ≥ t} r_t'`` (undiscounted, Placeto App. A.1 Eq. 1; a
  discount γ < 1 is available).
* :class:`StepBaseline` — Placeto App. A.7 "Baselines": the baseline for step t is the average
  of the cumulative rewards at step t over the past k episodes (k = 10), kept per graph.
* :class:`MovingAverageBaseline` — Mirhoseini §3.1: a moving average of the reward,
  initialised with the failing signal, kept per graph.
* :func:`linear` — the linear decay of the learning rate and of the entropy weight
  (Placeto App. A.7 "Optimization", "Entropy").
* :class:`StoppingRule` — Placeto App. A.7: stop when the reward has not changed by more than
  2 % over a window of 1000 episodes.
* :class:`Budget` — episodes, placements sampled (the papers' unit, ``docs/budgets.md``) and wall time.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Budget", "MovingAverageBaseline", "RunningMeanBaseline", "StepBaseline", "StoppingRule", "linear",
           "returns_to_go"]


def returns_to_go(rewards: np.ndarray, discount: float = 1.0) -> np.ndarray:
    """``G_t = Σ_{t' ≥ t} γ^(t'−t) r_t'`` for a 1-D reward sequence (γ = ``discount``)."""
    r = np.asarray(rewards, dtype=float)
    if discount == 1.0:
        return np.cumsum(r[::-1])[::-1].copy()
    out = np.empty_like(r)
    acc = 0.0
    for t in range(len(r) - 1, -1, -1):
        acc = r[t] + discount * acc
        out[t] = acc
    return out


def linear(start: float, end: float, progress: float) -> float:
    """Linear interpolation from ``start`` (progress 0) to ``end`` (progress ≥ 1)."""
    p = min(max(float(progress), 0.0), 1.0)
    return start + (end - start) * p


class StepBaseline:
    """Per-step moving-average baseline over the last ``k`` episodes of each graph (Placeto A.7).

    :meth:`advantages` uses only episodes recorded *before* the call; a graph with no history
    yet uses the mean of the returns passed in the same call (so the first update is centred
    rather than all-positive). Episodes longer than the recorded ones use the history that
    reaches step t, or the same-call mean where none does.
    """

    def __init__(self, k: int = 10) -> None:
        if k < 1:
            raise ValueError("the baseline window k must be at least 1")
        self.k = k
        self._hist: dict[str, deque[np.ndarray]] = {}

    def baseline(self, key: str, length: int) -> np.ndarray | None:
        """The baseline for steps 0..length-1 of graph ``key``; NaN where no episode reached the step."""
        hist = self._hist.get(key)
        if not hist:
            return None
        sums, counts = _ragged_sums(hist, length)
        out = np.full(length, np.nan)
        np.divide(sums, counts, out=out, where=counts > 0)
        return out

    def advantages(self, keys: list[str], returns: list[np.ndarray]) -> list[np.ndarray]:
        """``G_t − b_t`` for each episode; then records the episodes."""
        same_call: dict[str, list[np.ndarray]] = {}
        for key, g in zip(keys, returns, strict=True):
            same_call.setdefault(key, []).append(g)
        out = []
        for key, g in zip(keys, returns, strict=True):
            b = self.baseline(key, len(g))
            sums, counts = _ragged_sums(same_call[key], len(g))
            fallback = sums / np.maximum(counts, 1)
            b = fallback if b is None else np.where(np.isnan(b), fallback, b)
            out.append(g - b)
        for key, g in zip(keys, returns, strict=True):
            self._hist.setdefault(key, deque(maxlen=self.k)).append(np.asarray(g, dtype=float))
        return out

    def state_dict(self) -> dict[str, Any]:
        return {"k": self.k, "history": {key: [g.tolist() for g in h] for key, h in self._hist.items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.k = int(state["k"])
        self._hist = {key: deque((np.asarray(g, dtype=float) for g in h), maxlen=self.k)
                      for key, h in state["history"].items()}


def _ragged_sums(seqs, length: int) -> tuple[np.ndarray, np.ndarray]:
    """Per step t < ``length``: the sum of the sequences' values at t and how many reach t."""
    sums, counts = np.zeros(length), np.zeros(length)
    for g in seqs:
        n = min(len(g), length)
        sums[:n] += g[:n]
        counts[:n] += 1
    return sums, counts


class MovingAverageBaseline:
    """Mirhoseini §3.1: ``B ← decay·B + (1 − decay)·mean(R)`` per graph, starting at the failing signal."""

    def __init__(self, decay: float = 0.95) -> None:
        if not 0.0 <= decay < 1.0:
            raise ValueError("the baseline decay must be in [0, 1)")
        self.decay = decay
        self.values: dict[str, float] = {}

    def get(self, key: str, initial: float) -> float:
        return self.values.setdefault(key, float(initial))

    def update(self, key: str, rewards: np.ndarray, initial: float) -> float:
        """Fold this update's mean reward into the baseline; returns the new value."""
        b = self.get(key, initial)
        self.values[key] = self.decay * b + (1.0 - self.decay) * float(np.mean(rewards))
        return self.values[key]

    def state_dict(self) -> dict[str, Any]:
        return {"decay": self.decay, "values": dict(self.values)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.decay = float(state["decay"])
        self.values = {k: float(v) for k, v in state["values"].items()}


class RunningMeanBaseline:
    """The mean makespan of all of a graph's previous episodes (DOPPLER §4.1; the DOPPLER authors' GDP), or
    with ``window`` > 0 of its last ``window`` episodes only (ours, an option)."""

    def __init__(self, window: int = 0) -> None:
        self.window = int(window)
        self.sums: dict[str, float] = {}
        self.counts: dict[str, int] = {}
        self.recent: dict[str, deque[float]] = {}

    def advantage(self, key: str, makespan: float) -> float:
        """``−makespan − (−mean of the previous makespans)``; 0 for a graph's first episode. Records it."""
        if self.window > 0:
            recent = self.recent.setdefault(key, deque(maxlen=self.window))
            adv = 0.0 if not recent else sum(recent) / len(recent) - makespan
            recent.append(makespan)
            return adv
        n = self.counts.get(key, 0)
        adv = 0.0 if n == 0 else self.sums[key] / n - makespan
        self.sums[key] = self.sums.get(key, 0.0) + makespan
        self.counts[key] = n + 1
        return adv

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {"sums": dict(self.sums), "counts": dict(self.counts)}
        if self.window > 0:
            state["recent"] = {k: list(v) for k, v in self.recent.items()}
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.sums = {k: float(v) for k, v in state["sums"].items()}
        self.counts = {k: int(v) for k, v in state["counts"].items()}
        self.recent = {k: deque((float(x) for x in v), maxlen=self.window or None)
                       for k, v in state.get("recent", {}).items()}


class StoppingRule:
    """Placeto App. A.7: the reward "doesn't change more than 2 % in a window of 1000 episodes".

    Our reading: stop once the mean objective of the latest ``window`` episodes differs by at
    most ``tolerance`` (relative) from the mean of the ``window`` episodes before them. Single
    sampled episodes are too noisy to be compared one by one. ``window=0`` disables the rule.
    """

    def __init__(self, window: int = 1000, tolerance: float = 0.02) -> None:
        self.window = int(window)
        self.tolerance = float(tolerance)
        self._values: deque[float] = deque(maxlen=max(2 * self.window, 1))

    def add(self, value: float) -> bool:
        """Record one episode's objective; True when training should stop."""
        self._values.append(float(value))
        if self.window <= 0 or len(self._values) < 2 * self.window:
            return False
        v = np.asarray(self._values)
        before, latest = v[: self.window].mean(), v[self.window:].mean()
        return abs(latest - before) <= self.tolerance * abs(before)

    def state_dict(self) -> dict[str, Any]:
        return {"window": self.window, "tolerance": self.tolerance, "values": list(self._values)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.__init__(state["window"], state["tolerance"])
        self._values.extend(state["values"])


@dataclass(frozen=True)
class Budget:
    """When to stop training: any limit reached (``None`` = no limit).

    ``placements`` counts placements *sampled* as the placer's paper counts them
    (``docs/budgets.md``): one per episode for Placeto (Table 1's "placements sampled", whatever
    the intermediate rewards simulate within the episode), the RNN placer (one of Mirhoseini's K
    samples) and DOPPLER (its episodes). ``episodes`` is never overshot: the trainer's last update
    collects only the episodes left. The other limits are checked after each update, so the last
    update may overshoot ``placements`` by less than its episodes. ``seconds`` looks one update ahead: training
    stops when the next update, as long as the last one took, would end past it (issue #35: on a
    12k-op graph one update takes tens of seconds, and checking after it overshot 120 s by 10–47 %).
    """

    episodes: int | None = None
    placements: int | None = None
    seconds: float | None = None

    def exhausted(self, episodes: int, placements: int, seconds: float, next_update_s: float = 0.0) -> str | None:
        """The name of the limit reached, or None; ``next_update_s``: how long the next update is expected
        to take (the wall-time limit is reached when it would end past ``seconds``)."""
        if self.episodes is not None and episodes >= self.episodes:
            return "episodes"
        if self.placements is not None and placements >= self.placements:
            return "placements"
        if self.seconds is not None and (seconds >= self.seconds or seconds + next_update_s > self.seconds):
            return "seconds"
        return None

    def progress(self, episodes: int, placements: int, seconds: float) -> float:
        """Fraction of the budget used, which drives the decays (learning rate, entropy weight): of the tighter
        count limit (episodes, placements), or — only when there is none — of the wall-time limit; 0 when there
        is no limit. A wall-time limit beside a count stops the training but does not set its schedule, so
        the same seed trains the same way on a busy and on an idle machine."""
        counts = [n / limit for n, limit in ((episodes, self.episodes), (placements, self.placements)) if limit]
        if counts:
            return min(max(counts), 1.0)
        return min(seconds / self.seconds, 1.0) if self.seconds else 0.0
