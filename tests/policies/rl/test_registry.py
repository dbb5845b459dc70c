"""policies.rl.registry: every learned placer's config cites its sources and validates its values;
a learned placer listed in ``PACKAGES`` becomes a placer with its config's parameters; no torch is
loaded to list them or to name a run's files."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from dataclasses import dataclass

import pytest

from engine.errors import SpecError
from policies.learned import placer_factory
from policies.registry import make_placer, placer_parameters
from policies.rl import registry
from policies.rl.core.agent import Agent
from policies.rl.core.config import LearnedConfig, LearnedPlacerInfo, param
from policies.rl.registry import config_fields, learned_placers, make_config

CITATION = re.compile(r"§|App\. A|Fig\. \d|^ours: \S|\w\.(py|txt|json):\d")


def test_the_papers_placers_are_registered():
    assert {"placeto", "rnn"} <= set(learned_placers())


@pytest.mark.parametrize("name", sorted(learned_placers()))
def test_every_config_field_cites_its_source_and_its_default_is_valid(name):
    for f in config_fields(name):
        assert f.metadata["doc"], f"{name}.{f.name} has no doc"
        assert CITATION.search(f.metadata["source"]), f"{name}.{f.name} cites nothing: {f.metadata['source']!r}"
    defaults = make_config(name, {}).to_dict()
    assert make_config(name, defaults).to_dict() == defaults  # what a stored run holds rebuilds it


@pytest.mark.parametrize(("params", "message"), [
    ({"rounds": -1}, "parameter 'rounds' must be in [0, 64], got -1"),  # 64: engine.limits.MAX_NET_DEPTH
    ({"reward": "final"}, "parameter 'reward' must be one of intermediate, terminal, got 'final'"),
    ({"lr": 0.0}, "parameter 'lr' must be > 0, got 0.0"),
    ({"clip_grad": -0.5}, "parameter 'clip_grad' must be >= 0.0, got -0.5"),
    ({"discount": 1.5}, "parameter 'discount' must be in [0.0, 1.0], got 1.5"),
    ({"batch": 2.5}, "parameter 'batch' must be int, got 2.5"),
    ({"normalize_advantages": 1}, "parameter 'normalize_advantages' must be bool, got 1"),
    ({"grouping": "layers"}, "parameter 'grouping' must be one of merge, units, ops, got 'layers'"),
    ({"learning_rate": 0.1}, "has no parameter 'learning_rate' (parameters: groups, grouping,"),
])
def test_bad_values_are_one_sentence_errors(params, message):
    with pytest.raises(SpecError) as err:
        make_config("placeto", params)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_ints_are_accepted_for_floats_and_stored_as_floats():
    assert make_config("placeto", {"lr": 1}).lr == 1.0 and isinstance(make_config("placeto", {"lr": 1}).lr, float)
    assert make_config("placeto", {"clip_grad": 0}).clip_grad == 0.0  # 0: no clipping
    with pytest.raises(ValueError, match="parameter 'batch'"):  # the dataclass checks itself too
        learned_placers()["placeto"].config(batch=0)


@dataclass
class ToyConfig(LearnedConfig):
    width: int = param(4, "toy width", "ours: a test", low=1)


class ToyAgent(Agent):
    rollout = advantages = accumulate = merge = place = state_dict = load_state_dict = None  # not used here

    def __init__(self, num_devices, config, *, seed=0, tasks=()):
        self.num_devices, self.config = num_devices, config


PLACER = LearnedPlacerInfo("toy", "a toy: for the test", ToyConfig, ToyAgent, episodes=7)


def test_a_new_placer_is_one_line_in_packages(monkeypatch):
    monkeypatch.setattr(registry, "PACKAGES", (*registry.PACKAGES, sys.modules[__name__]))
    assert learned_placers()["toy"].config is ToyConfig
    assert make_config("toy", {"width": 9}).width == 9
    with pytest.raises(SpecError, match="'width' must be >= 1"):
        make_config("toy", {"width": 0})
    agent = registry.make_agent("toy", 3, {"width": 5})
    assert isinstance(agent, ToyAgent) and agent.config.width == 5 and agent.num_devices == 3
    assert agent.curve_fields == {} and agent.fit_budget(None) is None and agent.end_training() is None  # no-op hooks
    factory, params = placer_factory(learned_placers()["toy"])
    assert list(params)[:3] == ["policy", "episodes", "runs_dir"] and params["episodes"] == 7
    assert params["width"] == 4 and set(params) >= {f.name for f in dataclasses.fields(ToyConfig)}
    placer = factory(width=6)
    assert placer.name == "toy" and placer.params == {"width": 6} and placer.episodes == 7


def test_a_learned_placer_takes_its_config_fields_as_placer_parameters():
    params = placer_parameters("placeto")
    assert params["episodes"] == learned_placers()["placeto"].episodes and params["discount"] == 0.5
    with pytest.raises(SpecError, match="placer 'placeto' has no parameter 'width'"):
        make_placer("placeto", width=3)
    assert make_placer("placeto", discount=0.9).params == {"discount": 0.9}


def test_listing_placers_and_naming_run_files_load_no_torch():
    code = ("import sys, policies.registry, policies.rl.core.run_files, policies.rl.registry as r; "
            "r.learned_placers(); assert 'placeto' in policies.registry.PLACERS; print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
