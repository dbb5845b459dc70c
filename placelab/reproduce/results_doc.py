"""``docs/results.md``: every reproduction's current table, read from the stored runs.

``python -m placelab.reproduce.results_doc [--runs-dir runs] [-o docs/results.md]`` (``make
docs-results``) writes one Markdown file. It has a section per registered reproduction
(:func:`placelab.reproduce.registry.all_reproductions`, in registration order). Each section shows the
table of the newest finished ``reproduce`` run of each setting (full first, then quick) as the
runner stored it (``table.csv``, CONTRACTS §7, built by :func:`placelab.reproduce.papers.join`).
Every cell gets the agreement label of :func:`placelab.reproduce.papers.agreement`, judged as the
runner judges it: by the row-normalised ratio when the reproduction has a reference column, else
by ours / paper. A reproduction without a stored run is listed as such. Nothing is recomputed:
the file shows what the runs hold, so it changes only when the runs do.

Findings written by hand (what the tables do not say: a rule judged again, a baseline measured
beside them) live in :data:`FINDINGS`, ``docs/results-findings.md``, beside the output: a file
of short ``##`` sections. The document ends with them, copied under :data:`FINDINGS_HEADING`
with every heading one level down, so that rerunning the command keeps them; without the file the
document has no such part.

Bad input (a run store that does not exist or is not a folder, an output path that cannot be
written, an unknown option) is one ``error:`` line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from engine.errors import PlacelabError, RunError, one_line
from engine.jsonio import atomic_write_text, check_write_target
from engine.store.runs import Run, RunStore
from placelab.reproduce.core import Reproduction
from placelab.reproduce.papers import agreement, lower_is_better, paper_table
from placelab.reproduce.published import graphs_label
from placelab.reproduce.registry import all_reproductions

__all__ = ["FINDINGS", "FINDINGS_HEADING", "findings_sections", "latest_runs", "main", "read_findings",
           "results_markdown", "resumed_versions", "table_rows", "write_results"]

#: Settings in the order their tables are shown: the paper's budgets first.
SETTINGS = ("full", "quick")
_COLUMNS = ("row", "column", "ours", "paper", "ours / paper", "normalised", "agreement", "unit", "note")
#: The hand-written findings file, beside the output (module docstring).
FINDINGS = "results-findings.md"
#: The heading the findings are copied under.
FINDINGS_HEADING = "Findings written by hand"
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")


def latest_runs(runs_dir: str | Path) -> dict[str, dict[str, Run]]:
    """The newest finished ``reproduce`` run of each reproduction and setting: name → setting → run. A run on
    the authors' own graphs (``--graphs-dir``) is a setting of its own, e.g. ``quick, authors' graphs``.

    Raises
    ------
    RunError
        ``runs_dir`` does not exist or is not a folder.
    """
    root = Path(runs_dir)
    if not root.is_dir():
        raise RunError(f"no run store at {runs_dir}: "
                       + ("it is not a folder" if root.exists() else "the folder does not exist"))
    out: dict[str, dict[str, Run]] = {}
    for run in RunStore(root).list(kind="reproduce", status="done"):  # newest first
        params = run.meta.get("parameters", {})
        on = graphs_label(params)
        setting = str(params.get("setting", "?")) + (f", {on}" if on else "")
        out.setdefault(str(run.meta.get("placer", "")), {}).setdefault(setting, run)
    return out


def table_rows(run: Run) -> list[dict[str, Any]]:
    """The run's ``table.csv`` as one dict per cell (columns of ``papers.TABLE_COLUMNS``).

    Raises
    ------
    RunError
        The table is missing or malformed.
    """
    cols = run.read_table("table.csv")
    return [dict(zip(cols, vals, strict=True)) for vals in zip(*cols.values(), strict=True)] if cols else []


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    return float(x) if math.isfinite(x) else None


def _fmt(x: Any, digits: int = 4) -> str:
    """A number for the table: four significant digits, whole numbers of 10,000 or more in full."""
    v = _number(x)
    if v is None:
        return "" if x is None else str(x)
    if abs(v) >= 1e4 and abs(v) < 1e15:
        return f"{v:,.0f}"
    return f"{v:.{digits}g}"


def _with_std(value: Any, std: Any) -> str:
    text = _fmt(value)
    return f"{text} ± {_fmt(std, 3)}" if text and _number(std) is not None else text


def _md(text: str) -> str:
    """One table cell: pipes escaped, on one line."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _label(row: Mapping[str, Any], normalised: bool) -> str:
    note = str(row.get("note") or "")
    return agreement(_number(row.get("rel_ratio" if normalised else "ratio")), "OOM" in note,
                     row.get("paper") == "OOM", _number(row.get("ours")) is not None,
                     lower_is_better(row.get("unit")))


