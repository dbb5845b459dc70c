"""Load the numba kernels into the app's server process in the background, once, when it starts.

``make setup`` compiles the kernels into numba's on-disk cache (:mod:`placelab.warmup`). Loading them into a
process still costs about a second the first time one is called (numba's type registries, scipy's BLAS check).
The first page that checks a graph or simulates would otherwise pay it on its first visit
(docs/lab/2026-11-29-page-render.md). This loads them in a daemon thread while the first page draws.
``PLACELAB_WARM_KERNELS=0`` turns it off; the test suite does, so no thread runs beside its tests.
"""

from __future__ import annotations

import os
import threading

import streamlit as st

from placelab.warmup import compile_job

__all__ = ["KERNEL_GROUPS", "enabled", "load_kernels", "warm_kernels"]

#: What the pages call first: a graph's cycle check and the DAG helpers, then each simulation mode, then the
#: list schedulers (:data:`placelab.warmup.JOBS`).
KERNEL_GROUPS = ("dag", "work_conserving", "placeto", "default", "list-scheduling")


def enabled() -> bool:
    """Whether the server warms its kernels (``PLACELAB_WARM_KERNELS``, default on)."""
    return os.environ.get("PLACELAB_WARM_KERNELS", "1").strip() != "0"


def load_kernels() -> None:
    """Use each kernel group once on a tiny graph (:func:`placelab.warmup.compile_job`)."""
    for name in KERNEL_GROUPS:
        compile_job(name)


def _load_quietly() -> None:
    try:
        load_kernels()
    except Exception:  # a warm-up only: the page that needs a kernel loads it and says what failed
        return


@st.cache_resource(show_spinner=False)
def warm_kernels() -> threading.Thread | None:
    """Start loading the kernels in a daemon thread, once per server process (None when turned off)."""
    if not enabled():
        return None
    thread = threading.Thread(target=_load_quietly, name="placelab-warm-kernels", daemon=True)
    thread.start()
    return thread
