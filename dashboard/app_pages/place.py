"""Place: run one or more registered placers on the current graph and look at the results.

The results in hand are kept as runs (the scratch store) and named in the link with the placers chosen and
the what-if edits of each (:mod:`dashboard.widgets.whatif`), so a reload or a shared link brings them back.
"""

from __future__ import annotations

import streamlit as st

from dashboard import state as keys
from dashboard.context import cluster_label, current_cluster, current_graph, keep
from dashboard.data import link
from dashboard.data.place import DEFAULT_PLACERS, results_from_runs
from dashboard.data.runs import PLACEMENT_KINDS
from dashboard.stores import scratch_store
from dashboard.widgets.link import linked_runs, set_page_params, take
from dashboard.widgets.place_form import placer_settings, run_placers
from dashboard.widgets.place_results import show_results
from dashboard.widgets.whatif import edits_param, restore_edits
from engine.errors import PlacelabError
from policies.registry import PLACERS, placer_descriptions


def _from_link() -> None:
    """On the session's first run: the placers and the results the link names (each through the guard)."""
    text = take(link.PLACERS)
    if text is not None:
        try:
            st.session_state[keys.PLACE_PLACERS] = link.read_placers(text)
        except PlacelabError as exc:
            st.warning(f"Ignored the link's placers: {exc}", icon=":material/link_off:")
    runs = linked_runs(link.RESULTS, PLACEMENT_KINDS, scratch=True)
    if runs:
        with st.spinner("Bringing back the results the link names ..."):
            state, warnings = results_from_runs(runs, scratch_store())
        for line in warnings:
            st.warning(line, icon=":material/link_off:")
        if state is not None:
            st.session_state[keys.PLACE_RESULTS] = state
    edits = take(link.EDITS)
    if edits is not None:
        restore_edits(edits)


def _link_params(chosen: list[str]) -> None:
    state = st.session_state.get(keys.PLACE_RESULTS) or {}
    set_page_params({link.PLACERS: ",".join(chosen),
                     link.RESULTS: link.ids_param(r.get("run_id") or r.get("kept_id")
                                                  for r in state.get("results", [])),
                     link.EDITS: edits_param(state)})


def page() -> None:
    st.title("Place")
    _from_link()
    g = current_graph()
    names = list(PLACERS)
    if g is None:
        st.info("Choose a graph on the Graphs page first; every page works on that one (sidebar).")
        _link_params([n for n in st.session_state.get(keys.PLACE_PLACERS) or [] if n in names])
        show_results(None, None)
        return
    cluster = current_cluster()
    st.caption(f"On **{g.name}** ({g.num_ops:,} ops) and **{cluster_label(cluster)}** — change either in the "
               "sidebar / on the Graphs page.")
    descriptions = placer_descriptions()
    defaults = [n for n in DEFAULT_PLACERS if n in names] or names[:1]
    chosen = st.multiselect("Placers", names, key=keep(keys.PLACE_PLACERS, defaults, options=names),
                            format_func=lambda n: f"{n} — {descriptions[n]}")
    settings = placer_settings(chosen)
    if st.button("Run placers", type="primary", disabled=not chosen, key=keys.PLACE_RUN):
        run_placers(g, cluster, chosen, settings)
    _link_params(chosen)
    show_results(g, cluster)
