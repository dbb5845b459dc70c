"""Running a reproduction and storing it (placelab.reproduce.runner, CONTRACTS §7)."""

import json

import pytest

from engine.errors import RunError, SpecError
from engine.presets import PRESETS
from engine.specs import load_graph
from engine.store.runs import RunStore
from placelab.cli import run_command
from placelab.reproduce.runner import JOURNAL, reproduce, run_step
from placelab.runner import place_and_simulate
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
    from engine.parallel.tasks import ParallelMap
    from placelab.reproduce.core import Step
    from placelab.reproduce.runner import _run_steps

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

    from placelab.reproduce import registry

    monkeypatch.setitem(registry.REPRODUCTIONS, "tiny-table",
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


def _counting(stop_on: str | None = None):
    """``run_command`` that records the steps it runs; a Ctrl-C (KeyboardInterrupt) in the first step whose
    argv holds ``stop_on``, as a stopped process would leave it."""
    ran: list[list[str]] = []

    def command(argv: list[str]) -> int:
        ran.append(argv)
        if stop_on is not None and stop_on in argv:
            raise KeyboardInterrupt
        return run_command(argv)

    return command, ran


def _stopped_run(root) -> str:
    """A tiny-table reproduction stopped by Ctrl-C in its second step ("broken"): the id of its run."""
    command, ran = _counting(stop_on="no-such-placer")
    with pytest.raises(KeyboardInterrupt):
        reproduce("tiny-table", command=command, quick=True, runs_dir=str(root))
    (run,) = [r for r in RunStore(root).list() if r.meta["kind"] == "reproduce"]
    assert run.status == "interrupted" and len(ran) == 2
    return run.id


def test_a_stopped_reproduction_resumes_without_running_its_finished_steps_again(tiny_reproduction, tmp_path,
                                                                                monkeypatch):
    import placelab.reproduce.runner as runner

    root = tmp_path / "runs"
    rid = _stopped_run(root)
    monkeypatch.setattr(runner, "code_version", lambda: {"placelab": "0.1.0", "git": "abc1234"})  # code changed since
    journal = [json.loads(line) for line in (root / rid / JOURNAL).read_text().splitlines()]
    assert [e["key"] for e in journal] == ["base"]  # the step that ended; the stopped one is not in it
    assert journal[0]["argv"][:2] == ["compare", TINY_GRAPH] and journal[0]["out"]["results"]
    command, ran = _counting()
    said: list[str] = []
    res = reproduce("tiny-table", command=command, quick=True, runs_dir=str(root), resume=rid[:20],
                    progress=said.append)
    assert res["run_id"] == rid and len(ran) == 1 and "no-such-placer" in ran[0]  # only the step it had not ended
    run = RunStore(root).load(rid)
    assert run.status == "done" and run.meta["metrics"]["steps_reused"] == 1
    assert [r["code_version"]["git"] for r in run.meta["parameters"]["resumed"]] == ["abc1234"]
    assert any(line.startswith("note: the run started on code") and "this is abc1234" in line for line in said)
    assert any("(ran before: taken from the journal)" in line for line in said)
    steps = {s["key"]: s for s in run.read_json("commands.json")["steps"]}
    assert steps["base"].get("reused") is True and "reused" not in steps["broken"]
    # the table is the one an uninterrupted reproduction stores (the base step's numbers, from the journal)
    fresh = reproduce("tiny-table", command=run_command, quick=True, runs_dir=str(tmp_path / "fresh"))
    assert res["table"] == fresh["table"]
    # and now it is done: nothing to resume
    with pytest.raises(SpecError, match="finished; there is nothing to resume"):
        reproduce("tiny-table", command=run_command, quick=True, runs_dir=str(root), resume=rid)


def test_resume_runs_again_a_step_whose_command_changed_and_skips_a_torn_journal_line(tiny_reproduction, tmp_path):
    root = tmp_path / "runs"
    rid = _stopped_run(root)
    path = root / rid / JOURNAL
    entry = json.loads(path.read_text())
    entry["argv"] = [*entry["argv"][:-1], "5"]  # as if the step had run with another seed
    path.write_text(json.dumps(entry) + "\n" + '{"key": "broken", "argv": ["comp')  # a line cut by a kill
    command, ran = _counting()
    res = reproduce("tiny-table", command=command, quick=True, runs_dir=str(root), resume=rid)
    assert len(ran) == 2 and res["table"][0]["ours"] is not None
    assert RunStore(root).load(rid).meta["metrics"]["steps_reused"] == 0


def test_resume_refuses_a_run_it_cannot_go_on_with(tiny_reproduction, tmp_path):
    root = tmp_path / "runs"
    rid = _stopped_run(root)
    with pytest.raises(SpecError, match=r"ran with other --quick \(quick; now full\)"):
        reproduce("tiny-table", command=run_command, runs_dir=str(root), resume=rid)
    with pytest.raises(SpecError, match=r"ran with other --only \(none; now base\)"):
        reproduce("tiny-table", command=run_command, quick=True, runs_dir=str(root), resume=rid, only="base")
    with pytest.raises(SpecError, match="cannot use a scratch store"):
        reproduce("tiny-table", command=run_command, quick=True, runs_dir=str(root), resume=rid,
                  keep_step_runs=False)
    placed = next(r for r in RunStore(root).list() if r.meta["kind"] != "reproduce")
    with pytest.raises(SpecError, match=f"run {placed.id} is a {placed.meta['kind']} run, not a tiny-table"):
        reproduce("tiny-table", command=run_command, quick=True, runs_dir=str(root), resume=placed.id)
    with pytest.raises(RunError, match="no run"):
        reproduce("tiny-table", command=run_command, quick=True, runs_dir=str(root), resume="20990101-nothing")
    assert RunStore(root).load(rid).status == "interrupted"  # every refusal left it as it was


# ---- reliability pass 3 (issue 54): --only, the journal's file and values, a moved store ----------------------

@pytest.mark.parametrize("only", ["", ",", " , "])
def test_only_that_names_no_step_is_refused(tiny_reproduction, tmp_path, only):
    # before: `--only ''` ran every step
    with pytest.raises(SpecError, match="names no step"):
        reproduce("tiny-table", command=run_command, quick=True, runs_dir=str(tmp_path / "runs"), only=only)
    assert not (tmp_path / "runs").exists()


def _in_child(fn, *args, timeout: float = 300):
    """``fn(*args)`` in a forked process: its result, or ``("raised", type name, message)``; a hang fails the test
    (the limit only catches one: generous)."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()

    def target():
        try:
            results.put(("returned", fn(*args)))
        except BaseException as exc:  # what the test looks at
            results.put(("raised", type(exc).__name__, str(exc)))

    proc = ctx.Process(target=target)
    proc.start()
    proc.join(timeout)
    if proc.is_alive():
        proc.kill()
        pytest.fail(f"{fn.__name__} hung for {timeout} s")
    return results.get(timeout=10)


@pytest.mark.parametrize("kind", ["named pipe", "directory"])
def test_a_journal_that_is_not_a_regular_file_is_refused(tiny_reproduction, tmp_path, kind):
    import os

    root = tmp_path / "runs"
    rid = _stopped_run(root)
    path = root / rid / JOURNAL
    path.unlink()
    if kind == "named pipe":
        os.mkfifo(path)
    else:
        path.mkdir()
    command, _ = _counting()
    # before: the named pipe hung the resume; the directory was an internal error (IsADirectoryError)
    outcome = _in_child(lambda: reproduce("tiny-table", command=command, quick=True, runs_dir=str(root), resume=rid))
    assert outcome == ("raised", "RunError", f"run {rid}: '{JOURNAL}' is a {kind}, not a regular file")
    assert RunStore(root).load(rid).status == "interrupted"  # left as it was


def _journal(root, rid) -> list[dict]:
    return [json.loads(line) for line in (root / rid / JOURNAL).read_text().splitlines()]


def _write_journal(root, rid, entries: list[dict]) -> None:
    (root / rid / JOURNAL).write_text("".join(json.dumps(e) + "\n" for e in entries))


def _tampered_makespan(out: dict) -> None:
    out["results"][0]["makespan_s"] = "fast"


def _tampered_results(out: dict) -> None:
    out["results"] = {}


@pytest.mark.parametrize("tamper", [_tampered_makespan, _tampered_results])
def test_a_changed_journal_line_runs_its_step_again_with_a_warning(tiny_reproduction, tmp_path, tamper):
    root = tmp_path / "runs"
    rid = _stopped_run(root)
    (entry,) = _journal(root, rid)
    tamper(entry["out"])
    _write_journal(root, rid, [entry])
    command, ran = _counting()
    said: list[str] = []
    # before: TypeError from the table's build (exit 1)
    res = reproduce("tiny-table", command=command, quick=True, runs_dir=str(root), resume=rid, progress=said.append)
    assert len(ran) == 2  # the changed step ran again, and the one that had not run
    warnings = [line for line in said if line.startswith("warning: ")]
    assert warnings == [f"warning: {JOURNAL} entry 1 (step 'base') of run {rid} was changed since it was written "
                        "(its checksum differs): that step runs again"]
    run = RunStore(root).load(rid)
    assert run.status == "done" and run.meta["metrics"]["steps_reused"] == 0
    fresh = reproduce("tiny-table", command=run_command, quick=True, runs_dir=str(tmp_path / "fresh"))
    assert res["table"] == fresh["table"]


def _as_older_journal(root, rid, store_path: str) -> None:
    """The journal as placelab wrote it before checksums: absolute paths (the store as ``store_path``)."""
    entries = [{"key": e["key"], "argv": [store_path if a == "$RUNS" else a.replace("$RUNS/", f"{store_path}/")
                                          for a in e["argv"]], "out": e["out"]} for e in _journal(root, rid)]
    _write_journal(root, rid, entries)


@pytest.mark.parametrize("how", ["moved", "copied"])
def test_a_moved_or_copied_store_resumes_from_its_journal(tiny_reproduction, tmp_path, how):
    import shutil

    root = tmp_path / "runs"
    rid = _stopped_run(root)
    assert _journal(root, rid)[0]["argv"][-2:] == ["--runs-dir", "$RUNS"]  # paths relative to the store
    elsewhere = tmp_path / "elsewhere" / "runs"
    (shutil.move if how == "moved" else shutil.copytree)(root, elsewhere)
    command, ran = _counting()
    # before: every step ran again, silently (the journal held the old absolute paths)
    reproduce("tiny-table", command=command, quick=True, runs_dir=str(elsewhere), resume=rid)
    assert len(ran) == 1 and "no-such-placer" in ran[0] and ran[0][-2:] == [str(elsewhere), "--json"]
    assert RunStore(elsewhere).load(rid).meta["metrics"]["steps_reused"] == 1


def test_an_older_journal_resumes_while_its_store_has_not_moved(tiny_reproduction, tmp_path):
    root = tmp_path / "runs"
    rid = _stopped_run(root)
    _as_older_journal(root, rid, str(root))
    command, ran = _counting()
    reproduce("tiny-table", command=command, quick=True, runs_dir=str(root), resume=rid)
    assert len(ran) == 1 and RunStore(root).load(rid).meta["metrics"]["steps_reused"] == 1


def test_an_older_journal_of_a_moved_store_says_why_its_steps_run_again(tiny_reproduction, tmp_path):
    import shutil

    root = tmp_path / "runs"
    rid = _stopped_run(root)
    _as_older_journal(root, rid, str(root))
    elsewhere = tmp_path / "elsewhere"
    shutil.move(root, elsewhere)
    command, ran = _counting()
    said: list[str] = []
    reproduce("tiny-table", command=command, quick=True, runs_dir=str(elsewhere), resume=rid, progress=said.append)
    assert len(ran) == 2
    (base,) = [line for line in said if line.startswith("[") and "single-device,round-robin" in line]
    assert base.endswith(f"; not taken from the journal: its journal entry names the run store {root} (a journal "
                         f"of an older placelab holds absolute paths), this is {elsewhere})")


def test_an_unreadable_value_in_an_older_journal_is_one_error(tiny_reproduction, tmp_path):
    root = tmp_path / "runs"
    rid = _stopped_run(root)
    _as_older_journal(root, rid, str(root))
    (entry,) = _journal(root, rid)
    _tampered_makespan(entry["out"])  # no checksum to tell: the table's build trips on it
    _write_journal(root, rid, [entry])
    with pytest.raises(RunError, match=rf"run {rid}: the {JOURNAL} entries of step\(s\) 'base', written by an older "
                                       r"placelab without a checksum, hold values this reproduction cannot read "
                                       r"\(TypeError\)"):
        reproduce("tiny-table", command=_counting()[0], quick=True, runs_dir=str(root), resume=rid)
    assert RunStore(root).load(rid).status == "failed"  # it can be resumed again once the journal is moved away
