"""Learned placers rewarded by measured runtimes (policies.rl.core.measured; DOPPLER Stage III):
every evaluated placement is executed, and its measured makespan is what the trainer sees."""

from __future__ import annotations

import pytest
import torch

from engine.cluster import Cluster, Device, Link, SimulationSettings
from engine.errors import SpecError
from engine.executor import Executor
from engine.graph.compgraph import CompGraph
from engine.graph.io import save_graph
from engine.sim.simulator import Simulator
from engine.store.runs import RunStore
from policies.rl.core.measured import measured_rewards, rewards_for
from policies.rl.core.reinforce import Budget, StoppingRule
from policies.rl.core.task import make_task
from policies.rl.core.trainer import Trainer
from policies.rl.core.training_runs import start_training
from policies.rl.placeto.agent import PlacetoAgent
from policies.rl.placeto.config import PlacetoConfig

torch.set_num_threads(1)

MS = 1e-3


def two_cpus() -> Cluster:
    devs = (Device("cpu:0", "cpu", 1e12), Device("cpu:1", "cpu", 1e12))
    return Cluster("two", devs, Link(5e9, 50e-6), (), SimulationSettings("default"))


def four_ops() -> CompGraph:
    # a -> {b, c} -> d, 2 ms each, 100 kB per edge
    return CompGraph("four", ["a", "b", "c", "d"], compute_any=[2 * MS] * 4, output_bytes=[1e5] * 4,
                     edge_src=[0, 0, 1, 2], edge_dst=[1, 2, 3, 3], edge_bytes=[1e5] * 4)


@pytest.fixture
def spy(monkeypatch):
    """Every mean makespan the executor measured, in order."""
    seen: list[float] = []
    real = Executor.run

    def run(self, *args, **kwargs):
        m = real(self, *args, **kwargs)
        seen.append(m.mean)
        return m

    monkeypatch.setattr(Executor, "run", run)
    return seen


def test_training_rewards_are_the_measured_makespans(spy):
    c = two_cpus()
    task = make_task(four_ops(), c, groups=None)
    simulator = task.sim
    tr = Trainer(PlacetoAgent(2, PlacetoConfig(groups=None, batch=2), seed=0), {"g": task}, seed=0,
                 budget=Budget(episodes=2), stopping=StoppingRule(0), tensorboard=False)
    with measured_rewards({"g": task}) as runtimes:
        tr.train()
    assert task.sim is simulator  # the simulator is back
    assert tr.episodes == 2 and len(spy) == tr.placements == len(runtimes["g"].history) > 0
    assert runtimes["g"].history == spy
    sampled = [r["sampled_runtime"] for r in tr.last_rows]
    assert len(sampled) == 2 and set(sampled) <= set(spy)
    assert tr.best["g"].makespan == min(spy)
    # measured, not simulated: the executor's times differ from the simulator's in every bit
    simulated = {simulator.makespan(task.expand(tr.best["g"].devices))}
    assert not simulated & set(spy)


def test_start_training_with_measured_reward_stores_it(tmp_path, spy):
    g = tmp_path / "four.json"
    save_graph(four_ops(), g)
    store = RunStore(tmp_path / "runs")
    out = start_training("placeto", str(g), two_cpus(), params={"groups": None, "batch": 3},
                         budget=Budget(episodes=3), stopping=StoppingRule(0), store=store, reward="measured")
    run = store.load(out.run_id)
    assert run.read_json("policy.json")["reward"] == "measured"
    assert out.episodes == 3 and out.placements_evaluated == len(spy)
    assert out.best_makespan_s == min(spy)


def test_unknown_reward_is_one_sentence():
    task = make_task(four_ops(), two_cpus(), groups=None)
    with pytest.raises(SpecError, match="reward must be one of simulated, measured"):
        rewards_for({"g": task}, "sometimes")
    with pytest.raises(SpecError, match="reward must be one of"):
        start_training("placeto", "gen:chainmm", two_cpus(), budget=Budget(episodes=1), reward="real")
    assert isinstance(task.sim, Simulator)


# ------------------------------------------------------------------- DOPPLER Stage III (§5)
DOPPLER_SMALL = {"hidden": 8, "rounds": 1, "edge_hidden": 4, "head": 4}


def test_doppler_stage_real_trains_on_the_executors_makespans(tmp_path, spy):
    g = tmp_path / "four.json"
    save_graph(four_ops(), g)
    store = RunStore(tmp_path / "runs")
    out = start_training("doppler", str(g), two_cpus(), params={**DOPPLER_SMALL, "stage": "real"},
                         budget=Budget(episodes=3), stopping=StoppingRule(0), store=store)
    run = store.load(out.run_id)
    assert run.read_json("policy.json")["reward"] == "measured" and run.meta["parameters"]["reward"] == "measured"
    curve = run.read_table("learning_curve.csv")
    # one execution per ASSIGN episode, and every row's makespan and reward is that measurement
    assert out.episodes == 3 and len(spy) == out.placements_evaluated == 3
    assert curve["stage"] == ["real"] * 3 and curve["reward_kind"] == ["measured"] * 3
    assert curve["sampled_runtime"] == pytest.approx(spy) and out.best_makespan_s == min(spy)
    assert curve["reward"] == pytest.approx([-m / 1e-3 for m in spy])  # −makespan in ms (§4.1)
    names = [d.name for d in two_cpus().devices]
    best = run.read_json("placement.json")["devices"]
    simulated = Simulator(four_ops(), two_cpus()).makespan([names.index(best[op]) for op in "abcd"])
    assert simulated != out.best_makespan_s  # the best was measured, not simulated


def test_doppler_stages_and_rewards_must_agree_and_an_unrunnable_cluster_is_one_sentence():
    with pytest.raises(SpecError, match=r"stage 'real' trains on measured makespans .*, not simulated ones"):
        start_training("doppler", "gen:chainmm", two_cpus(), params={"stage": "real"}, reward="simulated")
    with pytest.raises(SpecError, match=r"stage 'sim' trains on simulated makespans .*use --stage real"):
        start_training("doppler", "gen:chainmm", two_cpus(), params={"stage": "sim"}, reward="measured")
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if gpus >= 4:
        pytest.skip(f"this machine has {gpus} CUDA devices: p100x4 is executable here")
    with pytest.raises(SpecError, match=r"execute every placement on cluster 'p100x4', and this machine cannot "
                                        rf"run it \(the cluster has 4 GPU devices but torch.cuda reports {gpus}\); "
                                        r"train on"):
        start_training("doppler", "gen:chainmm", "p100x4", params={"stage": "real"})
