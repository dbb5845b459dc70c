"""A report's slides, made from stored runs: what the Compare and Papers pages show, in the order a talk tells it.

* the title slide: graph, cluster, simulation mode, date, code version; its notes hold the provenance (the
  command that makes the same report, and each run: id, kind, placer, graph, cluster, seed, date, commit);
* placement runs (any run with a makespan, as Compare lists them): the comparison table (makespan, ×single-device,
  ×lower bound, OOM, communication), the makespan bars, the best placement's timeline and its memory, and the
  simulated beside the measured makespan of the runs executed on real devices;
* training runs: their learning curves, and each run's learning-health verdict;
* eval and experiment runs: makespan / lower bound over test graphs (Placeto Fig. 5);
* validate runs: simulated against measured makespan, per simulation mode (DOPPLER App. G.1);
* reproductions: our table beside the paper's, ours / paper, and the reproduction's figures.

Every slide's notes name its runs and the command that draws its figure again (``placelab plot``).
"""

from __future__ import annotations

import datetime
import shlex
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from dashboard.data.fidelity import scatter_series
from dashboard.data.learning import health_row, learning_curve, training_health
from dashboard.data.runs import bar_labels, comparison_row, has_placement, setting_of
from dashboard.data.series import eval_series, experiment_series
from dashboard.figures.fidelity import fidelity_scatter
from dashboard.figures.papers import has_paper_numbers, ratio_figure, reproduction_figure, side_by_side
from dashboard.figures.tables import MISSING, cell_text
from dashboard.report.deck import Deck, Slide, Table
from dashboard.report.run_figures import (
    cdf_of,
    curves_of,
    makespan_figure,
    measured_figure,
    schedule_figure,
    setting_title,
    settings_warning,
)
from engine.errors import RunError, SpecError
from engine.store.meta import code_version
from engine.store.runs import Run, user_runs_dir
from placelab.reproduce.results_doc import table_rows

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = ["COMPARISON_COLUMNS", "TABLE_ROWS", "build_deck", "report_command"]

#: Rows of a table on one slide; a longer table goes on as many slides as it takes.
TABLE_ROWS = 12
#: The comparison table: heading → the key of :func:`~dashboard.data.runs.comparison_row` it shows.
COMPARISON_COLUMNS = {"makespan (ms)": "makespan (ms)", "×single-device": "ratio to single device",
                      "×lower bound": "ratio to lower bound", "OOM": "OOM", "communication (MB)": "communication (MB)"}
#: The learning-health table: heading → the key of :func:`~dashboard.data.learning.health_row` it shows.
HEALTH_COLUMNS = {"run": "run", "verdict": "learning health", "episodes": "episodes",
                  "sampled runtime, last / first": "sampled runtime, last / first",
                  "best found / random search's best": "best found / random search's best"}
#: The side-by-side table of a reproduction: the columns of :func:`~dashboard.figures.papers.side_by_side` shown.
PAPER_COLUMNS = ("row", "column", "ours", "paper", "ours / paper", "agreement", "unit")
#: What a report shows, for the message about a run it cannot show.
REPORTABLE = ("placement runs (a makespan: placelab place --save, compare, execute --save), training runs with a "
              "learning curve, eval and experiment runs, validate runs and reproductions")


def _kind(run: Run) -> str:
    return str(run.meta.get("kind") or "unknown")


def _has_makespan(run: Run) -> bool:
    return (run.meta.get("metrics") or {}).get("makespan_s") is not None


def _ids(runs: list[Run]) -> str:
    return " ".join(r.id for r in runs)


def report_command(runs: list[Run], output: str) -> str:
    """The ``placelab report`` command that makes this report again (``--runs-dir`` where the runs are not in the
    user's store; runs from several stores are named in the notes with their stores)."""
    stores = {str(r.path.parent) for r in runs}
    where = ""
    if len(stores) == 1 and Path(next(iter(stores))).resolve() != Path(user_runs_dir()).resolve():
        where = f" --runs-dir {shlex.quote(next(iter(stores)))}"
    return f"placelab report {_ids(runs)} -o {shlex.quote(output)}{where}"


