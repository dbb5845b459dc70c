"""Placers: heuristics, partitioners, list schedulers, search and learned policies.

Importing this package registers every built-in placer (see :data:`policies.base.PLACERS`).
"""

from policies import trivial  # noqa: F401  (registers the trivial placers)
from policies.base import PLACERS, make_placer, placer_descriptions

__all__ = ["PLACERS", "make_placer", "placer_descriptions"]
