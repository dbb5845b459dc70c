"""DOPPLER App. G.1 (Fig. 26, right): how closely simulated makespans follow measured ones.

The paper runs the assignments DOPPLER visits while imitation-training on ChainMM on its real
engine and in its simulator, and reports Pearson 0.79 and Spearman 0.69 between the two. Ours
is ``placelab validate`` on this machine's ``local`` cluster, one CPU worker per core (issue #14's
executor, calibrated on first use), on the ``perturbed`` sample (``placelab.fidelity``): the
baselines' placements, then each with a growing share of its ops redrawn at random, good to
random, as a training run visits them. Each is executed ``--repeats`` times and simulated in every
mode. The cells are the calibrated ``work_conserving`` mode's correlations; the other modes' and
the noise ceiling (how well an error-free prediction could rank these placements, given the
run-to-run noise) are in the note.

Deviations: the placements stand in for an imitation training's, they are not one's. The "real
engine" is our executor on CPU cores, not the authors' engine on P100s. The graph is scaled so that
one device's share of the work takes :data:`STEP_MS` ms. The full setting adds FFNN and the two
Llama graphs; the paper reports ChainMM only. The steps measure, so they run one after another (the
reproduction refuses ``--workers``); run it on an otherwise idle machine. ``--graphs-dir DIR`` validates on
the DOPPLER authors' own files instead (:data:`placelab.reproduce.doppler.AUTHORS_FILES`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from placelab.reproduce.core import Build, Cell, Reproduction, Step
from placelab.reproduce.doppler import GRAPHS, authors_graphs
from placelab.reproduce.reading import error_cell

#: This module's reproductions (listed in :mod:`placelab.reproduce.registry`).
REPRODUCTIONS: list[Reproduction] = []

__all__ = ["FULL", "MODE", "QUICK", "STEP_MS"]

MODE = "work_conserving"  #: the simulation mode the cells report (the calibrated DOPPLER mode)
STEP_MS = 50.0  #: one device's share of the scaled graph, ms
#: (graphs, placements, repeats) of each setting
QUICK = (("CHAINMM",), 12, 2)
FULL = (tuple(GRAPHS), 50, 3)
_COLUMNS = {"Pearson": "pearson", "Spearman": "spearman"}


def _steps(quick: bool) -> list[Step]:
    rows, placements, repeats = QUICK if quick else FULL
    return [Step(f"validate/{row}", ("validate", GRAPHS[row], "-c", "local", "--placements", str(placements),
                                     "--repeats", str(repeats), "--step-ms", f"{STEP_MS:g}", "--sample",
                                     "perturbed", "--seed", "0"), 0)
            for row in rows]


def _cells(row: str, out: Mapping[str, Any] | None) -> list[Cell]:
    if not out or out.get("error"):
        return [error_cell(row, col, out) for col in _COLUMNS]
    modes = out.get("modes", {})
    stats = modes.get(MODE)
    if stats is None:
        return [Cell(row, col, None, f"error: the {MODE} mode was not simulated") for col in _COLUMNS]
    others = "; ".join(f"{m}: Pearson {s['pearson']:.2f}, Spearman {s['spearman']:.2f}"
                       for m, s in modes.items() if m != MODE and s.get("pearson") is not None)
    noise = out.get("noise_ceiling")
    note = (f"{MODE}, {out['placements']} placements × {out['repeats']} runs on {out['cluster']}; median "
            f"relative error {stats['median_rel_error']:.1%}" + (f"; {others}" if others else "")
            + (f"; noise ceiling: Spearman {noise['spearman_ceiling']:.2f}" if noise else ""))
    return [Cell(row, col, stats[key], note) if stats.get(key) is not None
            else Cell(row, col, None, "undefined: the measured or simulated makespans are all equal")
            for col, key in _COLUMNS.items()]


def _build(outputs: Mapping[str, dict[str, Any]], runs_dir: str, quick: bool) -> Build:
    rows = QUICK[0] if quick else FULL[0]
    cells = [c for row in rows for c in _cells(row, outputs.get(f"validate/{row}"))]
    return Build(cells, notes=["Ours: the calibrated work_conserving simulation against our executor on this "
                               "machine's CPU cores; the paper's: its simulator against its engine on P100s."])


REPRODUCTIONS.append(Reproduction(
    "doppler-g1", "DOPPLER App. G.1: simulated vs measured makespans (Pearson, Spearman) on this machine",
    "doppler", "g1", _steps, _build, quick_minutes=0.5, requires=("cluster:local",), exclusive=True,
    published=authors_graphs()))
