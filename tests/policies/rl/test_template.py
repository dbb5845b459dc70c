"""The learned-placer kit: a fourth placer is ``policies/rl/template/`` copied, its card renamed, plus one line in
the registry's ``PACKAGES``; the copy trains from the command line under its card's name, learns (its verdict
compares its entropy with uniform's: the health check finds it by that name), and its run reloads."""

from __future__ import annotations

import importlib
import json
import math
import shutil
import sys
from pathlib import Path

import pytest

import policies.rl.template
from placelab.cli import run_command
from policies.rl import registry

TEMPLATE = Path(policies.rl.template.__file__).parent


@pytest.fixture
def fourth_placer(tmp_path, monkeypatch):
    """The template copied to a package of its own, its card renamed (the guide's one edit besides the
    description: the card is the only place a placer's name is written), listed in the registry's ``PACKAGES``."""
    copy = tmp_path / "fourth_placer"
    shutil.copytree(TEMPLATE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    card = copy / "__init__.py"
    assert [p.name for p in copy.glob("*.py") if '"template"' in p.read_text()] == ["__init__.py"]
    card.write_text(card.read_text().replace('LearnedPlacerInfo("template"', 'LearnedPlacerInfo("fourth"'))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "PACKAGES", (*registry.PACKAGES, importlib.import_module("fourth_placer")))
    yield "fourth"
    for name in [m for m in sys.modules if m == "fourth_placer" or m.startswith("fourth_placer.")]:
        del sys.modules[name]


def test_the_template_is_no_registered_placer():
    assert "template" not in registry.learned_placers()


def test_a_copied_template_trains_learns_and_reloads(fourth_placer, tmp_path, capsys, one_torch_thread):
    assert registry.learned_placers()[fourth_placer].agent.__module__ == "fourth_placer.agent"
    assert "template" not in registry.learned_placers()
    runs = tmp_path / "runs"
    graph = "bench:gnmt_inference"  # 96 layers in a chain of LSTM steps: contiguous splits beat random ones
    assert run_command(["train", "--placer", fourth_placer, "--graphs", graph, "--cluster", "k80x2",
                        "--episodes", "240", "--seed", "0", "--save", "--runs-dir", str(runs), "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    health = out["learning_health"]
    # it learns: the policy's entropy falls and it beats as many random placements on the same simulator
    # (seed 0 measured: entropy 90% -> 11% of uniform; best 182.6 ms vs random search's 358.1 ms)
    assert health["verdict"] == "learned", health["summary"]
    assert out["episodes"] == 240  # exactly as asked (8 samples per update: 30 updates)
    # its uniform reference comes from the card's name: the mean over op groups of ln(feasible devices)
    assert health["uniform_basis"] == "mean over op groups of ln(feasible devices)", health["uniform_basis"]
    assert 0 < health["uniform_entropy"] <= math.log(2), health["summary"]
    assert health["entropy_last_ratio"] < 0.5 * health["entropy_first_ratio"], health["summary"]
    assert health["compared_on"] == "greedy" and health["greedy_ratio"] < 0.95, health["summary"]
    assert health["random_ratio"] < 0.9, health["summary"]
    assert run_command(["eval", out["run_id"], "--graphs", graph, "--cluster", "k80x2", "--runs-dir", str(runs),
                        "--json"]) == 0
    evaluated = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert evaluated["results"][0]["makespan_s"] < health["random_search"][0]["random_makespan_s"], evaluated


def test_its_parameters_are_validated_like_any_placer(fourth_placer):
    assert registry.make_config(fourth_placer, {"buckets": 4}).buckets == 4
    with pytest.raises(Exception, match="'buckets' must be in \\[1, 4096\\], got 0"):
        registry.make_config(fourth_placer, {"buckets": 0})
