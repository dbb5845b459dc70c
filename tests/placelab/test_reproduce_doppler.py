"""DOPPLER's reproductions (placelab.reproduce.doppler) and steps that reference earlier steps' runs."""

import re
from pathlib import Path

import pytest

from engine.errors import SpecError
from engine.placement import load_placement
from engine.presets import PRESETS
from engine.sim.simulator import Simulator
from engine.specs import load_graph
from engine.store.runs import RunStore
from placelab.cli import click_command, run_command
from placelab.reproduce import doppler, registry
from placelab.reproduce.core import Build, Reproduction, Step
from placelab.reproduce.papers import paper_table
from placelab.reproduce.reading import execution_cell
from placelab.reproduce.runner import reproduce
from tests.placelab.tiny import TINY_GRAPH

REPO_RUNS = Path(__file__).resolve().parents[2] / "runs"
DOPPLER = ("doppler-table2", "doppler-table3", "doppler-table4", "doppler-table8", "doppler-table9")


def _parses(argv: tuple[str, ...]) -> None:
    """The CLI accepts ``argv`` (every option exists and takes its value), without running it."""
    group = click_command()
    with group.make_context("placelab", [*argv, "--json"], resilient_parsing=True) as ctx:
        cmd = group.get_command(ctx, argv[0])
        assert cmd is not None, argv
        cmd.make_context(argv[0], [*argv[1:], "--json"])  # raises on an unknown option or a bad value


@pytest.mark.parametrize("name", DOPPLER)
@pytest.mark.parametrize("quick", [True, False])
def test_declared_commands_parse_and_reference_earlier_steps(name, quick):
    steps = registry.get(name).steps(quick)
    seen: set[str] = set()
    for s in steps:
        _parses(s.argv)
        assert set(s.references()) <= seen, (name, s.key)  # a reference names an earlier step
        seen.add(s.key)
    executions = [s for s in steps if s.argv[0] == "simulate"]
    assert executions and all(s.argv[-2:] == ("--sim-param", "runs=10") for s in executions)
    assert all(f"noise={doppler.NOISE}" in s.argv for s in executions)


def test_full_setting_uses_the_papers_budgets():
    steps = {s.key: s.argv for s in registry.get("doppler-table2").steps(False)}

    def episodes(key: str) -> int:
        argv = steps[key]
        return int(argv[argv.index("--episodes") + 1])

    # DOPPLER §6.1: 4k episodes for CHAINMM and FFNN, 8k for the Llama graphs
    assert [episodes(f"find/doppler/{r}") for r in doppler.GRAPHS] == [4000, 4000, 8000, 8000]
    assert episodes("stage1/CHAINMM") == 1000 and episodes("find/placeto/LLAMA-LAYER") == 8000
    # GDP as the DOPPLER authors ran it: an imitation stage, then the simulation stage from it, §6.1's episodes
    assert [episodes(f"find/gdp/{r}") for r in doppler.GRAPHS] == [4000, 4000, 8000, 8000]
    assert episodes("gdp-stage1/LLAMA-BLOCK") == 2000
    assert steps["gdp-stage1/FFNN"][-11:-5] == ("--stage", "imitation", "--param", "lr=0.001", "--param",
                                               "lr_final=0.001")
    assert steps["find/gdp/FFNN"][-7:-3] == ("--init-from", "{run:gdp-stage1/FFNN}", "--param", "decay_episodes=4000")
    for table in ("doppler-table8", "doppler-table9"):  # the paper's Tables 8-9 have no GDP column, nor do ours
        assert not any(s.key.startswith(("find/gdp/", "gdp-stage1/")) for s in registry.get(table).steps(False))
        assert "GDP" not in {c.column for c in registry.get(table).build({}, "/nonexistent", False).cells}
    assert not any(n.startswith("GDP:") for n in registry.get("doppler-table2").build({}, "/nonexistent", False).notes)
    assert steps["find/doppler-sel/FFNN"][-9:-3] == ("--init-from", "{run:stage1/FFNN}", "--param", "variant=sel-only",
                                                     "--param", "decay_episodes=4000")  # ε: 0.2 → 0 over training
    t4 = {s.key: s.argv for s in registry.get("doppler-table4").steps(False)}
    assert len([k for k in t4 if k.startswith("find/zero-shot/")]) == 4
    assert "{run:find/k1/FFNN -> LLAMA-BLOCK}" in t4["find/k2/FFNN -> LLAMA-BLOCK"]
    quick4 = [s.key for s in registry.get("doppler-table4").steps(True) if s.key.startswith("find/zero-shot/")]
    assert quick4 == ["find/zero-shot/FFNN -> LLAMA-BLOCK", "find/zero-shot/CHAINMM -> LLAMA-LAYER"]


