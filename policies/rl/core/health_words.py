"""How a learning-health verdict reads: its short label, its sentence, and its numbers in one line (the CLI,
``train --json``, the stored run and the app show these). :mod:`policies.rl.core.health` states the rule.
No torch here: the app imports this module."""

from __future__ import annotations

import math

from policies.rl.core.health_record import FROZEN, MIN_EPISODES, SETTLED, VERSION, HealthNumbers

__all__ = ["NEVER_LEFT_UNIFORM", "VERDICTS", "detail", "label", "message", "summary", "symbol"]

NEVER_LEFT_UNIFORM = "the policy never left uniform: its sampled placements are a random search"

#: verdict → short label (the CLI line, the app's tables)
VERDICTS = {
    "nothing_to_choose": "nothing to choose",
    "too_short": "too short to judge",
    "never_left_uniform": "never left uniform",
    "frozen": "policy frozen",
    "no_better_than_random": "no better than random search",
    "exploration_only": "only exploration improved",
    "learned": "learned",
    "settled_without_improving": "settled without improving",
    "still_exploring": "still exploring",
    "no_progress": "no sign of learning",
}


def symbol(name: str) -> str:
    """An exploration parameter's symbol (``epsilon`` → ε)."""
    return {"epsilon": "ε"}.get(name, name)


def _pct(x: float) -> str:
    """A share of uniform: one decimal near the never-left-uniform threshold, where it matters."""
    return f"{x:.1%}" if 0.9 <= x < 1.0 else f"{x:.0%}"


def _ms(s: float) -> str:
    return f"{s * 1e3:.4g} ms"


def label(h: HealthNumbers) -> str:
    """The verdict's short label (:data:`VERDICTS`)."""
    return VERDICTS.get(h.verdict, h.verdict)


def _compared_words(h: HealthNumbers) -> str:
    return {"greedy": "greedy placement's runtime", "sampled": "sampled runtime"}.get(h.compared_on or "", "runtime")


def _exploration_words(h: HealthNumbers) -> str:
    return ", ".join(f"{symbol(k)} went {h.exploration_first[k]:.3g} → {h.exploration_last[k]:.3g}"
                     for k in h.exploration_first if k in h.exploration_last)


def message(h: HealthNumbers) -> str:
    """The verdict as one sentence."""
    r, p = h.random_ratio, h.policy_ratio
    if h.verdict == "nothing_to_choose":
        return ("nothing to choose: every op group has one feasible device, so every placement is the same "
                "and there is nothing to learn")
    if h.verdict == "too_short":
        return f"too short to judge: {h.episodes} episodes (at least {MIN_EPISODES} needed)"
    if h.verdict == "never_left_uniform":
        return NEVER_LEFT_UNIFORM
    if h.verdict == "frozen":
        return (f"policy frozen: its weights moved {h.weight_change:.2g} of their norm in all (at most "
                f"{FROZEN:g}: did not change), so whatever its sampled runtime did is exploration's")
    if h.verdict == "no_better_than_random":
        return (f"no better than random search: the best placement found is {r:.3f}× the best of "
                f"{h.random_placements:,} uniformly random placements")
    if h.verdict == "exploration_only":
        return f"only exploration improved: {_exploration_detail(h)}"
    did = f" (×{h.compared_ratio:.3f})" if h.compared_ratio is not None else ""
    if h.verdict == "learned":
        beat = f", and its own best is {p:.3f}× random search's" if p is not None else ""
        return f"learned: the policy settled and its {_compared_words(h)} improved{did}{beat}"
    if h.verdict == "settled_without_improving":
        if h.compared_on is None:
            return (f"the policy settled (its entropy fell) but its runtime was not compared at equal "
                    f"exploration ({h.not_compared})")
        return f"the policy settled (its entropy fell) but its {_compared_words(h)} did not improve{did}"
    if h.verdict == "still_exploring":
        high = h.entropy_last_ratio is not None and h.entropy_last_ratio > SETTLED
        why = "its entropy stays high" if high else "its entropy did not fall from its first window's"
        return f"the {_compared_words(h)} improved{did}, but the policy is still exploring ({why})"
    return f"no sign of learning: the entropy barely fell and the {_compared_words(h)} did not improve"


