"""Placeto (Addanki et al., NeurIPS 2019): Table 1, Figure 5 and the §4.3 / App. A.4 ablations.

Deviations from the paper's setup, common to all three: runtimes are simulated (Placeto's own
App. A.5 simulator, ``k80x2`` / ``k80x4`` presets, roofline K80 costs from
:mod:`engine.costmodel`) where the paper measured TensorFlow r1.9 on a p2.8xlarge; our
Inception-V3, NMT and NASNet are the op-level training steps of ``gen:inception-v3``,
``gen:nmt`` and ``gen:nasnet`` (fewer ops than the TF1 graphs, see docs/guide/graph-sources.md's generator
table); the "CPU only" column runs on the CPU of ``cpu+k80x2`` (the p2.8xlarge's Xeon; the
``k80x*`` presets have no CPU). In the full setting Table 1's training budgets are the paper's
placements sampled, one per episode as the paper counts them (``docs/budgets.md``), within a
wall-time limit of ours; Fig. 5's and the ablations' are ours, in episodes, written next to each step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from placelab.reproduce.core import Build, Cell, Reproduction, Step, steps_for
from placelab.reproduce.papers import paper_table
from placelab.reproduce.reading import compare_cells, curve, error_cell, median_ratio, train_cells

#: This module's reproductions (listed in :mod:`placelab.reproduce.registry`).
REPRODUCTIONS: list[Reproduction] = []

__all__: list[str] = []

MODELS = {"Inception-V3": "gen:inception-v3", "NMT": "gen:nmt", "NASNet": "gen:nasnet"}
CLUSTERS = {"2 GPUs": "k80x2", "4 GPUs": "k80x4"}
FAMILIES = ("nmt", "ptb", "cifar10")


def _graph(model: str, cluster: str) -> str:
    # Table 1 caption: "For NMT model, the number of LSTM layers is chosen based on the number of GPUs."
    if model == "NMT":
        return f"gen:nmt?layers={2 if cluster == 'k80x2' else 4}"
    return MODELS[model]


def _rows():
    for model in MODELS:
        for label, cluster in CLUSTERS.items():
            yield f"{model} / {label}", model, cluster


# ------------------------------------------------------------------------------------ Table 1
# Op groups per model where the learned placers do better with fewer than the default 128
# (Merge-and-Colocate's target N, which App. A.6 leaves per graph; Placeto §4 hands the same
# grouped graph to Placeto and the RNN placer, so both get it). Why NMT has 32, with the
# measurements: docs/lab/2026-11-24-placeto-table1-full.md.
TABLE1_PARAMS: dict[str, tuple[str, ...]] = {"NMT": ("--param", "groups=32")}
#: Table 1's column of each learned placer; "<column> placements" is its placement count.
TABLE1_LEARNED = {"placeto": "Placeto", "rnn": "RNN-based"}


def _table1_budget(quick: bool, row: str, placer: str) -> tuple[str, ...]:
    """``--quick``: a few episodes. Full: the paper's placements for this row and placer (Table 1's
    "placements sampled" to find the best) as the budget, counted as the paper counts them — one per
    episode, whatever Placeto's intermediate rewards simulate within it (``docs/budgets.md``) — with
    Placeto's stopping rule (App. A.7, the CLI's default) and 900 s at most (ours)."""
    if quick:
        return ("--episodes", "8" if placer == "placeto" else "16")
    paper = int(paper_table("placeto", "table1")["rows"][row][f"{TABLE1_LEARNED[placer]} placements"])
    return ("--max-placements", str(paper), "--max-seconds", "900")


def table1_steps(quick: bool) -> list[Step]:
    items: list[tuple[str, tuple[str, ...]]] = []
    for model in MODELS:
        items.append((f"cpu/{model}", ("compare", _graph(model, "k80x2"), "-c", "cpu+k80x2", "--placers", "cpu-only",
                                       "--no-save")))
    for row, model, cluster in _rows():
        g = _graph(model, cluster)
        items.append((f"base/{row}", ("compare", g, "-c", cluster, "--placers", "single-device,expert,scotch",
                                      "--no-save")))
        for placer in TABLE1_LEARNED:
            items.append((f"{placer}/{row}", ("train", "--placer", placer, "-g", g, "-c", cluster,
                                              *_table1_budget(quick, row, placer), *TABLE1_PARAMS.get(model, ()),
                                              "--save", "--name", f"{placer} on {g} ({cluster})")))
    return steps_for(items)


def table1_build(out: Mapping[str, dict[str, Any]], runs_dir: str, quick: bool) -> Build:
    cells: list[Cell] = []
    for row, model, _ in _rows():
        cells += compare_cells(row, out.get(f"cpu/{model}"), {"CPU only": "cpu-only"})
        cells += compare_cells(row, out.get(f"base/{row}"), {"Single GPU": "single-device", "Expert": "expert",
                                                             "Scotch": "scotch"})
        for placer, col in TABLE1_LEARNED.items():
            cells += train_cells(row, out.get(f"{placer}/{row}"), runs_dir, col, f"{col} placements")
    return Build(cells, notes=[
        "Runtimes are simulated (Placeto App. A.5 simulator, roofline K80 costs); the paper measured real K80s.",
        "Ratios normalised by the RNN-based column (the paper's own reference) compare the shape of each row.",
    ])


REPRODUCTIONS.append(Reproduction(
    "placeto-table1", "Placeto Table 1: Inception-V3, NMT, NASNet on 2/4 K80s — baselines, Placeto, RNN placer",
    "placeto", "table1", table1_steps, table1_build, quick_minutes=1.0, reference="RNN-based"))


# ------------------------------------------------------------------------------------ Figure 5
# Every family trains with Placeto's defaults (the nmt steps' former discount and why it went:
# docs/lab/2026-11-28-placeto-fig5-shared-devices.md).


def fig5_steps(quick: bool) -> list[Step]:
    budget = (("--episodes", "4", "--optimized-episodes", "2", "--random-samples", "3", "--test-graphs", "3")
              if quick else ("--episodes", "3000", "--optimized-episodes", "300", "--random-samples", "10"))
    return steps_for([(f"{placer}/{fam}", ("experiment", "--family", fam, "-c", "k80x2", "--placer", placer, *budget))
                      for placer in ("placeto", "rnn") for fam in FAMILIES])


_METHODS = {"Zero-Shot": "zero_shot_s", "Optimized": "optimized_s", "Random": "random_s"}


def fig5_build(out: Mapping[str, dict[str, Any]], runs_dir: str, quick: bool) -> Build:
    cells: list[Cell] = []
    figures: dict[str, dict[str, Any]] = {}
    for placer, label in (("placeto", "Placeto"), ("rnn", "RNN")):
        for fam in FAMILIES:
            row = f"{label} / {fam}"
            res = out.get(f"{placer}/{fam}") or {}
            per = res.get("per_graph") or []
            if res.get("error") or not per:  # failed, left out by --only, or no test graph
                ran_empty = bool(res) and not res.get("error")
                cells += [Cell(row, c, None, "error: no test graphs") if ran_empty else error_cell(row, c, res)
                          for c in ("Zero-Shot / Optimized", "Zero-Shot / Random")]
                continue
            col = {m: [float(r[k]) for r in per] for m, k in _METHODS.items()}
            note = f"median over {len(per)} test graphs"
            for num, den in (("Zero-Shot", "Optimized"), ("Zero-Shot", "Random"), ("Optimized", "Random")):
                cells.append(Cell(row, f"{num} / {den}", median_ratio(col[num], col[den]), note))
            figures[f"cdf-{placer}-{fam}"] = {
                "kind": "cdf", "title": f"{label} on {fam} test graphs (Placeto Fig. 5)",
                "x_label": "runtime (s)", "series": col}
    return Build(cells, figures, notes=[
        "Figure 5 prints no values; the paper's numbers here stand for its stated relations (ratios close to 1)."])


REPRODUCTIONS.append(Reproduction(
    "placeto-fig5", "Placeto Fig. 5: Zero-Shot / Optimized / Random CDFs for Placeto and the RNN placer",
    "placeto", "fig5", fig5_steps, fig5_build, quick_minutes=8.0))


# ------------------------------------------------------------------------------------ ablations
_VARIANTS = {"full": None, "simple aggregator (nmt test)": "simple-aggregator",
             "simple partitioner (nmt test)": "simple-partitioner"}


def ablation_steps(quick: bool) -> list[Step]:
    exp = (("--episodes", "10", "--optimized-episodes", "1", "--random-samples", "1", "--test-graphs", "3")
           if quick else ("--episodes", "3000", "--optimized-episodes", "1", "--random-samples", "1"))
    train = ("--episodes", "6") if quick else ("--episodes", "600")
    items: list[tuple[str, tuple[str, ...]]] = []
    for row, variant in _VARIANTS.items():
        extra = ("--param", f"variant={variant}") if variant else ()
        items.append((f"variant/{row}", ("experiment", "--family", "nmt", "-c", "k80x2", *exp, *extra)))
    for reward in ("intermediate", "terminal"):
        items.append((f"reward/{reward}", ("train", "--placer", "placeto", "-g", "gen:nmt", "-c", "k80x2", *train,
                                           "--param", f"reward={reward}", "--stop-window", "0", "--save",
                                           "--name", f"placeto {reward} reward on gen:nmt")))
    return steps_for(items)


def _late_std(c: dict[str, list]) -> float | None:
    r = [float(x) for x in c.get("sampled_runtime", []) if x is not None]
    return float(np.std(r[len(r) // 2:])) if len(r) >= 2 else None


def ablation_build(out: Mapping[str, dict[str, Any]], runs_dir: str, quick: bool) -> Build:
    cells: list[Cell] = []
    full = (out.get("variant/full") or {}).get("per_graph") or []
    base = {r["graph"]: float(r["zero_shot_s"]) for r in full}
    for row, variant in _VARIANTS.items():
        if variant is None:
            continue
        per = (out.get(f"variant/{row}") or {}).get("per_graph") or []
        pairs = [(float(r["zero_shot_s"]), base[r["graph"]]) for r in per if r["graph"] in base]
        if not pairs:
            failed = next((o for o in (out.get(f"variant/{row}"), out.get("variant/full")) if o and o.get("error")),
                          None)
            cells.append(error_cell(row, "Zero-Shot vs Placeto", failed))
            continue
        cells.append(Cell(row, "Zero-Shot vs Placeto", median_ratio([a for a, _ in pairs], [b for _, b in pairs]),
                          f"median per-graph ratio over {len(pairs)} nmt test graphs"))
    curves = {r: curve(out.get(f"reward/{r}"), runs_dir) for r in ("intermediate", "terminal")}
    std = {r: _late_std(c) for r, c in curves.items()}
    best = {r: (out.get(f"reward/{r}") or {}).get("best_makespan_s") for r in curves}
    row = "terminal reward (NMT)"
    ok = std["intermediate"] and std["terminal"] is not None
    cells.append(Cell(row, "sampled runtime std (last half) vs intermediate",
                      std["terminal"] / std["intermediate"] if ok else None, "std of the sampled runtime per episode"))
    cells.append(Cell(row, "best makespan vs intermediate",
                      best["terminal"] / best["intermediate"] if best["terminal"] and best["intermediate"] else None,
                      "best placement found within the same episode budget"))
    title = "Placeto on NMT: intermediate vs terminal reward (App. A.4, Fig. 8a)"
    figures = {"rewards": {"kind": "curves", "title": title,
                           "x_label": "episode", "y_label": "sampled runtime (s)",
                           "series": {r: {"x": c.get("episode", []), "y": c.get("sampled_runtime", [])}
                                      for r, c in curves.items()}}}
    return Build(cells, figures)


REPRODUCTIONS.append(Reproduction(
    "placeto-ablations", "Placeto §4.3 simple aggregator / partitioner and App. A.4 intermediate vs terminal rewards",
    "placeto", "ablations", ablation_steps, ablation_build, quick_minutes=5.0))
