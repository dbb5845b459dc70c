"""DOPPLER's reproductions on the authors' own graph files (``placelab reproduce NAME --graphs-dir DIR``).

The files are synthetic ones written by the test in the published layout (tests/placelab/doppler_files.py),
never the authors'. Budgets are cut to 2 episodes so the whole table runs in seconds.
"""

import hashlib
import json
import warnings

import pytest

from engine.importers.doppler_text import graph_from_doppler_text
from engine.presets import PRESETS
from engine.sim.simulator import Simulator
from engine.specs import load_graph
from engine.store.runs import RunStore
from placelab.cli import run_command
from placelab.reproduce import doppler, registry
from placelab.reproduce.published import resolve
from placelab.reproduce.results_doc import latest_runs
from placelab.reproduce.runner import reproduce
from policies.registry import make_placer
from tests.cli.cli_run import run_cli
from tests.placelab.doppler_files import DST, published_text, write_authors_dir

COLUMNS = ("Critical path", "Placeto", "GDP", "EnumOpt", "DOPPLER-SIM", "DOPPLER-SYS", "DOPPLER-SEL", "DOPPLER-PLC")


@pytest.fixture
def tiny_budgets(monkeypatch):
    tiny = dict.fromkeys(doppler.GRAPHS, 2)
    monkeypatch.setattr(doppler, "QUICK", doppler.Budgets(tiny, tiny, tiny, kshot=2, pairs=1))


def noisy_ms(graph, devices, cluster: str = "p100x4") -> float:
    """Mean of the 10 noisy executions of ``devices``, computed directly with the simulator, in ms."""
    c = PRESETS[cluster]()
    stats = Simulator(graph, c.with_simulation(noise=doppler.NOISE, runs=doppler.EXECUTIONS, seed=0))
    return stats.makespan_stats(devices).mean * 1e3


@pytest.mark.usefixtures("tiny_budgets")
def test_cli_table2_on_the_authors_files_fills_every_cell_and_records_the_hashes(capsys, tmp_path):
    d = tmp_path / "compute_graph"
    written = write_authors_dir(d)
    runs = tmp_path / "runs"
    code, out, err = run_cli(capsys, "reproduce", "doppler-table2", "--quick", "--graphs-dir", str(d),
                             "--runs-dir", str(runs), "--no-keep-step-runs", "--json")
    assert code == 0, err
    res = json.loads(out)
    table = {(r["row"], r["column"]): r for r in res["table"]}
    assert {k for k, r in table.items() if r["ours"] is not None} == {(row, c) for row in doppler.GRAPHS
                                                                       for c in COLUMNS}
    assert not any("on our " in r["note"] for r in table.values())
    # the run records, per row, the file used (the gdp_ twin: preferred) and the sha256 of its bytes
    params = RunStore(runs).load(res["run_id"]).meta["parameters"]
    expected = [{"row": row, "source": "authors", "file": twin, "sha256": hashlib.sha256(written[twin]).hexdigest(),
                 "ops": 12, "replaces": doppler.GRAPHS[row]} for row, (twin, _) in doppler.AUTHORS_FILES.items()]
    assert params["graphs"] == expected == res["graphs"]
    # one line per published file name: found and used, or found and not used
    for row, (twin, as_published) in doppler.AUTHORS_FILES.items():
        sha = hashlib.sha256(written[twin]).hexdigest()[:12]
        assert err.count(f"{row}: {twin} found, used (sha256 {sha}, 12 ops)\n") == 1
        assert err.count(f"{row}: {as_published} found, not used: {twin} is preferred") == 1
    assert "no blank after its comma" not in err  # the glued entries are in the files not used
    # the stored commands name the folder $GRAPHS, never the path given
    commands = RunStore(runs).load(res["run_id"]).read_json("commands.json")
    assert str(d) not in json.dumps(commands)
    cp = next(s for s in commands["steps"] if s["key"] == "find/critical-path/FFNN")
    assert cp["command"].startswith("placelab place $GRAPHS/gdp_ffnn_192nodes.txt -c p100x4")
    # cells checked independently: EnumOpt's placement of CHAINMM worked out by hand
    # (tests/policies/test_enumerative.py), critical path's of FFNN placed here again; 10 noisy executions
    chain = load_graph(d / "gdp_chain_mm_112nodes.txt")
    hand = [0, 1, 2, 3, 0, 0, 2, 2, 0, 2, 0, 2]
    assert table[("CHAINMM", "EnumOpt")]["ours"] == pytest.approx(noisy_ms(chain, hand), rel=1e-12)
    ffnn = load_graph(d / "gdp_ffnn_192nodes.txt")
    cp_devices = make_placer("critical-path").place(ffnn, PRESETS["p100x4"](), seed=0).devices
    assert table[("FFNN", "Critical path")]["ours"] == pytest.approx(noisy_ms(ffnn, cp_devices), rel=1e-12)
    # the four files differ (shard cost 1, 2, 3, 4 × 1e12 units): each row ran on its own
    assert len({table[(row, "Critical path")]["ours"] for row in doppler.GRAPHS}) == 4


