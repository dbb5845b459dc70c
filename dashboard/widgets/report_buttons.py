"""The *Report* buttons of the Compare and Papers pages: the runs on the page as a slide deck (PPTX) or one
self-contained HTML page, made on the click by the function behind ``placelab report``
(:func:`dashboard.report.export.report_bytes`)."""

from __future__ import annotations

import streamlit as st

from dashboard import state as keys
from dashboard.report.export import REPORT_FORMATS, report_bytes
from engine.store.runs import Run

__all__ = ["report_buttons"]

LABELS = {"pptx": "Report (PPTX)", "html": "Report (HTML)"}


def report_buttons(runs: list[Run], key: str, name: str = "report") -> None:
    """One download button per report format for ``runs``, the file named ``name.pptx`` / ``name.html``; the
    report is made when a button is clicked (its figures take a second or two each)."""
    ids = " ".join(r.id for r in runs)
    cols = st.columns([1, 1, 4])
    for col, fmt in zip(cols, REPORT_FORMATS, strict=False):
        col.download_button(LABELS[fmt], lambda f=fmt: report_bytes(runs, f, output=f"{name}.{f}"),
                            file_name=f"{name}.{fmt}", mime=REPORT_FORMATS[fmt], key=keys.part(key, fmt),
                            on_click="ignore", icon=":material/slideshow:",
                            help=f"These runs as {'a slide deck' if fmt == 'pptx' else 'one HTML page'}: title, "
                                 f"table, figures, provenance in the notes (`placelab report {ids} -o "
                                 f"{name}.{fmt}`)")
