"""Compare: stored runs side by side, one graph and cluster at a time — table, makespan bars, two timelines,
a placement diff, CDFs over test graphs (eval and experiment runs), learning curves of training runs."""

from __future__ import annotations

from collections import Counter

import pandas as pd
import streamlit as st

from dashboard.app_pages.measured import has_measurement
from dashboard.app_pages.stored import (
    MAX_CURVE_POINTS,
    cdf_series,
    comparison_row,
    eval_series,
    experiment_series,
    has_placement,
    health_row,
    replay,
    run_label,
    seed_groups,
    setting_of,
    training_health,
)
from dashboard.app_pages.views import curve_controls, show_graph_view
from dashboard.common import guard, list_runs, show_figure, table_downloads
from dashboard.context import current_cluster, current_graph, keep
from dashboard.figures import cdf_figure, learning_curves, makespan_bars, timeline
from dashboard.figures.diff import moved_ops, placement_diff
from dashboard.figures.fidelity import measured_bars
from engine.executor.fidelity import load_measured_schedule
from engine.runs import Run
from policies.sweep import sweep_pivot, sweep_rows

#: Runs preselected from one group.
DEFAULT_RUNS = 8


def _setting_label(setting: tuple[str, str], count: int) -> str:
    return f"{setting[0]} on {setting[1]} ({count} runs)"


def _default_setting(settings: list[tuple[str, str]]) -> tuple[str, str]:
    """The group of the app's current graph and cluster when it has runs, else the one with the newest run."""
    g = current_graph()
    if g is not None:
        mine = (f"{g.name} [{g.content_hash[:8]}]", current_cluster().name)
        if mine in settings:
            return mine
    return settings[0]


def bar_labels(runs: list[Run]) -> list[str]:
    """Bar labels: the placer, with the run's name added where a placer appears more than once."""
    placers = [str(r.meta.get("placer") or "-") for r in runs]
    counts = Counter(placers)
    return [p if counts[p] == 1 else f"{p} · {r.meta.get('name') or r.id}" for p, r in zip(placers, runs,
                                                                                           strict=True)]


def page() -> None:
    st.title("Compare")
    runs = [r for r in list_runs() if (r.meta.get("metrics") or {}).get("makespan_s") is not None]
    if not runs:
        st.info("No finished placement runs to compare yet — save some on the Place page or run "
                "`placelab compare GRAPH --cluster C` / `placelab place … --save`.")
    else:
        _placements(runs)
    _sweeps()
    _cdfs()
    _learning_curves()


def _placements(runs: list[Run]) -> None:
    by_setting: dict[tuple[str, str], list[Run]] = {}
    for r in runs:
        by_setting.setdefault(setting_of(r), []).append(r)
    settings = list(by_setting)
    cols = st.columns([3, 1], vertical_alignment="bottom")
    mix = cols[1].toggle("Mix graphs / clusters", key=keep("compare_mix"),
                         help="Makespans on different graphs or clusters are not comparable; off by default")
    if mix:
        pool = runs
        cols[0].caption("All runs, any graph and cluster.")
    else:
        default = _default_setting(settings)
        if st.session_state.get("compare_setting") not in settings:
            st.session_state["compare_setting"] = default
        setting = cols[0].selectbox("Graph and cluster", settings, key=keep("compare_setting"),
                                    format_func=lambda s: _setting_label(s, len(by_setting[s])))
        pool = by_setting[setting]
    by_id = {r.id: r for r in pool}
    kept = [i for i in st.session_state.get("compare_runs", []) if i in by_id]
    st.session_state["compare_runs"] = kept or list(by_id)[:DEFAULT_RUNS]
    chosen = st.multiselect("Runs", list(by_id), key=keep("compare_runs"), format_func=lambda i: run_label(by_id[i]))
    selected = [by_id[i] for i in chosen]
    if not selected:
        return
    mixed = {setting_of(r) for r in selected}
    if len(mixed) > 1:
        st.error("**Not comparable:** these runs are on " + "; ".join(f"{g} on {c}" for g, c in sorted(mixed))
                 + ". Makespans of different graphs or clusters say nothing about the placers; compare within "
                   "one graph and cluster (turn off *Mix*).", icon=":material/warning:")
    table = pd.DataFrame([comparison_row(r) for r in selected])
    st.dataframe(table, hide_index=True)
    table_downloads(table, "compare_table", "comparison")
    graph, cluster = next(iter(mixed)) if len(mixed) == 1 else ("several graphs", "clusters")
    rows = [{"label": lb, "hover": f"run {r.id} · {r.meta.get('name') or ''}", **(r.meta.get("metrics") or {})}
            for lb, r in zip(bar_labels(selected), selected, strict=True)]
    show_figure(makespan_bars(rows, title=f"Makespan on {graph} · {cluster}"), key="compare_bars")
    executed = [row for row, r in zip(rows, selected, strict=True) if row.get("measured_makespan_s") is not None
                and has_placement(r)]
    if executed:
        st.caption(f"{len(executed)} of these runs were also executed on real devices (`--execute`): measured "
                   "mean ± std over their repeats beside the simulation of the same (scaled) graph.")
        show_figure(measured_bars(executed, title=f"Simulated and measured makespan on {graph} · {cluster}"),
                    key="compare_measured_bars")
    _timelines([r for r in selected if has_placement(r)])


