"""Numbers as figures and tables print them: plain notation, never ``1.6e+03`` or ``100µ``."""

from __future__ import annotations

import math

__all__ = ["plain_number"]


def plain_number(v: float, digits: int, *, trim: bool = True) -> str:
    """``v`` to ``digits`` significant digits in plain notation, never ``1.6e+03``: ``1600``, ``81.0``,
    ``0.000256``; a number with more digits before the point is rounded to a whole one (``12346``).
    ``trim`` drops trailing zeros (``81``); without it every number shows the same precision
    (``81.0``, ``1.00``)."""
    r = float(f"{v:.{digits}g}")
    decimals = digits - 1 if r == 0 else max(0, digits - 1 - math.floor(math.log10(abs(r))))
    text = f"{v if decimals == 0 else r:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if trim and "." in text else text
