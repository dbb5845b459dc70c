"""The Home and Runs pages' tables of stored runs: one row per run, times in the viewer's time zone, makespans in ms."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dashboard.data.format import graph_label
from engine.store.runs import Run, RunStore
from engine.store.summary import run_summary

__all__ = ["local_time", "runs_table", "summary_table"]

#: What a table shows where a run has no value (no cluster, no makespan yet).
_TEXT_COLUMNS = ("id", "name", "kind", "status", "placer", "cluster", "graph")


def local_time(iso: str | None, tz: str | None = None) -> str | None:
    """An ISO timestamp as ``2026-11-24 10:46`` in time zone ``tz`` (an IANA name, e.g. the viewer's browser's;
    None: the server's); None when there is none or it cannot be read."""
    from datetime import datetime
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        when = datetime.fromisoformat(str(iso)) if iso else None
        zone = ZoneInfo(tz) if tz else None
    except (ValueError, ZoneInfoNotFoundError):
        return None
    return None if when is None else when.astimezone(zone).strftime("%Y-%m-%d %H:%M")


def summary_table(runs: list[Run], sources: list[str], tz: str | None = None) -> pd.DataFrame:
    """The Runs page's table: each run's summary (:func:`engine.store.summary.run_summary`) after its ``sources``
    entry ("example" or "yours"), with the makespan and lower bound in ms (as every page shows times), the
    creation time by :func:`local_time` in ``tz``, tags joined by commas, and None where a run has no value, an
    empty text included (shown as ``dashboard.figures.tables.MISSING``)."""
    rows = []
    for run, source in zip(runs, sources, strict=True):
        row = {"source": source}
        for key, value in run_summary(run).items():
            if key.endswith("_s"):
                row[key[:-2].replace("_", " ") + " (ms)"] = None if value is None else value * 1e3
            elif key == "created":
                row[key] = local_time(value, tz)
            elif key == "tags":
                row[key] = ", ".join(value)
            elif key == "graph" and value:
                row[key] = graph_label(value)  # a graph file by its name, never its path on the server
            else:
                row[key] = None if value == "" else value
        rows.append(row)
    return pd.DataFrame(rows)


def runs_table(root: Path, tz: str | None = None) -> pd.DataFrame:
    """The Home page's table of the runs stored under ``root``, newest first: :func:`summary_table`'s
    :data:`_TEXT_COLUMNS`, makespan (ms) and creation time; empty when there are none (or no such folder)."""
    runs = RunStore(root).list() if root.is_dir() else []
    if not runs:
        return pd.DataFrame()
    return summary_table(runs, [""] * len(runs), tz)[[*_TEXT_COLUMNS, "makespan (ms)", "created"]]
