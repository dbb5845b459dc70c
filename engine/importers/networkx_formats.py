"""networkx interop: node-link JSON and GraphML graphs (import), node-link JSON (export).

Assumptions
-----------
* The graph is **directed** and acyclic; an undirected graph or a cycle is rejected with one
  :class:`~engine.errors.GraphError` sentence.
* Node ids become op names (``str(id)``); the order of the nodes in the file is the op index.
* Node attributes map to placelab fields when present, in placelab's units (seconds, bytes):
  ``compute`` (a number, or in JSON a map of device kind to seconds) or ``compute_<kind>``
  (one attribute per kind, the GraphML way to write a map), ``output_bytes``,
  ``persistent_bytes``, ``temp_bytes``, ``type``, ``colocate``, ``device`` (a pin),
  ``phase``, ``scope``. An op without any compute attribute gets compute 0 on every kind, so
  a bare structure imports. Other attributes are ignored.
* Edge attribute ``bytes``; it defaults to the source op's ``output_bytes``. Parallel edges
  of a multigraph are distinct tensors: their bytes add up (as in :class:`CompGraph`).

GraphML is first scanned with the standard library's expat parser, which refuses a DTD
(so no entity can expand: no "billion laughs", no external entities), a node id declared
twice, and an edge whose end is not a declared node (networkx would silently merge the
former and invent ops for the latter); then it is parsed by :func:`networkx.read_graphml`.
Field mapping and units: ``docs/reference/formats.md``.
"""

from __future__ import annotations

import math
import os
import warnings
from typing import Any

import numpy as np

from engine.errors import GraphError, one_line, quote
from engine.graph.compgraph import CompGraph
from engine.graph.formats import register_format
from engine.graph.io import GRAPH_SCHEMA
from engine.jsonio import MAX_FILE_BYTES, read_json_file

__all__ = ["graph_from_node_link", "graph_to_node_link", "load_graphml", "load_node_link"]

_NUMBERS = ("output_bytes", "persistent_bytes", "temp_bytes")
_STRINGS = ("type", "colocate", "device", "phase", "scope")
_COMPUTE_PREFIX = "compute_"
# Markers of the Tarnawski et al. JSON, whose top level also has "nodes" and "edges".
_DNN_PARTITIONING_KEYS = (b'"supportedOnFpga"', b'"fpgaLatency"', b'"maxSizePerFPGA"', b'"sourceId"')


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float | np.integer | np.floating) and not isinstance(x, bool | np.bool_)


def _float(x: Any) -> float:
    try:
        return float(x)
    except OverflowError:  # an integer beyond float range: rejected later as not finite
        return math.inf


def _number(value: Any, what: str, lenient: bool) -> float:
    """A node or edge number; GraphML files declared with string keys may hold numeric text."""
    if _is_number(value):
        return _float(value)
    if lenient and isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise GraphError(f"{what} must be a number, got {quote(value)}")


def _op_name(node_id: Any, i: int, source: str) -> str:
    if isinstance(node_id, str):
        return node_id
    if _is_number(node_id):
        return str(node_id)
    raise GraphError(f"{source}: node #{i} needs an 'id' that is a string or a number")


