"""Streamlit entry point: ``streamlit run dashboard/app.py`` (or ``make app``).

Pages: Home · Graphs · Place · Train · Compare · Runs · Papers · Fidelity, as function pages in
``dashboard/app_pages/``.
(Not ``pages/``: a ``pages/`` folder next to this script puts Streamlit in its legacy multipage
mode, where the first request for ``/graphs`` on a fresh server runs that module as a script
and shows a blank page.) Stored runs are read from ``runs/`` at the repository root, or from
the directory named by the environment variable ``PLACELAB_RUNS_DIR``. The sidebar's
presentation toggle makes text, headline numbers and figures larger, for lab meetings.
The sidebar also holds the current graph and cluster that every page works on (``dashboard/context.py``).
The link holds the view (``dashboard/widgets/link.py``): a reload or a shared link opens the same graph,
cluster and page state; every session-state key is named in ``dashboard/state.py``.
"""

from __future__ import annotations

import streamlit as st

from dashboard import state as keys
from dashboard.app_pages import compare, fidelity, graphs, home, papers, place, runs, train
from dashboard.context import retain_widgets, sidebar
from dashboard.warm import warm_kernels
from dashboard.widgets.link import read_link, show_link_warnings, write_link
from dashboard.widgets.ui import viewer_theme

# Everything larger, nothing recoloured: the app's light or dark theme stays, so text stays readable.
# Metric values hold a markdown container with a <p>, so their rule must be more specific than the general
# text rule (two attribute selectors beat one and a tag), or headline numbers would shrink to the body size.
# At that size a number or label wider than its column wraps instead of ending in "…" ("344.5…"). Tables of up
# to 40 rows become plain tables in presentation mode (dashboard/widgets/ui.py show_table), whose cells take the
# font size here (a data grid draws on a canvas at its own size); inputs, selections and chips grow too.
PRESENTATION_CSS = """
<style>
[data-testid="stAppViewContainer"] p, [data-testid="stAppViewContainer"] li,
[data-testid="stAppViewContainer"] label, [data-testid="stMarkdownContainer"] { font-size: 1.3rem !important; }
[data-testid="stSidebar"] p, [data-testid="stSidebar"] label { font-size: 1.15rem !important; }
[data-testid="stAppViewContainer"] [data-testid="stMetricValue"],
[data-testid="stAppViewContainer"] [data-testid="stMetricValue"] * {
  font-size: 3rem !important; line-height: 1.2 !important; }
[data-testid="stAppViewContainer"] [data-testid="stMetricLabel"] * { font-size: 1.3rem !important; }
[data-testid="stAppViewContainer"] [data-testid="stMetricValue"] *,
[data-testid="stAppViewContainer"] [data-testid="stMetricLabel"] * {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important; }
h1 { font-size: 3.2rem !important; line-height: 1.25 !important; padding-top: 0.4rem !important; }
h2, h3 { font-size: 2.3rem !important; line-height: 1.25 !important; }
[data-testid="stDataFrame"] { font-size: 1.2rem !important; }
[data-testid="stTable"] th, [data-testid="stTable"] td { font-size: 1.25rem !important; }
[data-testid="stAppViewContainer"] input, [data-testid="stAppViewContainer"] textarea,
[data-testid="stMain"] [data-testid="stSelectbox"] *,
[data-testid="stMain"] [data-testid="stMultiSelectTagsContainer"] [data-tag] > span { font-size: 1.2rem !important; }
</style>
"""

# The dark theme's accent (#cf4250) on its background (#171614) is 3.9:1, under WCAG AA's 4.5 for text: text
# drawn in the accent (the selected tab's label, a slider's values) takes a lighter red of the same hue (6.6:1).
# The accent itself stays, as the background of primary buttons, where it carries white text.
DARK_CSS = """
<style>
[role="tab"][aria-selected="true"] p, [data-testid="stSliderThumbValue"] { color: #ff6c6c !important; }
</style>
"""

st.set_page_config(page_title="placelab", layout="wide")
warm_kernels()
read_link()
retain_widgets()
sidebar()
st.sidebar.toggle("Presentation mode", key=keys.PRESENTATION,
                  help="Large fonts and figures, for showing results in a meeting (light or dark theme alike)")
if st.session_state.get(keys.PRESENTATION):
    st.markdown(PRESENTATION_CSS, unsafe_allow_html=True)
if viewer_theme() == "dark":
    st.markdown(DARK_CSS, unsafe_allow_html=True)
show_link_warnings()
st.navigation([
    st.Page(home.page, title="Home", default=True),
    st.Page(graphs.page, title="Graphs", url_path="graphs"),
    st.Page(place.page, title="Place", url_path="place"),
    st.Page(train.page, title="Train", url_path="train"),
    st.Page(compare.page, title="Compare", url_path="compare"),
    st.Page(runs.page, title="Runs", url_path="runs"),
    st.Page(papers.page, title="Papers", url_path="papers"),
    st.Page(fidelity.page, title="Fidelity", url_path="fidelity"),
]).run()
write_link()
