"""Home: what placelab is, and the stored runs."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard.data.run_tables import runs_table
from dashboard.stores import example_runs_dir, runs_dir
from dashboard.widgets.ui import show_table


def _show_runs(table: pd.DataFrame) -> None:
    """The table with missing values as a dash (not "None") and makespans to 4 significant digits."""
    show_table(table)


def page() -> None:
    st.title("placelab")
    st.write(
        "A lab bench for **device placement** of neural-network computation graphs: "
        "which op runs on which GPU or CPU so that one training or inference step finishes "
        "soonest without running out of device memory. Load a graph, run or train placers "
        "(heuristics, partitioners, list schedulers, search, and the learned placers of "
        "Mirhoseini et al. 2017, Placeto and DOPPLER), and compare their simulated schedules."
    )
    st.markdown("**Graphs** loads and inspects a graph · **Place** runs placers on it · "
                "**Train** trains the learned placers in the background and plots their learning curves · "
                "**Compare** puts stored runs side by side · **Runs** browses, renames and exports them.")
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
