"""``placelab report``: stored runs as a slide deck (PPTX) or one self-contained HTML page (issue #58, item 1).

The report is the one the app's *Report* buttons give (:func:`dashboard.report.export.report_bytes`): a title slide,
the comparison table, the makespan bars, the best placement's timeline and memory, learning curves with their
verdicts, fidelity, reproductions beside their papers; provenance in the notes.

Like ``placelab plot`` (:mod:`placelab.cli_plot`) this module imports the app's modules (pyproject's import-linter
contract names it), inside the command, so no other command pays for plotly.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Annotated

import typer

from engine.errors import SpecError, quote
from engine.jsonio import atomic_write_bytes, check_write_target
from engine.store.runs import RunStore
from placelab.cli_common import USER_RUNS_DIR, JsonOpt, RunsDirOpt, emit, load_runs

__all__ = ["FORMATS", "register"]

#: Output formats, by the suffix of ``-o`` (:data:`dashboard.report.export.REPORT_FORMATS`, held equal by a test).
FORMATS = ("pptx", "html")
_HELP = ("Write a report of stored runs: a slide deck (.pptx) or one self-contained HTML page (.html), by the suffix "
         "of -o. A title slide (graph, cluster, simulation mode, date, code version); for placement runs the "
         "comparison table (makespan, ×single-device, ×lower bound, OOM, communication), the makespan bars, the best "
         "placement's timeline and memory, simulated beside measured makespan for executed runs; learning curves and "
         "verdicts of training runs; CDFs of eval and experiment runs; fidelity of validate runs; a reproduction "
         "beside its paper. Every slide's notes name its runs and the command that draws it again.")


def _output_format(output: str) -> str:
    suffix = Path(output).suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        raise SpecError(f"-o {quote(output)}: the file name must end in .pptx or .html (the format)")
    return suffix


def report(output: Annotated[str, typer.Option("--output", "-o", help="file to write: .pptx or .html")],
           runs: Annotated[list[str] | None, typer.Argument(help="run ids (or unique prefixes) in the run store")]
           = None,
           last: Annotated[int | None, typer.Option(
               min=1, help="report on the newest N runs of the store instead of naming them (after compare: its "
                           "placers)")] = None,
           runs_dir: RunsDirOpt = USER_RUNS_DIR, as_json: JsonOpt = False) -> None:
    """The report (``_HELP``) of ``runs`` written to ``output``."""
    fmt = _output_format(output)
    target = check_write_target(output)
    chosen = load_runs(RunStore(runs_dir), runs or [], last, "report on")
    from dashboard.report.run_figures import settings_warning

    warning = settings_warning([r for r in chosen if (r.meta.get("metrics") or {}).get("makespan_s") is not None])
    if warning:
        typer.echo(f"warning: {warning}", err=True)
    from dashboard.report.export import report_bytes

    start = time.perf_counter()
    data = report_bytes(chosen, fmt, output=os.path.basename(output))
    atomic_write_bytes(target, data)
    info = {"output": os.fspath(output), "format": fmt, "runs": [r.id for r in chosen], "bytes": len(data),
            "seconds": round(time.perf_counter() - start, 2)}
    emit(info, as_json, f"wrote {output}: a report of {len(chosen)} run{'s' if len(chosen) > 1 else ''} "
                        f"({fmt.upper()}, {len(data):,} bytes, {info['seconds']} s)")


def register(app: typer.Typer) -> None:
    """Add ``report`` to the ``placelab`` app."""
    app.command(help=_HELP)(report)
