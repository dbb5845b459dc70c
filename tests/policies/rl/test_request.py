"""One training request (policies.rl.core.request): checked once without building a graph, written, read back
and trained as it is (``placelab train --request FILE``, what the app's Train page launches)."""

from __future__ import annotations

import json
import sys

import pytest
import torch
from rl_graphs import cluster_file, graph_file

from engine import generators
from engine.errors import GraphError, SpecError
from engine.store.runs import RunStore
from policies.rl.core.reinforce import Budget, StoppingRule
from policies.rl.core.request import TrainingRequest, build_request
from policies.rl.core.training_runs import run_training
from tests.cli.cli_run import run_cli

torch.set_num_threads(1)


@pytest.fixture
def unbuildable(monkeypatch):
    """gen:random that fails if built: a check that builds a graph fails the test."""
    import dataclasses
    import functools

    card = generators.GENERATORS["random"]

    @functools.wraps(card.make)  # the generator's own parameters, for the checks
    def never(**_):
        raise AssertionError("a request check built the graph")

    monkeypatch.setitem(generators.GENERATORS, "random", dataclasses.replace(card, make=never))


@pytest.mark.parametrize(("graphs", "params", "error", "message"), [
    ("gen:random?ops=0", {}, SpecError, "gen:random: ops must be >= 1, got 0"),
    ("gen:random?ops=10&bogus=1", {}, SpecError, "gen:random has no parameter 'bogus'"),
    ("gen:random?ops=10,bench:nothing", {}, SpecError, "unknown bundled workload 'nothing'"),
    ("gen:random?ops=10,family:nmt:later", {}, SpecError, "a family split is 'train' or 'test'"),
    ("/no/such/graph.json", {}, GraphError, "/no/such/graph.json: no such file"),
    ("gen:random?ops=10", {"bogus": 1}, SpecError, "learned placer 'placeto' has no parameter 'bogus'"),
])
def test_every_check_is_one_sentence_before_any_graph_is_built(unbuildable, graphs, params, error, message):
    with pytest.raises(error) as err:
        build_request("placeto", graphs, "k80x2", params=params)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_bad_budgets_placers_and_rewards_are_refused(unbuildable):
    for kwargs, message in [({"budget": Budget(episodes=0)}, "--episodes must be positive"),
                            ({"budget": Budget(seconds=-1.0)}, "--max-seconds must be positive"),
                            ({"reward": "sometimes"}, "reward must be one of"),
                            ({"reward": "measured", "workers": 2}, "cannot be combined with --workers")]:
        with pytest.raises(SpecError, match=message):
            build_request("placeto", "gen:random?ops=10", "k80x2", **kwargs)
    with pytest.raises(SpecError, match="'metis' is not a learned placer"):
        build_request("metis", "gen:random?ops=10", "k80x2")


def test_a_request_round_trips_through_its_file(tmp_path, unbuildable):
    request = build_request("placeto", "family:nmt:train", "k80x2",
                            params={"batch": 4}, seed=3, budget=Budget(episodes=5, seconds=60.0),
                            stopping=StoppingRule(10, 0.05), store=tmp_path / "runs", name="n", tags=["a"])
    assert len(request.specs) == 16 and all(s.startswith("gen:family-nmt?") for s in request.specs)  # App. A.3
    assert request.params == {"batch": 4, "groups": 160}  # the nmt family's own group count (Placeto §4)
    request.write(tmp_path / "request.json")
    back = TrainingRequest.read(tmp_path / "request.json")
    assert back.to_dict() == request.to_dict() == json.loads((tmp_path / "request.json").read_text())
    assert back.cluster.name == "k80x2" and back.budget.seconds == 60.0 and back.stopping_rule().window == 10


def test_a_damaged_request_file_is_one_line(tmp_path):
    path = tmp_path / "request.json"
    good = build_request("placeto", "gen:random?ops=10", "k80x2").to_dict()
    for text in ("{", json.dumps({"schema": "placelab.train-request/1"}), json.dumps([1, 2]),
                 json.dumps({**good, "budget": {"episodes": 5, "bogus\nkey": 1}}), json.dumps({**good, "cluster": {}})):
        path.write_text(text)
        with pytest.raises(SpecError, match=r"request\.json") as err:
            TrainingRequest.read(path)
        assert "\n" not in str(err.value)


def test_the_command_line_trains_a_request_as_it_is(tmp_path, capsys):
    runs = tmp_path / "runs"
    request = build_request("placeto", graph_file(tmp_path), cluster_file(tmp_path), params={"groups": None,
                            "batch": 2}, budget=Budget(episodes=4), store=runs, name="from a request")
    request.write(tmp_path / "request.json")
    code, out, err = run_cli(capsys, "train", "--request", str(tmp_path / "request.json"), "--json")
    assert code == 0, err
    run = RunStore(runs).load(json.loads(out.strip().splitlines()[-1])["run_id"])
    assert run.meta["name"] == "from a request" and run.read_table("learning_curve.csv")["episode"] == [1, 2, 3, 4]
    code, _, err = run_cli(capsys, "train", "--request", str(tmp_path / "request.json"), "--placer", "rnn",
                           "--episodes", "3")
    assert code == 2 and err.strip() == "error: --request holds the whole training: leave out --placer, --episodes"


def test_run_training_stores_what_the_request_says(tmp_path):
    request = build_request("placeto", graph_file(tmp_path), cluster_file(tmp_path),
                            params={"groups": None, "batch": 2}, budget=Budget(episodes=2), seed=5)
    out = run_training(request)
    assert out.run_id is None and out.episodes == 2  # not saved: no store in the request
    assert "policies.rl.core.request" in sys.modules
