"""Read and write the ``placelab.graph/1`` JSON format (CONTRACTS §1).

Parsing is one pass over the ops that collects columns, followed by vectorised checks in
:class:`~engine.graph.compgraph.CompGraph`; a valid 10^6-op file loads in a few seconds. Every
rejection is one :class:`~engine.errors.GraphError` sentence that names the op or edge.
"""

from __future__ import annotations

import math
import os
from operator import itemgetter
from typing import Any

import numpy as np

from engine.errors import GraphError, quote
from engine.graph.compgraph import CompGraph
from engine.jsonio import atomic_write_text, dumps, read_json_file

__all__ = ["GRAPH_SCHEMA", "graph_from_dict", "graph_to_dict", "load_graph_json", "save_graph"]

GRAPH_SCHEMA = "placelab.graph/1"

_NUMBER = (int, float)
_OPTIONAL_NUMBERS = ("output_bytes", "persistent_bytes", "temp_bytes")
_OPTIONAL_STRINGS = ("type", "colocate", "device", "phase", "scope")


def _is_number(x: Any) -> bool:
    return isinstance(x, _NUMBER) and not isinstance(x, bool)


def _float(x: int | float) -> float:
    """A JSON number as a float; an integer beyond float range becomes inf (rejected as not finite)."""
    try:
        return float(x)
    except OverflowError:
        return math.inf


def _op_label(op: Any, i: int) -> str:
    if isinstance(op, dict) and isinstance(op.get("name"), str) and op["name"]:
        return f"op {quote(op['name'])}"
    return f"op #{i}"


def graph_from_dict(doc: Any, *, source: str = "graph") -> CompGraph:
    """Build a :class:`CompGraph` from a parsed ``placelab.graph/1`` document.

    Raises
    ------
    GraphError
        For a wrong or missing schema, missing required fields, wrong types, and every
        check of :class:`CompGraph` (cycles, duplicates, negative / NaN numbers, ...).
    """
    if not isinstance(doc, dict):
        raise GraphError(f"{source}: expected a JSON object with schema '{GRAPH_SCHEMA}'")
    schema = doc.get("schema")
    if schema != GRAPH_SCHEMA:
        got = "no 'schema' field" if schema is None else f"schema {schema!r}"
        raise GraphError(f"{source}: expected schema '{GRAPH_SCHEMA}', found {got}")
    ops = doc.get("ops")
    if not isinstance(ops, list):
        raise GraphError(f"{source}: 'ops' must be a list of ops")
    if not ops:
        raise GraphError(f"{source}: graph has no ops")
    edges = doc.get("edges", [])
    if not isinstance(edges, list):
        raise GraphError(f"{source}: 'edges' must be a list")
    name = doc.get("name", source)
    if not isinstance(name, str):
        raise GraphError(f"{source}: 'name' must be a string")

    try:
        cols = _columns_fast(ops, edges)
    except (OverflowError, ValueError, TypeError):  # e.g. an integer too large for a float
        cols = None
    if cols is None:  # something is off: the item-by-item pass finds it and names it
        cols = _columns_checked(ops, edges, source)
    names, compute_any, kind_cols, nums, strs, src, dst, ebytes, etime = cols
    memory_known = doc.get("memory_known", True)
    if not isinstance(memory_known, bool):
        raise GraphError(f"{source}: 'memory_known' must be true or false")
    n = len(names)
    kinds = tuple(kind_cols)
    cbk = np.column_stack([kind_cols[k] for k in kinds]) if kinds else np.empty((n, 0))
    return CompGraph(
        name, names, compute_any=compute_any, compute_by_kind=cbk, kinds=kinds,
        output_bytes=nums["output_bytes"], persistent_bytes=nums["persistent_bytes"],
        temp_bytes=nums["temp_bytes"], edge_src=src, edge_dst=dst, edge_bytes=ebytes,
        op_types=[t or "" for t in strs["type"]], colocate=strs["colocate"], pin=strs["device"],
        phase=strs["phase"], scope=[s or "" for s in strs["scope"]], edge_transfer_s=etime,
        memory_known=memory_known,
    )


