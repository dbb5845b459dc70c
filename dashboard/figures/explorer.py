"""The graph explorer's data: Cytoscape.js elements for a graph collapsed by scope.

A hierarchical view in the manner of TensorBoard's graph view and Google's Model Explorer: each
layer scope that is not open is one node standing for all its ops; an open scope is a compound
box around its children. Only the visible nodes go to the browser, so what the browser lays out
and paints depends on what is open, not on the graph's
size. Nodes sit at a nested layered position computed here (:func:`nested_layout`: each open
scope a box laid out inside its parent, columns by the level where data enters) and the browser only
paints them: a layout in the browser (dagre) is far slower on the dense collapsed views of large graphs
(``benchmarks/bench_graph_view.py`` compares them; figures: docs/lab/2026-11-27-explorer-first-view.md,
addendum of 2026-11-29).

Pure functions of data; :mod:`dashboard.widgets.explorer` shows the result with the
``streamlit-cytoscape`` component and turns its clicks into expand / collapse / select.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from dashboard.figures.graph_labels import Caption, natural_key, sibling_captions, text_width
from dashboard.figures.graph_view import _fmt_b, _fmt_s, _scale_colors
from dashboard.figures.op_types import dominant_types, type_colors
from dashboard.figures.scope_tree import ancestors, collapsed_graph
from dashboard.figures.theme import device_color
from engine.graph.compgraph import CompGraph
from engine.graph.dag import levels

__all__ = ["CAPTION_PX", "CAPTION_W", "EXPLORER_COLOR_BY", "FRAME_PX", "MARGIN_PX", "Explorer", "explorer_elements",
           "focus_selector", "framed", "nested_layout", "reveal", "scope_node_id"]

EXPLORER_COLOR_BY = ("device", "op type", "compute", "memory", "start time")
HIGHLIGHT = "#D00000"
#: At most this many matching ops are revealed (their scopes opened) by a search.
REVEAL_UP_TO = 30
#: A caption's width (px): a leaf's slot (``_LEAF_W`` + ``_GAP_X`` = 150 px between centres) less 10 px between
#: neighbours, so captions never overlap; an open box's title has its box's width.
CAPTION_W = 140.0
#: Caption font size (px) and weight per node kind, as :mod:`dashboard.widgets.explorer` draws them.
CAPTION_PX = {"op": (11, False), "scope": (14, True), "open": (11, False)}
#: The explorer's frame in the app (px): the main column of a 1,500-px-wide window, the widget's height.
FRAME_PX = (1040, 620)
#: Margins (px: top, right, bottom, left) the whole view keeps clear at the zoom that fits it to the frame: the
#: component's side panel covers the left 36 px, its zoom buttons the right 40.
MARGIN_PX = (12, 44, 12, 44)


def scope_node_id(scope: str) -> str:
    return f"s:{scope}"


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


def _quoted(node_id: str) -> str:
    return '"' + node_id.replace("\\", "\\\\").replace('"', '\\"') + '"'


def focus_selector(view: Explorer, ops: np.ndarray) -> str | None:
    """A Cytoscape.js selector for the nodes drawing ``ops`` (indices) and their neighbours in ``view``:
    the explorer fits the view to them (a preset layout fits its ``eles``), so a search or a pick in the
    timeline pans and zooms to the match with its context around it. ``None`` when ``ops`` is empty."""
    nodes = {view.node_ids[int(g)] for g in np.unique(view.node_of_op[np.asarray(ops, dtype=np.int64)])}
    if not nodes:
        return None
    near = set(nodes)
    for edge in view.elements["edges"]:
        if edge["data"]["source"] in nodes:
            near.add(edge["data"]["target"])
        if edge["data"]["target"] in nodes:
            near.add(edge["data"]["source"])
    return ", ".join(f"[id = {_quoted(i)}]" for i in sorted(near))


def _majority(values: Sequence, members: np.ndarray) -> object:
    return Counter(values[i] for i in members.tolist()).most_common(1)[0][0]


def _colors(values: np.ndarray, label: str, fmt) -> tuple[list[str], dict]:
    colors = _scale_colors(values)
    return colors, {f"{label} {fmt(values.min())} → {fmt(values.max())} (Viridis)": "#21918c"}


_LEAF_W, _GAP_X, _GAP_Y, _PAD, _TITLE, _ROW_GAP = 110.0, 40.0, 14.0, 16.0, 24.0, 40.0
#: What Cytoscape draws around a leaf beyond its node (px at zoom 1, for :func:`framed`): the caption's height
#: below it, and per open box around it the box's padding at the sides and bottom and its padding and title above.
_CAPTION_H, _BOX_SIDE, _BOX_TOP = 22.0, 10.0, 26.0
#: Width : height a box's rows aim at (the explorer's frame is about 1400 × 620 px).
_ASPECT = 2.2
_WRAP_WIDER = 1200.0
_COLUMN_H = 600.0
#: How many row widths :func:`_wrap` tries.
_WRAP_TRIES = 48


def _split(column: list[str], dims: dict[str, tuple[float, float]], limit: float) -> list[list[str]]:
    """A column taller than ``limit`` (many scopes or ops at one level) cut, top to bottom, into
    several side by side, each at most ``limit`` tall (or one node)."""
    parts: list[list[str]] = [[]]
    used = 0.0
    for k in column:
        if parts[-1] and used + dims[k][1] > limit:
            parts.append([])
            used = 0.0
        parts[-1].append(k)
        used += dims[k][1] + _GAP_Y
    return parts


def _rows(widths: list[float], limit: float) -> list[list[int]]:
    """Columns filled left to right into rows at most ``limit`` px wide (a wider column alone), like
    lines of text."""
    rows: list[list[int]] = [[]]
    used = 0.0
    for c, w in enumerate(widths):
        if rows[-1] and used + w > limit + 1e-9:
            rows.append([])
            used = 0.0
        rows[-1].append(c)
        used += w + _GAP_X
    return rows


def _wrap(widths: list[float], heights: list[float]) -> list[list[int]]:
    """Columns cut into rows (left to right, then the next row below, like lines of text) so a long
    chain — an unrolled RNN's 40 steps — fills a box shaped like the explorer's frame instead of a
    thread. Of :data:`_WRAP_TRIES` row widths from the widest column to all in one row, the one whose
    box would be drawn largest in a frame of aspect :data:`_ASPECT` (the smallest
    ``max(width, aspect × height)``); rows no wider than :data:`_WRAP_WIDER` px stay one row."""
    total = sum(widths) + _GAP_X * (len(widths) - 1)
    if total <= _WRAP_WIDER or max(heights, default=0.0) <= 0:
        return [list(range(len(widths)))]
    best: tuple[float, list[list[int]]] | None = None
    for limit in np.geomspace(max(widths), total, _WRAP_TRIES).tolist():
        rows = _rows(widths, limit)
        wide = max(sum(widths[c] for c in row) + _GAP_X * (len(row) - 1) for row in rows)
        tall = sum(max(heights[c] for c in row) for row in rows) + _ROW_GAP * (len(rows) - 1)
        score = max(wide, _ASPECT * tall)
        if best is None or score < best[0] - 1e-9:
            best = (score, rows)
    return best[1]


def nested_layout(parent_of: dict[str, str], level_of: dict[str, float],
                  size_of: dict[str, float]) -> dict[str, tuple[float, float]]:
    """Centre of each leaf node in a nested layered layout (x right, y down).

    Containers — ``""`` (the root) and every id that is some item's parent (an open scope) — are laid
    out bottom up: their children in columns by ``level_of`` (ascending: data flows left to right),
    stacked top to bottom in a column (ties by id in natural order, ``shard2`` above ``shard10``; split
    when tall, :func:`_split`), columns centred
    and wrapped into rows
    (:func:`_wrap`); a box then measures its children plus padding and a title strip, and is placed
    as one block in its own parent. So open scopes never
    overlap (TensorBoard's nested graph layout; crossings are not minimised). A leaf is
    ``_LEAF_W`` wide (room for its label) and ``size_of`` + 22 tall.
    """
    children: dict[str, list[str]] = {}
    for item, parent in parent_of.items():
        children.setdefault(parent, []).append(item)
    dims: dict[str, tuple[float, float]] = {}
    offset: dict[str, tuple[float, float]] = {}

    def measure(box: str) -> None:
        kids = sorted(children.get(box, []), key=lambda k: (level_of[k], natural_key(k)))
        for kid in kids:
            if kid in children:
                measure(kid)
            else:
                dims[kid] = (_LEAF_W, size_of[kid] + 22.0)
        columns: dict[float, list[str]] = {}
        for kid in kids:
            columns.setdefault(level_of[kid], []).append(kid)
        # columns no taller than the side of a square of the children's area stretched to the aspect
        area = sum((dims[k][0] + _GAP_X) * (dims[k][1] + _GAP_Y) for k in kids)
        limit = max(_COLUMN_H, float(np.sqrt(area / _ASPECT)))
        cols = [part for r in sorted(columns) for part in _split(columns[r], dims, limit)]
        widths = [max(dims[k][0] for k in col) for col in cols]
        heights = [sum(dims[k][1] for k in col) + _GAP_Y * (len(col) - 1) for col in cols]
        rows = _wrap(widths, heights)
        wide, top = 0.0, 0.0
        for row in rows:
            tall = max(heights[c] for c in row)
            x = 0.0
            for c in row:
                y = top + (tall - heights[c]) / 2
                for k in cols[c]:
                    offset[k] = (x + (widths[c] - dims[k][0]) / 2, y)
                    y += dims[k][1] + _GAP_Y
                x += widths[c] + _GAP_X
            wide, top = max(wide, x - _GAP_X), top + tall + _ROW_GAP
        dims[box] = (wide + 2 * _PAD, top - _ROW_GAP + 2 * _PAD + _TITLE)

    centres: dict[str, tuple[float, float]] = {}

    def place(box: str, ox: float, oy: float) -> None:
        ix, iy = (ox, oy) if box == "" else (ox + _PAD, oy + _PAD + _TITLE)
        for kid in children.get(box, []):
            x, y = ix + offset[kid][0], iy + offset[kid][1]
            if kid in children:
                place(kid, x, y)
            else:
                centres[kid] = (x + dims[kid][0] / 2, y + size_of[kid] / 2)

    measure("")
    place("", 0.0, 0.0)
    return centres


def _place(nodes: list[dict], graph: CompGraph, hierarchy: Sequence[str], members: list[np.ndarray],
           boxes: set[str]) -> None:
    """Give each leaf node its ``position`` from :func:`nested_layout`; a node's level is where data first
    flows into it: the lowest topological level of its ops that have an input (an open box's: of all ops
    inside it; the lowest of all when none has one). Not the median: in a training graph most of a
    layer's ops are its gradients, so the median put the first layer last and drew the forward pass
    right to left; and not the lowest of all ops, which a layer's variables (level 0) would make 0."""
    lv = levels(graph)
    entry = lv.astype(float)
    entry[np.bincount(graph.edge_dst, minlength=graph.num_ops) == 0] = np.inf

    def first(ops: np.ndarray) -> float:
        low = entry[ops].min()
        return float(low if np.isfinite(low) else lv[ops].min())

    inside: dict[str, list[int]] = {scope_node_id(b): [] for b in boxes}
    for i, scope in enumerate(hierarchy):
        for prefix in ancestors(scope):
            if prefix in boxes:
                inside[scope_node_id(prefix)].append(i)
    leaves = [n["data"] for n in nodes if n["data"]["label"] != "open"]
    level_of = {d["id"]: first(m) for d, m in zip(leaves, members, strict=True)}
    level_of.update({b: first(np.array(v, dtype=np.int64)) for b, v in inside.items()})
    parent_of = {n["data"]["id"]: n["data"].get("parent", "") for n in nodes}
    centres = nested_layout(parent_of, level_of, {d["id"]: d["_size"] for d in leaves})
    for n in nodes:
        if n["data"]["id"] in centres:
            x, y = centres[n["data"]["id"]]
            n["position"] = {"x": round(x, 2), "y": round(y, 2)}


def _box_widths(nodes: list[dict]) -> dict[str, float]:
    """About the width of each open box (id → px): its leaves' slots, left to right, and its padding."""
    parent = {n["data"]["id"]: n["data"].get("parent", "") for n in nodes}
    span: dict[str, list[float]] = {}
    for n in nodes:
        if "position" not in n:
            continue
        x, up = n["position"]["x"], parent[n["data"]["id"]]
        while up:
            lo_hi = span.setdefault(up, [x, x])
            lo_hi[0], lo_hi[1] = min(lo_hi[0], x), max(lo_hi[1], x)
            up = parent.get(up, "")
    return {b: hi - lo + _LEAF_W + 2 * _PAD for b, (lo, hi) in span.items()}


def _captions(nodes: list[dict]) -> None:
    """Give each node its ``_caption``: the part of its name that tells it apart from its siblings (the
    nodes drawn in the same box), fitted to :data:`CAPTION_W` px (an open box's title to its box) at the
    size it is drawn (:data:`CAPTION_PX`) by :func:`~dashboard.figures.graph_labels.sibling_captions`. A
    scope's name is its last part and keeps its op count whole (`` (70)``), a box's keeps `` (open)``; an
    op's is its name less its scope's path (``kernel`` in the box ``normal_conv_1_0``)."""
    widths = _box_widths(nodes)
    siblings: dict[str, list[tuple[dict, Caption]]] = {}
    for n in nodes:
        d = n["data"]
        if d["label"] == "op":
            scope = d["scope"] if d["scope"] != "-" else ""
            full = d["name"]
            short, suffix = (full[len(scope) + 1:] if scope and full.startswith(scope + "/") else full), ""
        elif d["label"] == "scope":
            short, suffix = d["id"][2:].rsplit("/", 1)[-1], f" ({d['ops']:,})"
        else:
            short, suffix = d["scope"].rsplit("/", 1)[-1], " (open)"
        px, bold = CAPTION_PX[d["label"]]
        width = widths.get(d["id"], CAPTION_W) if d["label"] == "open" else CAPTION_W
        siblings.setdefault(d.get("parent", ""), []).append((d, Caption(short, suffix, width, px, bold)))
    for group in siblings.values():
        for (d, _), caption in zip(group, sibling_captions([c for _, c in group]), strict=True):
            d["_caption"] = caption


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
    color_by : one of :data:`EXPLORER_COLOR_BY`. Groups take the majority device, the type doing most
        of their work (:mod:`dashboard.figures.op_types`, which also chooses the colours and legend of
        ``"op type"``), summed compute (s) and memory (persistent + output bytes), and their earliest start.
    highlight : bool per op; a node holding a marked op gets a thick red border.
    selected : an op index (picked in the timeline or the graph); its node is drawn red and large.

    Node data: ``label`` is ``"op"``, ``"scope"`` (collapsed, click to open) or ``"open"`` (a
    compound box, click to close); keys starting with ``_`` drive the style, the rest is the card.
    ``name`` is the whole name (a scope's last part and its op count); ``_caption``, drawn under the
    node, is fitted to its slot (:func:`_captions`).
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
    op_compute = graph.min_compute()
    compute = np.bincount(node_of_op, weights=op_compute, minlength=k)
    memory = np.bincount(node_of_op, weights=graph.persistent_bytes + graph.output_bytes, minlength=k)
    types = [t or "-" for t in dominant_types(graph.op_types, op_compute, node_of_op, k)]
    dname = list(device_names) if device_names is not None else (
        [] if devices is None else [f"device {d}" for d in range(int(np.max(devices)) + 1)])
    dev = None if devices is None else [int(_majority(devices, m)) for m in members]
    start = None if op_start is None else np.array([float(np.min(op_start[m])) for m in members])

    if color_by == "device":
        colors = [device_color(d) for d in dev]
        legend = {dname[d]: device_color(d) for d in sorted(set(dev))}
    elif color_by == "op type":
        colors, legend = type_colors(types, compute)
    elif color_by == "compute":
        colors, legend = _colors(compute, "compute", _fmt_s)
    elif color_by == "memory":
        colors, legend = _colors(memory, "memory", _fmt_b)
    else:
        colors, legend = _colors(start, "start", _fmt_s)

    marked = np.zeros(k, dtype=bool) if highlight is None else (
        np.bincount(node_of_op, weights=np.asarray(highlight, dtype=float), minlength=k) > 0)
    picked = -1 if selected is None else int(node_of_op[selected])
    cmax = compute.max() if k and compute.max() > 0 else 1.0
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
            data["scope"] = op_scope or "-"
        if dev is not None:
            data["device"] = dname[dev[g]]
        if start is not None:
            data["start"] = _fmt_s(start[g])
        if parent:
            data["parent"] = scope_node_id(parent)
            parents.update(ancestors(parent))
        nodes.append({"data": data})
    for scope in sorted(parents):
        data = {"id": scope_node_id(scope), "label": "open", "name": scope.rsplit("/", 1)[-1] + " (open)",
                "scope": scope}
        up = scope.rsplit("/", 1)[0] if "/" in scope else ""
        if up:
            data["parent"] = scope_node_id(up)
        nodes.append({"data": data})
    _place(nodes, graph, hierarchy, members, parents)
    _captions(nodes)
    wmax = max((w for *_, w in edges), default=1.0) or 1.0
    edge_elems = [{"data": {"id": f"e{i}", "source": ids[a], "target": ids[b], "label": "edge",
                            "edges": c, "bytes": _fmt_b(w), "_width": 0.8 + 4.0 * float(np.sqrt(w / wmax))}}
                  for i, (a, b, c, w) in enumerate(edges)]
    if highlight is not None and highlight.any():
        legend = {**legend, f"marked ({int(np.sum(highlight)):,} ops)": HIGHLIGHT}
    return Explorer({"nodes": nodes, "edges": edge_elems}, legend, node_of_op, ids)


def framed(elements: dict, frame: tuple[float, float] = FRAME_PX,
           margin: tuple[float, float, float, float] = MARGIN_PX) -> dict:
    """``elements`` and two invisible nodes (label ``"frame"``) at the corners of their extent widened by
    ``margin`` px (top, right, bottom, left) at the zoom that fits it to ``frame``.

    The component fits the whole graph to its frame with no padding whenever the frame is resized (its
    ResizeObserver calls Cytoscape's ``fit()``, which first happens as it opens), whatever the layout's
    padding, so the outermost captions touched the frame's edge and the first one sat under the side panel
    (``gen:nmt``'s "mbedding (123)"). The corners carry the margin into that fit. The extent counts each
    leaf's caption below it (its estimated width, :data:`CAPTION_W` when it has none) and, per open box
    around it, the box's padding and title.
    """
    parent = {n["data"]["id"]: n["data"].get("parent", "") for n in elements["nodes"]}

    def depth(node_id: str) -> int:
        d, up = 0, parent.get(node_id, "")
        while up:
            d, up = d + 1, parent.get(up, "")
        return d

    def half_width(d: dict) -> float:
        caption = text_width(d["_caption"], *CAPTION_PX[d["label"]]) if "_caption" in d else CAPTION_W
        return max(caption, d["_size"]) / 2 + depth(d["id"]) * _BOX_SIDE

    boxes = [(n["position"]["x"], n["position"]["y"], n["data"]["_size"] / 2, half_width(n["data"]),
              depth(n["data"]["id"])) for n in elements["nodes"] if "position" in n]
    if not boxes:
        return elements
    x1 = min(x - w for x, _, _, w, _ in boxes)
    x2 = max(x + w for x, _, _, w, _ in boxes)
    y1 = min(y - r - d * _BOX_TOP for _, y, r, _, d in boxes)
    y2 = max(y + r + _CAPTION_H + d * _BOX_SIDE for _, y, r, _, d in boxes)
    top, right, bottom, left = margin
    zoom = min((frame[0] - left - right) / max(x2 - x1, 1.0), (frame[1] - top - bottom) / max(y2 - y1, 1.0))
    corners = [{"data": {"id": f"frame:{k}", "label": "frame"}, "position": {"x": round(x, 2), "y": round(y, 2)},
                "selectable": False, "grabbable": False}
               for k, x, y in (("top-left", x1 - left / zoom, y1 - top / zoom),
                               ("bottom-right", x2 + right / zoom, y2 + bottom / zoom))]
    return {**elements, "nodes": [*elements["nodes"], *corners]}