def _plot(runs: list[Run], figure: str) -> str:
    return f"placelab plot {_ids(runs)} --figure {figure} -o {figure}.png"


def _table_slides(title: str, table: Table, *, lines: tuple[str, ...] = (), notes: str = "") -> list[Slide]:
    """``table`` on as many slides as its rows take (:data:`TABLE_ROWS` each), ``(2/3)`` after the title."""
    parts = [table.rows[i:i + TABLE_ROWS] for i in range(0, len(table.rows), TABLE_ROWS)] or [()]
    return [Slide(title if len(parts) == 1 else f"{title} ({k}/{len(parts)})", lines if k == 1 else (),
                  Table(table.columns, rows), notes=notes) for k, rows in enumerate(parts, start=1)]


def _figure_slide(heading: str, figure: go.Figure, notes: str, lines: tuple[str, ...] = ()) -> Slide:
    """A figure under ``heading: its own title`` (the image leaves the title out: the slide says it)."""
    own = figure.layout.title.text
    return Slide(f"{heading}: {own}" if own and heading else (own or heading), lines, figure=figure, notes=notes)


def _best(runs: list[Run]) -> Run | None:
    """The placement run with a stored placement and the lowest makespan, one that fits memory before any other."""
    placed = [r for r in runs if has_placement(r)]
    if not placed:
        return None
    return min(placed, key=lambda r: (bool(r.meta["metrics"].get("oom")), float(r.meta["metrics"]["makespan_s"])))


def _placement_slides(runs: list[Run]) -> list[Slide]:
    labels = bar_labels(runs)
    rows = tuple((label, *(cell_text(row.get(key), MISSING) for key in COMPARISON_COLUMNS.values()))
                 for label, row in zip(labels, map(comparison_row, runs), strict=True))
    warning = settings_warning(runs)
    notes = ("The numbers each run stored (run.json, metrics): makespan_s, ratio_to_single_device, "
             "ratio_to_lower_bound, oom, communication_bytes; a ratio to single-device that a run did not store is "
             "the single-device placer simulated on the run's own graph and cluster.\n"
             + "\n".join(f"{label}: run {r.id} (placelab runs show {r.id})" for label, r in zip(labels, runs,
                                                                                                 strict=True)))
    slides = _table_slides(f"Comparison on {setting_title(runs)}", Table(("run", *COMPARISON_COLUMNS), rows),
                           lines=(f"Not comparable: {warning}.",) if warning else (), notes=notes)
    slides.append(_figure_slide("", makespan_figure(runs), f"{_plot(runs, 'bars')}\nRuns: {_ids(runs)}"))
    best = _best(runs)
    if best is not None:
        label = labels[runs.index(best)]
        why = f"the lowest makespan of the {len(runs)} runs" + (
            " that fit in memory" if any(r.meta["metrics"].get("oom") for r in runs) else "")
        for figure in ("timeline", "memory"):
            notes = (f"Best placement: {label}, run {best.id} ({why}), replayed from its graph, cluster and "
                     f"placement.\n{_plot([best], figure)}\nplacelab runs export-trace {best.id} -o trace.json "
                     "(Perfetto opens it)")
            slides.append(_figure_slide(f"Best placement ({label})", schedule_figure(figure, best), notes))
    executed = [r for r in runs if (r.meta.get("metrics") or {}).get("measured_makespan_s") is not None]
    if executed:
        slides.append(_figure_slide("", measured_figure(executed), "Measured: mean ± std over the repeats of each "
                                    "run executed on real devices (--execute); simulated: the same scaled graph.\n"
                                    f"Runs: {_ids(executed)}"))
    return slides


