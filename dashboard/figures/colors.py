"""The app's colours: one per device, one per registered placer (its runs in its shades), the lower bound's own.

Every colour here stands out on white (slides, papers) and on the app's dark theme: a device's or a placer's
colour has a WCAG contrast ratio of at least 3:1 (the ratio for graphics, WCAG 2.1 §1.4.11) against white and
against the dark backgrounds (#0E1117, #171614); a memcpy lane's lighter tint is opaque, so it never sinks
into a dark canvas as a translucent bar did (issue 57).

A placer's colour is fixed by the registry (:data:`policies.registry.PLACERS`): placers in order of family
(:data:`FAMILY_ORDER`) and name take :data:`PLACER_PALETTE` in order, so a placer has one colour in every
figure, page and export of one version of the app, whichever other placers are shown beside it (issue 58).
The palette was picked greedily for distance (CIEDE2000 at least 12 between any two) inside the contrast
band, leaving out greys: grey is the lower bound's.
"""

from __future__ import annotations

import colorsys
import re
import zlib
from collections.abc import Iterable, Mapping

__all__ = ["FAMILY_ORDER", "LOWER_BOUND_COLOR", "PALETTE", "PLACER_PALETTE", "device_color", "memcpy_color",
           "placer_color", "placer_colors", "placer_of", "run_color", "run_colors", "shade"]

#: Devices and other categories (op types, series). Okabe–Ito's hues where they pass 3:1 on white and on
#: dark; its orange, sky blue, yellow and black did not and are replaced by darker or other hues.
PALETTE = ("#0072B2", "#C47A00", "#009E73", "#9467BD", "#D55E00", "#0096A5", "#C06A9B", "#875A2D",
           "#69692D", "#D2003C", "#5F9A00", "#4B5AE1")
#: Placers, in the registry's (family, name) order; names past its end take further hues. The first colours
#: are the most distinct, and go to the families shown most often (:data:`FAMILY_ORDER`).
PLACER_PALETTE = ("#0072B2", "#D55E00", "#009E73", "#9467BD", "#C47A00", "#CC79A7", "#69692D", "#D2003C",
                  "#0096A5", "#69A500", "#C30087", "#875A2D", "#00781E", "#F06969", "#6987FF", "#A59600",
                  "#007869", "#4B5AE1", "#FF0078", "#C38769", "#A55A69", "#C31E00", "#E15AE1", "#1E96E1")
#: Families in the order their placers take :data:`PLACER_PALETTE`: the baselines in nearly every figure first;
#: a family not listed comes after these, by name.
FAMILY_ORDER = ("trivial", "list scheduling", "partitioner", "learned", "search", "expert")
#: The lower bound's line and marks: a grey no placer has (3.9:1 on white, 4.8:1 on the dark theme).
LOWER_BOUND_COLOR = "#808080"
#: How far a memcpy lane's colour is mixed towards white: lighter than its device's compute lane, opaque.
_MEMCPY_TINT = 0.35
#: The farthest shade of a placer's colour, as a share of the way to white (dark colours) or black (light).
_SHADE_RANGE = 0.45
#: A run id (``engine.store.runs``): ``YYYYmmdd-HHMMSS-<kind>-<placer>-<4 hex>``.
_RUN_ID = re.compile(r"\d{8}-\d{6}-[a-z0-9]+-(?P<placer>[a-z0-9-]+)-[0-9a-f]{4}")


def _rgb(color: str) -> tuple[int, int, int]:
    return int(color[1:3], 16), int(color[3:5], 16), int(color[5:7], 16)


def _mix(color: str, toward: str, t: float) -> str:
    """``color`` moved the share ``t`` of the way to ``toward`` (sRGB)."""
    return "#" + "".join(f"{round(a + (b - a) * t):02X}" for a, b in zip(_rgb(color), _rgb(toward), strict=True))


