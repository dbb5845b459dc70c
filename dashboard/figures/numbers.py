"""Numbers as figures and tables print them: plain notation, never ``1.6e+03`` or ``100µ``."""

from __future__ import annotations

import math

__all__ = ["fmt_bytes", "plain_number"]


def plain_number(v: float, digits: int, *, trim: bool = True) -> str:
    """``v`` to ``digits`` significant digits in plain notation, never ``1.6e+03``: ``1600``, ``81.0``,
    ``0.000256``; a number with more digits before the point is rounded to a whole one (``12346``).
    ``trim`` drops trailing zeros (``81``); without it every number shows the same precision
    (``81.0``, ``1.00``)."""
    r = float(f"{v:.{digits}g}")
    decimals = digits - 1 if r == 0 else max(0, digits - 1 - math.floor(math.log10(abs(r))))
    text = f"{v if decimals == 0 else r:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if trim and "." in text else text


def fmt_bytes(b: float) -> str:
    """Bytes to three significant digits in the largest unit that keeps one before the point: ``7.6 MB``."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(b) >= scale:
            return f"{b / scale:.3g} {unit}"
    return f"{b:.0f} B"
