"""The app's colours (dashboard/figures/colors.py): one per placer in every figure, runs in its shades, the lower
bound's own grey, and devices and lanes that stand out on white and on the dark theme."""

import numpy as np
import pytest
from wcag import contrast, luminance

from dashboard.figures import cdf_figure, learning_curves, makespan_bars
from dashboard.figures.colors import (
    FAMILY_ORDER,
    LOWER_BOUND_COLOR,
    PALETTE,
    PLACER_PALETTE,
    device_color,
    memcpy_color,
    placer_color,
    placer_colors,
    placer_of,
    run_colors,
    shade,
)
from policies.registry import PLACERS

#: White (slides, the light theme) and the dark backgrounds: Streamlit's dark theme and the app's own.
BACKGROUNDS = {"white": "#FFFFFF", "dark": "#0E1117", "app dark": "#171614"}


def _curve(n: int) -> dict[str, list]:
    return {"episode": list(range(1, n + 1)), "sampled_runtime": [1e-3 * (i + 1) for i in range(n)]}


def _line_colors(fig) -> dict[str, str]:
    return {t.name: t.line.color for t in fig.data if t.type == "scatter" and t.line.color}


def test_contrast_of_wcag_reference_colours():
    assert contrast("#000000", "#FFFFFF") == pytest.approx(21.0)
    assert contrast("#0072B2", "#FFFFFF") == pytest.approx(5.19, abs=0.01)


@pytest.mark.parametrize("background", sorted(BACKGROUNDS))
def test_every_lane_and_placer_stands_out_on_white_and_on_dark(background):
    """Issue 57: gpu:0's memcpy lane was navy at 45 % opacity on near-black, and yellow devices vanished on
    white. A device, placer or the lower bound has at least 3:1 (WCAG's ratio for graphics) on every
    background; a memcpy lane, an opaque lighter tint, 2:1 on white and 5:1 on dark."""
    bg = BACKGROUNDS[background]
    for color in (*PALETTE, *PLACER_PALETTE, LOWER_BOUND_COLOR):
        assert contrast(color, bg) >= 3.0, (color, background)
    for d in range(len(PALETTE)):
        assert memcpy_color(d) != device_color(d) and memcpy_color(d).startswith("#")
        assert contrast(memcpy_color(d), bg) >= (2.0 if background == "white" else 5.0), (d, background)


def test_each_registered_placer_has_its_own_fixed_colour_and_the_lower_bound_none_of_them():
    colors = placer_colors()
    assert set(colors) == set(PLACERS) and len(set(colors.values())) == len(PLACERS)
    ordered = sorted(PLACERS.values(), key=lambda p: (FAMILY_ORDER.index(p.family), p.name))
    assert [colors[p.name] for p in ordered] == list(PLACER_PALETTE[:len(ordered)])  # the registry's order
    assert colors["single-device"] == PLACER_PALETTE[3]  # cpu-only, random, round-robin, single-device: trivial
    assert LOWER_BOUND_COLOR not in colors.values() and LOWER_BOUND_COLOR not in PLACER_PALETTE
    # a name the registry does not hold: a stable colour of the palette, by its name
    assert placer_color("Zero-Shot") == placer_color("Zero-Shot") in PLACER_PALETTE


def test_placer_of_reads_labels_and_run_ids():
    assert placer_of("heft") == "heft"
    assert placer_of("heft · run-a") == "heft"
    assert placer_of("placeto on g [abcdef01] · k80x2 (3 seeds)") == "placeto"
    assert placer_of("20261122-012359-compare-single-device-0565") == "single-device"
    assert placer_of("my run") is None and placer_of("Zero-Shot") is None


def test_a_placer_has_one_colour_in_every_figure_whichever_placers_are_beside_it():
    """Issue 58: single-device was amber in one figure, grey in another and green in a third. Its colour is now
    its registry colour in the makespan bars beside heft, in a CDF beside metis and placeto, and in learning
    curves whose names say nothing of it (the ``placers`` map tells)."""
    mine = placer_colors()["single-device"]
    bars = makespan_bars([{"label": "single-device", "makespan_s": 2e-3}, {"label": "heft", "makespan_s": 1e-3}])
    assert {t.name: t.marker.color for t in bars.data if t.type == "bar"} == {
        "single-device": mine, "heft": placer_colors()["heft"]}
    cdf = cdf_figure({"single-device": [1.0, 2.0], "metis": [1.5], "placeto": [1.2]})
    assert _line_colors(cdf) == {p: placer_colors()[p] for p in ("single-device", "metis", "placeto")}
    curves = learning_curves({"baseline run": _curve(3)}, placers={"baseline run": "single-device"})
    assert _line_colors(curves)["baseline run"] == mine


