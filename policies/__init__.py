"""Placers: heuristics, partitioners, list schedulers, search and learned policies.

Importing this package registers every built-in placer (see :data:`policies.base.PLACERS`):
each module here registers its placers with :func:`policies.base.register` when imported.
Modules with heavy dependencies (torch) must import them inside their functions.
"""

import sys as _sys

from engine._discover import import_submodules as _import_submodules
from policies.base import PLACERS, make_placer, placer_descriptions

_import_submodules(_sys.modules[__name__], skip=("base", "runner"))

__all__ = ["PLACERS", "make_placer", "placer_descriptions"]
