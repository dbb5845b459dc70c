"""Numbers and graph names as the pages show them."""

from __future__ import annotations

import os
import re

__all__ = ["UNKNOWN", "fmt_bytes", "fmt_ms", "fmt_size", "graph_label"]


def fmt_bytes(b: float | None) -> str:
    if b is None:
        return "-"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(b) >= scale:
            return f"{b / scale:.3g} {unit}"
    return f"{b:.0f} B"


#: A size the graph's source does not give (``CompGraph.memory_known`` False).
UNKNOWN = "unknown"


def fmt_size(b: float | None, known: bool = True) -> str:
    """Bytes as :func:`fmt_bytes`, or "unknown" where the graph's source gives no sizes
    (``CompGraph.memory_known``: DOPPLER's text files), rather than a made-up "0 B"."""
    return fmt_bytes(b) if known else UNKNOWN


def fmt_ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e3:.4g} ms"


#: An upload as the app keeps it (dashboard.input_guard.keep_upload): ``.uploads/<graph name>-<12 hex>.json``.
_UPLOAD = re.compile(r"(?P<name>.+)-[0-9a-f]{12}\.json")


def _part_label(part: str) -> str:
    p = part.strip()
    if p.startswith(("gen:", "bench:", "family:", "upload:")):
        return p
    base = os.path.basename(p.rstrip("/" + os.sep))
    if not (os.path.isabs(p) or (("/" in p or os.sep in p) and "." in base)):
        return p  # a name, not a path
    upload = _UPLOAD.fullmatch(base)
    in_uploads = os.path.basename(os.path.dirname(p)) == ".uploads"
    return upload["name"] if upload and in_uploads else base


def graph_label(spec: str) -> str:
    """A graph spec or stored graph name as titles, legends and CSVs show it, never a path on the server: an
    upload by the name of the graph it holds (as Place runs name it), any other file by its file name;
    ``gen:``, ``bench:``, ``family:`` and ``upload:`` specs and plain names as they are. Several graphs
    (comma-separated) each so."""
    return ",".join(_part_label(part) for part in str(spec).split(","))
