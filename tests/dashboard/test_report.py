"""The *Report* buttons of Compare and Papers (issue #58, item 1) and the report's slides of a reproduction.

The images of a report's figures are stood in for here by a 16 × 9 px PNG or a tiny SVG (the real exports, through
kaleido, are tested by ``tests/cli/test_cli_report.py``): what is checked is which slides, tables and pictures
the report holds, and that its table holds the runs' stored numbers.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from PIL import Image
from streamlit.testing.v1 import AppTest

import dashboard.report.export as export
from dashboard.report.html_file import html_bytes
from dashboard.report.slides import TABLE_ROWS, build_deck
from engine.store.runs import RunStore

pptx = pytest.importorskip("pptx")
REPO = Path(__file__).resolve().parents[2]
LABELS = ["Report (PPTX)", "Report (HTML)"]


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (16, 9), "white").save(out, format="PNG")
    return out.getvalue()


@pytest.fixture
def no_browser(monkeypatch):
    """Figures exported as a small PNG or SVG without kaleido; the formats asked for are recorded."""
    asked = []

    def image(fig, fmt, **kwargs):
        asked.append(fmt)
        return _png() if fmt == "png" else b'<svg xmlns="http://www.w3.org/2000/svg" width="16" height="9"/>'

    monkeypatch.setattr(export, "export_bytes", image)
    return asked


def _buttons(monkeypatch, call) -> dict:
    """The download buttons ``call()`` draws: label → (data, keyword arguments)."""
    from streamlit.delta_generator import DeltaGenerator

    made = {}
    monkeypatch.setattr(DeltaGenerator, "download_button",
                        lambda self, label, data, **kw: made.__setitem__(label, (data, kw)))
    call()
    return made


def test_compare_offers_a_report_of_the_runs_compared(stored_runs):
    app = AppTest.from_string("from dashboard.app_pages import compare\ncompare.page()\n").run()
    assert not app.exception
    buttons = {b.proto.label: b for b in app.get("download_button")}
    assert set(LABELS) <= set(buttons)
    assert buttons["Report (PPTX)"].key == "compare_report_pptx"


def test_the_compare_button_makes_the_deck_of_the_runs_compared(stored_runs, monkeypatch, no_browser):
    """Two placement runs: the title slide, the table, the bars, the best one's timeline and memory."""
    from dashboard.widgets.report_buttons import report_buttons

    store, ids, _ = stored_runs
    runs = [store.load(i) for i in ids]
    made = _buttons(monkeypatch, lambda: report_buttons(runs, "k"))
    assert sorted(made) == sorted(LABELS)
    assert made["Report (PPTX)"][1]["file_name"] == "report.pptx" and made["Report (HTML)"][1]["mime"] == "text/html"
    deck = pptx.Presentation(io.BytesIO(made["Report (PPTX)"][0]()))
    assert no_browser == ["png"] * 3
    slides = list(deck.slides)
    assert len(slides) == 5
    assert sum(shape.shape_type == pptx.enum.shapes.MSO_SHAPE_TYPE.PICTURE for s in slides for shape in s.shapes) == 3
    (table,) = [shape.table for shape in slides[1].shapes if shape.has_table]
    cells = [[c.text for c in row.cells] for row in table.rows]
    assert cells[0][:2] == ["run", "makespan (ms)"]
    stored = {r.meta["placer"]: r.meta["metrics"]["makespan_s"] * 1e3 for r in runs}
    assert {row[0]: pytest.approx(float(row[1]), rel=1e-3) for row in cells[1:]} == stored
    assert cells[1][2] == "1"  # single-device's ×single-device
    page = made["Report (HTML)"][0]().decode()
    assert page.count("<img") == 3 and page.count("<table>") == 1


