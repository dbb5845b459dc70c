"""Graph-partitioning placers: METIS, KaHIP, Scotch and Mirhoseini's MinCut.

Placeto §3.2 and Mirhoseini et al. 2017 §4.2 use a static mapper as a baseline: it takes
each op's compute cost and each edge's data volume and returns a placement that minimizes
communication "while keeping the load balanced across devices within a specified
tolerance". Every placer here follows the same pipeline:

1. **Units.** Colocation groups are contracted (:class:`~policies.base.PlacementUnits`).
   A unit's vertex weight is its *work*: its compute time on a speed-1 device of the best
   kind among the devices partitioned over (``min cost·speed``); an edge's weight is the
   bytes between two units, both directions summed (the cut is symmetric). Both are scaled
   to integers (vertex weights sum to ~10⁷, the heaviest edge to ≤ 10⁴, at least 1 each).
2. **Devices.** ``k`` = the devices at least one unit can run on (``mincut``: the GPUs
   only, Mirhoseini §4.2). Each device's target share of the work is its *throughput*
   (work per second it achieves on the units it can run), so a device twice as fast gets
   twice the load; on homogeneous clusters the shares are equal.
3. **Partition** with ``imbalance`` = ε: a part may carry up to (1 + ε) × its share.
4. **Kinds and pins.** Partitioners know neither, so a unit whose part's device cannot
   run it (wrong kind, or pinned elsewhere) moves to its cheapest feasible device (lowest
   compute time there, ties to the lower device index). For METIS and KaHIP, whose part
   numbers are arbitrary labels, parts are first matched to devices so that the least
   work has to move (only when all shares are equal; Scotch's parts are terminals of the
   target architecture and keep their device).
5. **Memory** (``memory_aware=True``): the placement is simulated; while a device is OOM,
   units on it move, largest memory footprint (persistent + output + temp bytes) first,
   to the device with the most free memory that can run them, until the estimated excess
   is gone; then it is simulated again (at most ``num_units`` rounds). A device that stays
   OOM is left so (the simulator reports it).

Seeds go to METIS (``options.seed``), KaHIP (``seed``) and Scotch (a context in Scotch's
deterministic mode, seeded and reset): the same seed gives the same placement. Scotch's
result may not depend on the seed at all.

Scotch deviation: on a non-uniform architecture (NVLink groups) Scotch's default strategy
does not always put the heaviest part-to-part traffic on the cheapest links, so its parts
are then relabelled among equal devices to the permutation with the lowest bytes × link
cost (exhaustive up to 8 devices; Scotch's own labels are kept on ties).
"""

from __future__ import annotations

import contextlib
import io
import itertools
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from engine.cluster import Cluster
from engine.errors import PlacementError, SpecError, quote
from engine.graph.compgraph import CompGraph
from engine.placement import Placement
from policies.base import PlacementUnits, Progress, placer, relieve_memory

__all__ = ["Kahip", "Metis", "MinCut", "Scotch", "UnitGraph", "unit_graph"]

_VERTEX_SCALE = 1e7  # integer vertex weights sum to about this
_EDGE_MAX = 1e4  # the heaviest integer edge weight
_EDGE_SUM = 1e8  # cap on the sum of integer edge weights (32-bit safe)


@dataclass(frozen=True)
class UnitGraph:
    """The undirected, weighted unit graph handed to a partitioner (CSR, both directions).

    ``work`` is each unit's compute time (s) on a speed-1 device of its best kind; ``vweight``
    and ``eweight`` are the integer-scaled vertex (work) and edge (bytes) weights.
    """

    work: np.ndarray
    vweight: np.ndarray
    xadj: np.ndarray
    adjncy: np.ndarray
    eweight: np.ndarray
    edge_bytes: np.ndarray


