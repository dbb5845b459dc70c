"""The presentation look and figure export (HTML, and PNG/SVG/PDF via kaleido); the colours of every figure
(:mod:`dashboard.figures.colors`) are re-exported here."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import plotly.graph_objects as go

from dashboard.figures import render
from dashboard.figures.colors import (
    LOWER_BOUND_COLOR,
    PALETTE,
    device_color,
    memcpy_color,
    placer_color,
    run_color,
    run_colors,
)

__all__ = ["EXPORT_DEFAULTS", "EXPORT_FORMATS", "LOWER_BOUND_COLOR", "PALETTE", "apply_presentation", "device_color",
           "export_bytes", "export_figure", "figure_html", "figure_image", "memcpy_color", "placer_color",
           "run_color", "run_colors"]

#: Debian's chromium; kaleido (>= 1, through choreographer) is pointed at it and never downloads one.
SYSTEM_CHROMIUM = Path("/usr/bin/chromium")
EXPORT_FORMATS = {"png": "image/png", "svg": "image/svg+xml", "pdf": "application/pdf", "html": "text/html"}
#: Size (px) and base font of an exported figure unless the user picks others (the *Export figure* popover).
EXPORT_DEFAULTS = {"width": 1600, "height": 900, "font_size": 22}


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
    """PNG/SVG/PDF bytes drawn by the installed chromium, kept open between exports
    (:func:`~dashboard.figures.render.render_image`), else by kaleido's one-shot export; None when neither
    can render. Without ``width`` / ``height`` the figure's own size, else plotly's 700 × 500 px."""
    _use_system_chromium()
    w, h = width or fig.layout.width or 700, height or fig.layout.height or 500
    try:
        return render.render_image(fig.to_dict(), fmt, w, h, scale)
    except Exception:  # a browser that cannot start or crashed: the one-shot export says whether it can
        pass
    try:
        return fig.to_image(format=fmt, width=w, height=h, scale=scale)
    except Exception:  # kaleido raises assorted errors when it cannot start chromium
        return None


def export_bytes(fig: go.Figure, fmt: str, *, title: str | None = None, width: int = EXPORT_DEFAULTS["width"],
                 height: int = EXPORT_DEFAULTS["height"],
                 font_size: int = EXPORT_DEFAULTS["font_size"]) -> bytes | None:
    """``fig`` exported for a slide or paper (:func:`export_figure`) as ``fmt`` (a key of
    :data:`EXPORT_FORMATS`) at ``width`` × ``height`` px; None when an image cannot be rendered.
    The one export path of the app: the *Export figure* popover and the Papers page's buttons.
    An image leaves out the invisible markers that only answer hovers and clicks (a binned timeline's
    bins, ``meta="bins"``): half the SVG of a crowded timeline."""
    out = export_figure(fig, title=title, font_size=font_size)
    if fmt == "html":
        out.update_layout(width=width, height=height)
        return figure_html(out).encode("utf-8")
    out.update_traces(visible=False, selector={"meta": "bins"})
    return figure_image(out, fmt, width=width, height=height)
