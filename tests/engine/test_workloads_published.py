"""The bundled published workloads (engine.workloads.published): bench:NAME specs, clusters, expert splits."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from engine.errors import SpecError
from engine.sim.simulator import simulate
from engine.specs import load_cluster, load_graph
from engine.workloads.published import (
    DATA_DIR,
    WORKLOADS,
    bench_descriptions,
    expert_split_for,
    expert_split_path,
)
from policies.registry import make_placer


def test_every_workload_file_and_split_is_in_the_repository():
    assert DATA_DIR.is_dir() and (DATA_DIR / "LICENSE.txt").is_file()
    assert len(WORKLOADS) == 9
    for w in WORKLOADS.values():
        assert w.path.is_file(), w.name
        assert w.expert_path is None or w.expert_path.is_file(), w.name
    assert all(k.startswith("bench:") for k in bench_descriptions()) and len(bench_descriptions()) == 9


def test_bench_spec_loads_the_files_graph():
    g = load_graph("bench:bert24_training")
    doc = json.loads(WORKLOADS["bert24_training"].path.read_text())
    assert g.name == "bert24_training" and g.num_ops == len(doc["nodes"]) == 64
    # total accelerator time, by an independent sum over the file (ms -> s)
    assert np.nansum(g.compute_for_kind("gpu")) == pytest.approx(
        math.fsum(n["fpgaLatency"] for n in doc["nodes"]) * 1e-3, rel=1e-12)


def test_bench_cluster_widens_to_the_expert_split():
    # the BERT-24 inference file allows 5 accelerators, its expert split uses 6 (and 1 CPU)
    c = load_cluster("bench:bert24_inference")
    assert c.name == "bench:bert24_inference"
    assert [d.name for d in c.devices if d.kind == "gpu"] == [f"gpu:{i}" for i in range(6)]
    assert sum(d.kind == "cpu" for d in c.devices) == 8
    assert load_cluster("bench:bert_l-3_inference").num_devices == 4 + 8  # no split: the file's counts


def test_expert_placer_uses_the_published_split_for_a_bundled_graph():
    g, c = load_graph("bench:gnmt_training"), load_cluster("bench:gnmt_training")
    split = json.loads(expert_split_path("bench:gnmt_training").read_text())
    p = make_placer("expert").place(g, c)
    names = [d.name for d in c.devices]
    for i, part in enumerate(split["fpgas"]):
        for nid in part["nodes"]:
            assert names[p.devices[g.index[str(nid)]]] == f"gpu:{i}"
    same = make_placer("expert", split="bench:gnmt_training").place(g, c)
    assert same.devices.tolist() == p.devices.tolist()
    assert simulate(g, c, p).makespan > 0


def test_a_changed_graph_with_a_bundled_name_gets_no_split():
    g = load_graph("bench:resnet50_inference")
    assert expert_split_for(g) == WORKLOADS["resnet50_inference"].expert_path
    assert expert_split_for(load_graph("gen:random?ops=20&seed=1")) is None


@pytest.mark.parametrize("spec", ["bench:nope", "bench:"])
def test_unknown_workload_is_one_sentence(spec):
    with pytest.raises(SpecError, match="unknown bundled workload") as info:
        load_graph(spec)
    assert "\n" not in str(info.value)
    with pytest.raises(SpecError, match="unknown bundled workload"):
        load_cluster(spec)


def test_operator_graph_has_no_expert_split():
    with pytest.raises(SpecError, match="no human-expert split"):
        expert_split_path("bench:bert_l-3_inference")
