"""How long does importing and grouping a 10,000-op TensorFlow training step take?

The graph: one SGD training step of Keras NASNet-Mobile (batch 32, weights=None; ~13,500 ops
after pruning, the largest of the papers' models we import). Stages, each the median of
``--repeat`` runs:

* ``keras model``: building the Keras model (``keras.applications.NASNetMobile``);
* ``trace + import``: :func:`engine.importers.tensorflow_graph.graph_from_keras` — tracing the
  step as a ``tf.function`` and walking it into a CompGraph with static shapes and roofline costs;
* ``GraphDef file``: the same traced step saved as a GraphDef ``.pb`` and read back with
  :func:`engine.specs.load_graph` (content detection, pruning, shapes, costs) — the path a
  user's own TF graph takes;
* ``placelab.graph/1 JSON``: reading the imported graph back from our own format (the cache);
* groupings on the imported graph: TF colocation sets, Mirhoseini §3.3's rule, Mirhoseini §4.1's
  layer units, and Placeto's §3.3 rule + Merge-and-Colocate to 128 groups with the colocation
  sets united afterwards (the learned placers' default, :func:`policies.rl.core.task.learning_groups`).

The issue's goal: import plus grouping of a 10,000-op TF graph in under a minute.

Usage::

    .venv/bin/python benchmarks/bench_import.py            # a table
    .venv/bin/python benchmarks/bench_import.py --json     # one JSON object on stdout
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

GOAL_S = 60.0


def _timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=3, help="runs per stage (median)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    import keras

    from engine.graph.io import load_graph_json, save_graph
    from engine.grouping.contract import colocation_groups
    from engine.grouping.rules import mirhoseini_groups, unit_groups
    from engine.importers._tf_keras import _trace_keras_step
    from engine.importers.tensorflow_graph import graph_from_keras
    from engine.specs import load_graph
    from policies.rl.core.task import learning_groups

    def build_model():
        keras.backend.clear_session()
        return keras.applications.NASNetMobile(weights=None)

    rows: list[dict[str, Any]] = []
    t_model, model = _timed(build_model, args.repeat)
    rows.append({"stage": "keras model", "seconds": t_model})
    t_import, g = _timed(lambda: graph_from_keras(model, args.batch, optimizer="sgd",
                                                  loss="categorical_crossentropy"), args.repeat)
    rows.append({"stage": "trace + import", "seconds": t_import, "ops": g.num_ops, "edges": g.num_edges})

    with tempfile.TemporaryDirectory() as tmp:
        pb = Path(tmp) / "nasnet_step.pb"
        step = _trace_keras_step(model, args.batch, "sgd", "categorical_crossentropy")
        pb.write_bytes(step.graph.as_graph_def().SerializeToString())
        t_pb, from_pb = _timed(lambda: load_graph(str(pb)), args.repeat)
        rows.append({"stage": "GraphDef file", "seconds": t_pb, "ops": from_pb.num_ops, "edges": from_pb.num_edges,
                     "file_bytes": pb.stat().st_size})
        js = Path(tmp) / "nasnet_step.json"
        save_graph(g, js)
        t_json, _ = _timed(lambda: load_graph_json(js), args.repeat)
        rows.append({"stage": "placelab.graph/1 JSON", "seconds": t_json, "file_bytes": js.stat().st_size})

    for stage, fn in (("colocation sets", lambda: colocation_groups(g)),
                      ("Mirhoseini 3.3 rule", lambda: mirhoseini_groups(g)),
                      ("Mirhoseini 4.1 layer units", lambda: unit_groups(g)),
                      ("3.3 rule + Merge-and-Colocate to 128", lambda: learning_groups(g, 128))):
        t, groups = _timed(fn, args.repeat)
        rows.append({"stage": stage, "seconds": t, "groups": int(groups.max()) + 1})

    grouping_s = max(r["seconds"] for r in rows[-4:])
    summary = {"graph": g.name, "ops": g.num_ops, "repeat": args.repeat, "machine": platform.processor() or
               platform.machine(), "cpus": os.cpu_count(), "rows": rows,
               "import_and_grouping_s": t_import + grouping_s, "goal_s": GOAL_S}
    if args.json:
        print(json.dumps(summary))
        return 0
    print(f"{g.name}: {g.num_ops:,} ops, {g.num_edges:,} edges (medians of {args.repeat}, {os.cpu_count()} CPUs)")
    print(f"{'stage':40} {'seconds':>9}  result")
    for r in rows:
        extra = ", ".join(f"{k} {v:,}" for k, v in r.items() if k not in ("stage", "seconds"))
        print(f"{r['stage']:40} {r['seconds']:9.2f}  {extra}")
    total = summary["import_and_grouping_s"]
    print(f"trace + import + the slowest grouping: {total:.1f} s (goal: under {GOAL_S:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
