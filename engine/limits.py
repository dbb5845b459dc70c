"""Size and magnitude limits shared by the graph, cluster and generator checks.

Every number in a graph or cluster file must be finite, but finite numbers can still add up
to infinity: two ops of ``1e308`` seconds make a total compute of ``inf``, and the
simulator, the lower bound and JSON output then fail far from the input. So each *total*
that the engine forms (compute, bytes, latencies, and the reciprocal of a speed or a
bandwidth, by which times are multiplied) must stay below :data:`MAX_TOTAL`, far beyond any
physical graph (1e100 seconds or bytes) yet far enough from float's 1.8e308 that every
product and sum the simulator forms stays finite.

The caps on counts keep a small input from asking for gigabytes: a cluster's per-pair link
tables grow with the square of its devices, so :data:`MAX_DEVICES` devices are allowed.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from engine.errors import PlacelabError

__all__ = ["MAX_DEVICES", "MAX_TOTAL", "check_total"]

#: Largest total (seconds or bytes) and largest reciprocal speed or bandwidth the engine accepts.
MAX_TOTAL = 1e100
#: Most devices in one cluster (per-pair tables of 4,096² float64 are 134 MB each).
MAX_DEVICES = 4096


def check_total(values: Iterable[float] | np.ndarray, what: str, error: type[PlacelabError]) -> None:
    """Raise ``error`` (one sentence naming ``what``) unless the sum of ``values`` is at most :data:`MAX_TOTAL`.

    NaN entries (a compute time missing for a device kind) are skipped.
    """
    arr = np.asarray(values if isinstance(values, np.ndarray) else list(values), dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        total = float(np.nansum(np.abs(arr)))
    if not total <= MAX_TOTAL:
        raise error(f"{what} total {total:.3g}, beyond the {MAX_TOTAL:.0e} placelab computes with")
