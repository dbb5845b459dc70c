"""CSV tables of a run (schedules, learning curves): written atomically or appended line by line.

Tables are RFC 4180 CSV with a header row and CRLF line ends (with them the csv module also
quotes a lone carriage return). Floats are written with ``repr`` so they read back exactly;
``None`` is an empty cell. Cells read back as ``int``, else ``float``, else ``str``, and the
empty cell as ``None`` (so a string such as ``"12"`` reads back as 12). A torn last line (a
crash while appending) is ignored on reading and dropped before the next append.

A JSON-lines file (a journal: one JSON value per line) is appended and read the same way.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine.jsonio import atomic_write_text

__all__ = ["append_csv_rows", "append_json_line", "csv_text", "read_csv", "read_json_lines", "write_csv"]

_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?(nan|inf|infinity)", re.I)


def write_csv(path: Path, columns: Mapping[str, Sequence]) -> None:
    """Atomically write ``columns`` as a table (header = the keys; :func:`csv_text`)."""
    atomic_write_text(path, csv_text(columns, path.name))


def csv_text(columns: Mapping[str, Sequence], name: str = "table") -> str:
    """``columns`` as the CSV text of a table (header = the keys).

    Raises
    ------
    ValueError
        The columns do not all have the same length (the message names the table ``name``).
    """
    lengths = {key: len(values) for key, values in columns.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"table {name}: columns differ in length: {lengths}")
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(columns.keys())
    writer.writerows([_cell(v) for v in row] for row in zip(*columns.values(), strict=True))
    return buf.getvalue()


def append_csv_rows(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """Append rows with one ``fsync``; the header (the first row's keys) is written with the first rows.

    Raises
    ------
    ValueError
        A row's keys differ from the existing header (or from the first row's).
    """
    if not rows:
        return
    header = list(rows[0].keys())
    if path.exists() and path.stat().st_size > 0:
        _drop_torn_tail(path)
    if path.exists() and path.stat().st_size > 0:
        with path.open(newline="", encoding="utf-8") as f:
            existing = next(csv.reader(f))
        if set(existing) != set(header):
            raise ValueError(f"table {path.name}: row keys {header} differ from header {existing}")
        header, lines = existing, []
    else:
        lines = [header]
    for row in rows:
        if set(row) != set(header):
            raise ValueError(f"table {path.name}: row keys {list(row)} differ from header {header}")
        lines.append([_cell(row[key]) for key in header])
    buf = io.StringIO()
    csv.writer(buf).writerows(lines)
    with path.open("a", newline="", encoding="utf-8") as f:
        f.write(buf.getvalue())
        f.flush()
        os.fsync(f.fileno())


def read_csv(path: Path) -> dict[str, list]:
    """Read a table as ``{column: values}``, ignoring a torn last line.

    Raises
    ------
    ValueError
        A row other than the last has the wrong field count (the message starts with
        "row N has").
    """
    with path.open(newline="", encoding="utf-8") as f:
        text = f.read()
    if text and not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
    rows = list(csv.reader(io.StringIO(text, newline="")))
    if not rows:
        return {}
    header, body = rows[0], rows[1:]
    if body and len(body[-1]) != len(header):
        body.pop()
    for i, values in enumerate(body, start=1):
        if len(values) != len(header):
            raise ValueError(f"row {i} has {len(values)} fields, expected {len(header)}")
    return {key: [_parse(r[j]) for r in body] for j, key in enumerate(header)}


def append_json_line(path: Path, value: Any) -> None:
    """Append ``value`` as one JSON line and ``fsync`` it; a torn last line is dropped first, so a crash
    mid-append never glues the next line to a fragment."""
    if path.exists() and path.stat().st_size > 0:
        _drop_torn_tail(path)
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(value, default=str) + "\n")
        f.flush()
        os.fsync(f.fileno())


def read_json_lines(path: Path) -> list[Any]:
    """The JSON values of a file's lines, in order; a line that is not JSON (a torn last line) is skipped."""
    values = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            values.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return values


def _drop_torn_tail(path: Path) -> None:
    with path.open("rb+") as f:
        f.seek(-1, os.SEEK_END)
        if f.read(1) == b"\n":
            return
        f.seek(0)
        f.truncate(f.read().rfind(b"\n") + 1)


def _cell(value: Any) -> str:
    if isinstance(value, np.generic):
        value = value.item()
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _parse(text: str) -> int | float | str | None:
    if text == "":
        return None
    if _INT.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        return float(text)
    return text
