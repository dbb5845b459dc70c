"""Streamlit entry point: ``streamlit run dashboard/app.py`` (or ``make app``).

Pages: Home · Graphs · Place · Train · Compare · Runs · Papers, as function pages in ``dashboard/app_pages/``.
(Not ``pages/``: a ``pages/`` folder next to this script puts Streamlit in its legacy multipage
mode, where the first request for ``/graphs`` on a fresh server runs that module as a script
and shows a blank page.) Stored runs are read from ``runs/`` at the repository root, or from
the directory named by the environment variable ``PLACELAB_RUNS_DIR``. The sidebar's
presentation toggle switches to a light theme with large fonts, for lab meetings.
"""

from __future__ import annotations

import streamlit as st

from dashboard.app_pages import compare, graphs, home, papers, place, runs, train

PRESENTATION_CSS = """
<style>
[data-testid="stAppViewContainer"], [data-testid="stHeader"], [data-testid="stSidebar"] {
  background: #ffffff !important; color: #111111 !important; }
[data-testid="stAppViewContainer"] p, [data-testid="stAppViewContainer"] li,
[data-testid="stAppViewContainer"] label, [data-testid="stMarkdownContainer"] { font-size: 1.3rem !important; }
[data-testid="stMetricValue"] { font-size: 2.6rem !important; }
[data-testid="stMetricLabel"] p { font-size: 1.25rem !important; }
h1 { font-size: 3.2rem !important; } h2, h3 { font-size: 2.2rem !important; }
[data-testid="stDataFrame"] { font-size: 1.2rem !important; }
</style>
"""

st.set_page_config(page_title="placelab", layout="wide")
st.sidebar.toggle("Presentation mode", key="presentation",
                  help="Light theme with large fonts and figures, for showing results in a meeting")
if st.session_state.get("presentation"):
    st.markdown(PRESENTATION_CSS, unsafe_allow_html=True)
st.navigation([
    st.Page(home.page, title="Home", default=True),
    st.Page(graphs.page, title="Graphs", url_path="graphs"),
    st.Page(place.page, title="Place", url_path="place"),
    st.Page(train.page, title="Train", url_path="train"),
    st.Page(compare.page, title="Compare", url_path="compare"),
    st.Page(runs.page, title="Runs", url_path="runs"),
    st.Page(papers.page, title="Papers", url_path="papers"),
]).run()
