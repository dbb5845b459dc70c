"""ε-greedy acting with a linear decay over the training's budget, for placers trained in DOPPLER's stages.

DOPPLER §6.1: with probability ε an action is chosen uniformly among the feasible ones, ε decaying
linearly from 0.2 to 0 over training; Stage I (imitation, §5) rolls out from ε = 1. The DOPPLER
authors train their GDP baseline the same way, so the DOPPLER and GDP agents share this schedule.
"""

from __future__ import annotations

from typing import Any

from policies.rl.core.reinforce import Budget, RunningMeanBaseline, linear

#: ε's decay length when neither the config nor the training's budget gives one: §6.1's 4k Stage II episodes.
DEFAULT_DECAY_EPISODES = 4000


class StagedEpsilon:
    """Mixin for an agent whose config has ``stage``, ``epsilon``, ``epsilon_imitation``,
    ``epsilon_final`` and ``decay_episodes``, and which counts ``episodes`` against a
    ``RunningMeanBaseline``. Call ``init_epsilon`` in ``__init__``."""

    config: Any
    episodes: int
    baseline: RunningMeanBaseline

    def init_epsilon(self) -> None:
        self.baseline = RunningMeanBaseline(getattr(self.config, "baseline_window", 0))
        self.episodes = 0
        self.decay_episodes = self.config.decay_episodes or DEFAULT_DECAY_EPISODES  # fit_budget may change it

    def epsilon(self) -> float:
        """ε for the next episode: linear from the stage's start to ``epsilon_final`` over ``decay_episodes``."""
        c = self.config
        start = c.epsilon_imitation if c.stage == "imitation" else c.epsilon
        return linear(start, c.epsilon_final, self.episodes / self.decay_episodes)

    def fit_budget(self, budget: Budget) -> None:
        """Called by the trainer: with ``decay_episodes`` None, ε decays over the episode budget, as the
        learning rate does (§6.1), or over the placement budget, one placement per episode
        (``docs/budgets.md``); with neither, over ``DEFAULT_DECAY_EPISODES``."""
        limits = [n for n in (budget.episodes, budget.placements) if n]
        if self.config.decay_episodes is None and limits:
            self.decay_episodes = int(min(limits))

    def state_dict(self) -> dict[str, Any]:
        return {"baseline": self.baseline.state_dict(), "episodes": self.episodes,
                "decay_episodes": self.decay_episodes}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.baseline.load_state_dict(state["baseline"])
        self.episodes = int(state["episodes"])
        self.decay_episodes = int(state.get("decay_episodes", self.decay_episodes))
