"""``placelab report`` (issue #58, item 1): stored runs as a slide deck (PPTX) or one self-contained HTML page.

The runs are hand-made (``hand_runs.py``, which works out their numbers): single-device (10 ms, ×1, lower bound
6 ms → ×1.667, no communication) and round-robin (8 ms, ×0.80, ×1.333, 2000 B = 0.002 MB) on a four-op graph,
a training run with a three-episode curve, and here an executed copy of the round-robin run (its measured
makespan 9 ms ± 0.5 ms over 3 repeats, as ``--execute`` stores it) and a sweep run, which a report cannot show.

The report of single-device, round-robin, the executed run and the training has, by hand: a title slide; the
comparison table; the makespan bars; the best placement's (round-robin: 8 ms, the lowest, first of two) timeline
and memory; the simulated and measured bars; the learning curves; the learning-health table: 8 slides, 5
pictures, 2 tables. Two files are made (5 + 5 image exports through kaleido: seconds each).
"""

from __future__ import annotations

import base64
import io
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from cli_run import run_cli
from hand_runs import GRAPH, Store

from dashboard.figures.theme import SYSTEM_CHROMIUM
from dashboard.report.export import REPORT_FORMATS
from engine.graph.io import graph_from_dict
from engine.specs import load_cluster
from engine.store.runs import RunStore
from placelab import cli_report
from placelab.runner import place_and_simulate, store_result

pptx = pytest.importorskip("pptx")
needs_chromium = pytest.mark.skipif(not SYSTEM_CHROMIUM.exists(), reason=f"export needs chromium at {SYSTEM_CHROMIUM}")
#: The executed run's measurement, as ``place --execute --save`` stores it (s).
MEASURED = {"measured_makespan_s": 0.009, "measured_std_s": 0.0005, "measured_repeats": 3}
COMPARISON = ("run", "makespan (ms)", "×single-device", "×lower bound", "OOM", "communication (MB)")


class ReportStore(Store):
    """The hand-made store, with an executed round-robin run and a sweep run."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        store = RunStore(root)
        graph, cluster = graph_from_dict(GRAPH), load_cluster(str(root.parent / "cluster.json"))
        res = place_and_simulate(graph, cluster, "round-robin")
        res = replace(res, metrics={**res.metrics, **MEASURED})
        self.executed = store_result(store, graph, cluster, res, seed=0, budget=None, params=None,
                                     kind="place").run_id
        store.rename(self.executed, "executed")
        sweep = store.create("sweep", graph_name="hand", graph_hash="", cluster="two", placer="round-robin",
                             parameters={}, seed=0)
        sweep.finish("done", {})
        self.sweep = sweep.id
        self.runs = {r.id: r for r in store.list()}

    @property
    def reported(self) -> list[str]:
        return [self.single, self.rr, self.executed, self.train]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> ReportStore:
    # run ids end in 4 random hex digits; two round-robin runs made in the same second shared their first two
    # once, and a prefix test read "ambiguous": here the n-th run ends in n's digit four times (1111, 2222, ...)
    suffixes = (f"{i % 16:x}" * 4 for i in range(1, 1000))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("engine.store.runs.secrets.token_hex", lambda nbytes: next(suffixes))
        return ReportStore(tmp_path_factory.mktemp("report") / "runs")


def report(capsys, store: Store, *args: str) -> tuple[int, str, str]:
    return run_cli(capsys, "report", *args, "--runs-dir", store.root)


def test_the_formats_are_the_reports():
    assert tuple(REPORT_FORMATS) == cli_report.FORMATS


def _tables(slide) -> list[list[list[str]]]:
    return [[[c.text for c in row.cells] for row in shape.table.rows] for shape in slide.shapes if shape.has_table]


@needs_chromium
def test_a_deck_with_its_table_pictures_and_notes(store, capsys, tmp_path):
    out = tmp_path / "deck.pptx"
    code, stdout, err = report(capsys, store, *store.reported, "-o", str(out), "--json")
    assert code == 0, err
    info = json.loads(stdout)
    assert info["format"] == "pptx" and info["runs"] == store.reported and info["bytes"] == out.stat().st_size
    deck = pptx.Presentation(io.BytesIO(out.read_bytes()))
    slides = list(deck.slides)
    assert len(slides) == 8
    pictures = [s for s in slides for shape in s.shapes if shape.shape_type == pptx.enum.shapes.MSO_SHAPE_TYPE.PICTURE]
    assert len(pictures) == 5
    tables = [t for s in slides for t in _tables(s)]
    assert len(tables) == 2
    comparison = next(t for t in tables if tuple(t[0]) == COMPARISON)
    rows = {row[0]: row[1:] for row in comparison[1:]}
    rr = f"round-robin · {store.rr}"  # a placer on two rows: each with its run's name (the id by default)
    assert list(rows) == ["single-device", rr, "round-robin · executed"]
    # the numbers the runs stored, and those worked out by hand
    for run_id, label in zip(store.reported, rows, strict=False):
        stored = store.runs[run_id].meta["metrics"]["makespan_s"] * 1e3
        assert float(rows[label][0]) == pytest.approx(stored, rel=1e-3)
    assert rows["single-device"] == ["10", "1", "1.667", "no", "0"]
    assert rows[rr] == rows["round-robin · executed"] == ["8", "0.8", "1.333", "no", "0.002"]
    assert [s.shapes.title.text for s in slides[3:5]] == [
        f"Best placement ({rr}): Timeline of hand on two — makespan 8 ms",
        f"Best placement ({rr}): Memory in use per device"]
    # provenance in the notes: the command that makes it again, every run; each figure's own command
    notes = [s.notes_slide.notes_text_frame.text for s in slides]
    assert f"placelab report {' '.join(store.reported)} -o deck.pptx --runs-dir {store.root}" in notes[0]
    assert all(run_id in notes[0] for run_id in store.reported)
    assert f"placelab plot {store.rr} --figure timeline -o timeline.png" in notes[3]
    title = slides[0].placeholders[1].text
    assert "cluster: two" in title and "simulation mode: default" in title and "code version:" in title


@needs_chromium
def test_html_is_one_self_contained_page(store, capsys, tmp_path):
    out = tmp_path / "report.html"
    code, stdout, err = report(capsys, store, *store.reported, "-o", str(out))
    assert code == 0, err
    assert stdout.startswith(f"wrote {out}: a report of 4 runs (HTML, ")
    page = out.read_text(encoding="utf-8")
    # nothing fetched: no script, no style sheet, image or font from elsewhere
    assert "<script" not in page and "@import" not in page
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//|url\(\s*["']?\s*(https?:)?//""", page, re.I)
    images = re.findall(r'<img alt="[^"]*" src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)">', page)
    assert len(images) == page.count("<img") == 5
    assert all(base64.b64decode(i).lstrip().startswith(b"<svg") for i in images)
    assert page.count("<table>") == 2
    assert ("<tr><td>round-robin · executed</td><td>8</td><td>0.8</td><td>1.333</td><td>no</td><td>0.002</td></tr>"
            in page)
    assert f"placelab report {' '.join(store.reported)} -o report.html" in page  # the notes


