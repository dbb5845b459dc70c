"""Tests for engine.importers.networkx_formats (node-link JSON, GraphML, node-link export)."""

from __future__ import annotations

import json
import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.errors import GraphError
from engine.graph.compgraph import PHASES, CompGraph
from engine.graph.io import GRAPH_SCHEMA
from engine.importers.networkx_formats import (
    _is_graphml,
    _is_node_link,
    graph_from_node_link,
    graph_to_node_link,
    load_graphml,
)
from engine.specs import detect_format, load_graph


def doc() -> dict:
    return {
        "directed": True, "multigraph": False, "graph": {"name": "toy"},
        "nodes": [
            {"id": "a", "type": "MatMul", "compute": 0.25, "output_bytes": 100, "label": "ignored"},
            {"id": 7, "compute": {"gpu": 0.5, "cpu": 2.0}, "persistent_bytes": 8, "temp_bytes": 1.5,
             "colocate": "g", "device": None, "phase": "backward", "scope": "enc/l1"},
            {"id": "c", "compute_cpu": 1.0, "compute_tpu": 3},
            {"id": "d"},
        ],
        "links": [{"source": "a", "target": 7, "bytes": 40}, {"source": "a", "target": "c"},
                  {"source": 7, "target": "c", "bytes": 2.5, "key": 0}],
    }


def error(d) -> str:
    with pytest.raises(GraphError) as info:
        graph_from_node_link(d, source="t.json")
    msg = str(info.value)
    assert msg and "\n" not in msg
    return msg


def edges_of(g: CompGraph) -> dict:
    n = g.op_names
    triples = zip(g.edge_src.tolist(), g.edge_dst.tolist(), g.edge_bytes.tolist(), strict=True)
    return {(n[s], n[d]): b for s, d, b in triples}


def test_node_link_maps_attributes():
    g = graph_from_node_link(doc())
    assert g.name == "toy" and g.op_names == ("a", "7", "c", "d")
    assert g.op_compute(0) == 0.25 and g.op_compute(1) == {"gpu": 0.5, "cpu": 2.0}
    assert g.op_compute(2) == {"cpu": 1.0, "tpu": 3.0}
    assert g.op_compute(3) == 0.0  # no compute attribute: 0 on every kind
    assert g.output_bytes.tolist() == [100, 0, 0, 0] and g.persistent_bytes.tolist() == [0, 8, 0, 0]
    assert g.temp_bytes.tolist() == [0, 1.5, 0, 0]
    assert g.op_types == ("MatMul", "", "", "") and g.colocate == (None, "g", None, None)
    assert g.phase == (None, "backward", None, None) and g.scope == ("", "enc/l1", "", "")
    assert edges_of(g) == {("a", "7"): 40, ("a", "c"): 100, ("7", "c"): 2.5}  # a -> c defaults to output_bytes


def test_multigraph_parallel_edges_add_up_and_edges_key_is_accepted():
    d = doc()
    d["edges"] = [*d.pop("links"), {"source": "a", "target": 7, "bytes": 2}]
    d["multigraph"] = True
    assert edges_of(graph_from_node_link(d))[("a", "7")] == 42


@pytest.mark.parametrize(("mutate", "pattern"), [
    (lambda d: d.update(directed=False), "not directed"),
    (lambda d: d.pop("directed"), "not directed"),
    (lambda d: d.update(nodes={}), "'nodes' must be a list"),
    (lambda d: d.update(nodes=[]), "no nodes"),
    (lambda d: d.update(links=5), "'links' must be a list"),
    (lambda d: d["nodes"][0].pop("id"), "node #0 must be an object with an 'id'"),
    (lambda d: d["nodes"][0].update(id=[1]), "node #0 needs an 'id' that is a string or a number"),
    (lambda d: d["nodes"][3].update(id="a"), "duplicate node id 'a'"),
    (lambda d: d["nodes"][3].update(id=7), "duplicate node id '7'"),
    (lambda d: d["nodes"][0].update(compute="fast"), "op 'a': compute must be a number"),
    (lambda d: d["nodes"][0].update(compute=True), "op 'a': compute must be a number"),
    (lambda d: d["nodes"][0].update(compute=-1), "op 'a': compute must be a finite number >= 0"),
    (lambda d: d["nodes"][0].update(compute={}), "compute map is empty"),
    (lambda d: d["nodes"][0].update(compute_gpu=1), "not both"),
    (lambda d: d["nodes"][2].update(compute_cpu=math.nan), "got nan"),
    (lambda d: d["nodes"][0].update(output_bytes="10"), "output_bytes must be a number"),
    (lambda d: d["nodes"][0].update(phase="sideways"), "phase must be one of"),
    (lambda d: d["nodes"][0].update(scope=3), "scope must be a string"),
    (lambda d: d["links"].append({"source": "a", "target": "zz"}), "unknown node 'zz'"),
    (lambda d: d["links"].append({"source": "a"}), "'source' and 'target'"),
    (lambda d: d["links"].append({"source": "c", "target": "a"}), "cycle"),
    (lambda d: d["links"].append({"source": "c", "target": "d", "bytes": "x"}), "bytes must be a number"),
])
def test_malformed_node_link_names_the_problem(mutate, pattern):
    d = doc()
    mutate(d)
    assert pattern in error(d)


