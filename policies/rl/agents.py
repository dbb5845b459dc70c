"""Build learned-placer agents by name from JSON-able hyper-parameters (for training, checkpoints and eval)."""

from __future__ import annotations

import dataclasses
from typing import Any

from engine.errors import SpecError
from policies.rl.task import PlacementTask

__all__ = ["AGENT_NAMES", "agent_defaults", "make_agent"]

AGENT_NAMES = ("placeto", "rnn")


def _config_class(name: str):
    if name == "placeto":
        from policies.rl.placeto import PlacetoConfig

        return PlacetoConfig
    if name == "rnn":
        from policies.rl.rnn import RNNConfig

        return RNNConfig
    raise SpecError(f"'{name}' is not a learned placer (learned placers: {', '.join(AGENT_NAMES)})")


def agent_defaults(name: str) -> dict[str, Any]:
    """The hyper-parameters of learned placer ``name`` and their defaults."""
    return _config_class(name)().to_dict()


def make_config(name: str, params: dict[str, Any]):
    """The agent's config from ``params``; unknown keys or bad values give one-sentence SpecErrors."""
    cls = _config_class(name)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(params) - set(fields))
    if unknown:
        raise SpecError(f"learned placer '{name}' has no parameter '{unknown[0]}' "
                        f"(parameters: {', '.join(fields)})")
    try:
        return cls(**params)
    except (TypeError, ValueError) as exc:
        raise SpecError(f"learned placer '{name}': {exc}") from None


def make_agent(name: str, num_devices: int, params: dict[str, Any], *, seed: int = 0,
               tasks: list[PlacementTask] | None = None, extras: dict[str, Any] | None = None):
    """A fresh agent. ``extras`` restores what the RNN placer fixes from its training tasks
    (type vocabulary, maximum group count); without them they are taken from ``tasks``.

    Returns
    -------
    (agent, extras) — ``extras`` to store with the policy.
    """
    config = make_config(name, params)
    try:
        if name == "placeto":
            from policies.rl.placeto import PlacetoAgent

            return PlacetoAgent(num_devices, config, seed=seed), {}
        from policies.rl.rnn import RNNAgent, max_group_count, vocabulary

        if extras is None:
            extras = {"vocab": vocabulary(tasks or []), "max_groups": max_group_count(tasks or [])}
        return RNNAgent(num_devices, config, seed=seed, vocab=list(extras["vocab"]),
                        max_groups=int(extras["max_groups"])), dict(extras)
    except ValueError as exc:
        raise SpecError(f"learned placer '{name}': {exc}") from None
