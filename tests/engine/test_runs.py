"""Tests for engine.store.runs: the run store, atomic writes and run tables."""

from __future__ import annotations

import json
import math
import os
import re
import socket
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import RunError, WriteError
from engine.jsonio import atomic_write_json, atomic_write_text
from engine.store.locks import LIVE_LOCK, release_live_lock
from engine.store.meta import RUN_SCHEMA, code_version
from engine.store.runs import Run, RunStore

ID_RE = re.compile(r"\d{8}-\d{6}-(?P<kind>[a-z0-9-]+?)-(?P<placer>[a-z0-9-]+)-[0-9a-f]{4}")


def make(store: RunStore, kind: str = "place", placer: str | None = "hdp", **kw) -> Run:
    args = dict(
        graph_name="inception_v3",
        graph_hash="sha256:abc",
        cluster="4xP100",
        placer=placer,
        parameters={"lr": 0.001, "episodes": 10},
        seed=7,
    )
    args.update(kw)
    return store.create(kind, **args)


def write_meta(run: Run, **changes) -> None:
    meta = json.loads((run.path / "run.json").read_text())
    meta.update(changes)
    (run.path / "run.json").write_text(json.dumps(meta))


def temp_files(directory) -> list[str]:
    return [p.name for p in directory.rglob("*.tmp")]


# ---- create / load / list / delete -------------------------------------------------------


def test_create_writes_run_json(tmp_path):
    store = RunStore(tmp_path / "runs")
    run = make(store, placer="Hierarchical Planner", tags=["a", "b", "a", " "])
    meta = json.loads((run.path / "run.json").read_text())
    m = ID_RE.fullmatch(run.id)
    assert m and m["kind"] == "place" and m["placer"] == "hierarchical-planner"
    assert run.path == tmp_path / "runs" / run.id
    assert meta["schema"] == "placelab.run/1" == RUN_SCHEMA
    assert meta["id"] == meta["name"] == run.id
    assert meta["status"] == "running" and run.status == "running"
    assert meta["kind"] == "place"
    assert meta["graph"] == {"name": "inception_v3", "hash": "sha256:abc"}
    assert meta["cluster"] == "4xP100"
    assert meta["placer"] == "Hierarchical Planner"
    assert meta["parameters"] == {"lr": 0.001, "episodes": 10}
    assert meta["seed"] == 7
    assert meta["metrics"] == {}
    assert meta["tags"] == ["a", "b"]
    assert meta["pid"] == os.getpid()
    assert meta["host"] == socket.gethostname()
    assert meta["created"] == meta["updated"]
    created = datetime.fromisoformat(meta["created"])
    assert created.utcoffset() == timedelta(0)
    assert abs(datetime.now(UTC) - created) < timedelta(minutes=1)
    assert run.id.startswith(created.strftime("%Y%m%d-%H%M%S"))
    assert set(meta["code_version"]) == {"placelab", "git"}
    assert meta["code_version"] == code_version()
    assert run.files() == ["run.json"]


def test_create_without_placer_and_with_name(tmp_path):
    run = make(RunStore(tmp_path), kind="compare", placer=None, name="baseline sweep")
    assert ID_RE.fullmatch(run.id)["placer"] == "none"
    assert ID_RE.fullmatch(run.id)["kind"] == "compare"
    assert run.meta["name"] == "baseline sweep"
    assert run.meta["placer"] is None


def test_ids_unique_within_one_second(tmp_path):
    store = RunStore(tmp_path)
    ids = [make(store).id for _ in range(50)]
    assert len(set(ids)) == 50
    assert len(list(tmp_path.iterdir())) == 50


def test_create_with_unencodable_parameters_leaves_nothing(tmp_path):
    store = RunStore(tmp_path)
    with pytest.raises(TypeError):
        make(store, parameters={"f": object()})
    assert list(tmp_path.iterdir()) == []


def test_load_exact_and_prefix(tmp_path):
    store = RunStore(tmp_path)
    run = make(store)
    assert store.load(run.id).meta == run.meta
    assert store.load(run.id[:-2]).id == run.id
    assert store.load(run.id[:-2]).path == run.path


def test_load_ambiguous_prefix_names_candidates(tmp_path):
    store = RunStore(tmp_path)
    names = [f"20240101-000000-place-x-000{i}" for i in range(7)]
    for n in names:
        (tmp_path / n).mkdir()
    with pytest.raises(RunError) as err:
        store.load("20240101-000000-place-x-000")
    assert str(err.value) == (
        "run prefix '20240101-000000-place-x-000' is ambiguous: it matches "
        + ", ".join(names[:5])
        + " and 2 more"
    )


