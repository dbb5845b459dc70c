"""A training run names its graphs, never the paths of their files (issue 58: an upload's server path was the
graph name of a training run on it)."""

from __future__ import annotations

import json

from rl_graphs import cluster_file, diamond, two_chains

from engine.graph.io import save_graph
from engine.store.runs import RunStore
from policies.rl.core.reinforce import Budget
from policies.rl.core.training_runs import start_training


def test_a_training_on_graph_files_stores_their_names(tmp_path, one_torch_thread):
    uploads = tmp_path / "runs" / ".uploads"
    uploads.mkdir(parents=True)
    files = [uploads / "two-chains-0123456789ab.json", uploads / "diamond-ba9876543210.json"]
    save_graph(two_chains(0.1e9), files[0])
    save_graph(diamond(), files[1])
    store = RunStore(tmp_path / "runs")
    out = start_training("placeto", f"{files[0]},{files[1]}", cluster_file(tmp_path),
                         params={"groups": None, "batch": 2}, budget=Budget(episodes=2), store=store)
    run = store.load(out.run_id)
    assert run.meta["graph"]["name"] == "two-chains,diamond"
    assert str(tmp_path) not in json.dumps(run.meta["graph"])