def _timelines(runs: list[Run]) -> None:
    st.subheader("Two runs: timelines on one time axis, and what moved")
    if not runs:
        st.info("None of the selected runs stores a placement to replay.")
        return
    ids = [r.id for r in runs]
    labels = {r.id: run_label(r) for r in runs}
    offered = any(has_measurement(r) for r in runs)
    measured = offered and st.radio(
        "Schedules", ["simulated", "measured"], horizontal=True, key="compare_tl_source",
        help="Measured: the executed schedule a run stored (`--execute`); a run without one shows its simulation"
    ) == "measured"
    cols = st.columns(2)
    left = cols[0].selectbox("Left", ids, index=0, key="compare_left", format_func=labels.get)
    right = cols[1].selectbox("Right", ids, index=min(1, len(ids) - 1), key="compare_right", format_func=labels.get)
    picked = {r.id: r for r in runs}
    with guard("Replaying runs"), st.spinner("Re-simulating the stored placements ..."):
        replays = {i: replay(picked[i]) for i in {left, right}}
        shown = {i: _schedule(picked[i], *replays[i], measured) for i in {left, right}}
        end = max(s.makespan for s, _ in shown.values()) * 1e3 * 1.03
        for side, col, rid in (("l", cols[0], left), ("r", cols[1], right)):
            pr = replays[rid][0]
            schedule, what = shown[rid]
            with col:
                title = f"{what} · {run_label(pr.run)}" if offered else run_label(pr.run)
                show_figure(timeline(schedule, pr.graph, pr.cluster, title=title,
                                     time_range_ms=(0.0, end)), key=f"compare_tl_{side}")
        _diff(replays[left][0], replays[right][0])


def _schedule(run: Run, pr, simulated, measured: bool):
    """The schedule a timeline draws and what it is: the stored measured one when asked for and stored."""
    if measured and has_measurement(run):
        return load_measured_schedule(run, pr.graph, pr.cluster), "Measured"
    return simulated, "Simulated"


def _sweeps() -> None:
    sweeps = list_runs(kind="sweep")
    if sweeps:
        st.subheader("Sweeps (makespan per placer)")
        by_id = {r.id: r for r in sweeps}
        rid = st.selectbox("Sweep", list(by_id), key="compare_sweep", format_func=lambda i: run_label(by_id[i]))
        st.dataframe(pd.DataFrame(sweep_pivot(sweep_rows(by_id[rid]))), hide_index=True)


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
        st.dataframe(table.head(500), hide_index=True, height=240)
        table_downloads(table, "compare_diff", "placement_diff")
    moved = moved_ops(a.placement.devices, b.placement.devices, [d.name for d in a.cluster.devices],
                      [d.name for d in b.cluster.devices])
    if st.toggle("Show the moved ops in the graph view", key="compare_diff_view"):
        show_graph_view(a.graph, b.placement.devices, b.cluster, key="compare_diff_gv", highlight=moved)


def _cdfs() -> None:
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
    chosen = [by_id[i] for i in st.multiselect("Runs in the CDF", list(by_id), default=default, key="compare_cdf_runs",
                                               format_func=lambda i: f"{by_id[i].meta.get('kind')}: "
                                                                     f"{run_label(by_id[i])}")]
    clusters = {r.meta.get("cluster") for r in chosen}
    if len(clusters) > 1:
        st.warning("These runs are on different clusters (" + ", ".join(sorted(map(str, clusters))) + "); their "
                   "ratios to the lower bound are comparable only loosely.")
    series = cdf_series([r for r in chosen if r.meta.get("kind") == "eval"],
                        [r for r in chosen if r.meta.get("kind") == "experiment"])
    if series:
        show_figure(cdf_figure(series), key="compare_cdf")


def _learning_curves() -> None:
    st.subheader("Learning curves")
    runs = list_runs(kind="train")
    if not runs:
        st.info("No training runs yet — start one on the Train page or with `placelab train … --save`.")
        return
    by_id = {r.id: r for r in runs}
    chosen = st.multiselect("Training runs", list(by_id), default=list(by_id)[:2], key="compare_train_runs",
                            format_func=lambda i: run_label(by_id[i]),
                            help="Runs that differ only in their seed are drawn as a mean with a 95 % bootstrap band")
    curves = seed_groups([by_id[i] for i in chosen])
    if chosen and not curves:
        st.info("None of the selected training runs has finished an episode yet.")
    elif curves:
        settings = {setting_of(by_id[i]) for i in chosen}
        if len(settings) > 1:
            st.warning("These training runs are on different graphs or clusters: their runtimes are not comparable "
                       "(rewards and entropies still are, loosely).")
        x, smoothing = curve_controls("compare")
        show_figure(learning_curves(curves, x=x, smoothing=smoothing, max_points=MAX_CURVE_POINTS),
                    key="compare_curves")
        _learning_health([by_id[i] for i in chosen])


def _learning_health(runs: list[Run]) -> None:
    """Each training run's learning-health verdict (policies/rl/health.py), under the curves."""
    from policies.rl.health import NEVER_LEFT_UNIFORM

    with st.spinner("Judging the learning health (random search on the runs' graphs) ..."):
        healths = [training_health(r) for r in runs]
    st.markdown("**Learning health** — entropy and sampled runtime, first vs last window; the best found vs "
                "the best of as many uniformly random placements on the same simulator")
    table = pd.DataFrame([health_row(r, h) for r, h in zip(runs, healths, strict=True)])
    st.dataframe(table, hide_index=True, key="compare_health")
    uniform = [run_label(r) for r, h in zip(runs, healths, strict=True) if h is not None and h.never_left_uniform]
    if uniform:
        st.warning(f"{', '.join(uniform)}: {NEVER_LEFT_UNIFORM}.", icon=":material/warning:")
