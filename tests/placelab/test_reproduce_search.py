"""The search reference as a reproduction's column (``placelab reproduce NAME --search N``): its steps, its column
named with its budget, each cell's ×search, and the reproductions that have one."""

from dataclasses import replace

import pytest

from engine.errors import SpecError
from engine.presets import PRESETS
from engine.specs import load_graph
from engine.store.runs import RunStore
from placelab.cli import run_command
from placelab.reproduce import registry
from placelab.reproduce.core import Cell, SearchColumn, Step, search_column_name
from placelab.reproduce.papers import join
from placelab.reproduce.runner import reproduce
from placelab.runner import place_and_simulate
from tests.placelab.test_reproduce_doppler import _parses
from tests.placelab.tiny import TINY_GRAPH

ROW = "tiny / 2 GPUs"


def test_search_column_name_states_the_budget():
    assert search_column_name(20_000) == "Search (anneal: 20,000 evaluations, no time limit, seed 0)"


def test_join_divides_each_cell_by_the_search_cell_of_its_row(tiny_reproduction):
    column = search_column_name(100)
    cells = [Cell(ROW, "Single", 3.0), Cell(ROW, "Round robin", 6.0), Cell(ROW, "Learned", 1.0, oom=True),
             Cell(ROW, column, 2.0)]
    rows = {r["column"]: r for r in join(cells, "tiny", "t1", reference="Single", search=column)}
    # by hand: 3 / 2 and 6 / 2; an OOM cell has none; the search column is in the reference's unit (s)
    assert rows["Single"]["x_search"] == 1.5 and rows["Round robin"]["x_search"] == 3.0
    assert rows["Learned"]["x_search"] is None
    assert rows[column]["x_search"] == 1.0 and rows[column]["unit"] == "s"
    assert all(r["x_search"] is None for r in join(cells, "tiny", "t1", reference="Single"))


def _tiny_search(evaluations: int) -> list[Step]:
    return [Step("search", ("place", TINY_GRAPH, "-c", "k80x2", "--placer", "anneal", "--param",
                            f"evaluations={evaluations}", "--save", "--seed", "4"), 4)]


def _tiny_cells(out, runs_dir, column):
    return [Cell(ROW, column, (out.get("search") or {}).get("makespan_s"))]


def test_reproduction_with_search_adds_the_column_and_x_search(tiny_reproduction, tmp_path, monkeypatch):
    monkeypatch.setitem(registry.REPRODUCTIONS, "tiny-table",
                        replace(tiny_reproduction, search=SearchColumn(_tiny_search, _tiny_cells)))
    root = tmp_path / "runs"
    res = reproduce("tiny-table", command=run_command, quick=True, runs_dir=str(root), search=300)
    column = "Search (anneal: 300 evaluations, no time limit, seed 0)"
    rows = {r["column"]: r for r in res["table"]}
    # independently: the same placers simulated directly
    g, c = load_graph(TINY_GRAPH), PRESETS["k80x2"]()
    search = place_and_simulate(g, c, "anneal", seed=4, params={"evaluations": 300}).metrics["makespan_s"]
    single = place_and_simulate(g, c, "single-device", seed=4).metrics["makespan_s"]
    assert rows[column]["ours"] == pytest.approx(search, rel=1e-12)
    assert rows["Single"]["x_search"] == pytest.approx(single / search, rel=1e-12)
    assert rows["Learned"]["x_search"] is None  # its step failed
    assert any(column in n for n in res["notes"])
    store = RunStore(root)
    run = store.load(res["run_id"])
    assert run.meta["parameters"]["search"] == 300
    assert run.read_table("table.csv")["x_search"][run.read_table("table.csv")["column"].index("Single")] == \
        pytest.approx(single / search, rel=1e-12)
    searched = [r for r in store.list(tag=f"reproduce:{run.id}") if r.meta["placer"] == "anneal"]
    assert [r.meta["parameters"]["evaluations"] for r in searched] == [300]


def test_the_command_prints_x_search_and_the_budget(tiny_reproduction, tmp_path, monkeypatch, capsys):
    from placelab.cli import main

    monkeypatch.setitem(registry.REPRODUCTIONS, "tiny-table",
                        replace(tiny_reproduction, search=SearchColumn(_tiny_search, _tiny_cells)))
    main(["reproduce", "tiny-table", "--quick", "--search", "300", "--runs-dir", str(tmp_path / "runs")])
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("row"))
    assert "×search" in header.split()
    assert "Search (anneal: 300 evaluations, no time limit, seed 0)" in out


def test_search_is_refused_where_a_reproduction_has_no_search_column(tiny_reproduction, tmp_path):
    with pytest.raises(SpecError, match="reproduction 'tiny-table' has no search reference column; --search "
                                        "applies to doppler-table2"):
        reproduce("tiny-table", command=run_command, quick=True, runs_dir=str(tmp_path / "runs"), search=100)
    assert RunStore(tmp_path / "runs").list() == []


@pytest.mark.parametrize("name", ["doppler-table2", "doppler-table3", "doppler-table8", "doppler-table9"])
def test_doppler_search_steps_parse_and_execute_as_the_methods_do(name):
    rep = registry.get(name)
    steps = rep.search.steps(20_000)
    for s in steps:
        _parses(s.argv)
    finds = [s for s in steps if s.key.startswith("find/search/")]
    assert [s.key for s in finds] == [f"find/search/{r}" for r in ("CHAINMM", "FFNN", "LLAMA-BLOCK", "LLAMA-LAYER")]
    assert all(s.argv[4:8] == ("--placer", "anneal", "--param", "evaluations=20000") for s in finds)
    executions = [s for s in steps if s.key.startswith("exec/search/")]
    assert [s.references() for s in executions] == [[s.key] for s in finds]
    assert registry.get("doppler-table4").search is None
