"""``placelab reproduce heldout-learning`` (placelab.reproduce.heldout): its steps, and its table built from outputs
written by hand, every ratio worked out beside it."""

import pytest

from engine.store.runs import RunStore
from placelab.reproduce import heldout, registry
from placelab.reproduce.papers import join, paper_table
from placelab.reproduce.results_doc import table_rows
from tests.cli.cli_run import run_cli
from tests.placelab.test_reproduce_doppler import _parses

MS = 1e-3
#: the quick setting's graphs, worked out from the issue: label → (ops, GPUs, seed)
QUICK = {f"{ops} ops / {n} GPUs / default / seed {s}": (ops, n, s) for ops in (50, 100) for n in (2, 4)
         for s in (0, 1, 2)}
QUICK_GRAPHS = list(QUICK)


def _opt(argv: tuple[str, ...], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_quick_steps_are_as_specified():
    """Quick: 2 sizes × 2 device counts × 1 mode × 3 seeds = 12 graphs; per graph one compare of the five list
    schedulers and a training of each of the four learned placers, 20 episodes each, from scratch."""
    steps = registry.get("heldout-learning").steps(True)
    assert len(steps) == 12 * 5
    assert [s.key for s in steps if s.key.startswith("list/")] == [f"list/{g}" for g in QUICK_GRAPHS]
    for s in steps:
        ops, n, seed = QUICK[s.key.split("/", 1)[1]]
        spec = f"gen:random?ops={ops}&seed={seed}"
        assert s.seed == seed and s.argv[-2:] == ("--seed", str(seed))
        assert _opt(s.argv, "-c") == {2: "k80x2", 4: "k80x4"}[n] and _opt(s.argv, "--mode") == "default"
        if s.key.startswith("list/"):
            assert s.argv[:2] == ("compare", spec)
            assert _opt(s.argv, "--placers") == "heft,m-etf,m-topo,m-sct,critical-path" and "--no-save" in s.argv
        else:
            placer = s.key.split("/")[0]
            assert placer in ("rnn", "placeto", "doppler", "gdp")
            assert s.argv[:5] == ("train", "--placer", placer, "-g", spec)
            assert (_opt(s.argv, "--episodes"), _opt(s.argv, "--stop-window"), _opt(s.argv, "--threads")) == (
                "20", "0", "1")
            assert "--save" in s.argv and "--init-from" not in s.argv and "--stage" not in s.argv
            assert "--param" not in s.argv  # every placer's defaults


def test_full_setting_covers_the_issue_and_the_papers_budgets():
    """Full: 50/200/500 ops × 2/4/8 K80s × the three modes × 3 seeds, DOPPLER §6.1's 4k / 8k episodes."""
    steps = registry.get("heldout-learning").steps(False)
    trains = [s for s in steps if s.argv[0] == "train"]
    assert len(steps) == 3 * 3 * 3 * 3 * 5 and len(trains) == 81 * 4
    assert {_opt(s.argv, "-c") for s in steps} == {"k80x2", "k80x4", "k80x8"}
    assert {_opt(s.argv, "--mode") for s in steps} == {"placeto", "default", "work_conserving"}
    assert {s.seed for s in steps} == {0, 1, 2}
    budget = {_opt(s.argv, "-g"): int(_opt(s.argv, "--episodes")) for s in trains}
    assert budget["gen:random?ops=50&seed=0"] == budget["gen:random?ops=200&seed=2"] == 4000
    assert budget["gen:random?ops=500&seed=1"] == 8000
    assert "--max-seconds" not in {a for s in trains for a in s.argv}


@pytest.mark.parametrize("quick", [True, False])
def test_declared_commands_parse(quick):
    """The commands of the first quick graph, and of the full setting's largest graph of seed 0 on 8 GPUs in each
    mode, are ones the CLI accepts (the others differ from them in numbers only)."""
    steps = registry.get("heldout-learning").steps(quick)
    shown = [s for s in steps if s.key.endswith("50 ops / 2 GPUs / default / seed 0" if quick else "seed 0")
             and (quick or "500 ops / 8 GPUs" in s.key)]
    assert len(shown) == (5 if quick else 15)
    for s in shown:
        _parses(s.argv)


def _compare(**makespans_ms) -> dict:
    """A ``compare`` output: placer → makespan (ms), or "oom:X" / "error"."""
    out = []
    for placer, v in makespans_ms.items():
        name = placer.replace("_", "-")
        if v == "error":
            out.append({"placer": name, "error": "does not apply"})
        elif isinstance(v, str):
            out.append({"placer": name, "makespan_s": float(v[4:]) * MS, "oom": True})
        else:
            out.append({"placer": name, "makespan_s": v * MS, "oom": False})
    return {"results": out}


def _train(verdict: str, best_ms: float, random_ratio: float, random_ms: float, first_ms: float,
           last_ms: float) -> dict:
    return {"run_id": None, "episodes": 20, "best_makespan_s": best_ms * MS,
            "learning_health": {"verdict": verdict, "summary": "numbers", "window": 4, "random_ratio": random_ratio,
                                "random_search": [{"placements": 20, "random_makespan_s": random_ms * MS}],
                                "runtime_first_s": first_ms * MS, "runtime_last_s": last_ms * MS}}


def _cells(build) -> dict:
    return {(c.row, c.column): c for c in build.cells}


def test_table_from_outputs_written_by_hand():
    a, b, c = QUICK_GRAPHS[0], QUICK_GRAPHS[1], QUICK_GRAPHS[2]
    out = {
        # graph a: m-etf's 3.0 ms is the best list scheduler (m-topo's 1.0 ms is OOM, critical-path failed)
        f"list/{a}": _compare(heft=4.0, m_etf=3.0, m_topo="oom:1.0", m_sct=3.5, critical_path="error"),
        f"rnn/{a}": _train("learned", 3.15, 0.9, 3.5, 4.0, 3.2),  # 3.15 / 3.0 = 1.05; 3.2 / 4.0 = 0.8
        # graph b: heft's 2.0 ms is the best
        f"list/{b}": _compare(heft=2.0, m_etf=2.5, m_topo=2.2, m_sct=2.1, critical_path=2.05),
        f"rnn/{b}": _train("no_better_than_random", 3.0, 1.02, 2.94, 5.0, 5.0),  # 3.0 / 2.0 = 1.5
        f"list/{c}": _compare(heft=2.0),
        f"rnn/{c}": {"error": "boom"},
    }
    built = heldout.build(out, "/nonexistent", True)
    cells = _cells(built)
    row = f"rnn / {a}"
    assert cells[row, "learned"].value == 1.0 and cells[row, "learned"].note.startswith("learned:")
    assert cells[row, "best ÷ best list scheduler"].value == pytest.approx(1.05)
    assert "best list scheduler m-etf 3 ms" in cells[row, "best ÷ best list scheduler"].note
    assert cells[row, "best ÷ random search"].value == 0.9
    assert "20 random placements" in cells[row, "best ÷ random search"].note
    assert cells[row, "sampled runtime, last ÷ first window"].value == pytest.approx(0.8)
    assert cells[row, "sampled runtime, last ÷ first window"].note.startswith("4 ms → 3.2 ms")
    row = f"rnn / {b}"
    assert cells[row, "learned"].value == 0.0 and cells[row, "best ÷ best list scheduler"].value == pytest.approx(1.5)
    assert "heft 2 ms" in cells[row, "best ÷ best list scheduler"].note
    assert cells[f"rnn / {c}", "learned"].value is None and "boom" in cells[f"rnn / {c}", "learned"].note
    assert cells[f"placeto / {a}", "learned"].note == "error: step did not run"
    summary = {col: cells["rnn: all graphs", col].value for col in heldout.SUMMARY}
    assert summary == {"graphs": 2.0, "learned (graphs)": 1.0, "within 1.10× (graphs)": 1.0,
                       "learned and within 1.10× (graphs)": 1.0,
                       "median best ÷ best list scheduler": pytest.approx((1.05 + 1.5) / 2),
                       "median best ÷ random search": pytest.approx((0.9 + 1.02) / 2), "goal met": 0.0}
    assert all(cells["placeto: all graphs", col].value is None for col in heldout.SUMMARY)  # nothing ran
    assert [c.row for c in built.cells[:7]] == ["rnn: all graphs"] * 7  # the summaries first
    assert built.figures["cdf-list"]["series"]["rnn"] == pytest.approx([1.05, 1.5])
    assert built.figures["cdf-list"]["series"]["placeto"] == []
    # no paper numbers: the joined table holds ours alone, in our order, with the units of heldout.json
    rows = join(built.cells, "heldout", "learning")
    assert len(rows) == len(built.cells) and all(r["paper"] is None and r["ratio"] is None for r in rows)
    assert {r["unit"] for r in rows if r["row"] == f"rnn / {a}"} == {"1 = learned", "ratio"}


@pytest.mark.parametrize(("n", "met"), [(5, 1.0), (6, 0.0)])
def test_the_goal_is_met_on_more_than_half_of_the_graphs(n, met):
    """Three of the four verdicts are learned and within 1.10×: more than half of 5 graphs, not of 6."""
    records = [{"learned": True, "x_list": 1.05, "x_random": 0.9}, {"learned": True, "x_list": 1.08, "x_random": 0.95},
               {"learned": True, "x_list": 1.09, "x_random": 1.0}, {"learned": False, "x_list": 1.0, "x_random": 1.0},
               {"learned": True, "x_list": 1.2, "x_random": 0.8}]
    cells = {c.column: c.value for c in heldout.summary_cells("gdp", records, n)}
    assert cells["learned (graphs)"] == 4 and cells["within 1.10× (graphs)"] == 4
    assert cells["learned and within 1.10× (graphs)"] == 3 and cells["goal met"] == met
    assert cells["median best ÷ best list scheduler"] == 1.08 and cells["median best ÷ random search"] == 0.95


def test_the_held_out_table_has_a_goal_and_no_paper_numbers():
    t = paper_table("heldout", "learning")
    assert t["rows"] == {} and "1.10×" in t["goal"]
    columns = {c.column for c in heldout.build({}, "/nonexistent", True).cells}
    assert columns <= set(t["units"])


@pytest.mark.slow
def test_one_graph_end_to_end(tmp_path, capsys):
    """The RNN placer's 20 episodes and the list schedulers on the first quick graph, run for real through the
    command line: its cells are the ratios of what the two commands printed (the journal), and the printed table
    has no paper columns."""
    g = QUICK_GRAPHS[0]
    code, out, err = run_cli(capsys, "reproduce", "heldout-learning", "--quick", "--only", f"list/{g},rnn/{g}",
                             "--runs-dir", str(tmp_path))
    assert code == 0, err
    assert out.split("\n")[0].split() == ["row", "column", "ours", "note"]
    (run,) = RunStore(tmp_path).list(kind="reproduce")
    steps = {e["key"]: e["out"] for e in run.read_json_lines("steps.jsonl")}
    best_list = min(r["makespan_s"] for r in steps[f"list/{g}"]["results"] if not r["oom"])
    trained = steps[f"rnn/{g}"]
    cells = {(r["row"], r["column"]): r for r in table_rows(run)}
    assert cells[f"rnn / {g}", "best ÷ best list scheduler"]["ours"] == pytest.approx(
        trained["best_makespan_s"] / best_list)
    assert cells[f"rnn / {g}", "learned"]["ours"] == float(trained["learning_health"]["verdict"] == "learned")
    assert cells["rnn: all graphs", "graphs"]["ours"] == 1.0
    assert "figures/curves-rnn.json" in run.files()
