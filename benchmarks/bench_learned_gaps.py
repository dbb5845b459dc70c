"""Why the learned placers of a reproduction end where they do: read its run store and measure.

Point ``--runs-dir`` at the store of ``placelab reproduce placeto-table1`` or ``placeto-fig5``
(the steps' runs are kept there). For every finished Placeto or RNN-placer ``train`` run:

* ``entropy`` — the policy's mean entropy per decision (the learning curve's ``entropy``) over
  the first and the last ``--window`` episodes (at most half the episodes each), beside its
  maximum ln(devices): a policy still at the maximum samples every device uniformly, i.e. it has
  not learned; 0 is a deterministic policy.
* ``sampled`` — the median sampled runtime over the same two windows.

For a run on one graph (``placeto-table1``), with L the makespan lower bound
(``engine.sim.objectives.lower_bound``, which counts no copies):

* ``best/L`` — the best placement found, and ``free/L`` the same placement simulated with free
  copies (link bandwidth 10^18 B/s, no transfer gap): how much of its distance from L is time
  spent waiting for copies.
* ``list free/L`` and ``list real/L`` — the best of the list schedulers (m-ETF, HEFT,
  critical-path), each placing the graph as if copies were free, simulated with free copies
  and then on the real cluster: the parallelism L counts on, and what its copies cost.

For a run on a family's training split (``placeto-fig5``): the greedy (zero-shot) placement of
the trained policy on the training and on the test graphs, median over the graphs of its
makespan / L. Alike on both splits means the policy transfers as well as it learned; far
above the training runs' sampled runtimes means it did not learn.
For a Placeto policy also ``moved``: the share of groups its greedy episode moves off the start
(every group on its first feasible device), median over the test graphs; near 0 or 1 the policy
treats every group alike (``placeto-ablations``: the §4.3 simple aggregator).

Without ``--runs-dir`` (as ``make bench`` runs it) the script first runs ``placelab reproduce
placeto-table1 --quick`` into a temporary store (minutes) and reads that.

Usage::

    .venv/bin/python benchmarks/bench_learned_gaps.py [--runs-dir DIR] [--json]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from engine.cluster import Cluster, cluster_from_dict, cluster_to_dict
from engine.graph.compgraph import CompGraph
from engine.graph.io import load_graph_json
from engine.placement import load_placement
from engine.sim.objectives import lower_bound
from engine.sim.simulator import simulate
from engine.specs import expand_graph_specs, load_cluster
from engine.store.runs import Run, RunStore
from learning_runs import window_medians
from policies.registry import make_placer
from policies.rl.core.training_runs import evaluate_policy, load_policy, load_tasks, policy_place

LIST_SCHEDULERS = ("m-etf", "heft", "critical-path")


def free_copies(cluster: Cluster) -> Cluster:
    """``cluster`` with copies that take no time (every link 10^18 B/s, no latency, no measured
    copy curve, no transfer gap)."""
    doc = cluster_to_dict(cluster)
    for link in [doc["link"], *doc.get("links", [])]:
        link["bandwidth_bytes_per_s"] = 1e18
        link["latency_s"] = 0.0
        link.pop("copy_curve", None)
    doc["simulation"].pop("transfer_gap_s", None)
    return cluster_from_dict(doc, source=f"{cluster.name} with free copies")


def curve_windows(run: Run, window: int) -> dict[str, float]:
    """Median entropy and sampled runtime over the first and the last ``window`` episodes (at most
    half the episodes each, so that the two windows do not overlap)."""
    with open(run.path / "learning_curve.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    med = window_medians(rows, ("entropy", "sampled_runtime"), window, most=0.5)
    return {"episodes": len(rows), "entropy_first": med["entropy_first"], "entropy_last": med["entropy_last"],
            "sampled_first_s": med["sampled_runtime_first"], "sampled_last_s": med["sampled_runtime_last"]}


def list_schedulers(graph: CompGraph, cluster: Cluster) -> dict[str, float]:
    """The best list scheduler's placement made with free copies: its makespan free and real (s)."""
    free = free_copies(cluster)
    best: tuple[float, float] | None = None
    for name in LIST_SCHEDULERS:
        p = make_placer(name).place(graph, free, seed=0)
        pair = (simulate(graph, free, p).makespan, simulate(graph, cluster, p).makespan)
        best = pair if best is None or pair < best else best
    assert best is not None
    return {"list_free_s": best[0], "list_real_s": best[1]}


def one_graph(run: Run) -> dict[str, Any]:
    """The single-graph measurements of the module docstring."""
    graph = load_graph_json(run.path / "graph.json")
    cluster = load_cluster(run.path / "cluster.json")
    placement = load_placement(run.path / "placement.json", graph, cluster)
    bound = lower_bound(graph, cluster)
    return {"lower_bound_s": bound, "best_s": simulate(graph, cluster, placement).makespan,
            "best_free_s": simulate(graph, free_copies(cluster), placement).makespan,
            **list_schedulers(graph, cluster)}


