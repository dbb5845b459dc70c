"""Papers: a stored reproduction beside the paper's numbers — table, figures, commands, exports.

It opens on the reproduction run in the paper's own (full) setting that compares the most cells; the link holds
the reproduction shown (``reproduction``) and the row-normalised judgement where it differs from the run's own.
"""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from dashboard import state as keys
from dashboard.context import keep
from dashboard.data.link import REPRODUCTION
from dashboard.data.runs import list_runs
from dashboard.figures.papers import (
    AGREEMENT_LEGEND,
    ratio_figure,
    reproduction_figure,
    side_by_side,
    table_csv,
    table_latex,
)
from dashboard.widgets.link import linked_choice, set_page_params
from dashboard.widgets.papers_runs import graphs_used, reproduction_label, runs_beside_this
from dashboard.widgets.papers_table import figure_downloads, header_metrics, normalised_toggle, show_table
from dashboard.widgets.report_buttons import report_buttons
from dashboard.widgets.ui import guard, show_figure
from engine.errors import PlacelabError
from placelab.reproduce.results_doc import table_rows


def _reproductions() -> dict[str, object]:
    """Label → the newest finished reproduce run of each name, setting and kind of graphs (ours or the
    authors'): the user's own, else the bundled example's (``runs/``, so the page has content on first start)."""
    out: dict[str, object] = {}
    for run in list_runs(kind="reproduce", status="done"):
        out.setdefault(reproduction_label(run), run)
    return dict(sorted(out.items()))


def _first(reps: dict[str, object]) -> str:
    """The reproduction the page opens on: a run in the paper's setting before a quick one (whose budgets are far
    below the paper's), then the one comparing the most cells."""
    def rank(label: str) -> tuple[bool, int]:
        meta = reps[label].meta
        cells = (meta.get("metrics") or {}).get("cells_compared")
        return (meta.get("parameters") or {}).get("setting") == "full", cells if isinstance(cells, int) else 0

    return max(reps, key=rank)


def page() -> None:
    st.title("Papers")
    reps = _reproductions()
    if not reps:
        st.info("No reproductions stored yet. Run one with `placelab reproduce NAME --quick` "
                "(`placelab reproduce --list` shows them), or `make bundled-runs`.")
        return
    linked_choice(REPRODUCTION, keys.PAPERS_PICK, list(reps))
    label = st.selectbox("Reproduction", list(reps), key=keep(keys.PAPERS_PICK, _first(reps), options=list(reps)))
    set_page_params({REPRODUCTION: label})
    run = reps[label]
    meta = run.meta
    params = meta.get("parameters", {})
    st.caption(f"{params.get('paper', '')} — {params.get('citation', '')}")
    with guard("Reproduction"):
        table = table_rows(run)
        commands = run.read_json("commands.json")
        paper = header_metrics(meta, table)
        normalised = paper and normalised_toggle(table)
        shown = pd.DataFrame(side_by_side(table, normalised, paper=paper))
        if not shown.empty:
            show_table(shown)
        if paper:
            st.caption(AGREEMENT_LEGEND)
        if params.get("setting") == "quick":
            st.caption(f"Quick setting: budgets far below the paper's (each command under *Rerun* gives its own); "
                       f"`placelab reproduce {meta.get('placer')}` runs the paper's.")
        for note in commands.get("notes", []):
            st.caption(note)
        graphs_used(params)
        runs_beside_this(run, table)
        cols = st.columns([1, 1, 4])
        cols[0].download_button("Table (CSV)", table_csv(table), file_name=f"{run.id}-table.csv", mime="text/csv",
                                key=keys.PAPERS_CSV)
        cols[1].download_button("Table (LaTeX)", table_latex(table, params.get("citation", ""), normalised),
                                file_name=f"{run.id}-table.tex", mime="text/x-tex", key=keys.PAPERS_TEX)
        if paper:
            fig = ratio_figure(table, normalised=normalised)
            show_figure(fig, key=keys.PAPERS_RATIO)
            figure_downloads(fig, f"{run.id}-ratios", keys.PAPERS_RATIO_DOWNLOADS)
        report_buttons([run], keys.PAPERS_REPORT, name=f"{run.id}-report")
    st.subheader("Figures")
    figs = [f for f in run.files() if f.startswith("figures/") and f.endswith(".json")]
    if not figs:
        st.caption("This reproduction has no figures besides the table.")
    for i, name in enumerate(figs):
        with guard(name):
            try:
                fig = reproduction_figure(run.read_json(name))
            except ValueError as exc:
                raise PlacelabError(str(exc)) from None
            show_figure(fig, key=keys.papers_figure(i))
            figure_downloads(fig, f"{run.id}-{name.split('/')[-1][:-5]}", keys.papers_figure(i, downloads=True))
    st.subheader("Rerun")
    st.code(f"placelab reproduce {meta.get('placer')}" + (" --quick" if params.get("setting") == "quick" else ""),
            language="bash")
    steps = len(commands.get("steps", []))
    with st.expander(f"The {steps} command{'' if steps == 1 else 's'} it ran, with seeds and wall times"):
        st.code("\n".join(s["command"] for s in commands.get("steps", [])), language="bash")
        st.json(json.loads(json.dumps(commands.get("steps", []))), expanded=False)