def _build(name: str, nodes: list[tuple[Any, dict]], edges: list[tuple[Any, Any, dict]], source: str,
           *, lenient: bool, kinds: Any = ()) -> CompGraph:
    """A CompGraph from (id, attrs) nodes and (source id, target id, attrs) edges."""
    n = len(nodes)
    if n == 0:
        raise GraphError(f"{source}: graph has no nodes")
    names = [_op_name(nid, i, source) for i, (nid, _) in enumerate(nodes)]
    compute_any = np.full(n, np.nan)
    # the exporter writes the kinds' order into the graph attributes, so a round trip keeps it
    order = kinds if isinstance(kinds, list) and all(isinstance(k, str) and k for k in kinds) else []
    kind_cols: dict[str, np.ndarray] = {k: np.full(n, np.nan) for k in order}
    nums = {f: np.zeros(n) for f in _NUMBERS}
    strs: dict[str, list[Any]] = {f: [None] * n for f in _STRINGS}
    for i, (_, attrs) in enumerate(nodes):
        op = f"op {quote(names[i])}"
        per_kind = {k[len(_COMPUTE_PREFIX):]: v for k, v in attrs.items()
                    if isinstance(k, str) and k.startswith(_COMPUTE_PREFIX) and len(k) > len(_COMPUTE_PREFIX)}
        c = attrs.get("compute")
        if c is not None and per_kind:
            raise GraphError(f"{op}: give either 'compute' or 'compute_<kind>' attributes, not both")
        if isinstance(c, dict):
            if not c:
                raise GraphError(f"{op}: compute map is empty")
            per_kind = c
        elif c is not None:
            compute_any[i] = _number(c, f"{op}: compute", lenient)
        elif not per_kind:
            compute_any[i] = 0.0
        for kind, t in per_kind.items():
            if not isinstance(kind, str) or not kind:
                raise GraphError(f"{op}: device kinds in compute must be non-empty strings")
            col = kind_cols.setdefault(kind, np.full(n, np.nan))
            col[i] = _number(t, f"{op}: compute on {quote(kind)}", lenient)
            if math.isnan(col[i]):  # NaN would read as "cannot run there"
                raise GraphError(f"{op}: compute on {quote(kind)} must be a finite number >= 0, got nan")
        if math.isnan(compute_any[i]) and c is not None and not isinstance(c, dict):
            raise GraphError(f"{op}: compute must be a finite number >= 0, got nan")
        for f in _NUMBERS:
            v = attrs.get(f)
            if v is not None:
                nums[f][i] = _number(v, f"{op}: {f}", lenient)
        for f in _STRINGS:
            v = attrs.get(f)
            if v is not None:
                if not isinstance(v, str):
                    raise GraphError(f"{op}: {f} must be a string, got {quote(v)}")
                strs[f][i] = v
    index: dict[str, int] = {}
    for i, nm in enumerate(names):
        if nm in index:
            raise GraphError(f"{source}: duplicate node id {quote(nm)} (nodes #{index[nm]} and #{i})")
        index[nm] = i
    m = len(edges)
    src = np.empty(m, dtype=np.int64)
    dst = np.empty(m, dtype=np.int64)
    ebytes = np.empty(m)
    for e, (s, d, attrs) in enumerate(edges):
        si = index.get(_op_name(s, e, f"{source}: edge")) if _is_number(s) or isinstance(s, str) else None
        di = index.get(_op_name(d, e, f"{source}: edge")) if _is_number(d) or isinstance(d, str) else None
        if si is None or di is None:
            bad = s if si is None else d
            raise GraphError(f"{source}: edge #{e} refers to unknown node {quote(bad)}")
        src[e], dst[e] = si, di
        b = attrs.get("bytes")
        ebytes[e] = nums["output_bytes"][si] if b is None else _number(
            b, f"edge {quote(names[si])} -> {quote(names[di])}: bytes", lenient)
    kinds = tuple(kind_cols)
    cbk = np.column_stack([kind_cols[k] for k in kinds]) if kinds else np.empty((n, 0))
    return CompGraph(name, names, compute_any=compute_any, compute_by_kind=cbk, kinds=kinds,
                     output_bytes=nums["output_bytes"], persistent_bytes=nums["persistent_bytes"],
                     temp_bytes=nums["temp_bytes"], edge_src=src, edge_dst=dst, edge_bytes=ebytes,
                     op_types=[t or "" for t in strs["type"]], colocate=strs["colocate"], pin=strs["device"],
                     phase=strs["phase"], scope=[s or "" for s in strs["scope"]])