def _training_slides(runs: list[Run]) -> list[Slide]:
    healths = [training_health(r) for r in runs]
    verdicts = tuple(f"{r.meta.get('name') or r.id}: {h.label if h is not None else 'no verdict (still training)'}"
                     for r, h in zip(runs, healths, strict=True))
    slides = [_figure_slide("", curves_of(runs), f"{_plot(runs, 'curves')}\nVerdicts: " + "; ".join(verdicts),
                            lines=verdicts if len(verdicts) <= 3 else ())]
    rows = tuple(tuple(cell_text(health_row(r, h).get(key), MISSING) for key in HEALTH_COLUMNS.values())
                 for r, h in zip(runs, healths, strict=True))
    notes = ("Learning health (policies/rl/core/health.py): entropy and sampled runtime, first vs last window; the "
             "best placement found vs the best of as many uniformly random placements on the same simulator. "
             "Each verdict is the one the run stored, or computed from its stored learning curve.\n"
             f"Runs: {_ids(runs)}")
    return [*slides, *_table_slides("Learning health", Table(tuple(HEALTH_COLUMNS), rows), notes=notes)]


def _fidelity_slide(run: Run) -> Slide:
    table = run.read_table("fidelity.csv")
    figure = fidelity_scatter(table["measured_mean_s"], scatter_series(table), sources=table["source"],
                              title=f"Simulated vs measured makespan ({run.meta.get('name') or run.id})")
    return _figure_slide("Fidelity", figure, f"Validate run {run.id} on {run.meta.get('cluster')}: placements "
                         "executed on this machine's devices and simulated in each mode (the Fidelity page shows "
                         "its statistics).")


def _reproduction_slides(run: Run) -> list[Slide]:
    params = run.meta.get("parameters") or {}
    rows = table_rows(run)
    normalised = any(r.get("rel_ratio") not in (None, "") for r in rows)
    paper = has_paper_numbers(rows)  # none: a held-out reproduction, ours alone
    shown = side_by_side(rows, normalised, paper=paper)
    commands = run.read_json("commands.json") if "commands.json" in run.files() else {}
    rerun = f"placelab reproduce {run.meta.get('placer')}" + (" --quick" if params.get("setting") == "quick" else "")
    notes = (f"Reproduction run {run.id} ({params.get('setting', '?')} setting): {params.get('citation', '')}\n"
             f"Rerun: {rerun}\nIts commands:\n" + "\n".join(s["command"] for s in commands.get("steps", [])))
    name = str(run.meta.get("placer"))
    columns = PAPER_COLUMNS if paper else tuple(c for c in PAPER_COLUMNS if c in ("row", "column", "ours", "unit"))
    table = Table(columns, tuple(tuple(r[c] for c in columns) for r in shown))
    slides = _table_slides(f"{name}: ours beside the paper" if paper else f"{name}: ours (no paper numbers)", table,
                           lines=(str(params.get("paper") or ""),), notes=notes)
    if paper:
        slides.append(_figure_slide(name, ratio_figure(rows, normalised=normalised), notes))
    for file in (f for f in run.files() if f.startswith("figures/") and f.endswith(".json")):
        try:
            figure = reproduction_figure(run.read_json(file))
        except ValueError as exc:
            raise RunError(f"run {run.id}: {file}: {exc}") from None
        slides.append(_figure_slide(name, figure, f"Run {run.id}, {file}"))
    return slides


def _sorted(runs: list[Run]) -> dict[str, list[Run]]:
    """The runs by what the report shows of them; a run it can show nothing of is one error naming it."""
    parts: dict[str, list[Run]] = {"placement": [], "train": [], "tested": [], "validate": [], "reproduce": []}
    for r in runs:
        kind = _kind(r)
        if _has_makespan(r):
            parts["placement"].append(r)
        if kind == "train" and learning_curve(r) is not None:
            parts["train"].append(r)
        elif kind in ("eval", "experiment") and (eval_series(r) or experiment_series(r)):
            parts["tested"].append(r)
        elif kind == "validate" and "fidelity.csv" in r.files():
            parts["validate"].append(r)
        elif kind == "reproduce" and "table.csv" in r.files():
            parts["reproduce"].append(r)
        elif not _has_makespan(r):
            raise RunError(f"run {r.id} ({kind}, {r.status}) has nothing a report shows: it shows {REPORTABLE}")
    return parts


