"""The papers' published numbers (``papers/<paper>.json``) and how ours are set beside them.

Each file holds ``paper`` (the reference) and ``tables``: per table a ``citation`` (table or
figure and section), ``units`` per column, and ``rows`` → column → value, where a value is a
number, ``"OOM"`` (the paper's placement ran out of memory), ``[mean, std]`` (DOPPLER's
executions) or ``null`` (the paper gives no number, e.g. a figure without printed values).
A held-out table, which no paper has (``heldout.json``: ``placelab reproduce heldout-learning``),
has no rows and a ``goal`` instead, the sentence its cells are judged by; its stored table holds
ours alone.

:func:`join` makes the stored table (CONTRACTS §7): one row per cell, ours and the paper's, the
ratio ours / paper (of the means where both sides are mean ± std: ``ours_std``,
``paper_std``), and — when the reproduction names a reference column — both values divided
by their own row's reference, so a simulated and a measured machine can be compared by shape.
With the search reference's column (``placelab reproduce NAME --search N``) each row also gets ``x_search``:
ours ÷ ours of that column in the same row ("how far is each method from a strong search?").

:func:`agreement` judges a cell by its distance from the paper; given the side on which a cell's unit is better
(:func:`lower_is_better`: a time lower, a correlation with the measurement higher), a cell more than 10 % beyond
the paper on that side is ``better``, not a disagreement.
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from typing import Any

from engine.errors import SpecError, quote
from engine.jsonio import read_json_file
from placelab.reproduce.core import Cell

__all__ = ["HIGHER_IS_BETTER", "LOWER_IS_BETTER", "PAPERS_DIR", "TABLE_COLUMNS", "agreement", "join",
           "lower_is_better", "paper_table", "paper_value"]

PAPERS_DIR = Path(__file__).resolve().parent / "papers"
TABLE_COLUMNS = ("row", "column", "ours", "ours_std", "paper", "paper_std", "ratio", "ours_rel", "paper_rel",
                 "rel_ratio", "x_search", "unit", "note")
#: Units (a table's ``units``) whose smaller value is the better result: times and the placements sampled to find
#: the best one.
LOWER_IS_BETTER = frozenset({"s", "ms", "placements"})
#: Units whose larger value is the better result: a speedup, a simulator's correlation with the measured times.
HIGHER_IS_BETTER = frozenset({"speedup", "r", "rho"})


@lru_cache(maxsize=8)
def _paper(name: str) -> dict[str, Any]:
    path = PAPERS_DIR / f"{name}.json"
    if not path.is_file():
        raise SpecError(f"no paper data file '{name}.json' in {PAPERS_DIR}")
    return read_json_file(path, error=SpecError)


def paper_table(paper: str, table: str) -> dict[str, Any]:
    """The table ``table`` of ``papers/<paper>.json`` with the paper's reference added as ``paper``."""
    doc = _paper(paper)
    if table not in doc.get("tables", {}):
        raise SpecError(f"papers/{paper}.json has no table {quote(table)}")
    return {"paper": doc["paper"], **doc["tables"][table]}


def paper_value(raw: Any) -> tuple[float | None, float | None, bool]:
    """``(value, std, oom)`` of one published cell (see the module docstring for the forms)."""
    if raw == "OOM":
        return None, None, True
    if isinstance(raw, list):
        return float(raw[0]), float(raw[1]), False
    if isinstance(raw, int | float):
        return float(raw), None, False
    return None, None, False


def _num(x: float | None) -> bool:
    return x is not None and math.isfinite(x) and x != 0


def lower_is_better(unit: str | None) -> bool | None:
    """True where a smaller value in ``unit`` is the better result (:data:`LOWER_IS_BETTER`), False where a larger
    one is (:data:`HIGHER_IS_BETTER`), None where neither is (a ratio the paper expects near 1, a unit not known)."""
    unit = (unit or "").strip()
    return True if unit in LOWER_IS_BETTER else False if unit in HIGHER_IS_BETTER else None