def unit_graph(units: PlacementUnits, devices: np.ndarray) -> UnitGraph:
    """Contract ``units.graph`` into its units, weighted for partitioning over ``devices``."""
    g, speed = units.graph, units.cluster.speed
    work_on = units.cost * speed[None, :]  # compute time on a speed-1 device of each kind
    work = np.where(units.feasible[:, devices], work_on[:, devices], np.inf).min(axis=1)
    fallback = np.where(units.feasible, work_on, np.inf).min(axis=1)  # units no partition device runs
    work = np.where(np.isfinite(work), work, fallback)
    total = float(work.sum())
    vweight = np.maximum(1, np.round(work / total * _VERTEX_SCALE)).astype(np.int64) if total > 0 \
        else np.ones(units.num_units, dtype=np.int64)
    n = units.num_units
    a, b = units.op_unit[g.edge_src], units.op_unit[g.edge_dst]
    keep = a != b
    lo, hi = np.minimum(a, b)[keep], np.maximum(a, b)[keep]
    pair, inv = np.unique(lo * n + hi, return_inverse=True)
    pbytes = np.bincount(inv, weights=g.edge_bytes[keep], minlength=len(pair))
    top = float(pbytes.max()) if len(pbytes) else 0.0
    scale = min(_EDGE_MAX / top, _EDGE_SUM / (2 * float(pbytes.sum()))) if top > 0 else 0.0
    pw = np.maximum(1, np.round(pbytes * scale)).astype(np.int64)
    src = np.concatenate([pair // n, pair % n])
    dst = np.concatenate([pair % n, pair // n])
    w2, b2 = np.concatenate([pw, pw]), np.concatenate([pbytes, pbytes])
    order = np.lexsort((dst, src))
    xadj = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=xadj[1:])
    return UnitGraph(work, vweight, xadj, dst[order].astype(np.int64), w2[order], b2[order])


def _throughput(units: PlacementUnits, work: np.ndarray, devices: np.ndarray) -> np.ndarray:
    """Work per second each device achieves on the units it can run (its target share)."""
    out = np.empty(len(devices))
    for j, d in enumerate(devices.tolist()):
        ok = units.feasible[:, d]
        t = float(units.cost[ok, d].sum())
        out[j] = float(work[ok].sum()) / t if t > 0 else units.cluster.speed[d]
    return out


def _cheapest_feasible(units: PlacementUnits, unit_devices: np.ndarray) -> np.ndarray:
    """Move every unit its device cannot run to its cheapest feasible device."""
    ud = unit_devices.copy()
    bad = ~units.feasible[np.arange(units.num_units), ud]
    ud[bad] = np.argmin(units.cost[bad], axis=1)  # cost is inf where infeasible
    return ud


def _match_parts(units: PlacementUnits, work: np.ndarray, parts: np.ndarray, devices: np.ndarray) -> np.ndarray:
    """Relabel interchangeable parts so that the least work has to move for kinds and pins."""
    from scipy.optimize import linear_sum_assignment

    k = len(devices)
    w = np.maximum(work, 1e-12)  # zero-work units still count: a pin is a pin
    moved = np.zeros((k, k))
    for j, d in enumerate(devices.tolist()):
        moved[:, j] = np.bincount(parts, weights=w * ~units.feasible[:, d], minlength=k)
    rows, cols = linear_sum_assignment(moved)
    relabel = np.empty(k, dtype=np.int64)
    relabel[rows] = cols
    return relabel[parts]


class _Partitioner:
    """Shared pipeline (module docstring, steps 1–5); subclasses provide :meth:`_partition`."""

    name = ""
    gpus_only = False
    interchangeable_parts = True

    def __init__(self, imbalance: float = 0.05, memory_aware: bool = True) -> None:
        if not (0 <= imbalance < 10):
            raise SpecError(f"placer {quote(self.name)}: imbalance must be in [0, 10), got {quote(imbalance)}")
        self.imbalance = float(imbalance)
        self.memory_aware = bool(memory_aware)

    def _devices(self, units: PlacementUnits, cluster: Cluster) -> np.ndarray:
        usable = units.feasible.any(axis=0)
        if self.gpus_only:
            usable &= np.array([k == "gpu" for k in cluster.kinds])
            if not usable.any():
                raise PlacementError(f"placer {quote(self.name)} partitions over GPUs, and cluster "
                                     f"{quote(cluster.name)} has none that can run this graph")
        return np.flatnonzero(usable)

    def place(self, graph: CompGraph, cluster: Cluster, *, seed: int = 0, budget: int | None = None,
              progress: Progress | None = None) -> Placement:
        units = PlacementUnits(graph, cluster)
        devices = self._devices(units, cluster)
        devices = devices[: max(1, min(len(devices), units.num_units))]  # no more parts than units
        ug = unit_graph(units, devices)
        share = _throughput(units, ug.work, devices)
        share = share / share.sum()
        if progress:
            progress(0, 1, f"partitioning {units.num_units} units over {len(devices)} devices")
        if len(devices) == 1:
            parts = np.zeros(units.num_units, dtype=np.int64)
        else:
            parts = np.asarray(self._partition(ug, share, cluster, devices, seed), dtype=np.int64)
            if self.interchangeable_parts and np.allclose(share, share[0]):
                parts = _match_parts(units, ug.work, parts, devices)
        ud = _cheapest_feasible(units, devices[parts])
        if self.memory_aware:
            ud = relieve_memory(graph, cluster, units, ud)
        if progress:
            progress(1, 1, "done")
        return units.to_placement(ud)

    def _partition(self, ug: UnitGraph, share: np.ndarray, cluster: Cluster, devices: np.ndarray,
                   seed: int) -> np.ndarray:
        raise NotImplementedError


@placer("metis", "METIS k-way partition of the unit graph: balanced compute, minimum bytes cut",
          family="partitioner")
class Metis(_Partitioner):
    """METIS (Karypis & Kumar 1998) via pymetis; ``ufactor`` = 1000·imbalance, ``tpwgts`` = shares."""


    def _partition(self, ug, share, cluster, devices, seed):
        import pymetis

        opts = pymetis.Options()
        opts.seed = int(seed)
        opts.ufactor = max(1, round(1000 * self.imbalance))
        tpwgts = None if np.allclose(share, share[0]) else (share / share.sum()).tolist()
        res = pymetis.part_graph(len(devices), pymetis.CSRAdjacency(ug.xadj, ug.adjncy),
                                 vweights=ug.vweight, eweights=ug.eweight if len(ug.adjncy) else None,
                                 tpwgts=tpwgts, options=opts)
        return np.asarray(res.vertex_part)


def _block_counts(share: np.ndarray, max_blocks: int) -> np.ndarray:
    """Integer number of equal blocks per device, proportional to its share (at least 1)."""
    if np.allclose(share, share[0]):
        return np.ones(len(share), dtype=np.int64)
    return np.maximum(1, np.round(share / share.max() * max_blocks / len(share) * 2)).astype(np.int64)


@placer("kahip", "KaHIP (KaFFPa) k-way partition of the unit graph: balanced compute, minimum bytes cut",
          family="partitioner")
class Kahip(_Partitioner):
    """KaHIP's KaFFPa (Sanders & Schulz 2013).

    KaFFPa balances equal blocks only; on devices with unequal shares the graph is cut into
    a whole number of equal blocks per device (proportional to its share, at most ~2 per
    device on the fastest) and each device takes its blocks — a documented approximation:
    the merged blocks are not chosen to be adjacent.
    """

    _MODES: ClassVar[dict[str, str]] = {"fast": "FAST", "eco": "ECO", "strong": "STRONG"}

    def __init__(self, imbalance: float = 0.05, memory_aware: bool = True, mode: str = "eco") -> None:
        super().__init__(imbalance, memory_aware)
        if mode not in self._MODES:
            raise SpecError(f"placer 'kahip': mode must be one of {', '.join(self._MODES)}, got {quote(mode)}")
        self.mode = mode

    def _partition(self, ug, share, cluster, devices, seed):
        import kahip

        counts = _block_counts(share, 2 * len(share))
        blocks = int(min(counts.sum(), len(ug.vweight)))
        _, parts = kahip.kaffpa(ug.vweight.tolist(), ug.xadj.tolist(), ug.eweight.tolist(), ug.adjncy.tolist(),
                                blocks, self.imbalance, True, int(seed), getattr(kahip, self._MODES[self.mode]))
        owner = np.repeat(np.arange(len(devices)), counts)[:blocks]
        return owner[np.asarray(parts, dtype=np.int64)]


# scotch.h: SCOTCH_OPTIONNUMDETERMINISTIC — same result for the same seed, whatever the threads
_SCOTCH_OPTION_DETERMINISTIC = 0


def _scotch():
    with contextlib.redirect_stderr(io.StringIO()):  # pyscotch announces its library on stderr
        import pyscotch
        from pyscotch import libscotch
    return pyscotch, libscotch


def link_costs(cluster: Cluster, devices: np.ndarray) -> np.ndarray:
    """Integer link costs between ``devices``: 10 × (fastest bandwidth / this pair's bandwidth)."""
    bw = cluster.bandwidth[np.ix_(devices, devices)]
    off = ~np.eye(len(devices), dtype=bool)
    return np.maximum(1, np.round(10 * bw[off].max() / np.where(off, bw, 1.0))).astype(np.int64)


def _best_relabelling(ug: UnitGraph, parts: np.ndarray, cost: np.ndarray, max_devices: int = 8) -> np.ndarray:
    """Relabel parts among equal devices to minimize bytes × link cost (exhaustive up to 8 devices).

    Scotch's default strategy does not always put the heaviest part-to-part traffic on the
    cheapest links of a non-uniform architecture; since equal devices are interchangeable,
    the permutation with the lowest total ``bytes × cost`` is taken (Scotch's own labels on ties).
    """
    k = len(cost)
    if k > max_devices or np.all(cost[~np.eye(k, dtype=bool)] == cost[0, 1]):
        return parts
    src = np.repeat(np.arange(len(ug.xadj) - 1), np.diff(ug.xadj))
    traffic = np.bincount(parts[src] * k + parts[ug.adjncy], weights=ug.edge_bytes, minlength=k * k).reshape(k, k)
    perms = np.array(list(itertools.permutations(range(k))), dtype=np.int64)
    p, q = np.nonzero(traffic)
    total = (traffic[p, q][None, :] * cost[perms[:, p], perms[:, q]]).sum(axis=1)
    best = int(np.argmin(total))
    return perms[best][parts] if total[best] < total[0] else parts


def _first_appearance_labels(parts: np.ndarray) -> np.ndarray:
    """Relabel parts in the order their first unit appears (part of unit 0 → 0, the next new part → 1, ...).

    On a cluster of identical devices and links every labelling is equally good, and Scotch's
    labels were seen to differ between two identical calls in one process (under CPU load);
    this makes the result depend on the partition only.
    """
    _, first = np.unique(parts, return_index=True)
    order = np.argsort(first, kind="stable")
    label = np.empty(int(parts.max()) + 1, dtype=np.int64)
    label[np.unique(parts)[order]] = np.arange(len(order))
    return label[parts]


@placer("scotch", "Scotch static mapping onto the cluster as a target architecture (Mirhoseini §4.2, "
          "Placeto §3.2)", family="partitioner")
class Scotch(_Partitioner):
    """Scotch (Pellegrini 2009) mapping onto the cluster's architecture graph.

    The target architecture (Mirhoseini §2: "vertices represent hardware resources ...
    edges represent the communication paths") is the complete graph of the devices, vertex
    weights = their throughput shares (×100, integers), edge weights = :func:`link_costs`;
    it is built with ``SCOTCH_archBuild2`` (a decomposition-defined "deco 2" architecture
    whose distances are shortest paths over those costs). Default mapping strategy
    (Mirhoseini: "we rely on the software's default strategies") with ``imbalance`` as its
    balance ratio.
    """

    interchangeable_parts = False

    def _partition(self, ug, share, cluster, devices, seed):
        from ctypes import byref

        pyscotch, lib = _scotch()
        k = len(devices)
        cost = link_costs(cluster, devices)
        ti, tj = np.nonzero(~np.eye(k, dtype=bool))
        target = pyscotch.Graph()
        target.build(np.arange(k + 1) * (k - 1), tj.astype(np.int64),
                     velotab=np.maximum(1, np.round(share / share.max() * 100)).astype(np.int64),
                     edlotab=cost[ti, tj])
        arch = pyscotch.Architecture()
        ret = lib.SCOTCH_archBuild2(byref(arch._arch), byref(target._graph), lib.SCOTCH_Num(0), None)
        if ret != 0:
            raise PlacementError(f"Scotch could not build the target architecture of cluster {quote(cluster.name)}")
        source = pyscotch.Graph()
        source.build(ug.xadj, ug.adjncy, velotab=ug.vweight, edlotab=ug.eweight if len(ug.adjncy) else None)
        strategy = pyscotch.Strategy()
        strategy.request_mapping(pyscotch.StrategyFlags.DEFAULT, balance=self.imbalance)
        context = pyscotch.Context()
        context.option_set(_SCOTCH_OPTION_DETERMINISTIC, 1)
        context.random_seed(int(seed))
        context.random_reset()
        pyscotch.random_seed(int(seed))  # the global generator too, for anything outside the context
        pyscotch.random_reset()
        bound = context.bind_graph(source)
        try:
            parts = np.asarray(bound.map(arch, strategy), dtype=np.int64)
        finally:
            for obj in (bound, context, source, arch, target):
                obj.close()
        if not np.allclose(share, share[0]):
            return parts
        if np.all(cost[~np.eye(k, dtype=bool)] == cost[0, 1]):
            return _first_appearance_labels(parts)
        return _best_relabelling(ug, parts, cost)


@placer("mincut", "Scotch over the GPUs only; ops without a GPU kernel on the CPU (Mirhoseini §4.2 MinCut)",
          family="partitioner")
class MinCut(Scotch):
    """Mirhoseini §4.2 "MinCut": "the same Scotch optimizer, but eliminate the CPU from the
    list of available devices"; ops with no GPU implementation run on the CPU (step 4)."""

    gpus_only = True
