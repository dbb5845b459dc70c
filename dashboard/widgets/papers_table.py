"""The Papers page's parts around its side-by-side table: the run's headline numbers, the row-normalised toggle
(kept in the link), the table drawn in the viewer's theme, and one-click figure downloads."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import state as keys
from dashboard.data.link import NORMALISED
from dashboard.figures.papers import cell_styles, has_paper_numbers, text_width_px
from dashboard.figures.tables import MISSING
from dashboard.figures.theme import EXPORT_DEFAULTS, EXPORT_FORMATS, export_bytes
from dashboard.widgets.link import flag_param, linked_flag, set_page_params
from dashboard.widgets.ui import viewer_theme
from placelab.reproduce.results_doc import resumed_versions

__all__ = ["figure_downloads", "header_metrics", "normalised_toggle", "show_table"]


def header_metrics(meta: dict, table: list[dict]) -> bool:
    """Setting, wall time, cells within 10 % (or "none" for a held-out table), code version; whether the table
    has paper numbers."""
    params = meta.get("parameters", {})
    m = meta.get("metrics", {})
    cols = st.columns(4)
    cols[0].metric("Setting", params.get("setting", "?"))
    resumed = resumed_versions(params)
    again = f"resumed {len(resumed)}× (placelab reproduce --resume)" if resumed else None
    cols[1].metric("Wall time", f"{m.get('wall_s', 0) / 60:.1f} min",
                   help=f"its last part: the run was {again}" if again else None)
    paper = has_paper_numbers(table)  # none: a held-out reproduction, judged against its goal (the caption)
    if paper:
        cols[2].metric("Cells within 10 %", f"{m.get('cells_within_10pct', 0)} / {m.get('cells_compared', 0)}")
    else:
        cols[2].metric("Paper numbers", "none", help="held out: no paper has this table; its goal is above")
    first = str((meta.get("code_version") or {}).get("git") or "?")
    cols[3].metric("Code version (last part)" if resumed else "Code version", resumed[-1] if resumed else first,
                   help=f"started on {first}, {again} on {', '.join(resumed)}" if again else None)
    return paper


def figure_downloads(fig, name: str, key: str) -> None:
    """One-click HTML/PNG/SVG downloads: :func:`export_bytes` at the *Export figure* popover's default settings."""
    size = f"{EXPORT_DEFAULTS['width']}×{EXPORT_DEFAULTS['height']} px"
    cols = st.columns([1, 1, 1, 3])
    for col, fmt in zip(cols, ("html", "png", "svg"), strict=False):
        col.download_button(fmt.upper(), lambda f=fmt: export_bytes(fig, f) or b"", file_name=f"{name}.{fmt}",
                            mime=EXPORT_FORMATS[fmt], key=keys.part(key, fmt), on_click="ignore",
                            help=f"{size}, as *Export figure* exports by default")


def show_table(shown: pd.DataFrame) -> None:
    """The side-by-side table, labels whole, agreement cells readable in the viewer's theme (before the browser
    reports it: ``light``, whose cells set their text colour too: dark on pastel, readable on a dark page)."""
    widths = {c: st.column_config.TextColumn(width=text_width_px(shown[c], c)) for c in ("row", "column")}
    st.dataframe(shown.style.apply(cell_styles, theme=viewer_theme(), axis=None), width="stretch", hide_index=True,
                 column_config=widths, placeholder=MISSING)  # an empty cell as every table draws it


def normalised_toggle(table: list[dict]) -> bool:
    """The *Judge by row-normalised ratios* toggle (on by default where the table has normalised ratios)."""
    by_rows = any(r.get("rel_ratio") not in (None, "") for r in table)
    linked_flag(NORMALISED, keys.PAPERS_NORM)
    if keys.PAPERS_NORM not in st.session_state:
        st.session_state[keys.PAPERS_NORM] = by_rows
    normalised = st.toggle("Judge by row-normalised ratios", key=keys.PAPERS_NORM,
                           help="Each value divided by its row's reference column, ours and the paper's alike: "
                                "compares the shape of a row when the machines differ")
    set_page_params({NORMALISED: flag_param(normalised, by_rows)})
    return normalised
