"""How registries find their entries: the cards of the modules they list (:func:`cards_of`), and for graph
formats every module of a package, imported once (:func:`import_submodules`)."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from types import ModuleType
from typing import Any

__all__ = ["cards_of", "import_submodules"]

_done: set[str] = set()


def import_submodules(package: ModuleType, *, skip: tuple[str, ...] = ()) -> None:
    """Import each direct submodule of ``package`` (except ``skip`` and private ``_*`` ones).

    Registries (graph formats, generators, placers) fill themselves at import time; a module
    whose optional heavy dependency (tensorflow, torch) is missing must import cleanly and
    load that dependency lazily inside its functions.
    """
    if package.__name__ in _done:
        return
    _done.add(package.__name__)
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("_") or info.name in skip:
            continue
        importlib.import_module(f"{package.__name__}.{info.name}")


def cards_of(modules: Iterable[ModuleType], kind: type, what: str) -> dict[str, Any]:
    """The cards (``obj.card``, instances of ``kind``) of the functions and classes each module defines, by their
    ``name``, module by module in definition order: how an explicit registry collects the entries of the modules
    it lists (generators, placers). ``what`` names them in the error.

    Raises
    ------
    ValueError
        Two cards with one name.
    """
    cards: dict[str, Any] = {}
    for module in modules:
        for value in vars(module).values():
            card = getattr(value, "card", None)
            if not isinstance(card, kind) or getattr(value, "__module__", None) != module.__name__:
                continue
            if card.name in cards:
                raise ValueError(f"two {what} are called {card.name!r}")
            cards[card.name] = card
    return cards
