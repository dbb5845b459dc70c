"""Named errors for infeasible or malformed input.

Every error the engine raises for *bad input* derives from :class:`PlacelabError`; its
message is one sentence that names the offending op, edge, device or file, so the CLI and
the app can show it as-is (never a traceback).
"""

from __future__ import annotations

__all__ = [
    "ClusterError",
    "GraphError",
    "PlacelabError",
    "PlacementError",
    "RunError",
    "SimulationError",
    "SpecError",
    "WriteError",
]


class PlacelabError(Exception):
    """Base class: bad input that the user can fix; ``str(err)`` is one clear sentence."""


class GraphError(PlacelabError):
    """A computation graph is malformed (cycle, unknown op, bad number, wrong schema, ...)."""


class ClusterError(PlacelabError):
    """A cluster description or preset name is invalid."""


class PlacementError(PlacelabError):
    """A placement does not fit its graph or cluster (unknown op/device, unsupported kind, ...)."""


class SimulationError(PlacelabError):
    """A simulation was asked for something it cannot do (unknown mode, ...)."""


class RunError(PlacelabError):
    """A stored run is missing, unreadable or of an unsupported schema version."""


class SpecError(PlacelabError):
    """A graph / generator spec (``gen:NAME?k=v``) cannot be resolved."""


class WriteError(PlacelabError):
    """An output file cannot be written (missing folder, not a regular file, no permission, disk full)."""
