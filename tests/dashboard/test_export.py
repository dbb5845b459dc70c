"""Tables and figures for papers and slides: LaTeX, placement diffs, the export copy, kaleido on chromium."""

import os

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from dashboard.figures import table_latex
from dashboard.figures.diff import moved_ops, placement_diff
from dashboard.figures.theme import SYSTEM_CHROMIUM, export_figure, figure_html, figure_image, run_color
from engine.graph.compgraph import CompGraph


def test_table_latex_escapes_and_aligns():
    table = pd.DataFrame({"placer": ["m_etf", "a&b"], "makespan (ms)": [1.23456, float("nan")], "OOM": [True, False]})
    assert table_latex(table) == (
        "\\begin{tabular}{lrl}\n\\toprule\nplacer & makespan (ms) & OOM \\\\\n\\midrule\n"
        "m\\_etf & 1.235 & yes \\\\\na\\&b & -- & no \\\\\n\\bottomrule\n\\end{tabular}\n")


def test_placement_diff_lists_moved_ops_heaviest_first():
    g = CompGraph("g", ["a", "b", "c"], compute_any=np.array([1e-3, 3e-3, 2e-3]), output_bytes=np.zeros(3),
                  persistent_bytes=np.zeros(3), edge_src=[0, 1], edge_dst=[1, 2], op_types=["X", "Y", "Z"])
    left, right = np.array([0, 0, 1]), np.array([1, 0, 0])
    table = placement_diff(g, left, right, ["gpu:0", "gpu:1"], ["gpu:0", "gpu:1"])
    assert list(table["op"]) == ["c", "a"]  # b stayed on gpu:0; c (2 ms) before a (1 ms)
    assert list(table["left device"]) == ["gpu:1", "gpu:0"] and list(table["right device"]) == ["gpu:0", "gpu:1"]
    assert list(table["compute (ms)"]) == pytest.approx([2.0, 1.0])
    # devices compare by name: the same indices on a cluster whose first device is named otherwise
    assert moved_ops(left, left, ["gpu:0", "gpu:1"], ["cpu:0", "gpu:1"]).tolist() == [True, True, False]


def test_export_copy_has_the_title_large_fonts_and_leaves_the_figure_alone():
    fig = go.Figure(go.Bar(x=["gpu:0"], y=[1.0]), layout={"title": {"text": "old"}})
    out = export_figure(fig, title="For the slide", font_size=24)
    assert out.layout.title.text == "For the slide" and out.layout.font.size == 24
    assert out.layout.yaxis.automargin is True and out.layout.template.layout.paper_bgcolor is not None
    assert fig.layout.title.text == "old" and fig.layout.font.size is None


def test_figure_html_keeps_lane_labels_whole():
    fig = go.Figure(go.Bar(y=["gpu:0 memcpy"], x=[1.0], orientation="h"), layout={"margin": {"l": 10}})
    page = figure_html(fig)
    assert '"automargin":true' in page.replace(" ", "") and "gpu:0 memcpy" in page


def test_run_colors_are_stable():
    assert run_color("metis") == run_color("metis")
    assert len({run_color(n) for n in ("metis", "heft", "m-etf", "scotch", "single-device", "round-robin")}) >= 4


@pytest.mark.skipif(not SYSTEM_CHROMIUM.exists(), reason=f"kaleido needs chromium at {SYSTEM_CHROMIUM}")
def test_kaleido_writes_png_svg_pdf_at_the_chosen_size():
    os.environ.pop("BROWSER_PATH", None)  # found on its own: the system chromium
    fig = export_figure(go.Figure(go.Bar(x=["a", "b"], y=[1, 2])), title="t")
    png = figure_image(fig, "png", width=640, height=360)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(png[16:20], "big") == 640 and int.from_bytes(png[20:24], "big") == 360
    assert figure_image(fig, "svg", width=640, height=360).startswith(b"<svg")
    assert figure_image(fig, "pdf", width=640, height=360)[:5] == b"%PDF-"


def test_export_popover_previews_the_figure_as_exported(monkeypatch):
    """The *Preview* toggle shows the PNG the download would hold: this title, size and font (issue #33)."""
    from streamlit.testing.v1 import AppTest

    import dashboard.widgets.ui as ui

    made = []

    real = ui.export_bytes

    def spy(fig, fmt, **kw):
        out = real(fig, fmt, **kw)
        made.append((fmt, kw, out))
        return out

    monkeypatch.setattr(ui, "export_bytes", spy)
    script = ("import plotly.graph_objects as go\nfrom dashboard.widgets.ui import show_figure\n"
              "show_figure(go.Figure(go.Bar(x=['a', 'b'], y=[1, 2]), layout={'title': {'text': 'bars'}}), key='fig')\n")
    app = AppTest.from_string(script, default_timeout=300).run()
    assert not app.get("image") and not made  # off by default: nothing rendered
    app.text_input(key="fig_x_title").set_value("For the slide")
    app.number_input(key="fig_x_w").set_value(800)
    app.toggle(key="fig_x_preview").set_value(True).run()
    assert not app.exception
    assert [m[:2] for m in made] == [("png", {"title": "For the slide", "width": 800, "height": 900,
                                               "font_size": 22})]
    png = made[0][2]  # the bytes the preview shows: a PNG at the chosen size
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert (int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")) == (800, 900)
    images = app.get("image")
    assert len(images) == 1 and images[0].proto.imgs[0].caption.startswith("800 × 900 px, as exported")
    assert images[0].proto.imgs[0].url.endswith(".png")
