"""The registry of reproductions: the modules listed here, each declaring its ``REPRODUCTIONS``.

A reproduction's name is written once, on its :class:`~placelab.reproduce.core.Reproduction`; adding one is a
module with its ``REPRODUCTIONS`` and its line in :data:`REPRODUCTIONS` below.
"""

from __future__ import annotations

from types import ModuleType

from engine.errors import SpecError, quote
from placelab.reproduce import doppler, doppler_fidelity, heldout, mirhoseini, placeto
from placelab.reproduce.core import Reproduction

__all__ = ["REPRODUCTIONS", "all_reproductions", "get"]


def _by_name(*modules: ModuleType) -> dict[str, Reproduction]:
    out: dict[str, Reproduction] = {}
    for module in modules:
        for rep in module.REPRODUCTIONS:
            if rep.name in out:
                raise ValueError(f"two reproductions are called {quote(rep.name)}")
            out[rep.name] = rep
    return out


#: Every reproduction, by name, module by module in declaration order.
REPRODUCTIONS: dict[str, Reproduction] = _by_name(doppler, doppler_fidelity, heldout, mirhoseini, placeto)


def all_reproductions() -> dict[str, Reproduction]:
    """Every reproduction, by name, in the order of :data:`REPRODUCTIONS`."""
    return REPRODUCTIONS


def get(name: str) -> Reproduction:
    """The reproduction called ``name``.

    Raises
    ------
    SpecError
        An unknown name (the message lists the known ones).
    """
    if name not in REPRODUCTIONS:
        raise SpecError(f"unknown reproduction {quote(name)} (available: {', '.join(REPRODUCTIONS)}; "
                        "see `placelab reproduce --list`)")
    return REPRODUCTIONS[name]