# ---------------------------------------------------------------------- node-link JSON
def graph_from_node_link(doc: Any, *, source: str = "graph") -> CompGraph:
    """Build a :class:`CompGraph` from a parsed networkx node-link document.

    Accepts the layout of :func:`networkx.node_link_data` with either ``"links"`` (networkx
    < 3.4 default) or ``"edges"``, and ``"source"`` / ``"target"`` edge ends.

    Raises
    ------
    GraphError
        For an undirected graph, a missing or malformed ``nodes`` / ``links`` list, an unknown
        node in an edge, a wrong attribute type, and every check of :class:`CompGraph`.
    """
    if not isinstance(doc, dict):
        raise GraphError(f"{source}: expected a JSON object with 'nodes' and 'links' (networkx node-link)")
    if doc.get("directed") is not True:
        raise GraphError(f"{source}: the graph is not directed (node-link 'directed' must be true); "
                         "placelab needs a directed acyclic graph")
    nodes = doc.get("nodes")
    if not isinstance(nodes, list):
        raise GraphError(f"{source}: 'nodes' must be a list")
    edge_key = "links" if "links" in doc else "edges"
    links = doc.get(edge_key, [])
    if not isinstance(links, list):
        raise GraphError(f"{source}: {quote(edge_key)} must be a list")
    meta = doc.get("graph", {})
    if not isinstance(meta, dict):
        raise GraphError(f"{source}: 'graph' must be an object of graph attributes")
    name = meta.get("name", source)
    if not isinstance(name, str) or not name:
        name = source
    node_items = []
    for i, nd in enumerate(nodes):
        if not isinstance(nd, dict) or "id" not in nd:
            raise GraphError(f"{source}: node #{i} must be an object with an 'id'")
        node_items.append((nd["id"], nd))
    edge_items = []
    for e, ed in enumerate(links):
        if not isinstance(ed, dict) or "source" not in ed or "target" not in ed:
            raise GraphError(f"{source}: {edge_key}[{e}] must be an object with 'source' and 'target'")
        edge_items.append((ed["source"], ed["target"], ed))
    return _build(name, node_items, edge_items, source, lenient=False, kinds=meta.get("kinds"))


def graph_to_node_link(g: CompGraph) -> dict[str, Any]:
    """The networkx node-link document of ``g`` (``networkx.node_link_graph(doc)`` reads it).

    Fields at their default (0, null, "") are omitted; ``compute`` is a number or a map of
    device kind to seconds, exactly as in ``placelab.graph/1``.
    """
    nodes = []
    for i, nm in enumerate(g.op_names):
        node: dict[str, Any] = {"id": nm, "compute": g.op_compute(i)}
        for f in _NUMBERS:
            v = float(getattr(g, f)[i])
            if v:
                node[f] = v
        for key, seq in (("type", g.op_types), ("colocate", g.colocate), ("device", g.pin),
                         ("phase", g.phase), ("scope", g.scope)):
            if seq[i]:
                node[key] = seq[i]
        nodes.append(node)
    names = g.op_names
    edges = [{"source": names[s], "target": names[d], "bytes": float(b)}
             for s, d, b in zip(g.edge_src.tolist(), g.edge_dst.tolist(), g.edge_bytes.tolist(), strict=True)]
    meta: dict[str, Any] = {"name": g.name}
    if g.kinds:
        meta["kinds"] = list(g.kinds)
    return {"directed": True, "multigraph": False, "graph": meta, "nodes": nodes, "edges": edges}


def load_node_link(path: str | os.PathLike) -> CompGraph:
    """Load a networkx node-link JSON file; errors name the file and the op or edge."""
    doc = read_json_file(path, error=GraphError)
    return graph_from_node_link(doc, source=quote(os.path.basename(os.fspath(path)), bare=True))


def _is_node_link(head: bytes) -> bool:
    h = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if h[:1] != b"{" or b'"nodes"' not in h or GRAPH_SCHEMA.encode() in h:
        return False
    if any(k in h for k in _DNN_PARTITIONING_KEYS):
        return False
    # "links"/"edges" may lie beyond the head of a big file; networkx writes "directed" first
    return any(k in h for k in (b'"links"', b'"edges"', b'"directed"', b'"multigraph"'))


