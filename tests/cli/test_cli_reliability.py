"""The reliability pass (issue 18): bad options, special files, overflowing numbers, hostile inputs.

Every case exits 2 with one ``error: ...`` line (see ``assert_bad_input``) and leaves nothing
behind; special files (named pipes, device nodes, symlinks) are created in a temporary
directory, never taken from the system.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from cli_run import run_cli
from test_cli_errors import CHAIN, CLUSTER, assert_bad_input

from engine.errors import GraphError

REPO = Path(__file__).resolve().parents[2]
SMALL = "gen:random?ops=12&seed=1"


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLACELAB_RUNS_DIR", str(tmp_path / "runs"))
    (tmp_path / "graph.json").write_text(json.dumps(CHAIN))
    (tmp_path / "cluster.json").write_text(json.dumps(CLUSTER))
    return tmp_path


def cli_process(*args: str, timeout: float = 300, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``placelab ARGS`` in a child process (a hang becomes a timeout, a crash a signal). The limit only
    catches a hang: generous, so a busy machine (a 2-core CI box at load 14) never trips it."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "placelab.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=cwd)


def runs_in(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir()) if path.is_dir() else []


# ---- numeric options and choices: one validation, before any work ---------------------------

BAD_OPTIONS = {
    "negative seed": (["place", SMALL, "-c", "k80x2", "--placer", "random", "--seed", "-1", "--save"],
                      ["--seed must be >= 0, got -1"]),
    "huge seed": (["compare", SMALL, "-c", "k80x2", "--seed", str(2**40)],
                  ["--seed must be <= 2,147,483,647", "MAX_SEED"]),
    "negative budget": (["place", SMALL, "-c", "k80x2", "--placer", "local-search", "--budget", "-1", "--save"],
                        ["--budget must be >= 0"]),
    "nan seconds": (["train", "--placer", "placeto", "-g", SMALL, "-c", "k80x2", "--max-seconds", "nan", "--save"],
                    ["--max-seconds must be a finite number, got nan"]),
    "inf seconds": (["train", "--placer", "placeto", "-g", SMALL, "-c", "k80x2", "--max-seconds", "inf", "--save"],
                    ["--max-seconds must be a finite number, got inf"]),
    "nan tolerance": (["train", "--placer", "placeto", "-g", SMALL, "-c", "k80x2", "--stop-tolerance", "nan",
                       "--save"], ["--stop-tolerance must be a finite number"]),
    "nan param": (["train", "--placer", "placeto", "-g", SMALL, "-c", "k80x2", "--param", "lr=nan", "--save"],
                  ["--param lr must be a finite number"]),
    "empty placers": (["compare", SMALL, "-c", "k80x2", "--placers", ","], ["--placers names no placer"]),
    "zero test graphs": (["experiment", "--family", "cifar10", "-c", "k80x2", "--test-graphs", "0"],
                         ["--test-graphs"]),
    "baseline as learned placer": (["experiment", "--family", "cifar10", "-c", "k80x2", "--placer", "heft"],
                                   ["'heft' is not a learned placer"]),
    "negative resume episodes": (["train", "--resume", "nope", "--episodes", "-5"], ["--episodes must be >= 0"]),
}


@pytest.mark.parametrize("case", list(BAD_OPTIONS))
def test_bad_numbers_and_choices_fail_before_any_work(env, capsys, case):
    argv, fragments = BAD_OPTIONS[case]
    assert_bad_input(*run_cli(capsys, *argv), *fragments)
    assert runs_in(env / "runs") == []  # no run was started, none stored


def test_nan_time_budget_never_trains(env):
    # before: `train --max-seconds nan` trained forever; the child would hit the timeout
    proc = cli_process("train", "--placer", "placeto", "-g", SMALL, "-c", "k80x2", "--max-seconds", "nan",
                       "--episodes", "1000000", cwd=env)
    assert (proc.returncode, proc.stdout, proc.stderr.count("\n")) == (2, "", 1), proc.stderr


# ---- writes: regular files only, one sentence naming the user's path ------------------------

@pytest.fixture
def trace_run(env, capsys):
    code, out, _ = run_cli(capsys, "place", "graph.json", "-c", "cluster.json", "--placer", "round-robin",
                           "--save", "--json")
    assert code == 0
    return json.loads(out)["run_id"]


def _special(env: Path, kind: str) -> Path:
    target = env / f"special-{kind}"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "chardev":
        try:
            os.mknod(target, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # the null device's numbers
        except PermissionError:
            pytest.skip("creating a device node needs root")
    elif kind == "symlink-to-fifo":
        os.mkfifo(env / "fifo-behind-link")
        target.symlink_to(env / "fifo-behind-link")
    return target


@pytest.mark.parametrize("kind", ["fifo", "chardev", "symlink-to-fifo"])
def test_export_trace_refuses_special_files(env, capsys, trace_run, kind):
    target = _special(env, kind)
    before = os.stat(target)
    code, out, err = run_cli(capsys, "runs", "export-trace", trace_run, "-o", str(target))
    assert_bad_input(code, out, err, f"cannot write {target}", "not a regular file")
    after = os.stat(target)  # still the same special file, not replaced by a JSON file
    assert (stat.S_IFMT(after.st_mode), after.st_ino) == (stat.S_IFMT(before.st_mode), before.st_ino)
    assert target.is_symlink() == (kind == "symlink-to-fifo")


def test_write_through_symlink_keeps_the_link(env, capsys, trace_run):
    (env / "real.json").write_text("old")
    link = env / "link.json"
    link.symlink_to(env / "real.json")
    code, _, _ = run_cli(capsys, "runs", "export-trace", trace_run, "-o", str(link))
    assert code == 0 and link.is_symlink()
    assert "traceEvents" in json.loads((env / "real.json").read_text())


@pytest.mark.parametrize("where, fragment", [
    ("missing/out.json", "the folder {env}/missing does not exist"),
    (".", "it is a directory, not a regular file"),
    ("graph.json/out.json", "{env}/graph.json is not a folder"),  # under a regular file
])
def test_place_output_unwritable_fails_before_placing(env, capsys, where, fragment):
    code, out, err = run_cli(capsys, "place", "graph.json", "-c", "cluster.json", "--placer", "round-robin",
                             "--save", "-o", where)
    assert_bad_input(code, out, err, f"cannot write {where}", fragment.format(env=env))
    assert runs_in(env / "runs") == []  # checked before the placer ran


def test_runs_dir_on_a_file_is_bad_input(env, capsys):
    (env / "afile").write_text("x")
    for argv in (["runs", "list"], ["runs", "show", "x"],
                 ["place", "graph.json", "-c", "cluster.json", "--placer", "round-robin", "--save"]):
        assert_bad_input(*run_cli(capsys, *argv, "--runs-dir", "afile"), "the run store afile is not a folder")


def test_runs_show_parent_and_hidden_refs(env, capsys, trace_run):
    for ref in ("..", ".", ".deleting-x"):
        assert_bad_input(*run_cli(capsys, "runs", "show", ref), f"'{ref}' is not a run id")


def test_a_run_id_longer_than_a_file_name_is_one_line(env, capsys, trace_run):
    # before: internal error OSError "File name too long" (benchmarks/adversarial_pass.py, store and one-line)
    for ref in ("r" * 256, "r" * 100_000):
        for argv in (["runs", "show", ref, "--json"], ["runs", "delete", ref], ["eval", ref, "-g", "graph.json"]):
            code, out, err = run_cli(capsys, *argv)
            assert_bad_input(code, out, err, "is not a run id")
            assert len(err) <= 301
    assert runs_in(env / "runs") == [trace_run]


@pytest.mark.parametrize("ref, fragment", [("/", "'/' is not a run id"), ("a\x01b", "no run matches 'a\\x01b'"),
                                           ("r" * 5000, "is not a run id")])
def test_hostile_run_ids_are_one_line(env, capsys, trace_run, ref, fragment):
    # issue 54, item 4: a slash, a control character, a 5,000-character id
    for argv in (["runs", "show", ref, "--json"], ["runs", "delete", ref], ["eval", ref, "-g", "graph.json"]):
        code, out, err = run_cli(capsys, *argv)
        assert_bad_input(code, out, err, fragment)
        assert len(err) <= 301 and "\x01" not in err
    assert runs_in(env / "runs") == [trace_run]


@pytest.mark.parametrize("corrupt", ['{"schema": "placelab.run/1", "metrics": []}', "{not json", "[1, 2]",
                                     '{"schema": "placelab.run/1", "tags": "a,b"}'])
def test_corrupt_run_json_is_skipped_with_a_warning(env, capsys, trace_run, corrupt):
    bad = env / "runs" / "20990101-000000-place-bad-0000"
    bad.mkdir()
    (bad / "run.json").write_text(corrupt)
    code, out, err = run_cli(capsys, "runs", "list", "--json")
    assert code == 0
    assert [r["id"] for r in json.loads(out)["runs"]] == [trace_run]
    assert err.count("\n") == 1 and err.startswith("warning: run 20990101-000000-place-bad-0000")
    code, out, err = run_cli(capsys, "runs", "delete", bad.name)  # an unreadable run can still be deleted
    assert code == 0 and not bad.exists()


# ---- inputs: special files, overflow, sizes, hostile GraphML --------------------------------

def test_named_pipe_as_graph_never_blocks(env):
    os.mkfifo(env / "pipe.json")
    proc = cli_process("graph", "info", "pipe.json", cwd=env)  # before: blocked forever
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == "error: pipe.json is a named pipe, not a regular file\n"


@pytest.mark.parametrize("cost, line", [
    ("nan,4", "line 6 (node 1): comp_cost must be a finite number >= 0, got 'nan'"),
    ("1,inf", "line 6 (node 1): comm_cost must be a finite number >= 0, got 'inf'"),
])
def test_a_doppler_text_file_with_a_cost_that_is_not_a_number_names_the_line(env, capsys, cost, line):
    # before: "unrecognized graph format" (the format's detection took nan for no number at all)
    (env / "d.txt").write_text(f"3\n\n0,1\n1,2\n1,4\n{cost}\n1,4\n")
    assert_bad_input(*run_cli(capsys, "graph", "info", "d.txt"), f"d: {line}")


def _write(env: Path, name: str, doc: dict) -> str:
    (env / name).write_text(json.dumps(doc))
    return name


def test_totals_beyond_float_range_are_bad_input(env, capsys):
    g = {**CHAIN, "ops": [{**op, "compute": 1e308} for op in CHAIN["ops"]]}
    assert_bad_input(*run_cli(capsys, "graph", "info", _write(env, "g.json", g), "--json"),
                     "graph 'chain': the ops' compute total inf")
    big_bytes = {**CHAIN, "edges": [{**e, "bytes": 1e200} for e in CHAIN["edges"]]}
    assert_bad_input(*run_cli(capsys, "graph", "info", _write(env, "b.json", big_bytes)),
                     "the edges' bytes total 2e+200")
    lat = {**CLUSTER, "link": {"bandwidth_bytes_per_s": 1e9, "latency_s": 1e308}}
    assert_bad_input(*run_cli(capsys, "place", "graph.json", "-c", _write(env, "c.json", lat), "--placer",
                              "round-robin", "--json"), "cluster 'two': the latencies and overheads total 1e+308")
    slow = {**CLUSTER, "devices": [{**d, "speed": 1e-300} for d in CLUSTER["devices"]]}
    assert_bad_input(*run_cli(capsys, "simulate", "graph.json", "-c", _write(env, "s.json", slow),
                              "--placement", "x.json"), "reciprocal speeds and bandwidths total 2e+300")


def test_device_count_and_generator_sizes_are_capped(env, capsys):
    many = {**CLUSTER, "devices": [{"name": f"d{i}", "kind": "gpu", "memory_bytes": 1e9} for i in range(20_000)]}
    assert_bad_input(*run_cli(capsys, "graph", "info", "graph.json", "-c", _write(env, "m.json", many)),
                     "cluster 'two' has 20000 devices, more than the 4096 placelab simulates")
    assert_bad_input(*run_cli(capsys, "graph", "info", "gen:nmt?length=1000000000"),
                     "gen:nmt: length=1000000000 is beyond the limit of 4,096")
    assert_bad_input(*run_cli(capsys, "graph", "info", "gen:nmt?length=4000&layers=8"),
                     "gen:nmt: layers×length = 32,000 is beyond the limit of 20,000")
    assert_bad_input(*run_cli(capsys, "graph", "info", "gen:random?ops=100000000"), "ops=100000000")


GRAPHML = ('<?xml version="1.0"?>\n{dtd}<graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
           '<graph edgedefault="directed">{body}</graph></graphml>\n')


@pytest.mark.parametrize("dtd, body, fragment", [
    ('<!DOCTYPE graphml [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>\n',
     '<node id="&b;"/>', "a DTD (<!DOCTYPE>) or entity declaration"),
    ('<!DOCTYPE graphml SYSTEM "file:///etc/hostname">\n', '<node id="a"/>', "a DTD"),
    ("", '<node id="a"/><node id="b"/><node id="a"/>', "node id 'a' is declared twice"),
    ("", '<node id="a"/><edge source="a" target="ghost"/>', "edge #0 refers to undeclared node 'ghost'"),
])
def test_hostile_graphml(env, capsys, dtd, body, fragment):
    (env / "h.graphml").write_text(GRAPHML.format(dtd=dtd, body=body))
    assert_bad_input(*run_cli(capsys, "graph", "info", "h.graphml"), "h.graphml", fragment)


def test_graphml_found_by_the_soak(env, capsys):
    # a mutated XML declaration: expat raised LookupError (exit 1, "internal error")
    (env / "enc.graphml").write_text(GRAPHML.format(dtd="", body='<node id="a"/>').replace(
        'version="1.0"', 'version="1.0" encoding="UTFtrue"'))
    assert_bad_input(*run_cli(capsys, "graph", "info", "enc.graphml"), "enc.graphml is not valid GraphML",
                     "unknown encoding")
    # an undeclared data key: networkx's UserWarning came before the error line (a child process: pytest
    # would capture the warning)
    (env / "key.graphml").write_text(GRAPHML.format(dtd="", body='<node id="a"><data key="t">1</data></node>'))
    proc = cli_process("graph", "info", "key.graphml", cwd=env)
    assert_bad_input(proc.returncode, proc.stdout, proc.stderr, "key.graphml is not valid GraphML")


def test_graphml_with_declared_nodes_still_imports(env, capsys):
    body = '<node id="a"/><node id="b"/><edge source="a" target="b"/>'
    (env / "ok.graphml").write_text(GRAPHML.format(dtd="", body=body))
    code, out, _ = run_cli(capsys, "graph", "info", "ok.graphml", "--json")
    assert code == 0 and (json.loads(out)["ops"], json.loads(out)["edges"]) == (2, 1)


# ---- the app's graph sources --------------------------------------------------------------

def test_upload_errors_name_the_visitors_file():
    from engine.specs import load_uploaded_graph

    with pytest.raises(GraphError) as err:
        load_uploaded_graph("my model.json", b'{"schema": "placelab.graph/1", "ops": [')
    assert str(err.value).startswith("my model.json is not valid JSON")
    assert "placelab-upload" not in str(err.value) and "/tmp" not in str(err.value)
    g = load_uploaded_graph("../../etc/chain.json", json.dumps(CHAIN).encode())
    assert (g.name, g.num_ops) == ("chain", 3)


# ---- clean streams in a real process (issue 34): no library output around the one line or the JSON ----

def test_numpy_warnings_do_not_join_the_error_line(env):
    # before: two lines of numpy "RuntimeWarning: overflow encountered in divide" came first
    rows = "".join(f"{c},{4 * c},einsummable,\n" for c in (10**13, 2 * 10**13, 3 * 10**13, 10**13))
    (env / "diamond.txt").write_text("6\n4,5,\n0,0,1,2,\n1,2,3,3,\n" + rows)
    proc = cli_process("graph", "info", "diamond.txt?reading=app_e&flops_per_s=1e-300", cwd=env)
    assert_bad_input(proc.returncode, proc.stdout, proc.stderr, "compute must be a finite number")


def test_json_output_is_only_json_when_highs_runs(env):
    # before: HiGHS printed "Running HiGHS 1.16.0 ..." on stdout ahead of the JSON object (m-sct's LP)
    proc = cli_process("compare", SMALL, "-c", "k80x2", "--placers", "m-sct", "--no-save", "--json", cwd=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.count("\n") == 1
    assert [r["placer"] for r in json.loads(proc.stdout)["results"]] == ["m-sct"]
    assert "HiGHS" not in proc.stderr


# ---- issue 54, reliability pass 3 -----------------------------------------------------------------------

def test_train_on_an_address_nothing_listens_on_exits_2_before_its_run(env):
    # before: the error line, then the process did not exit (compare and sweep exited 2); a failed run was stored
    proc = cli_process("train", "--placer", "placeto", "-g", SMALL, "-c", "k80x2", "--episodes", "2",
                       "--address", "127.0.0.1:1", "--save", cwd=env)
    assert_bad_input(proc.returncode, proc.stdout, proc.stderr, "cannot reach the Ray cluster at 127.0.0.1:1")
    assert runs_in(env / "runs") == []


@pytest.mark.parametrize("ref", ["../victim", "/abs", "..", "", "*"])
def test_init_from_refuses_what_eval_and_resume_refuse(env, capsys, monkeypatch, ref):
    # before: --init-from took the path of any folder holding a run.json (../victim), and '' was taken as no
    # --init-from; now it is looked up in the run store as eval and --resume look up RUN
    (env / "victim").mkdir()
    (env / "victim" / "run.json").write_text("{}")
    (env / "work").mkdir()
    monkeypatch.chdir(env / "work")  # ../victim is there
    code, out, err = run_cli(capsys, "train", "--placer", "placeto", "-g", SMALL, "-c", "k80x2", "--episodes", "2",
                             "--init-from", ref, "--save")
    assert_bad_input(code, out, err)
    assert err == run_cli(capsys, "eval", ref, "-g", SMALL)[2]  # the same check, the same line
    assert err == run_cli(capsys, "train", "--resume", ref)[2]
    assert runs_in(env / "runs") == []


def test_compare_on_a_graph_of_zero_compute_shows_the_ratio_as_undefined(env, capsys):
    # before: ZeroDivisionError (internal error, exit 1) for the ×LB column, after every placer ran, --json too
    zero = {**CHAIN, "ops": [{**op, "compute": 0} for op in CHAIN["ops"]]}
    (env / "zero.json").write_text(json.dumps(zero))
    argv = ["compare", "zero.json", "-c", "cluster.json", "--placers", "single-device,round-robin", "--no-save"]
    code, out, err = run_cli(capsys, *argv, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["lower_bound_s"] == 0
    assert [(r["placer"], r["ratio_to_lower_bound"]) for r in doc["results"]] == [("single-device", None),
                                                                                  ("round-robin", None)]
    assert doc["results"][1]["makespan_s"] > 0  # the transfers take time: a finite makespan over a bound of 0
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    rows = [line.split() for line in out.splitlines()[3:]]
    # name, ms, "ms", est., ×single, ×LB: single-device's makespan is 0 too, so ×single-device is undefined as well
    assert [(r[0], r[4], r[5]) for r in rows] == [("single-device", "—", "—"), ("round-robin", "—", "—")]
    assert [r["ratio_to_single_device"] for r in doc["results"]] == [None, None]


PRINTER = '''
import torch

print("module imported")


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 2)

    def forward(self, x):
        print("forward ran")
        return self.lin(x)


def f():
    print("factory called")
    return Tiny()

'''


def test_graph_import_keeps_stdout_for_the_json_and_a_sys_exit_is_one_line(env):
    # before: the factory's prints came first on stdout (not one JSON object), and sys.exit(3) exited 3, no line
    (env / "printer.py").write_text(PRINTER)
    proc = cli_process("graph", "import", "printer.py:f", "-o", "g.json", "--input-shape", "4", "--json", cwd=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["output"] == "g.json" and proc.stdout.count("\n") == 1
    for line in ("module imported", "factory called", "forward ran"):
        assert line in proc.stderr.splitlines(), proc.stderr  # still shown, on stderr
    (env / "leaver.py").write_text("import sys\n\n\ndef leaves():\n    sys.exit(3)\n")
    proc = cli_process("graph", "import", "leaver.py:leaves", "-o", "h.json", "--input-shape", "4", cwd=env)
    assert_bad_input(proc.returncode, proc.stdout, proc.stderr, "'leaver.py:leaves' called sys.exit(3)")
    assert not (env / "h.json").exists()


@pytest.mark.parametrize("token", ["missing", "folder"])
def test_an_unreadable_ray_token_is_one_line_before_ray_starts(env, capsys, monkeypatch, token):
    # before: "internal error: AuthenticationError: ..." (exit 1), from ray.init
    pytest.importorskip("ray")
    (env / "folder").mkdir()
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(env / token))
    monkeypatch.setenv("PLACELAB_CACHE_DIR", str(env / "cache"))
    for argv in (["compare", SMALL, "-c", "k80x2", "--placers", "random", "--workers", "1"],
                 ["train", "--placer", "placeto", "-g", SMALL, "-c", "k80x2", "--episodes", "2", "--workers", "1",
                  "--save"]):
        assert_bad_input(*run_cli(capsys, *argv), "cannot start a local Ray runtime with 1 CPU",
                         f"RAY_AUTH_TOKEN_PATH names '{env / token}', which cannot be read or is empty")
    assert runs_in(env / "runs") == [] and runs_in(env / "cache" / "ray-local") == []


def test_a_ray_start_up_timeout_is_one_line(env, capsys, monkeypatch):
    # before: "internal error: Exception: The current node timed out during startup ..." (exit 1)
    ray = pytest.importorskip("ray")
    monkeypatch.setenv("PLACELAB_CACHE_DIR", str(env / "cache"))

    def timed_out(*args, **kwargs):
        raise Exception("The current node timed out during startup. This could happen because some of the raylet "
                        "failed to startup or the GCS has become overloaded.")

    monkeypatch.setattr(ray, "init", timed_out)
    assert_bad_input(*run_cli(capsys, "compare", SMALL, "-c", "k80x2", "--placers", "random", "--workers", "2"),
                     "cannot start a local Ray runtime with 2 CPUs: Ray's node did not start within its time limit",
                     "give fewer --workers")
    assert runs_in(env / "runs") == [] and runs_in(env / "cache" / "ray-local") == []
