"""Named errors for infeasible or malformed input.

Every error the engine raises for *bad input* derives from :class:`PlacelabError`; its
message is one sentence that names the offending op, edge, device or file, so the CLI and
the app can show it as-is (never a traceback). :func:`one_line` is how both show any message:
one line, bounded, control characters escaped.
"""

from __future__ import annotations

import os
import re

__all__ = [
    "MAX_LINE",
    "PATH_LIMIT",
    "QUOTE_LIMIT",
    "ClusterError",
    "GraphError",
    "PlacelabError",
    "PlacementError",
    "RunError",
    "SimulationError",
    "SpecError",
    "WriteError",
    "first_line",
    "one_line",
    "printable",
    "quote",
]

#: The most characters of one user-supplied value (a name, a key, a path) that a message quotes.
QUOTE_LIMIT = 80
#: The most characters of a path that a message shows.
PATH_LIMIT = 160
#: The longest error line the CLI prints and the app shows, in characters.
MAX_LINE = 300
#: Escaped in shown messages: C0/C1 controls and DEL (terminal escape sequences), bidirectional overrides
#: and isolates (text that reads differently than it is), lone surrogates (undecodable file names).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def one_line(message: object, limit: int = MAX_LINE) -> str:
    """``message`` as one line of at most ``limit`` characters, safe to print to a terminal or show in the app.

    Runs of whitespace (newlines, tabs) become one space; other control characters (``ESC``, ``BEL``, ...),
    bidirectional overrides and lone surrogates are escaped as ``\\x1b`` / ``\\u202e``. A longer message keeps
    its start and its end and says how many characters were cut in between, e.g.
    ``graph 'g' has a cycle: 'op0' -> ... [1,088,636 characters cut] ... -> 'op0'``.
    """
    text = " ".join(str(message).split())
    if len(text) <= limit:
        shown = _UNSAFE.sub(lambda m: _escape(m.group()), text)
        if len(shown) <= limit:
            return shown
    width = len(f"{len(text):,}")
    budget = max(limit - len(f" ... [{'9' * width} characters cut] ... "), 2)
    head_budget = budget - budget // 3
    head: list[str] = []
    used = 0
    for ch in text:
        piece = _escape(ch) if _UNSAFE.match(ch) else ch
        if used + len(piece) > head_budget:
            break
        head.append(piece)
        used += len(piece)
    tail: list[str] = []
    used = 0
    for ch in reversed(text[len(head):]):
        piece = _escape(ch) if _UNSAFE.match(ch) else ch
        if used + len(piece) > budget - head_budget:
            break
        tail.append(piece)
        used += len(piece)
    cut = len(text) - len(head) - len(tail)
    return f"{''.join(head)} ... [{cut:,} characters cut] ... {''.join(reversed(tail))}"


def first_line(exc: BaseException, default: str | None = None) -> str:
    """The first line of an exception's message (a library or a user's code may write pages); ``default``
    (else the exception's type name) when the message is empty."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else (type(exc).__name__ if default is None else default)


def quote(value: object, limit: int = QUOTE_LIMIT, *, bare: bool = False) -> str:
    """``value`` as it goes into a one-line message: a string in quotes with every control character escaped
    (a name holding a newline shows as ``'a\\nb'``, as ``repr`` writes it), any other value as its ``repr``.
    Longer than ``limit`` characters, it keeps its start and end around ``…``. This is the one way user text
    (op, device, key and file names, values read from a file) enters a message, so every message stays one
    bounded line however hostile the input (issue 54).

    ``bare=True`` is for paths, which messages show without quotes (``/data/g.json is empty``): the text with
    control characters escaped as ``\\x0a``, and, when cut, more of its end (the file's own name) kept.
    """
    if bare:
        text = os.fspath(value) if isinstance(value, os.PathLike) else str(value)
        if len(text) > limit:
            keep = max(limit - 1, 2)
            text = text[: keep // 3] + "…" + text[len(text) - (keep - keep // 3):]
        return _UNSAFE.sub(lambda m: _escape(m.group()), text)
    if isinstance(value, str) and len(value) > limit:
        value = _cut(value, limit)
    text = _UNSAFE.sub(lambda m: _escape(m.group()), repr(value))
    return text if len(text) <= limit + 2 or isinstance(value, str) else _cut(text, limit)


def _cut(text: str, limit: int) -> str:
    keep = max(limit - 1, 2)
    return text[: keep - keep // 3] + "…" + text[len(text) - keep // 3:]


def printable(text: str) -> str:
    """``text`` with the characters :func:`one_line` escapes escaped, except newlines and tabs (for
    multi-line output: tables, reports)."""
    return _UNSAFE.sub(lambda m: m.group() if m.group() in "\n\t" else _escape(m.group()), text)


class PlacelabError(Exception):
    """Base class: bad input that the user can fix; ``str(err)`` is one clear sentence."""


class GraphError(PlacelabError):
    """A computation graph is malformed (cycle, unknown op, bad number, wrong schema, ...)."""


class ClusterError(PlacelabError):
    """A cluster description or preset name is invalid."""


class PlacementError(PlacelabError):
    """A placement does not fit its graph or cluster (unknown op/device, unsupported kind, ...)."""


class SimulationError(PlacelabError):
    """A simulation was asked for something it cannot do (unknown mode, ...)."""


class RunError(PlacelabError):
    """A stored run is missing, unreadable or of an unsupported schema version."""


class SpecError(PlacelabError):
    """A graph / generator spec (``gen:NAME?k=v``) cannot be resolved."""


class WriteError(PlacelabError):
    """An output file cannot be written (missing folder, not a regular file, no permission, disk full)."""
