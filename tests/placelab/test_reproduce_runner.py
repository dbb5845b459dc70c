"""Running a reproduction and storing it (placelab.reproduce.runner, CONTRACTS §7)."""


import pytest

from engine.errors import SpecError
from engine.presets import PRESETS
from engine.runs import RunStore
from engine.specs import load_graph
from placelab.cli import run_command
from placelab.reproduce.runner import reproduce, run_step
from policies.runner import place_and_simulate
from tests.placelab.tiny import TINY_GRAPH


def test_run_step_returns_the_commands_json_or_its_error():
    out = run_step(run_command, ("graph", "info", TINY_GRAPH))
    assert out["ops"] == 30 and out["wall_s"] >= 0
    bad = run_step(run_command, ("graph", "info", "gen:nope"))
    assert "unknown generator 'nope'" in bad["error"]


def test_ctrl_c_in_a_step_stops_the_reproduction(monkeypatch):
    """typer turns a KeyboardInterrupt into a returned 130 here; run_step raises it again, so a reproduction
    stops (its run ``interrupted``) instead of going on to its next step."""
    import placelab.cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(placelab.cli, "load_graph", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_step(run_command, ("graph", "info", TINY_GRAPH))

def test_reproduction_stores_table_figures_and_commands(tiny_reproduction, tmp_path):
    root = tmp_path / "runs"
    res = reproduce("tiny-table", command=run_command, quick=True, runs_dir=str(root))
    store = RunStore(root)
    run = store.load(res["run_id"])
    assert run.status == "done" and run.meta["kind"] == "reproduce" and run.meta["placer"] == "tiny-table"
    assert run.meta["parameters"]["setting"] == "quick" and run.meta["parameters"]["seeds"] == [4]
    assert run.meta["parameters"]["citation"] == "Tiny, Table 1"
    assert run.meta["code_version"]["placelab"]
    # our numbers, independently: the same placers simulated directly
    g, c = load_graph(TINY_GRAPH), PRESETS["k80x2"]()
    single = place_and_simulate(g, c, "single-device", seed=4).metrics["makespan_s"]
    rr = place_and_simulate(g, c, "round-robin", seed=4).metrics["makespan_s"]
    t = run.read_table("table.csv")
    by_col = {col: i for i, col in enumerate(t["column"])}
    assert t["ours"][by_col["Single"]] == pytest.approx(single, rel=1e-12)
    assert t["ratio"][by_col["Single"]] == pytest.approx(single / 2.0, rel=1e-12)
    assert t["rel_ratio"][by_col["Round robin"]] == pytest.approx((rr / single) / (4.0 / 2.0), rel=1e-12)
    assert t["ours"][by_col["Learned"]] is None and "no-such-placer" in t["note"][by_col["Learned"]]
    assert run.read_json("figures/cdf.json")["kind"] == "cdf"
    cmds = run.read_json("commands.json")
    assert [s["argv"][:2] for s in cmds["steps"]] == [["placelab", "compare"]] * 2
    assert cmds["steps"][0]["command"] == (f"placelab compare '{TINY_GRAPH}' -c k80x2 --placers "
                                           "single-device,round-robin --seed 4")
    assert cmds["steps"][1]["error"] and cmds["notes"] == ["a note"]
    assert run.meta["metrics"]["step_errors"] == 1 and run.meta["metrics"]["cells"] == 3
    assert run.meta["metrics"]["cpu_s"] > 0
    # the compare runs were stored too, tagged with the reproduction
    tagged = store.list(tag=f"reproduce:{run.id}")
    assert sorted(r.meta["placer"] for r in tagged) == ["round-robin", "single-device"]


def test_scratch_step_runs_leave_only_the_reproduction(tiny_reproduction, tmp_path):
    root = tmp_path / "runs"
    res = reproduce("tiny-table", command=run_command, quick=True, runs_dir=str(root), keep_step_runs=False)
    assert [r.id for r in RunStore(root).list()] == [res["run_id"]]
    assert res["table"][0]["ours"] is not None


def test_a_step_runs_once_its_references_have_run_and_not_when_they_failed(tmp_path):
    """A step that names another's run gets it filled in; naming a failed step, or a cycle, records why."""
    from placelab.reproduce.core import Step
    from placelab.reproduce.runner import _run_steps
    from policies.parallel import ParallelMap

    place = ("place", TINY_GRAPH, "-c", "k80x2", "--save", "--placer")
    steps = [Step("again", ("simulate", TINY_GRAPH, "-c", "k80x2", "--placement", "{placement:single}")),
             Step("single", (*place, "single-device")),
             Step("broken", (*place, "no-such-placer")),
             Step("after-broken", ("simulate", TINY_GRAPH, "-c", "k80x2", "--placement", "{placement:broken}")),
             Step("egg", (*place, "round-robin", "--name", "{run:hen}")),
             Step("hen", (*place, "round-robin", "--name", "{run:egg}"))]
    out, log = _run_steps(steps, str(tmp_path), (ParallelMap(), run_command), None, None)
    assert out["again"]["makespan_s"] == pytest.approx(out["single"]["makespan_s"], rel=1e-12)
    order = [e["key"] for e in log]
    assert order.index("single") < order.index("again")
    assert "unknown placer 'no-such-placer'" in out["broken"]["error"]
    assert out["after-broken"]["error"].startswith("needs the run of step 'broken', which failed: unknown placer")
    assert out["egg"]["error"] == "needs the run of step 'hen', which did not run"
    assert out["hen"]["error"] == "needs the run of step 'egg', which failed: " + out["egg"]["error"]
    assert len(log) == len(steps)


def test_unknown_and_unready_reproductions(tiny_reproduction, tmp_path, monkeypatch):
    with pytest.raises(SpecError, match="unknown reproduction 'nope'"):
        reproduce("nope", command=run_command, runs_dir=str(tmp_path))
    from dataclasses import replace

    from placelab.reproduce import core

    monkeypatch.setitem(core.REPRODUCTIONS, "tiny-table",
                        replace(tiny_reproduction, requires=("no-such-placer", "module:no_such_module")))
    with pytest.raises(SpecError, match="needs placer no-such-placer, module:no_such_module"):
        reproduce("tiny-table", command=run_command, runs_dir=str(tmp_path))
    assert not (tmp_path / "runs").exists()


def test_only_runs_the_matching_steps(tiny_reproduction, tmp_path):
    res = reproduce("tiny-table", command=run_command, quick=True, runs_dir=str(tmp_path), only="base",
                    keep_step_runs=False)
    run = RunStore(tmp_path).load(res["run_id"])
    assert [s["key"] for s in run.read_json("commands.json")["steps"]] == ["base"]
    assert run.meta["parameters"]["only"] == "base"
    notes = {r["column"]: r["note"] for r in res["table"]}
    assert notes["Learned"] == "error: step did not run" and res["table"][0]["ours"] is not None
    with pytest.raises(SpecError, match="matches no step"):
        reproduce("tiny-table", command=run_command, runs_dir=str(tmp_path), only="nothing-like-this")
