"""Runs: browse, filter, rename, tag and delete stored runs; download their data and figures."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import streamlit as st

from dashboard.app_pages.measured import has_measurement, show_measured_run
from dashboard.app_pages.stored import has_placement, replay, run_label
from dashboard.common import (
    example_runs_dir,
    figure_export_controls,
    guard,
    is_example,
    list_runs,
    run_store,
    runs_dir,
    table_downloads,
)
from dashboard.figures import load_profile, memory_over_time, timeline
from dashboard.perfetto import open_in_perfetto
from engine.run_records import export_trace
from engine.runs import STATUSES, Run, RunStore
from engine.summary import run_summary

ALL = "(all)"
FIGURES: dict[str, Callable] = {
    "timeline": lambda s, pr: timeline(s, pr.graph, pr.cluster),
    "load profile": lambda s, pr: load_profile(s, pr.graph, pr.cluster),
    "memory over time": lambda s, pr: memory_over_time(s, pr.cluster),
}


def _filters(runs: list[Run]) -> tuple[str | None, str | None, str | None]:
    kinds = sorted({str(r.meta.get("kind")) for r in runs})
    tags = sorted({t for r in runs for t in r.meta.get("tags", [])})
    cols = st.columns(3)
    kind = cols[0].selectbox("Kind", [ALL, *kinds], key="runs_kind")
    status = cols[1].selectbox("Status", [ALL, *STATUSES], key="runs_status")
    tag = cols[2].selectbox("Tag", [ALL, *tags], key="runs_tag")
    return (None if kind == ALL else kind, None if status == ALL else status, None if tag == ALL else tag)


def page() -> None:
    st.title("Runs")
    store = run_store()
    problems: list[str] = []
    everything = list_runs(problems=problems)
    if problems:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        st.warning("Skipped unreadable runs: " + "; ".join(problems[:5]) + more)
    st.caption(f"Your runs: `{runs_dir()}` · bundled examples (read-only): `{example_runs_dir()}`")
    if not everything:
        st.info(f"No runs in {store.root} yet — save one on the Place page or with `placelab place … --save`.")
        return
    kind, status, tag = _filters(everything)
    runs = list_runs(kind=kind, status=status, tag=tag)
    if not runs:
        st.info("No run matches these filters.")
        return
    table = pd.DataFrame([{"source": "example" if is_example(r) else "yours", **run_summary(r)} for r in runs])
    table["tags"] = table["tags"].map(", ".join)
    st.dataframe(table, hide_index=True)
    table_downloads(table, "runs_table", "runs")
    by_id = {r.id: r for r in runs}
    keep_selected = st.session_state.pop("runs_keep_selected", None)
    if keep_selected in by_id:  # after a rename or tag edit the same run stays selected
        st.session_state["runs_selected"] = keep_selected
    run_id = st.selectbox("Run", list(by_id), key="runs_selected", format_func=lambda i: run_label(by_id[i]))
    run = by_id[run_id]
    with st.expander("Metadata (run.json)"):
        st.json(run.meta, expanded=1)
    _edit(store, run)
    _downloads(run)
    if has_measurement(run):
        st.subheader("Measured on real devices")
        cols = st.columns(4)
        for col, fname in zip(cols, ("measured_ops.csv", "measured_transfers.csv"), strict=False):
            col.download_button(f"Measured CSV ({fname[9:-4]})", (run.path / fname).read_bytes(),
                                file_name=f"{run.id}-{fname}", mime="text/csv", key=f"runs_dl_{fname}")
        show_measured_run(run, key="runs_measured")


def _edit(store: RunStore, run: Run) -> None:
    st.subheader("Edit")
    if is_example(run):
        st.caption("A bundled example: read-only (the app never changes the examples). Re-run it on the Place "
                   "page to get an editable copy in your own store.")
        return
    cols = st.columns(3)
    with cols[0]:
        name = st.text_input("Name", value=run.meta.get("name") or run.id, key=f"runs_name_{run.id}")
        if st.button("Rename", key="runs_rename"):
            with guard("Rename"):
                store.rename(run.id, name)
                st.session_state["runs_keep_selected"] = run.id
                st.rerun()
    with cols[1]:
        tags = st.text_input("Tags (comma separated)", value=", ".join(run.meta.get("tags", [])),
                             key=f"runs_tags_{run.id}")
        if st.button("Save tags", key="runs_save_tags"):
            with guard("Tags"):
                store.set_tags(run.id, [t.strip() for t in tags.split(",")])
                st.session_state["runs_keep_selected"] = run.id
                st.rerun()
    with cols[2]:
        sure = st.checkbox(f"Yes, delete {run.id} and all its files", key=f"runs_confirm_{run.id}")
        if st.button("Delete run", disabled=not sure, key="runs_delete", type="primary"):
            with guard("Delete"):
                store.delete(run.id)
                st.session_state.pop("runs_selected", None)
                st.rerun()


@st.cache_data(max_entries=4, show_spinner=False)
def _trace(run_dir: str, updated: str) -> bytes:
    """The Chrome trace of the run in ``run_dir`` (``updated``: its last change, so an edit refreshes it)."""
    run_path = Path(run_dir)
    with tempfile.TemporaryDirectory(prefix="placelab-trace-") as tmp:
        path = Path(tmp) / "trace.json"
        export_trace(RunStore(run_path.parent).load(run_path.name), str(path))
        return path.read_bytes()


def _downloads(run: Run) -> None:
    st.subheader("Downloads")
    files = set(run.files())
    cols = st.columns(4)
    for col, (fname, label, mime) in zip(cols, (
            ("schedule_ops.csv", "Schedule CSV (ops)", "text/csv"),
            ("schedule_transfers.csv", "Schedule CSV (transfers)", "text/csv"),
            ("placement.json", "Placement JSON", "application/json")), strict=False):
        if fname in files:
            col.download_button(label, (run.path / fname).read_bytes(), file_name=f"{run.id}-{fname}", mime=mime,
                                key=f"runs_dl_{fname}")
    if not has_placement(run):
        st.caption("This run stores no placement, so there is no trace or figure to export.")
        return
    with guard("Chrome trace"):
        # the bytes themselves, not a callable: the Perfetto hand-off needs them on every render
        # anyway (cached), and a deferred download's click could be lost to a rerun of the page
        trace = _trace(str(run.path), str(run.meta.get("updated")))
        cols[3].download_button("Chrome trace (Perfetto)", trace, file_name=f"{run.id}-trace.json",
                                mime="application/json", key="runs_dl_trace")
        open_in_perfetto(trace, title=run_label(run), file_name=f"{run.id}-trace.json", key="runs_perfetto")
    which = st.selectbox("Figure", list(FIGURES), key="runs_figure")
    with guard("Figure"):
        pr, schedule = replay(run)
        fig = FIGURES[which](schedule, pr)
        fig.update_layout(title=f"{fig.layout.title.text} — {run_label(run)}")
        figure_export_controls(fig, f"runs_fig_{which.replace(' ', '_')}")
