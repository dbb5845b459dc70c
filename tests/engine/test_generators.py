"""Tests for engine.generators: gen:NAME?k=v spec parsing and the random DAG generator."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from engine import generators
from engine.errors import SpecError
from engine.generators import from_spec, generator_descriptions, random_dag
from engine.graph.compgraph import CompGraph
from engine.limits import Bound
from engine.workloads.card import cards_of, generator


def spec_error(spec: str) -> str:
    with pytest.raises(SpecError) as info:
        from_spec(spec)
    msg = str(info.value)
    assert "\n" not in msg
    return msg


# ---- spec parsing ------------------------------------------------------------------------


def test_spec_parameters_are_converted_and_passed():
    g = from_spec("gen:random?ops=50&seed=3&degree=1.5&window=7")
    ref = random_dag(ops=50, seed=3, degree=1.5, window=7)
    assert g.content_hash == ref.content_hash
    assert g.name == "random-50-s3" and g.num_ops == 50


def test_spec_without_prefix_and_without_query():
    assert from_spec("random?ops=5").content_hash == random_dag(ops=5).content_hash
    g = from_spec("gen:random")
    assert g.num_ops == 1000 and g.name == "random-1000-s0"


def test_spec_name_is_url_decoded():
    assert from_spec("gen:random?ops=3&name=my%20graph").name == "my graph"
    assert from_spec("gen:random?ops=3&name=").name == "random-3-s0"


def test_generators_are_listed():
    assert "random" in generators.GENERATORS
    assert generator_descriptions()["random"].startswith("random layered DAG")


@pytest.mark.parametrize(("spec", "message"), [
    ("gen:nope", "unknown generator 'nope' (available: "),
    ("gen:random?opz=3", "gen:random has no parameter 'opz' (parameters: ops, degree, seed, window, name)"),
    ("gen:random?ops=abc", "gen:random: parameter 'ops' must be int, got 'abc'"),
    ("gen:random?ops=1.5", "gen:random: parameter 'ops' must be int, got '1.5'"),
    ("gen:random?ops=1e6", "gen:random: parameter 'ops' must be int, got '1e6'"),
    ("gen:random?ops=", "gen:random: parameter 'ops' must be int, got ''"),
    ("gen:random?degree=two", "gen:random: parameter 'degree' must be float, got 'two'"),
    ("gen:random?ops=0", "gen:random: ops must be >= 1, got 0"),
    ("gen:random?ops=-4", "gen:random: ops must be >= 1, got -4"),
    ("gen:random?degree=-0.5", "gen:random: degree must be >= 0, got -0.5"),
    ("gen:random?degree=nan", "gen:random: degree must be a finite number, got nan"),
    ("gen:random?degree=inf", "gen:random: degree must be a finite number, got inf"),
    ("gen:random?window=0", "gen:random: window must be >= 1, got 0"),
    ("gen:random?seed=-1", "gen:random: seed must be >= 0, got -1"),
    ("gen:random?ops=3&degree=1e30",
     "gen:random: degree 1e+30 is too large: ops × degree = 3e+30 edges, beyond the limit of 50,000,000"),
])
def test_spec_errors(spec, message):
    msg = spec_error(spec)
    if message.endswith("(available: "):
        assert msg.startswith(message) and "random" in msg
    else:
        assert msg == message


def test_bool_and_str_parameters(monkeypatch):
    monkeypatch.setattr(generators, "GENERATORS", dict(generators.GENERATORS))
    seen = {}

    @generator("flagged", "test generator")
    def flagged(flag: bool = False, label: str = "x") -> CompGraph:
        seen.update(flag=flag, label=label)
        return CompGraph(label, ["o"], compute_any=[1.0])

    generators.GENERATORS[flagged.card.name] = flagged.card

    for text, value in [("1", True), ("true", True), ("YES", True), ("0", False), ("False", False), ("no", False)]:
        from_spec(f"gen:flagged?flag={text}&label=L")
        assert seen == {"flag": value, "label": "L"}
    assert spec_error("gen:flagged?flag=maybe") == "gen:flagged: parameter 'flag' must be bool, got 'maybe'"


# ---- the random DAG ----------------------------------------------------------------------


def test_random_dag_is_deterministic_and_seeded():
    assert random_dag(ops=200, seed=5).content_hash == random_dag(ops=200, seed=5).content_hash
    assert random_dag(ops=200, seed=5).content_hash != random_dag(ops=200, seed=6).content_hash


def test_random_dag_documented_ranges():
    window = 10
    g = random_dag(ops=5000, degree=3.0, seed=1, window=window)
    assert g.op_names[:3] == ("op0000000", "op0000001", "op0000002") and g.op_names[-1] == "op0004999"
    assert g.kinds == () and (g.compute_any >= 1e-6).all() and (g.compute_any <= 100e-6).all()
    assert (g.output_bytes >= 1_000).all() and (g.output_bytes < 1_000_000).all()
    assert (g.persistent_bytes >= 0).all() and (g.persistent_bytes < 4_000_000).all()
    assert (g.output_bytes == np.round(g.output_bytes)).all()
    # each edge comes from one of the `window` ops just before its consumer
    gap = g.edge_dst - g.edge_src
    assert (gap >= 1).all() and (gap <= window).all()
    # edges carry the producer's output (parallel draws are merged: a multiple of it)
    ratio = g.edge_bytes / g.output_bytes[g.edge_src]
    assert (ratio == np.round(ratio)).all() and (ratio >= 1).all()
    assert g.predecessors(0).tolist() == []
    assert nx.is_directed_acyclic_graph(g.to_networkx())


def test_degree_zero_has_no_edges_and_window_one_is_a_chain():
    assert random_dag(ops=100, degree=0.0).num_edges == 0
    # P(no input) = exp(-40) per op: every op after the first takes op i-1 as its input
    g = random_dag(ops=300, degree=40.0, window=1, seed=2)
    assert g.edge_src.tolist() == list(range(299)) and g.edge_dst.tolist() == list(range(1, 300))


def test_mean_in_degree_before_merging_is_close_to_degree():
    # merged parallel edges keep their multiplicity in bytes, so the raw draw count is recoverable;
    # it is Poisson(3 * 19999): mean 59997, sd ~245 (0.4 %)
    g = random_dag(ops=20_000, degree=3.0, seed=4, window=10_000)
    raw = (g.edge_bytes / g.output_bytes[g.edge_src]).sum()
    assert raw / 19_999 == pytest.approx(3.0, rel=0.03)


def test_random_dag_argument_errors():
    with pytest.raises(SpecError, match="ops must be >= 1"):
        random_dag(ops=0)
    with pytest.raises(SpecError, match="window must be >= 1"):
        random_dag(window=0)


# ---- every parameter's declared bound (issue 54) ------------------------------------------------

generator_descriptions()  # registers every generator
BOUNDED = [(g.name, key, bound) for g in generators.GENERATORS.values() for key, bound in g.bounds.items()]


def test_every_numeric_parameter_of_every_generator_declares_a_bound():
    import inspect

    for gen in generators.GENERATORS.values():
        numeric = {k for k, p in inspect.signature(gen.make).parameters.items() if p.annotation in ("int", "float")}
        assert set(gen.bounds) == numeric, gen.name
        for bound in gen.bounds.values():
            assert bound.low <= bound.ceiling(app=True) <= bound.high
    assert {(n, k) for n, k, _ in BOUNDED} >= {("nasnet", "batch"), ("inception-v3", "batch"), ("nmt", "batch"),
                                               ("rnnlm", "batch")}


@pytest.mark.parametrize(("name", "key", "bound"), BOUNDED, ids=[f"{n}-{k}" for n, k, _ in BOUNDED])
def test_a_value_beyond_a_bound_is_refused_in_one_line(name, key, bound):
    import inspect

    kind = {"int": int, "float": float}[inspect.signature(generators.GENERATORS[name].make).parameters[key].annotation]
    below = kind(bound.low - 1)
    with pytest.raises(SpecError) as err:
        from_spec(f"gen:{name}?{key}={below}")
    assert str(err.value) == f"gen:{name}: {key} must be >= {bound.low}, got {below!r}"
    if bound.high != float("inf"):
        above = kind(bound.high + 1)
        with pytest.raises(SpecError) as err:
            from_spec(f"gen:{name}?{key}={above}")
        assert str(err.value) == f"gen:{name}: {key}={above!r} is beyond the limit of {bound.high:,}"
    app = bound.ceiling(app=True)
    if app != float("inf"):
        with pytest.raises(SpecError) as err:
            generators.check_parameters(name, {key: kind(app + 1)}, app=True)
        assert str(err.value) == f"gen:{name}: {key}={kind(app + 1)!r} is beyond the app's limit of {app:,}"


def test_bounds_are_checked_before_the_generator_runs_on_every_call(monkeypatch):
    monkeypatch.setattr(generators, "GENERATORS", dict(generators.GENERATORS))
    calls = []

    @generator("bounded", "test generator",
              {"n": Bound(1, 10, app=5, structure=True), "m": Bound(1, 10, structure=True)})
    def bounded(n: int = 2, m: int = 2) -> CompGraph:
        calls.append((n, m))
        return CompGraph("b", ["o"], compute_any=[1.0])

    generators.GENERATORS[bounded.card.name] = bounded.card

    assert spec_error("gen:bounded?n=11") == "gen:bounded: n=11 is beyond the limit of 10"
    with pytest.raises(SpecError, match=r"^gen:bounded: n must be >= 1, got 0$"):
        bounded(n=np.int64(0))  # a direct call, a numpy integer: checked all the same
    assert calls == []
    from_spec("gen:bounded?n=10&m=10")  # each within its bound; their product 100 within GENERATOR_STRUCTURE
    assert calls == [(10, 10)]
    generators.check_parameters("bounded", {"n": 5, "m": 10}, app=True)
    with pytest.raises(SpecError, match=r"^gen:bounded: n=6 is beyond the app's limit of 5$"):
        generators.check_parameters("bounded", {"n": 6, "m": 1}, app=True)


def test_a_generator_must_declare_every_numeric_parameters_bound(monkeypatch):
    monkeypatch.setattr(generators, "GENERATORS", dict(generators.GENERATORS))
    with pytest.raises(TypeError, match="bounds must name each numeric parameter"):
        @generator("unbounded", "test generator", {"n": Bound(1, 10)})
        def unbounded(n: int = 1, batch: int = 1, label: str = "", flag: bool = False) -> CompGraph:
            raise AssertionError
    assert "unbounded" not in generators.GENERATORS


def test_a_huge_integer_is_one_short_line():
    msg = spec_error("gen:nmt?batch=" + "9" * 400)
    assert msg.startswith("gen:nmt: batch=99") and msg.endswith("is beyond the limit of 65,536") and len(msg) < 160


def test_the_registry_lists_every_workload_modules_cards_once():
    import types

    from engine.workloads import doppler, keras_models, placeto_families, recurrent
    listed = {name for m in (doppler, keras_models, placeto_families, recurrent) for name in cards_of(m)}
    assert set(generators.GENERATORS) == listed | {"random"}
    assert random_dag.card is generators.GENERATORS["random"]
    twice = types.ModuleType("twice")
    for fn in ("a", "b"):
        made = generator("same", "test generator")(lambda: CompGraph("x", ["o"], compute_any=[1.0]))
        made.__module__ = "twice"
        setattr(twice, fn, made)
    with pytest.raises(ValueError, match="two generators are called 'same'"):
        cards_of(twice)