# ---------------------------------------------------------------------- GraphML
def load_graphml(path: str | os.PathLike) -> CompGraph:
    """Load a GraphML file with :func:`networkx.read_graphml`.

    Numbers may be typed GraphML keys (``double``, ``int``, ``long``) or numeric text.

    Raises
    ------
    GraphError
        For malformed XML or GraphML, an undirected graph, and every check of
        :class:`CompGraph` (cycles, bad numbers, ...).
    """
    import xml.etree.ElementTree as ET

    import networkx as nx

    p = os.fspath(path)
    base = quote(os.path.basename(p), bare=True)
    try:
        size = os.path.getsize(p)
    except OSError:
        raise GraphError(f"{base}: no such file") from None
    if size > MAX_FILE_BYTES:
        raise GraphError(f"{base}: file is larger than the {MAX_FILE_BYTES / 1e6:.0f} MB limit")
    _scan_graphml(p, base)
    try:
        with warnings.catch_warnings():  # e.g. "No key type for id t. Using string": not the user's concern
            warnings.simplefilter("ignore")
            g = nx.read_graphml(p)
    except (ET.ParseError, nx.NetworkXError, ValueError, KeyError, TypeError, IndexError, AttributeError,
            UnicodeError, RecursionError, LookupError) as exc:
        detail = one_line(exc, 160) or exc.__class__.__name__  # a library's words may quote the file
        raise GraphError(f"{base} is not valid GraphML ({detail})") from None
    except OSError as exc:
        raise GraphError(f"{base}: cannot read the file ({exc.__class__.__name__})") from None
    if not g.is_directed():
        raise GraphError(f"{base}: the graph is undirected (edgedefault='undirected'); "
                         "placelab needs a directed acyclic graph")
    name = g.graph.get("name")
    if not isinstance(name, str) or not name:
        name = os.path.splitext(base)[0]
    nodes = list(g.nodes(data=True))
    edges = list(g.edges(data=True))
    return _build(name, nodes, edges, base, lenient=True)


class _Refused(Exception):
    pass


def _scan_graphml(path: str, base: str) -> None:
    """Refuse DTDs and entities, duplicate node ids and undeclared edge ends (one GraphError)."""
    from xml.parsers import expat

    parser = expat.ParserCreate(namespace_separator=" ")
    nodes: set[str] = set()
    ends: list[tuple[str, str]] = []

    def refuse_dtd(*_: Any) -> None:
        raise _Refused("a DTD (<!DOCTYPE>) or entity declaration; placelab reads GraphML without DTDs")

    def start(tag: str, attrs: dict[str, str]) -> None:
        local = tag.rpartition(" ")[2]
        if local == "node":
            nid = attrs.get("id")
            if nid is None:
                raise _Refused("a <node> without an id")
            if nid in nodes:
                raise _Refused(f"node id {quote(nid)} is declared twice")
            nodes.add(nid)
        elif local == "edge":
            ends.append((attrs.get("source", ""), attrs.get("target", "")))

    parser.StartDoctypeDeclHandler = refuse_dtd
    parser.EntityDeclHandler = refuse_dtd
    parser.StartElementHandler = start
    try:
        with open(path, "rb") as f:
            parser.ParseFile(f)
    except _Refused as exc:
        raise GraphError(f"{base} is not valid GraphML: it has {exc}") from None
    except (expat.ExpatError, LookupError, ValueError) as exc:  # LookupError: an unknown encoding
        raise GraphError(f"{base} is not valid GraphML ({one_line(exc, 160)})") from None
    except OSError as exc:
        raise GraphError(f"{base}: cannot read the file ({exc.__class__.__name__})") from None
    for e, (src, dst) in enumerate(ends):
        for end in (src, dst):
            if end not in nodes:
                raise GraphError(f"{base}: edge #{e} refers to undeclared node {quote(end)}")


def _is_graphml(head: bytes) -> bool:
    h = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return h[:1] == b"<" and b"<graphml" in h


register_format("node-link", "networkx node-link JSON (directed; node ids become op names)", _is_node_link,
                load_node_link)
register_format("graphml", "GraphML XML (directed; read with networkx)", _is_graphml, load_graphml)
