"""Tests for engine.workloads.doppler: DOPPLER App. D graphs, meta-op tags and sizes.

Hand count for CHAINMM on 4 GPUs (2 × 2 blocks, contraction cut 4 ways): 5 inputs × 4 blocks = 20;
a matmul = 16 block products + 2 pairwise adds × 4 blocks + 4 formations = 28, three of them = 84;
the final add = 4 kernels + 4 formations = 8; total 112 (the paper's 112).
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.costmodel import P100, V100, op_time
from engine.generators import from_spec
from engine.workloads.doppler import chainmm, meta_ops

PAPER = {"chainmm": 112, "ffnn": 192, "llama-block": 215, "llama-layer": 261}


@pytest.fixture(scope="module")
def graphs():
    return {name: from_spec(f"gen:{name}?gpus=4") for name in PAPER}


@pytest.mark.parametrize("name", list(PAPER))
def test_node_counts_within_15_percent_of_the_paper(graphs, name):
    n = graphs[name].num_ops
    assert abs(n - PAPER[name]) <= 0.15 * PAPER[name], f"{name}: {n} ops vs paper {PAPER[name]}"


def test_chainmm_count_is_exact_and_structured(graphs):
    g = graphs["chainmm"]
    assert g.num_ops == 112
    types = {t: g.op_types.count(t) for t in set(g.op_types)}
    assert types == {"input": 20, "matmul": 48, "straight elemwise": 4 + 24, "formation": 16}


@pytest.mark.parametrize("name", list(PAPER))
def test_every_op_is_tagged_and_meta_ops_are_topologically_ordered(graphs, name):
    g = graphs[name]
    assert set(g.phase) == {"forward"} and all(g.op_types)
    metas = meta_ops(g)
    assert sorted(i for m in metas for i in (*m.shard_ops, *m.reduce_ops)) == list(range(g.num_ops))
    meta_of = np.empty(g.num_ops, dtype=int)
    for m in metas:
        meta_of[list(m.shard_ops) + list(m.reduce_ops)] = m.id
        assert m.shard_ops  # every meta-op has shard ops
    # an edge never goes from a later meta-op to an earlier one
    assert (meta_of[g.edge_src] <= meta_of[g.edge_dst]).all()
    # inputs have no reduce ops; every other meta-op ends in formations
    for m in metas:
        kinds = {g.op_types[i] for i in m.reduce_ops}
        assert not m.reduce_ops or "formation" in kinds


def test_chainmm_meta_ops_and_costs():
    g = chainmm(gpus=4)
    metas = meta_ops(g)
    assert [len(m.shard_ops) for m in metas] == [4] * 5 + [16] * 3 + [4]
    assert [len(m.reduce_ops) for m in metas] == [0] * 5 + [12] * 3 + [4]
    # a block product: (5000 × 2500) · (2500 × 5000) = 2·5000·5000·2500 FLOPs on a P100
    i = metas[5].shard_ops[0]
    reads = 2 * 5000 * 2500 * 4 + 5000 * 5000 * 4
    assert g.compute_for_kind("gpu")[i] == pytest.approx(op_time(2 * 5000 * 5000 * 2500, reads, P100))
    assert g.base_kinds == ("gpu",) and g.models("gpu") == ("K80", "P100", "V100", "A100", "H100")
    assert g.compute_on("gpu", "P100")[i] == g.compute_for_kind("gpu")[i]  # its own basis: DOPPLER's P100
    assert g.compute_on("gpu", "V100")[i] == pytest.approx(op_time(2 * 5000 * 5000 * 2500, reads, V100))


def test_gpus_parameter_scales_the_sharding():
    g2, g8 = chainmm(gpus=2), chainmm(gpus=8)
    assert g2.num_ops < 112 < g8.num_ops
    assert len(meta_ops(g8)[0].shard_ops) == 8


def test_meta_ops_rejects_untagged_graphs():
    with pytest.raises(ValueError, match="meta-op"):
        meta_ops(from_spec("gen:random?ops=5"))