def family(store: RunStore, run: Run) -> dict[str, Any]:
    """The zero-shot measurements of the module docstring."""
    train = run.meta["parameters"]["graphs"]
    out: dict[str, Any] = {}
    for split, spec in (("train", train), ("test", train.replace(":train", ":test"))):
        rows, _ = evaluate_policy(store, run.id, spec, save=False)
        out[f"zero_shot_{split}_over_bound"] = statistics.median(r["makespan_s"] / r["lower_bound_s"] for r in rows)
    if run.meta.get("placer") == "placeto":
        out["moved_test"] = moved_share(run, train.replace(":train", ":test"))
    return out


def moved_share(run: Run, graphs: str) -> float:
    """Median over ``graphs`` of the share of groups that a trained Placeto policy's greedy episode
    moves off Placeto's start (every group on its first feasible device): near 0 or 1, the policy
    treats every group alike (it keeps or it moves them all)."""
    agent, doc = load_policy(run)
    cluster = cluster_from_dict(doc["cluster"])
    shares = []
    for spec in expand_graph_specs(graphs):
        task = load_tasks([spec], cluster, agent.config)[spec]
        start = np.argmax(task.feasible, axis=1)
        shares.append(float(np.mean(policy_place(agent, doc, task) != start)))
    return statistics.median(shares)


def measure(runs_dir: str, window: int, stream: Any) -> list[dict[str, Any]]:
    store = RunStore(runs_dir)
    out = []
    for run in reversed(store.list(kind="train", status="done")):
        if run.meta.get("placer") not in ("placeto", "rnn") or "learning_curve.csv" not in run.files():
            continue
        devices = len(json.loads((run.path / "policy.json").read_text())["cluster"]["devices"])
        row = {"run": run.id, "name": run.meta["name"], "max_entropy": math.log(devices),
               **curve_windows(run, window)}
        on_family = str(run.meta["parameters"].get("graphs", "")).startswith("family:")
        if not on_family and "placement.json" not in run.files():
            print(f"{run.meta['name']}: skipped (trained on several graphs that are not one family's split)",
                  file=stream)
            continue
        row.update(family(store, run) if on_family else one_graph(run))
        out.append(row)
        print(_line(row), file=stream, flush=True)
    return out


def _line(r: dict[str, Any]) -> str:
    text = (f"{r['name']:<42} entropy {r['entropy_first']:.3f} -> {r['entropy_last']:.3f} (max {r['max_entropy']:.3f})"
            f"  sampled {r['sampled_first_s']:.4g} -> {r['sampled_last_s']:.4g} s")
    if "lower_bound_s" in r:
        b = r["lower_bound_s"]
        text += (f"  L {b:.3f} s  best/L {r['best_s'] / b:.2f} free/L {r['best_free_s'] / b:.2f}"
                 f"  list free/L {r['list_free_s'] / b:.2f} real/L {r['list_real_s'] / b:.2f}")
    else:
        text += (f"  zero-shot/L train {r['zero_shot_train_over_bound']:.2f}"
                 f" test {r['zero_shot_test_over_bound']:.2f}")
        if "moved_test" in r:
            text += f"  moved {r['moved_test']:.2f}"
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs-dir", help="the run store of a placelab reproduce run (default: run placeto-table1 "
                                       "--quick into a temporary one)")
    ap.add_argument("--window", type=int, default=300, help="episodes per window of the learning curve")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()
    stream = sys.stderr if args.json else sys.stdout
    if args.runs_dir is None:
        with tempfile.TemporaryDirectory(prefix="bench-learned-gaps-") as tmp:
            from placelab.cli import run_command
            from placelab.reproduce.runner import reproduce

            print("running placelab reproduce placeto-table1 --quick into a temporary store", file=stream, flush=True)
            reproduce("placeto-table1", command=run_command, quick=True, runs_dir=tmp,
                      progress=lambda m: print(m, file=sys.stderr))
            report(tmp, args.window, args.json, stream)
        return
    if not Path(args.runs_dir).is_dir():
        sys.exit(f"no run store at {args.runs_dir}")
    report(args.runs_dir, args.window, args.json, stream)


def report(runs_dir: str, window: int, as_json: bool, stream: Any) -> None:
    rows = measure(runs_dir, window, stream)
    if as_json:
        print(json.dumps({"runs_dir": runs_dir, "window": window, "runs": rows}, indent=1))
    elif not rows:
        print(f"no finished Placeto or RNN-placer training runs in {runs_dir}")


if __name__ == "__main__":
    main()
