"""Small hand-worked graphs and clusters shared by the learned-placer tests."""

from __future__ import annotations

from engine.cluster import Cluster, Device, Link, SimulationSettings, save_cluster
from engine.graph.compgraph import CompGraph
from engine.graph.io import graph_from_dict, save_graph

GB = 1e9


def cluster(n: int = 2, memory: float = 100 * GB) -> Cluster:
    """``n`` identical GPUs, a 1 GB/s link, default mode, no overheads."""
    devs = tuple(Device(f"gpu:{i}", "gpu", memory) for i in range(n))
    return Cluster("test", devs, Link(1 * GB), (), SimulationSettings("default"))


def graph(ops: list[dict], edges: list[tuple[str, str]], name: str = "t") -> CompGraph:
    return graph_from_dict({"schema": "placelab.graph/1", "name": name, "ops": ops,
                            "edges": [{"src": s, "dst": d} for s, d in edges]})


def two_chains(out_bytes: float = 10e9) -> CompGraph:
    """a0→a1→a2 and b0→b1→b2, 1 s per op; each output takes 10 s to cross the 1 GB/s link.

    The optimum on two devices puts one chain on each: makespan 3 s (the lower bound
    max(3 s critical path, 6 s / 2)); all on one device takes 6 s; any placement that splits a
    chain pays a 10 s transfer.
    """
    ops = [{"name": f"{c}{i}", "compute": 1.0, "output_bytes": out_bytes} for c in "ab" for i in range(3)]
    return graph(ops, [("a0", "a1"), ("a1", "a2"), ("b0", "b1"), ("b1", "b2")], name="two-chains")


def diamond() -> CompGraph:
    """s → {l, r} → t plus an unrelated op u (parallel to all): parents/children/parallel sets."""
    ops = [{"name": n, "compute": c, "output_bytes": 1000.0}
           for n, c in (("s", 1.0), ("l", 2.0), ("r", 3.0), ("t", 4.0), ("u", 2.0))]
    return graph(ops, [("s", "l"), ("s", "r"), ("l", "t"), ("r", "t")], name="diamond")


def graph_file(tmp_path, g: CompGraph | None = None) -> str:
    """``g`` (default: two chains with 0.1 s transfers) saved as a graph file under ``tmp_path``."""
    path = tmp_path / "g.json"
    save_graph(g or two_chains(0.1e9), path)
    return str(path)


def cluster_file(tmp_path, n: int = 2) -> str:
    """:func:`cluster` of ``n`` devices saved as a cluster file under ``tmp_path``."""
    path = tmp_path / f"c{n}.json"
    save_cluster(cluster(n), path)
    return str(path)


def train_step(agent, tasks, keys, rng, *, entropy_coef: float, step: int):
    """Roll out one episode per key in this process and accumulate the gradient (no optimizer step): one
    update's first half, as the trainer does it, for tests that step an agent by hand."""
    from policies.rl.core.agent import backward

    rollout = agent.rollout([tasks[k] for k in keys], keys, rng)
    backward(agent, rollout, tasks, entropy_coef=entropy_coef, step=step)
    return rollout.episodes
