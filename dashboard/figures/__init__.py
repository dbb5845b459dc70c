"""Figures of the app as pure functions of data: plotly figures or HTML strings, no Streamlit.

Tests call them directly on small known schedules; pages only lay them out.
"""

from dashboard.figures.charts import cdf_figure, load_profile, makespan_bars, memory_over_time
from dashboard.figures.curves import CURVE_X, learning_curves
from dashboard.figures.graph_view import GRAPH_VIEW_MAX_OPS, graph_view_mode, placement_graph_html
from dashboard.figures.tables import table_latex
from dashboard.figures.theme import apply_presentation, figure_html, figure_image
from dashboard.figures.timeline import TIMELINE_MAX_OPS, timeline

__all__ = [
    "CURVE_X",
    "GRAPH_VIEW_MAX_OPS",
    "TIMELINE_MAX_OPS",
    "apply_presentation",
    "cdf_figure",
    "figure_html",
    "figure_image",
    "graph_view_mode",
    "learning_curves",
    "load_profile",
    "makespan_bars",
    "memory_over_time",
    "placement_graph_html",
    "table_latex",
    "timeline",
]
