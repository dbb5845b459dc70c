"""Each numba kernel is compiled in one version only: every caller passes the same argument types (input
arrays read-only, ``engine.graph._kernels.readonly``), so the version ``make setup`` puts in numba's cache
(``placelab/warmup.py``) is the one every later process loads. Before, a placement given as a
:class:`~engine.placement.Placement` (read-only) and one given as a plain array (writable) were two versions
of each simulator kernel, and a cluster with a measured copy curve a third of the work-conserving one: each
compiled in the first process that needed it, in every test worker at once
(docs/lab/2026-11-27-byte-code-and-kernel-versions.md).

Counted in a fresh process: the warm-up's jobs, then every caller's variant, then the versions each
dispatcher holds.
"""

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json
import numpy as np
from engine.cluster import Cluster, Device, Link, edge_transfer_cost
from engine.graph import _kernels as _dagkernels
from engine.graph import dag
from engine.sim import _kernel_default, _kernel_placeto, _kernel_wc
from engine.generators import random_dag
from engine.placement import Placement
from engine.presets import PRESETS
from engine.sim.simulator import Simulator
from placelab import warmup

for job in warmup.JOBS:
    if job != "list-scheduling":
        warmup.compile_job(job)
graph = random_dag(ops=30, seed=1)
curve = Cluster("curve", (Device("cpu:0", "cpu", 1e9), Device("cpu:1", "cpu", 1e9)),
                Link(1e9, 5e-6, ((1000.0, 2e-6), (3000.0, 3e-6))))
clusters = (PRESETS["k80x2"](),
            curve.with_simulation(mode="work_conserving", copy_occupies_sender=True, choose="b_level"))
writable = np.arange(graph.num_ops) % 2
assert writable.flags.writeable
for cluster in clusters:
    for mode in ("placeto", "default", "work_conserving"):
        sim = Simulator(graph, cluster, mode=mode)
        for devices in (writable, Placement(writable)):
            sim.run(devices, record_memory=True)
            sim.makespan(devices)
            sim.makespan_and_peak(devices)
costs = edge_transfer_cost(graph, clusters[0], writable)
frozen_costs = costs.copy()
frozen_costs.setflags(write=False)
for edge_cost in (None, costs, frozen_costs):
    dag.t_level(graph, edge_cost=edge_cost)
    dag.b_level(graph, node_cost=np.ones(graph.num_ops), edge_cost=edge_cost)
    dag.critical_path(graph, edge_cost=edge_cost)
kernels = {"simulate_placeto": _kernel_placeto.simulate_placeto,
           "simulate_default": _kernel_default.simulate_default,
           "simulate_wc": _kernel_wc.simulate_wc,
           "longest_from_sources": _dagkernels.longest_from_sources,
           "longest_to_sinks": _dagkernels.longest_to_sinks}
print(json.dumps({name: len(k.signatures) for name, k in kernels.items()}))
"""


def test_every_caller_uses_the_one_version_the_warm_up_compiles():
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    versions = json.loads(out.stdout.strip().splitlines()[-1])
    assert versions == {"simulate_placeto": 1, "simulate_default": 1, "simulate_wc": 1,
                        "longest_from_sources": 1, "longest_to_sinks": 1}


DOPPLER = r"""
import json
import numpy as np
import torch
from engine.generators import random_dag
from engine.presets import PRESETS
from placelab import warmup
from policies.rl.core.task import make_task
from policies.rl.doppler import _assign_kernel
from policies.rl.doppler.agent import DopplerAgent, DopplerConfig

warmup.compile_job("doppler")
task = make_task(random_dag(ops=20, seed=2), PRESETS["k80x2"](), groups=None)
agent = DopplerAgent(2, DopplerConfig(hidden=8, rounds=1, head=4), seed=0)
p = agent.prepare(task)
for arr in (p.units.feasible, p.units.node_group):  # as a rollout worker receives them
    arr.setflags(write=False)
with torch.no_grad():
    scores, hz = agent._encode(p)
for eps, record in ((0.0, False), (0.5, True)):
    agent._assign(p, scores, hz, np.random.default_rng(0), eps, record)
print(json.dumps({"assign_episode": len(_assign_kernel.assign_episode.signatures)}))
"""


def test_doppler_episodes_use_the_version_the_warm_up_compiles():
    """The teacher's episode (the warm-up's), and a learned policy's with exploration and read-only task arrays
    (a rollout worker's), run the one compiled ASSIGN loop."""
    out = subprocess.run([sys.executable, "-c", DOPPLER], cwd=REPO, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"assign_episode": 1}
