"""Compare: stored runs side by side — table, makespan bars, two timelines, CDFs over test graphs (eval and
experiment runs), learning curves of training runs."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard.app_pages.stored import (
    MAX_CURVE_POINTS,
    cdf_series,
    comparison_row,
    curves_by_name,
    eval_series,
    experiment_series,
    has_placement,
    replay,
    run_label,
)
from dashboard.common import guard, run_store, show_figure
from dashboard.figures import cdf_figure, learning_curves, makespan_bars, timeline
from policies.sweep import sweep_pivot, sweep_rows


def page() -> None:
    st.title("Compare")
    store = run_store()
    runs = [r for r in store.list() if (r.meta.get("metrics") or {}).get("makespan_s") is not None]
    if not runs:
        st.info("No finished placement runs to compare yet — save some on the Place page or run "
                "`placelab compare GRAPH --cluster C` / `placelab place … --save`.")
    else:
        by_id = {r.id: r for r in runs}
        chosen = st.multiselect("Runs", list(by_id), default=list(by_id)[:2], key="compare_runs",
                                format_func=lambda i: run_label(by_id[i]))
        selected = [by_id[i] for i in chosen]
        if selected:
            st.dataframe(pd.DataFrame([comparison_row(r) for r in selected]), hide_index=True)
            rows = [{"label": r.meta.get("name") or r.id, **(r.meta.get("metrics") or {})} for r in selected]
            show_figure(makespan_bars(rows), key="compare_bars")
            _timelines(store, [r for r in selected if has_placement(r)])
    _sweeps(store)
    _cdfs(store)
    _learning_curves(store)


def _timelines(store, runs) -> None:
    st.subheader("Timelines on one time axis")
    if not runs:
        st.info("None of the selected runs stores a placement to replay.")
        return
    ids = [r.id for r in runs]
    labels = {r.id: run_label(r) for r in runs}
    cols = st.columns(2)
    left = cols[0].selectbox("Left", ids, index=0, key="compare_left", format_func=labels.get)
    right = cols[1].selectbox("Right", ids, index=min(1, len(ids) - 1), key="compare_right", format_func=labels.get)
    picked = {r.id: r for r in runs}
    with guard("Replaying runs"), st.spinner("Re-simulating the stored placements ..."):
        replays = {i: replay(store, picked[i]) for i in {left, right}}
        end = max(s.makespan for _, s in replays.values()) * 1e3 * 1.03
        for col, rid in zip(cols, (left, right), strict=True):
            pr, schedule = replays[rid]
            with col:
                show_figure(timeline(schedule, pr.graph, pr.cluster, title=pr.run.meta.get("name") or rid,
                                     time_range_ms=(0.0, end)), key=f"compare_tl_{'l' if col is cols[0] else 'r'}")


def _sweeps(store) -> None:
    sweeps = store.list(kind="sweep")
    if sweeps:
        st.subheader("Sweeps (makespan per placer)")
        by_id = {r.id: r for r in sweeps}
        rid = st.selectbox("Sweep", list(by_id), key="compare_sweep", format_func=lambda i: run_label(by_id[i]))
        st.dataframe(pd.DataFrame(sweep_pivot(sweep_rows(by_id[rid]))), hide_index=True)


def _cdfs(store) -> None:
    st.subheader("CDF over test graphs")
    sources = store.list(kind="eval") + store.list(kind="experiment")
    usable = [r for r in sources if eval_series(r) or experiment_series(r)]
    if not usable:
        st.info("CDFs (Placeto Fig. 5) compare placers over many test graphs. They need runs of kind \"experiment\" "
                "(`placelab experiment --family nmt -c k80x2`: Zero-Shot, Optimized and Random on a family's test "
                "graphs) or \"eval\" (`placelab eval RUN --graphs family:nmt:test --save`: a trained learned placer "
                "applied zero-shot); "
                + ("the stored ones hold no per-graph results." if sources else "none are stored yet."))
        return
    by_id = {r.id: r for r in usable}
    newest_experiment = [r.id for r in usable if r.meta.get("kind") == "experiment"][:1]
    default = [r.id for r in usable if r.meta.get("kind") == "eval"] + newest_experiment
    chosen = [by_id[i] for i in st.multiselect("Runs in the CDF", list(by_id), default=default, key="compare_cdf_runs",
                                               format_func=lambda i: f"{by_id[i].meta.get('kind')}: "
                                                                     f"{run_label(by_id[i])}")]
    series = cdf_series([r for r in chosen if r.meta.get("kind") == "eval"],
                        [r for r in chosen if r.meta.get("kind") == "experiment"])
    if series:
        show_figure(cdf_figure(series), key="compare_cdf")


def _learning_curves(store) -> None:
    st.subheader("Learning curves")
    runs = store.list(kind="train")
    if not runs:
        st.info("No training runs yet — start one on the Train page or with `placelab train … --save`.")
        return
    by_id = {r.id: r for r in runs}
    chosen = st.multiselect("Training runs", list(by_id), default=list(by_id)[:2], key="compare_train_runs",
                            format_func=lambda i: run_label(by_id[i]))
    curves = curves_by_name([by_id[i] for i in chosen])
    if chosen and not curves:
        st.info("None of the selected training runs has finished an episode yet.")
    elif curves:
        show_figure(learning_curves(curves, max_points=MAX_CURVE_POINTS), key="compare_curves")
