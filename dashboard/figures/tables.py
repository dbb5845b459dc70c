"""Tables as the pages show them and as papers and slides take them (LaTeX, booktabs): numbers to
:data:`DIGITS` significant digits in plain notation everywhere, so a column never mixes ``2`` with ``1.0011``
or ``2392.3057`` (issue #33)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd
from pandas.io.formats.style import Styler

from dashboard.figures.numbers import plain_number

__all__ = ["DIGITS", "MISSING", "cell_text", "table_latex", "table_view"]

#: Significant digits of every number in a shown or exported table.
DIGITS = 4
#: A missing value in a shown table (never "None" or "nan").
MISSING = "—"


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def cell_text(value: object, missing: str = "--") -> str:
    """One cell as an exported table writes it (LaTeX, a report's slides): numbers to :data:`DIGITS` significant
    digits in plain notation, booleans as yes / no, a missing value as ``missing``."""
    if _missing(value):
        return missing
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return plain_number(value, DIGITS)
    return str(value)


def table_view(table: pd.DataFrame, missing: Mapping[str, str] | None = None) -> Styler:
    """``table`` for ``st.dataframe``: float columns to :data:`DIGITS` significant digits with the same
    precision down a column (``2.000``, ``1.001``), missing values as :data:`MISSING` or as ``missing[column]``
    (e.g. "unknown" for the sizes of a graph whose source gives none), booleans as yes / no. The values stay what
    they are (sorting, CSV)."""
    missing = missing or {}
    # A column with no value at all is its word in every cell ("unknown": the browser's grid draws an empty cell
    # as the dataframe's one placeholder, not as the Styler's text for it)
    words = {c: word for c, word in missing.items() if c in table.columns and table[c].map(_missing).all()}
    table = table.assign(**words) if words else table

    def shown(column: str):
        def fmt(v: object) -> str:
            if _missing(v):
                return missing.get(column, MISSING)
            return plain_number(float(v), DIGITS, trim=False) if isinstance(v, (int, float)) else str(v)
        return fmt

    floats = [c for c in table.columns if pd.api.types.is_float_dtype(table[c]) or c in missing]
    styler = table.style.format(na_rep=MISSING)
    for c in floats:
        styler = styler.format(shown(c), subset=[c])
    for c in (c for c in table.columns if pd.api.types.is_bool_dtype(table[c])):
        styler = styler.format(cell_text, subset=[c])  # yes / no, as the LaTeX export
    return styler


def table_latex(table: pd.DataFrame) -> str:
    """A booktabs ``tabular`` of ``table``: numbers to 4 significant digits, missing values as ``--``,
    LaTeX special characters in names escaped; numeric columns right-aligned."""
    def esc(text: str) -> str:
        out = text.replace("\\", r"\textbackslash{}")
        for ch in "&%$#_{}":
            out = out.replace(ch, "\\" + ch)
        return out.replace("~", r"\textasciitilde{}").replace("^", r"\textasciicircum{}")

    align = "".join("r" if pd.api.types.is_numeric_dtype(table[c]) and not pd.api.types.is_bool_dtype(table[c])
                    else "l" for c in table.columns)
    lines = [rf"\begin{{tabular}}{{{align}}}", r"\toprule",
             " & ".join(esc(str(c)) for c in table.columns) + r" \\", r"\midrule"]
    lines += [" & ".join(esc(cell_text(v)) for v in row) + r" \\" for row in table.itertuples(index=False)]
    lines += [r"\bottomrule", r"\end{tabular}", ""]
    return "\n".join(lines)
