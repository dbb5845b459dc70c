"""Numbers as the pages show them."""

from __future__ import annotations


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
