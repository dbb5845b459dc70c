"""The graph explorer on a page: the streamlit-cytoscape component (Cytoscape.js, bundled in the
wheel; nothing is fetched at run time) over :func:`explorer_elements`.

Click a collapsed scope to open it, click an open scope's box to close it, click an op to select
it (the timeline above highlights it). Ops picked in the timeline arrive through
:func:`pick_op` and are revealed and marked here. The state per view lives in
``st.session_state[keys.explorer_state(key)]``: ``{"expanded": set, "selected": int | None, "seen": ts,
"revealed": the search last handled, "focus": ops the view fits to (a search's matches, a timeline pick)}``.
"""

from __future__ import annotations

import hashlib
import html
from functools import partial

import numpy as np
import streamlit as st
from streamlit_cytoscape import EdgeStyle, Event, NodeStyle, streamlit_cytoscape

from dashboard import state as keys
from dashboard.context import keep
from dashboard.figures.explorer import (
    CAPTION_PX,
    EXPLORER_COLOR_BY,
    REVEAL_UP_TO,
    Explorer,
    explorer_elements,
    focus_selector,
    framed,
    reveal,
)
from dashboard.figures.scope_tree import hierarchy_scopes, initial_expanded
from dashboard.figures.timeline import match_ops
from engine.errors import quote
from engine.graph.compgraph import CompGraph
from engine.graph.dag import levels

#: Visible nodes the explorer opens scopes up to on first view: few enough that the first view, fit to
#: the frame, is drawn at a zoom where the labels show (``min-zoomed-font-size`` below); measured with
#: ``benchmarks/bench_explorer_labels.py`` (docs/lab/2026-11-27-explorer-first-view.md).
FIRST_VIEW_NODES = 40
#: An op's label size, and the size on screen under which Cytoscape leaves labels out (so a label shows
#: at zoom ≥ LABEL_MIN_PX / LABEL_PX; a scope's, 14 px, a little further out).
LABEL_PX, LABEL_MIN_PX = CAPTION_PX["op"][0], 5
#: Captions come fitted to a leaf's slot (110 px wide, 40 apart) from Python with the op count kept whole
#: (:func:`~dashboard.figures.explorer.explorer_elements`), so Cytoscape never cuts them; the font is the one
#: their widths are estimated in (Helvetica's metrics, :mod:`dashboard.figures.graph_labels`).
_FONT = "Helvetica Neue, Helvetica, Arial, Liberation Sans, sans-serif"
_NODE = {"background-color": "data(_color)", "width": "data(_size)", "height": "data(_size)",
         "border-width": "data(_bw)", "border-color": "data(_bc)", "font-size": LABEL_PX, "font-family": _FONT,
         "min-zoomed-font-size": LABEL_MIN_PX, "text-wrap": "none"}
STYLES = [
    NodeStyle("op", caption="_caption", custom_styles=_NODE),
    NodeStyle("scope", caption="_caption", custom_styles={**_NODE, "shape": "round-rectangle",
                                                          "font-size": CAPTION_PX["scope"][0], "font-weight": "bold"}),
    NodeStyle("open", caption="_caption", custom_styles={
        "shape": "round-rectangle", "background-color": "#8899aa", "background-opacity": 0.08, "border-width": 1,
        "border-color": "#8899aa", "text-valign": "top", "text-halign": "center", "font-size": CAPTION_PX["open"][0],
        "font-family": _FONT, "padding": 8}),
    # the view's margins (figures.explorer.framed): two invisible points the component's fit counts
    NodeStyle("frame", custom_styles={"width": 1, "height": 1, "opacity": 0, "events": "no"}),
    EdgeStyle("edge", directed=True, custom_styles={"width": "data(_width)", "curve-style": "bezier",
                                                    "line-color": "#9aa4ae", "target-arrow-color": "#9aa4ae",
                                                    "opacity": 0.6}),
]
_EVENTS = [Event("tap_node", "tap", "node")]


