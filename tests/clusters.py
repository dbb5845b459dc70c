"""Clusters built by hand for tests: every device pair shares one link."""

from collections.abc import Sequence
from typing import Any

from engine.cluster import Cluster, Device, Link, SimulationSettings


def uniform_cluster(name: str, devices: Sequence[Device], bandwidth: float, **sim: Any) -> Cluster:
    """A cluster named ``name`` whose every device pair shares one link of ``bandwidth`` bytes/s, no latency;
    ``sim`` are its simulation settings (``mode=``, ``op_overhead_s=``, …)."""
    return Cluster(name, tuple(devices), Link(bandwidth), (), SimulationSettings(**sim))
