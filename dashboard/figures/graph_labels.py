"""Labels of the graph explorer's nodes: natural order, the part of a name that tells siblings apart, and a
caption fitted to its slot with the op count kept whole.

Graphs name their parts by counting — ``normal_A_block_1`` … ``normal_A_block_12`` (Keras), ``shard0`` …
``shard15`` (DOPPLER's sharded graphs), ops ``0`` … ``N`` (DOPPLER's authors' files). Three rules make
such names read in a view too narrow for them whole:

* **Natural order** (:func:`natural_key`): digit runs compare as numbers, so ``2`` comes before ``10``.
* **The distinguishing part** (:func:`distinguishing_starts`): among siblings (the nodes drawn in one box),
  the longest run of whole tokens a name shares with another sibling is what they have in common; the
  rest tells it apart. Tokens are digit runs, letter runs and single separators, so a number is never
  split: ``normal_A_block_1`` and ``normal_A_block_10`` share ``normal_A_block_``, not ``…block_1``.
* **Fitting** (:func:`fit_caption`, :func:`sibling_captions`): a caption wider than its slot keeps the
  start of the name, an ellipsis, and the distinguishing part (``normal_A_…10 (70)``); the count in
  parentheses is never cut.

Widths are estimated from Helvetica's advance widths (Adobe's Core 14 font metrics, grouped), the first
font of the explorer's family and metric-compatible with Arial and Liberation Sans (equal to Chromium's
own measure with Liberation Sans to 0.1 px on the first views of ``benchmarks/bench_big_graph_view.py``),
times :data:`WIDTH_MARGIN` for Helvetica Neue. DejaVu Sans, the last fallback on a Linux machine without
those fonts, runs 10–20 % wider: captions there overrun their slot a little, and are never cut.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["ELLIPSIS", "WIDTH_MARGIN", "Caption", "distinguishing_starts", "fit_caption", "natural_key",
           "sibling_captions", "text_width"]

ELLIPSIS = "…"
#: Estimated widths are multiplied by this: Helvetica Neue (the first font of the family) runs a little wider.
WIDTH_MARGIN = 1.05
_DIGITS = re.compile(r"([0-9]+)")
_CLOSING_NUMBER = re.compile(r"[0-9]+$")
#: Share of the room a cut name without a distinguishing part keeps for its end.
_TAIL = 0.5
#: A cut start ends with at least this many characters of a token it cannot keep whole, or without it.
_PART = 3
_TOKENS = re.compile(r"[0-9]+|[^\W\d_]+|.", re.S)

# Helvetica and Helvetica-Bold advance widths (1/1000 em, Adobe Core 14 AFM), characters grouped by width.
_REGULAR = {222: "ijl'", 278: " !,./:;I[\\]ft|", 333: "()-r`{}\"", 500: "cksvxyzJ^", 556: "abdeghnopqu0123456789_$#?L–",
            584: "+<=>~", 611: "FTZ", 667: "ABEKPSVXY&", 722: "CDHNRUw", 778: "GOQ", 833: "mM", 889: "%",
            944: "W", 1000: "…—@"}
_BOLD = {238: "'", 278: "ijl ,./:;I[\\]|", 333: "()-ft!`{}", 389: "r", 474: '"', 500: "z",
         556: "acekvsxy0123456789_$#J–", 584: "+<=>~^", 611: "bdghnopquLFTZ?", 667: "EPSVXY", 722: "ABCDHKNRU&",
         778: "GOQw", 833: "M", 889: "m%", 944: "W", 975: "@", 1000: "…—"}
_WIDTHS = {bold: {c: w / 1000 for w, chars in table.items() for c in chars}
           for bold, table in ((False, _REGULAR), (True, _BOLD))}


def natural_key(text: str) -> tuple:
    """Sort key reading digit runs as numbers: ``op2`` < ``op10``; ``level 9`` < ``level 10``. Ties (``01``
    and ``1``) fall back to the text itself, so the order is total."""
    parts = _DIGITS.split(text)
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts)), text


def text_width(text: str, px: float, bold: bool = False) -> float:
    """Estimated width in px of ``text`` drawn at ``px`` (Helvetica metrics × :data:`WIDTH_MARGIN`); a
    character outside the table counts 0.6 em (1 em for CJK and other wide scripts)."""
    table = _WIDTHS[bold]
    em = sum(table.get(c, 1.0 if ord(c) >= 0x2E80 else 0.6) for c in text)
    return em * px * WIDTH_MARGIN


def _tokens(name: str) -> list[str]:
    return _TOKENS.findall(name)


def distinguishing_starts(names: Sequence[str]) -> list[int]:
    """Per name, where the part that tells it apart from its siblings (``names``) begins: the length of the
    longest run of whole tokens (digit runs, letter runs, single other characters) it shares with another
    name from the start. 0 when it shares none; a name equal to another, or a whole-token prefix of one
    (``block`` beside ``block_2``), has no part of its own to keep and gets 0."""
    toks = [_tokens(n) for n in names]
    order = sorted(range(len(names)), key=lambda i: toks[i])

    def common(a: list[str], b: list[str]) -> int:
        k = 0
        while k < min(len(a), len(b)) and a[k] == b[k]:
            k += 1
        return k

    shared = [0] * len(names)
    for left, right in itertools.pairwise(order):  # the longest shared run is with a neighbour in order
        k = common(toks[left], toks[right])
        shared[left], shared[right] = max(shared[left], k), max(shared[right], k)
    return [0 if k >= len(t) else len("".join(t[:k])) for k, t in zip(shared, toks, strict=True)]


def _fit_start(text: str, room: float, px: float, bold: bool) -> str:
    """The longest start of ``text`` no wider than ``room`` px."""
    used, end = 0.0, 0
    for c in text:
        w = text_width(c, px, bold)
        if used + w > room + 1e-9:
            break
        used, end = used + w, end + 1
    return text[:end]


def _token_start(text: str, room: float, px: float, bold: bool, limit: int | None = None) -> str:
    """The longest run of whole tokens from the start of ``text`` no wider than ``room`` px (and no longer
    than ``limit`` characters), and when that run is not empty, at least :data:`_PART` characters of the
    next token if they fit too (``batch_norma…``)."""
    limit = len(text) if limit is None else limit
    out = ""
    for tok in _tokens(text):
        if len(out) + len(tok) > limit or text_width(out + tok, px, bold) > room + 1e-9:
            part = _fit_start(tok[:limit - len(out)], room - text_width(out, px, bold), px, bold) if out else ""
            return out + part if len(part) >= _PART else out
        out += tok
    return out


def _token_end(text: str, room: float, px: float, bold: bool) -> str:
    """The longest run of whole tokens at the end of ``text`` no wider than ``room`` px; the end of its last
    token when even that one is wider."""
    out = ""
    for tok in reversed(_tokens(text)):
        if text_width(tok + out, px, bold) > room + 1e-9:
            break
        out = tok + out
    return out or _fit_start(text[::-1], room, px, bold)[::-1]


def _cut(name: str, width: float, px: float, bold: bool, suffix: str, keep_from: int,
         head_limit: int | None) -> tuple[str, str, bool] | None:
    """The start and end of the cut caption around :data:`ELLIPSIS` (:func:`fit_caption`), and whether the end
    is the whole distinguishing part; ``None`` when the caption fits whole."""
    if head_limit is None and text_width(name + suffix, px, bold) <= width:
        return None
    dots = text_width(ELLIPSIS, px, bold)
    room = width - text_width(suffix, px, bold) - dots
    if room <= 0:
        return "", "", False
    if 0 < keep_from < len(name):
        tail = name[keep_from:]
        if text_width(tail, px, bold) > room:  # the distinguishing part alone is too long: its start
            return "", _fit_start(tail, room - dots, px, bold) + ELLIPSIS, False
        head = _token_start(name[:keep_from], room - text_width(tail, px, bold), px, bold, head_limit)
        return (head if len(head) >= 2 else ""), tail, True
    number = _CLOSING_NUMBER.search(name)
    tail = number.group() if number and text_width(number.group(), px, bold) <= _TAIL * room else _token_end(
        name, _TAIL * room, px, bold)
    head = _fit_start(name[:len(name) - len(tail)], room - text_width(tail, px, bold), px, bold)
    return (head if len(head) >= 2 else ""), tail, False


def fit_caption(name: str, width: float, px: float, *, bold: bool = False, suffix: str = "", keep_from: int = 0,
                head_limit: int | None = None) -> str:
    """``name`` followed by ``suffix`` (an op count `` (70)``, `` (open)``) as a caption no wider than ``width`` px
    at font size ``px``.

    Whole when it fits. Otherwise the suffix stays whole and the name is cut in the middle: a start,
    :data:`ELLIPSIS`, and an end. With ``keep_from`` (where the distinguishing part begins,
    :func:`distinguishing_starts`) the end is that whole part and the start the whole tokens of the shared
    part that fit, and a few characters more of the next (at most ``head_limit`` characters: cut siblings
    sharing a part then start alike); a
    distinguishing part too long for the room keeps its own start and is cut at the end too. Without, the
    end is the name's closing number (``nasnet_…1``) or else its last whole tokens, within half the
    room, and the start the characters that fit. A
    start shorter than two characters is left out (``…10 (70)``): one letter before an ellipsis reads as
    noise.
    """
    cut = _cut(name, width, px, bold, suffix, keep_from, head_limit)
    return name + suffix if cut is None else cut[0] + ELLIPSIS + cut[1] + suffix


class Caption(NamedTuple):
    """One node's caption to fit: its name, the suffix kept whole, the width (px) and font (px, bold)."""

    name: str
    suffix: str
    width: float
    px: float
    bold: bool = False


def sibling_captions(items: Sequence[Caption]) -> list[str]:
    """The captions of siblings (the nodes drawn in one box), each fitted by :func:`fit_caption` from where
    its distinguishing part begins; the cut ones sharing a part keep the same start, the shortest any of
    them can keep beside its whole distinguishing part (``normal_A_…1 (70)`` … ``normal_A_…12 (70)``, not
    ``normal_A_b…1`` beside ``normal_A_…10``)."""
    starts = distinguishing_starts([c.name for c in items])
    cuts = [_cut(c.name, c.width, c.px, c.bold, c.suffix, k, None) for c, k in zip(items, starts, strict=True)]
    limit: dict[str, int] = {}  # shared part → the shortest start kept by a cut sibling whose whole end shows
    for c, k, cut in zip(items, starts, cuts, strict=True):
        if k and cut is not None and cut[2]:
            limit[c.name[:k]] = min(limit.get(c.name[:k], k), len(cut[0]))
    return [c.name + c.suffix if cut is None else
            fit_caption(c.name, c.width, c.px, bold=c.bold, suffix=c.suffix, keep_from=k,
                        head_limit=limit.get(c.name[:k]))
            for c, k, cut in zip(items, starts, cuts, strict=True)]
