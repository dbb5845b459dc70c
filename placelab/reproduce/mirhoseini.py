"""Mirhoseini et al. (ICML 2017): Table 2 and the Fig. 8–9 load / memcpy profiles.

RNNLM, NMT and Inception-V3 (``gen:rnnlm``, ``gen:nmt``, ``gen:inception-v3``: op-level training
steps, batch 64 / 64 / 32 as in the paper) on one CPU with 2 or 4 K80s (``cpu+k80x2``,
``cpu+k80x4``), against Single-CPU, Single-GPU, Scotch, MinCut and the expert placement; the
RL-based column is our RNN placer trained on the paper's own grouping (:data:`GROUPING`), not the
RNN placer's default (Placeto's 128 Merge-and-Colocate groups, which ``placeto-table1`` keeps, as
Placeto §3.3 hands both placers the same grouped graph). Deviations: runtimes are simulated with
roofline costs, not measured; the RNN placer's budget is ours: 3,000 placements sampled — one per
episode, as the paper samples them (``docs/budgets.md``) — or 900 s, where the paper gives no
count and trained for 12 to 27 hours on up to 20 controllers.
Fig. 8 is NMT on 4 GPUs and Fig. 9 Inception-V3 on 4 GPUs; the paper's Fig. 9 baseline is the
"synchronous tower" data-parallel placement, which we do not model: ours compares with the
expert placement, the paper's Table 2 baseline.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.errors import PlacelabError
from placelab.reproduce.core import Build, Cell, Reproduction, Step, steps_for
from placelab.reproduce.reading import compare_cells, device_profile, train_cells

#: This module's reproductions (listed in :mod:`placelab.reproduce.registry`).
REPRODUCTIONS: list[Reproduction] = []

__all__: list[str] = []

MODELS = {"RNNLM": "gen:rnnlm", "NMT": "gen:nmt", "Inception-V3": "gen:inception-v3"}
CLUSTERS = {"2 GPUs": "cpu+k80x2", "4 GPUs": "cpu+k80x4"}
BASELINES = {"Single-CPU": "cpu-only", "Single-GPU": "single-device", "Scotch": "scotch", "MinCut": "mincut",
             "Expert": "expert"}
#: Mirhoseini's grouping: TF's co-location groups and "if the output of an operation X is consumed only by
#: another operation Y, then operations X and Y are co-located" (§3.3), with §4.1's manual groups — "for RNNLM
#: and NMT, we treat each LSTM cell, each embedding lookup, each attention step and each softmax prediction
#: step as a group; for Inception-V3, we treat each branch as a group" — as :func:`engine.grouping.rules.unit_groups`
#: forms them (gen:rnnlm 165 groups, gen:nmt 330, gen:inception-v3 67; the paper's Table 1: 188, 280, 83).
GROUPING = ("--param", "grouping=units")
PROFILES = {"fig8": ("NMT / 4 GPUs", "Fig. 8: NMT computational load per device (RL-based vs expert)"),
            "fig9": ("Inception-V3 / 4 GPUs", "Fig. 9: Inception-V3 load and memory copy per device")}


def _rows():
    for model, g in MODELS.items():
        for label, cluster in CLUSTERS.items():
            yield f"{model} / {label}", g, cluster


def steps(quick: bool) -> list[Step]:
    rnn = ("--episodes", "16") if quick else ("--episodes", "3000", "--max-seconds", "900")
    items: list[tuple[str, tuple[str, ...]]] = []
    for row, g, cluster in _rows():
        items.append((f"base/{row}", ("compare", g, "-c", cluster, "--placers", ",".join(BASELINES.values()))))
        items.append((f"rnn/{row}", ("train", "--placer", "rnn", "-g", g, "-c", cluster, *rnn,
                                     *GROUPING, "--save", "--name", f"rnn on {g} ({cluster})")))
    return steps_for(items)


def _profile(run_id: str | None, runs_dir: str) -> dict[str, dict[str, float]] | None:
    if not run_id:
        return None
    try:
        return device_profile(run_id, runs_dir)
    except PlacelabError:
        return None


def build(out: Mapping[str, dict[str, Any]], runs_dir: str, quick: bool) -> Build:
    cells: list[Cell] = []
    for row, _, _ in _rows():
        cells += compare_cells(row, out.get(f"base/{row}"), BASELINES)
        cells += train_cells(row, out.get(f"rnn/{row}"), runs_dir, "RL-based")
    figures = {}
    for name, (row, title) in PROFILES.items():
        expert = next((r.get("run_id") for r in (out.get(f"base/{row}") or {}).get("results", [])
                       if r.get("placer") == "expert"), None)
        placements = {"RL-based": _profile((out.get(f"rnn/{row}") or {}).get("run_id"), runs_dir),
                      "Expert": _profile(expert, runs_dir)}
        figures[name] = {"kind": "profile", "title": f"{title} (Mirhoseini et al. 2017)", "y_label": "seconds",
                         "placements": {k: v for k, v in placements.items() if v is not None}}
    return Build(cells, figures, notes=[
        "Runtimes are simulated (default mode, roofline K80/Haswell costs); the paper measured real hardware.",
        "Ratios normalised by the Expert column compare each row's shape (speed-ups over the expert placement)."])


REPRODUCTIONS.append(Reproduction(
    "mirhoseini-table2", "Mirhoseini Table 2 (+ Fig. 8–9 profiles): RNNLM, NMT, Inception-V3 on 1 CPU + 2/4 K80s",
    "mirhoseini", "table2", steps, build, quick_minutes=6.0, reference="Expert"))