def _exploration_detail(h: HealthNumbers) -> str:
    if h.attributable is False:
        if h.random_search:
            own = (f"the policy's own best is {h.policy_ratio:.3f}× random search's"
                   if h.policy_ratio is not None else "the policy placed none of its own as good")
            return f"the best placement found ({h.random_ratio:.3f}× random search's) is exploration's, and {own}"
        graphs = [g for g, s in h.best_sources.items() if not h.own_source(s)]
        return f"the best placement of {', '.join(graphs)} is exploration's (an ε-random perturbation)"
    then = (f"the {_compared_words(h)} did not (×{h.compared_ratio:.3f})" if h.compared_ratio is not None
            else f"nothing was compared at equal exploration ({h.not_compared})")
    settled = "; the policy settled (its entropy fell) on what it already placed" if h.settled else ""
    return f"the sampled runtime improved (×{h.runtime_ratio:.3f}) as {_exploration_words(h)}, but {then}{settled}"


def detail(h: HealthNumbers) -> str:
    """The message after its verdict: the message without a leading "label:" (for a line that shows the label
    already)."""
    head, text = f"{label(h)}: ", message(h)
    return text[len(head):] if text.startswith(head) else text


def summary(h: HealthNumbers) -> str:
    """The numbers in one line."""
    w = f"first vs last {h.window} episode{'s' if h.window != 1 else ''}"
    parts = [_entropy_words(h), _runtime_words(h), *_policy_words(h)]
    again = ""
    if h.previous_verdict is not None and h.previous_verdict != h.verdict:
        again = f"; judged again by rule {VERSION}, stored as {VERDICTS.get(h.previous_verdict, 'unknown')!r}"
    return f"{w}: {', '.join(parts)}; {_random_words(h)}{again}"


def _entropy_words(h: HealthNumbers) -> str:
    if h.entropy_last_ratio is not None and h.entropy_first_ratio is not None:
        return f"entropy {_pct(h.entropy_first_ratio)} → {_pct(h.entropy_last_ratio)} of uniform"
    if h.entropy_first is not None and h.entropy_last is not None:
        return f"entropy {h.entropy_first:.3g} → {h.entropy_last:.3g} nats (no uniform reference)"
    return "entropy not recorded"


def _runtime_words(h: HealthNumbers) -> str:
    """The sampled runtime, first vs last window, and the exploration it was sampled at."""
    if h.runtime_first_s is not None and h.runtime_last_s is not None:
        rt = f"sampled runtime {_ms(h.runtime_first_s)} → {_ms(h.runtime_last_s)}"
        if h.runtime_ratio is not None:
            rt += f" (×{h.runtime_ratio:.3f})"
    elif h.graphs > 1 and h.runtime_ratio is not None:
        rt = f"sampled runtime ×{h.runtime_ratio:.3f} (median over {h.graphs} graphs of each one's last / first)"
    else:
        rt = "sampled runtime not recorded"
    if _exploration_words(h):
        rt += f" as {_exploration_words(h)}" if h.exploration_changed else \
            " at " + ", ".join(f"{symbol(k)} {v:.3g}" for k, v in h.exploration_first.items())
    return rt


def _policy_words(h: HealthNumbers) -> list[str]:
    """The greedy placement's runtime (or why none is compared at equal exploration) and the weights' change."""
    if h.greedy_ratio is not None:
        g = (f"{_ms(h.greedy_first_s)} → {_ms(h.greedy_last_s)} (×{h.greedy_ratio:.3f})"
             if h.greedy_first_s is not None and h.greedy_last_s is not None else f"×{h.greedy_ratio:.3f}")
        parts = [f"greedy placement {g} over {h.greedy_checkpoints} checkpoints"]
    elif h.not_compared is not None:
        parts = [f"no runtime at equal exploration: {h.not_compared}"]
    else:
        parts = [f"greedy placement not compared ({h.greedy_checkpoints} checkpoints)"
                 if h.greedy_checkpoints else "greedy placement not evaluated"]
    if h.weight_change is not None:
        parts.append(f"weights moved {h.weight_change:.2g}")
    return parts


def _random_words(h: HealthNumbers) -> str:
    """The best found against random search's best, and the policy's own best when it differs."""
    r = h.random_ratio
    if r is None:
        return f"random search: {h.random_missing or 'not compared'}"
    if len(h.random_search) == 1:
        c = h.random_search[0]
        rnd = (f"best found {_ms(c.found_makespan_s)} vs {_ms(c.random_makespan_s)} for {c.placements:,} random "
               f"placements (×{r:.3f})")
    else:
        rnd = (f"best found ×{r:.3f} of random search's (geometric mean over {len(h.random_search)} graphs, "
               f"{h.random_placements:,} random placements)")
    trained = sum(c.placements_trained for c in h.random_search)
    if h.random_placements < trained:
        rnd += f" (capped: the training evaluated {trained:,})"
    p = h.policy_ratio
    if p is not None and not math.isclose(p, r):
        rnd += f", the policy's own best ×{p:.3f}"
    return rnd