def test_a_missing_file_falls_back_to_our_graph_and_is_marked(tmp_path):
    d = tmp_path / "compute_graph"
    write_authors_dir(d, rows=("CHAINMM",), plain=False)  # the gdp_ twin only
    write_authors_dir(d, rows=("LLAMA-BLOCK",), twins=False)  # the file as published only, with its glued entry
    said: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = reproduce("doppler-table2", command=run_command, quick=True, runs_dir=str(tmp_path / "runs"),
                        only="critical-path", keep_step_runs=False, progress=said.append, graphs_dir=str(d))
    assert not [w for w in caught if "no blank after its comma" in str(w.message)]  # said once, below, not warned
    sha = {name: hashlib.sha256((d / name).read_bytes()).hexdigest() for name in
           ("gdp_chain_mm_112nodes.txt", "transformer_block_215nodes.txt")}
    assert said[1:12] == [
        f"CHAINMM: gdp_chain_mm_112nodes.txt found, used (sha256 {sha['gdp_chain_mm_112nodes.txt'][:12]}, 12 ops)",
        "CHAINMM: chain_mm_112nodes.txt not found",
        "FFNN: gdp_ffnn_192nodes.txt not found",
        "FFNN: ffnn_192nodes.txt not found",
        "FFNN: runs on our gen:ffnn (the authors' file was not found), marked so in its cells",
        "LLAMA-BLOCK: gdp_transformer_block_215nodes.txt not found",
        f"LLAMA-BLOCK: transformer_block_215nodes.txt found, used (sha256 "
        f"{sha['transformer_block_215nodes.txt'][:12]}, 12 ops)",
        "LLAMA-BLOCK: transformer_block_215nodes: line 4: entry '10,0' has no blank after its comma, unlike the "
        "line's other entries: a corrupted entry, read as the DOPPLER authors' reader does: edges #0 0 -> 10, "
        "#1 1 -> 0",
        "LLAMA-LAYER: gdp_full_transformer_layer_261nodes.txt not found",
        "LLAMA-LAYER: full_transformer_layer_261nodes.txt not found",
        "LLAMA-LAYER: runs on our gen:llama-layer (the authors' file was not found), marked so in its cells"]
    cells = {(r["row"], r["column"]): r for r in res["table"]}
    cp = make_placer("critical-path")
    for row in ("FFNN", "LLAMA-LAYER"):  # on our graph, marked, the value ours on it
        cell = cells[(row, "Critical path")]
        assert cell["note"].startswith(f"on our {doppler.GRAPHS[row]}: the authors' file was not found; mean ± std")
        g = load_graph(doppler.GRAPHS[row])
        assert cell["ours"] == pytest.approx(noisy_ms(g, cp.place(g, PRESETS["p100x4"](), seed=0).devices), rel=1e-12)
    # LLAMA-BLOCK on the file as published, read as the authors' reader reads it: edge 1 -> 0, not 1 -> 10
    with pytest.warns(UserWarning):
        block = graph_from_doppler_text(published_text(3 * 10**12, typed=False, glued=True), name="b")
    assert (1, 0) in set(zip(block.edge_src.tolist(), block.edge_dst.tolist(), strict=True))
    cell = cells[("LLAMA-BLOCK", "Critical path")]
    assert not cell["note"].startswith("on our")
    assert cell["ours"] == pytest.approx(noisy_ms(block, cp.place(block, PRESETS["p100x4"](), seed=0).devices),
                                         rel=1e-12)
    assert res["graphs"][1] == {"row": "FFNN", "source": "ours", "spec": "gen:ffnn",
                                "why": "the authors' file was not found"}
    assert any(n.startswith("Graphs: the authors' files where found") and "FFNN: our gen:ffnn" in n
               for n in res["notes"])
    # docs/results.md shows such a run as a setting of its own, beside the quick one on our graphs
    assert set(latest_runs(tmp_path / "runs")["doppler-table2"]) == {"quick, authors' graphs"}


