"""Runs: browse, filter, rename, tag and delete stored runs; download their data and figures."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard.app_pages.stored import has_placement, replay, run_label
from dashboard.common import guard, run_store
from dashboard.figures import figure_html, figure_image, load_profile, memory_over_time, timeline
from engine.run_records import export_trace
from engine.runs import STATUSES, Run, RunStore
from engine.summary import run_summary

ALL = "(all)"
FIGURES: dict[str, Callable] = {
    "timeline": lambda s, pr: timeline(s, pr.graph, pr.cluster),
    "load profile": lambda s, pr: load_profile(s, pr.graph, pr.cluster),
    "memory over time": lambda s, pr: memory_over_time(s, pr.cluster),
}


@st.cache_resource(show_spinner=False)
def kaleido_works() -> bool:
    """Whether plotly can write PNG/SVG here (kaleido needs a chromium it can start)."""
    return figure_image(go.Figure(go.Bar(x=[1], y=[1])), "png") is not None


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
    everything = store.list()
    if store.problems:
        st.warning("Skipped unreadable run directories: " + "; ".join(store.problems[:5]))
    if not everything:
        st.info(f"No runs in {store.root} yet — save one on the Place page or with `placelab place … --save`.")
        return
    kind, status, tag = _filters(everything)
    runs = store.list(kind=kind, status=status, tag=tag)
    if not runs:
        st.info("No run matches these filters.")
        return
    table = pd.DataFrame([run_summary(r) for r in runs])
    table["tags"] = table["tags"].map(", ".join)
    st.dataframe(table, hide_index=True)
    by_id = {r.id: r for r in runs}
    run_id = st.selectbox("Run", list(by_id), key="runs_selected", format_func=lambda i: run_label(by_id[i]))
    run = by_id[run_id]
    with st.expander("Metadata (run.json)"):
        st.json(run.meta, expanded=1)
    _edit(store, run)
    _downloads(store, run)


def _edit(store: RunStore, run: Run) -> None:
    st.subheader("Edit")
    cols = st.columns(3)
    with cols[0]:
        name = st.text_input("Name", value=run.meta.get("name") or run.id, key=f"runs_name_{run.id}")
        if st.button("Rename", key="runs_rename"):
            with guard("Rename"):
                store.rename(run.id, name)
                st.rerun()
    with cols[1]:
        tags = st.text_input("Tags (comma separated)", value=", ".join(run.meta.get("tags", [])),
                             key=f"runs_tags_{run.id}")
        if st.button("Save tags", key="runs_save_tags"):
            with guard("Tags"):
                store.set_tags(run.id, [t.strip() for t in tags.split(",")])
                st.rerun()
    with cols[2]:
        sure = st.checkbox(f"Yes, delete {run.id} and all its files", key=f"runs_confirm_{run.id}")
        if st.button("Delete run", disabled=not sure, key="runs_delete", type="primary"):
            with guard("Delete"):
                store.delete(run.id)
                st.session_state.pop("runs_selected", None)
                st.rerun()


def _trace_bytes(store: RunStore, run: Run) -> Callable[[], bytes]:
    def make() -> bytes:
        with tempfile.TemporaryDirectory(prefix="placelab-trace-") as tmp:
            path = Path(tmp) / "trace.json"
            export_trace(store.load(run.id), str(path))
            return path.read_bytes()
    return make


def _downloads(store: RunStore, run: Run) -> None:
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
    cols[3].download_button("Chrome trace (Perfetto)", _trace_bytes(store, run), file_name=f"{run.id}-trace.json",
                            mime="application/json", key="runs_dl_trace")
    cols = st.columns([2, 2, 2])
    which = cols[0].selectbox("Figure", list(FIGURES), key="runs_figure")
    fmt = cols[1].radio("Format", ["HTML", "PNG", "SVG"], horizontal=True, key="runs_fig_format")
    if fmt != "HTML":
        with st.spinner("Checking image export ..."):
            works = kaleido_works()
        if not works:
            st.warning("PNG/SVG export needs kaleido with a chromium it can start, which is not available here; "
                       "download HTML instead (it opens offline in any browser).")
            fmt = "HTML"
    with guard("Figure"):
        pr, schedule = replay(store, run)
        fig = FIGURES[which](schedule, pr)
        data: Callable[[], bytes | str]
        if fmt == "HTML":
            def data() -> str:
                return figure_html(fig)
        else:
            def data() -> bytes:
                return figure_image(fig, fmt.lower()) or b""
        cols[2].download_button(f"Download {which} ({fmt})", data, key="runs_dl_figure",
                                file_name=f"{run.id}-{which.replace(' ', '_')}.{fmt.lower()}",
                                mime={"HTML": "text/html", "PNG": "image/png", "SVG": "image/svg+xml"}[fmt])



