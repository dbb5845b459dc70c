"""Placement graph view: a pyvis (vis-network) page with a precomputed layered DAG layout.

Nodes sit at their topological level (``engine.graph.dag.levels``) from left to right, physics is
off, so the page opens instantly and the picture is stable. Graphs larger than
:data:`GRAPH_VIEW_MAX_OPS` ops are shown aggregated by the explorer's scope hierarchy (layer
scopes, or bands of levels for unscoped graphs) — and the page says which view it is. The app
shows graphs in the explorer (:mod:`dashboard.figures.explorer`); this page is its
self-contained HTML download.
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np
from plotly.colors import sample_colorscale
from pyvis.network import Network

from dashboard.figures.op_types import dominant_types, type_colors
from dashboard.figures.scope_tree import collapsed_graph, hierarchy_scopes, initial_expanded
from dashboard.figures.theme import device_color
from engine.graph.compgraph import CompGraph
from engine.graph.dag import levels

__all__ = ["COLOR_BY", "GRAPH_VIEW_MAX_OPS", "graph_view_mode", "op_groups", "placement_graph_html"]

#: Above this many ops the view groups ops into aggregate nodes.
GRAPH_VIEW_MAX_OPS = 1500
COLOR_BY = ("device", "op type", "compute", "memory")
_MAX_GROUPS = 400
_LABELS_UP_TO = 150
_OPTIONS = {
    "physics": {"enabled": False},
    "layout": {"improvedLayout": False},
    "edges": {"smooth": False, "arrows": {"to": {"enabled": True, "scaleFactor": 0.4}},
              "color": {"color": "#9aa4ae", "opacity": 0.6}},
    "nodes": {"shape": "dot", "borderWidth": 1, "font": {"size": 12}},
    "interaction": {"hover": True, "hideEdgesOnDrag": True, "tooltipDelay": 80, "navigationButtons": False},
}


def _fmt_s(s: float) -> str:
    return f"{s * 1e3:.4g} ms"


def _fmt_b(b: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(b) >= scale:
            return f"{b / scale:.3g} {unit}"
    return f"{b:.0f} B"


def _hierarchy(graph: CompGraph, lv: np.ndarray) -> tuple[list[str], bool]:
    return hierarchy_scopes(graph.scope, lv)


def graph_view_mode(graph: CompGraph, devices: Sequence[int] | np.ndarray | None = None, *,
                    max_ops: int = GRAPH_VIEW_MAX_OPS) -> tuple[str, str]:
    """Which view :func:`placement_graph_html` draws: ``("ops" | "scope" | "levels", sentence)``."""
    if graph.num_ops <= max_ops:
        return "ops", f"All {graph.num_ops} ops, laid out by topological level (left to right)."
    if _hierarchy(graph, levels(graph))[1]:
        return "scope", (f"Aggregated view: {graph.num_ops} ops is more than {max_ops}, so ops are "
                         "grouped by layer scope, opened as far as the explorer's first view.")
    return "levels", (f"Aggregated view: {graph.num_ops} ops is more than {max_ops}, so ops are "
                      "grouped by bands of topological levels (the graph has no layer scopes).")


def op_groups(graph: CompGraph, lv: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Group index per op and group labels for the aggregated view: the scope hierarchy of the
    explorer (:mod:`dashboard.figures.scope_tree`) opened breadth first up to ``_MAX_GROUPS`` nodes."""
    hierarchy, _ = _hierarchy(graph, lv)
    group, names, _ = collapsed_graph(hierarchy, graph.op_names, graph.edge_src, graph.edge_dst,
                                      initial_expanded(hierarchy, _MAX_GROUPS))
    return group, [n[3:] + " (op)" if n.startswith("op:") else n for n in names]