def layout_for(expanded: set[str] | frozenset[str], graph_hash: str = "", focus: str | None = None) -> dict:
    """The positions computed in Python (Cytoscape's ``preset``), fit to the view; ``view`` changes with
    the graph and the open set, so the component places (and fits) again after each expand / collapse.
    The whole view carries its margins in its frame nodes (:func:`~dashboard.figures.explorer.framed`), so
    it is fit with no padding, as the component's own fit on a resize does. ``focus``, a selector
    (:func:`~dashboard.figures.explorer.focus_selector`), fits the view to those nodes instead, 48 px
    around them: Cytoscape's preset layout fits its ``eles``."""
    view = hashlib.sha1("\n".join([graph_hash, *sorted(expanded)]).encode()).hexdigest()[:12]
    layout = {"name": "preset", "fit": True, "padding": 0, "animate": False, "view": view}
    return layout if focus is None else {**layout, "padding": 48, "eles": focus}


@st.cache_data(max_entries=8, show_spinner=False)
def _hierarchy(_graph: CompGraph, graph_hash: str) -> tuple[list[str], bool, frozenset[str]]:
    hierarchy, own = hierarchy_scopes(_graph.scope, levels(_graph))
    return hierarchy, own, frozenset(initial_expanded(hierarchy, FIRST_VIEW_NODES))


def _state(key: str, graph: CompGraph) -> dict:
    state = st.session_state.get(keys.explorer_state(key))
    if state is None or state["graph"] != graph.content_hash:
        _, _, first = _hierarchy(graph, graph.content_hash)
        state = {"graph": graph.content_hash, "expanded": set(first), "selected": None, "seen": None}
        st.session_state[keys.explorer_state(key)] = state
    return state


def pick_op(key: str, graph: CompGraph, op: int | None) -> None:
    """Select ``op`` in the explorer ``key`` (from the timeline): its scopes open, its node is marked and
    the view pans and zooms to it."""
    state = _state(key, graph)
    state["selected"] = op
    if op is not None:
        hierarchy, _, _ = _hierarchy(graph, graph.content_hash)
        state["expanded"] |= reveal(hierarchy, np.array([op]))
        state["focus"] = [op]


def selected_op(key: str) -> int | None:
    """The op selected in explorer ``key`` (by a click in the graph or in the timeline), if any."""
    state = st.session_state.get(keys.explorer_state(key))
    return None if state is None else state["selected"]


def apply_event(key: str, graph: CompGraph, event: dict | None) -> None:
    """Apply a component event (``{"action", "data": {"target_id"}, "timestamp"}``) to explorer ``key``:
    a click on a collapsed scope opens it, on an open scope's box closes it (and all below), on an op
    selects it. An event already applied (same timestamp) does nothing. Opening or closing a scope
    fits the view to the whole graph again."""
    state = _state(key, graph)
    if not event or event.get("timestamp") == state["seen"]:
        return
    state["seen"] = event.get("timestamp")
    target = str((event.get("data") or {}).get("target_id", ""))
    if target.startswith("op:"):
        state["selected"] = op_index(graph).get(target[3:])
    elif target.startswith("s:"):
        state["focus"] = None
        scope = target[2:]
        if scope in state["expanded"]:
            state["expanded"] = {s for s in state["expanded"] if s != scope and not s.startswith(scope + "/")}
        else:
            state["expanded"].add(scope)


def _on_event(key: str, graph: CompGraph) -> None:
    apply_event(key, graph, st.session_state.get(keys.explorer_event(key)))


@st.cache_data(max_entries=8, show_spinner=False)
def _op_index_cached(_graph: CompGraph, graph_hash: str) -> dict[str, int]:
    return {n: i for i, n in enumerate(_graph.op_names)}


def op_index(graph: CompGraph) -> dict[str, int]:
    """Op name → index, cached per graph."""
    return _op_index_cached(graph, graph.content_hash)


def _digest(a: np.ndarray | None) -> str:
    return "" if a is None else hashlib.sha1(np.ascontiguousarray(a).tobytes()).hexdigest()


