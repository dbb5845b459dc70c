"""The view in the app's link on the page (issue #33): read once per session, written at the end of each run.

A reload (or an opened link) starts a new session: :func:`read_link` makes the link's graph, cluster and
simulation settings the view before the sidebar is drawn, and keeps its page parameters for the page
shown (:func:`take`, :func:`linked_runs`) during that first run. :func:`write_link` puts the view back into
the link at the end of every run, the page's own parameters (:func:`set_page_params`) with it, in one
change (Streamlit adds a browser-history entry per change of the link). :mod:`dashboard.data.link` reads and
writes the parameters, through the app's guard (:mod:`dashboard.input_guard`).

Besides the runs a page names (``run``, ``runs``, ``results``), a page keeps in the link every other choice that
changes what it draws (Compare's pair of timelines and its toggles, ...; :data:`dashboard.data.link.PAGE_PARAMS`
lists them all). Such a value is only ever compared with the choices the page offers (:func:`linked_choice`,
:func:`linked_choices`, :func:`linked_flag`): one it does not offer is a warning and the page's default stays. A
link without them opens on the page's defaults.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import streamlit as st

from dashboard import state as keys
from dashboard.context import current_cluster, current_graph, graph_label, graph_spec, set_cluster, set_graph
from dashboard.data import link
from dashboard.input_guard import keep_upload
from dashboard.stores import example_runs_dir, run_store, scratch_store
from dashboard.widgets.graph_picker import show_in_picker
from engine.errors import PlacelabError
from engine.store.runs import Run, RunStore

__all__ = ["app_stores", "choices_param", "flag_param", "linked_choice", "linked_choices", "linked_flag", "linked_runs",
           "read_link", "set_page_params", "show_link_warnings", "take", "write_link"]

#: A list choice that holds nothing (the visitor emptied it), as the link writes it.
NONE = "none"
#: A switch as the link writes it.
ON, OFF = "on", "off"


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


def _refuse_choice(name: str) -> None:
    st.warning(f"Ignored the link's {name}: not one of the choices this page offers", icon=":material/link_off:")


def linked_choice(name: str, key: str, options: Sequence[Any], text: Callable[[Any], str] = str) -> None:
    """On the session's first run: the option whose link text (``text``) is the link's ``name`` becomes widget
    ``key``'s value (a warning where the page offers none such). Call before the widget is drawn."""
    value = take(name)
    if value is None:
        return
    by_text = {text(o): o for o in options}
    if value.strip() in by_text and len(value) <= link.MAX_VALUE:
        st.session_state[key] = by_text[value.strip()]
    else:
        _refuse_choice(name)


def linked_choices(name: str, key: str, options: Sequence[str]) -> None:
    """On the session's first run: the options the link's ``name`` lists (comma separated; :data:`NONE`: none)
    become widget ``key``'s value; a warning where it lists one the page does not offer (the rest apply)."""
    value = take(name)
    if value is None:
        return
    listed = [] if value.strip() == NONE else [i.strip() for i in value[:link.MAX_VALUE].split(",") if i.strip()]
    chosen = [i for i in dict.fromkeys(listed[:link.MAX_IDS]) if i in options]
    if len(chosen) < len(listed) or len(value) > link.MAX_VALUE:
        _refuse_choice(name)
    if chosen or not listed:
        st.session_state[key] = chosen


def linked_flag(name: str, key: str) -> None:
    """On the session's first run: the link's ``name`` (:data:`ON` or :data:`OFF`) sets switch ``key``."""
    linked_choice(name, key, (True, False), lambda on: ON if on else OFF)


def choices_param(chosen: Iterable[str]) -> str:
    """A list choice as the link holds it (:data:`NONE` when empty, so a reload keeps it empty)."""
    return link.ids_param(chosen) or NONE


def flag_param(on: bool, default: bool = False) -> str | None:
    """A switch as the link holds it: None (left out) while it is at its ``default``."""
    return None if bool(on) == default else (ON if on else OFF)


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
