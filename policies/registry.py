"""The registry of placers: every placer module listed here, its placers' cards collected, and every learned
placer of :data:`policies.rl.registry.PACKAGES` as a placer.

A placer's name is written once, on its card (:func:`policies.base.placer`); adding a baseline is its module
and that module's entry in :data:`MODULES` (``docs/guide/adding-a-baseline.md``). The command line and the app
list placers with :func:`placer_descriptions` and build them with :func:`make_placer`. Listing loads no torch:
the learned placers import it when they place or train.
"""

from __future__ import annotations

import inspect
from types import ModuleType
from typing import Any

from engine._discover import cards_of
from engine.errors import SpecError, quote
from policies import enumerative, expert, list_scheduling, partitioners, search, simulated_annealing, trivial
from policies.base import Placer, PlacerInfo
from policies.learned import learned_placer_cards

__all__ = ["MODULES", "PLACERS", "make_placer", "placer_descriptions", "placer_parameters"]

#: The modules of the placers that do not learn.
MODULES: tuple[ModuleType, ...] = (enumerative, expert, list_scheduling, partitioners, search, simulated_annealing,
                                   trivial)

#: Every placer, by name: the cards of :data:`MODULES`, then the learned placers'.
PLACERS: dict[str, PlacerInfo] = {**cards_of(MODULES, PlacerInfo, "placers"), **learned_placer_cards()}


def placer_descriptions() -> dict[str, str]:
    """Every placer's one-line description, by name."""
    return {p.name: p.description for p in PLACERS.values()}


def make_placer(name: str, **params: Any) -> Placer:
    """Build a registered placer; unknown names or parameters raise one-sentence errors."""
    info = PLACERS.get(name)
    if info is None:
        raise SpecError(f"unknown placer {quote(name)} (available: {', '.join(sorted(PLACERS))})")
    accepted = info.parameters
    for key in params:
        if key not in accepted:
            raise SpecError(f"placer {quote(name)} has no parameter {quote(key)}"
                            + (f" (parameters: {', '.join(accepted)})" if accepted else ""))
    return info.factory(**params)


def placer_parameters(name: str) -> dict[str, Any]:
    """A registered placer's parameters and their defaults (for the CLI and the app)."""
    return {k: (None if d is inspect.Parameter.empty else d) for k, d in PLACERS[name].parameters.items()}
