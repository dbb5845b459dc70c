"""The registry of learned placers: an explicit list of packages, one per placer.

Everything else reads this registry: ``placelab train / eval / experiment`` and ``--param``
validation (:func:`make_config`), ``placelab place --placer NAME`` and the app's Place page
(:mod:`policies.learned` makes every learned placer a placer of :mod:`policies.registry`), the Train page's
parameter form (:func:`config_fields`), and stored runs (``policy.json`` holds the config's
``to_dict()``; :func:`make_agent` rebuilds the agent from it).

Adding a learned placer: copy ``policies/rl/template/`` to ``policies/rl/<name>/``, rename its placer, and
add the package to :data:`PACKAGES` (its import and one entry; what to change: the template's package
docstring, ``policies/rl/template/__init__.py``, and ``docs/guide/learned-placers.md``, "Adding a learned
placer").
A placer's package provides

1. ``config.py``: a config dataclass deriving from :class:`~policies.rl.core.config.LearnedConfig`,
   every field declared with :func:`~policies.rl.core.config.param` (source cited);
2. ``agent.py``: an agent class deriving from :class:`policies.rl.core.agent.Agent`, constructed as
   ``Agent(num_devices, config, *, seed=0, tasks=())``, with the paper's formulas and its numbered
   deviations in the module docstring; what it fixes from the training tasks (e.g. a vocabulary)
   it writes back into ``agent.config`` so the stored config rebuilds the same network;
3. ``__init__.py``: ``PLACER = LearnedPlacerInfo(name, description, Config, Agent, episodes)``.

**No torch at import time**: the registry imports every listed package whenever the placers are
listed (``placelab placers``, the app); torch (and a network module ``net.py``) is imported inside
functions. ``tests/policies/rl/test_registry.py`` checks every registered config (sources cited,
defaults within their ranges, a round trip through ``to_dict``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from engine.errors import SpecError, quote
from policies.rl import doppler, gdp, placeto, rnn
from policies.rl.core.config import LearnedConfig, LearnedPlacerInfo
from policies.rl.core.task import PlacementTask

__all__ = ["PACKAGES", "config_fields", "learned_placers", "make_agent", "make_config", "stored_params"]

#: The learned placers, one package each; each package's ``PLACER`` is its card.
PACKAGES: tuple[ModuleType, ...] = (placeto, rnn, doppler, gdp)


def learned_placers() -> dict[str, LearnedPlacerInfo]:
    """Every learned placer of :data:`PACKAGES`, by name."""
    cards = [p.PLACER for p in PACKAGES]
    return {c.name: c for c in sorted(cards, key=lambda c: c.name)}


def _info(name: str) -> LearnedPlacerInfo:
    placers = learned_placers()
    if name not in placers:
        raise SpecError(f"{quote(name)} is not a learned placer (learned placers: {', '.join(placers)})")
    return placers[name]


def config_fields(name: str) -> list[dataclasses.Field]:
    """The config fields of learned placer ``name`` (each with ``metadata`` doc, source, low, high, choices)."""
    return list(dataclasses.fields(_info(name).config))


def make_config(name: str, params: dict[str, Any]) -> LearnedConfig:
    """Learned placer ``name``'s config from ``params``; unknown keys or bad values give one-sentence SpecErrors."""
    fields = {f.name: f for f in config_fields(name)}
    unknown = sorted(set(params) - set(fields))
    if unknown:
        raise SpecError(f"learned placer {quote(name)} has no parameter {quote(unknown[0])} "
                        f"(parameters: {', '.join(fields)})")
    try:
        return _info(name).config(**params)
    except (TypeError, ValueError) as exc:
        raise SpecError(f"learned placer {quote(name)}: {exc}") from None


def stored_params(name: str, params: dict[str, Any]) -> dict[str, Any]:
    """A stored config's ``params`` with the values its missing fields stood for when it was stored
    (:attr:`LearnedConfig.STORED_DEFAULTS`)."""
    return {**_info(name).config.STORED_DEFAULTS, **params}


def make_agent(name: str, num_devices: int, params: dict[str, Any], *, seed: int = 0,
               tasks: Sequence[PlacementTask] = ()) -> Any:
    """A fresh agent of learned placer ``name``; what it fixes from ``tasks`` lands in ``agent.config``."""
    config = make_config(name, params)
    try:
        return _info(name).agent(num_devices, config, seed=seed, tasks=tasks)
    except ValueError as exc:
        raise SpecError(f"learned placer {quote(name)}: {exc}") from None
