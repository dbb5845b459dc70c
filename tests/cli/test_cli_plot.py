"""``placelab plot`` (issue #57, item 2): the app's figures of stored runs, written at slide size.

The runs are hand-made (``hand_runs.py``, which works out their makespans): a four-op graph on two GPUs, placed
by single-device (10 ms) and round-robin (8 ms, ×0.80 single-device), a training run and an experiment run.
HTML exports (no browser) check the figures' numbers; three image exports (kaleido, and chromium for the placement
page) check the files and the 1600 × 900 size.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest
from cli_run import run_cli
from hand_runs import LEARNING_RATE, Store

from dashboard.figures.theme import EXPORT_DEFAULTS, SYSTEM_CHROMIUM
from placelab import cli_plot

needs_chromium = pytest.mark.skipif(not SYSTEM_CHROMIUM.exists(), reason=f"export needs chromium at {SYSTEM_CHROMIUM}")


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Store:
    return Store(tmp_path_factory.mktemp("plot") / "runs")


def plot(capsys, store: Store, *args: str) -> tuple[int, str, str]:
    return run_cli(capsys, "plot", *args, "--runs-dir", store.root)


def _array(v: object) -> list:
    """A plotly JSON array: a list, or plotly's typed array ``{"dtype", "bdata"}`` (base64)."""
    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"]).tolist()
    return list(v)


def figure_in(page: str) -> tuple[list[dict], dict]:
    """The traces and the layout a plotly HTML page draws (the arguments of its ``Plotly.newPlot``)."""
    decoder = json.JSONDecoder()
    start = page.index("Plotly.newPlot(")
    data, end = decoder.raw_decode(page, page.index("[", start))
    layout, _ = decoder.raw_decode(page, page.index("{", end))
    return data, layout


def html_figure(capsys, store: Store, tmp_path: Path, *args: str) -> tuple[list[dict], dict]:
    out = tmp_path / "figure.html"
    code, stdout, err = plot(capsys, store, *args, "-o", str(out), "--json")
    assert code == 0, err
    info = json.loads(stdout)
    assert info["output"] == str(out) and info["format"] == "html" and info["bytes"] == out.stat().st_size
    data, layout = figure_in(out.read_text())
    # the export menu's settings: slide size, presentation font, white background
    assert (layout["width"], layout["height"], layout["font"]["size"]) == (1600, 900, 22)
    assert layout["paper_bgcolor"] == "white"
    return data, layout


def test_the_size_is_the_export_menus():
    assert dict(zip(("width", "height", "font_size"), (cli_plot.WIDTH, cli_plot.HEIGHT, cli_plot.FONT_SIZE),
                    strict=True)) == EXPORT_DEFAULTS


def test_timeline_is_the_default_figure_of_one_run(store, capsys, tmp_path):
    _, layout = html_figure(capsys, store, tmp_path, store.rr)
    assert "hand on two — makespan 8 ms" in layout["title"]["text"]
    assert [s["x0"] for s in layout["shapes"]] == [pytest.approx(8.0)]  # the makespan's dotted line, ms


def test_load_profile_splits_compute_and_memcpy(store, capsys, tmp_path):
    data, _ = html_figure(capsys, store, tmp_path, store.rr, "--figure", "load", "--title", "Round-robin")
    bars = {t["name"].split()[0]: _array(t["y"]) for t in data}  # "memcpy (…)": the legend explains
    assert bars == {"compute": pytest.approx([3.0, 7.0]),  # gpu:0 runs a and b, gpu:1 d and c (ms)
                    "memcpy": pytest.approx([2.0, 0.0])}  # b's 2000 B at 1 MB/s


def test_memory_draws_a_line_per_device(store, capsys, tmp_path):
    data, _ = html_figure(capsys, store, tmp_path, store.rr, "--figure", "memory")
    assert [t["name"] for t in data] == ["gpu:0", "gpu:1"]


def test_bars_are_the_default_for_several_runs(store, capsys, tmp_path):
    data, layout = html_figure(capsys, store, tmp_path, store.single, store.rr[:-2], "--title", "Two placers")
    assert layout["title"]["text"] == "Two placers"
    makespans = {t["name"]: _array(t["y"]) for t in data if t["type"] == "bar"}
    assert makespans == {"single-device": pytest.approx([10.0]), "round-robin": pytest.approx([8.0])}
    assert [t["text"] for t in data if t["type"] == "bar"] == [["10 · ×1.00"], ["8 · ×0.80"]]
    assert "lower bound (6 ms)" in [t["name"] for t in data]


def test_curves_of_a_training_run(store, capsys, tmp_path):
    data, layout = html_figure(capsys, store, tmp_path, store.train, "--figure", "curves")
    assert layout["title"]["text"] == "Learning curves (smoothing 0.6)"
    lines = {t["name"]: (_array(t["x"]), _array(t["y"])) for t in data}
    assert lines["my training sampled"] == ([1, 2, 3], pytest.approx([4.0, 3.0, 2.0]))  # ms, not smoothed
    assert lines["my training learning_rate"] == ([1, 2, 3], pytest.approx(LEARNING_RATE))


def test_cdf_of_an_experiment_run(store, capsys, tmp_path):
    data, _ = html_figure(capsys, store, tmp_path, store.experiment, "--figure", "cdf")
    steps = {t["name"]: (_array(t["x"]), _array(t["y"])) for t in data}
    assert steps == {"Zero-Shot": (pytest.approx([1.2, 1.2, 1.5]), [0.0, 0.5, 1.0]),
                     "Random": (pytest.approx([2.0, 2.0, 3.0]), [0.0, 0.5, 1.0])}