def test_export_round_trips_and_networkx_reads_it():
    g = graph_from_node_link(doc())
    out = graph_to_node_link(g)
    json.dumps(out, allow_nan=False)
    back = graph_from_node_link(json.loads(json.dumps(out)))
    assert back.content_hash == g.content_hash
    nxg = nx.node_link_graph(out, edges="edges")
    assert nxg.is_directed() and set(nxg.nodes) == set(g.op_names) and nxg.number_of_edges() == g.num_edges
    assert nxg.nodes["7"]["compute"] == {"gpu": 0.5, "cpu": 2.0}


def test_files_are_detected_and_loaded(tmp_path):
    f = tmp_path / "g.json"
    f.write_text(json.dumps(doc()))
    assert detect_format(f).name == "node-link"
    assert load_graph(f).op_names == ("a", "7", "c", "d")
    assert not _is_node_link(json.dumps({"schema": GRAPH_SCHEMA, "nodes": [], "edges": []}).encode())
    assert not _is_node_link(b'{"maxSizePerFPGA": 1, "nodes": [{"supportedOnFpga": 1}], "edges": []}')
    assert _is_node_link(b'{"directed": true, "multigraph": false, "graph": {}, "nodes": [{"id": 1')
    assert _is_graphml(b'\xef\xbb\xbf<?xml version="1.0"?>\n<graphml xmlns="x">')
    assert not _is_graphml(b'{"graphml": 1}')


GRAPHML = """<?xml version="1.0" encoding="UTF-8"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <key id="c" for="node" attr.name="compute" attr.type="double"/>
  <key id="cg" for="node" attr.name="compute_gpu" attr.type="double"/>
  <key id="ob" for="node" attr.name="output_bytes" attr.type="long"/>
  <key id="ph" for="node" attr.name="phase" attr.type="string"/>
  <key id="pb" for="node" attr.name="persistent_bytes" attr.type="string"/>
  <key id="b" for="edge" attr.name="bytes" attr.type="double"/>
  <graph id="G" edgedefault="{default}">
    <node id="x"><data key="c">0.5</data><data key="ob">64</data><data key="ph">forward</data></node>
    <node id="y"><data key="cg">0.25</data><data key="pb">12.5</data></node>
    <node id="z"/>
    <edge source="x" target="y"><data key="b">16</data></edge>
    <edge source="x" target="z"/>
    {extra}
  </graph>
</graphml>
"""


def test_graphml_loads_with_typed_and_text_numbers(tmp_path):
    f = tmp_path / "net.graphml"
    f.write_text(GRAPHML.format(default="directed", extra=""))
    assert detect_format(f).name == "graphml"
    g = load_graph(f)
    assert g.name == "net" and g.op_names == ("x", "y", "z")
    assert g.op_compute(0) == 0.5 and g.op_compute(1) == {"gpu": 0.25} and g.op_compute(2) == 0.0
    assert g.output_bytes.tolist() == [64, 0, 0] and g.persistent_bytes.tolist() == [0, 12.5, 0]
    assert g.phase == ("forward", None, None)
    assert edges_of(g) == {("x", "y"): 16, ("x", "z"): 64}


@pytest.mark.parametrize(("default", "extra", "pattern"), [
    ("undirected", "", "undirected"),
    ("directed", '<edge source="z" target="x"/>', "cycle"),
    ("directed", '<edge source="y" target="x"><data key="b">-1</data></edge>', "bytes must be a finite"),
    ("directed", '<node id="w"><data key="pb">lots</data></node>', "persistent_bytes must be a number"),
    ("directed", '<node id="w"><data key="c">abc</data></node>', "not valid GraphML"),
    ("directed", "<node", "not valid GraphML"),
])
def test_graphml_errors_are_one_sentence(tmp_path, default, extra, pattern):
    f = tmp_path / "bad.graphml"
    f.write_text(GRAPHML.format(default=default, extra=extra))
    with pytest.raises(GraphError, match=pattern) as info:
        load_graphml(f)
    assert "\n" not in str(info.value)