def test_a_learning_curve_keeps_its_hue_when_a_second_run_is_added():
    """Issue 58: a learning curve turned from amber to blue when a second run was added. One run of placeto has
    placeto's colour; with a second placeto run the first (in name order) keeps it and the second takes a
    shade of it; a run of another placer beside them changes neither."""
    placeto = placer_colors()["placeto"]
    alone = learning_curves({"a": _curve(3)}, placers={"a": "placeto"})
    two = learning_curves({"a": _curve(3), "b": _curve(3)}, placers={"a": "placeto", "b": "placeto"})
    three = learning_curves({"a": _curve(3), "b": _curve(3), "c": _curve(3)},
                            placers={"a": "placeto", "b": "placeto", "c": "heft"})
    assert _line_colors(alone)["a"] == _line_colors(two)["a"] == _line_colors(three)["a"] == placeto
    assert _line_colors(two)["b"] == _line_colors(three)["b"] == shade(placeto, 1, 2) != placeto
    assert _line_colors(three)["c"] == placer_colors()["heft"]


def test_runs_of_one_placer_take_its_shades():
    """Compare's bars "heft · run-a" and "heft · run-b": heft's colour and a shade of it, moved towards white
    for a dark colour (towards black for a light one), never another placer's colour."""
    labels = ["heft · run-a", "heft · run-b", "heft · run-c", "metis"]
    colors = run_colors(labels)
    heft = placer_colors()["heft"]
    assert colors["heft · run-a"] == heft and colors["metis"] == placer_colors()["metis"]
    shades = [colors[label] for label in labels[:3]]
    assert len(set(shades)) == 3 and not set(shades[1:]) & set(placer_colors().values())
    lum = [luminance(c) for c in shades]
    assert (lum[0] < lum[1] < lum[2]) if luminance(heft) < 0.2 else (lum[0] > lum[1] > lum[2])
    # the farthest shade is 45 % of the way: heft's red channel moves by that share of its distance
    far = int(shades[2][1:3], 16)
    target = 255 if luminance(heft) < 0.2 else 0
    assert far == round(int(heft[1:3], 16) + (target - int(heft[1:3], 16)) * 0.45)
    # an explicit placer wins over the label
    assert run_colors(["mine"], {"mine": "heft"}) == {"mine": heft}


def test_the_lower_bound_has_its_own_colour():
    """Issue 58: the lower-bound line had the single-device bar's green."""
    rows = [{"label": p, "makespan_s": m, "lower_bound_s": 1e-3} for p, m in (("single-device", 3e-3), ("heft", 2e-3))]
    fig = makespan_bars(rows)
    bar_colors = {t.marker.color for t in fig.data if t.type == "bar"}
    [line] = [t for t in fig.data if t.type == "scatter"]
    assert line.line.color == LOWER_BOUND_COLOR == fig.layout.shapes[0].line.color
    assert LOWER_BOUND_COLOR not in bar_colors
    rows[1]["lower_bound_s"] = 2e-3  # two bounds: a mark per bar, in the same grey
    [marks] = [t for t in makespan_bars(rows).data if t.type == "scatter"]
    assert marks.marker.color == LOWER_BOUND_COLOR


def test_unknown_names_never_take_a_registered_placers_colour_in_the_same_figure():
    placers = sorted(PLACERS)
    home = {placer_color(p) for p in placers}
    others = [n for n in (f"series {i}" for i in range(200)) if placer_color(n) in home][:5]
    colors = run_colors([*placers, *others])
    assert len(set(colors.values())) == len(colors)
    assert all(colors[p] == placer_colors()[p] for p in placers)
    assert np.all([colors[n] not in home for n in others])
