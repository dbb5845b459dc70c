"""A report as a PowerPoint file (python-pptx): 16:9 slides, a title slide, then per slide its title, its lines,
and a native table (editable, numbers as text) or its figure as a 1600 × 900 PNG; notes as speaker notes."""

from __future__ import annotations

import io
from collections.abc import Sequence

from pptx import Presentation
from pptx.util import Emu, Inches, Pt

from dashboard.report.deck import Deck, Slide, Table

__all__ = ["pptx_bytes"]

#: 16:9, PowerPoint's widescreen size.
WIDTH, HEIGHT = Inches(13.333), Inches(7.5)
MARGIN = Inches(0.5)
TITLE_HEIGHT = Inches(0.9)
LINE_HEIGHT = Inches(0.4)
ROW_HEIGHT = Inches(0.42)
#: python-pptx's default template: its layouts "Title Slide" and "Title Only".
TITLE_LAYOUT, TITLE_ONLY_LAYOUT = 0, 5


def _place_title(shape, top: int, height: int, size: int) -> None:
    """The default template places its titles for a 4:3 slide: across the 16:9 one here."""
    shape.left, shape.top, shape.width, shape.height = MARGIN, top, WIDTH - 2 * MARGIN, height
    for paragraph in shape.text_frame.paragraphs:
        for run in paragraph.runs:
            run.font.size = Pt(size)


def _lines(slide, lines: Sequence[str], top: int) -> int:
    """``lines`` in a text box from ``top``; returns where the box ends."""
    if not lines:
        return top
    height = LINE_HEIGHT * len(lines)
    frame = slide.shapes.add_textbox(MARGIN, top, WIDTH - 2 * MARGIN, height).text_frame
    frame.word_wrap = True
    for i, line in enumerate(lines):
        paragraph = frame.paragraphs[0] if i == 0 else frame.add_paragraph()
        paragraph.text = line
        paragraph.font.size = Pt(16)
    return top + height


def _table(slide, table: Table, top: int) -> None:
    rows, cols = len(table.rows) + 1, len(table.columns)
    shape = slide.shapes.add_table(rows, cols, MARGIN, top, WIDTH - 2 * MARGIN, ROW_HEIGHT * rows)
    for j, heading in enumerate(table.columns):
        shape.table.cell(0, j).text = heading
    for i, row in enumerate(table.rows, start=1):
        for j, value in enumerate(row):
            shape.table.cell(i, j).text = value
    for cell in (shape.table.cell(i, j) for i in range(rows) for j in range(cols)):
        for paragraph in cell.text_frame.paragraphs:
            paragraph.font.size = Pt(14)


def _picture(slide, png: bytes, top: int) -> None:
    """The figure as large as fits under ``top``, centred, in its own 16:9 proportions."""
    height = HEIGHT - top - Inches(0.2)
    width = min(WIDTH - 2 * MARGIN, Emu(int(height * 16 / 9)))
    height = Emu(int(width * 9 / 16))
    slide.shapes.add_picture(io.BytesIO(png), Emu(int((WIDTH - width) / 2)), top, width, height)


def _slide(prs, slide: Slide, png: bytes | None) -> None:
    page = prs.slides.add_slide(prs.slide_layouts[TITLE_ONLY_LAYOUT])
    page.shapes.title.text = slide.title
    _place_title(page.shapes.title, Inches(0.2), TITLE_HEIGHT, 28)
    top = _lines(page, slide.lines, Inches(0.2) + TITLE_HEIGHT)
    if slide.table is not None:
        _table(page, slide.table, top + Inches(0.1))
    if png is not None:
        _picture(page, png, top)
    page.notes_slide.notes_text_frame.text = slide.notes


def pptx_bytes(deck: Deck, pngs: Sequence[bytes]) -> bytes:
    """``deck`` as a .pptx file; ``pngs``: the images of ``deck.figures``, in order."""
    if len(pngs) != len(deck.figures):
        raise ValueError(f"{len(deck.figures)} figures, {len(pngs)} images")
    prs = Presentation()
    prs.slide_width, prs.slide_height = WIDTH, HEIGHT
    first = prs.slides.add_slide(prs.slide_layouts[TITLE_LAYOUT])
    first.shapes.title.text = deck.title
    _place_title(first.shapes.title, Inches(1.6), Inches(1.5), 40)
    subtitle = first.placeholders[1]
    subtitle.text = "\n".join(deck.lines)
    _place_title(subtitle, Inches(3.3), Inches(3.6), 18)
    first.notes_slide.notes_text_frame.text = deck.notes
    images = iter(pngs)
    for slide in deck.slides:
        _slide(prs, slide, next(images) if slide.figure is not None else None)
    out = io.BytesIO()
    prs.save(out)
    return out.getvalue()
