"""A report of stored runs as file bytes, PPTX or HTML: the one function behind ``placelab report`` and the
*Report* buttons of the Compare and Papers pages.

The figures are exported as the app's *Export figure* menu exports them (:func:`dashboard.figures.theme.export_bytes`:
white template, presentation fonts, 1600 × 900 px, through kaleido and the system chromium): PNG in a slide deck,
SVG in the HTML page.
"""

from __future__ import annotations

from dashboard.figures.theme import export_bytes
from dashboard.report.html_file import html_bytes
from dashboard.report.pptx_file import pptx_bytes
from dashboard.report.slides import build_deck, report_command
from engine.errors import PlacelabError, SpecError, quote
from engine.store.runs import Run

__all__ = ["REPORT_FORMATS", "report_bytes"]

#: A report's formats, by file suffix, and their MIME types.
REPORT_FORMATS = {"pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
                  "html": "text/html"}
#: The image format of a report's figures, per report format (python-pptx places PNG, not SVG).
IMAGE_FORMATS = {"pptx": "png", "html": "svg"}


def report_bytes(runs: list[Run], fmt: str, *, output: str | None = None) -> bytes:
    """The report of ``runs`` (:mod:`dashboard.report.slides`) as a ``fmt`` file (``pptx`` or ``html``);
    ``output``: the file's name, for the command in its notes (default ``report.FMT``).

    Raises
    ------
    SpecError
        An unknown format, or no runs.
    RunError
        A run the report can show nothing of, or whose files cannot be read.
    PlacelabError
        The figures cannot be drawn (no kaleido or chromium).
    """
    if fmt not in REPORT_FORMATS:
        raise SpecError(f"a report is written as {' or '.join(REPORT_FORMATS)}, not {quote(fmt)}")
    deck = build_deck(runs, command=report_command(runs, output or f"report.{fmt}"))
    image = IMAGE_FORMATS[fmt]
    images = []
    for figure in deck.figures:
        data = export_bytes(figure, image, title="")  # the slide's title says it
        if data is None:
            raise PlacelabError(f"cannot render the report's figures ({image.upper()}): image export needs kaleido "
                                "and the system chromium (make setup browser-deps)")
        images.append(data)
    return pptx_bytes(deck, images) if fmt == "pptx" else html_bytes(deck, images)
