"""One stored run on the Runs page: edit it (rename, tag, delete) and download its data, trace and figures."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import streamlit as st

from dashboard import state as keys
from dashboard.context import forget, keep
from dashboard.data.link import FIGURE
from dashboard.data.runs import has_placement, is_example, replay, run_label
from dashboard.figures import load_profile, memory_over_time, timeline
from dashboard.perfetto import open_in_perfetto
from dashboard.widgets.link import linked_choice, set_page_params
from dashboard.widgets.ui import figure_export_controls, guard
from engine.store.records import export_trace
from engine.store.runs import Run, RunStore

__all__ = ["FIGURES", "downloads", "edit"]

FIGURES: dict[str, Callable] = {
    "timeline": lambda s, pr: timeline(s, pr.graph, pr.cluster),
    "load profile": lambda s, pr: load_profile(s, pr.graph, pr.cluster),
    "memory over time": lambda s, pr: memory_over_time(s, pr.cluster, memory_known=pr.graph.memory_known),
}


def edit(store: RunStore, run: Run, then: str | None = None) -> None:
    """Rename, tag or delete ``run``; after a delete the page shows run ``then`` (the next in its list)."""
    st.subheader("Edit")
    if is_example(run):
        st.caption("A bundled example: read-only (the app never changes the examples). Re-run it on the Place "
                   "page to get an editable copy in your own store.")
        return
    cols = st.columns(3)
    with cols[0]:
        name = st.text_input("Name", value=run.meta.get("name") or run.id, key=keys.runs_edit("name", run.id))
        if st.button("Rename", key=keys.RUNS_RENAME):
            with guard("Rename"):
                store.rename(run.id, name)
                st.session_state[keys.RUNS_KEEP_SELECTED] = run.id
                st.rerun()
    with cols[1]:
        tags = st.text_input("Tags (comma separated)", value=", ".join(run.meta.get("tags", [])),
                             key=keys.runs_edit("tags", run.id))
        if st.button("Save tags", key=keys.RUNS_SAVE_TAGS):
            with guard("Tags"):
                store.set_tags(run.id, [t.strip() for t in tags.split(",")])
                st.session_state[keys.RUNS_KEEP_SELECTED] = run.id
                st.rerun()
    with cols[2]:
        sure = st.checkbox(f"Yes, delete {run.id} and all its files", key=keys.runs_edit("confirm", run.id))
        if st.button("Delete run", disabled=not sure, key=keys.RUNS_DELETE, type="primary"):
            with guard("Delete"):
                store.delete(run.id)
                forget(keys.RUNS_SELECTED)
                st.session_state[keys.RUNS_KEEP_SELECTED] = then  # the picker moves to it, the link with it
                st.rerun()


@st.cache_data(max_entries=4, show_spinner=False)
def _trace(run_dir: str, updated: str) -> bytes:
    """The Chrome trace of the run in ``run_dir`` (``updated``: its last change, so an edit refreshes it)."""
    run_path = Path(run_dir)
    with tempfile.TemporaryDirectory(prefix="placelab-trace-") as tmp:
        path = Path(tmp) / "trace.json"
        export_trace(RunStore(run_path.parent).load(run_path.name), str(path))
        return path.read_bytes()


def downloads(run: Run) -> None:
    st.subheader("Downloads")
    files = set(run.files())
    cols = st.columns(4)
    for col, (fname, label, mime) in zip(cols, (
            ("schedule_ops.csv", "Schedule CSV (ops)", "text/csv"),
            ("schedule_transfers.csv", "Schedule CSV (transfers)", "text/csv"),
            ("placement.json", "Placement JSON", "application/json")), strict=False):
        if fname in files:
            col.download_button(label, (run.path / fname).read_bytes(), file_name=f"{run.id}-{fname}", mime=mime,
                                key=keys.runs_download(fname))
    if not has_placement(run):
        st.caption("This run stores no placement, so there is no trace or figure to export.")
        return
    with guard("Chrome trace"):
        # the bytes themselves, not a callable: the Perfetto hand-off needs them on every render
        # anyway (cached), and a deferred download's click could be lost to a rerun of the page
        trace = _trace(str(run.path), str(run.meta.get("updated")))
        cols[3].download_button("Chrome trace (Perfetto)", trace, file_name=f"{run.id}-trace.json",
                                mime="application/json", key=keys.RUNS_TRACE)
        open_in_perfetto(trace, title=run_label(run), file_name=f"{run.id}-trace.json", key=keys.RUNS_PERFETTO)
    linked_choice(FIGURE, keys.RUNS_FIGURE, list(FIGURES))
    which = st.selectbox("Figure", list(FIGURES), key=keep(keys.RUNS_FIGURE, options=list(FIGURES)))
    set_page_params({FIGURE: None if which == next(iter(FIGURES)) else which})
    with guard("Figure"):
        pr, schedule = replay(run)
        fig = FIGURES[which](schedule, pr)
        fig.update_layout(title=f"{fig.layout.title.text} — {run_label(run)}")
        figure_export_controls(fig, keys.runs_figure_export(which))
