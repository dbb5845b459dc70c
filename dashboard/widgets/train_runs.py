"""The Train page's training runs: the table, the cards of the runs shown (progress, stop / resume, learning
health, the live learning curve), the jobs that have not made a run yet. The page polls it while anything
trains (:data:`POLL_S`)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from dashboard import state as keys
from dashboard.background import Job, launch, resume_command
from dashboard.context import keep
from dashboard.data.learning import (
    MAX_CURVE_POINTS,
    health_stored,
    health_table,
    learning_curve,
    learning_curve_csv,
    random_table,
    seed_groups,
    training_health,
)
from dashboard.data.training import ACTIVE, TrainingState, graphs_of, progress_text, run_row, training_state
from dashboard.figures import learning_curves
from dashboard.input_guard import check_training
from dashboard.widgets.schedule import curve_controls
from dashboard.widgets.ui import guard, show_error, show_figure, show_table
from engine.store.runs import Run, RunStore

__all__ = ["MAX_CARDS", "POLL_S", "training_runs"]

POLL_S = 2.0
#: Runs shown as cards at once (each with its own live curve).
MAX_CARDS = 6


def _selection(state: TrainingState) -> list[Run]:
    """Runs to show as cards: the user's choice; new runs join it as they appear."""
    ids = [r.id for r in state.runs]
    keep(keys.TRAIN_SELECTED)  # the choice, back from another page
    chosen = st.session_state.get(keys.TRAIN_SELECTED)
    if chosen is None:
        chosen = [i for i in ids if state.status[i] in ACTIVE] or ids[:1]
    else:
        seen = st.session_state.get(keys.TRAIN_SEEN, set())
        chosen = [i for i in chosen if i in ids] + [i for i in ids if i not in seen and i not in chosen]
    st.session_state[keys.TRAIN_SELECTED] = chosen[:MAX_CARDS]
    st.session_state[keys.TRAIN_SEEN] = set(ids)
    by_id = {r.id: r for r in state.runs}
    picked = st.multiselect("Runs shown", ids, key=keys.TRAIN_SELECTED, max_selections=MAX_CARDS,
                            format_func=lambda i: f"{by_id[i].meta.get('name') or i} ({state.status[i]})")
    return [by_id[i] for i in picked]


def _loose_jobs(state: TrainingState) -> None:
    for job in state.starting:
        cols = st.columns([5, 1])
        cols[0].info(f"Starting {job.label} (process {job.pid}): loading the graphs and the learned placer ...")
        if cols[1].button("Cancel", key=keys.train_run("cancel", job.id)):
            job.cancel()
            st.rerun()
    for job in state.broken:
        lines = job.log_tail().splitlines()
        show_error(f"Training {job.label} ended before creating its run (exit code {job.returncode}): "
                   f"{lines[-1] if lines else 'no output'}")
        with st.expander(f"Log of {job.label}"):
            st.code(job.log_tail(40) or "(empty)", language="text")
        if st.button("Dismiss", key=keys.train_run("dismiss", job.id)):
            job.forget()
            st.rerun()


def _controls(store: RunStore, run: Run, status: str) -> None:
    from policies.rl.core.run_files import CHECKPOINT, request_stop

    if status == "running":
        if st.button("Stop", key=keys.train_run("stop", run.id),
                     help="Stops after the current update; the run keeps a checkpoint and can be resumed"):
            request_stop(run)
            st.rerun()
    elif status in ("stopping", "resuming"):
        st.button("Stop", key=keys.train_run("stop", run.id), disabled=True)
    elif status in ("done", "interrupted") and CHECKPOINT not in run.files():
        st.caption("This run kept no checkpoint, so it cannot be resumed.")
    elif status in ("done", "interrupted"):
        done = int((run.meta.get("progress") or {}).get("episodes") or 0)
        total = (run.meta.get("progress") or {}).get("episodes_total") or done
        cols = st.columns([2, 1, 3], vertical_alignment="bottom")
        target = int(cols[0].number_input("train up to (episodes in all)", min_value=done + 1,
                                          value=max(done + 1, 2 * int(total)), step=100,
                                          key=keys.train_run("resume_eps", run.id)))
        if cols[1].button("Resume", key=keys.train_run("resume", run.id)):
            with guard("Cannot resume"):
                check_training(target, 0, store.root)
                launch(store.root, resume_command(run.id, episodes=target, runs_dir=store.root),
                       label=run.meta.get("name") or run.id, resume_of=run.id)
                st.rerun()


def _curve_settings() -> tuple[str, float]:
    """The x axis and smoothing chosen above the cards (their widgets: :func:`curve_controls`)."""
    return (st.session_state.get(keys.curve(keys.TRAIN, "x"), "episode"),
            float(st.session_state.get(keys.curve(keys.TRAIN, "smoothing"), 0.6)))