def _noisy(graph: str, cluster: str, placement_path: str, runs: int = 10):
    """Mean and std of ``runs`` noisy executions, computed directly with the simulator."""
    g = load_graph(graph)
    c = PRESETS[cluster]()
    p = load_placement(placement_path, g, c)
    return Simulator(g, c.with_simulation(noise=doppler.NOISE, runs=runs, seed=0)).makespan_stats(p.devices)


@pytest.fixture
def chain_reproduction(tiny_reproduction, monkeypatch):
    """``tiny-table`` replaced by: place → simulate its placement; a failing place → a simulate that needs it."""
    steps = [Step("find", ("place", TINY_GRAPH, "-c", "p100x4", "--placer", "round-robin", "--save")),
             doppler.execute_step("exec", "find", TINY_GRAPH, "p100x4"),
             Step("find-bad", ("place", TINY_GRAPH, "-c", "p100x4", "--placer", "no-such-placer", "--save")),
             doppler.execute_step("exec-bad", "find-bad", TINY_GRAPH, "p100x4")]

    def build(out, runs_dir, quick):
        return Build([execution_cell("tiny / 2 GPUs", "Single", out.get("exec"), out.get("find")),
                      execution_cell("tiny / 2 GPUs", "Round robin", out.get("exec-bad"))])

    rep = Reproduction("tiny-table", "chained", "tiny", "t1", lambda quick: steps, build, quick_minutes=0.1)
    monkeypatch.setitem(registry.REPRODUCTIONS, "tiny-table", rep)
    return rep


def test_a_step_runs_the_placement_an_earlier_step_stored(chain_reproduction, tmp_path):
    root = tmp_path / "runs"
    res = reproduce("tiny-table", command=run_command, quick=True, runs_dir=str(root))
    store = RunStore(root)
    log = store.load(res["run_id"]).read_json("commands.json")["steps"]
    keys = [e["key"] for e in log]
    assert keys[:2] == ["find", "find-bad"] and set(keys[2:]) == {"exec", "exec-bad"}  # a step after its sources
    cmds = {e["key"]: e for e in log}
    found = next(r for r in store.list() if r.meta["kind"] != "reproduce")
    st = _noisy(TINY_GRAPH, "p100x4", str(root / found.id / "placement.json"))
    rows = {r["column"]: r for r in res["table"]}
    assert rows["Single"]["ours"] == pytest.approx(st.mean, rel=1e-12)
    assert rows["Single"]["ours_std"] == pytest.approx(st.std, rel=1e-12) and st.std > 0
    assert cmds["exec"]["command"].startswith("placelab simulate") and "'{placement:find}'" in cmds["exec"]["command"]
    assert f"$RUNS/{found.id}/placement.json" in cmds["exec"]["resolved"]
    assert rows["Round robin"]["ours"] is None
    assert "needs the run of step 'find-bad', which failed: unknown placer" in rows["Round robin"]["note"]
    assert cmds["exec-bad"]["resolved"] is None
    assert cmds["exec-bad"]["error"].startswith("needs the run of step 'find-bad'")


