"""Home: what placelab is, and the stored runs."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from dashboard.common import example_runs_dir, runs_dir
from engine.runs import RunStore
from engine.summary import run_summary


def runs_table(root: Path) -> pd.DataFrame:
    """One row per stored run under ``root``; empty when there are none (or no such folder)."""
    if not root.is_dir():
        return pd.DataFrame()
    rows = [run_summary(r) for r in RunStore(root).list()]
    columns = ["id", "name", "kind", "status", "placer", "cluster", "graph", "makespan_s"]
    return pd.DataFrame(rows, columns=columns) if rows else pd.DataFrame()


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
    table = runs_table(runs_dir())
    if table.empty:
        st.info("No runs yet — create one on the Place page (Save as run) or with `placelab place … --save`.")
    else:
        st.dataframe(table, hide_index=True)
    examples = runs_table(example_runs_dir())
    if not examples.empty:
        st.subheader("Bundled examples (read-only)")
        st.caption("Shipped with placelab so every page has something to show; Compare and Runs list them too, "
                   "marked *example*.")
        st.dataframe(examples, hide_index=True)
