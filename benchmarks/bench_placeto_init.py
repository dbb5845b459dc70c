"""How far from uniform does an untrained Placeto policy start? Per graph and initialisation seed.

For each setting and seed, a fresh Placeto agent (no update) runs one sampled episode and the script
prints its mean per-decision entropy over ln(#devices): 1.0 is the uniform policy, 0.0 a deterministic
one. Both networks are measured: the authors' (``network=authors``, sums and Glorot initialisation,
:mod:`policies.rl.placeto.sweep_net`) and the §2.2 text's (``network=paper``, means and a small output
layer, :mod:`policies.rl.placeto.net`). Learning-health verdicts compare the first 100 episodes with the
last, so a policy that starts near-deterministic has little left to explore before its first update.

    .venv/bin/python benchmarks/bench_placeto_init.py                 # the default settings, seeds 0-4
    .venv/bin/python benchmarks/bench_placeto_init.py --seeds 10 --settings inception-4
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys

import numpy as np
import torch

from engine.specs import load_cluster, load_graph
from policies.rl.core.task import make_task
from policies.rl.placeto.agent import PlacetoAgent, PlacetoConfig

#: name → (graph spec, cluster, grouping)
SETTINGS = {
    "nmt-2": ("gen:nmt", "k80x2", "merge"),
    "chainmm-4": ("gen:chainmm", "p100x4", "merge"),
    "inception-4": ("gen:inception-v3", "k80x4", "merge"),
    "nasnet-4": ("gen:nasnet", "k80x4", "merge"),
    "llama-layer-ops": ("gen:llama-layer", "p100x4", "ops"),
}


def first_episode_entropy(task, num_devices: int, network: str, seed: int) -> float:
    """Mean per-decision entropy over ln(num_devices) of one sampled episode of an untrained agent."""
    agent = PlacetoAgent(num_devices, PlacetoConfig(network=network), seed=seed, tasks=[task])
    episode = agent.episodes([task], ["g"], np.random.default_rng(seed))[0]
    return float(np.mean(episode.entropy)) / math.log(num_devices)


def table(rows: list[dict], seeds: int) -> str:
    """The rows as text: one line per setting and network, the median and each seed's figure."""
    lines = [f"first-episode entropy / ln(devices) of an untrained policy, seeds 0-{seeds - 1}",
             f"{'setting':16} {'groups':>6}  {'network':8} {'median':>6}  per seed"]
    lines += [f"{r['setting']:16} {r['groups']:6d}  {net:8} {statistics.median(r[net]):6.2f}  "
              + " ".join(f"{v:.2f}" for v in r[net]) for r in rows for net in ("authors", "paper")]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--settings", default=",".join(SETTINGS), help=f"comma-separated, from {', '.join(SETTINGS)}")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    rows = []
    for name in args.settings.split(","):
        spec, cluster_name, grouping = SETTINGS[name]
        cluster = load_cluster(cluster_name)
        task = make_task(load_graph(spec), cluster, grouping=grouping)
        row = {"setting": name, "graph": spec, "cluster": cluster_name, "groups": task.num_groups}
        for network in ("authors", "paper"):
            row[network] = [first_episode_entropy(task, cluster.num_devices, network, s) for s in range(args.seeds)]
        rows.append(row)
    print(json.dumps(rows) if args.json else table(rows, args.seeds))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
