"""The Papers page's figures and tables as pure functions of a stored reproduction (CONTRACTS §7).

A reproduction run holds ``table.csv`` (rows: row, column, ours, paper, ratio, …), figure data
under ``figures/`` and ``commands.json``. These functions turn them into what the page shows and
exports: the side-by-side table with an agreement label per cell, CSV and LaTeX text, a
ratio chart, and the reproduction's own figures (CDFs, learning curves, load profiles).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from dashboard.figures.charts import cdf_figure
from dashboard.figures.numbers import plain_number
from dashboard.figures.theme import PALETTE
from engine.errors import quote
from placelab.reproduce.papers import agreement, lower_is_better

__all__ = ["AGREEMENT_LEGEND", "AGREEMENT_STYLES", "agreement_label", "cell_styles", "graphs_rows", "has_paper_numbers",
           "ratio_figure", "reproduction_figure", "runs_beside", "side_by_side", "table_csv", "table_latex",
           "text_width_px"]

#: Background and text colour of the agreement cells (within 10 %, ours better than the paper by more, within
#: 25 %, beyond, not comparable) in the app's light and dark theme: dark text on pastel fills, light text on deep
#: ones; every pair has a WCAG contrast ratio of at least 4.5, and the cells name their colour in words too.
AGREEMENT_STYLES = {
    "light": {"agree": ("#C7E9C0", "#31333F"), "better": ("#C6DBEF", "#31333F"), "close": ("#FDD49E", "#31333F"),
              "differ": ("#FCAE91", "#31333F"), "n/a": ("#F0F0F0", "#31333F")},
    "dark": {"agree": ("#1E4D2B", "#FAFAFA"), "better": ("#1B3F66", "#FAFAFA"), "close": ("#5C3D00", "#FAFAFA"),
             "differ": ("#6E1F1F", "#FAFAFA"), "n/a": ("#262730", "#FAFAFA")},
}
#: The table's legend: what each agreement colour says.
AGREEMENT_LEGEND = ("Agreement with the paper: green within 10 %, amber within 25 %, red beyond; blue: ours better "
                    "than the paper's by more than 10 % (a lower time, a higher correlation), a departure but no "
                    "worse result; OOM on both sides agrees.")
#: Roughly the width (px) of one character of a table cell, and a cell's padding.
_CHAR_PX, _CELL_PAD_PX = 8, 24
_PHASES = ("forward", "backward", "update", "other")


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or x is None or x == "":
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def agreement_label(row: Mapping[str, Any], normalised: bool = False) -> str:
    """``agree`` (within 10 %), ``better`` (ours better than the paper's by more, on the better side of the row's
    unit: :func:`~placelab.reproduce.papers.lower_is_better`), ``close`` (within 25 %), ``differ`` or ``n/a`` for
    one table row.

    Both sides OOM agree; one side OOM differs. ``normalised`` judges the row-normalised ratio.
    """
    return agreement(_num(row.get("rel_ratio" if normalised else "ratio")), "OOM" in str(row.get("note") or ""),
                     row.get("paper") == "OOM", _num(row.get("ours")) is not None,
                     lower_is_better(str(row.get("unit") or "")))


def _fmt(x: Any, digits: int = 4, *, trim: bool = True) -> str:
    v = _num(x)
    if v is None:
        return "" if x is None else str(x)
    return plain_number(v, digits, trim=trim)


def _with_std(r: Mapping[str, Any], key: str) -> str:
    text = _fmt(r.get(key))
    return text + f" ± {_fmt(r[key + '_std'], 3)}" if _num(r.get(key + "_std")) is not None else text


def has_paper_numbers(rows: Sequence[Mapping[str, Any]]) -> bool:
    """Whether any cell of a stored table has a paper's number (a held-out reproduction, ``heldout-learning``,
    has none: only ours, judged against its goal)."""
    return any(r.get("paper") == "OOM" or _num(r.get("paper")) is not None for r in rows)


def side_by_side(rows: Sequence[Mapping[str, Any]], normalised: bool = False,
                 paper: bool = True) -> list[dict[str, str]]:
    """Display rows: row, column, ours (± std), paper (± std), ratio, normalised ratio, agreement, unit, note;
    without ``paper`` (a table with no paper numbers: :func:`has_paper_numbers`) row, column, ours, unit, note."""
    out = []
    for r in rows:
        shown = {"row": str(r.get("row", "")), "column": str(r.get("column", "")), "ours": _with_std(r, "ours")}
        if paper:
            shown |= {"paper": _with_std(r, "paper"), "ours / paper": _fmt(r.get("ratio"), 3),
                      "normalised": _fmt(r.get("rel_ratio"), 3), "agreement": agreement_label(r, normalised)}
        out.append({**shown, "unit": str(r.get("unit") or ""), "note": str(r.get("note") or "")})
    return out


def graphs_rows(graphs: Any) -> list[dict[str, str]]:
    """The graphs a reproduction run used (its parameters' ``graphs``, :mod:`placelab.reproduce.published`), one
    display row each: the table row, the graph (the authors' file or our spec), where it is from, sha256, ops."""
    out = []
    for g in graphs if isinstance(graphs, list) else []:
        if not isinstance(g, Mapping):
            continue
        authors = g.get("source") == "authors"
        why = f" ({g['why']})" if not authors and g.get("why") else ""
        out.append({"row": str(g.get("row", "")), "graph": str(g.get("file" if authors else "spec") or ""),
                    "from": "the authors' file" if authors else f"ours, generated{why}",
                    "sha256": str(g.get("sha256") or ""), "ops": str(g.get("ops") or "")})
    return out


def runs_beside(first: Sequence[Mapping[str, Any]], second: Sequence[Mapping[str, Any]], labels: tuple[str, str],
                ) -> list[dict[str, str]]:
    """Two runs' tables cell by cell: row, column, the paper's value, each run's ours (± std, headed by
    ``labels``) and second / first. Cells of one run only are shown with the other side empty."""
    a = {(str(r.get("row")), str(r.get("column"))): r for r in first}
    b = {(str(r.get("row")), str(r.get("column"))): r for r in second}
    out = []
    for key in dict.fromkeys([*a, *b]):
        ra, rb = a.get(key, {}), b.get(key, {})
        va, vb = _num(ra.get("ours")), _num(rb.get("ours"))
        out.append({"row": key[0], "column": key[1], "paper": _with_std(ra or rb, "paper"),
                    labels[0]: _with_std(ra, "ours"), labels[1]: _with_std(rb, "ours"),
                    f"{labels[1]} / {labels[0]}": _fmt(vb / va, 3) if va and vb is not None else ""})
    return out


def cell_styles(table: pd.DataFrame, theme: str) -> pd.DataFrame:
    """CSS per cell of the :func:`side_by_side` table for the app's ``theme`` (``light``/``dark``): the
    agreement cells get their :data:`AGREEMENT_STYLES` fill and text colour, the others none (the
    theme's own). For ``DataFrame.style.apply(..., axis=None)``."""
    styles = AGREEMENT_STYLES.get(theme, AGREEMENT_STYLES["light"])
    css = pd.DataFrame("", index=table.index, columns=table.columns)
    if "agreement" in table.columns:
        css["agreement"] = [f"background-color: {styles[v][0]}; color: {styles[v][1]}" if v in styles else ""
                            for v in table["agreement"]]
    return css


def text_width_px(values: Sequence[Any], header: str = "") -> int:
    """About the width (px) a table column needs to show its longest value (or header) whole."""
    longest = max((len(str(v)) for v in [header, *values]), default=0)
    return longest * _CHAR_PX + _CELL_PAD_PX


def table_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    """The stored table as CSV text (every column any row has, one line per cell)."""
    if not rows:
        return ""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(dict.fromkeys(k for r in rows for k in r)), lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: "" if v is None else v for k, v in r.items()})
    return buf.getvalue()


