"""The Compare page's sections below the runs compared: two timelines on one axis and the placement diff,
sweeps, CDFs over test graphs, learning curves with each run's learning health. Every choice is kept across
pages."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import state as keys
from dashboard.context import keep
from dashboard.data.learning import MAX_CURVE_POINTS, health_row, seed_groups, training_health
from dashboard.data.link import CDF, CURVES, LEFT, MOVED, RIGHT, SCHEDULES, SWEEP
from dashboard.data.measured import has_measurement
from dashboard.data.runs import bar_labels, list_runs, replay, run_label, setting_of
from dashboard.data.series import cdf_series, eval_series, experiment_series
from dashboard.figures import cdf_figure, learning_curves, timeline
from dashboard.figures.diff import moved_ops, placement_diff
from dashboard.widgets.link import (
    choices_param,
    flag_param,
    linked_choice,
    linked_choices,
    linked_flag,
    set_page_params,
)
from dashboard.widgets.schedule import curve_controls, show_graph_view
from dashboard.widgets.ui import guard, show_figure, show_table, table_downloads
from engine.executor.fidelity import load_measured_schedule
from engine.store.runs import Run
from placelab.sweep import sweep_pivot, sweep_rows

__all__ = ["cdfs", "learning_curves_section", "sweeps", "timelines"]

SOURCES = ("simulated", "measured")


def timelines(runs: list[Run]) -> None:
    """The timelines of two of ``runs`` on one time axis and what moved from the left to the right; one run
    alone is drawn alone (a run against itself has nothing to diff). Titles name the placers (the graph and the
    cluster are the page's), short enough for half the page."""
    st.subheader("Two runs: timelines on one time axis, and what moved")
    if not runs:
        st.info("None of the selected runs stores a placement to replay.")
        return
    ids = [r.id for r in runs]
    picked = {r.id: r for r in runs}
    labels = {r.id: run_label(r) for r in runs}
    offered = any(has_measurement(r) for r in runs)
    linked_choice(SCHEDULES, keys.COMPARE_TL_SOURCE, SOURCES)
    measured = offered and st.radio(
        "Schedules", SOURCES, horizontal=True, key=keep(keys.COMPARE_TL_SOURCE, SOURCES[0], options=SOURCES),
        help="Measured: the executed schedule a run stored (`--execute`); a run without one shows its simulation"
    ) == "measured"
    if len(ids) == 1:
        left = right = ids[0]
        st.caption("One run with a placement is selected: its timeline. Select a second run above to compare the "
                   "two and see what moved.")
    else:
        cols = st.columns(2)
        linked_choice(LEFT, keys.COMPARE_LEFT, ids)
        linked_choice(RIGHT, keys.COMPARE_RIGHT, ids)
        left = cols[0].selectbox("Left", ids, key=keep(keys.COMPARE_LEFT, ids[0], options=ids),
                                 format_func=labels.get)
        right = cols[1].selectbox("Right", ids, key=keep(keys.COMPARE_RIGHT, ids[1], options=ids),
                                  format_func=labels.get)
        set_page_params({LEFT: left, RIGHT: right})
    set_page_params({SCHEDULES: "measured" if measured else None})
    shown_ids = list(dict.fromkeys((left, right)))
    names = dict(zip(shown_ids, bar_labels([picked[i] for i in shown_ids]), strict=True))
    with guard("Replaying runs"), st.spinner("Re-simulating the stored placements ..."):
        replays = {i: replay(picked[i]) for i in shown_ids}
        shown = {i: _schedule(picked[i], *replays[i], measured) for i in shown_ids}
        end = max(s.makespan for s, _ in shown.values()) * 1e3 * 1.03
        cols = st.columns(len(shown_ids))
        for side, col, rid in zip(("l", "r"), cols, shown_ids, strict=False):
            pr = replays[rid][0]
            schedule, what = shown[rid]
            with col:
                title = f"{what} · {names[rid]}" if offered else names[rid]
                show_figure(timeline(schedule, pr.graph, pr.cluster, title=title,
                                     time_range_ms=(0.0, end)), key=keys.compare_timeline(side))
        if left != right:
            _diff(replays[left][0], replays[right][0])
        elif len(ids) > 1:
            st.info("Left and right are the same run: pick another run on one side to see what moved.")


def _schedule(run: Run, pr, simulated, measured: bool):
    """The schedule a timeline draws and what it is: the stored measured one when asked for and stored."""
    if measured and has_measurement(run):
        return load_measured_schedule(run, pr.graph, pr.cluster), "Measured"
    return simulated, "Simulated"


def sweeps() -> None:
    sweeps = list_runs(kind="sweep")
    if sweeps:
        st.subheader("Sweeps (makespan per placer)")
        by_id = {r.id: r for r in sweeps}
        linked_choice(SWEEP, keys.COMPARE_SWEEP, list(by_id))
        rid = st.selectbox("Sweep", list(by_id), key=keep(keys.COMPARE_SWEEP, options=list(by_id)),
                           format_func=lambda i: run_label(by_id[i]))
        set_page_params({SWEEP: rid})
        show_table(pd.DataFrame(sweep_pivot(sweep_rows(by_id[rid]))))


def _diff(a, b) -> None:
    st.markdown("**Placement diff** (left → right)")
    if a.graph.content_hash != b.graph.content_hash:
        st.info("The two runs place different graphs, so there is no op-by-op diff.")
        return
    table = placement_diff(a.graph, a.placement.devices, b.placement.devices,
                           [d.name for d in a.cluster.devices], [d.name for d in b.cluster.devices])
    n = a.graph.num_ops
    st.caption(f"{len(table):,} of {n:,} ops ({len(table) / n:.1%}) are on a different device; "
               f"{table['compute (ms)'].sum():.4g} ms of compute moved. Heaviest first.")
    if len(table):
        show_table(table.head(500), height=240)
        table_downloads(table, keys.COMPARE_DIFF, "placement_diff")
    moved = moved_ops(a.placement.devices, b.placement.devices, [d.name for d in a.cluster.devices],
                      [d.name for d in b.cluster.devices])
    linked_flag(MOVED, keys.COMPARE_DIFF_VIEW)
    view = st.toggle("Show the moved ops in the graph view", key=keep(keys.COMPARE_DIFF_VIEW, False))
    set_page_params({MOVED: flag_param(view)})
    if view:
        show_graph_view(a.graph, b.placement.devices, b.cluster, key=keys.COMPARE_DIFF_EXPLORER, highlight=moved)


def cdfs() -> None:
    st.subheader("CDF over test graphs")
    sources = list_runs(kind="eval") + list_runs(kind="experiment")
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
    linked_choices(CDF, keys.COMPARE_CDF_RUNS, list(by_id))
    key = keep(keys.COMPARE_CDF_RUNS, default, options=list(by_id))
    chosen = [by_id[i] for i in st.multiselect("Runs in the CDF", list(by_id), key=key,
                                               format_func=lambda i: f"{by_id[i].meta.get('kind')}: "
                                                                     f"{run_label(by_id[i])}")]
    set_page_params({CDF: choices_param(r.id for r in chosen)})
    clusters = {r.meta.get("cluster") for r in chosen}
    if len(clusters) > 1:
        st.warning("These runs are on different clusters (" + ", ".join(sorted(map(str, clusters))) + "); their "
                   "ratios to the lower bound are comparable only loosely.")
    placers: dict[str, str | None] = {}
    series = cdf_series([r for r in chosen if r.meta.get("kind") == "eval"],
                        [r for r in chosen if r.meta.get("kind") == "experiment"], placers)
    if series:
        show_figure(cdf_figure(series, placers=placers), key=keys.COMPARE_CDF)


def learning_curves_section() -> None:
    st.subheader("Learning curves")
    runs = list_runs(kind="train")
    if not runs:
        st.info("No training runs yet — start one on the Train page or with `placelab train … --save`.")
        return
    by_id = {r.id: r for r in runs}
    linked_choices(CURVES, keys.COMPARE_TRAIN_RUNS, list(by_id))
    key = keep(keys.COMPARE_TRAIN_RUNS, list(by_id)[:2], options=list(by_id))
    chosen = st.multiselect("Training runs", list(by_id), key=key,
                            format_func=lambda i: run_label(by_id[i]),
                            help="Runs that differ only in their seed are drawn as a mean with a 95 % bootstrap band")
    set_page_params({CURVES: choices_param(chosen)})
    placers: dict[str, str | None] = {}
    curves = seed_groups([by_id[i] for i in chosen], placers)
    if chosen and not curves:
        st.info("None of the selected training runs has finished an episode yet.")
    elif curves:
        settings = {setting_of(by_id[i]) for i in chosen}
        if len(settings) > 1:
            st.warning("These training runs are on different graphs or clusters: their runtimes are not comparable "
                       "(rewards and entropies still are, loosely).")
        x, smoothing = curve_controls(keys.COMPARE, linked=True)
        show_figure(learning_curves(curves, x=x, smoothing=smoothing, max_points=MAX_CURVE_POINTS, placers=placers),
                    key=keys.COMPARE_CURVES)
        _learning_health([by_id[i] for i in chosen])


def _learning_health(runs: list[Run]) -> None:
    """Each training run's learning-health verdict (policies/rl/core/health.py), under the curves."""
    from policies.rl.core.health import NEVER_LEFT_UNIFORM

    with st.spinner("Judging the learning health (random search on the runs' graphs) ..."):
        healths = [training_health(r) for r in runs]
    st.markdown("**Learning health** — entropy and sampled runtime, first vs last window; the best found vs "
                "the best of as many uniformly random placements on the same simulator")
    table = pd.DataFrame([health_row(r, h) for r, h in zip(runs, healths, strict=True)])
    show_table(table, key=keys.COMPARE_HEALTH)
    uniform = [run_label(r) for r, h in zip(runs, healths, strict=True) if h is not None and h.never_left_uniform]
    if uniform:
        st.warning(f"{', '.join(uniform)}: {NEVER_LEFT_UNIFORM}.", icon=":material/warning:")