def _positions(x_rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x from the level (or band), y from the order within it, centered."""
    order = np.lexsort((np.arange(len(x_rank)), x_rank))
    y = np.empty(len(x_rank))
    counts = np.bincount(x_rank)
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    rank = np.arange(len(x_rank)) - np.repeat(starts, counts)
    y[order] = rank - np.repeat(counts, counts) / 2.0
    return x_rank * 140.0, y * 55.0


def _scale_colors(values: np.ndarray) -> list[str]:
    v = np.asarray(values, dtype=float)
    span = v.max() - v.min()
    t = (v - v.min()) / span if span > 0 else np.zeros_like(v)
    return sample_colorscale("Viridis", t.tolist())


def _legend_html(legend: dict[str, str], note: str) -> str:
    chips = "".join(f'<span style="display:inline-block;margin-right:12px"><span style="display:inline-block;'
                    f'width:12px;height:12px;border-radius:6px;background:{c};margin-right:4px"></span>'
                    f"{html.escape(k or '(none)')}</span>" for k, c in list(legend.items())[:14])
    return (f'<div id="placelab-view-note" style="font-family:sans-serif;font-size:14px;margin:4px 0">'
            f"{html.escape(note)}</div><div style=\"font-family:sans-serif;font-size:13px\">{chips}</div>")


def placement_graph_html(graph: CompGraph, devices: Sequence[int] | np.ndarray | None, *,
                         color_by: str = "device", device_names: Sequence[str] | None = None,
                         height_px: int = 560, max_ops: int = GRAPH_VIEW_MAX_OPS,
                         highlight: np.ndarray | None = None, highlight_label: str = "moved") -> str:
    """A self-contained HTML page showing the graph, colored by placement or op attributes.

    Parameters
    ----------
    graph : CompGraph
    devices : int array (device index per op) or None
        The placement; None for an unplaced graph (``color_by="device"`` then falls back
        to op type).
    color_by : {"device", "op type", "compute", "memory"}
        Node color: device, op type (a group's: the type doing most of its work; categories as
        :mod:`dashboard.figures.op_types` chooses them), compute time (s, fastest kind) or memory
        (persistent + output bytes), the last two on a Viridis scale.
    device_names : names of the device indices, for hover cards and the legend.
    max_ops : int
        Largest graph drawn op by op (default :data:`GRAPH_VIEW_MAX_OPS`).

    highlight : bool array per op, optional
        Ops to mark (a placement diff: the ops that moved). Marked nodes (groups with a marked
        op) are drawn red and large, the others grey, whatever ``color_by`` says.

    Node size grows with compute time, edge width with bytes; every node has a hover card.
    Above ``max_ops`` ops, groups of ops are drawn (see :func:`graph_view_mode`).
    """
    if color_by not in COLOR_BY:
        raise ValueError(f"color_by must be one of {', '.join(COLOR_BY)}")
    dev = None if devices is None else np.asarray(devices, dtype=np.int64)
    if dev is None and color_by == "device":
        color_by = "op type"
    dname = list(device_names) if device_names is not None else (
        [f"device {d}" for d in range(int(dev.max()) + 1)] if dev is not None else [])
    mode, note = graph_view_mode(graph, dev, max_ops=max_ops)
    lv = levels(graph)
    compute = graph.min_compute()
    memory = graph.persistent_bytes + graph.output_bytes
    if mode == "ops":
        group = np.arange(graph.num_ops)
        labels = list(graph.op_names)
    else:
        group, labels = op_groups(graph, lv)
    k = len(labels)
    g_compute = np.bincount(group, weights=compute, minlength=k)
    g_memory = np.bincount(group, weights=memory, minlength=k)
    g_count = np.bincount(group, minlength=k)
    members = np.argsort(group, kind="stable")
    bounds = np.r_[0, np.cumsum(g_count)]

    def majority(values: Sequence, g: int):
        return Counter(values[i] for i in members[bounds[g]:bounds[g + 1]].tolist()).most_common(1)[0][0]

    g_dev = None if dev is None else (dev if mode == "ops" else np.array([majority(dev, g) for g in range(k)]))
    g_type = list(graph.op_types) if mode == "ops" else dominant_types(graph.op_types, compute, group, k)
    x_level = lv if mode == "ops" else np.array(
        [int(np.median(lv[members[bounds[g]:bounds[g + 1]]])) for g in range(k)], dtype=np.int64)
    if mode != "ops":
        x_level = np.unique(x_level, return_inverse=True)[1]
    xs, ys = _positions(x_level)

    legend: dict[str, str] = {}
    if color_by == "device":
        colors = [device_color(int(d)) for d in g_dev]
        legend = {dname[d]: device_color(d) for d in sorted(set(g_dev.tolist()))}
    elif color_by == "op type":
        colors, legend = type_colors([t or "" for t in g_type], g_compute)
    elif color_by == "compute":
        colors = _scale_colors(g_compute)
        legend = {f"compute {_fmt_s(g_compute.min())} → {_fmt_s(g_compute.max())} (Viridis)": "#21918c"}
    else:
        colors = _scale_colors(g_memory)
        legend = {f"memory {_fmt_b(g_memory.min())} → {_fmt_b(g_memory.max())} (Viridis)": "#21918c"}

    if highlight is not None:
        marked = np.bincount(group, weights=np.asarray(highlight, dtype=float), minlength=k) > 0
        colors = ["#D55E00" if m else "#c8ccd0" for m in marked.tolist()]
        legend = {f"{highlight_label} ({int(np.sum(highlight))} ops)": "#D55E00", "other ops": "#c8ccd0"}
    cmax = g_compute.max() if g_compute.max() > 0 else 1.0
    sizes = 8.0 + 24.0 * np.sqrt(g_compute / cmax)
    nodes = []
    for g in range(k):
        lines = [labels[g]]
        if mode == "ops":
            lines += [f"type: {g_type[g] or '-'}", f"level: {int(lv[g])}"]
            if graph.scope[g]:
                lines.append(f"scope: {graph.scope[g]}")
            if graph.phase[g]:
                lines.append(f"phase: {graph.phase[g]}")
            lines.append(f"output: {_fmt_b(graph.output_bytes[g])}")
        else:
            lines += [f"ops: {int(g_count[g])}", f"main type (most compute): {g_type[g] or '-'}"]
        if g_dev is not None:
            lines.append(("device: " if mode == "ops" else "mostly on: ") + dname[int(g_dev[g])])
        lines += [f"compute: {_fmt_s(g_compute[g])}", f"memory: {_fmt_b(g_memory[g])}"]
        nodes.append({"id": int(g), "label": labels[g] if k <= _LABELS_UP_TO else " ",
                      "x": float(xs[g]), "y": float(ys[g]), "color": colors[g], "size": float(sizes[g]),
                      "title": "\n".join(lines), "shape": "dot"})

    gs, gd = group[graph.edge_src], group[graph.edge_dst]
    keep = gs != gd
    pair = gs[keep] * k + gd[keep]
    uniq, inv = np.unique(pair, return_inverse=True)
    ebytes = np.bincount(inv, weights=graph.edge_bytes[keep], minlength=len(uniq))
    bmax = ebytes.max() if len(ebytes) and ebytes.max() > 0 else 1.0
    widths = 0.5 + 5.0 * np.sqrt(ebytes / bmax)
    edges = [{"from": int(p // k), "to": int(p % k), "width": float(w), "title": _fmt_b(b)}
             for p, w, b in zip(uniq.tolist(), widths.tolist(), ebytes.tolist(), strict=True)]

    net = Network(height=f"{height_px}px", width="100%", directed=True, cdn_resources="in_line")
    net.nodes, net.edges = nodes, edges
    net.set_options(json.dumps(_OPTIONS))
    page = net.generate_html()
    # offline: drop pyvis' CDN bootstrap (unused here) and its empty headings
    page = re.sub(r"<link\s+href=\"https://cdn\.jsdelivr\.net[^>]*/>", "", page)
    page = re.sub(r"<script\s+src=\"https://cdn\.jsdelivr\.net[^>]*></script>", "", page)
    page = re.sub(r"<center>\s*<h1>\s*</h1>\s*</center>", "", page)
    return page.replace("<body>", "<body>" + _legend_html(legend, note), 1)