def test_table9_takes_the_8gpu_files_and_ours_where_none_was_published(tmp_path):
    for name in doppler.AUTHORS_FILES_8GPU["LLAMA-BLOCK"] + doppler.AUTHORS_FILES["CHAINMM"]:
        (tmp_path / name).write_text(published_text(typed=False))
    sources = resolve(registry.get("doppler-table9"), str(tmp_path))
    assert [(u.row, u.file) for u in sources.uses] == [("CHAINMM", None), ("FFNN", None),
                                                       ("LLAMA-BLOCK", "8gpu_transformer_block.txt"),
                                                       ("LLAMA-LAYER", None)]
    assert sources.uses[0].why == "the authors published no file for this row"  # the 4-GPU file is not taken
    assert "LLAMA-LAYER: 8gpu_full_transformer.txt not found" in sources.lines
    steps = {s.key: sources.substitute(s).argv for s in registry.get("doppler-table9").steps(True)}
    assert steps["find/critical-path/LLAMA-BLOCK"][1] == str(tmp_path / "8gpu_transformer_block.txt")
    assert steps["find/critical-path/CHAINMM"][1] == "gen:chainmm"
    assert steps["find/critical-path/LLAMA-BLOCK"][3] == "v100x8"


@pytest.mark.parametrize("args, needle", [
    (("placeto-table1",), "reproduction 'placeto-table1' has no graphs published by its authors to run on; "
                          "--graphs-dir applies to doppler-table2"),
    (("doppler-table2", "--graphs-dir", "{tmp}/nowhere"), "--graphs-dir {tmp}/nowhere: no such folder"),
    (("doppler-table2", "--graphs-dir", "{tmp}/empty"), "--graphs-dir {tmp}/empty holds none of the authors' graph "
                                                       "files doppler-table2 looks for (8 names"),
    (("doppler-table2", "--graphs-dir", "{tmp}/bad"), "gdp_ffnn_192nodes: edge #1 (1 -> 99) refers to a node id "
                                                     "outside 0..11"),
    # issue 54: a placelab JSON file under an authors' file name was taken and recorded as theirs
    (("doppler-table2", "--graphs-dir", "{tmp}/json"), "{tmp}/json/chain_mm_112nodes.txt is a placelab graph file, "
                                                      "not in the doppler-text format the authors published"),
    # issue 54: a cost of nan was "unrecognized graph format"
    (("doppler-table2", "--graphs-dir", "{tmp}/nan"), "gdp_ffnn_192nodes: line 5 (node 0): comp_cost must be a "
                                                     "finite number >= 0, got 'nan'"),
])
def test_bad_graphs_dir_is_one_line_and_exit_2_before_any_run(capsys, tmp_path, args, needle):
    (tmp_path / "empty").mkdir()
    (tmp_path / "bad").mkdir()
    broken = published_text(typed=True).replace(DST, DST.replace("10, 10,", "10, 99,", 1))  # edge #1: 1 -> 99
    (tmp_path / "bad" / "gdp_ffnn_192nodes.txt").write_text(broken)
    (tmp_path / "json").mkdir()
    (tmp_path / "json" / "chain_mm_112nodes.txt").write_text(json.dumps(
        {"schema": "placelab.graph/1", "name": "g", "ops": [{"name": "a", "compute": 1.0}], "edges": []}))
    (tmp_path / "nan").mkdir()
    nan = published_text(typed=True).replace(f"{10**12},{4 * 10**12}", f"nan,{4 * 10**12}", 1)
    (tmp_path / "nan" / "gdp_ffnn_192nodes.txt").write_text(nan)
    argv = [a.format(tmp=tmp_path) for a in args]
    if "--graphs-dir" not in argv:
        argv += ["--graphs-dir", str(tmp_path / "empty")]
    code, _, err = run_cli(capsys, "reproduce", *argv, "--quick", "--runs-dir", str(tmp_path / "runs"))
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    assert needle.format(tmp=tmp_path) in lines[0] and len(lines[0]) <= 300
    assert not (tmp_path / "runs").exists()  # refused before a run was made


@pytest.mark.parametrize("name", ["doppler-table2", "doppler-table3", "doppler-table4", "doppler-table8",
                                  "doppler-table9", "doppler-g1"])
def test_every_doppler_reproduction_runs_each_step_on_the_files_given(tmp_path, name):
    write_authors_dir(tmp_path)
    for files in doppler.AUTHORS_FILES_8GPU.values():
        for f in files:
            (tmp_path / f).write_text(published_text(typed=False))
    rep = registry.get(name)
    sources = resolve(rep, str(tmp_path))
    ours = {"gen:chainmm", "gen:ffnn"} if name == "doppler-table9" else set()  # no 8-GPU file published
    for quick in (True, False):
        for step in rep.steps(quick):
            graphs = {a for a in sources.substitute(step).argv if a.startswith("gen:") or a.startswith(str(tmp_path))}
            assert len(graphs) == 1 and (graphs <= ours or next(iter(graphs)).startswith(str(tmp_path))), step
