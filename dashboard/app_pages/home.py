"""Home: what placelab is, a picture of the newest comparison (the bundled examples' on a new install), and the
stored runs."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import state as keys
from dashboard.data.run_tables import runs_table
from dashboard.data.runs import PLACEMENT_KINDS, bar_labels, has_placement, list_runs, replay, run_label, setting_of
from dashboard.figures import makespan_bars, timeline
from dashboard.stores import example_runs_dir, runs_dir
from dashboard.widgets.ui import guard, show_figure, show_table
from engine.store.runs import Run

#: Most runs in the picture of the newest comparison.
RUNS_PICTURED = 8


def _show_runs(table: pd.DataFrame) -> None:
    """The table with missing values as a dash (not "None") and makespans to 4 significant digits."""
    show_table(table)


def newest_comparison() -> list[Run]:
    """The finished placement runs on the graph and cluster of the newest run that has another to compare with
    (the user's runs before the bundled examples, newest first; at most :data:`RUNS_PICTURED`); one run where
    no two share a graph and cluster, none where there is no run to show."""
    groups: dict[tuple[str, str], list[Run]] = {}
    for run in list_runs():
        if run.meta.get("kind") in PLACEMENT_KINDS and (run.meta.get("metrics") or {}).get("makespan_s") is not None:
            groups.setdefault(setting_of(run), []).append(run)
    compared = next((g for g in groups.values() if len(g) > 1), None)
    if compared is not None:
        return compared[:RUNS_PICTURED]
    return next(([r] for g in groups.values() for r in g if has_placement(r)), [])


def _picture() -> None:
    """The newest comparison's makespan bars (its stored numbers: nothing is simulated), or one run's timeline."""
    runs = newest_comparison()
    if not runs:
        return
    m = runs[0].meta
    on = f"{(m.get('graph') or {}).get('name')} · {m.get('cluster')}"
    with guard("The newest comparison"):
        if len(runs) == 1:
            pr, schedule = replay(runs[0])
            show_figure(timeline(schedule, pr.graph, pr.cluster, title=f"{m.get('placer')} on {on}"),
                        key=keys.HOME_PICTURE)
            st.caption(f"The newest run, {run_label(runs[0])}: its simulated schedule, a lane per device.")
            return
        rows = [{"label": label, "placer": r.meta.get("placer"), "hover": f"run {r.id}",
                 **(r.meta.get("metrics") or {})}
                for label, r in zip(bar_labels(runs), runs, strict=True)]
        show_figure(makespan_bars(rows, title=f"Newest comparison: makespan on {on}"), key=keys.HOME_PICTURE)
        st.caption("Lower is better; **Compare** puts these runs side by side with their timelines and what moved.")


def page() -> None:
    st.title("placelab")
    st.write(
        "A lab bench for **device placement** of neural-network computation graphs: "
        "which op runs on which GPU or CPU so that one training or inference step finishes "
        "soonest without running out of device memory. Load a graph, run or train placers "
        "(heuristics, partitioners, list schedulers, search, and the learned placers of "
        "Mirhoseini et al. 2017, Placeto, DOPPLER and GDP), and compare their simulated schedules."
    )
    st.markdown("**Graphs** loads and inspects a graph · **Place** runs placers on it · "
                "**Train** trains the learned placers in the background and plots their learning curves · "
                "**Compare** puts stored runs side by side · **Runs** browses, renames and exports them.")
    _picture()
    st.subheader("Your runs")
    st.caption(f"Stored in `{runs_dir()}` (set `PLACELAB_RUNS_DIR` to use another folder).")
    tz = st.context.timezone
    table = runs_table(runs_dir(), tz)
    if table.empty:
        st.info("No runs yet — create one on the Place page (Save as run) or with `placelab place … --save`.")
    else:
        _show_runs(table)
    examples = runs_table(example_runs_dir(), tz)
    if not examples.empty:
        st.subheader("Bundled examples (read-only)")
        st.caption("Shipped with placelab so every page has something to show; Compare and Runs list them too, "
                   "marked *example*.")
        _show_runs(examples)
