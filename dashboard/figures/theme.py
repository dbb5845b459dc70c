"""Colors shared by every figure, the presentation template, and figure export."""

from __future__ import annotations

import plotly.graph_objects as go

__all__ = ["PALETTE", "apply_presentation", "device_color", "figure_html", "figure_image"]

# Okabe–Ito plus extras: distinguishable for color-blind viewers, good on a projector.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
           "#8C564B", "#7F7F7F", "#17BECF", "#BCBD22")

def device_color(d: int) -> str:
    return PALETTE[d % len(PALETTE)]


def apply_presentation(fig: go.Figure) -> go.Figure:
    """The same figure with large fonts on a white background (for lab meetings)."""
    fig.update_layout(template="plotly_white", font={"size": 20}, title_font={"size": 26},
                      legend_font={"size": 18}, hoverlabel_font={"size": 18})
    fig.update_xaxes(title_font={"size": 22}, tickfont={"size": 18})
    fig.update_yaxes(title_font={"size": 22}, tickfont={"size": 18})
    return fig


def figure_html(fig: go.Figure) -> str:
    """A standalone HTML page of the figure that works offline (plotly.js inlined)."""
    return fig.to_html(include_plotlyjs=True, full_html=True)


def figure_image(fig: go.Figure, fmt: str) -> bytes | None:
    """PNG/SVG bytes through kaleido, or None when kaleido cannot render (no browser found)."""
    try:
        return fig.to_image(format=fmt)
    except Exception:  # kaleido raises assorted errors when it cannot start chromium
        return None
