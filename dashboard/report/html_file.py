"""A report as one self-contained HTML page: a section per slide, figures as SVG images inside the page (data
URIs), tables as HTML tables, notes folded under each section. No script, no style sheet, font or image from
elsewhere: the file opens the same offline, and prints one slide a page."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from html import escape

from dashboard.report.deck import Deck, Slide, Table

__all__ = ["html_bytes"]

STYLE = """
body { font-family: system-ui, sans-serif; margin: 0 auto; max-width: 1280px; padding: 1rem 2rem; color: #111; }
section { border-bottom: 1px solid #ccc; padding: 1rem 0 2rem; break-after: page; }
section.title { padding: 4rem 0; }
h1 { font-size: 2.4rem; } h2 { font-size: 1.6rem; }
ul.lines { list-style: none; padding: 0; font-size: 1.1rem; line-height: 1.6; }
p.line { font-size: 1.05rem; }
img { width: 100%; height: auto; }
table { border-collapse: collapse; font-size: 1rem; }
th, td { border: 1px solid #bbb; padding: 0.3rem 0.7rem; }
td { text-align: right; } td:first-child { text-align: left; }
details.notes pre { white-space: pre-wrap; font-size: 0.9rem; background: #f4f4f4; padding: 0.7rem; }
"""


def _notes(notes: str) -> str:
    if not notes:
        return ""
    return f'<details class="notes"><summary>Notes</summary><pre>{escape(notes)}</pre></details>'


def _table(table: Table) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in table.columns)
    body = "".join("<tr>" + "".join(f"<td>{escape(v)}</td>" for v in row) + "</tr>" for row in table.rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _section(slide: Slide, svg: bytes | None) -> str:
    parts = [f"<h2>{escape(slide.title)}</h2>", *(f'<p class="line">{escape(line)}</p>' for line in slide.lines)]
    if slide.table is not None:
        parts.append(_table(slide.table))
    if svg is not None:
        data = base64.b64encode(svg).decode("ascii")
        parts.append(f'<img alt="{escape(slide.title)}" src="data:image/svg+xml;base64,{data}">')
    parts.append(_notes(slide.notes))
    return "<section>" + "".join(parts) + "</section>"


def html_bytes(deck: Deck, svgs: Sequence[bytes]) -> bytes:
    """``deck`` as one HTML page; ``svgs``: the images of ``deck.figures``, in order."""
    if len(svgs) != len(deck.figures):
        raise ValueError(f"{len(deck.figures)} figures, {len(svgs)} images")
    images = iter(svgs)
    sections = [_section(s, next(images) if s.figure is not None else None) for s in deck.slides]
    lines = "".join(f"<li>{escape(line)}</li>" for line in deck.lines)
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(deck.title)}</title><style>{STYLE}</style></head><body>"
            f'<section class="title"><h1>{escape(deck.title)}</h1><ul class="lines">{lines}</ul>'
            f"{_notes(deck.notes)}</section>{''.join(sections)}</body></html>\n")
    return page.encode("utf-8")
