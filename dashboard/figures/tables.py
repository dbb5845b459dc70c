"""Tables for papers and slides: LaTeX (booktabs) from a DataFrame."""

from __future__ import annotations

import math

import pandas as pd

__all__ = ["table_latex"]


def _cell(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "--"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


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
    lines += [" & ".join(esc(_cell(v)) for v in row) + r" \\" for row in table.itertuples(index=False)]
    lines += [r"\bottomrule", r"\end{tabular}", ""]
    return "\n".join(lines)
