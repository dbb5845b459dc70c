"""A generator's card: its ``gen:`` name, description and parameter bounds, and the checks every call passes.

A workload module marks each generator function with :func:`generator`; :mod:`engine.generators` lists the
modules and collects their cards (:func:`cards_of`), so the name is written once, on the card. Every numeric
parameter declares its range on the card (:class:`~engine.limits.Bound`): checked on every call before anything
is built, and by the app's guard (``dashboard/input_guard.py``) with the app's ceilings.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

from engine._discover import cards_of as collect_cards
from engine.errors import SpecError, quote
from engine.graph.compgraph import CompGraph
from engine.limits import GENERATOR_STRUCTURE, Bound

__all__ = ["Generator", "cards_of", "check_bounds", "generator"]

_NUMBERS = (int, float, "int", "float")


@dataclass(frozen=True)
class Generator:
    """A ``gen:`` generator: ``make(**params) -> CompGraph`` (its bounds checked on every call)."""

    name: str
    make: Callable[..., CompGraph]
    description: str
    bounds: Mapping[str, Bound] = field(default_factory=dict)


def generator(name: str, description: str, bounds: Mapping[str, Bound] | None = None,
              ) -> Callable[[Callable[..., CompGraph]], Callable[..., CompGraph]]:
    """Decorator: ``fn(**params) -> CompGraph`` is the generator ``gen:name``; its card is ``fn.card``.

    ``bounds`` gives each numeric (``int`` or ``float``) parameter of ``fn`` its range, every one of them (a
    generator without is a TypeError here, at import); the function returned checks them on every call, before
    ``fn`` builds anything.
    """
    bounds = dict(bounds or {})

    def deco(fn: Callable[..., CompGraph]) -> Callable[..., CompGraph]:
        sig = inspect.signature(fn)
        numeric = {k for k, p in sig.parameters.items() if p.annotation in _NUMBERS}
        if numeric != set(bounds):
            raise TypeError(f"gen:{name}: bounds must name each numeric parameter ({', '.join(sorted(numeric))}), "
                            f"got {', '.join(sorted(bounds)) or 'none'}")

        @functools.wraps(fn)
        def checked(*args: Any, **kwargs: Any) -> CompGraph:
            call = sig.bind(*args, **kwargs)
            call.apply_defaults()
            check_bounds(card, call.arguments)
            return fn(*args, **kwargs)

        card = Generator(name, checked, description, bounds)
        checked.card = card  # type: ignore[attr-defined]
        return checked

    return deco


def cards_of(*modules: ModuleType) -> dict[str, Generator]:
    """The cards of the generators each module defines, by name (ValueError for two with one name)."""
    return collect_cards(modules, Generator, "generators")


def _shown(x: float) -> str:
    return f"{x:,}" if isinstance(x, int) else f"{x:g}"


def check_bounds(gen: Generator, values: Mapping[str, Any], *, app: bool = False) -> None:
    """Raise a one-sentence SpecError unless every value of ``gen``'s numeric parameters in ``values`` is within
    its declared :class:`~engine.limits.Bound` (up to the app's ceiling when ``app``) and the product of its
    structure parameters within :data:`~engine.limits.GENERATOR_STRUCTURE`."""
    whose = "the app's limit" if app else "the limit"
    product, keys = 1, []
    for key, bound in gen.bounds.items():
        value = values.get(key)
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            continue
        value = value.item() if isinstance(value, np.generic) else value  # shown as the number it is
        if isinstance(value, float) and not math.isfinite(value):  # a huge int is refused below
            raise SpecError(f"gen:{gen.name}: {key} must be a finite number, got {quote(value)}")
        if value < bound.low:
            raise SpecError(f"gen:{gen.name}: {key} must be >= {_shown(bound.low)}, got {quote(value)}")
        if value > bound.ceiling(app):
            raise SpecError(f"gen:{gen.name}: {key}={quote(value)} is beyond {whose} of {_shown(bound.ceiling(app))}")
        if bound.structure:
            product *= value
            keys.append(key)
    if product > GENERATOR_STRUCTURE.ceiling(app):
        raise SpecError(f"gen:{gen.name}: {'×'.join(keys)} = {product:,} is beyond {whose} of "
                        f"{GENERATOR_STRUCTURE.ceiling(app):,} (the graph would be too large to build)")
