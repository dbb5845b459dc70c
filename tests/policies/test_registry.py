"""Tests for the placer registry (policies.registry): listing, building, error messages."""

from __future__ import annotations

import pytest

from engine.errors import SpecError
from policies.base import PlacerInfo
from policies.registry import PLACERS, make_placer, placer_descriptions, placer_parameters

TRIVIAL = ("single-device", "cpu-only", "random", "round-robin")


def test_trivial_placers_are_registered_with_descriptions():
    d = placer_descriptions()
    assert set(TRIVIAL) <= set(d)
    assert list(d) == list(PLACERS)  # the listing keeps registration order
    for name in TRIVIAL:
        assert isinstance(d[name], str) and d[name].strip() and "\n" not in d[name]
        assert PLACERS[name].family == "trivial"
    assert "Mirhoseini §4.2" in d["single-device"]


@pytest.mark.parametrize("name", TRIVIAL)
def test_make_placer_builds_named_placer(name):
    placer = make_placer(name)
    assert placer.name == name
    assert callable(placer.place)
    assert placer_parameters(name) == {}  # the trivial placers take no parameters


def test_unknown_placer_message():
    with pytest.raises(SpecError) as err:
        make_placer("hdp-ultra")
    available = ", ".join(sorted(PLACERS))
    assert str(err.value) == f"unknown placer 'hdp-ultra' (available: {available})"


def test_unknown_parameter_message():
    with pytest.raises(SpecError) as err:
        make_placer("random", temperature=0.5)
    assert str(err.value) == "placer 'random' has no parameter 'temperature'"


def test_parameters_of_a_registered_factory(monkeypatch):
    built = []

    class Dummy:
        name = "dummy"

        def __init__(self, alpha: float = 0.1, steps: int = 3) -> None:
            built.append((alpha, steps))

    monkeypatch.setitem(PLACERS, "dummy", PlacerInfo("dummy", "for this test", Dummy, "test",
                                                     {"alpha": 0.1, "steps": 3}))
    assert placer_parameters("dummy") == {"alpha": 0.1, "steps": 3}
    make_placer("dummy", steps=7)
    assert built == [(0.1, 7)]
    with pytest.raises(SpecError) as err:
        make_placer("dummy", beta=1)
    assert str(err.value) == "placer 'dummy' has no parameter 'beta' (parameters: alpha, steps)"


def test_the_registry_holds_each_listed_modules_cards_and_every_learned_placer():
    import types

    from engine._discover import cards_of
    from policies import registry, trivial
    from policies.base import placer
    from policies.rl.registry import learned_placers

    listed = {name for m in registry.MODULES for name in cards_of([m], PlacerInfo, "placers")}
    assert set(PLACERS) == listed | set(learned_placers()) and not listed & set(learned_placers())
    assert PLACERS["round-robin"] is trivial.RoundRobin.card and PLACERS["round-robin"].family == "trivial"
    assert {PLACERS[n].family for n in learned_placers()} == {"learned"}
    twice = types.ModuleType("twice")
    for attr in ("A", "B"):
        cls = placer("same", "for this test", "test")(type(attr, (), {"__module__": "twice"}))
        setattr(twice, attr, cls)
    with pytest.raises(ValueError, match="two placers are called 'same'"):
        cards_of([twice], PlacerInfo, "placers")