def agreement(ratio: float | None, ours_oom: bool = False, paper_oom: bool = False, measured: bool = True,
              lower_better: bool | None = None) -> str:
    """``agree`` (within 10 %, or both OOM), ``better``, ``close`` (within 25 %), ``differ``, or ``n/a``.

    ``measured`` is False when we have no value for the cell (a step that failed or did not run).
    ``lower_better`` (:func:`lower_is_better` of the cell's unit) names the better side: a ratio ours / paper
    beyond 10 % on it (below 0.9 where lower is better, above 1.1 where higher is) is ``better``; None judges
    the distance alone. One side OOM differs whatever the side.
    """
    if not measured and not ours_oom:
        return "n/a"
    if ours_oom or paper_oom:
        return "agree" if ours_oom and paper_oom else "differ"
    if ratio is None or not math.isfinite(ratio):
        return "n/a"
    dev = abs(ratio - 1.0) - 1e-9  # 1.1 is within 10 % though 1.1 - 1 > 0.1 in floating point
    if dev <= 0.10:
        return "agree"
    if lower_better is not None and (ratio < 1.0) == lower_better:
        return "better"
    return "close" if dev <= 0.25 else "differ"


def join(cells: list[Cell], paper: str, table: str, reference: str | None = None,
         search: str | None = None) -> list[dict[str, Any]]:
    """Rows of the stored table: every cell of ours and of the paper's table, in the paper's order.

    A paper cell we do not produce gets an empty ``ours`` and the note ``not reproduced``; a cell
    of ours the paper lacks gets an empty ``paper``. ``search``: the search reference's column, whose cells are in
    the ``reference`` column's unit; every cell of ours in that unit is divided by the one of its row
    (``x_search``; None where either is missing or OOM).
    """
    t = paper_table(paper, table)
    units = t.get("units", {})
    notes = t.get("notes", {})
    ours = {(c.row, c.column): c for c in cells}
    order: list[tuple[str, str]] = [(r, col) for r, cols in t["rows"].items() for col in cols]
    order += [k for k in ours if k not in set(order)]
    ref_ours = {c.row: c.value for c in cells if c.column == reference and not c.oom}
    ref_paper = {r: paper_value(cols.get(reference))[0] for r, cols in t["rows"].items()} if reference else {}
    ref_search = {c.row: c.value for c in cells if c.column == search and not c.oom}
    if search is not None and reference is not None:  # the search's cells are in the reference column's unit
        units = {search: units.get(reference, ""), **units}
    out = []
    for row, col in order:
        mine = ours.get((row, col))
        pv, pstd, poom = paper_value(t["rows"].get(row, {}).get(col))
        ov = mine.value if mine else None
        oom = bool(mine and mine.oom)
        ratio = ov / pv if _num(ov) and _num(pv) and not oom else None
        same_unit = reference is not None and units.get(col) == units.get(reference)  # seconds by seconds only
        o_rel = ov / ref_ours[row] if same_unit and _num(ov) and _num(ref_ours.get(row)) and not oom else None
        p_rel = pv / ref_paper[row] if same_unit and _num(pv) and _num(ref_paper.get(row)) else None
        base = ref_search.get(row)
        x_search = ov / base if _num(ov) and _num(base) and not oom and units.get(col) == units.get(search) else None
        note = "; ".join(x for x in ((mine.note if mine else "not reproduced"), notes.get(row, "")) if x)
        if oom and "OOM" not in note:
            note = f"OOM; {note}" if note else "OOM"
        out.append({"row": row, "column": col, "ours": ov, "ours_std": mine.std if mine and not oom else None,
                    "paper": "OOM" if poom else pv, "paper_std": pstd,
                    "ratio": ratio, "ours_rel": o_rel, "paper_rel": p_rel,
                    "rel_ratio": o_rel / p_rel if _num(o_rel) and _num(p_rel) else None, "x_search": x_search,
                    "unit": units.get(col, ""), "note": note})
    return out
