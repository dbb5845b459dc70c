"""A sweep across several Ray nodes: ``ray.cluster_utils.Cluster`` simulates a head and two
worker nodes on this machine, and the executor joins it by address as it would a real cluster."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from engine.parallel.tasks import ParallelMap
from engine.store.runs import RunStore
from placelab.sweep import SweepSpec, run_sweep, sweep_rows

ROOT = Path(__file__).resolve().parents[2]


def _node_of_task(barrier: str, tasks: int) -> str:
    """Hold this node's one CPU until all ``tasks`` tasks run (each leaves a file in ``barrier``; at most 300 s):
    they run at once, so on as many nodes. No clock decides it (a 1 s nap once did)."""
    import ray

    open(os.path.join(barrier, uuid.uuid4().hex), "w").close()
    deadline = time.monotonic() + 300
    while len(os.listdir(barrier)) < tasks and time.monotonic() < deadline:
        time.sleep(0.02)
    return ray.get_runtime_context().get_node_id()


@pytest.fixture()
def three_nodes():
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        ray.shutdown()
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    for _ in range(2):
        cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


def test_a_sweep_runs_across_simulated_nodes(three_nodes, tmp_path):
    import ray

    ex = ParallelMap(address=three_nodes.address)
    with ex:
        assert len([n for n in ray.nodes() if n["Alive"]]) == 3
        (tmp_path / "barrier").mkdir()
        assert len(set(ex.map(_node_of_task, [(str(tmp_path / "barrier"), 3)] * 3))) == 3  # one task per node
        spec = SweepSpec.from_specs("gen:random?ops=30&seed=4,gen:chainmm", "k80x2", "random,m-etf", seeds=2)
        store = RunStore(tmp_path)
        out = run_sweep(store, spec, executor=ex)
    reference = run_sweep(RunStore(tmp_path / "ref"), spec)
    strip = ("run_id", "seconds_to_place")
    assert [{k: v for k, v in r.items() if k not in strip} for r in out["results"]] == \
           [{k: v for k, v in r.items() if k not in strip} for r in reference["results"]]
    assert len(sweep_rows(store.load(out["run_id"]))) == 2 * 2 * 2
    assert store.load(out["run_id"]).meta["metrics"]["executor"] == f"ray cluster at {three_nodes.address}"


def test_local_workers_start_their_own_runtime_beside_a_running_cluster(three_nodes, tmp_path):
    """``--workers N`` never joins a cluster that happens to run on the machine: without an address Ray would join
    the newest one (a test beside this one's cluster made a driver fail with "When connecting to an existing
    cluster, num_cpus … must not be provided")."""
    from ray._private.services import get_ray_address_from_environment

    assert get_ray_address_from_environment(None, None) == three_nodes.address  # a bare ray.init() would join it
    code = ("import ray; from engine.parallel.tasks import ParallelMap\n"
            "with ParallelMap(workers=2):\n"
            "    print(len([n for n in ray.nodes() if n['Alive']]), ray.get_runtime_context().gcs_address)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PLACELAB_CACHE_DIR": str(tmp_path)}, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    nodes, address = out.stdout.split()
    assert nodes == "1" and address != three_nodes.address
