"""Held-out learning (placelab issue 56, item 3): the four learned placers trained from scratch on graphs
none of their defaults were chosen on, beside the list schedulers and an equal-budget random search.

No paper has this table, so there are no published numbers beside ours (``papers/heldout.json`` holds the
units, the goal and no rows). The goal: each learned placer **learned** — its learning-health verdict
(:mod:`policies.rl.core.health`) is ``learned`` — and its best placement is within :data:`GOAL` = 1.10× of the
best list scheduler's, on most graphs (more than half).

The graphs are random layered DAGs (``gen:random?ops=N&seed=S``, :func:`engine.generators.random_dag`:
compute 1–100 µs per op, outputs 1 KB–1 MB, about two inputs per op from the previous 50 ops; the same
costs on every device), one per seed, on 2, 4 or 8 identical K80s (``k80x2``, ``k80x4``, ``k80x8``: one
link bandwidth throughout, so the device count is the only thing that changes), in each simulation mode
(``--mode``: ``placeto``, ``default``, ``work_conserving``, docs/reference/simulation.md). Per graph:

* one ``compare`` of the list schedulers :data:`LIST_SCHEDULERS` in the same mode; the lowest makespan
  is the **best list scheduler**;
* one ``train --save`` of each learned placer of :data:`PLACERS`, from freshly initialised weights
  (no imitation stage, no ``--init-from``) with its defaults, for exactly the setting's episodes
  (``--stop-window 0``), one thread, the graph's seed. Its output carries the learning-health record:
  the verdict, the sampled runtime's first and last window, and the best of as many uniformly random
  placements as the training evaluated (:mod:`policies.rl.core.random_search`): the **random search**.

A row per placer and graph: ``learned`` (1 when the verdict is ``learned``; the note gives the
verdict and its numbers), ``best ÷ best list scheduler`` (the training's best makespan ÷ the best list
scheduler's), ``best ÷ random search`` (the record's ``random_ratio``) and ``sampled runtime, last ÷ first
window`` (the note: first → last, ms). A summary row per placer counts the graphs on which it learned,
was within 1.10×, and both, and says whether the goal is met.

Budgets. Full setting: the episodes DOPPLER §6.1 gives every RL method it compares (DOPPLER, GDP and
Placeto alike) — "4k episodes for CHAINMM and FFNN, and 8k episodes for LLAMA-BLOCK and LLAMA-LAYER",
graphs of 112–192 and 215–261 ops — read here as 4,000 episodes up to 200 ops and 8,000 above
(:func:`episodes`), with no wall-time limit. The RNN placer gets the same: Mirhoseini et al. 2017 give
hours, not counts (``docs/budgets.md``). One episode is one placement sampled, as all three papers count
them. Quick setting: :data:`QUICK_EPISODES` episodes, far below them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from placelab.reproduce.core import Build, Cell, Reproduction, Step, steps_for
from placelab.reproduce.reading import curve, error_cell

#: This module's reproductions (listed in :mod:`placelab.reproduce.registry`).
REPRODUCTIONS: list[Reproduction] = []

__all__ = ["FULL", "GOAL", "LIST_SCHEDULERS", "PLACERS", "QUICK", "QUICK_EPISODES", "SUMMARY", "Grid", "best_list",
           "build", "episodes", "graph_cells", "graphs", "steps", "summary_cells"]

PLACERS = ("rnn", "placeto", "doppler", "gdp")
LIST_SCHEDULERS = ("heft", "m-etf", "m-topo", "m-sct", "critical-path")
CLUSTERS = {2: "k80x2", 4: "k80x4", 8: "k80x8"}
GOAL = 1.10  #: within this factor of the best list scheduler (issue 56)
QUICK_EPISODES = 20  #: per training in the quick setting: the verdict's windows are 4 episodes
_CURVE_POINTS = 200  #: at most this many points per learning curve in the figures (window means)


@dataclass(frozen=True)
class Grid:
    """The graphs of a setting: every size × device count × mode × seed."""

    sizes: tuple[int, ...]
    devices: tuple[int, ...]
    modes: tuple[str, ...]
    seeds: tuple[int, ...]


QUICK = Grid((50, 100), (2, 4), ("default",), (0, 1, 2))
FULL = Grid((50, 200, 500), (2, 4, 8), ("placeto", "default", "work_conserving"), (0, 1, 2))


def episodes(ops: int, quick: bool) -> int:
    """A training's episodes: DOPPLER §6.1's 4k (graphs up to 200 ops) or 8k (larger); quick: a few."""
    if quick:
        return QUICK_EPISODES
    return 4000 if ops <= 200 else 8000


def graphs(quick: bool) -> list[tuple[str, str, str, str, int, int]]:
    """``(label, spec, cluster, mode, seed, ops)`` of each graph of the setting, in table order."""
    grid = QUICK if quick else FULL
    return [(f"{ops} ops / {n} GPUs / {mode} / seed {seed}", f"gen:random?ops={ops}&seed={seed}", CLUSTERS[n], mode,
             seed, ops)
            for ops in grid.sizes for n in grid.devices for mode in grid.modes for seed in grid.seeds]


def steps(quick: bool) -> list[Step]:
    """Per graph: the list schedulers' ``compare``, then a ``train`` of each learned placer, all with its seed."""
    out: list[Step] = []
    for label, spec, cluster, mode, seed, ops in graphs(quick):
        items = [(f"list/{label}", ("compare", spec, "-c", cluster, "--mode", mode,
                                    "--placers", ",".join(LIST_SCHEDULERS), "--no-save"))]
        items += [(f"{p}/{label}", ("train", "--placer", p, "-g", spec, "-c", cluster, "--mode", mode,
                                    "--episodes", str(episodes(ops, quick)), "--stop-window", "0", "--threads", "1",
                                    "--save", "--name", f"{p} on {spec} ({cluster}, {mode})"))
                  for p in PLACERS]
        out += steps_for(items, seed)
    return out


