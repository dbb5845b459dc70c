"""Where the app's runs live: the user's store (the only one it writes to, with its hidden scratch store of
the Place results in hand) and the bundled examples.

No streamlit here: the guard (:mod:`dashboard.input_guard`) and the pages both read these.
"""

from __future__ import annotations

import os
from pathlib import Path

from engine.store.runs import RunStore, user_runs_dir

__all__ = ["REPO_ROOT", "SCRATCH_DIR", "example_runs_dir", "run_store", "runs_dir", "scratch_store"]

REPO_ROOT = Path(__file__).resolve().parents[1]
#: The folder, inside the user's store, of the Place results not saved as runs (hidden: a dot folder is no run).
SCRATCH_DIR = ".scratch"


def runs_dir() -> Path:
    """The user's run store, where the app saves and trains (:func:`engine.store.runs.user_runs_dir`: a per-user
    data folder apart from the bundled examples, or ``PLACELAB_RUNS_DIR``)."""
    return Path(user_runs_dir())


def example_runs_dir() -> Path:
    """The example runs shipped with placelab, read-only (``PLACELAB_EXAMPLE_RUNS_DIR`` overrides ``<repo>/runs``)."""
    return Path(os.environ.get("PLACELAB_EXAMPLE_RUNS_DIR") or REPO_ROOT / "runs")


def run_store() -> RunStore:
    """The user's store (the only one the app writes to)."""
    return RunStore(runs_dir())


def scratch_store() -> RunStore:
    """The Place page's results in hand, each a run, so that a reload (or a link) brings them back; hidden in
    the user's store (Home, Runs and Compare never list them). *Save as run* copies one into the store."""
    return RunStore(runs_dir() / SCRATCH_DIR)