def test_load_unknown_id(tmp_path):
    with pytest.raises(RunError) as err:
        RunStore(tmp_path).load("nope")
    assert str(err.value) == f"no run matches 'nope' in {tmp_path}"


def test_load_corrupt_json_message(tmp_path):
    store = RunStore(tmp_path)
    run = make(store)
    (run.path / "run.json").write_text('{"schema": "placelab.run/1", ')
    with pytest.raises(RunError) as err:
        store.load(run.id)
    assert str(err.value) == f"run {run.id}: run.json is not valid JSON"


def test_load_missing_run_json_message(tmp_path):
    (tmp_path / "20240101-000000-place-x-abcd").mkdir()
    with pytest.raises(RunError) as err:
        RunStore(tmp_path).load("20240101")
    assert str(err.value) == "run 20240101-000000-place-x-abcd: run.json is missing"


def test_load_schema_mismatch_message(tmp_path):
    store = RunStore(tmp_path)
    run = make(store)
    write_meta(run, schema="placelab.run/9")
    with pytest.raises(RunError) as err:
        store.load(run.id)
    assert str(err.value) == (
        f"run {run.id} has schema 'placelab.run/9'; this placelab reads 'placelab.run/1'"
    )


def test_list_newest_first_filters_and_problems(tmp_path):
    store = RunStore(tmp_path)
    a = make(store, kind="place", tags=["x"])
    b = make(store, kind="train", tags=["x", "y"])
    c = make(store, kind="place")
    c.finish()
    (tmp_path / "not-a-run").mkdir()
    (tmp_path / "stray.txt").write_text("hi")
    bad = make(store)
    (bad.path / "run.json").write_text("{")
    assert [r.id for r in store.list()] == [c.id, b.id, a.id]
    assert sorted(store.problems) == sorted(
        ["run not-a-run: run.json is missing", f"run {bad.id}: run.json is not valid JSON"]
    )
    assert [r.id for r in store.list(kind="place")] == [c.id, a.id]
    assert [r.id for r in store.list(status="done")] == [c.id]
    assert [r.id for r in store.list(status="running", tag="x")] == [b.id, a.id]
    assert [r.id for r in store.list(tag="y")] == [b.id]


def test_list_missing_root_is_empty(tmp_path):
    store = RunStore(tmp_path / "absent")
    assert store.list() == []
    assert store.problems == []


def test_delete_and_refuse_traversal(tmp_path):
    store = RunStore(tmp_path / "runs")
    run = make(store)
    outside = tmp_path / "x"
    outside.mkdir()
    with pytest.raises(RunError) as err:
        store.delete("../x")
    assert str(err.value) == "'../x' is not a run id"
    assert outside.is_dir()
    with pytest.raises(RunError):
        store.delete(".")
    assert run.path.is_dir()
    with pytest.raises(RunError, match="is running; stop it before deleting it"):
        store.delete(run.id)
    run.finish("done")
    assert store.delete(run.id) == run.id
    assert not run.path.exists()
    assert store.list() == []
    with pytest.raises(RunError) as err:
        store.delete(run.id)
    assert str(err.value) == f"no run matches '{run.id}' in {store.root}"


def test_rename_and_set_tags(tmp_path):
    store = RunStore(tmp_path)
    run = make(store)
    store.rename(run.id[:20], "  my run ")
    store.set_tags(run.id, ["b", "a", "b", ""])
    meta = store.load(run.id).meta
    assert meta["name"] == "my run"
    assert meta["tags"] == ["b", "a"]
    assert meta["id"] == run.id
    with pytest.raises(RunError):
        store.rename(run.id, "  ")


# ---- status ---------------------------------------------------------------------------


def test_dead_pid_reads_interrupted(tmp_path):
    store = RunStore(tmp_path)
    run = make(store)
    release_live_lock(run.path)  # as when the process that ran it has ended
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    write_meta(run, pid=child.pid)
    loaded = store.load(run.id)
    assert loaded.status == "interrupted"
    assert loaded.meta["status"] == "interrupted"
    assert json.loads((run.path / "run.json").read_text())["status"] == "running"
    assert [r.id for r in store.list(status="interrupted")] == [run.id]


def test_other_host_uses_updated_age(tmp_path):
    store = RunStore(tmp_path)
    run = make(store)
    release_live_lock(run.path)
    (run.path / LIVE_LOCK).unlink()  # the lock lives on the other host's disk
    recent = datetime.now(UTC) - timedelta(hours=23)
    write_meta(run, host="elsewhere-" + socket.gethostname(), pid=1, updated=recent.isoformat())
    assert store.load(run.id).status == "running"
    stale = datetime.now(UTC) - timedelta(hours=25)
    write_meta(run, updated=stale.isoformat())
    assert store.load(run.id).status == "interrupted"


