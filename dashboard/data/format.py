"""Numbers as the pages show them."""

from __future__ import annotations


def fmt_bytes(b: float | None) -> str:
    if b is None:
        return "-"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(b) >= scale:
            return f"{b / scale:.3g} {unit}"
    return f"{b:.0f} B"


def fmt_ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e3:.4g} ms"
