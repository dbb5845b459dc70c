"""A damaged run store, full disks and races (issue 34, second reliability pass, items 5-8 and 10).

Every case ends in a correct listing, or exit 2 with one ``error: ...`` line naming the run — never
``internal error`` (exit 1). Everything lives in temporary folders; a full disk is simulated by making
the writes raise ``ENOSPC`` (training on a real 160 KB tmpfs ends the same way).
"""

from __future__ import annotations

import errno
import json
import multiprocessing
import os
import pickle
import shutil
import signal
import time
from pathlib import Path

import pytest
import torch
from cli_run import run_cli
from test_cli_errors import CHAIN, assert_bad_input

from engine.errors import RunError, WriteError
from engine.store.runs import RunStore
from engine.store.tables import write_csv
from policies.rl.core.trainer import Trainer

torch.set_num_threads(1)

GRAPH = "gen:random?ops=12&seed=1"
PARAMS = {"batch": 2}


def enospc() -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


class _NoTensorBoard:
    """Stands in for TensorBoard's writer (importing it imports TensorFlow: seconds per test)."""

    def add_scalar(self, *args, **kwargs) -> None:
        pass

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


@pytest.fixture(autouse=True)
def _fast_training(monkeypatch):
    monkeypatch.setattr(Trainer, "_tensorboard_writer", lambda self, first: _NoTensorBoard())


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith(("error:", "internal error:"))]


def assert_one_error(code: int, err: str, *fragments: str) -> None:
    """Exit 2; stderr (progress lines allowed before it) ends with the one ``error:`` line, holding ``fragments``."""
    assert "Traceback" not in err and "internal error" not in err, err
    assert code == 2, (code, err)
    assert error_lines(err) == [err.rstrip("\n").splitlines()[-1]], err
    for fragment in fragments:
        assert fragment in err, (fragment, err)


def temp_files(run_dir: Path) -> list[str]:
    return sorted(p.name for p in run_dir.iterdir() if p.name.endswith(".tmp"))


# ---- 5. one corrupt run.json hides nothing ---------------------------------------------------

@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLACELAB_RUNS_DIR", str(tmp_path / "runs"))
    (tmp_path / "graph.json").write_text(json.dumps(CHAIN))
    return RunStore(tmp_path / "runs")


def place_run(capsys) -> str:
    code, out, err = run_cli(capsys, "place", "graph.json", "-c", "k80x2", "--placer", "round-robin", "--save",
                             "--json")
    assert code == 0, err
    return json.loads(out)["run_id"]


def damage(run_dir: Path, edit) -> None:
    text = (run_dir / "run.json").read_text()
    meta = json.loads(text)
    (run_dir / "run.json").write_text(edit(meta, text))


def _metric(value: str):
    def edit(meta: dict, _text: str) -> str:
        meta["metrics"]["makespan_s"] = "@@"
        return json.dumps(meta).replace('"@@"', value)
    return edit


CORRUPT = {
    "makespan a word": (_metric('"fast"'), "metric 'makespan_s' is not a number (\"fast\")"),
    "makespan NaN": (_metric("NaN"), "run.json holds NaN, which is not a finite number"),
    "makespan Infinity": (_metric("-Infinity"), "run.json holds -Infinity"),
    "makespan 1e999": (_metric("1e999"), "run.json holds 1e999"),
    "makespan huge integer": (_metric("9" * 400), "metric 'makespan_s' is not a number"),
    "makespan a list": (_metric("[1, 2]"), "metric 'makespan_s' is not a number (list)"),
    "makespan true": (_metric("true"), "metric 'makespan_s' is not a number (true)"),
    "lower bound a word": (lambda m, t: json.dumps({**m, "metrics": {**m["metrics"], "lower_bound_s": "x"}}),
                           "metric 'lower_bound_s' is not a number"),
    "oom a word": (lambda m, t: json.dumps({**m, "metrics": {**m["metrics"], "oom": "yes"}}),
                   "metric 'oom' is not true or false (\"yes\")"),
    "NaN deep inside": (lambda m, t: t.replace('"schema":', '"x": [1, {"y": NaN}], "schema":', 1),
                        "run.json holds NaN"),
}