def _title(runs: list[Run], parts: dict[str, list[Run]]) -> str:
    if len(parts["reproduce"]) == len(runs):
        return "; ".join(dict.fromkeys(str(r.meta.get("placer")) for r in runs)) + ": a reproduction"
    graphs = {setting_of(r)[0].split(" [")[0] for r in runs}  # by name: the hashes are on the line below
    clusters = {setting_of(r)[1] for r in runs}
    if len(graphs) == len(clusters) == 1:
        return f"{next(iter(graphs))} on {next(iter(clusters))}"
    return (f"{len(runs)} runs on {len(graphs)} graph{'s' if len(graphs) > 1 else ''} and {len(clusters)} "
            f"cluster{'s' if len(clusters) > 1 else ''}")


def _listed(values) -> str:
    """Distinct values, in order, comma-separated (a dash for none)."""
    values = list(dict.fromkeys(str(v) for v in values if v not in (None, "")))
    return ", ".join(values) or MISSING


def _title_lines(runs: list[Run], parts: dict[str, list[Run]]) -> tuple[str, ...]:
    """Graph, cluster and simulation mode (a reproduction's paper, table and setting), the runs, the date, the code
    versions."""
    if len(parts["reproduce"]) == len(runs):
        params = [r.meta.get("parameters") or {} for r in runs]
        setting = (f"paper: {_listed(p.get('paper') for p in params)}",
                   f"table: {_listed(p.get('citation') for p in params)}",
                   f"setting: {_listed(p.get('setting') for p in params)}")
    else:
        setting = (f"graph: {_listed(setting_of(r)[0] for r in runs)}",
                   f"cluster: {_listed(r.meta.get('cluster') for r in runs)}",
                   f"simulation mode: {_listed((r.meta.get('metrics') or {}).get('mode') for r in runs)}")
    kinds = Counter(_kind(r) for r in runs)
    days = sorted(str(r.meta.get("created") or "")[:10] for r in runs)
    made = "" if not days[0] else f", made {days[0]}" + (f" to {days[-1]}" if days[-1] != days[0] else "")
    mine = code_version()
    this = f"placelab {mine['placelab']}" + (f", git {mine['git']}" if mine.get("git") else "")
    return (*setting,
            f"runs: {len(runs)} (" + ", ".join(f"{n} {k}" for k, n in kinds.items()) + f"){made}",
            f"date: {datetime.date.today().isoformat()}",
            f"code version: runs made with {_listed((r.meta.get('code_version') or {}).get('git') for r in runs)}; "
            f"this report with {this}")


def _provenance(runs: list[Run], command: str) -> str:
    stores = {str(r.path.parent) for r in runs}
    lines = [f"Made with: {command}", "Runs (id · kind · placer · graph · cluster · seed · created · commit):"]
    for r in runs:
        m = r.meta
        where = f" · in {r.path.parent}" if len(stores) > 1 else ""
        lines.append(" · ".join(str(v) for v in (r.id, _kind(r), m.get("placer") or MISSING, setting_of(r)[0],
                                                 m.get("cluster") or MISSING, m.get("seed"),
                                                 m.get("created") or MISSING,
                                                 (m.get("code_version") or {}).get("git") or MISSING)) + where)
    return "\n".join(lines)


def build_deck(runs: list[Run], *, command: str) -> Deck:
    """The report of ``runs`` (see the module's docstring); ``command`` is the one that makes it, for its notes.

    Raises
    ------
    SpecError
        No runs.
    RunError
        A run the report can show nothing of (a sweep, a training without a curve), or one whose files cannot be
        read.
    """
    if not runs:
        raise SpecError("a report needs at least one run")
    parts = _sorted(runs)
    slides = _placement_slides(parts["placement"]) if parts["placement"] else []
    if parts["train"]:
        slides += _training_slides(parts["train"])
    if parts["tested"]:
        slides.append(_figure_slide("", cdf_of(parts["tested"]), _plot(parts["tested"], "cdf")))
    slides += [_fidelity_slide(r) for r in parts["validate"]]
    for r in parts["reproduce"]:
        slides += _reproduction_slides(r)
    return Deck(_title(runs, parts), _title_lines(runs, parts), _provenance(runs, command), tuple(slides))