@st.cache_resource(max_entries=32, show_spinner=False)
def _elements(graph_hash: str, expanded: frozenset[str], devices: str, device_names: tuple[str, ...] | None,
              op_start: str, color_by: str, highlight: str, selected: int | None, _graph: CompGraph,
              _hierarchy: list[str], _devices: np.ndarray | None, _op_start: np.ndarray | None,
              _highlight: np.ndarray | None) -> Explorer:
    """The explorer's elements, built once per graph, open scopes, placement and marks (for every session:
    returning to a page of many results draws their explorers from the cache). Read only."""
    return explorer_elements(_graph, _hierarchy, set(expanded), devices=_devices, device_names=device_names,
                             op_start=_op_start, color_by=color_by, highlight=_highlight, selected=selected)


def show_explorer(graph: CompGraph, *, key: str, devices: np.ndarray | None = None,
                  device_names: list[str] | None = None, op_start: np.ndarray | None = None,
                  highlight: np.ndarray | None = None, highlight_label: str = "marked") -> None:
    """The explorer with its controls: colour by, search by op name / type / scope (up to
    :data:`REVEAL_UP_TO` matches open their scopes and the view pans and zooms to them; all are marked),
    reset to the first view."""
    hierarchy, own, first = _hierarchy(graph, graph.content_hash)
    state = _state(key, graph)
    options = [c for c in EXPLORER_COLOR_BY if (c != "device" or devices is not None)
               and (c != "start time" or op_start is not None)]
    cols = st.columns([4, 3, 1], vertical_alignment="bottom")
    color_by = cols[0].radio("Color by", options, horizontal=True,
                             key=keep(keys.part(key, "color_by"), options[0], options=options))
    query = cols[1].text_input("Search ops (name, type or scope)", key=keep(keys.part(key, "search"), ""))
    if cols[2].button("Reset view", key=keys.part(key, "reset"),
                      help="Back to the first view: scopes closed as on opening"):
        state.update(expanded=set(first), selected=None, focus=None)
    if query.strip():
        hits = match_ops(graph, query)
        if state.get("revealed") != query:  # once per query: a scope closed after stays so
            few = 0 < hits.sum() <= REVEAL_UP_TO
            if few:
                state["expanded"] |= reveal(hierarchy, np.flatnonzero(hits))
            state.update(revealed=query, focus=np.flatnonzero(hits).tolist() if few else None)
        highlight = hits
        highlight_label = f"matches {quote(query.strip())}" + (
            "" if hits.sum() <= REVEAL_UP_TO else f"; more than {REVEAL_UP_TO}, so their scopes stay as they are")
    elif state.get("revealed"):  # the search cleared: the whole graph again
        state.update(revealed=None, focus=None)
    view = _elements(graph.content_hash, frozenset(state["expanded"]), _digest(devices),
                     None if device_names is None else tuple(device_names), _digest(op_start), color_by,
                     _digest(highlight), state["selected"], graph, hierarchy, devices, op_start, highlight)
    opened = sorted(s for s in state["expanded"] if s)
    what = "layer scopes" if own else "bands of topological levels (the graph has no layer scopes)"
    picked = "" if state["selected"] is None else f" · selected: **{graph.op_names[state['selected']]}**"
    op_click = "select it in the timeline" if op_start is not None else "select it"
    st.caption(f"{graph.num_ops:,} ops grouped by {what}: {len(view.node_ids):,} nodes shown, "
               f"{len(opened):,} scopes open{picked}. Click a scope to open it, its box to close it, an op to "
               f"{op_click}; scroll to zoom, the side panel shows the clicked node's card.")
    if highlight is not None and highlight.any():
        st.caption(f"Red border: {highlight_label} ({int(highlight.sum()):,} ops).")
    elif query.strip():
        st.caption(f"No op matches {quote(query.strip())} (0 matches in names, types and scopes).")
    legend = " ".join(f'<span style="color:{c}">●</span> {html.escape(name or "(none)")}'
                      for name, c in list(view.legend.items())[:14])
    st.markdown(legend, unsafe_allow_html=True)
    focus = focus_selector(view, np.array(state["focus"])) if state.get("focus") else None
    streamlit_cytoscape(framed(view.elements), layout=layout_for(state["expanded"], graph.content_hash, focus),
                        node_styles=STYLES[:4], edge_styles=STYLES[4:], height=620, key=keys.explorer_event(key),
                        events=_EVENTS, on_change=partial(_on_event, key, graph))
