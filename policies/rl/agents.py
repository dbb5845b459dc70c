"""Build learned-placer agents by name from JSON-able hyper-parameters (for training, checkpoints and eval)."""

from __future__ import annotations

import dataclasses
import math
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


#: Ranges of hyper-parameters (inclusive bounds; None = unbounded); other ints must be >= 1.
_RANGES: dict[str, tuple[float | None, float | None]] = {
    "rounds": (0, None), "failing_grace_steps": (0, None), "discount": (0.0, 1.0), "baseline_decay": (0.0, 0.999999),
    "entropy": (0.0, None), "entropy_final": (0.0, None), "memory_penalty": (0.0, None),
    "lr": (1e-12, None), "lr_final": (0.0, None), "clip_grad": (1e-12, None),
}


def _check_value(placer: str, key: str, value: Any, default: Any, annotation: str) -> Any:
    """``value`` for field ``key`` with the type its default or annotation implies, within its range."""
    if value is None and "None" in annotation:
        return None
    want = "list" if annotation.startswith("list") else type(default).__name__ if default is not None else (
        "int" if "int" in annotation else "str")
    ok = {"bool": isinstance(value, bool), "str": isinstance(value, str), "list": isinstance(value, list),
          "int": isinstance(value, int) and not isinstance(value, bool),
          "float": isinstance(value, int | float) and not isinstance(value, bool)}[want]
    if not ok:
        raise SpecError(f"learned placer '{placer}': parameter '{key}' must be {want}, got {value!r}")
    if want in ("int", "float"):
        lo, hi = _RANGES.get(key, (1, None) if want == "int" else (None, None))
        if not math.isfinite(value) or (lo is not None and value < lo) or (hi is not None and value > hi):
            bounds = ("> 0" if lo == 1e-12 else f">= {lo}") if hi is None else f"in [{lo}, {hi}]"
            raise SpecError(f"learned placer '{placer}': parameter '{key}' must be {bounds}, got {value!r}")
        return float(value) if want == "float" else value
    return value


def make_config(name: str, params: dict[str, Any]):
    """The agent's config from ``params``; unknown keys or bad values give one-sentence SpecErrors."""
    cls = _config_class(name)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(params) - set(fields))
    if unknown:
        raise SpecError(f"learned placer '{name}' has no parameter '{unknown[0]}' "
                        f"(parameters: {', '.join(fields)})")
    checked = {k: _check_value(name, k, v, fields[k].default, str(fields[k].type)) for k, v in params.items()}
    try:
        return cls(**checked)
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