def _ms(s: float | None) -> str:
    return "?" if s is None else f"{s * 1e3:.4g} ms"


def best_list(out: Mapping[str, Any] | None) -> tuple[str, float] | None:
    """The list scheduler of a ``compare`` output with the lowest makespan (OOM and failed ones left out)."""
    ok = [(float(r["makespan_s"]), str(r["placer"])) for r in (out or {}).get("results", [])
          if not r.get("error") and not r.get("oom") and r.get("makespan_s")]
    return (min(ok)[1], min(ok)[0]) if ok else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def graph_cells(row: str, train: Mapping[str, Any] | None,
                listed: Mapping[str, Any] | None) -> tuple[list[Cell], dict[str, Any]]:
    """The four cells of one placer on one graph, and what its summary counts (``learned``, ``x_list``,
    ``x_random``)."""
    columns = ("learned", "best ÷ best list scheduler", "best ÷ random search", "sampled runtime, last ÷ first window")
    health = (train or {}).get("learning_health")
    if not train or train.get("error") or not health:
        why = train if not train or train.get("error") else {"error": "the training printed no learning health"}
        return [error_cell(row, c, why) for c in columns], {}
    learned = health.get("verdict") == "learned"
    best = train.get("best_makespan_s")
    cells = [Cell(row, "learned", 1.0 if learned else 0.0, f"{health.get('verdict')}: {health.get('summary', '')}")]
    scheduler = best_list(listed)
    if scheduler is None:
        cells.append(error_cell(row, columns[1], listed if (listed or {}).get("error")
                                else {"error": "no list scheduler placed the graph"}))
    else:
        cells.append(Cell(row, columns[1], _ratio(best, scheduler[1]),
                          f"best {_ms(best)}; best list scheduler {scheduler[0]} {_ms(scheduler[1])}"))
    random = health.get("random_search") or []
    if health.get("random_ratio") is None or not random:
        cells.append(Cell(row, columns[2], None, f"no random search: {health.get('random_missing') or 'not run'}"))
    else:
        cells.append(Cell(row, columns[2], float(health["random_ratio"]),
                          f"best of {random[0]['placements']:,} random placements (as many as the training "
                          f"evaluated) {_ms(random[0].get('random_makespan_s'))}"))
    first, last = health.get("runtime_first_s"), health.get("runtime_last_s")
    cells.append(Cell(row, columns[3], _ratio(last, first),
                      f"{_ms(first)} → {_ms(last)}, medians of the first and last {health.get('window')} episodes"))
    return cells, {"learned": learned, "x_list": cells[1].value, "x_random": cells[2].value}


def _median(xs: list[float | None]) -> float | None:
    ok = [x for x in xs if x is not None]
    return float(np.median(ok)) if ok else None


#: The summary row's columns.
SUMMARY = ("graphs", "learned (graphs)", "within 1.10× (graphs)", "learned and within 1.10× (graphs)",
           "median best ÷ best list scheduler", "median best ÷ random search", "goal met")


