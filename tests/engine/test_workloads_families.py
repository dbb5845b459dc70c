"""Tests for engine.workloads.placeto_families: Placeto App. A.3 families, split and grouping."""

from __future__ import annotations

import re

import numpy as np
import pytest

from engine.errors import SpecError
from engine.generators import from_spec
from engine.grouping.contract import contract
from engine.workloads.placeto_families import FAMILY_SIZE, _draws, family, family_grouping

RANGES = {"nmt": ((16, 32), (64, 128)), "ptb": ((25, 40), (1536, 3072)), "cifar10": (None, (240, 360))}


@pytest.mark.parametrize("name", list(RANGES))
def test_fixed_half_split_of_32_specs(name):
    spec = family(f"family:{name}")
    assert len(spec.train) == len(spec.test) == FAMILY_SIZE // 2
    idx = sorted(int(re.search(r"index=(\d+)", s).group(1)) for s in spec.train + spec.test)
    assert idx == list(range(FAMILY_SIZE))
    assert family(name) == spec  # the split never changes
    assert spec.groups == (160 if name == "nmt" else 128)


@pytest.mark.parametrize("name", list(RANGES))
def test_parameters_are_distinct_and_in_the_papers_ranges(name):
    draws = _draws(name, 0)
    assert len(set(draws)) == FAMILY_SIZE
    unroll, batch = RANGES[name]
    for _, length, bs in draws:
        assert batch[0] <= bs <= batch[1]
        if unroll:
            assert unroll[0] <= length <= unroll[1]


def test_cifar10_family_graphs_are_distinct_and_deterministic():
    hashes = [from_spec(f"gen:family-cifar10?index={i}").content_hash for i in range(FAMILY_SIZE)]
    assert len(set(hashes)) == FAMILY_SIZE
    assert from_spec("gen:family-cifar10?index=3").content_hash == hashes[3]
    assert from_spec("gen:family-cifar10?index=3&seed=1").content_hash != hashes[3]


@pytest.mark.parametrize("name", ["nmt", "ptb"])
def test_recurrent_family_graphs_are_distinct_and_deterministic(name):
    a = [from_spec(f"gen:family-{name}?index={i}") for i in (0, 1)]
    assert a[0].content_hash != a[1].content_hash
    assert from_spec(f"gen:family-{name}?index=1").content_hash == a[1].content_hash


@pytest.mark.parametrize("name", list(RANGES))
def test_training_step_graphs_group_to_the_papers_size(name):
    spec = family(name)
    g = from_spec(spec.test[0])
    assert set(g.phase) == {"forward", "backward", "update"}
    assert all(g.scope) and all(g.op_types)
    grouping = contract(g, family_grouping(g, spec.groups))
    assert grouping.num_groups == spec.groups
    dev = np.arange(grouping.num_groups) % 4
    assert np.array_equal(grouping.expand(dev), dev[grouping.op_group])


def test_ptb_cell_uses_the_enas_activations():
    g = from_spec("gen:family-ptb?index=0")
    acts = {t for t in g.op_types if t in ("Identity", "Sigmoid", "Tanh", "Relu")}
    assert "Sigmoid" in acts and len(acts) >= 2


def test_bad_family_parameters():
    with pytest.raises(SpecError, match="index"):
        from_spec("gen:family-nmt?index=32")
    with pytest.raises(SpecError, match="unknown graph family"):
        family("imagenet")