def _learning_health(run: Run, status: str) -> Any:
    """A finished run's learning-health verdict (policies/rl/core/health.py): the verdict, its numbers, and the
    never-left-uniform line when it applies. Returns the verdict (None while it trains, or without one)."""
    if status in ACTIVE or status == "failed":
        return None
    health = training_health(run)
    if health is None:
        return None
    from policies.rl.core.health import NEVER_LEFT_UNIFORM

    text = f"**Learning health: {health.label}.** {health.detail[0].upper()}{health.detail[1:]}."
    if health.never_left_uniform:
        st.warning(f"**Learning health:** {NEVER_LEFT_UNIFORM[0].upper()}{NEVER_LEFT_UNIFORM[1:]}.",
                   icon=":material/warning:")
    elif health.verdict == "learned":
        st.success(text, icon=":material/check_circle:")
    else:
        st.info(text)
    how = "" if health_stored(run) else (" Computed now from the stored learning curve: this run was stored before "
                                         "training runs kept their verdict.")
    st.caption(f"{health.summary}. Uniform entropy: {health.uniform_basis}.{how}")
    with st.expander("Learning health in numbers"):
        show_table(health_table(health), key=keys.train_run("health", run.id))
        if health.random_search:
            show_table(random_table(health), key=keys.train_run("health_random", run.id))
        else:
            st.caption(f"No random-search comparison: {health.random_missing}.")
    return health


def _given_name(run: Run) -> str | None:
    """The name the visitor gave ``run``; None for a run named by its id (started without a name)."""
    name = run.meta.get("name")
    return None if not name or name == run.id else str(name)


def _run_card(store: RunStore, run: Run, status: str, job: Job | None) -> None:
    """A run's card, headed by its name (or its placer and graphs), its id written once."""
    m = run.meta
    graphs = graphs_of(run)
    name = _given_name(run)
    with st.container(border=True):
        what = f"{m.get('placer')} on `{graphs}` · {m.get('cluster')}"
        st.markdown(f"**{name}** · {what}" if name else f"**{what}**")
        st.caption(f"run `{run.id}`")
        frac, text = progress_text(run, status)
        st.progress(frac, text=text)
        _controls(store, run, status)
        if status == "failed":
            show_error(f"Training failed: {m.get('error') or 'no error recorded'}")
            if job is not None:
                st.code(job.log_tail(20) or "(the process wrote no output)", language="text")
        elif job is not None and job.resume_of == run.id and job.failed:
            lines = job.log_tail().splitlines()
            show_error(f"Resuming failed: {lines[-1] if lines else f'exit code {job.returncode}'}")
        health = _learning_health(run, status)
        curve = learning_curve(run)
        if curve is None:
            st.caption("No episode has finished yet.")
            return
        x, smoothing = _curve_settings()
        title = f"{m.get('placer')} on {graphs} · {m.get('cluster')}"
        label = name or str(m.get("placer"))
        show_figure(learning_curves({label: curve}, x=x, smoothing=smoothing, max_points=MAX_CURVE_POINTS, title=title,
                                    placers={label: m.get("placer")},
                                    uniform_entropy=health.uniform_entropy if health is not None else None),
                   key=keys.train_run("curve", run.id))
        st.download_button("Learning curve (CSV)", lambda: learning_curve_csv(run) or b"",
                           file_name=f"{run.id}-learning_curve.csv", mime="text/csv", key=keys.train_run("dl", run.id))


def training_runs(store: RunStore, polling: bool) -> None:
    """The training runs of ``store`` (a fragment: ``polling`` while anything trains)."""
    state = training_state(store)
    if state.active != polling:  # start or stop polling: the fragment's interval is set by a full run
        st.rerun()
    st.subheader("Training runs")
    _loose_jobs(state)
    if not state.runs:
        if not state.starting:
            st.info("No training runs yet — start one above, or run `placelab train --placer placeto --graphs SPEC "
                    "--cluster C --save`.")
        return
    show_table(pd.DataFrame([run_row(r, state.status[r.id]) for r in state.runs]))
    chosen = _selection(state)
    curve_controls(keys.TRAIN)
    if len(chosen) > 1:
        x, smoothing = _curve_settings()
        placers: dict[str, str | None] = {}
        curves = seed_groups(chosen, placers)
        show_figure(learning_curves(curves, x=x, smoothing=smoothing, max_points=MAX_CURVE_POINTS, placers=placers),
                    key=keys.TRAIN_OVERLAY)
    for run in chosen:
        _run_card(store, run, state.status[run.id], state.jobs[run.id])

