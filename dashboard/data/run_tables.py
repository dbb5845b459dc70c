"""The Home and Runs pages' tables of stored runs: one row per run, times in the viewer's time zone, makespans in ms."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from engine.runs import Run, RunStore
from engine.summary import run_summary

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


def runs_table(root: Path, tz: str | None = None) -> pd.DataFrame:
    """One row per stored run under ``root``, newest first, makespans in ms, creation times in ``tz``
    (:func:`local_time`) and None where a run has no value (shown as ``dashboard.figures.tables.MISSING``);
    empty when there are none (or no such folder)."""
    if not root.is_dir():
        return pd.DataFrame()
    rows = []
    for r in RunStore(root).list():
        s = run_summary(r)
        rows.append({**{k: s[k] or None for k in _TEXT_COLUMNS},
                     "makespan (ms)": None if s["makespan_s"] is None else s["makespan_s"] * 1e3,
                     "created": local_time(s["created"], tz)})
    return pd.DataFrame(rows) if rows else pd.DataFrame()


def summary_table(runs: list[Run], sources: list[str], tz: str | None = None) -> pd.DataFrame:
    """The Runs page's table: each run's summary (:func:`engine.summary.run_summary`) after its ``sources``
    entry ("example" or "yours"), with the makespan and lower bound in ms (as every page shows times) and the
    creation time by :func:`local_time` in ``tz``; tags joined by commas."""
    rows = []
    for run, source in zip(runs, sources, strict=True):
        s = run_summary(run)
        row = {"source": source}
        for key, value in s.items():
            if key.endswith("_s"):
                row[key[:-2].replace("_", " ") + " (ms)"] = None if value is None else value * 1e3
            elif key == "created":
                row[key] = local_time(value, tz)
            else:
                row[key] = ", ".join(value) if key == "tags" else value
        rows.append(row)
    return pd.DataFrame(rows)
