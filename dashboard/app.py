"""Streamlit entry point: ``streamlit run dashboard/app.py`` (or ``make app``).

The stored runs are read from ``runs/`` at the repository root, or from the directory named
by the environment variable ``PLACELAB_RUNS_DIR``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import streamlit as st

from engine.runs import RunStore
from engine.summary import run_summary

REPO_ROOT = Path(__file__).resolve().parents[1]


def runs_dir() -> Path:
    """The directory holding stored runs (``PLACELAB_RUNS_DIR`` overrides ``<repo>/runs``)."""
    return Path(os.environ.get("PLACELAB_RUNS_DIR") or REPO_ROOT / "runs")


def runs_table(root: Path) -> pd.DataFrame:
    """One row per stored run under ``root``; empty when there are none."""
    if not root.is_dir():
        return pd.DataFrame()
    rows = [run_summary(r) for r in RunStore(root).list()]
    columns = ["id", "name", "kind", "status", "placer", "cluster", "graph", "makespan_s"]
    return pd.DataFrame(rows, columns=columns) if rows else pd.DataFrame()


def home() -> None:
    st.title("placelab")
    st.write(
        "A lab bench for **device placement** of neural-network computation graphs: "
        "which op runs on which GPU or CPU so that one training or inference step finishes "
        "soonest without running out of device memory. Load a graph, run or train placers "
        "(heuristics, partitioners, list schedulers, search, and the learned placers of "
        "Mirhoseini et al. 2017, Placeto and DOPPLER), and compare their simulated schedules."
    )
    st.subheader("Stored runs")
    table = runs_table(runs_dir())
    if table.empty:
        st.info("No runs yet — create one with `placelab place …`")
    else:
        st.dataframe(table, hide_index=True)


st.set_page_config(page_title="placelab", layout="wide")
st.navigation([st.Page(home, title="Home", default=True)]).run()
