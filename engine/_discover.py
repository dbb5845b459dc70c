"""Import every module of a package once, so modules that register themselves are found."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

__all__ = ["import_submodules"]

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
