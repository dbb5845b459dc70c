"""Fidelity: how far the simulator is from measured execution (runs of ``placelab validate``).

The statistics are headed in words, not metric keys; the timeline opens on the most accurate prediction of the run
(the lowest median error). The link holds the run shown (``run``) and the timeline's mode (``timeline``).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import state as keys
from dashboard.context import keep
from dashboard.data import link
from dashboard.data.fidelity import (
    RECALIBRATED,
    notes,
    run_label,
    scatter_series,
    statistics_rows,
    timeline_modes,
    timeline_schedules,
)
from dashboard.data.link import TIMELINE
from dashboard.data.runs import list_runs
from dashboard.figures.fidelity import fidelity_scatter, measured_vs_simulated
from dashboard.widgets.link import linked_choice, linked_runs, set_page_params
from dashboard.widgets.ui import guard, show_figure, show_table
from dashboard.widgets.validation import new_validation

#: The statistics' columns in words (their keys: placelab/fidelity.py); errors are in % of the measured makespan.
COLUMNS = {"mode": "prediction", "placements": "placements", "pearson": "Pearson correlation",
           "spearman": "Spearman rank correlation", "median_rel_error": "median error (%)",
           "max_rel_error": "largest error (%)", "mean_ratio": "predicted / measured (mean)"}


def statistics_table(metrics: dict) -> pd.DataFrame:
    """The statistics of a validate run's ``metrics``, one row per prediction, headed in words, errors in %."""
    table = pd.DataFrame(statistics_rows(metrics))
    for column in ("median_rel_error", "max_rel_error"):
        if column in table:
            table[column] = table[column] * 100
    return table.rename(columns=COLUMNS)


def most_accurate(modes: list[str], metrics: dict) -> str:
    """Of the timeline's ``modes``, the one with the lowest median error in ``metrics`` (the first of ``modes``
    where none has one)."""
    def error(mode: str) -> float:
        stats = metrics.get(RECALIBRATED) if mode == RECALIBRATED else (metrics.get("fidelity") or {}).get(mode)
        value = (stats or {}).get("median_rel_error")
        return float(value) if isinstance(value, int | float) else float("inf")

    return min(modes, key=error)


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
    linked = linked_runs(link.RUN, kinds=("validate",))
    if linked and linked[0].id in runs:
        st.session_state[keys.FIDELITY_RUN] = linked[0].id
    run = runs[st.selectbox("Validation run", list(runs), format_func=lambda i: run_label(runs[i]),
                            key=keep(keys.FIDELITY_RUN, options=list(runs)))]
    set_page_params({link.RUN: run.id})
    metrics = run.meta.get("metrics") or {}
    with guard("Cannot show this run"):
        show_table(statistics_table(metrics))
        for line in notes(run):
            st.caption(line)
        table = run.read_table("fidelity.csv")
        show_figure(fidelity_scatter(table["measured_mean_s"], scatter_series(table), sources=table["source"]),
                    key=keys.FIDELITY_SCATTER)
        modes = timeline_modes(table)
        linked_choice(TIMELINE, keys.FIDELITY_MODE, modes)
        mode = st.selectbox("Simulation mode for the timeline", modes,
                            key=keep(keys.FIDELITY_MODE, most_accurate(modes, metrics), options=modes),
                            help="Opens on the most accurate (lowest median error) of this run")
        set_page_params({TIMELINE: mode})
        pr, measured, simulated = timeline_schedules(run, mode)
        st.subheader(f"Placement 0 ({table['source'][0]}): measured and simulated")
        show_figure(measured_vs_simulated(measured, simulated, pr.graph, pr.cluster), key=keys.FIDELITY_TIMELINE)
