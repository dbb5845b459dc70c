"""The computation graph: an immutable, array-backed DAG of ops.

Assumptions
-----------
* Units are **seconds** (compute) and **bytes** (memory, tensors), as in CONTRACTS §1.
* Op order is the op's *index*; every deterministic tie-break in placelab uses it.
* A compute time is given either for every device kind at once (``compute_any``) or per
  kind (``compute_by_kind``); a kind absent from an op's map means the op cannot run there.
* Edges are dependencies that carry ``bytes``; parallel edges between the same pair of ops
  are merged on construction (their bytes add up: they are distinct tensors).
* An edge may carry a **transfer time** given by its source (``edge_transfer_s``, seconds;
  NaN = not given): crossing between two devices then takes that time on any link, in every
  simulation mode, instead of latency + bytes / bandwidth. DOPPLER's text files and the
  dnn-partitioning workloads give times, not bytes.
* Edges are stored sorted by (producer, consumer); ``edge_rank`` keeps each edge's position
  in the source's own list, the order in which DOPPLER's simulator handles an op's out-edges.
* ``memory_known`` is False for sources that give no memory sizes at all (DOPPLER's files):
  every byte count is 0 and no placement can be OOM.

The adjacency is stored twice in CSR form (successors and predecessors) so simulators,
list schedulers and GNN feature builders read neighbours without Python loops; a networkx
view is built on demand for interop (:meth:`CompGraph.to_networkx`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from engine.errors import GraphError, quote
from engine.limits import check_total

if TYPE_CHECKING:  # pragma: no cover
    import networkx as nx

__all__ = ["MODEL_SEPARATOR", "PHASES", "CompGraph", "model_kind"]

#: Joins a device kind and a device model in a compute column's name: ``gpu@V100``
#: (``docs/reference/costs.md``).
MODEL_SEPARATOR = "@"


def model_kind(kind: str, model: str) -> str:
    """The compute column of ``kind`` devices of model ``model``.

    >>> model_kind("gpu", "V100")
    'gpu@V100'
    """
    return f"{kind}{MODEL_SEPARATOR}{model}"


#: Training-step phases an op may belong to (Mirhoseini et al. 2017, Fig. 8–9 split
#: compute into forward / backward / update).
PHASES: tuple[str, ...] = ("forward", "backward", "update")


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class _CSR:
    ptr: np.ndarray  # int64 [n + 1]
    idx: np.ndarray  # int64 [m] neighbour op index
    edge: np.ndarray  # int64 [m] edge id


def _csr(n: int, key: np.ndarray, other: np.ndarray) -> _CSR:
    order = np.lexsort((other, key))
    counts = np.bincount(key, minlength=n)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return _CSR(_frozen(ptr), _frozen(other[order].astype(np.int64)), _frozen(order.astype(np.int64)))


class CompGraph:
    """An immutable DAG of ops with per-op costs, validated on construction.

    Parameters
    ----------
    name : str
        Graph name (shown in the app, stored with runs).
    op_names : sequence of str
        Unique, non-empty op names; position = op index.
    compute_any : array of float, shape (n,)
        Compute time (s) valid on every device kind, or NaN where the op has a per-kind map.
    compute_by_kind : array of float, shape (n, len(kinds))
        Per-kind compute time (s); NaN where the kind is absent from the op's map.
    kinds : sequence of str
        Device kinds named by per-kind compute maps (e.g. ``("gpu", "cpu")``).
    output_bytes, persistent_bytes, temp_bytes : array of float, shape (n,)
        Output tensor size, weights/optimizer state, scratch memory while running (bytes).
    edge_src, edge_dst : array of int, shape (m,)
        Producer and consumer op indices.
    edge_bytes : array of float, shape (m,)
        Bytes moved along each edge.
    edge_transfer_s : array of float, shape (m,), optional
        Seconds a cross-device transfer along each edge takes, on any link; NaN where the
        source gives none (then latency + bytes / bandwidth of the link).
    memory_known : bool
        False when the source carries no memory sizes (shown by ``graph info``).
    op_types, colocate, pin, phase, scope : sequences of length n, optional
        Op type name; colocation group name or None; pinned device name or None;
        one of :data:`PHASES` or None; layer path (``"encoder/layer1"``) or "".

    Raises
    ------
    GraphError
        On an empty graph, duplicate or empty names, negative / NaN / infinite numbers,
        an op with no runnable kind, an edge out of range, a self-loop or a cycle. The
        message names the offending op or edge.
    """

    def __init__(
        self,
        name: str,
        op_names: Sequence[str],
        *,
        compute_any: np.ndarray,
        compute_by_kind: np.ndarray | None = None,
        kinds: Sequence[str] = (),
        output_bytes: np.ndarray | None = None,
        persistent_bytes: np.ndarray | None = None,
        temp_bytes: np.ndarray | None = None,
        edge_src: np.ndarray | Sequence[int] = (),
        edge_dst: np.ndarray | Sequence[int] = (),
        edge_bytes: np.ndarray | None = None,
        op_types: Sequence[str] | None = None,
        colocate: Sequence[str | None] | None = None,
        pin: Sequence[str | None] | None = None,
        phase: Sequence[str | None] | None = None,
        scope: Sequence[str] | None = None,
        edge_transfer_s: np.ndarray | Sequence[float] | None = None,
        memory_known: bool = True,
    ) -> None:
        self.name = str(name)
        names = list(op_names)
        n = len(names)
        if n == 0:
            raise GraphError(f"graph {quote(self.name)} has no ops")
        self.op_names: tuple[str, ...] = tuple(names)
        self.kinds: tuple[str, ...] = tuple(kinds)

        def col(a, default=0.0) -> np.ndarray:
            if a is None:
                return np.full(n, default, dtype=np.float64)
            return np.asarray(a, dtype=np.float64).reshape(n)

        self.compute_any = col(compute_any, np.nan)
        cbk = (
            np.full((n, len(self.kinds)), np.nan)
            if compute_by_kind is None
            else np.asarray(compute_by_kind, dtype=np.float64).reshape(n, len(self.kinds))
        )
        used = ~np.isnan(cbk).all(axis=0) if cbk.size else np.zeros(len(self.kinds), dtype=bool)
        if not used.all():  # a kind no op has a time for carries no information
            self.kinds = tuple(k for k, u in zip(self.kinds, used, strict=True) if u)
            cbk = cbk[:, used]
        self.compute_by_kind = cbk
        self.output_bytes = col(output_bytes)
        self.persistent_bytes = col(persistent_bytes)
        self.temp_bytes = col(temp_bytes)
        src = np.asarray(edge_src, dtype=np.int64).reshape(-1)
        dst = np.asarray(edge_dst, dtype=np.int64).reshape(-1)
        if src.shape != dst.shape:
            raise GraphError(f"graph {quote(self.name)}: edge source and destination lists differ in length")
        ebytes = (
            self.output_bytes[src] if edge_bytes is None and len(src) and _in_range(src, n)
            else _col_e(edge_bytes, len(src))
        )
        etime = _col_e(edge_transfer_s, len(src), fill=np.nan, what="edge transfer_s")
        self.memory_known = bool(memory_known)
        self.op_types: tuple[str, ...] = tuple(op_types) if op_types is not None else ("",) * n
        self.colocate: tuple[str | None, ...] = tuple(colocate) if colocate is not None else (None,) * n
        self.pin: tuple[str | None, ...] = tuple(pin) if pin is not None else (None,) * n
        self.phase: tuple[str | None, ...] = tuple(phase) if phase is not None else (None,) * n
        self.scope: tuple[str, ...] = tuple(scope) if scope is not None else ("",) * n
        for label, seq in (("op_types", self.op_types), ("colocate", self.colocate),
                           ("pin", self.pin), ("phase", self.phase), ("scope", self.scope)):
            if len(seq) != n:
                raise GraphError(f"graph {quote(self.name)}: {label} has {len(seq)} entries for {n} ops")
        self._validate_ops()
        src, dst, ebytes, etime, rank = self._validate_edges(src, dst, ebytes, etime)
        self.edge_src = _frozen(src)
        self.edge_dst = _frozen(dst)
        self.edge_bytes = _frozen(ebytes)
        self.edge_transfer_s = _frozen(etime)
        self.edge_rank = _frozen(rank)
        for a in (self.compute_any, self.compute_by_kind, self.output_bytes,
                  self.persistent_bytes, self.temp_bytes):
            _frozen(a)
        self.succ = _csr(n, src, dst)
        self.pred = _csr(n, dst, src)
        self._topo = self._check_acyclic()

    # ------------------------------------------------------------------ validation
    def _validate_ops(self) -> None:
        names = self.op_names
        index = dict(zip(names, range(len(names)), strict=True))
        if len(index) != len(names) or set(map(type, names)) != {str} or "" in index:
            index = {}
            for i, nm in enumerate(names):
                if not isinstance(nm, str) or not nm:
                    raise GraphError(f"graph {quote(self.name)}: op #{i} has an empty or non-string name")
                if nm in index:
                    raise GraphError(f"graph {quote(self.name)}: duplicate op name {quote(nm)} (ops #{index[nm]} and "
                                     f"#{i})")
                index[nm] = i
        self.index: dict[str, int] = index
        for label, arr in (("compute", self.compute_any), ("output_bytes", self.output_bytes),
                           ("persistent_bytes", self.persistent_bytes), ("temp_bytes", self.temp_bytes)):
            bad = ~(np.isfinite(arr) & (arr >= 0))
            if label == "compute":
                bad &= ~np.isnan(arr)
            if bad.any():
                i = int(np.argmax(bad))
                raise GraphError(f"op {quote(names[i])}: {label} must be a finite number >= 0, got "
                                 f"{quote(float(arr[i]))}")
        cbk = self.compute_by_kind
        bad = ~np.isnan(cbk) & ~(np.isfinite(cbk) & (cbk >= 0))
        if bad.any():
            i, k = (int(x) for x in np.argwhere(bad)[0])
            raise GraphError(f"op {quote(names[i])}: compute on {quote(self.kinds[k])} must be a finite number >= 0, "
                             f"got {quote(float(cbk[i, k]))}")
        runnable = ~np.isnan(self.compute_any)
        if cbk.size:
            runnable |= (~np.isnan(cbk)).any(axis=1)
        if not runnable.all():
            i = int(np.argmin(runnable))
            raise GraphError(f"op {quote(names[i])} has no compute time for any device kind")
        check_total(np.concatenate([self.compute_any, cbk.ravel()]), f"graph {quote(self.name)}: the ops' compute",
                    GraphError)
        check_total(np.concatenate([self.output_bytes, self.persistent_bytes, self.temp_bytes]),
                    f"graph {quote(self.name)}: the ops' bytes", GraphError)
        for i, ph in enumerate(self.phase):
            if ph is not None and ph not in PHASES:
                raise GraphError(f"op {quote(names[i])}: phase must be one of {', '.join(PHASES)}, got {quote(ph)}")

    def _validate_edges(self, src, dst, ebytes, etime):
        n = len(self.op_names)
        if len(src) == 0:
            return src, dst, ebytes, etime, np.zeros(0, dtype=np.int64)
        out = (src < 0) | (src >= n) | (dst < 0) | (dst >= n)
        if out.any():
            e = int(np.argmax(out))
            raise GraphError(f"graph {quote(self.name)}: edge #{e} ({src[e]} -> {dst[e]}) refers to an op index "
                             "out of range")
        loops = src == dst
        if loops.any():
            e = int(np.argmax(loops))
            raise GraphError(f"edge {quote(self.op_names[src[e]])} -> {quote(self.op_names[dst[e]])} is a self-loop")
        bad = ~(np.isfinite(ebytes) & (ebytes >= 0))
        if bad.any():
            e = int(np.argmax(bad))
            raise GraphError(f"edge {quote(self.op_names[src[e]])} -> {quote(self.op_names[dst[e]])}: bytes must be a "
                             f"finite number >= 0, got {quote(float(ebytes[e]))}")
        bad = ~np.isnan(etime) & ~(np.isfinite(etime) & (etime >= 0))
        if bad.any():
            e = int(np.argmax(bad))
            raise GraphError(f"edge {quote(self.op_names[src[e]])} -> {quote(self.op_names[dst[e]])}: transfer_s "
                             f"must be "
                             f"a finite number >= 0, got {quote(float(etime[e]))}")
        check_total(ebytes, f"graph {quote(self.name)}: the edges' bytes", GraphError)
        check_total(np.nan_to_num(etime), f"graph {quote(self.name)}: the edges' transfer times", GraphError)
        key = src * n + dst
        uniq, first, inv = np.unique(key, return_index=True, return_inverse=True)
        if len(uniq) != len(key):  # merge parallel edges: distinct tensors, bytes (and times) add up
            ebytes = np.bincount(inv, weights=ebytes, minlength=len(uniq))
            given = ~np.isnan(etime)
            n_given = np.bincount(inv, weights=given, minlength=len(uniq))
            n_all = np.bincount(inv, minlength=len(uniq))
            mixed = (n_given > 0) & (n_given < n_all)
            if mixed.any():
                u = int(np.argmax(mixed))
                raise GraphError(f"parallel edges {quote(self.op_names[uniq[u] // n])} -> "
                                 f"{quote(self.op_names[uniq[u] % n])} "
                                 "mix edges with and without transfer_s")
            etime = np.where(n_given > 0, np.bincount(inv, weights=np.nan_to_num(etime), minlength=len(uniq)),
                             np.nan)
        else:
            ebytes = ebytes[first]
            etime = etime[first]
        # rank of each merged edge's first appearance in the source's list
        rank = np.argsort(np.argsort(first, kind="stable"), kind="stable").astype(np.int64)
        return ((uniq // n).astype(np.int64), (uniq % n).astype(np.int64), ebytes.astype(np.float64),
                etime.astype(np.float64), rank)

    def _check_acyclic(self) -> np.ndarray:
        from engine.graph import _kernels as _dagkernels

        order = _dagkernels.topo_order(len(self.op_names), self.succ.ptr, self.succ.idx, self.pred.ptr)
        if len(order) < len(self.op_names):
            cyc = _dagkernels.find_cycle(len(self.op_names), self.succ.ptr, self.succ.idx, order)
            path = " -> ".join(f"{quote(self.op_names[i])}" for i in cyc)
            raise GraphError(f"graph {quote(self.name)} has a cycle: {path}")
        return _frozen(order)

    # ------------------------------------------------------------------ basic views
    @property
    def num_ops(self) -> int:
        return len(self.op_names)

    @property
    def num_edges(self) -> int:
        return len(self.edge_src)

    def __len__(self) -> int:
        return self.num_ops

    def __repr__(self) -> str:
        return f"CompGraph({self.name!r}, ops={self.num_ops}, edges={self.num_edges})"

    @property
    def topo_order(self) -> np.ndarray:
        """Op indices in a topological order (Kahn's algorithm, FIFO seeded with the sources in index order)."""
        return self._topo

    def successors(self, i: int) -> np.ndarray:
        return self.succ.idx[self.succ.ptr[i]:self.succ.ptr[i + 1]]

    def predecessors(self, i: int) -> np.ndarray:
        return self.pred.idx[self.pred.ptr[i]:self.pred.ptr[i + 1]]

    def compute_for_kind(self, kind: str) -> np.ndarray:
        """Compute time (s) of every op on a device of ``kind``; NaN where it cannot run."""
        if kind in self.kinds:
            by = self.compute_by_kind[:, self.kinds.index(kind)]
            return np.where(np.isnan(self.compute_any), by, self.compute_any)
        return self.compute_any.copy()

    def column_for(self, kind: str, model: str | None = None) -> str:
        """The compute column a ``kind`` device of model ``model`` reads: ``kind@model`` where the graph
        has it (a roofline-costed graph carries one per GPU model, ``engine/costmodel.py``), else ``kind``
        (``docs/reference/costs.md``)."""
        column = model_kind(kind, model) if model else None
        return column if column in self.kinds else kind

    def compute_on(self, kind: str, model: str | None = None) -> np.ndarray:
        """Compute time (s) of every op on a ``kind`` device of model ``model`` (:meth:`column_for`)."""
        return self.compute_for_kind(self.column_for(kind, model))

    @property
    def _base_columns(self) -> list[int]:
        """Indices of the per-kind columns that are not per-model columns (``gpu@V100``)."""
        return [j for j, k in enumerate(self.kinds) if MODEL_SEPARATOR not in k]

    @property
    def base_kinds(self) -> tuple[str, ...]:
        """The device kinds of the per-kind maps, without the per-model columns (``gpu@V100``)."""
        return tuple(self.kinds[j] for j in self._base_columns)

    def models(self, kind: str) -> tuple[str, ...]:
        """The device models this graph carries a ``kind@model`` column for."""
        prefix = model_kind(kind, "")
        return tuple(k[len(prefix):] for k in self.kinds if k.startswith(prefix))

    def min_compute(self) -> np.ndarray:
        """Each op's compute time on its fastest kind (s), ignoring device speed factors and the
        per-model columns."""
        stacked = np.column_stack([self.compute_any, self.compute_by_kind[:, self._base_columns]])
        return np.nanmin(stacked, axis=1)

    @property
    def has_transfer_times(self) -> bool:
        """True when some edge carries a transfer time given by the source."""
        return bool(self.num_edges) and not bool(np.isnan(self.edge_transfer_s).all())

    @cached_property
    def colocation_ids(self) -> np.ndarray:
        """Int group id per op (-1 = no colocation group), numbered by first appearance."""
        ids = np.full(self.num_ops, -1, dtype=np.int64)
        seen: dict[str, int] = {}
        for i, g in enumerate(self.colocate):
            if g is not None:
                ids[i] = seen.setdefault(g, len(seen))
        return _frozen(ids)

    def without_models(self) -> CompGraph:
        """This graph without its per-model columns (``gpu@V100``): the graph, and the content hash, that
        an import made before per-model costs gave (``docs/reference/costs.md``)."""
        base = self._base_columns
        if len(base) == len(self.kinds):
            return self
        return CompGraph(
            self.name, self.op_names, compute_any=self.compute_any, compute_by_kind=self.compute_by_kind[:, base],
            kinds=self.base_kinds, output_bytes=self.output_bytes, persistent_bytes=self.persistent_bytes,
            temp_bytes=self.temp_bytes, edge_src=self.edge_src, edge_dst=self.edge_dst, edge_bytes=self.edge_bytes,
            op_types=self.op_types, colocate=self.colocate, pin=self.pin, phase=self.phase, scope=self.scope,
            edge_transfer_s=self.edge_transfer_s if self.has_transfer_times else None,
            memory_known=self.memory_known)

    @cached_property
    def content_hash(self) -> str:
        """SHA-256 (first 16 hex digits) of the graph's structure and numbers."""
        h = hashlib.sha256()
        h.update("\x00".join(self.op_names).encode())
        h.update("\x00".join(self.kinds).encode())
        for a in (self.compute_any, self.compute_by_kind, self.output_bytes, self.persistent_bytes,
                  self.temp_bytes, self.edge_src, self.edge_dst, self.edge_bytes):
            h.update(np.ascontiguousarray(a).tobytes())
        for seq in (self.op_types, self.colocate, self.pin, self.phase, self.scope):
            h.update("\x00".join("" if s is None else s for s in seq).encode())
        if self.has_transfer_times:  # only then: hashes of graphs without them stay as they were
            h.update(b"transfer_s")
            h.update(np.ascontiguousarray(self.edge_transfer_s).tobytes())
            h.update(np.ascontiguousarray(self.edge_rank).tobytes())
        if not self.memory_known:
            h.update(b"memory unknown")
        return h.hexdigest()[:16]

    def to_networkx(self) -> nx.DiGraph:
        """A networkx view: nodes are op names with their attributes, edges carry ``bytes``."""
        import networkx as nx

        g = nx.DiGraph(name=self.name)
        for i, nm in enumerate(self.op_names):
            g.add_node(nm, index=i, type=self.op_types[i], compute=self.op_compute(i),
                       output_bytes=float(self.output_bytes[i]),
                       persistent_bytes=float(self.persistent_bytes[i]),
                       temp_bytes=float(self.temp_bytes[i]), colocate=self.colocate[i],
                       device=self.pin[i], phase=self.phase[i], scope=self.scope[i])
        names = self.op_names
        g.add_edges_from((names[s], names[d], {"bytes": float(b)} if t != t else {"bytes": float(b), "transfer_s": t})
                         for s, d, b, t in zip(self.edge_src.tolist(), self.edge_dst.tolist(),
                                               self.edge_bytes.tolist(), self.edge_transfer_s.tolist(), strict=True))
        return g

    def op_compute(self, i: int) -> float | dict[str, float]:
        """The op's compute as written in a graph file: one number or a per-kind map."""
        if not np.isnan(self.compute_any[i]):
            return float(self.compute_any[i])
        row = self.compute_by_kind[i]
        return {k: float(row[j]) for j, k in enumerate(self.kinds) if not np.isnan(row[j])}


def _in_range(idx: np.ndarray, n: int) -> bool:
    return bool(len(idx) == 0 or (idx.min() >= 0 and idx.max() < n))


def _col_e(a, m: int, fill: float = 0.0, what: str = "edge bytes") -> np.ndarray:
    """A per-edge column as float64 [m]; ``fill`` when ``a`` is None (out-of-range edges are reported later)."""
    if a is None:
        return np.full(m, fill, dtype=np.float64)
    arr = np.asarray(a, dtype=np.float64).reshape(-1)
    if len(arr) != m:
        raise GraphError(f"{what} has {len(arr)} entries for {m} edges")
    return arr
