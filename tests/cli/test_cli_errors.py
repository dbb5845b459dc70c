"""Bad input to the ``placelab`` command line (CONTRACTS §1, §5).

Every case must exit with code 2, print nothing on stdout and exactly one line on stderr
(``error: <sentence>``) that names the offending thing; never a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

CHAIN = {
    "schema": "placelab.graph/1",
    "name": "chain",
    "ops": [{"name": "a", "compute": 0.001, "output_bytes": 1000},
            {"name": "b", "compute": 0.002, "output_bytes": 2000},
            {"name": "c", "compute": 0.003}],
    "edges": [{"src": "a", "dst": "b"}, {"src": "b", "dst": "c"}],
}
CLUSTER = {
    "schema": "placelab.cluster/1",
    "name": "two",
    "devices": [{"name": "gpu:0", "kind": "gpu", "memory_bytes": 1e9},
                {"name": "gpu:1", "kind": "gpu", "memory_bytes": 1e9}],
    "link": {"bandwidth_bytes_per_s": 1e9},
}


def graph_text(ops: list[dict], edges: list[dict] | None = None, schema: str = "placelab.graph/1") -> str:
    return json.dumps({"schema": schema, "name": "bad", "ops": ops, "edges": edges or []})


def placement_text(devices: dict[str, str]) -> str:
    return json.dumps({"schema": "placelab.placement/1", "devices": devices})




def assert_bad_input(code: int, out: str, err: str, *fragments: str) -> None:
    """Exit 2, empty stdout, one ``error: ...`` line on stderr containing every fragment."""
    assert "Traceback" not in out + err
    assert code == 2, (code, err)
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("error: ") and len(err.strip()) > len("error:")
    for fragment in fragments:
        assert fragment in err, (fragment, err)


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PLACELAB_RUNS_DIR", raising=False)
    (tmp_path / "graph.json").write_text(json.dumps(CHAIN))
    (tmp_path / "cluster.json").write_text(json.dumps(CLUSTER))
    (tmp_path / "ok.json").write_text(placement_text({"a": "gpu:0", "b": "gpu:0", "c": "gpu:1"}))
    return tmp_path


# ---- graph files -----------------------------------------------------------------------------

GRAPH_CASES = {
    "truncated": ('{"schema": "placelab.graph/1", "ops": [{"name": "a", "comp', ["is not valid JSON"]),
    "cycle": (graph_text([{"name": "a", "compute": 1}, {"name": "b", "compute": 1}],
                         [{"src": "a", "dst": "b"}, {"src": "b", "dst": "a"}]),
              ["has a cycle", "'a' -> 'b' -> 'a'"]),
    "self-loop": (graph_text([{"name": "a", "compute": 1}], [{"src": "a", "dst": "a"}]), ["self-loop", "'a'"]),
    "unknown-op-in-edge": (graph_text([{"name": "a", "compute": 1}], [{"src": "a", "dst": "zz"}]),
                           ["edge 'a' -> 'zz' refers to unknown op 'zz'"]),
    "negative-compute": (graph_text([{"name": "a", "compute": 1}, {"name": "neg", "compute": -0.5}]),
                         ["op 'neg'", "compute must be a finite number >= 0, got -0.5"]),
    "negative-kind-compute": (graph_text([{"name": "k", "compute": {"gpu": 1, "cpu": -2}}]),
                              ["op 'k'", "compute on 'cpu'"]),
    "negative-edge-bytes": (graph_text([{"name": "a", "compute": 1}, {"name": "b", "compute": 1}],
                                       [{"src": "a", "dst": "b", "bytes": -1}]), ["edge 'a' -> 'b'"]),
    "negative-temp": (graph_text([{"name": "t", "compute": 1, "temp_bytes": -3}]), ["op 't'", "temp_bytes"]),
    "duplicate-name": (graph_text([{"name": "a", "compute": 1}, {"name": "a", "compute": 2}]),
                       ["duplicate op name 'a'"]),
    "wrong-schema": (graph_text([{"name": "a", "compute": 1}], schema="placelab.graph/10"),
                     ["expected schema 'placelab.graph/1'", "'placelab.graph/10'"]),
    "other-format": (json.dumps({"schema": "something/1", "ops": []}), ["unrecognized graph format"]),
    "empty-ops": (graph_text([]), ["graph has no ops"]),
    "empty-file": ("", ["is empty"]),
    "whitespace-file": ("  \n\t ", ["is empty"]),
    "missing-compute": (graph_text([{"name": "a"}]), ["op 'a' has no 'compute'"]),
    "string-compute": (graph_text([{"name": "a", "compute": "fast"}]), ["op 'a'", "compute must be"]),
    "bool-compute": (graph_text([{"name": "a", "compute": True}]), ["op 'a'"]),
    "no-kind-compute": (graph_text([{"name": "a", "compute": {}}]), ["op 'a'"]),
    "unknown-field": (graph_text([{"name": "a", "compute": 1, "colour": "red"}]), ["unknown field 'colour'"]),
    "bad-phase": (graph_text([{"name": "a", "compute": 1, "phase": "sideways"}]), ["op 'a'", "phase"]),
    "ops-not-list": (json.dumps({"schema": "placelab.graph/1", "ops": {"a": 1}}), ["'ops' must be a list"]),
}


@pytest.mark.parametrize("case", list(GRAPH_CASES))
def test_bad_graph_file(env, capsys, case):
    text, fragments = GRAPH_CASES[case]
    (env / "bad.json").write_text(text)
    assert_bad_input(*run_cli(capsys, "graph", "info", "bad.json"), *fragments)
    # the same file is refused the same way by every command that reads a graph
    assert_bad_input(*run_cli(capsys, "place", "bad.json", "-c", "k80x2", "--placer", "random", "--json"),
                     *fragments)


@pytest.mark.parametrize("literal", ['"compute": NaN', '"compute": {"gpu": NaN}', '"compute": Infinity',
                                     '"compute": 1, "output_bytes": -Infinity',
                                     '"compute": 1, "output_bytes": 1' + "0" * 400])
def test_non_finite_literals(env, capsys, literal):
    # NaN / Infinity are not JSON and 10^400 overflows a double; a parser that accepts them
    # must still reject the number, naming the op
    (env / "nan.json").write_text('{"schema": "placelab.graph/1", "ops": [{"name": "x", ' + literal + "}]}")
    code, out, err = run_cli(capsys, "graph", "info", "nan.json", "--json")
    assert_bad_input(code, out, err)
    assert "is not valid JSON" in err or ("op 'x'" in err and "finite number" in err)


def test_directory_and_missing_file(env, capsys):
    (env / "folder").mkdir()
    assert_bad_input(*run_cli(capsys, "graph", "info", "folder"), "folder is a directory")
    assert_bad_input(*run_cli(capsys, "graph", "info", "missing.json"), "missing.json: no such file")


# ---- clusters and placements -------------------------------------------------------------------


def test_unknown_cluster_preset(env, capsys):
    assert_bad_input(*run_cli(capsys, "graph", "info", "graph.json", "-c", "k80x3"),
                     "unknown cluster 'k80x3'", "k80x2")


@pytest.mark.parametrize(("change", "fragment"), [
    ({"devices": [{"name": "gpu:0", "kind": "gpu", "memory_bytes": 0}]},
     "device 'gpu:0': memory_bytes must be a finite number > 0, got 0"),
    ({"devices": [{"name": "gpu:0", "kind": "gpu", "memory_bytes": 1e9, "speed": -1}]}, "speed"),
    ({"devices": []}, "'devices' must be a non-empty list"),
    ({"link": {"bandwidth_bytes_per_s": 0}}, "bandwidth_bytes_per_s"),
    ({"schema": "placelab.cluster/9"}, "expected schema 'placelab.cluster/1'"),
    ({"simulation": {"mode": "quantum"}}, "simulation mode must be one of"),
    ({"simulation": {"op_overhead": 1}}, "unknown simulation setting 'op_overhead'"),
])
def test_malformed_cluster_file(env, capsys, change, fragment):
    (env / "badc.json").write_text(json.dumps({**CLUSTER, **change}))
    assert_bad_input(*run_cli(capsys, "graph", "info", "graph.json", "-c", "badc.json", "--json"), fragment)


@pytest.mark.parametrize(("devices", "fragments"), [
    ({"a": "gpu:0", "b": "gpu:0", "c": "gpu:0", "zz": "gpu:0"}, ["placement names op 'zz'"]),
    ({"a": "gpu:0", "b": "gpu:9", "c": "gpu:0"}, ["op 'b' is placed on unknown device 'gpu:9'"]),
    ({"a": "gpu:0", "b": "gpu:0"}, ["placement does not place op 'c'"]),
])
def test_bad_placement_file(env, capsys, devices, fragments):
    (env / "p.json").write_text(placement_text(devices))
    assert_bad_input(*run_cli(capsys, "simulate", "graph.json", "-c", "cluster.json", "--placement", "p.json"),
                     *fragments)
    assert_bad_input(*run_cli(capsys, "bench", "simulate", "graph.json", "-c", "cluster.json",
                              "--placement", "p.json", "--json"), *fragments)


def test_placement_breaking_constraints(env, capsys):
    pinned = {**CHAIN, "ops": [*CHAIN["ops"][:2], {"name": "c", "compute": 0.003, "device": "gpu:0"}]}
    (env / "pinned.json").write_text(json.dumps(pinned))
    assert_bad_input(*run_cli(capsys, "simulate", "pinned.json", "-c", "cluster.json", "--placement", "ok.json"),
                     "op 'c' is pinned to 'gpu:0' but placed on 'gpu:1'")
    (env / "notjson.json").write_text("{devices")
    assert_bad_input(*run_cli(capsys, "simulate", "graph.json", "-c", "cluster.json", "--placement",
                              "notjson.json"), "is not valid JSON")


def test_op_no_device_can_run(env, capsys):
    (env / "tpu.json").write_text(graph_text([{"name": "a", "compute": 1}, {"name": "t", "compute": {"tpu": 1}}]))
    assert_bad_input(*run_cli(capsys, "place", "tpu.json", "-c", "k80x2", "--placer", "single-device"),
                     "1 op of graph 'bad' (first 't', with times for tpu) can run on no device of 'k80x2' (gpu)")


def test_unknown_simulation_mode(env, capsys):
    assert_bad_input(*run_cli(capsys, "simulate", "graph.json", "-c", "cluster.json", "--placement", "ok.json",
                              "--mode", "warp"), "simulation mode must be one of", "'warp'")


# ---- placers, generators and the command line itself ---------------------------------------------


@pytest.mark.parametrize(("argv", "fragments"), [
    (["place", "graph.json", "-c", "cluster.json", "--placer", "nope"], ["unknown placer 'nope'", "round-robin"]),
    (["place", "graph.json", "-c", "cluster.json", "--placer", "random", "--param", "foo=1"],
     ["placer 'random' has no parameter 'foo'"]),
    (["place", "graph.json", "-c", "cluster.json", "--placer", "random", "--param", "foo"],
     ["--param expects key=value, got 'foo'"]),
    (["compare", "graph.json", "-c", "cluster.json", "--placers", "random,nope", "--no-save"],
     ["unknown placer 'nope'"]),
    (["graph", "info", "gen:nope"], ["unknown generator 'nope'", "random"]),
    (["graph", "info", "gen:random?zzz=1"], ["gen:random has no parameter 'zzz'"]),
    (["graph", "info", "gen:random?ops=many"], ["parameter 'ops' must be int, got 'many'"]),
    (["graph", "info", "gen:random?ops=0"], ["ops must be >= 1"]),
    (["place", "graph.json", "-c", "cluster.json"], ["Missing option '--placer'"]),
    (["simulate", "graph.json", "-c", "cluster.json"], ["Missing option '--placement'"]),
    (["simulate", "graph.json", "--placement", "ok.json"], ["Missing option '--cluster'"]),
    (["graph", "info"], ["Missing argument"]),
    (["bogus"], ["No such command 'bogus'"]),
    (["graph", "bogus"], ["No such command 'bogus'"]),
    (["graph", "info", "graph.json", "--bogus"], ["No such option: --bogus"]),
    (["place", "graph.json", "-c", "cluster.json", "--placer", "random", "--seed", "x"], ["--seed"]),
    (["bench", "simulate", "graph.json", "-c", "cluster.json", "--placement", "ok.json", "--repeat", "0"],
     ["--repeat"]),
    (["runs", "show", "nope"], ["no run matches 'nope'"]),
    (["runs", "show", "../etc"], ["'../etc' is not a run id"]),
    (["runs", "export-trace", "nope", "-o", "t.json"], ["no run matches 'nope'"]),
    (["runs", "delete", "nope"], ["no run matches 'nope'"]),
])
def test_bad_command_line(env, capsys, argv, fragments):
    if argv[0] == "runs":
        argv = [*argv, "--runs-dir", str(env / "runs")]
    assert_bad_input(*run_cli(capsys, *argv), *fragments)
    assert not (env / "runs").exists()


def test_doppler_stage_real_that_cannot_execute_is_one_sentence_and_stores_nothing(env, capsys):
    many = {**CLUSTER, "name": "many", "devices": [{"name": f"cpu:{i}", "kind": "cpu", "memory_bytes": 1e9}
                                                   for i in range(1024)]}
    (env / "many.json").write_text(json.dumps(many))
    train = ["train", "--placer", "doppler", "-g", "graph.json", "--episodes", "2", "--save",
             "--runs-dir", str(env / "runs")]
    assert_bad_input(*run_cli(capsys, *train, "-c", "many.json", "--stage", "real"),
                     "cluster 'many', and this machine cannot run it", "1024 CPU devices", "-c local")
    assert_bad_input(*run_cli(capsys, *train, "-c", "cluster.json", "--stage", "sim", "--reward", "measured"),
                     "stage 'sim' trains on simulated makespans", "--stage real")
    assert not (env / "runs").exists()


def test_runs_show_run_without_placement(env, capsys):
    from engine.store.runs import RunStore

    run = RunStore(env / "runs").create("train", graph_name="g", graph_hash="h", cluster="k80x2", placer=None,
                                        parameters={}, seed=None)
    run.finish("done")
    assert_bad_input(*run_cli(capsys, "runs", "export-trace", run.id, "-o", "t.json", "--runs-dir",
                              str(env / "runs")), f"run {run.id} has no placement to show")
    assert not (env / "t.json").exists()


@pytest.mark.parametrize("argv", [[], ["graph"], ["bench"], ["runs"]])
def test_a_group_without_a_command_prints_its_help_on_stderr(env, capsys, argv):
    # before: the help went to stdout with nothing on stderr and exit code 2
    code, out, err = run_cli(capsys, *argv)
    assert (code, out) == (2, "")
    assert "Usage: placelab" in err and "error:" not in err


def test_help_asked_for_is_on_stdout(env, capsys):
    code, out, err = run_cli(capsys, "graph", "--help")
    assert (code, err) == (0, "") and "Usage: placelab graph" in out


# ---- one line: at most MAX_LINE characters, control characters escaped (issue 34) ---------------

def assert_short_safe_line(err: str) -> str:
    """The one stderr line, within ``MAX_LINE`` characters and free of control characters."""
    from engine.errors import MAX_LINE

    line = err.removesuffix("\n")
    assert err.endswith("\n") and "\n" not in line, err[:500]
    assert len(line) <= MAX_LINE, (len(line), line[:500])
    assert not any(ord(ch) < 32 or 0x7F <= ord(ch) <= 0x9F for ch in line), line
    return line


def test_a_long_cycle_is_one_short_line_keeping_both_ends(env, capsys):
    n = 20_000  # a 10^5-op cycle printed a 1,088,936-byte line
    ops = [{"name": f"op{i}", "compute": 1} for i in range(n)]
    edges = [{"src": f"op{i}", "dst": f"op{(i + 1) % n}"} for i in range(n)]
    (env / "cycle.json").write_text(graph_text(ops, edges))
    code, out, err = run_cli(capsys, "graph", "info", "cycle.json")
    assert_bad_input(code, out, err, "has a cycle")
    line = assert_short_safe_line(err)
    assert line.startswith("error: graph 'bad' has a cycle: 'op0' -> 'op1' -> ")
    assert line.endswith("-> 'op19999' -> 'op0'")  # the end of the message is kept too
    cut = int(line.split("... [")[1].split(" characters cut]")[0].replace(",", ""))
    assert cut > 200_000  # says how much was left out


def test_a_huge_op_name_is_cut(env, capsys):
    name = "start" + "x" * 1_000_000 + "end"
    (env / "long.json").write_text(graph_text([{"name": name, "compute": 1}, {"name": name, "compute": 1}]))
    code, out, err = run_cli(capsys, "graph", "info", "long.json")
    # the name is quoted cut to 80 characters: its first 53 and its last 26 around "…" (engine.errors.quote)
    shown = "'start" + "x" * 48 + "…" + "x" * 23 + "end'"
    assert_bad_input(code, out, err, f"duplicate op name {shown} (ops #0 and #1)")
    assert_short_safe_line(err)


ESCAPES = "\x1b]0;owned\x07\x1b[31m\u202e"


def test_terminal_escapes_in_names_are_escaped(env, capsys):
    bad = "a" + ESCAPES
    (env / "esc.json").write_text(graph_text([{"name": bad, "compute": 1}, {"name": bad, "compute": 1}]))
    code, out, err = run_cli(capsys, "graph", "info", "esc.json")
    assert_bad_input(code, out, err, "duplicate op name 'a\\x1b]0;owned\\x07\\x1b[31m\\u202e'")
    assert_short_safe_line(err)
    # a usage error echoes what was typed: escaped too
    code, out, err = run_cli(capsys, "graph", "info", "graph.json", "--x" + ESCAPES)
    assert_bad_input(code, out, err, "No such option: --x\\x1b]0;owned")
    assert_short_safe_line(err)
    # and a graph's name in the text written for people
    (env / "named.json").write_text(json.dumps({**CHAIN, "name": "n" + ESCAPES}))
    code, out, err = run_cli(capsys, "graph", "info", "named.json")
    assert code == 0 and out.startswith("n\\x1b]0;owned\\x07\\x1b[31m\\u202e: 3 ops")
    assert "\x1b" not in out and "\x07" not in out


def test_internal_error_is_one_short_line(env, capsys, monkeypatch):
    import placelab.cli

    def broken(*args, **kwargs):
        raise RuntimeError("first\n" + "y" * 500_000 + "\x1b[2J last")

    monkeypatch.setattr(placelab.cli, "load_graph", broken)
    code, out, err = run_cli(capsys, "graph", "info", "graph.json")
    assert (code, out) == (1, "")
    line = assert_short_safe_line(err)
    assert line.startswith("internal error: RuntimeError: first yyy")
    assert line.endswith("yyy\\x1b[2J last (set PLACELAB_DEBUG=1 for details)")


def test_warnings_are_dropped_on_error_and_one_line_on_success(env, capsys, monkeypatch):
    import warnings

    import placelab.cli
    from engine.errors import SpecError

    load = placelab.cli.load_graph

    def warn_then(fail: bool):
        def loader(spec):
            warnings.warn("a library's\nmulti-line warning", RuntimeWarning, stacklevel=1)
            if fail:
                raise SpecError("the bad input")
            return load(spec)
        return loader

    monkeypatch.setattr(placelab.cli, "load_graph", warn_then(True))
    assert_bad_input(*run_cli(capsys, "graph", "info", "graph.json"), "the bad input")
    monkeypatch.setattr(placelab.cli, "load_graph", warn_then(False))
    code, out, err = run_cli(capsys, "graph", "info", "graph.json", "--json")
    assert code == 0 and json.loads(out)["ops"] == 3
    assert err == "warning: a library's multi-line warning\n"


def test_empty_output_path_is_refused_before_placing(env, capsys):
    # before: `-o ''` exited 0 and wrote nothing
    code, out, err = run_cli(capsys, "place", "graph.json", "-c", "cluster.json", "--placer", "round-robin",
                             "--save", "--runs-dir", str(env / "runs"), "-o", "")
    assert_bad_input(code, out, err, "the output path is empty")
    assert not (env / "runs").exists()


def test_unknown_reproduction_prints_only_its_error(env, capsys):
    # before: "reproducing nosuch (quick setting ...)" came first
    assert_bad_input(*run_cli(capsys, "reproduce", "nosuch", "--quick", "--runs-dir", str(env / "runs")),
                     "unknown reproduction 'nosuch'")
    assert not (env / "runs").exists()


def test_calibrate_refuses_a_directory_before_starting_workers(env, capsys, monkeypatch):
    import engine.executor.calibration as calibration

    def started(*args, **kwargs):
        raise AssertionError("calibration started")

    monkeypatch.setattr(calibration, "calibrate", started)
    (env / "out").mkdir()
    assert_bad_input(*run_cli(capsys, "calibrate", "-o", "out", "--devices", "2"),
                     "cannot write out: it is a directory")



def test_ctrl_c_exits_130_with_one_line(env, capsys, monkeypatch):
    """Ctrl-C in any command: exit code 130 and "interrupted" (typer returns 130 outside standalone mode; the
    entry point once ignored that and exited 0 in silence)."""
    import placelab.cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(placelab.cli, "load_graph", interrupted)
    code, out, err = run_cli(capsys, "graph", "info", "gen:chainmm")
    assert (code, out, err.strip()) == (130, "", "interrupted")

# ---- property: any bytes as a graph file ----------------------------------------------------------

def mostly(good: st.SearchStrategy, bad: st.SearchStrategy) -> st.SearchStrategy:
    """Mostly ``good``, sometimes ``bad``: valid enough to get past the first check."""
    return st.integers(0, 4).flatmap(lambda k: bad if k == 4 else good)


_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10, 10**30),
                     st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6))
_json_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3)
                            | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=8)
_names = mostly(st.sampled_from(["a", "b", "c", "d"]), st.sampled_from(["", "a/b"]) | _scalars)
_numbers = mostly(st.floats(0, 1e3) | st.integers(0, 10**6), _scalars)
_ops = st.fixed_dictionaries(
    {"name": _names,
     "compute": mostly(_numbers, st.dictionaries(st.sampled_from(["gpu", "cpu"]), _numbers, max_size=2))},
    optional={"output_bytes": _numbers, "persistent_bytes": _numbers, "temp_bytes": _numbers,
              "colocate": _names, "device": mostly(st.sampled_from(["gpu:0", "gpu:1", "cpu:0"]), _scalars),
              "phase": mostly(st.sampled_from(["forward", "backward", "update"]), _scalars)},
)
_edges = st.fixed_dictionaries({"src": _names, "dst": _names}, optional={"bytes": _numbers})
_graph_docs = st.fixed_dictionaries(
    {"ops": mostly(st.lists(_ops, min_size=1, max_size=5), _json_values)},
    optional={"name": mostly(st.text(max_size=8), _scalars),
              "edges": mostly(st.lists(_edges, max_size=6), _json_values)},
)
_schemas = mostly(st.just("placelab.graph/1"), _scalars)


@st.composite
def graph_file_bytes(draw) -> bytes:
    kind = draw(st.sampled_from(["doc", "doc", "truncated", "value", "bytes"]))
    if kind == "bytes":
        return draw(st.binary(max_size=200))
    doc = draw(_json_values) if kind == "value" else {"schema": draw(_schemas), **draw(_graph_docs)}
    text = json.dumps(doc, ensure_ascii=draw(st.booleans()))  # NaN / Infinity literals included
    if kind == "value":
        text = '{"schema": "placelab.graph/1", "x": ' + text + "}"
    if kind == "truncated":
        text = text[: draw(st.integers(0, len(text)))]
    return text.encode("utf-8", "surrogatepass")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=graph_file_bytes())
def test_graph_info_never_crashes(tmp_path, capsys, data):
    path = Path(tmp_path) / "fuzz.json"
    path.write_bytes(data)
    code, out, err = run_cli(capsys, "graph", "info", str(path), "--json")
    assert "Traceback" not in out + err
    assert code in (0, 2), err
    if code == 0:
        assert err == "" and isinstance(json.loads(out), dict)
    else:
        assert out == "" and err.count("\n") == 1 and err.startswith("error: ")
