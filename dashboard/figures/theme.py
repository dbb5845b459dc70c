"""Colors shared by every figure, the presentation look, and figure export (HTML, and PNG/SVG/PDF via kaleido)."""

from __future__ import annotations

import copy
import os
import zlib
from pathlib import Path

import plotly.graph_objects as go

__all__ = ["EXPORT_FORMATS", "PALETTE", "apply_presentation", "device_color", "export_figure", "figure_html",
           "figure_image", "run_color"]

# Okabe–Ito plus extras: distinguishable for color-blind viewers, good on a projector.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
           "#8C564B", "#7F7F7F", "#17BECF", "#BCBD22")
#: Colours for runs and placers: the palette without black and yellow (lost on dark or light backgrounds).
_RUN_PALETTE = tuple(c for c in PALETTE if c not in ("#000000", "#F0E442"))
#: Debian's chromium; kaleido (>= 1, through choreographer) is pointed at it and never downloads one.
SYSTEM_CHROMIUM = Path("/usr/bin/chromium")
EXPORT_FORMATS = {"png": "image/png", "svg": "image/svg+xml", "pdf": "application/pdf", "html": "text/html"}


def device_color(d: int) -> str:
    return PALETTE[d % len(PALETTE)]


def run_color(key: str) -> str:
    """A colour fixed by ``key`` (a placer name or a run id): the same in every chart and session."""
    return _RUN_PALETTE[zlib.crc32(key.encode("utf-8")) % len(_RUN_PALETTE)]


def apply_presentation(fig: go.Figure, font_size: int = 20) -> go.Figure:
    """Large fonts for a meeting room; margins grow to fit labels, titles sit clear of the toolbar.

    The background is left to the app's theme (light or dark), so text stays readable in both.
    """
    fig.update_layout(font={"size": font_size}, title_font={"size": round(font_size * 1.3)},
                      legend_font={"size": round(font_size * 0.9)}, hoverlabel_font={"size": round(font_size * 0.9)},
                      title={"y": 0.98, "yanchor": "top", "automargin": True})
    fig.update_xaxes(title_font={"size": round(font_size * 1.1)}, tickfont={"size": round(font_size * 0.9)},
                     automargin=True)
    fig.update_yaxes(title_font={"size": round(font_size * 1.1)}, tickfont={"size": round(font_size * 0.9)},
                     automargin=True)
    fig.update_annotations(font_size=round(font_size * 0.9))
    return fig


def export_figure(fig: go.Figure, *, title: str | None = None, font_size: int = 18) -> go.Figure:
    """A copy of ``fig`` for a slide or paper: white template, the given title, large fonts, labels kept whole."""
    out = go.Figure(copy.deepcopy(fig.to_dict()))
    out.update_layout(template="plotly_white", paper_bgcolor="white", plot_bgcolor="white")
    apply_presentation(out, font_size)
    if title is not None:
        out.update_layout(title_text=title)
    return out


def figure_html(fig: go.Figure) -> str:
    """A standalone HTML page of the figure that works offline (plotly.js inlined); axis labels kept whole."""
    out = go.Figure(fig)
    out.update_xaxes(automargin=True)
    out.update_yaxes(automargin=True)
    return out.to_html(include_plotlyjs=True, full_html=True)


def _use_system_chromium() -> None:
    if "BROWSER_PATH" not in os.environ and SYSTEM_CHROMIUM.exists():
        os.environ["BROWSER_PATH"] = str(SYSTEM_CHROMIUM)


def figure_image(fig: go.Figure, fmt: str, *, width: int | None = None, height: int | None = None,
                 scale: float = 1.0) -> bytes | None:
    """PNG/SVG/PDF bytes through kaleido driving the installed chromium; None when it cannot render."""
    _use_system_chromium()
    try:
        return fig.to_image(format=fmt, width=width, height=height, scale=scale)
    except Exception:  # kaleido raises assorted errors when it cannot start chromium
        return None
