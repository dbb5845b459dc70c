"""Tests for the placer registry (policies.base): listing, building, error messages."""

from __future__ import annotations

import pytest

from engine.errors import SpecError
from policies import PLACERS, make_placer, placer_descriptions
from policies.base import PlacerInfo, placer_parameters

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
