"""What every page shows the same way: errors, figures with their export popover, table downloads."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard import state as keys
from dashboard.figures import apply_presentation, table_latex
from dashboard.figures.tables import MISSING, table_view
from dashboard.figures.theme import EXPORT_DEFAULTS, EXPORT_FORMATS, export_bytes
from engine.errors import PlacelabError, one_line

__all__ = ["PRESENTATION_FONT", "PRESENTATION_TABLE_ROWS", "figure_export_controls", "guard", "presentation",
           "show_error", "show_figure", "show_table", "table_downloads", "viewer_theme"]

#: Base font size (px) of figures in presentation mode.
PRESENTATION_FONT = 22
#: Most rows a table shows as a plain table in presentation mode, whose text follows the large fonts (a data
#: grid is drawn on a canvas at its own small size); longer tables stay scrollable grids.
PRESENTATION_TABLE_ROWS = 40
#: Width (px) of the export preview in its popover: wide enough to judge tick labels and margins.
PREVIEW_PX = 640


def show_error(message: object) -> None:
    """One st.error holding ``message`` as one line of at most ``MAX_LINE`` characters, its start and end
    kept and control characters escaped (``engine.errors.one_line``, as the CLI's ``error:`` line): a
    10^5-op cycle or a megabyte op name does not become a megabyte alert."""
    st.error(one_line(message))


@contextlib.contextmanager
def guard(action: str = "") -> Iterator[None]:
    """Turn a placelab error (bad input, infeasible placement, ...) or an I/O error into one st.error."""
    try:
        yield
    except PlacelabError as exc:
        show_error(f"{action}: {exc}" if action else exc)
    except OSError as exc:
        show_error(f"{action or 'File error'}: {exc.strerror or exc}")


def presentation() -> bool:
    return bool(st.session_state.get(keys.PRESENTATION, False))


def viewer_theme() -> str:
    """The theme the viewer's browser shows the app in (``light`` or ``dark``). The browser reports it from the
    second run of the page on; until then ``light``."""
    return getattr(st.context.theme, "type", None) or "light"


def show_table(table: pd.DataFrame, missing: Mapping[str, str] | None = None, **kwargs) -> None:
    """A table as every page shows it (:func:`dashboard.figures.tables.table_view`: 4 significant digits, missing
    values as a dash or ``missing[column]``), index hidden; in presentation mode a plain table at the large font
    when it has at most :data:`PRESENTATION_TABLE_ROWS` rows. ``kwargs`` go to ``st.dataframe`` (key, height)."""
    view = table_view(table, missing)
    if presentation() and len(table) <= PRESENTATION_TABLE_ROWS:
        st.table(view, hide_index=True)
    else:  # the grid draws an empty cell as its placeholder, whatever the Styler's text for it ("None" unless set)
        st.dataframe(view, hide_index=True, placeholder=MISSING, **kwargs)


def show_figure(fig: go.Figure, *, key: str | None = None, export: bool = True,
                on_select: Callable[[], None] | None = None, selection_mode: str | tuple[str, ...] = "points") -> None:
    """Show a plotly figure (large fonts when the presentation toggle is on) with its export controls;
    ``on_select`` is called when a point (a bar) is clicked (or a box dragged, with ``selection_mode``
    holding ``"box"``), the selection in ``st.session_state[key]``."""
    if presentation():  # on a copy: the figure may be cached (dashboard/widgets/schedule.py)
        fig = apply_presentation(go.Figure(fig), PRESENTATION_FONT)
    select = {} if on_select is None else {"on_select": on_select, "selection_mode": selection_mode}
    st.plotly_chart(fig, width="stretch", key=key, config={"displaylogo": False, "toImageButtonOptions": {
        "format": "png", "width": 1600, "height": 900, "scale": 2}}, **select)
    if export and key:
        figure_export_controls(fig, key)


def figure_export_controls(fig: go.Figure, key: str) -> None:
    """A popover to download ``fig`` as PNG/SVG/PDF (kaleido, chosen size) or HTML, with an editable title and
    a preview of the export (rendered only while its toggle is on: kaleido takes a second or more)."""
    with st.popover("Export figure", icon=":material/download:"):
        title = st.text_input("Title", value=fig.layout.title.text or "", key=keys.part(key, "x_title"))
        cols = st.columns(3)
        width = int(cols[0].number_input("width (px)", 300, 4000, EXPORT_DEFAULTS["width"], 100,
                                         key=keys.part(key, "x_w")))
        height = int(cols[1].number_input("height (px)", 200, 3000, EXPORT_DEFAULTS["height"], 100,
                                          key=keys.part(key, "x_h")))
        font = int(cols[2].number_input("font size", 8, 48, EXPORT_DEFAULTS["font_size"], 1,
                                        key=keys.part(key, "x_font")))
        fmt = st.radio("Format", list(EXPORT_FORMATS), horizontal=True, key=keys.part(key, "x_fmt"),
                       format_func=str.upper)

        def data() -> bytes:  # built on the click only: a deep copy of a 10k-op timeline costs seconds
            image = export_bytes(fig, fmt, title=title, width=width, height=height, font_size=font)
            if image is None:
                raise PlacelabError("image export needs kaleido and the system chromium (make setup "
                                    "browser-deps); download HTML instead")
            return image

        name = "".join(c if c.isalnum() or c in "-_" else "_" for c in (title or key)).strip("_")[:80] or key
        st.download_button(f"Download {fmt.upper()}", data, file_name=f"{name}.{fmt}", mime=EXPORT_FORMATS[fmt],
                           key=keys.part(key, "x_dl"), on_click="ignore")
        if st.toggle("Preview", key=keys.part(key, "x_preview"),
                     help="The figure as the download draws it: this title, size and font, rendered by kaleido"):
            preview = export_bytes(fig, "png", title=title, width=width, height=height, font_size=font)
            if preview is None:
                st.caption("No preview: it needs kaleido and the system chromium (make setup browser-deps).")
            else:
                st.image(preview, caption=f"{width} × {height} px, as exported (shown scaled)", width=PREVIEW_PX)


def table_downloads(table: pd.DataFrame, key: str, name: str) -> None:
    """CSV and LaTeX downloads of a table (LaTeX: booktabs, numbers to 4 significant digits)."""
    cols = st.columns([1, 1, 6])
    cols[0].download_button("CSV", lambda: table.to_csv(index=False).encode("utf-8"), file_name=f"{name}.csv",
                            mime="text/csv", key=keys.part(key, "csv"), on_click="ignore",
                            icon=":material/download:")
    cols[1].download_button("LaTeX", lambda: table_latex(table).encode("utf-8"), file_name=f"{name}.tex",
                            mime="application/x-tex", key=keys.part(key, "tex"), on_click="ignore",
                            icon=":material/download:")