def test_finished_status_is_kept(tmp_path):
    run = make(RunStore(tmp_path))
    run.finish("done", metrics={"makespan": 1.25})
    write_meta(run, pid=999_999_999)
    assert run.status == "done"
    assert json.loads((run.path / "run.json").read_text())["metrics"] == {"makespan": 1.25}


# ---- run.json updates -----------------------------------------------------------------


def test_update_metrics_finish_fail(tmp_path):
    store = RunStore(tmp_path)
    run = make(store)
    before = run.meta["updated"]
    run.update(metrics={"makespan": 2.5, "speedup": np.float32(1.5), "evals": np.int64(40)})
    assert run.meta["updated"] > before
    assert store.load(run.id).meta["metrics"] == {"makespan": 2.5, "speedup": 1.5, "evals": 40}
    run.finish(metrics={"makespan": 2.0})
    meta = store.load(run.id).meta
    assert meta["status"] == "done"
    assert meta["metrics"] == {"makespan": 2.0, "speedup": 1.5, "evals": 40}
    run.fail("simulator ran out of memory")
    meta = store.load(run.id).meta
    assert (meta["status"], meta["error"]) == ("failed", "simulator ran out of memory")
    with pytest.raises(ValueError):
        run.finish("running")
    with pytest.raises(ValueError):
        run.update(id="other")


def test_failed_serialization_leaves_run_json_intact(tmp_path):
    run = make(RunStore(tmp_path))
    before = (run.path / "run.json").read_bytes()
    with pytest.raises(TypeError):
        run.update(extra={"bad": object()})
    with pytest.raises(ValueError):
        run.update(metrics={"makespan": float("nan")})
    assert (run.path / "run.json").read_bytes() == before
    assert temp_files(tmp_path) == []
    assert run.meta["metrics"] == {}


