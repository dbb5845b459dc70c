"""Training runs' learning curves and learning-health verdicts, as the Train and Compare pages show them."""

from __future__ import annotations

import csv
import io
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from dashboard.data.format import graph_label
from dashboard.data.runs import run_label, setting_of
from engine.errors import RunError
from engine.store.runs import Run, RunStore

__all__ = ["HEALTH_RANDOM_CAP", "MAX_CURVE_POINTS", "health_row", "health_stored", "health_table", "learning_curve",
           "learning_curve_csv", "random_table", "seed_groups", "training_health"]

#: Points per learning-curve line drawn; longer curves are thinned for the browser.
MAX_CURVE_POINTS = 2000
#: Random placements per graph the app evaluates for a run stored without its verdict (the verdict a training
#: stores compares with as many as it evaluated; this keeps a page on a long old training responsive).
HEALTH_RANDOM_CAP = 5000


@lru_cache(maxsize=32)
def _curve_table(path: str, mtime_ns: int, size: int) -> dict[str, list]:
    from engine.store.tables import read_csv

    return read_csv(Path(path))


def _named_graphs(values: list) -> list:
    """A learning curve's ``graph`` column (the trainer's graph specs) with each graph by name, never by the path
    of its file (:func:`~dashboard.data.format.graph_label`)."""
    labels = {v: graph_label(v) if isinstance(v, str) else v for v in set(values)}
    return [labels[v] for v in values]


def learning_curve(run: Run) -> dict[str, list] | None:
    """The columns of a training run's learning curve (CONTRACTS §6); None when it has none yet. Its ``graph``
    column names graphs (an upload by its graph's name), never a path on the server.

    Cached by the file's modification time and size, so polling a live run re-reads the file
    only when rows were appended.
    """
    from policies.rl.core.run_files import CURVE

    path = run.path / CURVE
    try:
        stat = path.stat()
        table = _curve_table(str(path), stat.st_mtime_ns, stat.st_size)
    except (OSError, ValueError):
        return None
    if not table.get("episode"):
        return None
    return {**table, "graph": _named_graphs(table["graph"])} if "graph" in table else table


def learning_curve_csv(run: Run) -> bytes | None:
    """A training run's learning curve as the CSV download gives it: the stored file cell for cell, but for the
    ``graph`` column, which names graphs as :func:`learning_curve` does; None when the run has no curve."""
    from policies.rl.core.run_files import CURVE

    try:
        text = (run.path / CURVE).read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None
    rows = list(csv.reader(io.StringIO(text[:text.rfind("\n") + 1], newline="")))  # a torn last line left out
    if not rows:
        return None
    if "graph" in rows[0]:
        j = rows[0].index("graph")
        for row in rows[1:]:
            if j < len(row):
                row[j] = graph_label(row[j])
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    return out.getvalue().encode("utf-8")


def seed_groups(runs: list[Run], placers: dict[str, str | None] | None = None) -> dict[str, list[dict[str, list]]]:
    """Learning curves of ``runs``, those that differ only in their seed (and name) put together.

    The key names the placer, graphs and cluster (with the seed count when there are several);
    a group's value holds one curve per seed. Runs without a curve yet are left out. ``placers``, when
    given, receives each key's placer (for :func:`~dashboard.figures.learning_curves`' colours).
    """
    groups: dict[tuple, list[tuple[Run, dict]]] = {}
    for r in runs:
        curve = learning_curve(r)
        if curve is None:
            continue
        m = r.meta
        params = {k: v for k, v in (m.get("parameters") or {}).items() if k not in ("budget", "seed")}
        key = (m.get("placer"), *setting_of(r), repr(sorted(params.items(), key=lambda kv: kv[0])))
        groups.setdefault(key, []).append((r, curve))
    out: dict[str, list[dict[str, list]]] = {}
    for key, members in groups.items():
        if len(members) == 1:
            r = members[0][0]
            base = r.meta.get("name") or r.id
        else:
            base = f"{key[0]} on {key[1]} · {key[2]} ({len(members)} seeds)"
        name = base if base not in out else f"{base} ({members[0][0].id})"
        out[name] = [c for _, c in members]
        if placers is not None:
            placers[name] = key[0]
    return out