def _luminance(color: str) -> float:
    """WCAG 2.x relative luminance."""
    def linear(c: int) -> float:
        x = c / 255
        return x / 12.92 if x <= 0.04045 else ((x + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in _rgb(color))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def device_color(d: int) -> str:
    """Device ``d``'s colour: its compute lane, its line in memory over time, its ops in the graph views."""
    return PALETTE[d % len(PALETTE)]


def memcpy_color(d: int) -> str:
    """Device ``d``'s memcpy lane (and its simulated lane beside a measured one): its colour lightened, opaque
    (at least 2:1 on white, 5:1 on the dark theme)."""
    return _mix(device_color(d), "#FFFFFF", _MEMCPY_TINT)


def shade(color: str, index: int, count: int) -> str:
    """The ``index``-th of ``count`` shades of ``color`` (index 0: the colour itself): a dark colour lightens,
    a light one darkens, evenly up to :data:`_SHADE_RANGE` of the way, so each stays visible on the theme
    it was visible on."""
    if index <= 0 or count <= 1:
        return color
    toward = "#FFFFFF" if _luminance(color) < 0.2 else "#000000"
    return _mix(color, toward, _SHADE_RANGE * index / (count - 1))


def _extra_color(i: int) -> str:
    """The ``i``-th colour past a palette: hues a golden angle apart, mid saturation and lightness."""
    r, g, b = colorsys.hls_to_rgb((0.13 + 0.381966 * i) % 1.0, 0.42, 0.65)
    return f"#{round(r * 255):02X}{round(g * 255):02X}{round(b * 255):02X}"


def placer_colors() -> dict[str, str]:
    """Every registered placer's colour: :data:`PLACER_PALETTE` in the registry's order of family
    (:data:`FAMILY_ORDER`) and name."""
    from policies.registry import PLACERS  # every placer; listing them loads no torch

    rank = {family: i for i, family in enumerate(FAMILY_ORDER)}
    ordered = sorted(PLACERS.values(), key=lambda p: (rank.get(p.family, len(rank)), p.family, p.name))
    return {p.name: PLACER_PALETTE[i] if i < len(PLACER_PALETTE) else _extra_color(i - len(PLACER_PALETTE))
            for i, p in enumerate(ordered)}


def _home_slot(key: str) -> int:
    return zlib.crc32(key.encode("utf-8")) % len(PLACER_PALETTE)


def placer_color(placer: str) -> str:
    """A placer's colour: fixed by the registry (:func:`placer_colors`); a name it does not hold (a method such
    as *Zero-Shot*, a plug-in placer) gets a palette colour by a hash of the name, the same in every session."""
    return placer_colors().get(placer) or PLACER_PALETTE[_home_slot(placer)]


def placer_of(label: str) -> str | None:
    """The registered placer a run's label names, or None: the label itself (``heft``), its first part
    (``heft · run-a``, ``placeto on g · k80x2 (3 seeds)``) or the placer in a run id
    (``20261122-012359-compare-heft-b16a``)."""
    known = placer_colors()
    head = label.split(" · ")[0].split(" on ")[0].strip()
    match = _RUN_ID.fullmatch(label.strip())
    for candidate in (label.strip(), head, match and match["placer"]):
        if candidate in known:
            return candidate
    return None


def run_color(key: str) -> str:
    """The colour of ``key`` (a placer, a run's label or any series) shown alone: its placer's colour when
    :func:`placer_of` finds one, else its hash colour (:func:`placer_color`)."""
    return placer_color(placer_of(key) or key)


def run_colors(keys: Iterable[str], placers: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """Colours for runs or series shown together: a run in its placer's colour, several runs of one placer in
    its shades (:func:`shade`, in the order of their keys), never one colour for two placers.

    ``placers`` maps a key to its placer; keys it leaves out are looked up with :func:`placer_of`. A key with
    no registered placer is its own: it keeps its hash colour unless a registered placer of the figure or a
    key sorting before it has that colour, then it takes the first free palette colour (past the palette,
    further hues). The result depends on the set of keys, never on their order.
    """
    placers = placers or {}
    owners: dict[str, list[str]] = {}
    for key in sorted(set(keys)):
        owner = placers.get(key) or placer_of(key) or key
        owners.setdefault(owner, []).append(key)
    registered = placer_colors()
    base = {owner: registered[owner] for owner in owners if owner in registered}
    taken = set(base.values())
    others = sorted(owner for owner in owners if owner not in base)
    for owner in others:  # hash colours first, so a free colour never takes another key's home colour
        home = PLACER_PALETTE[_home_slot(owner)]
        if home not in taken:
            base[owner] = home
            taken.add(home)
    free = (c for c in (*PLACER_PALETTE, *map(_extra_color, range(10_000))) if c not in taken)
    for owner in others:
        if owner not in base:
            base[owner] = next(free)
    return {key: shade(base[owner], i, len(members)) for owner, members in owners.items()
            for i, key in enumerate(members)}
