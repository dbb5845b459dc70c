"""Hand-made stored runs for the tests of ``placelab plot`` and ``placelab report``: a four-op graph on two GPUs in
``default`` mode with zero overheads and a 1 MB/s link (1000 bytes take 1 ms), the graph of ``test_cli.py``:

    a (1 ms, out 1000 B) ──> b (2 ms, out 2000 B) ──> c (3 ms)          d (4 ms)

* single-device: a, d, b, c in turn on gpu:0 → makespan 10 ms; lower bound max(6 ms path, 10 ms / 2) = 6 ms.
* round-robin (a, d, b, c dealt to gpu:0, gpu:1, gpu:0, gpu:1): gpu:0 computes a and b (3 ms) and sends b's
  2000 B to gpu:1 (2 ms of memcpy); gpu:1 computes d and c (7 ms) → makespan 8 ms, ×0.80 single-device.

A training run and an experiment run are written by hand with known curves and results.
"""

from __future__ import annotations

import json
from pathlib import Path

from engine.graph.io import graph_from_dict
from engine.specs import load_cluster
from engine.store.runs import RunStore
from placelab.runner import place_and_simulate

GRAPH = {"schema": "placelab.graph/1", "name": "hand",
         "ops": [{"name": "a", "compute": 0.001, "output_bytes": 1000}, {"name": "d", "compute": 0.004},
                 {"name": "b", "compute": 0.002, "output_bytes": 2000}, {"name": "c", "compute": 0.003}],
         "edges": [{"src": "a", "dst": "b"}, {"src": "b", "dst": "c"}]}
CLUSTER = {"schema": "placelab.cluster/1", "name": "two",
           "devices": [{"name": "gpu:0", "kind": "gpu", "memory_bytes": 1e9},
                       {"name": "gpu:1", "kind": "gpu", "memory_bytes": 1e9}],
           "link": {"bandwidth_bytes_per_s": 1e6, "latency_s": 0.0},
           "simulation": {"mode": "default", "op_overhead_s": 0.0, "transfer_gap_s": 0.0}}
LEARNING_RATE = [1e-3, 1e-3, 5e-4]


class Store:
    """A run store with a single-device and a round-robin placement run, a training run and an experiment run."""

    def __init__(self, root: Path) -> None:
        self.root = str(root)
        store = RunStore(root)
        (root.parent / "cluster.json").write_text(json.dumps(CLUSTER))
        graph, cluster = graph_from_dict(GRAPH), load_cluster(str(root.parent / "cluster.json"))
        self.single, self.rr = (place_and_simulate(graph, cluster, p, store=store).run_id
                                for p in ("single-device", "round-robin"))
        train = store.create("train", graph_name="hand", graph_hash="", cluster="two", placer="placeto",
                             parameters={}, seed=0, name="my training")
        train.write_table("learning_curve.csv", {
            "episode": [1, 2, 3], "sampled_runtime": [0.004, 0.003, 0.002], "best_runtime": [0.004, 0.003, 0.002],
            "reward": [-1.0, 0.0, 1.0], "entropy": [0.7, 0.5, 0.3], "learning_rate": LEARNING_RATE,
            "placements_evaluated": [1, 2, 3], "wall_time": [0.1, 0.2, 0.3]})
        train.finish("done", {"episodes": 3})
        self.train = train.id
        experiment = store.create("experiment", graph_name="family", graph_hash="", cluster="two", placer="placeto",
                                  parameters={}, seed=0)
        experiment.write_table("results.csv", {  # Zero-Shot at 1.2× and 1.5× the lower bound, Random at 2× and 3×
            "graph": ["g1", "g2", "g1", "g2"], "method": ["zero-shot", "zero-shot", "random", "random"],
            "makespan_s": [0.012, 0.015, 0.020, 0.030], "lower_bound_s": [0.01] * 4, "oom": [False] * 4})
        experiment.finish("done", {})
        self.experiment = experiment.id