def _table(rows: Sequence[Mapping[str, Any]], normalised: bool, paper: bool = True) -> list[str]:
    """The Markdown table; without ``paper`` (a held-out reproduction: no paper numbers) only row, column, ours,
    unit and note."""
    columns = _COLUMNS if paper else ("row", "column", "ours", "unit", "note")
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        cells = (r.get("row"), r.get("column"), _with_std(r.get("ours"), r.get("ours_std")),
                 *((_with_std(r.get("paper"), r.get("paper_std")), _fmt(r.get("ratio"), 3),
                    _fmt(r.get("rel_ratio"), 3), _label(r, normalised)) if paper else ()),
                 r.get("unit") or "", r.get("note") or "")
        lines.append("| " + " | ".join(_md("" if c is None else c) for c in cells) + " |")
    return lines


def resumed_versions(params: Mapping[str, Any]) -> list[str]:
    """The code version of each part a reproduction run was resumed in (``placelab reproduce --resume``), in
    order; none for a run that went through at once."""
    return [str((r.get("code_version") or {}).get("git") or "unknown") for r in params.get("resumed") or []]


def _took(meta: dict) -> str:
    """The wall time of a run, and for one resumed on which code it went on: its wall time is then that of its
    last part (a stopped part records none)."""
    minutes = f"{float(meta.get('metrics', {}).get('wall_s', 0)) / 60:.1f} min"
    resumed = resumed_versions(meta.get("parameters", {}))
    if not resumed:
        return minutes
    versions = ", ".join(f"`{v}`" for v in resumed)
    times = "once" if len(resumed) == 1 else f"{len(resumed)} times"
    return f"resumed {times} (on {versions}), {minutes} in its last part"


def _run_section(rep: Reproduction, run: Run, runs_dir: str) -> list[str]:
    meta = run.meta
    setting = meta.get("parameters", {}).get("setting", "?")
    m = meta.get("metrics", {})
    version = (meta.get("code_version") or {}).get("git") or "unknown"
    on = graphs_label(meta.get("parameters", {}))
    rerun = (f"placelab reproduce {rep.name}" + (" --quick" if setting == "quick" else "")
             + (" --graphs-dir DIR" if on else ""))
    goal = paper_table(rep.paper, rep.table).get("goal")
    judged = (f"no paper numbers, the goal: {goal}" if goal else
              f"{m.get('cells_within_10pct', 0)} of {m.get('cells_compared', 0)} compared cells within 10 % of the "
              "paper")
    out = [f"### {setting.capitalize()} setting{' on the ' + on if on else ''}: run `{run.id}`", "",
           f"Created {str(meta.get('created', '?'))[:10]} on code version `{version}`, {_took(meta)}; "
           f"{judged}. Rerun: `{rerun}`.", ""]
    try:
        rows = table_rows(run)
    except PlacelabError as exc:
        return [*out, f"The table of this run cannot be read: {one_line(exc)}", ""]
    out += _table(rows, normalised=rep.reference is not None, paper=not goal)
    try:
        notes = run.read_json("commands.json").get("notes", [])
    except (PlacelabError, AttributeError):
        notes = []
    if notes:
        out += ["", *(f"- {_md(n)}" for n in notes)]
    return [*out, ""]


def _in_order(runs: Mapping[str, Run]) -> list[str]:
    """The settings of ``runs``: :data:`SETTINGS` first, then the others (``quick, authors' graphs``) by name."""
    return [s for s in SETTINGS if s in runs] + sorted(set(runs) - set(SETTINGS))


def findings_sections(text: str) -> list[str]:
    """The lines of a findings file from its first ``##`` section on (its title and preamble dropped), every
    heading outside code blocks one level down, so that its sections sit under :data:`FINDINGS_HEADING`."""
    out: list[str] = []
    fenced = started = False
    for line in text.splitlines():
        heading = not fenced and re.match(r"#{2,5} ", line) is not None
        if _FENCE.match(line):
            fenced = not fenced
        started = started or (heading and line.startswith("## "))
        if started:
            out.append("#" + line.rstrip() if heading else line.rstrip())
    return out


