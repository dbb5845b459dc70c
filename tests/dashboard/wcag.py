"""WCAG 2.x contrast between two ``#RRGGBB`` colours, for the tests that check colours read on their background."""

from __future__ import annotations


def luminance(color: str) -> float:
    """WCAG 2.x relative luminance of a ``#RRGGBB`` colour."""
    channels = [int(color.lstrip("#")[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """The contrast ratio of ``a`` and ``b`` (1 to 21)."""
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)
