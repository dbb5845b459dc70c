"""The Graphs page's graph picker: an example, a generator spec or an uploaded file becomes the current graph
of every page on *Use this graph* (or on the upload)."""

from __future__ import annotations

import hashlib

import streamlit as st

from dashboard import state as keys
from dashboard.context import current_graph, graph_spec, keep, set_graph
from dashboard.data.graphs import MAX_UPLOAD_BYTES, example_sources, graph_from_spec, graph_from_upload
from dashboard.widgets.ui import guard

__all__ = ["SOURCES", "graph_picker", "show_in_picker"]

SOURCES = ("Example", "Generator spec", "Upload a file")
#: What the generator-spec box holds at first.
FIRST_SPEC = "gen:random?ops=300&seed=0"


def show_in_picker(spec: str, label: str) -> None:
    """Set the picker to the graph of ``spec`` (an example's, or a typed spec), as if the visitor had picked it
    (a link's graph after a reload). Call before the picker is drawn."""
    examples = example_sources()
    if examples.get(label) == spec:
        st.session_state[keys.GRAPHS_SOURCE], st.session_state[keys.GRAPHS_EXAMPLE] = SOURCES[0], label
    else:
        st.session_state[keys.GRAPHS_SOURCE], st.session_state[keys.GRAPHS_SPEC] = SOURCES[1], spec


def _upload() -> bool:
    from engine.graph.formats import FORMATS
    from engine.specs import _load_importers

    _load_importers()
    st.caption("Formats (detected from the content): " + "; ".join(f"{f.name} — {f.description}" for f in FORMATS))
    upload = st.file_uploader(f"Graph file (at most {MAX_UPLOAD_BYTES // 2**20} MB)", key=keys.GRAPHS_UPLOAD)
    if upload is None:
        return True
    if upload.size > MAX_UPLOAD_BYTES:
        st.error(f"{upload.name} is {upload.size / 2**20:.0f} MB, more than the {MAX_UPLOAD_BYTES // 2**20} MB limit.")
        return False
    data = upload.getvalue()
    digest = hashlib.sha256(data).hexdigest()
    if st.session_state.get(keys.UPLOAD_DIGEST) == digest:
        return True
    ok = False
    with guard(upload.name), st.spinner(f"Parsing {upload.name} ..."):
        set_graph(graph_from_upload(digest, upload.name, data), f"upload: {upload.name}")
        st.session_state[keys.UPLOAD_DIGEST] = digest
        ok = True
    if ok:
        st.rerun()  # the sidebar, drawn before this page, shows the new graph
    return ok


def graph_picker() -> bool:
    """Widgets that choose a graph; it becomes the app's current graph only on *Use this graph* (or an upload).

    Returns False when the last attempt failed (the error is shown; the current graph is unchanged).
    """
    from dashboard.input_guard import graph_spec as visitor_spec

    source = st.radio("Graph source", SOURCES, horizontal=True,
                      key=keep(keys.GRAPHS_SOURCE, SOURCES[0], options=SOURCES))
    if source == SOURCES[2]:
        return _upload()
    if source == SOURCES[0]:
        examples = example_sources()
        choice = st.selectbox("Example graph", list(examples),
                              key=keep(keys.GRAPHS_EXAMPLE, next(iter(examples)), options=list(examples)))
        spec, label = examples[choice], choice
    else:
        from engine.generators import generator_descriptions

        gens = generator_descriptions()
        st.caption("Generators: " + "; ".join(f"`gen:{n}` — {d}" for n, d in gens.items()))
        spec = st.text_input("Generator spec", key=keep(keys.GRAPHS_SPEC, FIRST_SPEC),
                             help="gen:NAME?key=value&... (CONTRACTS §5), bench:NAME or upload:NAME; "
                                  "not a path on the server (upload a file instead)").strip()
        label = spec
    same = spec == graph_spec() and current_graph() is not None
    if not st.button("Reload this graph" if same else "Use this graph", key=keys.GRAPHS_USE, type="primary",
                     disabled=not spec, help="Make it the current graph of every page (shown in the sidebar)"):
        return True
    ok = False
    with guard(), st.spinner(f"Loading {spec} ..."):
        # a visitor names generator specs (within the app's sizes), examples and uploads, never a server file
        set_graph(graph_from_spec(visitor_spec(spec, example_sources().values())), label or spec, spec)
        ok = True
    if ok:
        st.rerun()  # the sidebar, drawn before this page, shows the new graph
    return ok
