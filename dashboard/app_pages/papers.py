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
from dashboard.data.link import NORMALISED, REPRODUCTION
from dashboard.data.runs import list_runs
from dashboard.figures.papers import (
    AGREEMENT_LEGEND,
    cell_styles,
    ratio_figure,
    reproduction_figure,
    side_by_side,
    table_csv,
    table_latex,
    text_width_px,
)
from dashboard.figures.tables import MISSING
from dashboard.figures.theme import EXPORT_DEFAULTS, EXPORT_FORMATS, export_bytes
from dashboard.widgets.link import flag_param, linked_choice, linked_flag, set_page_params
from dashboard.widgets.papers_runs import graphs_used, reproduction_label, runs_beside_this
from dashboard.widgets.report_buttons import report_buttons
from dashboard.widgets.ui import guard, show_figure, viewer_theme
from engine.errors import PlacelabError
from placelab.reproduce.results_doc import resumed_versions, table_rows


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


def _figure_downloads(fig, name: str, key: str) -> None:
    """One-click HTML/PNG/SVG downloads: :func:`export_bytes` at the *Export figure* popover's default settings."""
    size = f"{EXPORT_DEFAULTS['width']}×{EXPORT_DEFAULTS['height']} px"
    cols = st.columns([1, 1, 1, 3])
    for col, fmt in zip(cols, ("html", "png", "svg"), strict=False):
        col.download_button(fmt.upper(), lambda f=fmt: export_bytes(fig, f) or b"", file_name=f"{name}.{fmt}",
                            mime=EXPORT_FORMATS[fmt], key=keys.part(key, fmt), on_click="ignore",
                            help=f"{size}, as *Export figure* exports by default")


def _show_table(shown: pd.DataFrame) -> None:
    """The side-by-side table, labels whole, agreement cells readable in the viewer's theme (before the browser
    reports it: ``light``, whose cells set their text colour too: dark on pastel, readable on a dark page)."""
    widths = {c: st.column_config.TextColumn(width=text_width_px(shown[c], c)) for c in ("row", "column")}
    st.dataframe(shown.style.apply(cell_styles, theme=viewer_theme(), axis=None), width="stretch", hide_index=True,
                 column_config=widths, placeholder=MISSING)  # an empty cell as every table draws it


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
        m = meta.get("metrics", {})
        cols = st.columns(4)
        cols[0].metric("Setting", params.get("setting", "?"))
        resumed = resumed_versions(params)
        again = f"resumed {len(resumed)}× (placelab reproduce --resume)" if resumed else None
        cols[1].metric("Wall time", f"{m.get('wall_s', 0) / 60:.1f} min",
                       help=f"its last part: the run was {again}" if again else None)
        cols[2].metric("Cells within 10 %", f"{m.get('cells_within_10pct', 0)} / {m.get('cells_compared', 0)}")
        first = str((meta.get("code_version") or {}).get("git") or "?")
        cols[3].metric("Code version (last part)" if resumed else "Code version", resumed[-1] if resumed else first,
                       help=f"started on {first}, {again} on {', '.join(resumed)}" if again else None)
        by_rows = any(r.get("rel_ratio") not in (None, "") for r in table)
        linked_flag(NORMALISED, keys.PAPERS_NORM)
        if keys.PAPERS_NORM not in st.session_state:
            st.session_state[keys.PAPERS_NORM] = by_rows
        normalised = st.toggle("Judge by row-normalised ratios", key=keys.PAPERS_NORM,
                               help="Each value divided by its row's reference column, ours and the paper's alike: "
                                    "compares the shape of a row when the machines differ")
        set_page_params({NORMALISED: flag_param(normalised, by_rows)})
        shown = pd.DataFrame(side_by_side(table, normalised))
        if not shown.empty:
            _show_table(shown)
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
        fig = ratio_figure(table, normalised=normalised)
        show_figure(fig, key=keys.PAPERS_RATIO)
        _figure_downloads(fig, f"{run.id}-ratios", keys.PAPERS_RATIO_DOWNLOADS)
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
            _figure_downloads(fig, f"{run.id}-{name.split('/')[-1][:-5]}", keys.papers_figure(i, downloads=True))
    st.subheader("Rerun")
    st.code(f"placelab reproduce {meta.get('placer')}" + (" --quick" if params.get("setting") == "quick" else ""),
            language="bash")
    steps = len(commands.get("steps", []))
    with st.expander(f"The {steps} command{'' if steps == 1 else 's'} it ran, with seeds and wall times"):
        st.code("\n".join(s["command"] for s in commands.get("steps", [])), language="bash")
        st.json(json.loads(json.dumps(commands.get("steps", []))), expanded=False)