@lru_cache(maxsize=64)
def _training_health(root: str, run_id: str, updated: str) -> Any:
    from policies.rl.core.stored_health import stored_health

    return stored_health(RunStore(root).load(run_id), max_random=HEALTH_RANDOM_CAP)


def training_health(run: Run) -> Any:
    """A finished training run's learning health (:class:`policies.rl.core.health.LearningHealth`): the verdict it
    stored, or — for a run stored before verdicts were — computed from its learning curve (with the random
    search on its rebuilt graphs where they can be rebuilt). None while it trains, without a curve, or when
    the run cannot be read: an old run never breaks a page."""
    if run.status == "running":
        return None
    try:
        return _training_health(str(run.path.parent), run.id, str(run.meta.get("updated")))
    except (RunError, OSError, ValueError, KeyError, TypeError):
        return None


def health_stored(run: Run) -> bool:
    """Whether the run stored its learning-health verdict (else the pages compute it from its curve)."""
    return isinstance((run.meta.get("metrics") or {}).get("learning_health"), dict)


def health_row(run: Run, health: Any) -> dict[str, Any]:
    """A row of the learning-health table under the learning curves."""
    from policies.rl.core.health import NEVER_LEFT_UNIFORM

    def share(x: float | None) -> str:
        return "-" if x is None else f"{x:.1%}"

    if health is None:
        status = run.status
        return {"run": run_label(run), "learning health": "still training" if status == "running" else "no curve"}
    entropy = (f"{share(health.entropy_first_ratio)} → {share(health.entropy_last_ratio)}"
               if health.entropy_last_ratio is not None else "no uniform reference")
    return {
        "run": run_label(run),
        "learning health": health.label,
        "episodes": health.episodes,
        "window": health.window,
        "entropy, of uniform (first → last)": entropy,
        "sampled runtime, last / first": health.runtime_ratio,
        "best found / random search's best": health.random_ratio,
        "random placements": health.random_placements or None,
        "note": (NEVER_LEFT_UNIFORM if health.never_left_uniform
                 else (f"random search: {health.random_missing}" if health.random_ratio is None else "")),
        "verdict from": "the run (stored)" if health_stored(run) else "its stored curve (computed now)",
    }


def health_table(health: Any) -> pd.DataFrame:
    """The learning-health numbers: entropy and sampled runtime, first vs last window."""
    def ms(x: float | None) -> float | None:
        return None if x is None else x * 1e3

    return pd.DataFrame([
        {"": "entropy per decision (nats)", "first window": health.entropy_first, "last window": health.entropy_last,
         "last / first": (health.entropy_last / health.entropy_first
                          if health.entropy_first and health.entropy_last is not None else None)},
        {"": "entropy, share of uniform", "first window": health.entropy_first_ratio,
         "last window": health.entropy_last_ratio,
         "last / first": (health.entropy_last_ratio / health.entropy_first_ratio
                          if health.entropy_first_ratio and health.entropy_last_ratio is not None else None)},
        {"": ("sampled runtime, median (ms)" if getattr(health, "graphs", 1) <= 1
              else f"sampled runtime, per graph ({health.graphs} graphs: median of last / first)"),
         "first window": ms(health.runtime_first_s), "last window": ms(health.runtime_last_s),
         "last / first": health.runtime_ratio},
    ])


def random_table(health: Any) -> pd.DataFrame:
    """Per graph: the best found vs the best of as many uniformly random placements."""
    return pd.DataFrame([{"graph": c.graph, "placements (training)": c.placements_trained,
                          "random placements": c.placements, "best found (ms)": c.found_makespan_s * 1e3,
                          "random search's best (ms)": c.random_makespan_s * 1e3, "found / random": c.ratio}
                         for c in health.random_search])