def test_a_run_named_twice_is_reported_once_and_last_takes_the_newest(store, capsys, tmp_path, monkeypatch):
    import dashboard.report.export as export

    seen = []
    monkeypatch.setattr(export, "report_bytes", lambda runs, fmt, output: seen.append([r.id for r in runs]) or b"x")
    code, _, err = report(capsys, store, store.rr, store.rr[:-2], "-o", str(tmp_path / "a.html"))
    assert code == 0, err
    code, _, err = report(capsys, store, "--last", "2", "-o", str(tmp_path / "b.html"))
    assert code == 0, err
    newest = RunStore(store.root).list()[:2]  # newest first; the report takes them oldest first
    assert seen == [[store.rr], [newest[1].id, newest[0].id]] and newest[0].id == store.sweep


BAD = {
    "unknown run": (["nosuchrun", "-o", "x.pptx"], "no run matches 'nosuchrun'"),
    "no runs": (["-o", "x.pptx"], "name the runs to report on: RUN ids, or --last N for the newest N runs"),
    "runs and --last": (["{rr}", "--last", "1", "-o", "x.pptx"], "name the runs by RUN ids or by --last N, not both"),
    "wrong suffix": (["{rr}", "-o", "x.pdf"], "-o 'x.pdf': the file name must end in .pptx or .html (the format)"),
    "no suffix": (["{rr}", "-o", "deck"], "the file name must end in .pptx or .html"),
    "a run with nothing to report": (["{rr}", "{sweep}", "-o", "x.pptx"],
                                     "run {sweep} (sweep, done) has nothing a report shows"),
    "a missing folder": (["{rr}", "-o", "no/such/x.pptx"], "no/such/x.pptx"),
    "no output": (["{rr}"], "Missing option '--output'"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_line_and_exit_2(store, capsys, tmp_path, monkeypatch, case):
    monkeypatch.chdir(tmp_path)
    ids = {"rr": store.rr, "sweep": store.sweep}
    args, message = BAD[case]
    code, out, err = report(capsys, store, *(a.format(**ids) for a in args))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    assert message.format(**ids) in err
    assert not list(tmp_path.glob("x.*")) and not (tmp_path / "deck").exists()


def test_no_renderer_is_one_line_and_exit_2(store, capsys, tmp_path, monkeypatch):
    """kaleido or chromium missing: no image of a figure, in either format, and no file."""
    import dashboard.report.export as export

    monkeypatch.setattr(export, "export_bytes", lambda *a, **k: None)
    for fmt, image in (("pptx", "PNG"), ("html", "SVG")):
        out = tmp_path / f"report.{fmt}"
        assert report(capsys, store, store.rr, "-o", str(out)) == (
            2, "", f"error: cannot render the report's figures ({image}): image export needs kaleido and the system "
                   "chromium (make setup browser-deps)\n")
        assert not out.exists()
