"""``placelab reproduce``: the papers' tables and figures, one command each (CONTRACTS §5, §7)."""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Annotated

import typer

from engine.errors import SpecError
from placelab.cli_common import USER_RUNS_DIR, JsonOpt, RunsDirOpt, emit, text_table

if TYPE_CHECKING:  # the runner is imported where it runs: it loads every placer (issue #57, item 4)
    from placelab.reproduce.runner import CommandRunner

__all__ = ["register"]


def _cell(x: object, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{x:.{digits}g}" if isinstance(x, float) else str(x)


def reproduce(ctx: typer.Context,
              name: Annotated[str | None, typer.Argument(help="reproduction (see --list)")] = None,
              list_: Annotated[bool, typer.Option("--list", help="list the reproductions")] = False,
              quick: Annotated[bool, typer.Option(help="small budgets: minutes on a 2-core machine")] = False,
              workers: Annotated[int | None, typer.Option(help="run the steps on N parallel workers (Ray)")] = None,
              keep_step_runs: Annotated[bool, typer.Option(
                  help="keep the runs of the underlying commands in the run store (else a scratch store)")] = True,
              only: Annotated[str | None, typer.Option(
                  help="run only the steps whose key contains one of these comma-separated texts, "
                       "e.g. 'NMT / 2 GPUs,cpu/NMT'")] = None,
              graphs_dir: Annotated[str | None, typer.Option(
                  "--graphs-dir", help="run on the graphs the paper's authors published, found in this folder by "
                                       "their file names (DOPPLER: the compute_graph/ folder of a clone of "
                                       "github.com/xinyuyao/Doppler); a row whose file is missing runs on ours, "
                                       "marked")] = None,
              resume: Annotated[str | None, typer.Option(
                  "--resume", help="go on with this stopped reproduction run (id or prefix) in the same run, with the "
                                   "options it started with: the steps it finished are not run again")] = None,
              search: Annotated[int | None, typer.Option(
                  "--search", help="add the search reference as a column: anneal with this many evaluations (seed 0) "
                                   "on each row's graph, and each cell ÷ it (×search)")] = None,
              runs_dir: RunsDirOpt = USER_RUNS_DIR, as_json: JsonOpt = False) -> None:
    """Run a paper's table or figure in simulation and store it beside the paper's numbers."""
    from placelab.reproduce.registry import all_reproductions
    from placelab.reproduce.runner import describe
    from placelab.reproduce.runner import reproduce as run_reproduction

    if list_:
        items = [describe(r) for r in all_reproductions().values()]
        rows = [[d["name"], f"{d['quick_minutes']:g} min" if d["ready"] else "needs " + ", ".join(d["missing"]),
                 d["title"]] for d in items]
        emit({"reproductions": items}, as_json, text_table(rows, ["name", "--quick", "what"])
             + f"\n(--quick: expected minutes on an idle 2-core machine, from the runs' CPU time; other jobs on the "
               f"machine stretch them; this one has {os.cpu_count()} cores)")
        return
    if not name:
        raise SpecError("reproduce needs a NAME (see `placelab reproduce --list`)")
    if workers is not None and workers < 1:
        raise SpecError(f"--workers must be at least 1, got {workers}")
    # the runner says "reproducing NAME (...)" once its checks pass: a refused NAME prints its error only
    res = run_reproduction(name, command=ctx.obj, quick=quick, runs_dir=runs_dir, workers=workers,
                           keep_step_runs=keep_step_runs, only=only, progress=lambda msg: typer.echo(msg, err=True),
                           graphs_dir=graphs_dir, resume=resume, search=search)
    x = ["×search"] if search is not None else []
    # a held-out reproduction (heldout-learning) has no paper numbers: no paper columns
    paper = any(r["paper"] is not None for r in res["table"])
    rows = [[r["row"], r["column"], _cell(r["ours"]),
             *((_cell(r["paper"]), _cell(r["ratio"], 2), _cell(r["rel_ratio"], 2)) if paper else ()),
             *(_cell(r["x_search"], 3) for _ in x), r["note"][:60]] for r in res["table"]]
    head = ["paper", "ours/paper", "normalised"] if paper else []
    text = (text_table(rows, ["row", "column", "ours", *head, *x, "note"])
            + "".join(f"\n{n}" for n in res["notes"])
            + f"\n{res['setting']} setting, {res['wall_s']:.0f} s; saved as run {res['run_id']}")
    emit(res, as_json, text)


def register(app: typer.Typer, run_command: CommandRunner) -> None:
    """Add ``reproduce`` to the ``placelab`` app; its steps run through ``run_command`` (``placelab ARGV``
    in this process), handed to the command as its context object: the whole CLI sits above this module."""
    app.command(context_settings={"obj": run_command})(reproduce)
