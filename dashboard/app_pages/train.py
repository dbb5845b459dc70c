"""Train: start a learned placer in the background, watch its learning curve live, stop and resume it.

Training runs as ``placelab train … --save`` in a separate process (``dashboard/background.py``);
this page only reads the run store. While anything trains, the list of training runs is a
fragment that re-reads the store every :data:`~dashboard.widgets.train_runs.POLL_S` seconds; the
rest of the page stays put.
"""

from __future__ import annotations

import streamlit as st

from dashboard.data.training import training_state
from dashboard.stores import run_store
from dashboard.widgets.train_form import start_form
from dashboard.widgets.train_runs import POLL_S, training_runs


def page() -> None:
    st.title("Train")
    st.caption("Trains a learned placer in a background process that stores its run (policy, checkpoint, learning "
               "curve) like `placelab train … --save`; this page polls the run store, so you can leave it and come "
               "back, or train several at once.")
    store = run_store()
    with st.spinner("Loading the learned placers ..."):
        start_form(store)
    polling = training_state(store).active
    st.fragment(run_every=POLL_S if polling else None)(training_runs)(store, polling)
