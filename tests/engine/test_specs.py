"""Multi-graph specs: comma lists and Placeto families (engine.specs.expand_graph_specs)."""

import pytest

from engine.errors import SpecError
from engine.specs import expand_graph_specs, load_graphs
from engine.workloads.placeto_families import family


def test_family_expands_to_its_fixed_split():
    fam = family("cifar10")
    assert expand_graph_specs("family:cifar10:train") == fam.train
    assert expand_graph_specs("family:cifar10:test") == fam.test
    # the whole family is train then test: 16 + 16 distinct specs
    whole = expand_graph_specs("family:cifar10")
    assert whole == fam.train + fam.test and len(set(whole)) == 32


def test_comma_list_keeps_order_and_skips_blanks():
    specs = expand_graph_specs(" gen:chainmm , ,gen:random?ops=5, family:ptb:test")
    assert specs[:2] == ["gen:chainmm", "gen:random?ops=5"]
    assert specs[2:] == family("ptb").test


@pytest.mark.parametrize(("spec", "message"), [
    ("family:foo", "unknown graph family 'family:foo' (available: nmt, ptb, cifar10)"),
    ("family:nmt:dev", "'family:nmt:dev': a family split is 'train' or 'test', got 'dev'"),
    (" , ", "graph spec ' , ' names no graph"),
])
def test_bad_specs(spec, message):
    with pytest.raises(SpecError) as info:
        expand_graph_specs(spec)
    assert str(info.value) == message


def test_load_graphs_builds_each_graph():
    graphs = load_graphs("gen:random?ops=7&seed=1,gen:random?ops=9&seed=2")
    assert [(g.name, g.num_ops) for g in graphs] == [("random-7-s1", 7), ("random-9-s2", 9)]