def _columns_fast(ops: list, edges: list):
    """Columns of a well-formed document at C speed (list comprehensions, type sets, numpy).

    Returns None as soon as anything is unusual; the caller then runs
    :func:`_columns_checked`, which reports the first bad item by name. Numeric ranges
    (negative, NaN) are checked by :class:`CompGraph` either way.
    """
    if set(map(type, ops)) != {dict}:
        return None
    known = {"name", "compute", *_OPTIONAL_NUMBERS, *_OPTIONAL_STRINGS}
    lengths = set(map(len, ops))
    # the common minimal file has exactly name + compute in every op: no need to scan keys
    present = {"name", "compute"} if lengths == {2} else set().union(*map(dict.keys, ops))
    if not present <= known:
        return None
    n = len(ops)
    try:  # itemgetter over the list runs in C; a missing key sends us to the checked pass
        names = list(map(itemgetter("name"), ops))
        compute = list(map(itemgetter("compute"), ops))
    except KeyError:
        return None
    if set(map(type, names)) != {str} or "" in names:
        return None
    ctypes = set(map(type, compute))
    if not ctypes <= {int, float, dict}:
        return None
    kind_cols: dict[str, np.ndarray] = {}
    if dict in ctypes:
        compute_any = np.array([c if type(c) is not dict else np.nan for c in compute], dtype=np.float64)
        for i in np.flatnonzero(np.isnan(compute_any)).tolist():
            c = compute[i]
            if type(c) is not dict:
                return None  # a literal NaN scalar
            if not c or not set(map(type, c.values())) <= {int, float} or any(v != v for v in c.values()):
                return None  # empty map, a non-number, or a NaN (which would read as "cannot run there")
            for kind, t in c.items():
                colk = kind_cols.get(kind)
                if colk is None:
                    colk = kind_cols[kind] = np.full(n, np.nan)
                colk[i] = t
    else:
        compute_any = np.asarray(compute, dtype=np.float64)
        if np.isnan(compute_any).any():
            return None
    nums = {}
    for f in _OPTIONAL_NUMBERS:
        if f not in present:
            nums[f] = np.zeros(n)
            continue
        vals = [op.get(f) for op in ops]
        vtypes = set(map(type, vals))
        if not vtypes <= {int, float, type(None)}:
            return None
        nums[f] = np.asarray([0 if v is None else v for v in vals] if type(None) in vtypes else vals,
                             dtype=np.float64)
    strs: dict[str, list] = {}
    for f in _OPTIONAL_STRINGS:
        if f not in present:
            strs[f] = [None] * n
            continue
        vals = [op.get(f) for op in ops]
        if not set(map(type, vals)) <= {str, type(None)}:
            return None
        strs[f] = vals
    m = len(edges)
    if m and set(map(type, edges)) != {dict}:
        return None
    index = dict(zip(names, range(n), strict=True))
    try:
        srcs = list(map(itemgetter("src"), edges))
        dsts = list(map(itemgetter("dst"), edges))
    except KeyError:
        return None
    if m and not (set(map(type, srcs)) == {str} and set(map(type, dsts)) == {str}):
        return None
    try:
        src = np.fromiter(map(index.__getitem__, srcs), dtype=np.int64, count=m)
        dst = np.fromiter(map(index.__getitem__, dsts), dtype=np.int64, count=m)
    except KeyError:  # an unknown op: the checked pass names it
        return None
    raw = [e.get("bytes") for e in edges]
    btypes = set(map(type, raw))
    if not btypes <= {int, float, type(None)}:
        return None
    if type(None) in btypes:
        ebytes = np.array([np.nan if b is None else b for b in raw], dtype=np.float64)
        missing = np.isnan(ebytes) & np.array([b is None for b in raw], dtype=bool)
        ebytes[missing] = nums["output_bytes"][src[missing]]
    else:
        ebytes = np.asarray(raw, dtype=np.float64)
    raw_t = [e.get("transfer_s") for e in edges]
    ttypes = set(map(type, raw_t))
    if not ttypes <= {int, float, type(None)}:
        return None
    etime = np.array([np.nan if t is None else t for t in raw_t], dtype=np.float64)
    if np.isnan(etime).sum() != raw_t.count(None):
        return None  # a literal NaN: the checked pass names the edge
    return names, compute_any, kind_cols, nums, strs, src, dst, ebytes, etime


