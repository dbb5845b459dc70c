"""Papers: a stored reproduction beside the paper's numbers — table, figures, commands, exports."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from dashboard.common import guard, list_runs, show_figure
from dashboard.figures import figure_html, figure_image
from dashboard.figures.papers import (
    AGREEMENT_COLORS,
    ratio_figure,
    reproduction_figure,
    side_by_side,
    table_csv,
    table_latex,
)
from engine.errors import PlacelabError


def _reproductions() -> dict[str, object]:
    """Label → the newest finished reproduce run of each name and setting: the user's own, else the
    bundled example's (``runs/``, so the page has content on first start)."""
    out: dict[str, object] = {}
    for run in list_runs(kind="reproduce", status="done"):
        label = f"{run.meta.get('placer')} ({run.meta.get('parameters', {}).get('setting', '?')})"
        out.setdefault(label, run)
    return dict(sorted(out.items()))


def _figure_downloads(fig, name: str, key: str) -> None:
    cols = st.columns([1, 1, 1, 3])
    cols[0].download_button("HTML", figure_html(fig), file_name=f"{name}.html", mime="text/html", key=f"{key}_html")
    for col, fmt in ((cols[1], "png"), (cols[2], "svg")):
        col.download_button(fmt.upper(), lambda f=fmt: figure_image(fig, f) or b"", file_name=f"{name}.{fmt}",
                            mime="image/png" if fmt == "png" else "image/svg+xml", key=f"{key}_{fmt}")


def page() -> None:
    st.title("Papers")
    reps = _reproductions()
    if not reps:
        st.info("No reproductions stored yet. Run one with `placelab reproduce NAME --quick` "
                "(`placelab reproduce --list` shows them), or `make bundled-runs`.")
        return
    label = st.selectbox("Reproduction", list(reps), key="papers_pick")
    run = reps[label]
    meta = run.meta
    params = meta.get("parameters", {})
    st.caption(f"{params.get('paper', '')} — {params.get('citation', '')}")
    with guard("Reproduction"):
        rows = run.read_table("table.csv")
        table = [dict(zip(rows, vals, strict=True)) for vals in zip(*rows.values(), strict=True)] if rows else []
        commands = run.read_json("commands.json")
        m = meta.get("metrics", {})
        cols = st.columns(4)
        cols[0].metric("Setting", params.get("setting", "?"))
        cols[1].metric("Wall time", f"{m.get('wall_s', 0) / 60:.1f} min")
        cols[2].metric("Cells within 10 %", f"{m.get('cells_within_10pct', 0)} / {m.get('cells_compared', 0)}")
        cols[3].metric("Code version", str((meta.get("code_version") or {}).get("git") or "?"))
        normalised = st.toggle("Judge by row-normalised ratios", value=any(r.get("rel_ratio") not in (None, "")
                                                                          for r in table), key="papers_norm",
                               help="Each value divided by its row's reference column, ours and the paper's alike: "
                                    "compares the shape of a row when the machines differ")
        shown = pd.DataFrame(side_by_side(table, normalised))
        if not shown.empty:
            st.dataframe(shown.style.apply(lambda s: [f"background-color: {AGREEMENT_COLORS[v]}" for v in s],
                                           subset=["agreement"]), width="stretch", hide_index=True)
        st.caption("Agreement: green within 10 %, amber within 25 %, red beyond; OOM on both sides agrees.")
        if params.get("setting") == "quick":
            st.caption(f"Quick setting: budgets far below the paper's (each command under *Rerun* gives its own); "
                       f"`placelab reproduce {meta.get('placer')}` runs the paper's.")
        for note in commands.get("notes", []):
            st.caption(note)
        cols = st.columns([1, 1, 4])
        cols[0].download_button("Table (CSV)", table_csv(table), file_name=f"{run.id}-table.csv", mime="text/csv",
                                key="papers_csv")
        cols[1].download_button("Table (LaTeX)", table_latex(table, params.get("citation", ""), normalised),
                                file_name=f"{run.id}-table.tex", mime="text/x-tex", key="papers_tex")
        fig = ratio_figure(table, normalised=normalised)
        show_figure(fig, key="papers_ratio")
        _figure_downloads(fig, f"{run.id}-ratios", "papers_ratio_dl")
    st.subheader("Figures")
    figs = [f for f in run.files() if f.startswith("figures/") and f.endswith(".json")]
    if not figs:
        st.caption("This reproduction has no figures besides the table.")
    for i, name in enumerate(figs):
        with guard(name):
            try:
                fig = reproduction_figure(run.read_json(name))
            except ValueError as exc:
                raise PlacelabError(str(exc)) from None
            show_figure(fig, key=f"papers_fig_{i}")
            _figure_downloads(fig, f"{run.id}-{name.split('/')[-1][:-5]}", f"papers_fig_dl_{i}")
    st.subheader("Rerun")
    st.code(f"placelab reproduce {meta.get('placer')}" + (" --quick" if params.get("setting") == "quick" else ""),
            language="bash")
    with st.expander(f"The {len(commands.get('steps', []))} commands it ran, with seeds and wall times"):
        st.code("\n".join(s["command"] for s in commands.get("steps", [])), language="bash")
        st.json(json.loads(json.dumps(commands.get("steps", []))), expanded=False)
