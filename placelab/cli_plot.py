"""``placelab plot``: a figure of the app, from stored runs, written to a file at slide size (issue #57, item 2).

The figure is the app's own, drawn by the same pure functions (:mod:`dashboard.report.run_figures`, no Streamlit)
from the runs as the app reads them (:mod:`dashboard.data`), and exported as the app's *Export figure* menu exports it
(:func:`dashboard.figures.theme.export_bytes`: white template, presentation fonts, 1600 × 900 px, PNG/SVG/PDF
through kaleido and the system chromium, or a standalone HTML page). The placement graph is the app's vis-network
page (its HTML download); as a PNG it is that page as headless chromium paints it.

This and ``placelab report`` (:mod:`placelab.cli_report`) are the CLI modules that import the app's modules
(pyproject's import-linter contract names them), inside the command, so no other command pays for plotly.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from engine.errors import PlacelabError, RunError, SpecError, quote
from engine.jsonio import atomic_write_bytes, check_write_target
from engine.store.runs import RunStore
from placelab.cli_common import USER_RUNS_DIR, JsonOpt, RunsDirOpt, emit, load_runs

if TYPE_CHECKING:
    from engine.store.runs import Run

__all__ = ["FIGURES", "FORMATS", "register"]

#: The export menu's size and font (:data:`dashboard.figures.theme.EXPORT_DEFAULTS`, held equal by a test):
#: written out here so that ``placelab --help`` does not import plotly.
WIDTH, HEIGHT, FONT_SIZE = 1600, 900, 22
#: Output formats, by the suffix of ``-o``.
FORMATS = ("png", "svg", "pdf", "html")
#: Seconds headless chromium may take to paint the placement page (vis-network draws once, physics off).
PAINT_BUDGET_MS = 5000
#: Height (px) of the placement page's legend above its canvas, left out of the canvas so the page fits the frame.
LEGEND_PX = 60


@dataclass(frozen=True)
class Figure:
    """What a ``--figure`` draws, from which runs."""

    help: str
    needs: str  # "placement": one run with its graph, cluster and placement; else the run kinds it reads
    formats: tuple[str, ...] = FORMATS


FIGURES = {
    "timeline": Figure("a placement run's schedule: a compute and a memcpy lane per device", "placement"),
    "load": Figure("a placement run's compute per device by phase, and memcpy", "placement"),
    "memory": Figure("a placement run's memory in use per device over time", "placement"),
    "placement": Figure("a placement run's graph coloured by device (the app's vis-network page)", "placement",
                        ("png", "html")),
    "bars": Figure("makespan per placement run with its lower bound (the Compare page's bars)", "makespan"),
    "cdf": Figure("makespan / lower bound over test graphs, per eval run or experiment method (Placeto Fig. 5)",
                  "eval,experiment"),
    "curves": Figure("learning curves of training runs; runs that differ only in their seed as a mean and a band",
                     "train"),
}
_HELP = ("Write a figure of the app for stored runs, at slide size with the app's export settings (PNG, SVG, PDF "
         "or HTML by the suffix of -o).\n\n" + "\n\n".join(f"{name}: {f.help}" for name, f in FIGURES.items()))


def _output_format(output: str) -> str:
    suffix = Path(output).suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        raise SpecError(f"-o {quote(output)}: the file name must end in .png, .svg, .pdf or .html (the format)")
    return suffix


def _kind(run: Run) -> str:
    return str(run.meta.get("kind") or "unknown")


def _check_runs(figure: str, runs: list[Run]) -> None:
    """One sentence, naming the run, for a run that ``figure`` cannot draw (checked before any drawing)."""
    from dashboard.data.runs import has_placement

    needs = FIGURES[figure].needs
    if needs == "placement":
        if len(runs) > 1:
            raise SpecError(f"--figure {figure} draws one run, {len(runs)} were given (--figure bars compares runs)")
        if not has_placement(runs[0]):
            raise RunError(f"run {runs[0].id} ({_kind(runs[0])}) has no placement to draw: --figure {figure} needs a "
                           "run stored with its graph, cluster and placement (placelab place --save, compare, train)")
        return
    for run in runs:
        if needs == "makespan" and (run.meta.get("metrics") or {}).get("makespan_s") is None:
            hint = " (a training run's figure is --figure curves)" if _kind(run) == "train" else ""
            raise RunError(f"run {run.id} ({_kind(run)}, {run.status}) has no makespan: --figure bars draws placement "
                           f"runs (placelab place --save, compare){hint}")
        if needs != "makespan" and _kind(run) not in needs.split(","):
            wanted = {"train": "training runs (placelab train --save)",
                      "eval,experiment": "eval and experiment runs (placelab eval --save, placelab experiment)"}[needs]
            raise RunError(f"run {run.id} is a {_kind(run)} run: --figure {figure} draws {wanted}")


def _placement_page(run: Run, height: int) -> str:
    from dashboard.data.runs import replay
    from dashboard.figures.graph_view import placement_graph_html

    pr, _ = replay(run)
    return placement_graph_html(pr.graph, pr.placement.devices, color_by="device",
                                device_names=[d.name for d in pr.cluster.devices],
                                height_px=max(height - LEGEND_PX, 100))


def _screenshot(page: str, width: int, height: int) -> bytes:
    """``page`` as headless chromium paints it in a ``width`` × ``height`` window, as PNG bytes."""
    from dashboard.figures.theme import SYSTEM_CHROMIUM

    chromium = os.environ.get("BROWSER_PATH") or str(SYSTEM_CHROMIUM)
    with tempfile.TemporaryDirectory(prefix="placelab-plot-") as tmp:
        html, png = Path(tmp) / "page.html", Path(tmp) / "page.png"
        html.write_text(page, encoding="utf-8")
        try:  # a profile of its own: never the user's, nor another headless chromium's
            done = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                   f"--user-data-dir={Path(tmp) / 'profile'}", f"--window-size={width},{height}",
                                   f"--virtual-time-budget={PAINT_BUDGET_MS}", f"--screenshot={png}", html.as_uri()],
                                  capture_output=True, timeout=120, check=False)
        except (OSError, subprocess.TimeoutExpired):
            raise PlacelabError(f"cannot render PNG: the placement page needs chromium ({chromium}, make setup "
                                "browser-deps); write .html instead") from None
        if not png.is_file():
            raise PlacelabError(f"cannot render PNG: chromium ({chromium}) painted no picture of the placement page "
                                f"(exit {done.returncode}); write .html instead")
        return png.read_bytes()


def _export(figure: str, runs: list[Run], fmt: str, title: str | None, width: int, height: int,
            font_size: int) -> bytes:
    if figure == "placement":
        page = _placement_page(runs[0], height)
        return page.encode("utf-8") if fmt == "html" else _screenshot(page, width, height)
    from dashboard.figures.theme import export_bytes
    from dashboard.report.run_figures import run_figure, settings_warning

    warning = settings_warning(runs) if figure == "bars" else None
    if warning:
        typer.echo(f"warning: {warning}", err=True)
    data = export_bytes(run_figure(figure, runs), fmt, title=title, width=width, height=height,
                        font_size=font_size)
    if data is None:
        raise PlacelabError(f"cannot render {fmt.upper()}: image export needs kaleido and the system chromium "
                            "(make setup browser-deps); write .html instead")
    return data


def plot(output: Annotated[str, typer.Option("--output", "-o", help="file to write: .png, .svg, .pdf or .html")],
         runs: Annotated[list[str] | None, typer.Argument(help="run ids (or unique prefixes) in the run store")]
         = None,
         last: Annotated[int | None, typer.Option(
             min=1, help="draw the newest N runs of the store instead of naming them (after compare: its placers)")]
         = None,
         figure: Annotated[str | None, typer.Option(
             help=f"{' | '.join(FIGURES)} (default: timeline for one run, bars for several)")] = None,
         title: Annotated[str | None, typer.Option(help="the figure's title (default: the app's)")] = None,
         width: Annotated[int, typer.Option(min=300, max=4000, help="pixels")] = WIDTH,
         height: Annotated[int, typer.Option(min=200, max=3000, help="pixels")] = HEIGHT,
         font_size: Annotated[int, typer.Option(min=8, max=48, help="base font size")] = FONT_SIZE,
         runs_dir: RunsDirOpt = USER_RUNS_DIR, as_json: JsonOpt = False) -> None:
    """The figure (``_HELP``) of ``runs`` written to ``output``."""
    fmt = _output_format(output)
    refs = runs or []
    count = last if last is not None else len(refs)
    name = figure if figure is not None else ("timeline" if count == 1 else "bars")
    if name not in FIGURES:
        raise SpecError(f"--figure {quote(name)} is not a figure (figures: {', '.join(FIGURES)})")
    if fmt not in FIGURES[name].formats:
        raise SpecError(f"--figure {name} is written as {' or '.join(f'.{f}' for f in FIGURES[name].formats)}, "
                        f"not .{fmt}")
    if name == "placement" and title is not None:
        raise SpecError("--title is for the plotly figures: the placement page has no title")
    target = check_write_target(output)
    chosen = load_runs(RunStore(runs_dir), refs, last, "draw")
    _check_runs(name, chosen)
    data = _export(name, chosen, fmt, title, width, height, font_size)
    atomic_write_bytes(target, data)
    info: dict[str, Any] = {"output": os.fspath(output), "figure": name, "format": fmt,
                            "runs": [r.id for r in chosen], "bytes": len(data)}
    if fmt != "html" or name != "placement":
        info.update(width=width, height=height)
    size = f", {width} × {height} px" if "width" in info else ""
    emit(info, as_json, f"wrote {output}: {name} of {', '.join(info['runs'])} ({fmt.upper()}{size})")


def register(app: typer.Typer) -> None:
    """Add ``plot`` to the ``placelab`` app."""
    app.command(help=_HELP)(plot)