def _columns_checked(ops: list, edges: list, source: str):
    """Item-by-item column extraction with a precise error for the first bad item."""
    n = len(ops)
    names: list[str] = [""] * n
    compute_any = np.full(n, np.nan)
    kind_cols: dict[str, np.ndarray] = {}
    nums = {f: np.zeros(n) for f in _OPTIONAL_NUMBERS}
    strs: dict[str, list[Any]] = {f: [None] * n for f in _OPTIONAL_STRINGS}
    known = {"name", "compute", *_OPTIONAL_NUMBERS, *_OPTIONAL_STRINGS}
    for i, op in enumerate(ops):
        if not isinstance(op, dict):
            raise GraphError(f"{source}: op #{i} must be a JSON object")
        nm = op.get("name")
        if not isinstance(nm, str) or not nm:
            raise GraphError(f"{source}: op #{i} needs a non-empty string 'name'")
        names[i] = nm
        c = op.get("compute")
        if _is_number(c):
            compute_any[i] = _float(c)
        elif isinstance(c, dict) and c:
            for kind, t in c.items():
                if not _is_number(t):
                    raise GraphError(f"op {quote(nm)}: compute on {quote(kind)} must be a number, got {quote(t)}")
                colk = kind_cols.get(kind)
                if colk is None:
                    colk = kind_cols[kind] = np.full(n, np.nan)
                colk[i] = _float(t)
                if math.isnan(colk[i]):  # NaN would read as "cannot run there"
                    raise GraphError(f"op {quote(nm)}: compute on {quote(kind)} must be a finite number >= 0, got nan")
        elif c is None:
            raise GraphError(f"op {quote(nm)} has no 'compute'")
        else:
            raise GraphError(f"op {quote(nm)}: compute must be a number or a map of device kind to seconds, got "
                             f"{quote(c)}")
        if len(op) > 2:
            for f in _OPTIONAL_NUMBERS:
                v = op.get(f)
                if v is not None:
                    if not _is_number(v):
                        raise GraphError(f"op {quote(nm)}: {f} must be a number, got {quote(v)}")
                    nums[f][i] = _float(v)
            for f in _OPTIONAL_STRINGS:
                v = op.get(f)
                if v is not None:
                    if not isinstance(v, str):
                        raise GraphError(f"op {quote(nm)}: {f} must be a string or null, got {quote(v)}")
                    strs[f][i] = v
            extra = op.keys() - known
            if extra:
                raise GraphError(f"op {quote(nm)}: unknown field {quote(sorted(extra)[0])}")
    _reject_nan_scalars(ops, compute_any)

    index = {nm: i for i, nm in enumerate(names)}
    m = len(edges)
    src = np.empty(m, dtype=np.int64)
    dst = np.empty(m, dtype=np.int64)
    ebytes = np.empty(m)
    etime = np.full(m, np.nan)
    for e, ed in enumerate(edges):
        if not isinstance(ed, dict):
            raise GraphError(f"{source}: edge #{e} must be a JSON object")
        s, d = ed.get("src"), ed.get("dst")
        if not isinstance(s, str) or not isinstance(d, str):
            raise GraphError(f"{source}: edge #{e} needs string 'src' and 'dst'")
        si = index.get(s)
        di = index.get(d)
        if si is None or di is None:
            bad = s if si is None else d
            raise GraphError(f"edge {quote(s)} -> {quote(d)} refers to unknown op {quote(bad)}")
        src[e], dst[e] = si, di
        b = ed.get("bytes")
        if b is None:
            ebytes[e] = nums["output_bytes"][si]
        elif _is_number(b):
            ebytes[e] = _float(b)
        else:
            raise GraphError(f"edge {quote(s)} -> {quote(d)}: bytes must be a number, got {quote(b)}")
        t = ed.get("transfer_s")
        if t is not None:
            if not _is_number(t) or not (math.isfinite(_float(t)) and t >= 0):
                raise GraphError(f"edge {quote(s)} -> {quote(d)}: transfer_s must be a finite number >= 0 (seconds), "
                                 f"got {quote(t)}")
            etime[e] = _float(t)

    return names, compute_any, kind_cols, nums, strs, src, dst, ebytes, etime


def _reject_nan_scalars(ops: list, compute_any: np.ndarray) -> None:
    """A scalar ``compute: NaN`` must not be mistaken for "has a per-kind map"."""
    for i in np.flatnonzero(np.isnan(compute_any)):
        c = ops[i].get("compute")
        if _is_number(c):
            raise GraphError(f"{_op_label(ops[i], int(i))}: compute must be a finite number >= 0, got {quote(c)}")


def graph_to_dict(g: CompGraph) -> dict[str, Any]:
    """The ``placelab.graph/1`` document of ``g`` (fields at their default are omitted)."""
    ops = []
    for i, nm in enumerate(g.op_names):
        op: dict[str, Any] = {"name": nm}
        if g.op_types[i]:
            op["type"] = g.op_types[i]
        op["compute"] = g.op_compute(i)
        for f in _OPTIONAL_NUMBERS:
            v = float(getattr(g, f)[i])
            if v:
                op[f] = int(v) if v.is_integer() else v
        for key, seq in (("colocate", g.colocate), ("device", g.pin), ("phase", g.phase)):
            if seq[i] is not None:
                op[key] = seq[i]
        if g.scope[i]:
            op["scope"] = g.scope[i]
        ops.append(op)
    names = g.op_names
    edges = []
    order = np.argsort(g.edge_rank, kind="stable")  # the source's edge order, kept on a round trip
    src, dst, eb, et = (g.edge_src[order].tolist(), g.edge_dst[order].tolist(), g.edge_bytes[order].tolist(),
                        g.edge_transfer_s[order].tolist())
    for s, d, b, t in zip(src, dst, eb, et, strict=True):
        edge: dict[str, Any] = {"src": names[s], "dst": names[d], "bytes": int(b) if float(b).is_integer() else b}
        if t == t:
            edge["transfer_s"] = t
        edges.append(edge)
    doc: dict[str, Any] = {"schema": GRAPH_SCHEMA, "name": g.name, "ops": ops, "edges": edges}
    if not g.memory_known:
        doc["memory_known"] = False
    return doc


def load_graph_json(path: str | os.PathLike) -> CompGraph:
    """Load a ``placelab.graph/1`` file; errors name the file and the op or edge."""
    doc = read_json_file(path, error=GraphError)
    return graph_from_dict(doc, source=quote(os.path.basename(os.fspath(path)), bare=True))


def save_graph(g: CompGraph, path: str | os.PathLike) -> None:
    """Write ``g`` as ``placelab.graph/1`` JSON (atomically)."""
    atomic_write_text(path, dumps(graph_to_dict(g)))