def _tex(s: str) -> str:
    for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("$", r"\$"), ("#", r"\#"),
                 ("_", r"\_"), ("{", r"\{"), ("}", r"\}"), ("~", r"\textasciitilde{}"), ("^", r"\^{}")):
        s = s.replace(a, b) if a != "\\" else s.replace(a, "\x00")
    return s.replace("\x00", r"\textbackslash{}")


def table_latex(rows: Sequence[Mapping[str, Any]], caption: str = "", normalised: bool = False) -> str:
    """A booktabs LaTeX table: one line per row of the paper's table, ``ours / paper`` per column (ours alone in
    a table without paper numbers, :func:`has_paper_numbers`), every number to 3 significant digits in plain
    notation (:func:`plain_number`)."""
    paper_numbers = has_paper_numbers(rows)
    row_names = list(dict.fromkeys(str(r["row"]) for r in rows))
    cols = list(dict.fromkeys(str(r["column"]) for r in rows))
    cell = {(str(r["row"]), str(r["column"])): r for r in rows}
    lines = [r"\begin{table}[t]", r"\centering", r"\begin{tabular}{l" + "r" * len(cols) + "}", r"\toprule",
             " & ".join(["", *(_tex(c) for c in cols)]) + r" \\", r"\midrule"]
    for name in row_names:
        parts = [_tex(name)]
        for c in cols:
            r = cell.get((name, c))
            if r is None:
                parts.append("")
                continue
            ours = "OOM" if "OOM" in str(r.get("note") or "") else _fmt(r.get("ours"), 3, trim=False) or "--"
            paper = _fmt(r.get("paper"), 3, trim=False) or "--"
            parts.append(f"{ours} / {paper}" if paper_numbers else ours)
        lines.append(" & ".join(parts) + r" \\")
    each = "ours / paper" if paper_numbers else "ours"
    lines += [r"\bottomrule", r"\end{tabular}",
              r"\caption{" + _tex(caption or each) + f" (each cell: {each})}}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def ratio_figure(rows: Sequence[Mapping[str, Any]], *, normalised: bool = False, title: str = "") -> go.Figure:
    """Bars of ours / paper per cell, grouped by column, a line at 1 and the ±10 % band."""
    key = "rel_ratio" if normalised else "ratio"
    fig = go.Figure()
    cols = list(dict.fromkeys(str(r["column"]) for r in rows if _num(r.get(key)) is not None))
    for i, c in enumerate(cols):
        sel = [r for r in rows if str(r["column"]) == c and _num(r.get(key)) is not None]
        fig.add_trace(go.Bar(name=c, x=[str(r["row"]) for r in sel], y=[_num(r[key]) for r in sel],
                             marker_color=PALETTE[i % len(PALETTE)]))
    fig.add_hrect(y0=0.9, y1=1.1, fillcolor=AGREEMENT_STYLES["light"]["agree"][0], opacity=0.4, line_width=0)
    fig.add_hline(y=1.0, line_dash="dash", line_color="#333333")
    fig.update_layout(title=title or ("ours / paper, normalised by the reference column" if normalised
                                      else "ours / paper"), barmode="group", yaxis_title="ratio",
                      height=420, margin={"l": 10, "r": 10, "t": 60, "b": 40})
    return fig


def _profile_figure(data: Mapping[str, Any]) -> go.Figure:
    fig = go.Figure()
    shown: set[str] = set()
    for placement, devices in data.get("placements", {}).items():
        names = list(devices)
        for j, part in enumerate((*_PHASES, "memcpy")):
            y = [float(devices[d].get(part, 0.0)) for d in names]
            if not any(y):
                continue
            fig.add_trace(go.Bar(x=[[placement] * len(names), names], y=y, name=part, legendgroup=part,
                                 showlegend=part not in shown, marker_color=PALETTE[j % len(PALETTE)],
                                 offsetgroup="memcpy" if part == "memcpy" else "compute"))
            shown.add(part)
    fig.update_layout(title=data.get("title", ""), barmode="stack", yaxis_title=data.get("y_label", "seconds"),
                      height=420, margin={"l": 10, "r": 10, "t": 60, "b": 40})
    return fig


def _curves_figure(data: Mapping[str, Any]) -> go.Figure:
    fig = go.Figure()
    for i, (name, c) in enumerate(data.get("series", {}).items()):
        fig.add_trace(go.Scatter(x=list(c.get("x", [])), y=list(c.get("y", [])), mode="lines", name=name,
                                 line={"color": PALETTE[i % len(PALETTE)]}))
    fig.update_layout(title=data.get("title", ""), xaxis_title=data.get("x_label", ""),
                      yaxis_title=data.get("y_label", ""), height=420, margin={"l": 10, "r": 10, "t": 60, "b": 40})
    return fig


def reproduction_figure(data: Mapping[str, Any]) -> go.Figure:
    """A reproduction's stored figure data as a plotly figure (kinds: ``cdf``, ``curves``, ``profile``).

    Raises
    ------
    ValueError
        For an unknown kind.
    """
    kind = data.get("kind")
    if kind == "cdf":
        return cdf_figure(data.get("series", {}), x_title=data.get("x_label", "runtime (s)"),
                          title=data.get("title", ""))
    if kind == "curves":
        return _curves_figure(data)
    if kind == "profile":
        return _profile_figure(data)
    raise ValueError(f"unknown figure kind {quote(kind)}")