def summary_cells(placer: str, records: list[dict[str, Any]], n: int) -> list[Cell]:
    """A placer's summary row over the ``n`` graphs of the setting (``records``: those with a verdict)."""
    row = f"{placer}: all graphs"
    if not records:  # nothing to count: every training failed or did not run
        return [Cell(row, c, None, f"error: none of the {n} trainings gave a verdict") for c in SUMMARY]
    learned = sum(bool(r["learned"]) for r in records)
    within = sum(r["x_list"] is not None and r["x_list"] <= GOAL for r in records)
    both = sum(bool(r["learned"]) and r["x_list"] is not None and r["x_list"] <= GOAL for r in records)
    of = f"of the {n} graphs"
    return [Cell(row, "graphs", float(len(records)), f"{len(records)} of {n} trainings gave a verdict"),
            Cell(row, "learned (graphs)", float(learned), of),
            Cell(row, "within 1.10× (graphs)", float(within), f"{of}: best ≤ {GOAL:.2f} × the best list scheduler's"),
            Cell(row, "learned and within 1.10× (graphs)", float(both), of),
            Cell(row, "median best ÷ best list scheduler", _median([r["x_list"] for r in records]),
                 "median over the graphs"),
            Cell(row, "median best ÷ random search", _median([r["x_random"] for r in records]),
                 "median over the graphs"),
            Cell(row, "goal met", 1.0 if both > n / 2 else 0.0,
                 f"learned and within {GOAL:.2f}× on {both} {of}; the goal: more than half")]


def _thinned(y: list[float]) -> tuple[list[float], list[float]]:
    """``(x, y)`` of a curve with at most :data:`_CURVE_POINTS` points: the means of equal windows."""
    if len(y) <= _CURVE_POINTS:
        return [float(i + 1) for i in range(len(y))], y
    parts = np.array_split(np.arange(len(y)), _CURVE_POINTS)
    return [float(p.mean() + 1) for p in parts], [float(np.mean([y[i] for i in p])) for p in parts]


def _curves(placer: str, out: Mapping[str, dict[str, Any]], runs_dir: str, quick: bool) -> dict[str, Any]:
    """The sampled runtime of each of ``placer``'s trainings, per episode, ÷ its graph's best list scheduler."""
    series: dict[str, dict[str, list[float]]] = {}
    for label, *_ in graphs(quick):
        scheduler = best_list(out.get(f"list/{label}"))
        c = curve(out.get(f"{placer}/{label}"), runs_dir)
        y = [float(v) / scheduler[1] for v in c.get("sampled_runtime", []) if v not in (None, "")] if scheduler else []
        if y:
            x, y = _thinned(y)
            series[label] = {"x": x, "y": y}
    return {"kind": "curves", "title": f"{placer}: sampled runtime ÷ best list scheduler, per episode",
            "x_label": "episode", "y_label": "sampled runtime ÷ best list scheduler", "series": series}


def build(out: Mapping[str, dict[str, Any]], runs_dir: str, quick: bool) -> Build:
    """The summary rows (placer by placer), then every placer's rows per graph; the CDFs and learning curves."""
    rows = graphs(quick)
    summaries: list[Cell] = []
    cells: list[Cell] = []
    ratios: dict[str, dict[str, list[float]]] = {"list": {}, "random": {}}
    for placer in PLACERS:
        records = []
        for label, *_ in rows:
            mine, record = graph_cells(f"{placer} / {label}", out.get(f"{placer}/{label}"), out.get(f"list/{label}"))
            cells += mine
            if record:
                records.append(record)
        summaries += summary_cells(placer, records, len(rows))
        ratios["list"][placer] = [r["x_list"] for r in records if r["x_list"] is not None]
        ratios["random"][placer] = [r["x_random"] for r in records if r["x_random"] is not None]
    figures = {f"cdf-{k}": {"kind": "cdf", "title": f"best ÷ {what} over the graphs, per learned placer",
                            "x_label": f"best ÷ {what}", "series": ratios[k]}
               for k, what in (("list", "best list scheduler"), ("random", "equal-budget random search"))}
    figures |= {f"curves-{p}": _curves(p, out, runs_dir, quick) for p in PLACERS}
    budget = (f"{QUICK_EPISODES} episodes per training (windows of {QUICK_EPISODES // 5}), far below the papers'"
              if quick else "DOPPLER §6.1's 4,000 episodes up to 200 ops, 8,000 above, for every placer")
    return Build(summaries + cells, figures, notes=[
        f"Held out: no paper has this table. The goal: learned and within {GOAL:.2f}× of the best list scheduler "
        "on most graphs.",
        f"Budget: {budget}; each placer trained from scratch with its defaults.",
        "best: the best placement the training evaluated; best list scheduler: the lowest makespan of "
        f"{', '.join(LIST_SCHEDULERS)} in the same simulation mode; random search: the learning-health record's best "
        "of as many uniformly random placements as the training evaluated."])


REPRODUCTIONS.append(Reproduction(
    "heldout-learning", "Held-out learning: the four learned placers from scratch on random layered DAGs (50–500 ops, "
    "2/4/8 K80s, each mode) against the list schedulers and random search",
    "heldout", "learning", steps, build, quick_minutes=5.0, requires=(*PLACERS, "cluster:k80x8")))
