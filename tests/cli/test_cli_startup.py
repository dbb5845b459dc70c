"""Start-up of the command line (issue #57, item 4): commands that need no model library import none.

Each check runs in a fresh interpreter, where ``sys.modules`` holds only what the command imported (this test
process has torch and the app loaded by other tests). Speed itself is measured by
``benchmarks/bench_cli_startup.py``, not asserted here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from engine.generators import from_spec
from engine.graph.io import save_graph

ROOT = Path(__file__).resolve().parents[2]
#: Libraries no command below needs: the model importers', the learned placers', the app's and Ray's.
HEAVY = ("tensorflow", "keras", "torch", "torch_geometric", "onnx", "streamlit", "plotly", "kaleido", "ray")

SCRIPT = """
import json, sys
before = set(sys.modules)
import placelab.cli
seen = {"import placelab.cli": sorted(m for m in sys.modules if m not in before)}
for argv in json.loads(sys.argv[1]):
    try:
        placelab.cli.main(argv)
    except SystemExit as exc:
        if exc.code:
            raise
    seen[" ".join(argv)] = sorted(m for m in sys.modules if m not in before)
with open(sys.argv[2], "w") as f:
    json.dump(seen, f)
"""


def _modules_after(commands: list[list[str]], tmp_path: Path) -> dict[str, set[str]]:
    """The top-level packages imported after ``import placelab.cli`` and after each command, run in turn in one
    fresh interpreter."""
    out = tmp_path / "modules.json"
    done = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(commands), str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return {k: {m.split(".")[0] for m in v} for k, v in json.loads(out.read_text()).items()}


def test_commands_without_a_model_import_no_model_library(tmp_path):
    graph = tmp_path / "g.json"
    save_graph(from_spec("gen:random?ops=60"), graph)
    runs = str(tmp_path / "runs")
    commands = [["--help"], ["graph", "info", str(graph), "--json"], ["clusters", "--json"], ["placers", "--json"],
                ["place", str(graph), "-c", "k80x2", "--placer", "m-etf", "--save", "--runs-dir", runs, "--json"],
                ["compare", str(graph), "-c", "k80x2", "--placers", "single-device,m-etf,metis", "--runs-dir", runs,
                 "--json"],
                ["runs", "list", "--runs-dir", runs, "--json"]]
    seen = _modules_after(commands, tmp_path)
    assert list(seen) == ["import placelab.cli", *(" ".join(c) for c in commands)]
    # modules only accumulate: after the last command, none of the libraries was imported by any of them
    assert seen[" ".join(commands[-1])] & set(HEAVY) == set()
    assert {"numba", "engine", "policies"} <= seen[" ".join(commands[-1])]  # the commands did run
    # the CLI itself and its help load neither numba's kernels nor the placers' registry
    for step in ("import placelab.cli", "--help"):
        assert seen[step] & {"numba", "scipy", "policies", "dashboard", *HEAVY} == set(), step
    # graph info reads and summarizes a graph: the engine only
    assert seen[" ".join(commands[1])] & {"policies", "dashboard"} == set()
