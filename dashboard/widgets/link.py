"""The view in the app's link on the page (issue #33): read once per session, written at the end of each run.

A reload (or an opened link) starts a new session: :func:`read_link` makes the link's graph, cluster and
simulation settings the view before the sidebar is drawn, and keeps its page parameters for the page
shown (:func:`take`, :func:`linked_runs`) during that first run. :func:`write_link` puts the view back into
the link at the end of every run, the page's own parameters (:func:`set_page_params`) with it, in one
change (Streamlit adds a browser-history entry per change of the link). :mod:`dashboard.data.link` reads and
writes the parameters, through the app's guard (:mod:`dashboard.visitor`).
"""

from __future__ import annotations

from collections.abc import Iterable

import streamlit as st

from dashboard import state as keys
from dashboard.context import current_cluster, current_graph, graph_label, graph_spec, set_cluster, set_graph
from dashboard.data import link
from dashboard.stores import example_runs_dir, run_store, scratch_store
from dashboard.visitor import keep_upload
from dashboard.widgets.graph_picker import show_in_picker
from engine.errors import PlacelabError
from engine.runs import Run, RunStore

__all__ = ["app_stores", "linked_runs", "read_link", "set_page_params", "show_link_warnings", "take", "write_link"]


def read_link() -> None:
    """On a session's first run (a load or a reload of the page): the link's graph, cluster and simulation
    settings become the view, its page parameters wait for the page, refused values for
    :func:`show_link_warnings`. Call at the top of the entry script, before the sidebar is drawn."""
    st.session_state[keys.LINK_PAGE] = {}
    if st.session_state.get(keys.LINK_READ):
        st.session_state[keys.LINK_PENDING] = {}
        return
    st.session_state[keys.LINK_READ] = True
    view = link.read_link({name: st.query_params[name] for name in st.query_params})
    if view.graph is not None:
        graph, label, spec = view.graph
        set_graph(graph, label, spec)
        show_in_picker(spec, label)
    if view.cluster is not None or view.mode is not None or view.settings:
        set_cluster(view.cluster, view.mode, view.settings)
    st.session_state[keys.LINK_PENDING] = view.pages
    st.session_state[keys.LINK_WARNINGS] = view.warnings


def show_link_warnings() -> None:
    """One warning per value of the link the app refused (once)."""
    for line in st.session_state.pop(keys.LINK_WARNINGS, None) or ():
        st.warning(line, icon=":material/link_off:")


def take(name: str) -> str | None:
    """The link's page parameter ``name`` on the session's first run (once), else None."""
    return (st.session_state.get(keys.LINK_PENDING) or {}).pop(name, None)


def app_stores(scratch: bool = False) -> list[RunStore]:
    """The stores a link may name runs of: the Place page's results in hand (``scratch``), the user's, the
    bundled examples."""
    roots = [scratch_store()] if scratch else []
    roots += [run_store(), RunStore(example_runs_dir())]
    return [s for s in roots if s.root.is_dir()]


def linked_runs(name: str, kinds: Iterable[str] = (), scratch: bool = False) -> list[Run] | None:
    """The runs the link's page parameter ``name`` names (on the session's first run; None otherwise), each
    through the guard; a warning for each refused."""
    text = take(name)
    if text is None:
        return None
    runs, warnings = link.read_runs(text, app_stores(scratch), kinds, name=name)
    for line in warnings:
        st.warning(line, icon=":material/link_off:")
    return runs


def set_page_params(params: dict[str, str | None]) -> None:
    """The page's own parameters of the link this run (None or "": none)."""
    st.session_state.setdefault(keys.LINK_PAGE, {}).update(params)


def _graph_spec() -> str | None:
    """The current graph's spec; an upload is kept in the app's upload folder first, so the link can name it."""
    spec, g = graph_spec(), current_graph()
    if g is not None and not spec:
        try:
            spec = keep_upload(g)
        except (PlacelabError, OSError):
            return None
        st.session_state[keys.GRAPH_SPEC] = spec
    return spec


def write_link() -> None:
    """Put the view (and the page's parameters) into the link, in one change and only when it changed. Call
    at the end of the entry script."""
    params = link.view_params(_graph_spec(), graph_label(), current_cluster())
    params |= {k: v for k, v in (st.session_state.get(keys.LINK_PAGE) or {}).items() if v}
    st.session_state[keys.LINK_PENDING] = {}
    if {name: st.query_params[name] for name in st.query_params} != params:
        st.query_params.from_dict(params)
