"""``placelab reproduce`` and ``placelab graph list`` on the command line."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.cli_run import run_cli
from tests.placelab.tiny import tiny_reproduction  # noqa: F401


def test_list_shows_every_reproduction_with_its_quick_time(capsys):
    code, out, _ = run_cli(capsys, "reproduce", "--list", "--json")
    assert code == 0
    items = {d["name"]: d for d in json.loads(out)["reproductions"]}
    assert {"placeto-table1", "placeto-fig5", "placeto-ablations", "mirhoseini-table2"} <= set(items)
    assert all(d["quick_minutes"] > 0 and d["paper"] for d in items.values())
    code, out, _ = run_cli(capsys, "reproduce", "--list")
    assert code == 0 and "placeto-table1" in out and "min" in out


def test_bad_input_is_one_line_exit_2(capsys):
    for args, needle in ((("reproduce", "nope"), "unknown reproduction 'nope'"),
                         (("reproduce",), "reproduce needs a NAME"),
                         (("reproduce", "placeto-fig5", "--workers", "0"), "--workers must be at least 1")):
        code, _, err = run_cli(capsys, *args)
        lines = [x for x in err.splitlines() if x.startswith("error")]
        assert code == 2 and len(lines) == 1 and needle in lines[0], (args, err)
        assert "Traceback" not in err


@pytest.mark.parametrize("only", ["", ","])
def test_only_naming_no_step_is_refused(capsys, tmp_path, only):
    # issue 54: `--only ''` ran every step
    code, out, err = run_cli(capsys, "reproduce", "placeto-fig5", "--quick", "--only", only, "--runs-dir",
                             str(tmp_path / "runs"))
    assert (code, out, err) == (2, "", f"error: --only {only!r} names no step: give texts that step keys contain, "
                                       "comma-separated (leave --only out to run every step)\n")
    assert not (tmp_path / "runs").exists()


@pytest.mark.usefixtures("tiny_reproduction")
def test_tiny_reproduction_from_the_cli(capsys, tmp_path):
    code, out, err = run_cli(capsys, "reproduce", "tiny-table", "--quick", "--runs-dir", str(tmp_path), "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["setting"] == "quick" and len(res["table"]) == 3
    assert "quick setting" in err and "[2/2]" in err
    # a finished run has nothing to resume; an unknown one is not there: one line each, exit 2
    for ref, needle in ((res["run_id"], "finished; there is nothing to resume"), ("20990101", "no run")):
        code, _, err = run_cli(capsys, "reproduce", "tiny-table", "--quick", "--resume", ref, "--runs-dir",
                               str(tmp_path))
        lines = [x for x in err.splitlines() if x.startswith("error")]
        assert code == 2 and len(lines) == 1 and needle in lines[0] and "Traceback" not in err, err


def test_graph_list_names_generators_and_bundled_workloads(capsys):
    code, out, _ = run_cli(capsys, "graph", "list", "--json")
    specs = json.loads(out)
    assert code == 0 and "gen:chainmm" in specs and "bench:bert24_training" in specs
    code, out, _ = run_cli(capsys, "graph", "info", "bench:gnmt_inference", "--json")
    assert code == 0 and json.loads(out)["ops"] == 96


def test_a_reproduction_on_ray_workers_started_with_python_m(tmp_path):
    """``python -m placelab.cli reproduce … --workers``: each step runs the CLI in a Ray worker. Run as
    ``__main__``, the CLI's functions were pickled by value into the workers without the names their
    annotations use (NameError 'GraphArg', 2026-11-27); the module now runs its imported self."""
    root = str(Path(__file__).resolve().parents[2])
    proc = subprocess.run([sys.executable, "-m", "placelab.cli", "reproduce", "placeto-fig5", "--quick", "--workers",
                           "2", "--only", "rnn/nmt", "--runs-dir", str(tmp_path), "--json"], capture_output=True,
                          text=True, timeout=900, env={**os.environ, "PYTHONPATH": root}, cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    cells = {(c["row"], c["column"]): c for c in json.loads(proc.stdout)["table"]}
    ran = cells[("RNN / nmt", "Zero-Shot / Random")]
    assert ran["ours"] > 0 and ran["note"] == "median over 3 test graphs"
    assert cells[("RNN / ptb", "Zero-Shot / Random")]["note"] == "error: step did not run"  # left out by --only
