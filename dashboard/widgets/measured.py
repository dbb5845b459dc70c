"""A measured run on a page: simulated and measured makespan, the measured timeline, both on one axis; an
execution job polled until its run is stored (:mod:`dashboard.data.measured` starts and reads them)."""

from __future__ import annotations

import streamlit as st

from dashboard import state as keys
from dashboard.data.format import fmt_ms
from dashboard.data.measured import execution_job, failure_message, measured_summary, run_title
from dashboard.data.runs import replay
from dashboard.figures import timeline
from dashboard.figures.fidelity import measured_vs_simulated
from dashboard.widgets.ui import guard, show_error, show_figure
from engine.executor.fidelity import load_measured_schedule
from engine.store.runs import Run, RunStore

__all__ = ["POLL_S", "execution_panel", "show_measured_run"]

#: Polling period (s) of a page that waits for an execution.
POLL_S = 1.5


def show_measured_run(run: Run, *, key: str) -> None:
    """Simulated and measured makespan side by side, the measured timeline, and both on one time axis."""
    summary = measured_summary(run.meta.get("metrics") or {})
    if summary is None:
        st.info(f"Run {run.id} was not executed.")
        return
    cols = st.columns(4)
    cols[0].metric("Simulated makespan", fmt_ms(summary["simulated_s"]))
    cols[1].metric("Measured makespan", fmt_ms(summary["measured_s"]),
                   help=f"Mean of {summary['repeats']} executions after one warm-up")
    cols[2].metric("Measured std", fmt_ms(summary["measured_std_s"]))
    err = summary["relative_error"]
    cols[3].metric("Simulated vs measured", "-" if err is None else f"{err:+.1%}")
    scale = summary["time_scale"]
    st.caption(f"Run `{run.id}` · {summary['repeats']} measured executions · mode {run.meta['metrics'].get('mode')}"
               + ("" if scale is None else f" · graph times scaled ×{scale:.4g} for execution (both columns are "
                                           "of the scaled graph)"))
    with guard("Cannot read the measured schedule"):
        pr, simulated = replay(run)
        measured = load_measured_schedule(run, pr.graph, pr.cluster)
        tabs = st.tabs(["Measured timeline", "Measured and simulated"])
        with tabs[0]:
            show_figure(timeline(measured, pr.graph, pr.cluster, title=f"Measured · {run_title(run)}"),
                        key=keys.part(key, "measured_tl"))
        with tabs[1]:
            show_figure(measured_vs_simulated(measured, simulated, pr.graph, pr.cluster), key=keys.part(key, "mvs"))


def _wait(store: RunStore, job_id: str) -> None:
    if execution_job(store, job_id)[0] != "running":
        st.rerun()  # the whole page: it shows the result
    st.info("Executing on this machine's devices (workers start, one warm-up, then the measured "
            "executions) ...", icon=":material/hourglass_top:")


def execution_panel(store: RunStore, job_id: str, *, key: str) -> Run | None:
    """The state of one execution job as the page shows it, polled while it runs; its run once done."""
    state, job, run = execution_job(store, job_id)
    if state == "running":
        st.fragment(run_every=POLL_S)(_wait)(store, job_id)
    elif state == "failed":
        show_error(f"Execution failed: {failure_message(job)}")
    elif state == "gone":
        st.warning("The execution's record is gone (forgotten or the store was cleaned).")
    elif run is not None:
        show_measured_run(run, key=key)
    return run
