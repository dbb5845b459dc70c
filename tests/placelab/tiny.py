"""A tiny reproduction, registered for the tests only, with its own paper data file (fixture `tiny_reproduction`)."""

import json

import pytest

from placelab.reproduce import papers, registry
from placelab.reproduce.core import Build, Reproduction, steps_for
from placelab.reproduce.reading import compare_cells

TINY_GRAPH = "gen:random?ops=30&seed=3"
PAPER = {"paper": "A. Author, Tiny placements, 2099",
         "tables": {"t1": {"citation": "Tiny, Table 1", "units": {"Single": "s", "Round robin": "s", "Learned": "s"},
                           "rows": {"tiny / 2 GPUs": {"Single": 2.0, "Round robin": [4.0, 0.5], "Learned": "OOM"}}}}}


def tiny_steps(quick: bool):
    return steps_for([("base", ("compare", TINY_GRAPH, "-c", "k80x2", "--placers", "single-device,round-robin")),
                      ("broken", ("compare", TINY_GRAPH, "-c", "k80x2", "--placers", "no-such-placer"))], seed=4)


def tiny_build(out, runs_dir, quick):
    cells = compare_cells("tiny / 2 GPUs", out.get("base"), {"Single": "single-device", "Round robin": "round-robin"})
    cells += compare_cells("tiny / 2 GPUs", out.get("broken"), {"Learned": "no-such-placer"})
    return Build(cells, {"cdf": {"kind": "cdf", "title": "tiny CDF", "series": {"a": [1.0, 2.0]}}}, ["a note"])


@pytest.fixture
def tiny_reproduction(tmp_path, monkeypatch):
    """``tiny-table`` registered, its paper file in a temporary papers directory."""
    d = tmp_path / "papers"
    d.mkdir()
    (d / "tiny.json").write_text(json.dumps(PAPER))
    monkeypatch.setattr(papers, "PAPERS_DIR", d)
    papers._paper.cache_clear()
    registry.all_reproductions()
    rep = Reproduction("tiny-table", "a tiny table", "tiny", "t1", tiny_steps, tiny_build, quick_minutes=0.1,
                       reference="Single")
    monkeypatch.setitem(registry.REPRODUCTIONS, "tiny-table", rep)
    yield rep
    papers._paper.cache_clear()