@pytest.mark.parametrize("case", list(CORRUPT))
def test_a_corrupt_run_is_named_and_the_others_listed(store, capsys, case):
    edit, reason = CORRUPT[case]
    good, bad = place_run(capsys), place_run(capsys)
    damage(store.root / bad, edit)
    for as_json in (False, True):
        code, out, err = run_cli(capsys, "runs", "list", *(["--json"] if as_json else []))
        assert code == 0, err  # before: exit 1, TypeError '<' not supported / ValueError Out of range float values
        assert err.startswith(f"warning: run {bad}: ") and err.count("\n") == 1 and reason in err, err
        if as_json:
            assert [r["id"] for r in json.loads(out)["runs"]] == [good]
        else:
            assert good in out and bad not in out
    for argv in (["runs", "show", bad, "--json"], ["runs", "show", bad], ["runs", "export-trace", bad, "-o", "t.json"]):
        assert_bad_input(*run_cli(capsys, *argv), f"run {bad}", reason)
    code, out, _ = run_cli(capsys, "runs", "show", good, "--json")
    assert code == 0 and json.loads(out)["id"] == good
    code, _, err = run_cli(capsys, "runs", "delete", bad)  # an unreadable run can still be deleted
    assert code == 0 and not (store.root / bad).exists(), err


def test_bundled_example_runs_all_read(capsys):
    examples = RunStore(Path(__file__).resolve().parents[2] / "runs")
    assert examples.list() and examples.problems == []  # the stricter reading refuses none of them


# ---- 6. corrupt checkpoints and policies ----------------------------------------------------

@pytest.fixture(scope="module")
def trained_template(tmp_path_factory):
    """One 4-episode Placeto training run, built once (copied by each test that damages it)."""
    from policies.rl.core.reinforce import Budget
    from policies.rl.core.training_runs import start_training

    root = tmp_path_factory.mktemp("trained") / "runs"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Trainer, "_tensorboard_writer", lambda self, first: _NoTensorBoard())
        out = start_training("placeto", GRAPH, "k80x2", params=PARAMS, budget=Budget(episodes=4),
                             store=RunStore(root))
    return root, out.run_id


@pytest.fixture
def trained(trained_template, store):
    template, run_id = trained_template
    shutil.copytree(template / run_id, store.root / run_id)
    return store.root / run_id


def _malicious_pickle(path: Path, marker: Path) -> None:
    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))  # would create the marker if the pickle were ever run

    path.write_bytes(pickle.dumps(Payload()))


def _malicious_torch_file(path: Path, marker: Path) -> None:
    """A real torch checkpoint (a zip archive) whose pickle would create ``marker`` if it were run (issue 54)."""
    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    torch.save({"model": Payload(), "optimizer": {}, "state": "{}"}, path)


