"""DOPPLER (Yao et al. 2025): Tables 2, 3, 8 and 9 on the App. D graphs.

The four sharded graphs (``gen:chainmm``, ``gen:ffnn``, ``gen:llama-block``, ``gen:llama-layer``)
on 4 P100s (``p100x4``; Table 8: ``p100x4-8gb``, each GPU limited to 8 of its 16 GB) or 8 V100s
in two NVLink groups (``v100x8``, Table 9). Baselines (critical path — best of 50, §6.1 —, the
EnumerativeOptimizer, one GPU) come from ``compare``; Placeto and DOPPLER are trained on the
graph (§6.1: 4k episodes for CHAINMM and FFNN, 8k for the Llama graphs). These reproductions
need the DOPPLER placer (``doppler``) and list themselves as not ready until it is registered.

Deviations: the paper's numbers are real-engine executions (mean ± std of 10); ours are the
simulator's, whose spread depends on the cluster's simulation mode (the DOPPLER presets' own).
DOPPLER-SYS (Stage III, training on the real engine) needs an executor, so our DOPPLER column
is the simulation-trained policy, compared with both DOPPLER-SIM and -SYS; GDP is not
implemented (its cells read "not reproduced").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from placelab.reproduce.core import Build, Cell, Reproduction, Step, register, steps_for
from placelab.reproduce.reading import compare_cells, train_cells

__all__: list[str] = []

GRAPHS = {"CHAINMM": "gen:chainmm", "FFNN": "gen:ffnn", "LLAMA-BLOCK": "gen:llama-block",
          "LLAMA-LAYER": "gen:llama-layer"}


def _episodes(row: str, quick: bool) -> tuple[str, ...]:
    if quick:
        return ("--episodes", "20")
    return ("--episodes", "4000" if row in ("CHAINMM", "FFNN") else "8000")  # §6.1


def _train(key: str, placer: str, g: str, cluster: str, budget: tuple[str, ...], *param: str):
    extra = tuple(x for p in param for x in ("--param", p))
    return (key, ("train", "--placer", placer, "-g", g, "-c", cluster, *budget, *extra, "--save",
                  "--name", f"{placer} {' '.join(param)} on {g} ({cluster})".replace("  ", " ")))


def _table(cluster: str, baselines: dict[str, str], placeto: bool, doppler_cols: tuple[str, ...]):
    """steps and build of a table with compare baselines, optionally Placeto, and DOPPLER."""

    def steps(quick: bool) -> list[Step]:
        items = []
        for row, g in GRAPHS.items():
            items.append((f"base/{row}", ("compare", g, "-c", cluster, "--placers", ",".join(baselines.values()),
                                          "--no-save")))
            if placeto:
                items.append(_train(f"placeto/{row}", "placeto", g, cluster, _episodes(row, quick)))
            items.append(_train(f"doppler/{row}", "doppler", g, cluster, _episodes(row, quick)))
        return steps_for(items)

    def build(out: Mapping[str, dict[str, Any]], runs_dir: str, quick: bool) -> Build:
        cells: list[Cell] = []
        for row in GRAPHS:
            cells += compare_cells(row, out.get(f"base/{row}"), baselines)
            if placeto:
                cells += train_cells(row, out.get(f"placeto/{row}"), runs_dir, "Placeto")
            for col in doppler_cols:
                cells += train_cells(row, out.get(f"doppler/{row}"), runs_dir, col)
        return Build([_ms(c) for c in cells], notes=[
            "Ours: simulated (the preset's mode); paper: real engine, mean ± std of 10 executions. "
            "Our DOPPLER policy is trained in simulation (no real-engine Stage III) and set beside "
            + " and ".join(doppler_cols) + "."])

    return steps, build


def _ms(c: Cell) -> Cell:
    """Seconds → milliseconds (DOPPLER's tables are in ms)."""
    return Cell(c.row, c.column, c.value * 1e3 if c.value is not None else None, c.note, c.oom)


_CP = {"Critical path": "critical-path", "EnumOpt": "enumerative"}
_SYS = ("DOPPLER-SYS",)
for name, table, cluster, base, with_placeto, cols, minutes in (
        ("doppler-table2", "table2", "p100x4", _CP, True, ("DOPPLER-SIM", *_SYS), 12.0),
        ("doppler-table8", "table8", "p100x4-8gb", {"1 GPU": "single-device", **_CP}, True, _SYS, 12.0),
        ("doppler-table9", "table9", "v100x8", {"1 GPU": "single-device", **_CP}, False, _SYS, 10.0)):
    _steps, _build = _table(cluster, base, with_placeto, cols)
    register(Reproduction(name, f"DOPPLER {table.replace('table', 'Table ')}: the App. D graphs on {cluster}",
                          "doppler", table, _steps, _build, quick_minutes=minutes, reference="Critical path",
                          requires=("doppler", f"cluster:{cluster}")))


def _table3_steps(quick: bool) -> list[Step]:
    items = []
    for row, g in GRAPHS.items():
        for col, variant in (("SYS", "full"), ("SEL", "sel-only"), ("PLC", "plc-only")):
            items.append(_train(f"{col}/{row}", "doppler", g, "p100x4", _episodes(row, quick), f"variant={variant}"))
    return steps_for(items)


def _table3_build(out: Mapping[str, dict[str, Any]], runs_dir: str, quick: bool) -> Build:
    cells = [_ms(c) for row in GRAPHS for col in ("SYS", "SEL", "PLC")
             for c in train_cells(row, out.get(f"{col}/{row}"), runs_dir, col)]
    return Build(cells, notes=["SYS is our simulation-trained full dual policy (no real-engine Stage III)."])


register(Reproduction("doppler-table3", "DOPPLER Table 3: SEL-only / PLC-only ablations on p100x4", "doppler",
                      "table3", _table3_steps, _table3_build, quick_minutes=12.0, reference="SYS",
                      requires=("doppler", "cluster:p100x4")))
