"""Runs: browse, filter, rename, tag and delete stored runs; download their data and figures."""

from __future__ import annotations

import streamlit as st

from dashboard import state as keys
from dashboard.context import keep
from dashboard.data import link
from dashboard.data.link import KIND, STATUS, TAG
from dashboard.data.measured import has_measurement
from dashboard.data.run_tables import summary_table
from dashboard.data.runs import is_example, list_runs, run_label
from dashboard.stores import example_runs_dir, run_store, runs_dir
from dashboard.widgets.link import linked_choice, linked_runs, set_page_params
from dashboard.widgets.measured import show_measured_run
from dashboard.widgets.run_panel import downloads, edit
from dashboard.widgets.ui import show_table, table_downloads
from engine.store.meta import STATUSES
from engine.store.runs import Run

ALL = "(all)"


def _filters(runs: list[Run]) -> tuple[str | None, str | None, str | None]:
    kinds = [ALL, *sorted({str(r.meta.get("kind")) for r in runs})]
    tags = [ALL, *sorted({t for r in runs for t in r.meta.get("tags", [])})]
    statuses = [ALL, *STATUSES]
    cols = st.columns(3)
    chosen = []
    for col, (label, name, key, options) in zip(cols, (("Kind", KIND, keys.RUNS_KIND, kinds),
                                                       ("Status", STATUS, keys.RUNS_STATUS, statuses),
                                                       ("Tag", TAG, keys.RUNS_TAG, tags)), strict=True):
        linked_choice(name, key, options)
        value = col.selectbox(label, options, key=keep(key, options=options))
        set_page_params({name: None if value == ALL else value})
        chosen.append(None if value == ALL else value)
    return chosen[0], chosen[1], chosen[2]


def _select(by_id: dict[str, Run]) -> Run:
    """The run shown: the one a link names (once), the one just renamed or tagged (or the next after a delete),
    else the visitor's choice. Set as the picker's value, so the browser's picker shows the run the page acts on."""
    linked = linked_runs(link.RUN)
    chosen = st.session_state.pop(keys.RUNS_KEEP_SELECTED, None)  # after an edit: the same run, or the next
    if linked and linked[0].id in by_id:
        chosen = linked[0].id
    if chosen in by_id:
        st.session_state[keys.RUNS_SELECTED] = chosen
    run_id = st.selectbox("Run", list(by_id), key=keep(keys.RUNS_SELECTED, options=list(by_id)),
                          format_func=lambda i: run_label(by_id[i]))
    set_page_params({link.RUN: run_id})
    return by_id[run_id]


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
    table = summary_table(runs, ["example" if is_example(r) else "yours" for r in runs], st.context.timezone)
    show_table(table)
    table_downloads(table, keys.RUNS_TABLE, "runs")
    run = _select({r.id: r for r in runs})
    with st.expander("Metadata (run.json)"):
        st.json(run.meta, expanded=1)
    ids = [r.id for r in runs]
    at = ids.index(run.id)
    edit(store, run, then=ids[at + 1] if at + 1 < len(ids) else ids[at - 1] if at else None)
    downloads(run)
    if has_measurement(run):
        st.subheader("Measured on real devices")
        cols = st.columns(4)
        for col, fname in zip(cols, ("measured_ops.csv", "measured_transfers.csv"), strict=False):
            col.download_button(f"Measured CSV ({fname[9:-4]})", (run.path / fname).read_bytes(),
                                file_name=f"{run.id}-{fname}", mime="text/csv", key=keys.runs_download(fname))
        show_measured_run(run, key=keys.RUNS_MEASURED)