def test_quick_table_on_a_tiny_budget_has_the_tables_shape(monkeypatch, tmp_path):
    """doppler-table2 on CHAINMM with 2-episode budgets: every cell of the paper's table, ours with mean ± std."""
    tiny = dict.fromkeys(doppler.GRAPHS, 2)
    monkeypatch.setattr(doppler, "QUICK", doppler.Budgets(tiny, tiny, tiny, kshot=2, pairs=1))
    before = sorted(p.name for p in REPO_RUNS.iterdir())
    root = tmp_path / "runs"
    res = reproduce("doppler-table2", command=run_command, quick=True, runs_dir=str(root), only="CHAINMM",
                    keep_step_runs=False)
    assert sorted(p.name for p in REPO_RUNS.iterdir()) == before  # nothing written to the repository's runs/
    assert [r.id for r in RunStore(root).list()] == [res["run_id"]]  # the step runs went to a scratch store
    table = {(r["row"], r["column"]): r for r in res["table"]}
    paper = paper_table("doppler", "table2")["rows"]
    extra = {(row, c) for row in doppler.GRAPHS for c in ("DOPPLER-SEL", "DOPPLER-PLC")}
    assert ("CHAINMM", "GDP") in {(r, c) for r, cols in paper.items() for c in cols}
    assert set(table) == {(r, c) for r, cols in paper.items() for c in cols} | extra
    measured = {k for k, r in table.items() if r["ours"] is not None}
    assert measured == {("CHAINMM", c) for c in ("Critical path", "Placeto", "GDP", "EnumOpt", "DOPPLER-SIM",
                                                 "DOPPLER-SYS", "DOPPLER-SEL", "DOPPLER-PLC")}
    for k in measured:
        assert table[k]["ours_std"] >= 0 and table[k]["unit"] in ("ms", "")
    assert table[("CHAINMM", "DOPPLER-SIM")]["ours"] == table[("CHAINMM", "DOPPLER-SYS")]["ours"]
    # a trained cell says how many placements its training evaluated, and after how many it found its best
    for col in ("Placeto", "GDP", "DOPPLER-SIM", "DOPPLER-SEL"):
        note = table[("CHAINMM", col)]["note"]
        m = re.search(r"(\d+) episodes, (\d+) placements evaluated, the best after (\d+)$", note)
        assert m and int(m[1]) >= 2 and 1 <= int(m[3]) <= int(m[2]), note  # Placeto: whole batches of 8
    assert "the best after" not in table[("CHAINMM", "Critical path")]["note"]
    assert table[("FFNN", "Placeto")]["note"] == "error: step did not run"
    assert table[("FFNN", "GDP")]["note"] == "error: step did not run"
    # ms: the critical-path placement executed 10 times, computed directly (critical-path is deterministic)
    g, c = load_graph("gen:chainmm"), PRESETS["p100x4"]()
    from policies.registry import make_placer

    p = make_placer("critical-path").place(g, c, seed=0)
    st = Simulator(g, c.with_simulation(noise=doppler.NOISE, runs=10, seed=0)).makespan_stats(p.devices)
    assert table[("CHAINMM", "Critical path")]["ours"] == pytest.approx(1e3 * st.mean, rel=1e-9)
    assert table[("CHAINMM", "Critical path")]["ratio"] == pytest.approx(1e3 * st.mean / 230.4, rel=1e-9)


def test_g1_cells_are_the_work_conserving_correlations_of_validate():
    """doppler-g1 reads ``validate``'s JSON: its cells are the work_conserving mode's Pearson and Spearman,
    the other modes and the median error in the note; a failed step or a constant series say so."""
    from placelab.reproduce import doppler_fidelity

    rep = registry.get("doppler-g1")
    (step,) = rep.steps(True)
    assert step.argv[:4] == ("validate", "gen:chainmm", "-c", "local") and "--placements" in step.argv
    assert step.argv[step.argv.index("--sample") + 1] == "perturbed"  # good to random, as a training visits them
    assert [s.key for s in rep.steps(False)] == [f"validate/{r}" for r in doppler.GRAPHS]
    out = {"placements": 12, "repeats": 2, "cluster": "local", "modes": {
        "work_conserving": {"pearson": 0.9, "spearman": 0.75, "median_rel_error": 0.05, "max_rel_error": 0.2},
        "placeto": {"pearson": 0.5, "spearman": 0.4, "median_rel_error": 0.3, "max_rel_error": 0.5}},
        "noise_ceiling": {"spearman_ceiling": 0.934}}
    cells = {c.column: c for c in rep.build({"validate/CHAINMM": out}, "/nonexistent", True).cells}
    assert (cells["Pearson"].value, cells["Spearman"].value) == (0.9, 0.75)
    assert "median relative error 5.0%" in cells["Pearson"].note and "placeto: Pearson 0.50" in cells["Pearson"].note
    assert cells["Spearman"].note.endswith("; noise ceiling: Spearman 0.93")
    flat = {**out, "modes": {doppler_fidelity.MODE: {**out["modes"]["work_conserving"], "spearman": None}}}
    assert rep.build({"validate/CHAINMM": flat}, "/x", True).cells[1].value is None
    failed = rep.build({"validate/CHAINMM": {"error": "worker died"}}, "/x", True).cells
    assert [c.note for c in failed] == ["error: worker died"] * 2


def test_g1_measures_so_it_refuses_workers(tmp_path):
    with pytest.raises(SpecError, match="must not run side by side"):
        reproduce("doppler-g1", command=run_command, quick=True, runs_dir=str(tmp_path), workers=2)
    assert not (tmp_path / "runs").exists() and not list(tmp_path.iterdir())