def test_atomic_write_failure_mid_write_keeps_old_file(tmp_path, monkeypatch):
    target = tmp_path / "f.txt"
    atomic_write_text(target, "old")

    def boom(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(WriteError, match=r"cannot write .*f\.txt: disk full"):
        atomic_write_text(target, "new")
    assert target.read_text() == "old"
    assert temp_files(tmp_path) == []


def test_atomic_write_json_numpy(tmp_path):
    atomic_write_json(tmp_path / "a.json", {"v": np.arange(3), "s": np.float32(0.5)})
    assert json.loads((tmp_path / "a.json").read_text()) == {"v": [0, 1, 2], "s": 0.5}


def test_write_read_json(tmp_path):
    run = make(RunStore(tmp_path))
    run.write_json("placement.json", {"op": np.int64(3)})
    assert run.read_json("placement.json") == {"op": 3}
    assert run.files() == ["placement.json", "run.json"]
    with pytest.raises(RunError) as err:
        run.read_json("missing.json")
    assert str(err.value) == f"run {run.id} has no file 'missing.json'"
    (run.path / "bad.json").write_text("[1,")
    with pytest.raises(RunError) as err:
        run.read_json("bad.json")
    assert str(err.value) == f"run {run.id}: bad.json is not valid JSON"
    with pytest.raises(RunError):
        run.write_json("../escape.json", {})
    with pytest.raises(ValueError):
        run.write_json("run.json", {})


# ---- context manager ------------------------------------------------------------------


def test_context_manager_done(tmp_path):
    store = RunStore(tmp_path)
    with make(store) as run:
        run.update(metrics={"makespan": 3.0})
    assert store.load(run.id).meta["status"] == "done"
    assert store.load(run.id).meta["metrics"] == {"makespan": 3.0}


def test_context_manager_keeps_explicit_status(tmp_path):
    store = RunStore(tmp_path)
    with make(store) as run:
        run.fail("gave up")
    meta = store.load(run.id).meta
    assert (meta["status"], meta["error"]) == ("failed", "gave up")


def test_context_manager_exception_fails_and_reraises(tmp_path):
    store = RunStore(tmp_path)
    with pytest.raises(ZeroDivisionError), make(store) as run:
        1 / 0  # noqa: B018
    meta = store.load(run.id).meta
    assert (meta["status"], meta["error"]) == ("failed", "division by zero")


def test_context_manager_keyboard_interrupt(tmp_path):
    store = RunStore(tmp_path)
    with pytest.raises(KeyboardInterrupt), make(store) as run:
        raise KeyboardInterrupt
    meta = store.load(run.id).meta
    assert meta["status"] == "interrupted"
    assert "error" not in meta


# ---- tables -----------------------------------------------------------------------------


def test_write_read_table_exact(tmp_path):
    run = make(RunStore(tmp_path))
    run.write_table(
        "schedule.csv",
        {
            "op": ["conv1", 'a,"b"', "line\nbreak"],
            "device": np.array([0, 1, 2]),
            "start": [0.1, 1e-17, 2.0 / 3.0],
            "note": [None, "x", "-"],
        },
    )
    assert run.read_table("schedule.csv") == {
        "op": ["conv1", 'a,"b"', "line\nbreak"],
        "device": [0, 1, 2],
        "start": [0.1, 1e-17, 2.0 / 3.0],
        "note": [None, "x", "-"],
    }
    with pytest.raises(ValueError):
        run.write_table("t.csv", {"a": [1, 2], "b": [1]})
    assert "t.csv" not in run.files()


def test_json_lines_append_and_a_torn_last_line(tmp_path):
    run = make(RunStore(tmp_path))
    assert run.read_json_lines("journal.jsonl") == []  # no file yet
    run.append_json_line("journal.jsonl", {"key": "a", "n": 1})
    with (run.path / "journal.jsonl").open("a") as f:
        f.write('{"key": "b", "n"')  # a crash mid-append
    assert run.read_json_lines("journal.jsonl") == [{"key": "a", "n": 1}]
    # the next append drops the fragment first instead of gluing its line to it
    run.append_json_line("journal.jsonl", {"key": "c", "n": 3})
    assert run.read_json_lines("journal.jsonl") == [{"key": "a", "n": 1}, {"key": "c", "n": 3}]
    assert (run.path / "journal.jsonl").read_text() == '{"key": "a", "n": 1}\n{"key": "c", "n": 3}\n'


def test_append_row_and_torn_last_line(tmp_path):
    run = make(RunStore(tmp_path))
    for ep in range(3):
        run.append_row("curve.csv", {"episode": ep, "runtime": 1.0 / (ep + 1), "lr": 1e-3})
    assert (run.path / "curve.csv").read_text().splitlines()[0] == "episode,runtime,lr"
    with (run.path / "curve.csv").open("a") as f:
        f.write("3,0.2")  # a crash mid-append
    expected = {"episode": [0, 1, 2], "runtime": [1.0, 0.5, 1.0 / 3.0], "lr": [1e-3] * 3}
    assert run.read_table("curve.csv") == expected
    # a torn line ending in a newline is caught by its field count
    intact = (run.path / "curve.csv").read_text()[: -len("3,0.2")]
    (run.path / "curve.csv").write_text(intact + "3,0.2\n")
    assert run.read_table("curve.csv") == expected
    (run.path / "curve.csv").write_text(intact)
    # the next append drops a torn tail first, and orders values by the header
    with (run.path / "curve.csv").open("a") as f:
        f.write("4,0.")
    run.append_row("curve.csv", {"lr": 5e-4, "runtime": 0.25, "episode": 3})
    assert run.read_table("curve.csv") == {
        "episode": [0, 1, 2, 3],
        "runtime": [1.0, 0.5, 1.0 / 3.0, 0.25],
        "lr": [1e-3, 1e-3, 1e-3, 5e-4],
    }
    with pytest.raises(ValueError):
        run.append_row("curve.csv", {"episode": 4})


def test_read_table_corrupt_middle_row(tmp_path):
    run = make(RunStore(tmp_path))
    (run.path / "t.csv").write_text("a,b\n1,2\n3\n4,5\n")
    with pytest.raises(RunError) as err:
        run.read_table("t.csv")
    assert str(err.value) == f"run {run.id}: t.csv row 2 has 1 fields, expected 2"


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


cells = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False),
    st.text(min_size=1).filter(lambda s: not _is_number(s)),
    st.none(),
)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_table_round_trip_property(tmp_path_factory, data):
    ncols = data.draw(st.integers(1, 4))
    nrows = data.draw(st.integers(0, 6))
    names = data.draw(
        st.lists(
            st.text(min_size=1).filter(lambda s: not _is_number(s)),
            min_size=ncols,
            max_size=ncols,
            unique=True,
        )
    )
    columns = {n: data.draw(st.lists(cells, min_size=nrows, max_size=nrows)) for n in names}
    run = make(RunStore(tmp_path_factory.mktemp("runs")))
    run.write_table("t.csv", columns)
    back = run.read_table("t.csv")
    assert list(back) == names
    for n in names:
        for got, want in zip(back[n], columns[n], strict=True):
            assert type(got) is type(want)
            assert got == want or (isinstance(want, float) and math.isnan(want))
