"""A report as data: slides with a title, lines of text, a table or a figure, and speaker notes. The slides are
made from runs by :mod:`dashboard.report.slides` and written as PPTX or HTML by :mod:`dashboard.report.pptx_file`
and :mod:`dashboard.report.html_file`; a figure becomes an image once, when it is written."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = ["Deck", "Slide", "Table"]


@dataclass(frozen=True)
class Table:
    """A table as a slide shows it: column headings and rows of cells already written as text."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Slide:
    """One slide: ``lines`` of text (the title slide's facts, a warning, a verdict), then a table or a figure;
    ``notes`` are the speaker notes (provenance: the runs and the commands that give the same numbers)."""

    title: str
    lines: tuple[str, ...] = ()
    table: Table | None = None
    figure: go.Figure | None = None
    notes: str = ""


@dataclass(frozen=True)
class Deck:
    """A report: the title slide's ``title`` and ``lines`` and ``notes``, then ``slides``."""

    title: str
    lines: tuple[str, ...]
    notes: str
    slides: tuple[Slide, ...] = field(default_factory=tuple)

    @property
    def figures(self) -> list[go.Figure]:
        """The figures of the slides, in order (each is drawn as one image)."""
        return [s.figure for s in self.slides if s.figure is not None]
