"""The Papers page's view of which graphs a reproduction run used (ours, or the authors' own files with
``--graphs-dir``) and of another stored run of the same reproduction beside it, cell by cell."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import state as keys
from dashboard.data.runs import list_runs
from dashboard.figures.papers import graphs_rows, runs_beside
from dashboard.widgets.ui import show_table
from placelab.reproduce.published import graphs_label
from placelab.reproduce.results_doc import table_rows

__all__ = ["graphs_used", "reproduction_label", "runs_beside_this"]


def reproduction_label(run) -> str:
    """``NAME (setting)``, or ``NAME (setting, authors' graphs)`` for a run on the authors' own graph files."""
    params = run.meta.get("parameters", {})
    on = graphs_label(params)
    return f"{run.meta.get('placer')} ({params.get('setting', '?')}{', ' + on if on else ''})"


def graphs_used(params: dict) -> None:
    """Which graphs the run used: the authors' files (name, sha256) or our generated ones, per row."""
    rows = graphs_rows(params.get("graphs"))
    if rows:
        st.caption("Graphs this run used" + (" (`--graphs-dir`: the authors' files, by name and sha256)"
                                              if graphs_label(params) else ""))
        show_table(pd.DataFrame(rows), width="stretch", key=keys.PAPERS_GRAPHS)


def runs_beside_this(run, table: list[dict]) -> None:
    """Another stored run of the same reproduction (the other graphs, the other setting) cell by cell beside this."""
    others = {f"{reproduction_label(r)} · {r.id}": r for r in list_runs(kind="reproduce", status="done")
              if r.meta.get("placer") == run.meta.get("placer") and r.id != run.id}
    if not others:
        return
    pick = st.selectbox("Beside another run of this reproduction", ["(none)", *others],
                        key=keys.papers_beside(run.id),
                        help="e.g. the same table on our generated graphs and on the authors' own files")
    if pick == "(none)":
        return
    other = others[pick]
    labels = (f"ours: {reproduction_label(run)}", f"ours: {reproduction_label(other)}")
    if labels[0] == labels[1]:  # two runs of one setting on the same kind of graphs: their ids tell them apart
        labels = (f"{labels[0]} · {run.id}", f"{labels[1]} · {other.id}")
    show_table(pd.DataFrame(runs_beside(table, table_rows(other), labels)), width="stretch")
