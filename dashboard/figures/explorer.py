"""The graph explorer's data: Cytoscape.js elements for a graph collapsed by scope.

A hierarchical view in the manner of TensorBoard's graph view and Google's Model Explorer: each
layer scope that is not open is one node standing for all its ops; an open scope is a compound
box around its children. Only the visible nodes go to the browser, so what the browser lays out
and paints depends on what is open, not on the graph's
size. Nodes sit at a layered position computed here (column: median topological level of the
node's ops, as the pyvis view does; siblings kept together in a column) and the browser only
paints them: dagre in the browser took 5–23 s on the collapsed views of 1k-op and ``gen:nmt``
graphs (their edges are dense), against about 2 s for this preset layout — measured with
``benchmarks/bench_graph_view.py``.

Pure functions of data; :mod:`dashboard.app_pages.explorer_view` shows the result with the
``streamlit-cytoscape`` component and turns its clicks into expand / collapse / select.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from dashboard.figures.graph_view import _category_colors, _fmt_b, _fmt_s, _positions, _scale_colors
from dashboard.figures.scope_tree import ancestors, collapsed_graph
from dashboard.figures.theme import device_color
from engine.dag import levels
from engine.graph import CompGraph

__all__ = ["EXPLORER_COLOR_BY", "Explorer", "explorer_elements", "op_node_id", "reveal", "scope_node_id"]

EXPLORER_COLOR_BY = ("device", "op type", "compute", "memory", "start time")
HIGHLIGHT = "#D00000"
#: At most this many matching ops are revealed (their scopes opened) by a search.
REVEAL_UP_TO = 30


def scope_node_id(scope: str) -> str:
    return f"s:{scope}"


def op_node_id(name: str) -> str:
    return f"op:{name}"


@dataclass(frozen=True)
class Explorer:
    """What the explorer draws: ``elements`` for Cytoscape.js, the ``legend`` (label → colour),
    ``node_of_op`` (visible-node index per op) and ``node_ids`` (Cytoscape id per visible node)."""

    elements: dict
    legend: dict[str, str]
    node_of_op: np.ndarray
    node_ids: list[str]


def reveal(hierarchy: Sequence[str], ops: np.ndarray) -> set[str]:
    """The scopes to open so that each op in ``ops`` (indices) is drawn as a node of its own."""
    return {prefix for i in np.asarray(ops, dtype=np.int64).tolist() for prefix in ancestors(hierarchy[i])}


def _majority(values: Sequence, members: np.ndarray) -> object:
    return Counter(values[i] for i in members.tolist()).most_common(1)[0][0]


def _colors(color_by: str, keys: list, values: np.ndarray | None, label: str, fmt) -> tuple[list[str], dict]:
    if values is None:
        colors, legend = _category_colors(keys)
        return colors, legend
    colors = _scale_colors(values)
    return colors, {f"{label} {fmt(values.min())} → {fmt(values.max())} (Viridis)": "#21918c"}


def explorer_elements(graph: CompGraph, hierarchy: Sequence[str], expanded: Collection[str], *,
                      devices: np.ndarray | None = None, device_names: Sequence[str] | None = None,
                      op_start: np.ndarray | None = None, color_by: str = "op type",
                      highlight: np.ndarray | None = None, selected: int | None = None) -> Explorer:
    """Cytoscape.js elements of ``graph`` with the scopes in ``expanded`` open.

    Parameters
    ----------
    hierarchy : scope path per op (:func:`dashboard.figures.scope_tree.hierarchy_scopes`).
    expanded : the open scopes; a scope is drawn open only when all its ancestors are open too.
    devices : device index per op (a placement), for ``color_by="device"`` and the cards.
    op_start : start time per op in seconds (a schedule), for ``color_by="start time"``.
    color_by : one of :data:`EXPLORER_COLOR_BY`. Groups take the majority device / type, summed
        compute (s) and memory (persistent + output bytes), and their earliest start.
    highlight : bool per op; a node holding a marked op gets a thick red border.
    selected : an op index (picked in the timeline or the graph); its node is drawn red and large.

    Node data: ``label`` is ``"op"``, ``"scope"`` (collapsed, click to open) or ``"open"`` (a
    compound box, click to close); keys starting with ``_`` drive the style, the rest is the card.
    """
    if color_by not in EXPLORER_COLOR_BY:
        raise ValueError(f"color_by must be one of {', '.join(EXPLORER_COLOR_BY)}")
    if color_by == "device" and devices is None:
        raise ValueError("colour by device needs a placement")
    if color_by == "start time" and op_start is None:
        raise ValueError("colour by start time needs a schedule")
    node_of_op, names, edges = collapsed_graph(hierarchy, graph.op_names, graph.edge_src, graph.edge_dst,
                                               expanded, graph.edge_bytes)
    k = len(names)
    order = np.argsort(node_of_op, kind="stable")
    bounds = np.r_[0, np.cumsum(np.bincount(node_of_op, minlength=k))]
    members = [order[bounds[g]:bounds[g + 1]] for g in range(k)]
    compute = np.bincount(node_of_op, weights=graph.min_compute(), minlength=k)
    memory = np.bincount(node_of_op, weights=graph.persistent_bytes + graph.output_bytes, minlength=k)
    types = [str(_majority(graph.op_types, m) or "-") for m in members]
    dname = list(device_names) if device_names is not None else (
        [] if devices is None else [f"device {d}" for d in range(int(np.max(devices)) + 1)])
    dev = None if devices is None else [int(_majority(devices, m)) for m in members]
    start = None if op_start is None else np.array([float(np.min(op_start[m])) for m in members])

    if color_by == "device":
        colors = [device_color(d) for d in dev]
        legend = {dname[d]: device_color(d) for d in sorted(set(dev))}
    elif color_by == "op type":
        colors, legend = _colors(color_by, types, None, "", None)
    elif color_by == "compute":
        colors, legend = _colors(color_by, [], compute, "compute", _fmt_s)
    elif color_by == "memory":
        colors, legend = _colors(color_by, [], memory, "memory", _fmt_b)
    else:
        colors, legend = _colors(color_by, [], start, "start", _fmt_s)

    marked = np.zeros(k, dtype=bool) if highlight is None else (
        np.bincount(node_of_op, weights=np.asarray(highlight, dtype=float), minlength=k) > 0)
    picked = -1 if selected is None else int(node_of_op[selected])
    cmax = compute.max() if k and compute.max() > 0 else 1.0
    lv = levels(graph)
    rank = np.unique([int(np.median(lv[m])) for m in members], return_inverse=True)[1]
    # within a column, siblings next to each other (so an open scope's box stays compact)
    order = sorted(range(k), key=lambda g: (int(rank[g]), hierarchy[int(members[g][0])], names[g]))
    xs, ys = np.empty(k), np.empty(k)
    xs[order], ys[order] = _positions(rank[order])
    open_ = set(expanded)
    ids, parents = [], set()
    nodes = []
    for g, name in enumerate(names):
        is_op = name.startswith("op:")
        op_scope = hierarchy[int(members[g][0])] if is_op else name.rsplit("/", 1)[0] if "/" in name else ""
        parent = op_scope if op_scope and all(p in open_ for p in ancestors(op_scope)) else ""
        nid = name if is_op else scope_node_id(name)
        ids.append(nid)
        size = 14.0 + 26.0 * float(np.sqrt(compute[g] / cmax))
        data = {"id": nid, "label": "op" if is_op else "scope",
                "name": name[3:] if is_op else f"{name.rsplit('/', 1)[-1]} ({len(members[g]):,})",
                "ops": len(members[g]), "type": types[g], "compute": _fmt_s(compute[g]),
                "memory": _fmt_b(memory[g]),
                "_color": colors[g], "_size": size if is_op else size + 10.0,
                "_bw": 6.0 if g == picked else (4.0 if marked[g] else 0.5),
                "_bc": HIGHLIGHT if (marked[g] or g == picked) else "#ffffff"}
        if is_op:
            data["scope"] = hierarchy[int(members[g][0])] or "-"
        if dev is not None:
            data["device"] = dname[dev[g]]
        if start is not None:
            data["start"] = _fmt_s(start[g])
        if parent:
            data["parent"] = scope_node_id(parent)
            parents.update(ancestors(parent))
        nodes.append({"data": data, "position": {"x": float(xs[g]), "y": float(ys[g])}})
    for scope in sorted(parents):
        data = {"id": scope_node_id(scope), "label": "open", "name": scope.rsplit("/", 1)[-1] + " (open)",
                "scope": scope}
        up = scope.rsplit("/", 1)[0] if "/" in scope else ""
        if up:
            data["parent"] = scope_node_id(up)
        nodes.append({"data": data})
    wmax = max((w for *_, w in edges), default=1.0) or 1.0
    edge_elems = [{"data": {"id": f"e{i}", "source": ids[a], "target": ids[b], "label": "edge",
                            "edges": c, "bytes": _fmt_b(w), "_width": 0.8 + 4.0 * float(np.sqrt(w / wmax))}}
                  for i, (a, b, c, w) in enumerate(edges)]
    if highlight is not None and highlight.any():
        legend = {**legend, f"marked ({int(np.sum(highlight)):,} ops)": HIGHLIGHT}
    return Explorer({"nodes": nodes, "edges": edge_elems}, legend, node_of_op, ids)
