"""Compare: stored runs side by side, one graph and cluster at a time — table, makespan bars, two timelines,
a placement diff, CDFs over test graphs (eval and experiment runs), learning curves of training runs.

The link holds the runs compared (``runs``) and every other choice that changes what the page draws (the pair of
timelines, the toggles, the sweep, the CDF's and the curves' runs): a reload or a shared link shows the same.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import state as keys
from dashboard.context import current_cluster, current_graph, keep
from dashboard.data import link
from dashboard.data.runs import (
    bar_labels,
    comparison_row,
    default_setting,
    estimate_warnings,
    has_placement,
    list_runs,
    run_label,
    run_metrics,
    setting_label,
    setting_of,
)
from dashboard.figures import makespan_bars
from dashboard.figures.fidelity import measured_bars
from dashboard.widgets.compare_sections import cdfs, learning_curves_section, sweeps, timelines
from dashboard.widgets.link import flag_param, linked_flag, linked_runs, set_page_params
from dashboard.widgets.report_buttons import report_buttons
from dashboard.widgets.ui import show_figure, show_table, table_downloads
from engine.store.runs import Run

#: Runs preselected from one group.
RUNS_SHOWN_FIRST = 8


def page() -> None:
    st.title("Compare")
    runs = [r for r in list_runs() if (r.meta.get("metrics") or {}).get("makespan_s") is not None]
    if not runs:
        st.info("No finished placement runs to compare yet — save some on the Place page or run "
                "`placelab compare GRAPH --cluster C` / `placelab place … --save`.")
    else:
        _from_link(runs)
        _placements(runs)
    sweeps()
    cdfs()
    learning_curves_section()


def _from_link(runs: list[Run]) -> None:
    """On the session's first run: the runs the link names (through the guard) are the runs compared, with
    graphs and clusters mixed where the link says so or they are on several."""
    linked_flag(link.MIX, keys.COMPARE_MIX)
    linked = linked_runs(link.RUNS)
    listed = {r.id for r in runs}
    chosen = [r for r in linked or () if r.id in listed]
    if not chosen:
        return
    settings = {setting_of(r) for r in chosen}
    st.session_state[keys.COMPARE_MIX] = bool(st.session_state.get(keys.COMPARE_MIX)) or len(settings) > 1
    if len(settings) == 1:
        st.session_state[keys.COMPARE_SETTING] = next(iter(settings))
    st.session_state[keys.COMPARE_RUNS] = [r.id for r in chosen]


def _pool(runs: list[Run]) -> list[Run]:
    """The runs to choose from: one graph and cluster (the current ones by default), or all with *Mix*."""
    by_setting: dict[tuple[str, str], list[Run]] = {}
    for r in runs:
        by_setting.setdefault(setting_of(r), []).append(r)
    settings = list(by_setting)
    cols = st.columns([3, 1], vertical_alignment="bottom")
    mix = cols[1].toggle("Mix graphs / clusters", key=keep(keys.COMPARE_MIX, False),
                         help="Makespans on different graphs or clusters are not comparable; off by default")
    set_page_params({link.MIX: flag_param(mix)})
    if mix:
        cols[0].caption("All runs, any graph and cluster.")
        return runs
    g = current_graph()
    default = default_setting(settings, None if g is None else g.name, "" if g is None else g.content_hash,
                              current_cluster().name)
    setting = cols[0].selectbox("Graph and cluster", settings,
                                key=keep(keys.COMPARE_SETTING, default, options=settings),
                                format_func=lambda s: setting_label(s, len(by_setting[s])))
    return by_setting[setting]


def _placements(runs: list[Run]) -> None:
    by_id = {r.id: r for r in _pool(runs)}
    keep(keys.COMPARE_RUNS)  # the choice, back from another page
    kept = [i for i in st.session_state.get(keys.COMPARE_RUNS) or [] if i in by_id]
    st.session_state[keys.COMPARE_RUNS] = kept or list(by_id)[:RUNS_SHOWN_FIRST]
    chosen = st.multiselect("Runs", list(by_id), key=keys.COMPARE_RUNS, format_func=lambda i: run_label(by_id[i]))
    set_page_params({link.RUNS: link.ids_param(chosen)})
    selected = [by_id[i] for i in chosen]
    if not selected:
        return
    mixed = {setting_of(r) for r in selected}
    if len(mixed) > 1:
        st.error("**Not comparable:** these runs are on " + "; ".join(f"{g} on {c}" for g, c in sorted(mixed))
                 + ". Makespans of different graphs or clusters say nothing about the placers; compare within "
                   "one graph and cluster (turn off *Mix*).", icon=":material/warning:")
    table = pd.DataFrame([comparison_row(r) for r in selected])
    show_table(table)
    table_downloads(table, keys.COMPARE_TABLE, "comparison")
    report_buttons(selected, keys.COMPARE_REPORT)
    graph, cluster = next(iter(mixed)) if len(mixed) == 1 else ("several graphs", "clusters")
    rows = [{"label": lb, "placer": r.meta.get("placer"), "hover": f"run {r.id} · {r.meta.get('name') or ''}",
             **run_metrics(r)}
            for lb, r in zip(bar_labels(selected), selected, strict=True)]
    show_figure(makespan_bars(rows, title=f"Makespan on {graph} · {cluster}"), key=keys.COMPARE_BARS)
    off = estimate_warnings(rows)
    if off:
        st.warning(off, icon=":material/warning:")
    executed = [row for row, r in zip(rows, selected, strict=True) if row.get("measured_makespan_s") is not None
                and has_placement(r)]
    if executed:
        st.caption(f"{len(executed)} of these runs were also executed on real devices (`--execute`): measured "
                   "mean ± std over their repeats beside the simulation of the same (scaled) graph.")
        show_figure(measured_bars(executed, title=f"Simulated and measured makespan on {graph} · {cluster}"),
                    key=keys.COMPARE_MEASURED_BARS)
    timelines([r for r in selected if has_placement(r)])
