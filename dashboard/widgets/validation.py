"""The Fidelity page's new validation (issue #33): ``placelab validate`` on the current graph and cluster, started
in the background like a training (:func:`dashboard.data.measured.start_validation`) and polled until its run is
stored; the page then shows that run."""

from __future__ import annotations

import streamlit as st

from dashboard import state as keys
from dashboard.context import cluster_label, current_cluster, current_graph, keep
from dashboard.data.measured import execution_problem, failure_message, start_validation, validation_job
from dashboard.input_guard import APP_MAX_STEP_MS, check_jobs, check_number
from dashboard.stores import run_store
from dashboard.widgets.measured import POLL_S
from dashboard.widgets.ui import guard, show_error

__all__ = ["MAX_PLACEMENTS", "new_validation"]

#: Most placements one validation started from the app executes (each `repeats` times, plus a warm-up).
MAX_PLACEMENTS = 100


def new_validation(expanded: bool) -> None:
    """The form that starts a validation of the current graph on the current cluster, and the job it started."""
    message = st.session_state.pop(keys.FIDELITY_MESSAGE, None)
    if message:
        st.success(message, icon=":material/check_circle:")
    job_id = st.session_state.get(keys.FIDELITY_JOB)
    with st.expander("New validation: execute placements on this machine and simulate them",
                     expanded=expanded or job_id is not None):
        if job_id is not None:  # started on an earlier run of the page, whatever the cluster is now
            _job(job_id)
            job_id = st.session_state.get(keys.FIDELITY_JOB)  # None once it ended: a new one may start
        graph, cluster = current_graph(), current_cluster()
        if graph is None:
            st.info("Choose a graph on the Graphs page first: a validation executes placements of the current graph.")
            return
        problem = execution_problem(cluster)
        if problem:
            st.info(f"{problem}. A validation executes on this machine's devices: pick the `local` preset in the "
                    "sidebar (this machine's cores, calibrated on first use).")
            return
        st.caption(f"On **{graph.name}** ({graph.num_ops:,} ops) and **{cluster_label(cluster)}**: the placements "
                   "of a few baselines, then uniformly random ones, each executed after one warm-up and simulated "
                   "in every mode, like `placelab validate`. It runs in the background and is stored as a run.")
        cols = st.columns(4, vertical_alignment="bottom")
        placements = int(cols[0].number_input("placements", min_value=2, max_value=MAX_PLACEMENTS, step=1,
                                               key=keep(keys.FIDELITY_PLACEMENTS, 10)))
        repeats = int(cols[1].number_input("measured executions each", min_value=1, max_value=50, step=1,
                                           key=keep(keys.FIDELITY_REPEATS, 3), help="after one warm-up"))
        step_ms = float(cols[2].number_input(
            "scale to a step of (ms; 0 = as is)", min_value=0.0, step=10.0, key=keep(keys.FIDELITY_STEP, 100.0),
            help="Times and bytes are scaled so one device's share of the compute takes this long; 0 runs the "
                 "graph's own times"))
        if cols[3].button("Start validation", key=keys.FIDELITY_START, disabled=job_id is not None):
            with guard("Cannot start the validation"):
                check_number("scale to a step of (ms)", step_ms, APP_MAX_STEP_MS, "APP_MAX_STEP_MS")
                check_jobs(run_store().root)
                job = start_validation(run_store(), graph, cluster, placements=placements, repeats=repeats,
                                       step_ms=step_ms or None)
                st.session_state[keys.FIDELITY_JOB] = job.id
                _job(job.id)


def _job(job_id: str) -> None:
    state, job, run = validation_job(run_store(), job_id)
    if state == "running":
        st.fragment(run_every=POLL_S)(_wait)(job_id)
        return
    st.session_state.pop(keys.FIDELITY_JOB, None)
    if state == "failed":
        show_error(f"Validation failed: {failure_message(job)}")
    elif state == "gone":
        st.warning("The validation's record is gone (forgotten or the store was cleaned).")
    else:
        st.session_state[keys.FIDELITY_RUN] = run.id  # the selector below shows it
        st.session_state[keys.FIDELITY_MESSAGE] = f"Validation stored as run {run.id}"
        st.rerun()


def _wait(job_id: str) -> None:
    state, job, _ = validation_job(run_store(), job_id)
    if state != "running":
        st.rerun()  # the whole page: it shows the run
    last = job.log_tail(1) if job is not None else ""
    st.info("Validating on this machine's devices (workers start, then each placement is executed and simulated) "
            f"...{f' {last}' if last else ''}", icon=":material/hourglass_top:")
