"""Read and write the ``placelab.graph/1`` JSON format (CONTRACTS §1).

Parsing is one pass over the ops that collects columns, followed by vectorised checks in
:class:`~engine.graph.CompGraph`; a valid 10^6-op file loads in a few seconds. Every
rejection is one :class:`~engine.errors.GraphError` sentence that names the op or edge.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from engine.errors import GraphError
from engine.graph import CompGraph
from engine.jsonio import atomic_write_text, dumps, read_json_file

__all__ = ["GRAPH_SCHEMA", "graph_from_dict", "graph_to_dict", "load_graph_json", "save_graph"]

GRAPH_SCHEMA = "placelab.graph/1"

_NUMBER = (int, float)
_OPTIONAL_NUMBERS = ("output_bytes", "persistent_bytes", "temp_bytes")
_OPTIONAL_STRINGS = ("type", "colocate", "device", "phase", "scope")


def _is_number(x: Any) -> bool:
    return isinstance(x, _NUMBER) and not isinstance(x, bool)


def _op_label(op: Any, i: int) -> str:
    if isinstance(op, dict) and isinstance(op.get("name"), str) and op["name"]:
        return f"op '{op['name']}'"
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
            compute_any[i] = c
        elif isinstance(c, dict) and c:
            for kind, t in c.items():
                if not _is_number(t):
                    raise GraphError(f"op '{nm}': compute on '{kind}' must be a number, got {t!r}")
                colk = kind_cols.get(kind)
                if colk is None:
                    colk = kind_cols[kind] = np.full(n, np.nan)
                colk[i] = t
                if math.isnan(t):  # NaN would read as "cannot run there"
                    raise GraphError(f"op '{nm}': compute on '{kind}' must be a finite number >= 0, got nan")
        elif c is None:
            raise GraphError(f"op '{nm}' has no 'compute'")
        else:
            raise GraphError(f"op '{nm}': compute must be a number or a map of device kind to seconds, got {c!r}")
        if len(op) > 2:
            for f in _OPTIONAL_NUMBERS:
                v = op.get(f)
                if v is not None:
                    if not _is_number(v):
                        raise GraphError(f"op '{nm}': {f} must be a number, got {v!r}")
                    nums[f][i] = v
            for f in _OPTIONAL_STRINGS:
                v = op.get(f)
                if v is not None:
                    if not isinstance(v, str):
                        raise GraphError(f"op '{nm}': {f} must be a string or null, got {v!r}")
                    strs[f][i] = v
            extra = op.keys() - known
            if extra:
                raise GraphError(f"op '{nm}': unknown field '{sorted(extra)[0]}'")
    _reject_nan_scalars(ops, compute_any)

    index = {nm: i for i, nm in enumerate(names)}
    m = len(edges)
    src = np.empty(m, dtype=np.int64)
    dst = np.empty(m, dtype=np.int64)
    ebytes = np.empty(m)
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
            raise GraphError(f"edge '{s}' -> '{d}' refers to unknown op '{bad}'")
        src[e], dst[e] = si, di
        b = ed.get("bytes")
        if b is None:
            ebytes[e] = nums["output_bytes"][si]
        elif _is_number(b):
            ebytes[e] = b
        else:
            raise GraphError(f"edge '{s}' -> '{d}': bytes must be a number, got {b!r}")

    kinds = tuple(kind_cols)
    cbk = np.column_stack([kind_cols[k] for k in kinds]) if kinds else np.empty((n, 0))
    return CompGraph(
        name, names, compute_any=compute_any, compute_by_kind=cbk, kinds=kinds,
        output_bytes=nums["output_bytes"], persistent_bytes=nums["persistent_bytes"],
        temp_bytes=nums["temp_bytes"], edge_src=src, edge_dst=dst, edge_bytes=ebytes,
        op_types=[t or "" for t in strs["type"]], colocate=strs["colocate"], pin=strs["device"],
        phase=strs["phase"], scope=[s or "" for s in strs["scope"]],
    )


def _reject_nan_scalars(ops: list, compute_any: np.ndarray) -> None:
    """A scalar ``compute: NaN`` must not be mistaken for "has a per-kind map"."""
    for i in np.flatnonzero(np.isnan(compute_any)):
        c = ops[i].get("compute")
        if _is_number(c):
            raise GraphError(f"{_op_label(ops[i], int(i))}: compute must be a finite number >= 0, got {c!r}")


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
    for s, d, b in zip(g.edge_src.tolist(), g.edge_dst.tolist(), g.edge_bytes.tolist(), strict=True):
        edges.append({"src": names[s], "dst": names[d], "bytes": int(b) if float(b).is_integer() else b})
    return {"schema": GRAPH_SCHEMA, "name": g.name, "ops": ops, "edges": edges}


def load_graph_json(path: str | os.PathLike) -> CompGraph:
    """Load a ``placelab.graph/1`` file; errors name the file and the op or edge."""
    doc = read_json_file(path, error=GraphError)
    return graph_from_dict(doc, source=os.path.basename(os.fspath(path)))


def save_graph(g: CompGraph, path: str | os.PathLike) -> None:
    """Write ``g`` as ``placelab.graph/1`` JSON (atomically)."""
    atomic_write_text(path, dumps(graph_to_dict(g)))
