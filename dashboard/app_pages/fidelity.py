"""Fidelity: how far the simulator is from measured execution (runs of ``placelab validate``)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import state as keys
from dashboard.context import keep
from dashboard.data.fidelity import (
    notes,
    run_label,
    scatter_series,
    statistics_rows,
    timeline_modes,
    timeline_schedules,
)
from dashboard.data.runs import list_runs
from dashboard.figures.fidelity import fidelity_scatter, measured_vs_simulated
from dashboard.widgets.ui import guard, show_figure, show_table
from dashboard.widgets.validation import new_validation


def page() -> None:
    st.title("Fidelity")
    st.caption("Placements executed for real on this machine's devices and simulated in each mode "
               "(DOPPLER App. G.1 reports Pearson 0.79 / Spearman 0.69 for its simulator).")
    runs = {r.id: r for r in list_runs(kind="validate", status="done")}
    new_validation(expanded=not runs)
    if not runs:
        if st.session_state.get(keys.FIDELITY_JOB) is None:
            st.info("No validation runs yet: start one above, or from the command line "
                    "(`placelab validate GRAPH -c local --placements 20`).")
        else:
            st.info("No validation runs yet: the one above is running, and shows here once it is stored.")
        return
    run = runs[st.selectbox("Validation run", list(runs), format_func=lambda i: run_label(runs[i]),
                            key=keep(keys.FIDELITY_RUN, options=list(runs)))]
    with guard("Cannot show this run"):
        show_table(pd.DataFrame(statistics_rows(run.meta.get("metrics") or {})))
        for line in notes(run):
            st.caption(line)
        table = run.read_table("fidelity.csv")
        show_figure(fidelity_scatter(table["measured_mean_s"], scatter_series(table), sources=table["source"]),
                    key=keys.FIDELITY_SCATTER)
        modes = timeline_modes(table)
        mode = st.selectbox("Simulation mode for the timeline", modes, key=keep(keys.FIDELITY_MODE, options=modes))
        pr, measured, simulated = timeline_schedules(run, mode)
        st.subheader(f"Placement 0 ({table['source'][0]}): measured and simulated")
        show_figure(measured_vs_simulated(measured, simulated, pr.graph, pr.cluster), key=keys.FIDELITY_TIMELINE)