def _reproduction(root: Path, rows: int) -> str:
    """A hand-made reproduction run: ``rows`` cells of our table beside the paper's (ours = the row number, the
    paper's 10), the commands it ran, and one stored figure."""
    store = RunStore(root)
    run = store.create("reproduce", graph_name="tiny-table", graph_hash="", cluster="", placer="tiny-table",
                       parameters={"setting": "quick", "paper": "Tiny et al.", "citation": "Tiny, Table 1"}, seed=0)
    run.write_table("table.csv", {"row": [f"g{i}" for i in range(rows)], "column": ["Learned"] * rows,
                                  "ours": [float(i) for i in range(rows)], "paper": [10.0] * rows,
                                  "ratio": [i / 10 for i in range(rows)], "unit": ["s"] * rows})
    run.write_json("commands.json", {"steps": [{"command": "placelab compare gen:chain -c k80x2 --seed 4"}]})
    run.write_json("figures/cdf.json", {"kind": "curves", "title": "tiny curves",
                                        "series": {"ours": {"x": [1, 2], "y": [3, 4]}}})
    run.finish("done", {"cells_compared": rows})
    return run.id


def test_a_reproductions_report_splits_its_table_and_keeps_its_commands(tmp_path):
    root = tmp_path / "runs"
    run = RunStore(root).load(_reproduction(root, TABLE_ROWS + 2))
    deck = build_deck([run], command="placelab report X -o r.pptx")
    assert deck.title == "tiny-table: a reproduction"
    assert [s.title for s in deck.slides] == ["tiny-table: ours beside the paper (1/2)",
                                              "tiny-table: ours beside the paper (2/2)", "tiny-table: ours / paper",
                                              "tiny-table: tiny curves"]
    first, second = deck.slides[0].table, deck.slides[1].table
    assert first.columns[:4] == ("row", "column", "ours", "paper")
    assert len(first.rows) == TABLE_ROWS and [r[:4] for r in second.rows] == [("g12", "Learned", "12", "10"),
                                                                             ("g13", "Learned", "13", "10")]
    assert "placelab reproduce tiny-table --quick" in deck.slides[0].notes
    assert "placelab compare gen:chain -c k80x2 --seed 4" in deck.slides[0].notes
    page = html_bytes(deck, [b"<svg/>"] * len(deck.figures)).decode()
    assert page.count("<table>") == 2 and page.count("<img") == 2 and "(2/2)" in page


def test_a_held_out_reproductions_report_shows_ours_alone():
    """The bundled heldout-learning run has no paper numbers: its table slides hold row, column, ours and unit, and
    there is no ours / paper chart; its six figures follow."""
    bundled = sorted((REPO / "runs").glob("*-reproduce-heldout-learning-*"))
    assert bundled, "the repository ships a heldout-learning run"
    run = RunStore(REPO / "runs").load(bundled[-1].name)
    deck = build_deck([run], command="placelab report X -o r.pptx")
    tables = [s for s in deck.slides if s.table is not None]
    assert tables and all(s.table.columns == ("row", "column", "ours", "unit") for s in tables)
    assert tables[0].title.startswith("heldout-learning: ours (no paper numbers)")
    assert tables[0].table.rows[0][:3] == ("rnn: all graphs", "graphs", "12")
    assert not any("ours / paper" in s.title for s in deck.slides)
    assert len(deck.slides) == len(tables) + 6


def test_papers_offers_a_report_of_the_reproduction_shown(empty_runs, monkeypatch):
    bundled = sorted((REPO / "runs").glob("*-reproduce-placeto-ablations-*"))
    assert bundled, "the repository ships a placeto-ablations run"
    shutil.copytree(bundled[-1], empty_runs / bundled[-1].name)
    app = AppTest.from_string("from dashboard.app_pages import papers\npapers.page()\n").run()
    assert not app.exception and not app.error
    buttons = {b.proto.label: b for b in app.get("download_button")}
    assert set(LABELS) <= set(buttons)
    assert buttons["Report (HTML)"].key == "papers_report_html"