def test_last_draws_the_newest_runs(store, capsys, tmp_path):
    """The store's runs, oldest first: single-device, round-robin, the training, the experiment."""
    code, out, err = plot(capsys, store, "--last", "1", "--figure", "cdf", "-o", str(tmp_path / "cdf.html"), "--json")
    assert code == 0, err
    assert json.loads(out)["runs"] == [store.experiment]
    code, out, err = plot(capsys, store, "--last", "3", "--figure", "curves", "-o", str(tmp_path / "c.html"))
    assert code == 2 and f"run {store.rr} is a place run" in err  # the three newest, oldest first


def test_placement_page_as_html(store, capsys, tmp_path):
    out = tmp_path / "graph.html"
    code, stdout, err = plot(capsys, store, store.rr, "--figure", "placement", "-o", str(out))
    assert code == 0, err
    assert stdout == f"wrote {out}: placement of {store.rr} (HTML)\n"
    page = out.read_text()
    assert "vis-network" in page and "gpu:0" in page and "gpu:1" in page


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


@needs_chromium
def test_images_at_slide_size(store, capsys, tmp_path):
    """A PNG and an SVG through kaleido, and the placement page painted by chromium: 1600 × 900."""
    png, svg, graph = tmp_path / "timeline.png", tmp_path / "bars.svg", tmp_path / "graph.png"
    code, out, err = plot(capsys, store, store.rr, "-o", str(png))
    assert code == 0, err
    assert out == f"wrote {png}: timeline of {store.rr} (PNG, 1600 × 900 px)\n"
    assert _png_size(png.read_bytes()) == (1600, 900)
    code, _, err = plot(capsys, store, store.single, store.rr, "--figure", "bars", "-o", str(svg))
    assert code == 0, err
    head = svg.read_text()[:400]
    assert head.startswith("<svg") and 'width="1600"' in head and 'height="900"' in head
    code, _, err = plot(capsys, store, store.rr, "--figure", "placement", "-o", str(graph))
    assert code == 0, err
    assert _png_size(graph.read_bytes()) == (1600, 900)


BAD = {
    "unknown run": (["nosuchrun", "-o", "x.png"], "no run matches 'nosuchrun'"),
    "no runs": (["-o", "x.png"], "name the runs to draw: RUN ids, or --last N for the newest N runs"),
    "runs and --last": (["{rr}", "--last", "1", "-o", "x.png"], "name the runs by RUN ids or by --last N, not both"),
    "more runs than stored": (["--last", "9", "-o", "x.png"], "holds 4 readable runs"),
    "unknown figure": (["{rr}", "--figure", "pie", "-o", "x.png"],
                       "--figure 'pie' is not a figure (figures: timeline, load, memory, placement, bars, cdf, "
                       "curves)"),
    "wrong suffix": (["{rr}", "-o", "x.jpg"], "-o 'x.jpg': the file name must end in .png, .svg, .pdf or .html"),
    "no suffix": (["{rr}", "-o", "slide"], "the file name must end in .png, .svg, .pdf or .html"),
    "curves of a placement run": (["{rr}", "--figure", "curves", "-o", "x.png"],
                                  "run {rr} is a place run: --figure curves draws training runs"),
    "cdf of a placement run": (["{rr}", "--figure", "cdf", "-o", "x.png"],
                               "run {rr} is a place run: --figure cdf draws eval and experiment runs"),
    "bars of a training run": (["{single}", "{train}", "--figure", "bars", "-o", "x.png"],
                               "run {train} (train, done) has no makespan: --figure bars draws placement runs"),
    "timeline of a training run without a placement": (["{train}", "-o", "x.png"],
                                                        "run {train} (train) has no placement to draw"),
    "timeline of two runs": (["{single}", "{rr}", "--figure", "timeline", "-o", "x.png"],
                             "--figure timeline draws one run, 2 were given (--figure bars compares runs)"),
    "placement as svg": (["{rr}", "--figure", "placement", "-o", "x.svg"],
                         "--figure placement is written as .png or .html, not .svg"),
    "a title on the placement page": (["{rr}", "--figure", "placement", "--title", "t", "-o", "x.html"],
                                      "--title is for the plotly figures"),
    "too narrow": (["{rr}", "--width", "100", "-o", "x.png"], "--width"),
    "no output": (["{rr}"], "Missing option '--output'"),
    "a missing folder": (["{rr}", "-o", "no/such/x.png"], "no/such/x.png"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_line_and_exit_2(store, capsys, tmp_path, monkeypatch, case):
    monkeypatch.chdir(tmp_path)
    ids = {"rr": store.rr, "single": store.single, "train": store.train}
    args, message = BAD[case]
    code, out, err = plot(capsys, store, *(a.format(**ids) for a in args))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    assert message.format(**ids) in err
    assert not (tmp_path / "x.png").exists() and not (tmp_path / "x.html").exists()


def test_no_renderer_is_one_line_and_exit_2(store, capsys, tmp_path, monkeypatch):
    import dashboard.figures.theme as theme

    monkeypatch.setattr(theme, "export_bytes", lambda *a, **k: None)  # kaleido or chromium missing
    out = tmp_path / "x.pdf"
    code, _, err = plot(capsys, store, store.rr, "-o", str(out))
    assert code == 2 and not out.exists()
    assert err == ("error: cannot render PDF: image export needs kaleido and the system chromium (make setup "
                   "browser-deps); write .html instead\n")


def test_no_chromium_for_the_placement_png_is_one_line_and_exit_2(store, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "no-chromium"))
    out = tmp_path / "graph.png"
    code, _, err = plot(capsys, store, store.rr, "--figure", "placement", "-o", str(out))
    assert code == 2 and not out.exists()
    assert err == (f"error: cannot render PNG: the placement page needs chromium ({tmp_path / 'no-chromium'}, make "
                   "setup browser-deps); write .html instead\n")
