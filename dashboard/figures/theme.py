"""Colors shared by every figure, the presentation look, and figure export (HTML, and PNG/SVG/PDF via kaleido)."""

from __future__ import annotations

import copy
import os
import zlib
from collections.abc import Iterable
from pathlib import Path

import plotly.graph_objects as go

__all__ = ["EXPORT_DEFAULTS", "EXPORT_FORMATS", "PALETTE", "apply_presentation", "device_color", "export_bytes",
           "export_figure", "figure_html", "figure_image", "run_color", "run_colors"]

# Okabe–Ito plus extras: distinguishable for color-blind viewers, good on a projector. Okabe–Ito's black is
# replaced by a purple (#9467BD, 4.3:1 on white and on the dark theme's background): black op types and devices
# vanished on the dark canvas (issue #33).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#9467BD",
           "#8C564B", "#7F7F7F", "#17BECF", "#BCBD22")
#: Colours for runs and placers: the palette without yellow (1.3:1 on white, lost on a light background).
_RUN_PALETTE = tuple(c for c in PALETTE if c != "#F0E442")
#: Debian's chromium; kaleido (>= 1, through choreographer) is pointed at it and never downloads one.
SYSTEM_CHROMIUM = Path("/usr/bin/chromium")
EXPORT_FORMATS = {"png": "image/png", "svg": "image/svg+xml", "pdf": "application/pdf", "html": "text/html"}
#: Size (px) and base font of an exported figure unless the user picks others (the *Export figure* popover).
EXPORT_DEFAULTS = {"width": 1600, "height": 900, "font_size": 22}


def device_color(d: int) -> str:
    return PALETTE[d % len(PALETTE)]


def _home_slot(key: str) -> int:
    return zlib.crc32(key.encode("utf-8")) % len(_RUN_PALETTE)


def _extra_color(i: int) -> str:
    """The ``i``-th colour past the palette: hues a golden angle apart, mid saturation and lightness."""
    import colorsys

    r, g, b = colorsys.hls_to_rgb((0.13 + 0.381966 * i) % 1.0, 0.45, 0.65)
    return f"#{round(r * 255):02X}{round(g * 255):02X}{round(b * 255):02X}"


def run_colors(keys: Iterable[str]) -> dict[str, str]:
    """Distinct colours for runs or placers shown together, each as stable as the set allows.

    Every key has a home colour fixed by its name (:func:`run_color`), the same in every chart and
    session. A key keeps it unless a key sorting before it has the same home; the keys that lose
    theirs take the free palette colours in sorted order, and past the palette's ten colours
    further distinct hues. The result depends on the set of keys, never on their order.
    """
    ordered = sorted(set(keys))
    slots: dict[str, int] = {}
    for key in ordered:
        if _home_slot(key) not in slots.values():
            slots[key] = _home_slot(key)
    losers = [key for key in ordered if key not in slots]
    free = [i for i in range(len(_RUN_PALETTE)) if i not in slots.values()]
    colors = {key: _RUN_PALETTE[slot] for key, slot in slots.items()}
    for n, key in enumerate(losers):
        colors[key] = _RUN_PALETTE[free[n]] if n < len(free) else _extra_color(n - len(free))
    return colors


def run_color(key: str) -> str:
    """The home colour of ``key`` (a placer name or a run id): the same in every chart and session. Figures
    showing several keys take :func:`run_colors`, which keeps two of them from sharing one."""
    return _RUN_PALETTE[_home_slot(key)]


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


def export_bytes(fig: go.Figure, fmt: str, *, title: str | None = None, width: int = EXPORT_DEFAULTS["width"],
                 height: int = EXPORT_DEFAULTS["height"],
                 font_size: int = EXPORT_DEFAULTS["font_size"]) -> bytes | None:
    """``fig`` exported for a slide or paper (:func:`export_figure`) as ``fmt`` (a key of
    :data:`EXPORT_FORMATS`) at ``width`` × ``height`` px; None when an image cannot be rendered.
    The one export path of the app: the *Export figure* popover and the Papers page's buttons."""
    out = export_figure(fig, title=title, font_size=font_size)
    if fmt == "html":
        out.update_layout(width=width, height=height)
        return figure_html(out).encode("utf-8")
    return figure_image(out, fmt, width=width, height=height)
