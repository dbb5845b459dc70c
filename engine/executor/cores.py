"""Which CPU cores the executor's workers are pinned to: one per physical core, away from core 0.

Two workers on SMT siblings (two hardware threads of one physical core) share its execution
units: a matmul on one runs slower while the other computes, by how much depends on how the
two devices' ops overlap in that run. On an idle 16-vCPU VM, repeat noise of one placement
was 29 % with the workers on cpus 0–1 and 7 % on cpus 4 and 6 (docs/lab/2026-11-23-executor-fidelity-idle.md);
cpus 0–1 being SMT siblings there is the likely cause but was not checked (the VM's topology
was not recorded). Core 0 also takes most housekeeping interrupts, so it is used last.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = ["default_cores", "parse_cpu_list", "sibling_groups", "spread_cores"]

_SYS_CPU = Path("/sys/devices/system/cpu")


def parse_cpu_list(text: str) -> frozenset[int]:
    """A Linux cpu list (``"0-3,8,10-11"``) as a set of cpu numbers."""
    out: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return frozenset(out)


def sibling_groups(cpus: Iterable[int], root: Path = _SYS_CPU) -> dict[int, frozenset[int]]:
    """Each cpu's hardware-thread siblings (itself included), read from sysfs; itself alone if unknown."""
    groups = {}
    for c in cpus:
        try:
            groups[c] = parse_cpu_list((root / f"cpu{c}" / "topology" / "thread_siblings_list").read_text()) | {c}
        except (OSError, ValueError):
            groups[c] = frozenset({c})
    return groups


def spread_cores(available: Iterable[int], n: int, siblings: Mapping[int, frozenset[int]] | None = None) -> list[int]:
    """``n`` of the ``available`` cpus for pinned workers: one per physical core first, core 0's last.

    Physical cores are taken in the order of their lowest cpu, the one holding cpu 0 after all
    others; only when there are fewer physical cores than ``n`` do workers share one (second
    threads in the same order). Returns fewer than ``n`` cpus only when fewer are available.
    """
    avail = sorted(set(available))
    groups = siblings if siblings is not None else sibling_groups(avail)
    physical: dict[frozenset[int], list[int]] = {}
    for c in avail:
        physical.setdefault(frozenset(groups.get(c, {c})), []).append(c)
    order = [cs for key, cs in sorted(physical.items(), key=lambda kv: (0 in kv[0], kv[1][0]))]
    picked = [cs[k] for k in range(max(map(len, order), default=0)) for cs in order if k < len(cs)]
    return picked[:n]


def default_cores(n: int) -> list[int]:
    """The cpus this process may use, spread for ``n`` workers (:func:`spread_cores`)."""
    return spread_cores(os.sched_getaffinity(0), n)
