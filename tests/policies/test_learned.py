"""Learned placers as placers (policies.learned): Optimized, parameter checks, Mirhoseini units."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from rl_graphs import cluster, two_chains

from engine.errors import SpecError
from policies.registry import make_placer

torch.set_num_threads(1)

CONFIG = {"groups": None, "batch": 4}



def test_optimized_placer_returns_the_best_placement_it_found():
    placer = make_placer("placeto", episodes=8, groups=128)
    p = placer.place(two_chains(0.1e9), cluster(), seed=0)
    assert np.isin(p.devices, [0, 1]).all()



def test_learned_placer_budgets_and_parameter_types_are_checked():
    with pytest.raises(SpecError, match="episodes must be a whole number >= 1"):
        make_placer("placeto", episodes=0)
    with pytest.raises(SpecError, match=r"budget \(episodes\) must be at least 1"):
        make_placer("placeto", episodes=4).place(two_chains(), cluster(), budget=-1)
    with pytest.raises(SpecError, match="'groups' must be >= 1"):
        make_placer("rnn", groups=0).place(two_chains(), cluster())
    with pytest.raises(SpecError, match="'rounds' must be int"):
        make_placer("placeto", rounds=2.5).place(two_chains(), cluster())



@pytest.mark.parametrize("placer, params", [("placeto", {"batch": 2}), ("rnn", {"samples": 2, "hidden": 16})])
def test_learned_placers_place_mirhoseini_units(placer, params):
    """grouping=units: 4 × 3 + 5 units on a 3-step RNNLM (see test_workloads_recurrent); each unit —
    a cell's forward and backward ops, which no acyclic grouping can hold — lands on one device."""
    from engine.generators import from_spec
    from engine.grouping.rules import unit_groups
    from engine.presets import PRESETS
    from policies.rl.core.task import task_for
    from policies.rl.registry import make_config

    g = from_spec("gen:rnnlm?steps=3&units=64&batch=4&vocab=100")
    c = PRESETS["k80x2"]()
    config = make_config(placer, {**params, "grouping": "units"})
    assert task_for(g, c, config).num_groups == 17
    p = make_placer(placer, episodes=2, grouping="units").place(g, c)
    units = unit_groups(g)
    for u in range(17):
        assert len(set(p.devices[units == u].tolist())) == 1