def test_graphml_written_by_networkx_loads(tmp_path):
    h = nx.DiGraph(name="nxg")
    h.add_node("in", compute=1.0, output_bytes=10, type="Input")
    h.add_node("out", compute_gpu=0.5, compute_cpu=5.0)
    h.add_edge("in", "out", bytes=3)
    f = tmp_path / "h.graphml"
    nx.write_graphml(h, f)
    g = load_graph(f)
    assert g.name == "nxg" and g.op_compute(1) == {"gpu": 0.5, "cpu": 5.0} and edges_of(g) == {("in", "out"): 3}
    assert g.op_types == ("Input", "")


# ---- properties ---------------------------------------------------------------------------

NAMES = st.text(alphabet="abcdefghij0123456789_/.:-' é", min_size=1, max_size=6)
NUM = st.floats(0, 1e12, allow_nan=False) | st.integers(0, 10**12)


@st.composite
def graphs(draw) -> CompGraph:
    names = draw(st.lists(NAMES, min_size=1, max_size=7, unique=True))
    n = len(names)
    kinds = ("gpu", "cpu")
    any_ = []
    by = np.full((n, 2), np.nan)
    for i in range(n):
        if draw(st.booleans()):
            any_.append(float(draw(NUM)))
        else:
            any_.append(np.nan)
            ks = draw(st.lists(st.sampled_from([0, 1]), min_size=1, max_size=2, unique=True))
            for k in ks:
                by[i, k] = float(draw(NUM))
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=10))
    edges = sorted({(min(a, b), max(a, b)) for a, b in pairs if a != b})
    opt_str = st.none() | NAMES
    return CompGraph(
        draw(NAMES), names, compute_any=np.array(any_), compute_by_kind=by, kinds=kinds,
        output_bytes=np.array([float(draw(NUM)) for _ in names]),
        persistent_bytes=np.array([float(draw(NUM)) for _ in names]),
        temp_bytes=np.array([float(draw(NUM)) for _ in names]),
        edge_src=[a for a, _ in edges], edge_dst=[b for _, b in edges],
        edge_bytes=np.array([float(draw(NUM)) for _ in edges]),
        op_types=[draw(st.sampled_from(["", "MatMul", "Relu"])) for _ in names],
        colocate=[draw(opt_str) for _ in names], pin=[draw(opt_str) for _ in names],
        phase=[draw(st.none() | st.sampled_from(PHASES)) for _ in names],
        scope=[draw(st.sampled_from(["", "enc/l1", "dec"])) for _ in names],
    )


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs())
def test_node_link_export_import_preserves_everything(g):
    back = graph_from_node_link(json.loads(json.dumps(graph_to_node_link(g))))
    assert back.content_hash == g.content_hash
    assert back.name == g.name and back.op_names == g.op_names and back.kinds == g.kinds
    assert (back.colocate, back.pin, back.phase, back.scope, back.op_types) == (
        g.colocate, g.pin, g.phase, g.scope, g.op_types)
    np.testing.assert_array_equal(back.edge_bytes, g.edge_bytes)


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-5, 10**400) | st.floats() | st.text(max_size=4),
                           lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
                           max_leaves=6)
KEYS = ["id", "compute", "compute_gpu", "output_bytes", "phase", "colocate", "source", "target", "bytes",
        "directed", "nodes", "links", "graph"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_corrupted_node_link_raises_graph_error_only(data):
    d = doc()
    for _ in range(data.draw(st.integers(1, 3))):
        items = d.get(data.draw(st.sampled_from(["nodes", "links", ""])))
        target = data.draw(st.sampled_from(items)) if isinstance(items, list) and items else d
        if not isinstance(target, dict):
            continue
        key = data.draw(st.sampled_from(KEYS))
        if data.draw(st.booleans()):
            target.pop(key, None)
        else:
            target[key] = data.draw(JSON_VALUES)
    try:
        graph_from_node_link(d)
    except GraphError as exc:
        assert str(exc) and "\n" not in str(exc)


def test_a_key_holding_a_newline_is_quoted_with_the_newline_escaped():
    """The draw that failed a fresh clone's ``make test`` (issue 54): a compute map keyed ``"\\n"``."""
    d = doc()
    d["nodes"][0]["compute"] = {"\n": None}
    assert error(d) == "op 'a': compute on '\\n' must be a number, got None"


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 1200), st.sampled_from(["json", "graphml"]))
def test_truncated_files_raise_graph_error(tmp_path, cut, fmt):
    text = json.dumps(doc()) if fmt == "json" else GRAPHML.format(default="directed", extra="")
    f = tmp_path / f"t.{fmt}"
    f.write_text(text[:cut] if cut < len(text) - 12 else text[:-12])
    with pytest.raises(GraphError) as info:
        load_graph(f)
    assert "\n" not in str(info.value)