def read_findings(path: str | Path) -> str | None:
    """The text of the findings file ``path``; None when there is none.

    Raises
    ------
    PlacelabError
        The file exists but cannot be read as UTF-8 text.
    """
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise PlacelabError(f"cannot read the hand-written findings {path}: {exc}") from None


def results_markdown(runs_dir: str | Path, findings: str | None = None) -> str:
    """The whole document for the run store ``runs_dir`` (see the module docstring), ending with the sections
    of ``findings`` (the text of a findings file) when it has any.

    Raises
    ------
    RunError
        ``runs_dir`` does not exist or is not a folder.
    """
    shown = str(runs_dir)
    stored = latest_runs(runs_dir)
    reps = all_reproductions()
    lines = ["# Reproduction results", "",
             f"Generated by `python -m placelab.reproduce.results_doc --runs-dir {shown}` (`make docs-results`)"
             f" from the stored runs in `{shown}`. Do not edit this file by hand: rerun the command. Findings"
             f" written by hand go in `{FINDINGS}` beside it; the command copies them to the end.", "",
             "Each table is the newest finished run of a reproduction in each setting, as `table.csv` holds"
             " it: ours beside the paper's number, their ratio and, where the reproduction divides each row"
             " by a reference column, the normalised ratio. *agreement* is within 10 % (`agree`), more than"
             " 10 % better than the paper (`better`: a lower time, a higher speedup or correlation), within"
             " 25 % (`close`) or beyond (`differ`), judged on the normalised ratio where there is one; OOM"
             " on both sides agrees. The quick setting's budgets are far below the papers'. How the"
             " reproductions work: `docs/guide/reproducing-papers.md`; measured causes of the differences:"
             " `docs/lab/`.", "",
             "| reproduction | paper, table | stored runs |", "|---|---|---|"]
    for rep in reps.values():
        runs = stored.get(rep.name, {})
        found = ", ".join(f"{s}: `{runs[s].id}`" for s in _in_order(runs)) or "none"
        lines.append(f"| {rep.name} | {_md(paper_table(rep.paper, rep.table)['citation'])} | {found} |")
    lines.append("")
    for rep in reps.values():
        t = paper_table(rep.paper, rep.table)
        lines += [f"## {rep.name}: {_md(rep.title)}", "", f"{t['citation']}. {t['paper']}.", ""]
        runs = stored.get(rep.name, {})
        if not runs:
            lines += [f"No stored run of this reproduction in `{shown}`: `placelab reproduce {rep.name} --quick"
                      f" --runs-dir {shown}` makes one.", ""]
        for setting in _in_order(runs):
            lines += _run_section(rep, runs[setting], shown)
    other = sorted(set(stored) - set(reps))
    if other:
        lines += ["## Stored runs of reproductions this version does not declare", "",
                  *(f"- {_md(name)}: " + ", ".join(f"`{r.id}`" for r in stored[name].values()) for name in other), ""]
    sections = findings_sections(findings or "")
    if sections:
        lines += [f"## {FINDINGS_HEADING}", "",
                  f"Copied from [{FINDINGS}]({FINDINGS}) by the command: edit that file, then rerun it.", "",
                  *sections, ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def write_results(runs_dir: str | Path, out: str | Path) -> str:
    """Write :func:`results_markdown` of ``runs_dir``, with the findings file :data:`FINDINGS` beside ``out``,
    to ``out`` atomically; returns the text.

    Raises
    ------
    PlacelabError
        The run store is missing (``RunError``), ``out`` cannot be written (``WriteError``) or the findings
        file cannot be read; ``out`` is checked before the runs are read.
    """
    check_write_target(out)
    text = results_markdown(runs_dir, read_findings(Path(out).parent / FINDINGS))
    atomic_write_text(out, text)
    return text


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, as every placelab command: no usage block
        _fail(f"{message} (see --help)")


def _fail(message: object) -> NoReturn:
    print(f"error: {one_line(message)}", file=sys.stderr)
    raise SystemExit(2)


def main(argv: Sequence[str] | None = None) -> None:
    """The command line: write the document, or one ``error:`` line and exit status 2."""
    parser = _Parser(prog="python -m placelab.reproduce.results_doc",
                     description="Write every reproduction's current table, from the stored runs, as Markdown.")
    parser.add_argument("--runs-dir", default="runs", help="the run store to read (default: runs)")
    parser.add_argument("-o", "--output", default="docs/results.md",
                        help="the file to write (default: docs/results.md)")
    args = parser.parse_args(argv)
    try:
        write_results(args.runs_dir, args.output)
    except PlacelabError as exc:
        _fail(exc)
    print(f"wrote {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