CHECKPOINTS = {
    "random bytes": lambda path, good, marker: path.write_bytes(os.urandom(3000)),
    "truncated": lambda path, good, marker: path.write_bytes(good[: len(good) // 2]),
    "empty": lambda path, good, marker: path.write_bytes(b""),
    "malicious pickle": lambda path, good, marker: _malicious_pickle(path, marker),
    "malicious pickle in a torch file": lambda path, good, marker: _malicious_torch_file(path, marker),
    "not a checkpoint": lambda path, good, marker: torch.save({"weights": [1, 2]}, path),
    "other networks": lambda path, good, marker: torch.save(
        {"model": {"w": torch.zeros(3)}, "optimizer": {}, "state": "{}"}, path),
}


def _commands(run_dir: Path) -> dict[str, list[str]]:
    rid = run_dir.name
    return {
        "train --resume": ["train", "--resume", rid, "--episodes", "8"],
        "eval": ["eval", rid, "-g", GRAPH],
        "train --init-from": ["train", "--placer", "placeto", "-g", GRAPH, "-c", "k80x2", "--episodes", "2",
                              "--param", "batch=2", "--init-from", rid],
        "place --param policy=": ["place", GRAPH, "-c", "k80x2", "--placer", "placeto", "--param",
                                  f"policy={run_dir}"],
    }


@pytest.mark.parametrize("case", list(CHECKPOINTS))
def test_corrupt_checkpoint_is_one_line_naming_the_run(trained, capsys, tmp_path, case):
    ckpt = trained / "checkpoint.pt"
    marker = tmp_path / "unpickled"
    CHECKPOINTS[case](ckpt, ckpt.read_bytes(), marker)
    before = (trained / "run.json").read_text()
    for name, argv in _commands(trained).items():
        code, out, err = run_cli(capsys, *argv)
        # before: internal error UnpicklingError / RuntimeError / EOFError / KeyError, exit 1
        if name == "train --init-from" and case == "other networks":  # the weights load, but do not fit
            assert_bad_input(code, out, err, f"--init-from {trained.name}: its networks differ in size")
        else:
            assert_bad_input(code, out, err, f"run {trained.name}: checkpoint.pt")
        assert not marker.exists(), name  # nothing in the file was run
    assert (trained / "run.json").read_text() == before  # the refused resume left the run as it was


POLICY_DAMAGE = {
    **{f"no {key}": (key, None) for key in ("placer", "config", "num_devices", "cluster", "graphs", "seed")},
    "num_devices a word": ("num_devices", "two"),
    "num_devices 10^12": ("num_devices", 10**12),  # before: internal error, torch's storage size overflowed
    "num_devices 0": ("num_devices", 0),
    "config a list": ("config", [1]),
    "config with a bad value": ("config", "bad-hidden"),
}


@pytest.mark.parametrize("case", list(POLICY_DAMAGE))
def test_damaged_policy_json_is_one_line_naming_the_run(trained, capsys, case):
    key, value = POLICY_DAMAGE[case]
    doc = json.loads((trained / "policy.json").read_text())
    if value is None:
        del doc[key]
    elif value == "bad-hidden":
        doc["config"]["hidden"] = "wide"
    else:
        doc[key] = value
    (trained / "policy.json").write_text(json.dumps(doc))
    for name, argv in _commands(trained).items():
        if name == "train --init-from" and case == "config with a bad value":
            continue  # it takes the weights only, and they fit
        assert_bad_input(*run_cli(capsys, *argv), f"run {trained.name}: policy.json")


@pytest.mark.parametrize("key", ["budget", "stopping"])
def test_resume_needs_the_budget_and_stopping_rule(trained, capsys, key):
    doc = json.loads((trained / "policy.json").read_text())
    del doc[key]
    (trained / "policy.json").write_text(json.dumps(doc))
    assert_bad_input(*run_cli(capsys, "train", "--resume", trained.name, "--episodes", "8"),
                     f"run {trained.name}: policy.json has no '{key}'")
    code, out, _ = run_cli(capsys, "eval", trained.name, "-g", GRAPH, "--json")  # eval does not need them
    assert code == 0 and json.loads(out)["results"]


# ---- 7. a full disk while training, and two quick Ctrl-Cs ------------------------------------

def train_saved(capsys, *extra: str) -> tuple[int, str]:
    code, _out, err = run_cli(capsys, "train", "--placer", "placeto", "-g", GRAPH, "-c", "k80x2", "--param",
                              "batch=2", "--episodes", "40", "--save", *extra)
    return code, err


def assert_failed_for_space(store: RunStore, code: int, err: str) -> Path:
    (run,) = store.list()
    assert_one_error(code, err, f"training run {run.id} stopped: no space left on device in {store.root}",
                     "(stored as failed); resume it once there is space")
    meta = store.load(run.id).meta
    assert meta["status"] == "failed" and meta["error"].startswith("no space left on device"), meta
    assert temp_files(run.path) == []  # the checkpoint's temp file and the space reserve are gone
    return run.path


def test_disk_full_writing_the_checkpoint(store, capsys, monkeypatch):
    def full(path, data):  # a write that fills the disk half-way, as torch.save did to .checkpoint.pt.tmp
        Path(path).with_name(f".{Path(path).name}.tmp").write_bytes(data[:100])
        raise WriteError(f"cannot write {path}: {os.strerror(errno.ENOSPC)}") from enospc()

    monkeypatch.setattr("policies.rl.core.trainer.atomic_write_bytes", full)
    code, err = train_saved(capsys)
    run_dir = assert_failed_for_space(store, code, err)
    assert "checkpoint.pt" in json.loads((run_dir / "run.json").read_text())["error"]


class ResourceExhaustedError(Exception):
    """What TensorFlow's file writer raises under TensorBoard on a full disk (not an OSError)."""


def test_disk_full_in_tensorboard(store, capsys, monkeypatch):
    class FullWriter(_NoTensorBoard):
        def add_scalar(self, *args, **kwargs) -> None:
            raise ResourceExhaustedError("tensorboard/events.out.tfevents.1.host; No space left on device")

        def close(self) -> None:  # closing flushes: it fails again
            raise ResourceExhaustedError("tensorboard/events.out.tfevents.1.host; No space left on device")

    monkeypatch.setattr(Trainer, "_tensorboard_writer", lambda self, first: FullWriter())
    code, err = train_saved(capsys)
    run_dir = assert_failed_for_space(store, code, err)
    assert "tfevents" in json.loads((run_dir / "run.json").read_text())["error"]


def test_disk_full_appending_the_learning_curve(store, capsys, monkeypatch):
    import engine.store.run_dir

    real, calls = engine.store.run_dir.append_csv_rows, []

    def append(path, rows):
        calls.append(path)
        if len(calls) == 3:
            raise enospc()
        real(path, rows)

    monkeypatch.setattr(engine.store.run_dir, "append_csv_rows", append)
    code, err = train_saved(capsys)
    assert_failed_for_space(store, code, err)


def test_disk_full_for_run_json_too(store, capsys, monkeypatch):
    """When even run.json cannot be written, the line says so, and the run reads interrupted (not running)."""
    import engine.store.run_dir
    import engine.store.runs

    real, calls = engine.store.runs.atomic_write_json, []

    def write(path, obj, **kwargs):
        calls.append(path)
        if len(calls) > 3:
            raise WriteError(f"cannot write {path}: {os.strerror(errno.ENOSPC)}")
        real(path, obj, **kwargs)

    monkeypatch.setattr(engine.store.runs, "atomic_write_json", write)  # the store creates run.json
    monkeypatch.setattr(engine.store.run_dir, "atomic_write_json", write)  # the run updates it
    code, err = train_saved(capsys)
    (run,) = store.list()
    assert_one_error(code, err, f"training run {run.id} stopped: no space left on device",
                     "its run.json could not be updated either")
    assert run.status == "interrupted" and temp_files(run.path) == []


def test_a_second_ctrl_c_while_saving_leaves_a_whole_interrupted_run(store, capsys, monkeypatch):
    real_step, real_save = Trainer.step, Trainer.save_checkpoint
    stopping = []

    def step(self):
        if self.episodes >= 8:  # after the first checkpoint: the user presses Ctrl-C ...
            stopping.append(True)
            raise KeyboardInterrupt
        return real_step(self)

    def save(self, path):
        if stopping:  # ... and again while the interrupted run saves its checkpoint
            os.kill(os.getpid(), signal.SIGINT)
        real_save(self, path)

    monkeypatch.setattr(Trainer, "step", step)
    monkeypatch.setattr(Trainer, "save_checkpoint", save)
    code, err = train_saved(capsys)
    assert code == 130 and err.endswith("interrupted\n") and "Traceback" not in err, err
    (run,) = store.list()
    # before: the second KeyboardInterrupt broke off the save: run.json said running, a temp file stayed
    assert (run.status, run.meta.get("error")) == ("interrupted", None)
    assert temp_files(run.path) == [] and "checkpoint.pt" in run.files()
    state = json.loads(torch.load(run.path / "checkpoint.pt", weights_only=True)["state"])
    assert state["episodes"] == 8


def test_a_failed_run_resumes_once_there_is_space(store, capsys, monkeypatch):
    real, calls = Trainer.save_checkpoint, []

    def save(self, path):
        calls.append(path)
        if len(calls) == 2:
            raise WriteError(f"cannot write {path}: {os.strerror(errno.ENOSPC)}") from enospc()
        real(self, path)

    monkeypatch.setattr(Trainer, "save_checkpoint", save)
    code, err = train_saved(capsys)
    (run,) = store.list()
    assert_one_error(code, err, f"training run {run.id} stopped")
    code, out, err = run_cli(capsys, "train", "--resume", run.id, "--episodes", "16", "--json")
    assert code == 0, err
    assert json.loads(out)["episodes"] == 16 and store.load(run.id).meta["status"] == "done"


# ---- 8. resume on a changed graph ----------------------------------------------------------

def interrupt_sweep(store: RunStore, sweep_id: str, keep: int) -> None:
    """Leave the sweep as a Ctrl-C after ``keep`` results would: fewer rows, status interrupted."""
    run = store.load(sweep_id)
    table = run.read_table("sweep.csv")
    write_csv(run.path / "sweep.csv", {k: v[:keep] for k, v in table.items()})
    run.update(status="interrupted")


def edit_graph(path: Path) -> None:
    doc = json.loads(path.read_text())
    doc["ops"][0]["compute"] *= 2
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize("stored_before_hashes", [False, True])
def test_sweep_resume_refuses_a_changed_graph(store, capsys, stored_before_hashes):
    argv = ["sweep", "-g", f"graph.json,{GRAPH}", "-c", "k80x2", "--placers", "round-robin,single-device", "--json"]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    sweep_id = json.loads(out)["run_id"]
    interrupt_sweep(store, sweep_id, keep=2)
    if stored_before_hashes:  # a sweep stored before per-graph hashes: only the digest in graph.hash
        params = store.load(sweep_id).meta["parameters"]
        store.load(sweep_id).update(parameters={k: v for k, v in params.items() if k != "graph_hashes"})
    edit_graph(store.root.parent / "graph.json")
    code, out, err = run_cli(capsys, "sweep", "--resume", sweep_id)
    # before: exit 0 and a table mixing the two versions of graph.json
    assert_one_error(code, err, f"sweep {sweep_id} cannot resume", "graph.json", "changed since it started")
    assert out == ""
    assert len(store.load(sweep_id).read_table("sweep.csv")["task"]) == 2  # nothing was added
    assert store.load(sweep_id).status == "interrupted"


def test_sweep_resume_on_unchanged_graphs_finishes(store, capsys):
    code, out, _ = run_cli(capsys, "sweep", "-g", f"graph.json,{GRAPH}", "-c", "k80x2", "--placers",
                           "round-robin,single-device", "--json")
    sweep_id = json.loads(out)["run_id"]
    interrupt_sweep(store, sweep_id, keep=2)
    code, out, err = run_cli(capsys, "sweep", "--resume", sweep_id, "--json")
    assert code == 0, err
    assert json.loads(out)["ran"] == 2 and store.load(sweep_id).status == "done"


def test_train_resume_refuses_a_changed_graph(store, capsys):
    code, out, err = run_cli(capsys, "train", "--placer", "placeto", "-g", "graph.json", "-c", "k80x2",
                             "--param", "batch=2", "--episodes", "4", "--save", "--json")
    assert code == 0, err
    run_id = json.loads(out)["run_id"]
    store.load(run_id).update(status="interrupted")
    edit_graph(store.root.parent / "graph.json")
    assert_bad_input(*run_cli(capsys, "train", "--resume", run_id, "--episodes", "8"),
                     f"run {run_id} cannot resume: its graphs (graph.json) changed since it started")
    assert store.load(run_id).status == "interrupted"


# ---- 10. racing deletes ---------------------------------------------------------------------

def test_delete_of_a_run_another_delete_just_removed(store, capsys, monkeypatch):
    import engine.store.runs

    run_id = place_run(capsys)
    real = engine.store.runs.live_lock_held

    def other_delete_first(path):  # the other `runs delete` wins the race right after this one found the run
        monkeypatch.setattr(engine.store.runs, "live_lock_held", real)
        RunStore(store.root).delete(run_id)
        return real(path)

    monkeypatch.setattr(engine.store.runs, "live_lock_held", other_delete_first)
    # before: internal error: FileNotFoundError: ... .live.lock (exit 1)
    assert_bad_input(*run_cli(capsys, "runs", "delete", run_id), f"run {run_id} was deleted by another process")
    assert not (store.root / run_id).exists()


def _delete(root: str, run_id: str, results) -> None:
    try:
        results.put(("deleted", RunStore(root).delete(run_id)))
    except RunError as exc:
        results.put(("refused", str(exc)))
    except BaseException as exc:  # what the test must not see
        results.put(("crashed", f"{type(exc).__name__}: {exc}"))


def test_racing_deletes_of_one_run(store):
    ctx = multiprocessing.get_context("fork")
    for _ in range(15):
        run = store.create("place", graph_name="g", graph_hash="h", cluster="c", placer="p", parameters={}, seed=0)
        run.finish("done")
        results = ctx.Queue()
        procs = [ctx.Process(target=_delete, args=(str(store.root), run.id, results)) for _ in range(4)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        outcomes = [results.get(timeout=10) for _ in procs]
        assert [kind for kind, _ in outcomes].count("deleted") == 1, outcomes
        assert all(kind != "crashed" and run.id in text for kind, text in outcomes), outcomes
        assert sorted(p.name for p in store.root.iterdir()) == []  # nothing half-deleted


# ---- issue 54, reliability pass 3: a store that cannot be written, links out of the store, special lock files ----

def _store_cannot_be_written(monkeypatch, root: Path, how: str) -> str:
    """Make writing a file in the store folder ``root`` fail as a read-only file system or a full disk does;
    the error line's reason. The tests run as root, which writes through ``chmod a-w`` and mounts nothing here,
    so the store's own probe (:meth:`RunStore.check_writable`, a temp file made in the store's folder) is made to
    fail: a read-only file system refuses to create the file (EROFS), a full disk the bytes written (its file is
    ``/dev/full``, which answers every write with ENOSPC)."""
    import tempfile

    real = tempfile.mkstemp

    def mkstemp(*args, dir=None, **kwargs):
        if dir is None or Path(dir).resolve() != root.resolve():
            return real(*args, dir=dir, **kwargs)
        if how == "read-only":
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        return os.open("/dev/full", os.O_WRONLY), str(root / ".write-check-full.tmp")

    if how == "full" and not os.path.exists("/dev/full"):
        pytest.skip("needs /dev/full")
    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    return os.strerror(errno.EROFS if how == "read-only" else errno.ENOSPC)


UNWRITABLE = {
    "compare": ["compare", GRAPH, "-c", "k80x2", "--placers", "round-robin,single-device"],
    "place --save": ["place", GRAPH, "-c", "k80x2", "--placer", "round-robin", "--save"],
    "train --save": ["train", "--placer", "placeto", "-g", GRAPH, "-c", "k80x2", "--episodes", "2", "--save"],
    "train --resume": ["train", "--resume", "{run}", "--episodes", "8"],
    "eval --save": ["eval", "{run}", "-g", GRAPH, "--save"],
    "sweep": ["sweep", "-g", GRAPH, "-c", "k80x2", "--placers", "round-robin"],
    "reproduce": ["reproduce", "placeto-fig5", "--quick", "--only", "rnn/nmt"],
    "runs delete": ["runs", "delete", "{run}"],
}


@pytest.mark.parametrize("how", ["read-only", "full"])
@pytest.mark.parametrize("command", list(UNWRITABLE))
def test_a_store_that_cannot_be_written_is_one_line_before_any_work(trained, capsys, monkeypatch, how, command):
    root = trained.parent
    before = sorted(p.name for p in root.iterdir())
    meta = (trained / "run.json").read_text()
    reason = _store_cannot_be_written(monkeypatch, root, how)
    argv = [a.format(run=trained.name) for a in UNWRITABLE[command]]
    code, out, err = run_cli(capsys, *argv)
    # before: compare placed every placer and only then failed; delete and train --resume: internal OSError
    assert_bad_input(code, out, err, f"cannot store runs in {root}: {reason}")  # one line: no placer ran
    assert sorted(p.name for p in root.iterdir()) == before  # nothing stored, nothing deleted
    assert (trained / "run.json").read_text() == meta


def test_a_store_under_a_file_is_one_line(store, capsys):
    (store.root.parent / "afile").write_text("x")
    for argv in (UNWRITABLE["compare"], UNWRITABLE["sweep"]):
        assert_bad_input(*run_cli(capsys, *argv, "--runs-dir", "afile/runs"),
                         "cannot store runs in afile/runs: Not a directory")


def test_a_link_to_a_run_outside_the_store_is_not_a_run(store, capsys, tmp_path):
    good = place_run(capsys)
    outside = RunStore(tmp_path / "elsewhere")
    foreign = outside.create("place", graph_name="g", graph_hash="h", cluster="c", placer="p", parameters={}, seed=0)
    foreign.finish("done")
    (store.root / "escape").symlink_to(foreign.path)
    (store.root / (good[:-2] + "zz")).symlink_to(store.root / good)  # a second name of a run inside the store
    # before: listed (and shown on the app's Home and Runs pages) but not deletable
    code, out, err = run_cli(capsys, "runs", "list", "--json")
    assert (code, err) == (0, "") and [r["id"] for r in json.loads(out)["runs"]] == [good]
    assert [r.id for r in RunStore(store.root).list()] == [good]  # what the app's run lists read
    for argv in (["runs", "show", "escape"], ["runs", "delete", "escape"]):
        assert_bad_input(*run_cli(capsys, *argv), f"'escape' in {store.root} is a symbolic link to a folder, not a run")
    assert_bad_input(*run_cli(capsys, "runs", "show", "esc"), "no run matches 'esc'")
    code, out, _ = run_cli(capsys, "runs", "show", good[:-2], "--json")  # the prefix names the real folder only
    assert code == 0 and json.loads(out)["id"] == good
    assert (store.root / "escape").is_symlink() and outside.load(foreign.id).status == "done"  # both left alone


def test_a_live_lock_that_is_a_named_pipe_never_blocks(store, capsys):
    from test_cli_reliability import cli_process

    done_id, running_id = place_run(capsys), place_run(capsys)
    for rid in (done_id, running_id):
        (store.root / rid / ".live.lock").unlink(missing_ok=True)
        os.mkfifo(store.root / rid / ".live.lock")
    damage(store.root / running_id, lambda meta, text: json.dumps({**meta, "status": "running"}))
    root = str(store.root)
    proc = cli_process("runs", "delete", done_id, "--runs-dir", root)  # before: blocked forever opening the pipe
    assert_bad_input(proc.returncode, proc.stdout, proc.stderr, f"run {done_id}: .live.lock is a named pipe, not a "
                     "regular file; remove it")
    proc = cli_process("runs", "list", "--json", "--runs-dir", root)  # liveness unknown: interrupted on this host
    assert proc.returncode == 0, proc.stderr
    assert {r["id"]: r["status"] for r in json.loads(proc.stdout)["runs"]} == {done_id: "done",
                                                                               running_id: "interrupted"}
    assert sorted(p.name for p in store.root.iterdir()) == sorted([done_id, running_id])


# ---- issue 54, item 4: checkpoints never unpickled with code, concurrent saves and resumes, hostile run ids ----

def _cli_in_child(argv: list[str], start, results) -> None:
    """``placelab ARGV`` in this forked process once ``start`` is set: (exit code, stdout, stderr) to ``results``."""
    import contextlib
    import io

    from placelab.cli import main

    out, err = io.StringIO(), io.StringIO()
    start.wait(60)
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv)
        except SystemExit as exc:
            code = 0 if exc.code is None else exc.code
    results.put((code, out.getvalue(), err.getvalue()))


def _at_once(argvs: list[list[str]]) -> tuple[list, list]:
    """Start ``placelab ARGV`` for every ``argvs`` in forked processes, released together; the processes and the
    queue their (code, stdout, stderr) come to."""
    ctx = multiprocessing.get_context("fork")
    start, results = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_cli_in_child, args=(argv, start, results)) for argv in argvs]
    for p in procs:
        p.start()
    start.set()
    return procs, results


