"""The Place page's results in hand: the table, the makespan bars, and per result its metrics, *Save as run*,
*Execute on this machine*, its what-if editor (:mod:`dashboard.widgets.whatif`), its schedule figures and its graph
explorer (linked to its timeline)."""

from __future__ import annotations

import streamlit as st

from dashboard import state as keys
from dashboard.context import cluster_label, keep
from dashboard.data.measured import execution_problem, start_execution
from dashboard.data.place import UNKNOWN_SIZES, default_run_name, results_table, save_result
from dashboard.data.runs import estimate_warnings
from dashboard.figures import makespan_bars
from dashboard.input_guard import APP_MAX_STEP_MS, check_jobs, check_number
from dashboard.stores import run_store
from dashboard.widgets.measured import execution_panel
from dashboard.widgets.schedule import show_graph_view, show_metrics, show_schedule_figures
from dashboard.widgets.ui import guard, show_figure, show_table, table_downloads
from dashboard.widgets.whatif import show_whatif

__all__ = ["show_results"]


def _save(state: dict, r: dict, name: str) -> None:
    if r["run_id"]:  # a second click that arrived before the rerun: already saved
        return
    with guard("Save as run"):
        store = run_store()
        run = save_result(store, state["graph"], state["cluster"], r, ["app"])
        if name.strip():
            store.rename(run.id, name.strip())
        r["run_id"] = run.id
        st.session_state[keys.PLACE_SAVED_MESSAGE] = f"Saved as run {run.id} ({name.strip() or run.id})"
        st.rerun()


def _execution(state: dict, r: dict, i: int) -> None:
    """Execute this placement on this machine in the background; then measured beside simulated."""
    rg, rc = state["graph"], state["cluster"]
    with st.expander("Execute on this machine: measured vs simulated", expanded=bool(r.get("exec_job"))):
        problem = execution_problem(rc)
        if problem:
            st.info(f"{problem}. Executing needs a cluster of this machine's devices: pick the `local` preset "
                    "in the sidebar (this machine's cores, calibrated on first use) and place again.")
            return
        cols = st.columns([2, 2, 2], vertical_alignment="bottom")
        repeats = int(cols[0].number_input("measured executions", min_value=1, max_value=50, step=1,
                                           key=keep(keys.place_result(i, "exec_repeats"), 3),
                                           help="after one warm-up"))
        step_ms = float(cols[1].number_input(
            "scale to a step of (ms; 0 = as is)", min_value=0.0, step=10.0,
            key=keep(keys.place_result(i, "exec_step"), 100.0),
            help="Times and bytes are scaled so one device's share of the compute takes this long "
                 "(a graph whose step is too short or too long to measure); 0 runs the graph's own times"))
        if cols[2].button("Execute", key=keys.place_result(i, "exec")):
            with guard("Execute"):
                check_number("scale to a step of (ms)", step_ms, APP_MAX_STEP_MS, "APP_MAX_STEP_MS")
                check_jobs(run_store().root)
                job = start_execution(run_store(), rg, rc, r["placement"], placer=r["placer"], repeats=repeats,
                                      step_ms=step_ms or None, name=None)
                r["exec_job"] = job.id
        if r.get("exec_job"):
            execution_panel(run_store(), r["exec_job"], key=keys.place_result(i, "exec_view"))


def _result(state: dict, r: dict, i: int) -> None:
    rg, rc = state["graph"], state["cluster"]
    show_metrics(r["metrics"], r["seconds"], r.get("startup"), memory_known=rg.memory_known)
    if r["run_id"]:
        st.caption(f"Stored as run `{r['run_id']}`")
    else:
        cols = st.columns([4, 1], vertical_alignment="bottom")
        name = cols[0].text_input("Run name", value=default_run_name(r["placer"], rg.name, cluster_label(rc)),
                                  key=keys.place_result(i, "name"))
        if cols[1].button("Save as run", key=keys.place_result(i, "save")):
            _save(state, r, name)
    _execution(state, r, i)
    show_whatif(state, r, i)
    show_schedule_figures(r["schedule"], rg, rc, key=keys.place_view(i),
                          title=f"{r['placer']} · {rg.name} · {cluster_label(rc)}",
                          explorer_key=keys.place_explorer(i), figure_id=r.get("run_id") or r.get("kept_id"))
    st.markdown("**Graph explorer** — linked to the timeline above: click an op in either")
    show_graph_view(rg, r["placement"].devices, rc, key=keys.place_explorer(i), schedule=r["schedule"])


def show_results(g, cluster) -> None:
    """The results in hand, kept until the next *Run placers* (also after the graph or cluster changed)."""
    state = st.session_state.get(keys.PLACE_RESULTS)
    if not state or not state["results"]:
        return
    results, rg, rc = state["results"], state["graph"], state["cluster"]
    if g is None or rg.content_hash != g.content_hash or rc != cluster:
        st.warning(f"These results are on {rg.name} and {cluster_label(rc)}, not the current graph and cluster; "
                   "they stay here until you run placers again (save the ones you want to keep).")
    st.subheader(f"Results: {rg.name} on {cluster_label(rc)}")
    message = st.session_state.pop(keys.PLACE_SAVED_MESSAGE, None)
    if message:
        st.success(message)
    table = results_table(results, memory_known=rg.memory_known)
    show_table(table, UNKNOWN_SIZES)
    table_downloads(table, keys.PLACE_TABLE, f"results-{rg.name}-{rc.name}")
    bars = [{"label": r["placer"], "hover": r["run_id"] or "not saved", **r["metrics"]} for r in results]
    show_figure(makespan_bars(bars, title=f"Makespan on {rg.name} · {cluster_label(rc)}"), key=keys.PLACE_BARS)
    off = estimate_warnings(bars)
    if off:
        st.warning(off, icon=":material/warning:")
    tabs = st.tabs([r["placer"] for r in results])
    for i, (tab, r) in enumerate(zip(tabs, results, strict=True)):
        with tab:
            _result(state, r, i)
