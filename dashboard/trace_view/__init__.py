"""A schedule timeline drawn like a trace viewer (Perfetto / chrome://tracing): issue #17, item 5.

"Zoom stays smooth for a 100k-op schedule and shows single ops with their names once zoomed in
(bins only when zoomed out)." The plotly timeline re-bins on the server at every zoom; this view
gets the whole schedule once (:func:`~dashboard.trace_view.payload.trace_payload`, typed arrays as
base64) and draws it on a ``<canvas>`` in the browser: wheel to zoom around the cursor, drag to
pan, double-click or *Fit* for the whole schedule, hover for an op's card, all without a Streamlit
rerun. Each frame picks its level of detail: ops narrower than 1.5 px become per-pixel-column busy
bars, wider ops are drawn one by one and named when the name fits. A click on an op is the only
thing sent back (trigger ``op``). Built with Streamlit's Custom Components v2 API
(``st.components.v2.component``), inline JS and CSS from this folder, nothing built or downloaded.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import streamlit as st

from dashboard.trace_view.payload import trace_payload
from engine.cluster import Cluster
from engine.graph.compgraph import CompGraph
from engine.sim.schedule import Schedule

__all__ = ["clicked_op", "show_trace_view", "trace_payload"]

_HERE = Path(__file__).resolve().parent
_COMPONENT = st.components.v2.component(
    "placelab.trace_view",
    js=(_HERE / "trace_view.js").read_text(encoding="utf-8"),
    css=(_HERE / "trace_view.css").read_text(encoding="utf-8"),
)


def clicked_op(value: object, num_ops: int) -> int | None:
    """The op index a click in the trace view sent (its ``op`` trigger value), or None when it is no op."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not float(value).is_integer():
        return None
    op = int(value)
    return op if 0 <= op < num_ops else None


def _ignore(op: int) -> None:
    """No one listens to the clicks."""


def _on_click(key: str, num_ops: int, on_pick: Callable[[int], None]) -> None:
    op = clicked_op((st.session_state.get(key) or {}).get("op"), num_ops)
    if op is not None:
        on_pick(op)


def show_trace_view(schedule: Schedule, graph: CompGraph, cluster: Cluster, *, key: str, view_id: str,
                    marked: np.ndarray | None = None, on_pick: Callable[[int], None] | None = None) -> None:
    """Mount the trace view of ``schedule`` under ``key``; ``marked`` ops get a red outline; a click on an op
    calls ``on_pick(op_index)`` (before the rerun it starts). ``view_id`` names the schedule: the zoom
    stays while it does."""
    payload = trace_payload(schedule, graph, cluster, view_id=view_id, marked=marked)
    _COMPONENT(key=key, data=payload, on_op_change=partial(_on_click, key, graph.num_ops, on_pick or _ignore))