def test_twelve_place_saves_at_once_lose_nothing(store):
    argv = ["place", GRAPH, "-c", "k80x2", "--placer", "round-robin", "--save", "--json", "--runs-dir",
            str(store.root)]
    procs, results = _at_once([[*argv[:-3], "--seed", str(i), *argv[-3:]] for i in range(12)])
    outcomes = [results.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(60)
    assert [code for code, _, _ in outcomes] == [0] * 12, outcomes
    ids = sorted(json.loads(out)["run_id"] for _, out, _ in outcomes)
    assert len(set(ids)) == 12
    listed = RunStore(store.root).list()
    assert sorted(r.id for r in listed) == ids and RunStore(store.root).problems == []
    assert sorted(r.meta["seed"] for r in listed) == list(range(12))
    assert all(r.status == "done" and "placement.json" in r.files() for r in listed)


def test_ten_resumes_of_one_run_at_once_one_goes_on(trained):
    """Of ten ``train --resume`` at once, one takes the run and the nine others are refused with one line each.
    The one that goes on trains until it is asked to stop (``stop.request``), and is asked only once the nine
    have answered: every outcome is counted, none depends on timing."""
    from policies.rl.core.run_files import STOP_REQUEST

    store = RunStore(trained.parent)
    before = store.load(trained.name).read_table("learning_curve.csv")["episode"]
    argv = ["train", "--resume", trained.name, "--episodes", "1000000", "--json", "--runs-dir", str(store.root)]
    procs, results = _at_once([argv] * 10)
    refused = [results.get(timeout=300) for _ in range(9)]
    for code, out, err in refused:
        assert (code, out, err.count("\n")) == (2, "", 1), err
        assert err.startswith(f"error: run {trained.name} is ") and ("running" in err or "still training" in err), err
    deadline = time.monotonic() + 300
    while json.loads((trained / "run.json").read_text())["status"] != "running":  # the one that goes on has started
        assert time.monotonic() < deadline and any(p.is_alive() for p in procs), "the resume that goes on never started"
        time.sleep(0.1)
    (trained / STOP_REQUEST).write_text("")
    code, out, err = results.get(timeout=300)
    for p in procs:
        p.join(60)
    assert code == 0, err
    run = store.load(trained.name)
    assert run.status == "interrupted" and run.meta["metrics"]["stop_reason"] == "stopped"  # as it was asked
    episodes = run.read_table("learning_curve.csv")["episode"]
    assert episodes[:len(before)] == before and episodes == list(range(1, len(episodes) + 1))  # nothing lost
    assert json.loads(out)["episodes"] == len(episodes)
