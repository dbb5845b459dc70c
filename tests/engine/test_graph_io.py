"""Tests for engine.graph.io (placelab.graph/1) and the JSON reading of engine.jsonio."""

from __future__ import annotations

import ast
import copy
import importlib.util
import itertools
import json
import math
import os
import tempfile
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import jsonio
from engine.errors import GraphError
from engine.graph.compgraph import PHASES
from engine.graph.io import GRAPH_SCHEMA, graph_from_dict, graph_to_dict, load_graph_json, save_graph
from engine.jsonio import dumps, loads, read_json_file

HAS_ORJSON = importlib.util.find_spec("orjson") is not None
KINDS = ("gpu", "cpu", "tpu")
# no '>' (so ' -> ' never occurs inside a name) and no newline: messages stay one line and cycles split
NAME_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789_/:.-' é"


def toy() -> dict:
    """The CONTRACTS §1 example, plus a third op c (a -> c, b -> c)."""
    return {
        "schema": GRAPH_SCHEMA,
        "name": "toy",
        "ops": [
            {"name": "a", "type": "MatMul", "compute": 0.0001, "output_bytes": 76000},
            {"name": "b", "type": "Relu", "compute": {"gpu": 0.00002, "cpu": 0.0003},
             "output_bytes": 7600, "persistent_bytes": 0, "temp_bytes": 0,
             "colocate": "layer1", "device": None, "phase": "forward", "scope": "encoder/layer1"},
            {"name": "c", "compute": {"cpu": 0.5}, "persistent_bytes": 12, "temp_bytes": 3.5},
        ],
        "edges": [{"src": "a", "dst": "b", "bytes": 76000}, {"src": "a", "dst": "c"},
                  {"src": "b", "dst": "c", "bytes": 1}],
    }


def graph_error(doc, **kw) -> str:
    with pytest.raises(GraphError) as info:
        graph_from_dict(doc, **kw)
    msg = str(info.value)
    assert "\n" not in msg and msg.strip() == msg and msg
    return msg


# ---- the contract's example, by hand -----------------------------------------------------


def test_toy_document_parses_to_the_documented_values():
    g = graph_from_dict(toy())
    assert g.name == "toy" and g.op_names == ("a", "b", "c")
    assert g.op_types == ("MatMul", "Relu", "")
    np.testing.assert_array_equal(g.compute_for_kind("gpu"), [0.0001, 0.00002, np.nan])
    np.testing.assert_array_equal(g.compute_for_kind("cpu"), [0.0001, 0.0003, 0.5])
    np.testing.assert_array_equal(g.compute_for_kind("tpu"), [0.0001, np.nan, np.nan])
    assert g.output_bytes.tolist() == [76000.0, 7600.0, 0.0]
    assert g.persistent_bytes.tolist() == [0.0, 0.0, 12.0]
    assert g.temp_bytes.tolist() == [0.0, 0.0, 3.5]
    assert g.colocate == (None, "layer1", None)
    assert g.pin == (None, None, None)
    assert g.phase == (None, "forward", None)
    assert g.scope == ("", "encoder/layer1", "")
    # a -> c has no bytes: defaults to a's output_bytes (76000)
    assert list(zip(g.edge_src.tolist(), g.edge_dst.tolist(), g.edge_bytes.tolist(), strict=True)) == [
        (0, 1, 76000.0), (0, 2, 76000.0), (1, 2, 1.0)]


def test_toy_document_writes_back_without_defaults():
    d = graph_to_dict(graph_from_dict(toy()))
    assert d == {
        "schema": GRAPH_SCHEMA,
        "name": "toy",
        "ops": [
            {"name": "a", "type": "MatMul", "compute": 0.0001, "output_bytes": 76000},
            {"name": "b", "type": "Relu", "compute": {"gpu": 0.00002, "cpu": 0.0003},
             "output_bytes": 7600, "colocate": "layer1", "phase": "forward", "scope": "encoder/layer1"},
            {"name": "c", "compute": {"cpu": 0.5}, "persistent_bytes": 12, "temp_bytes": 3.5},
        ],
        "edges": [{"src": "a", "dst": "b", "bytes": 76000}, {"src": "a", "dst": "c", "bytes": 76000},
                  {"src": "b", "dst": "c", "bytes": 1}],
    }


def test_name_defaults_to_the_source_and_edges_to_empty():
    g = graph_from_dict({"schema": GRAPH_SCHEMA, "ops": [{"name": "x", "compute": 1}]}, source="f.json")
    assert g.name == "f.json" and g.num_edges == 0 and g.compute_any.tolist() == [1.0]


def test_save_and_load_file_round_trip(tmp_path):
    g = graph_from_dict(toy())
    path = tmp_path / "toy.json"
    save_graph(g, path)
    assert json.loads(path.read_text()) == graph_to_dict(g)
    h = load_graph_json(path)
    assert h.content_hash == g.content_hash and h.name == "toy"
    assert [p.name for p in tmp_path.iterdir()] == ["toy.json"]  # no temp file left behind


def test_200k_op_document_parses():
    n = 200_000
    ops = [{"name": f"o{i}", "compute": (i % 7 + 1) * 1e-6, "output_bytes": i} for i in range(n)]
    ops[5]["compute"] = {"gpu": 2e-6, "cpu": 9e-6}
    edges = [{"src": f"o{i}", "dst": f"o{i + 1}"} for i in range(n - 1)]
    edges += [{"src": f"o{i}", "dst": f"o{i + 3}", "bytes": 1} for i in range(0, n - 3, 5)]
    g = graph_from_dict({"schema": GRAPH_SCHEMA, "name": "big", "ops": ops, "edges": edges})
    assert g.num_ops == n
    # n - 1 chain edges + one skip edge for i = 0, 5, ..., 199995 (i + 3 < n): 40000 of them
    assert g.num_edges == (n - 1) + 40_000
    assert g.index["o123456"] == 123456
    assert g.compute_any[123456] == (123456 % 7 + 1) * 1e-6
    assert math.isnan(g.compute_any[5]) and g.op_compute(5) == {"gpu": 2e-6, "cpu": 9e-6}
    # chain edge o10 -> o11 carries o10's output (10 bytes); skip edge o10 -> o13 carries 1 byte
    assert g.successors(10).tolist() == [11, 13]
    e = g.succ.edge[g.succ.ptr[10]:g.succ.ptr[11]]
    assert g.edge_bytes[e].tolist() == [10.0, 1.0]
    assert g.edge_bytes.sum() == sum(range(n - 1)) + 40_000


# ---- representative error messages -------------------------------------------------------


def with_op(i: int, **fields) -> dict:
    doc = toy()
    for k, v in fields.items():
        if v is _DELETE:
            del doc["ops"][i][k]
        else:
            doc["ops"][i][k] = v
    return doc


_DELETE = object()
S = f"expected schema '{GRAPH_SCHEMA}'"


@pytest.mark.parametrize(("doc", "message"), [
    ([], f"graph: expected a JSON object with schema '{GRAPH_SCHEMA}'"),
    ({"ops": []}, f"graph: {S}, found no 'schema' field"),
    ({**toy(), "schema": "placelab.graph/2"}, f"graph: {S}, found schema 'placelab.graph/2'"),
    ({**toy(), "schema": 1}, f"graph: {S}, found schema 1"),
    ({**toy(), "ops": {"a": 1}}, "graph: 'ops' must be a list of ops"),
    ({**toy(), "ops": []}, "graph: graph has no ops"),
    ({**toy(), "edges": {}}, "graph: 'edges' must be a list"),
    ({**toy(), "name": 3}, "graph: 'name' must be a string"),
    ({**toy(), "ops": [toy()["ops"][0], ["b"]]}, "graph: op #1 must be a JSON object"),
    (with_op(1, name=_DELETE), "graph: op #1 needs a non-empty string 'name'"),
    (with_op(1, name=""), "graph: op #1 needs a non-empty string 'name'"),
    (with_op(1, name=5), "graph: op #1 needs a non-empty string 'name'"),
    (with_op(1, compute=_DELETE), "op 'b' has no 'compute'"),
    (with_op(1, compute=None), "op 'b' has no 'compute'"),
    (with_op(1, compute=True),
     "op 'b': compute must be a number or a map of device kind to seconds, got True"),
    (with_op(1, compute={}), "op 'b': compute must be a number or a map of device kind to seconds, got {}"),
    (with_op(1, compute="1"), "op 'b': compute must be a number or a map of device kind to seconds, got '1'"),
    (with_op(1, compute={"gpu": False}), "op 'b': compute on 'gpu' must be a number, got False"),
    (with_op(1, compute={"gpu": None}), "op 'b': compute on 'gpu' must be a number, got None"),
    (with_op(1, compute={"gpu": float("nan")}), "op 'b': compute on 'gpu' must be a finite number >= 0, got nan"),
    (with_op(1, compute={"gpu": 1, "cpu": -2}), "op 'b': compute on 'cpu' must be a finite number >= 0, got -2.0"),
    (with_op(1, compute={"cpu": float("inf")}), "op 'b': compute on 'cpu' must be a finite number >= 0, got inf"),
    (with_op(1, compute=float("nan")), "op 'b': compute must be a finite number >= 0, got nan"),
    (with_op(1, compute=-1), "op 'b': compute must be a finite number >= 0, got -1.0"),
    (with_op(1, compute=float("-inf")), "op 'b': compute must be a finite number >= 0, got -inf"),
    (with_op(1, compute=10**400), "op 'b': compute must be a finite number >= 0, got inf"),
    (with_op(1, compute={"gpu": 10**400}), "op 'b': compute on 'gpu' must be a finite number >= 0, got inf"),
    (with_op(1, output_bytes=False), "op 'b': output_bytes must be a number, got False"),
    (with_op(1, output_bytes="10"), "op 'b': output_bytes must be a number, got '10'"),
    (with_op(1, output_bytes=-3), "op 'b': output_bytes must be a finite number >= 0, got -3.0"),
    (with_op(1, persistent_bytes=float("nan")), "op 'b': persistent_bytes must be a finite number >= 0, got nan"),
    (with_op(1, temp_bytes=float("inf")), "op 'b': temp_bytes must be a finite number >= 0, got inf"),
    (with_op(1, temp_bytes=-(10**400)), "op 'b': temp_bytes must be a finite number >= 0, got inf"),
    (with_op(1, type=3), "op 'b': type must be a string or null, got 3"),
    (with_op(1, colocate=["g"]), "op 'b': colocate must be a string or null, got ['g']"),
    (with_op(1, device=0), "op 'b': device must be a string or null, got 0"),
    (with_op(1, phase="fwd"), "op 'b': phase must be one of forward, backward, update, got 'fwd'"),
    (with_op(1, bogus=1), "op 'b': unknown field 'bogus'"),
    (with_op(1, zeta=1, alpha=2), "op 'b': unknown field 'alpha'"),
    ({**toy(), "edges": [7]}, "graph: edge #0 must be a JSON object"),
    ({**toy(), "edges": [{"src": "a"}]}, "graph: edge #0 needs string 'src' and 'dst'"),
    ({**toy(), "edges": [{"src": "a", "dst": 1}]}, "graph: edge #0 needs string 'src' and 'dst'"),
    ({**toy(), "edges": [{"src": "a", "dst": "zz"}]}, "edge 'a' -> 'zz' refers to unknown op 'zz'"),
    ({**toy(), "edges": [{"src": "yy", "dst": "zz"}]}, "edge 'yy' -> 'zz' refers to unknown op 'yy'"),
    ({**toy(), "edges": [{"src": "a", "dst": "b", "bytes": True}]},
     "edge 'a' -> 'b': bytes must be a number, got True"),
    ({**toy(), "edges": [{"src": "a", "dst": "b", "bytes": -1}]},
     "edge 'a' -> 'b': bytes must be a finite number >= 0, got -1.0"),
    ({**toy(), "edges": [{"src": "a", "dst": "b", "bytes": float("nan")}]},
     "edge 'a' -> 'b': bytes must be a finite number >= 0, got nan"),
    ({**toy(), "edges": [{"src": "b", "dst": "b"}]}, "edge 'b' -> 'b' is a self-loop"),
    ({**toy(), "ops": [*toy()["ops"], {"name": "a", "compute": 1}]},
     "graph 'toy': duplicate op name 'a' (ops #0 and #3)"),
    ({**toy(), "edges": [*toy()["edges"], {"src": "c", "dst": "a"}]},
     "graph 'toy' has a cycle: 'a' -> 'b' -> 'c' -> 'a'"),
])
def test_error_messages(doc, message):
    assert graph_error(doc) == message


def test_source_names_the_file(tmp_path):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"schema": "nope", "ops": []}))
    with pytest.raises(GraphError, match=r"^mine\.json: expected schema 'placelab\.graph/1', found schema 'nope'$"):
        load_graph_json(path)


# ---- JSON text: both decoders (orjson when installed, the standard library otherwise) ---

# decoder -> (message of '{"schema": ', of a text cut after line 2, of a bad UTF-8 byte,
#             of 100000 '[', of each non-finite literal, of an out-of-range number at column c);
# None: the decoder accepts the text and graph_from_dict rejects the number.
# In TEXT the value starts at column 84.
DECODER_MESSAGES = {
    "stdlib": ("line 1, column 12: Expecting value", "line 3, column 1: Expecting value",
               "UnicodeDecodeError", "RecursionError", None, None),
    "orjson": ("line 1, column 12: unexpected end of data", "line 3, column 1: unexpected end of data",
               "line 1, column 1: str is not valid UTF-8: surrogates not allowed",
               "line 1, column 1026: depth limit exceeded",
               {"NaN": "line 1, column 84: unexpected character, expected a JSON value",
                "Infinity": "line 1, column 84: unexpected character, expected a JSON value",
                "-Infinity": "line 1, column 85: no digit after sign"},
               "line 1, column 84: number is infinity when parsed as double"),
}


@pytest.fixture(params=["stdlib", "orjson"])
def decoder(request, monkeypatch):
    if request.param == "orjson":
        if not HAS_ORJSON:
            pytest.skip("orjson is not installed")
    else:
        monkeypatch.setattr(jsonio, "_orjson", None)
    return DECODER_MESSAGES[request.param]


def text_error(text) -> str:
    with pytest.raises(GraphError) as info:
        graph_from_dict(loads(text, what="t.json", error=GraphError))
    msg = str(info.value)
    assert "\n" not in msg
    return msg


def test_bad_json_text_messages(decoder):
    truncated, two_lines, utf8, deep, _, _ = decoder
    assert text_error('{"schema": ') == f"t.json is not valid JSON ({truncated})"
    assert text_error('{\n "a": [1,\n') == f"t.json is not valid JSON ({two_lines})"
    assert text_error(b'{"a": "\xff"}') == f"t.json is not valid JSON ({utf8})"
    assert text_error("[" * 100_000) == f"t.json is not valid JSON ({deep})"


TEXT = '{"schema": "placelab.graph/1", "ops": [{"name": "a", "compute": 1, "output_bytes": %s}]}'


@pytest.mark.parametrize(("literal", "shown"), [("NaN", "nan"), ("Infinity", "inf"), ("-Infinity", "-inf")])
def test_nan_and_infinity_literals_are_rejected(decoder, literal, shown):
    # the standard library reads these literals as floats; orjson refuses them as bad JSON
    bad_literal = decoder[4]
    assert TEXT.index("%s") + 1 == 84
    expected = (f"op 'a': output_bytes must be a finite number >= 0, got {shown}" if bad_literal is None
                else f"t.json is not valid JSON ({bad_literal[literal]})")
    assert text_error(TEXT % literal) == expected


@pytest.mark.parametrize("number", ["1e400", "-1e400", "1" + "0" * 400])
def test_numbers_beyond_float_range_are_rejected(decoder, number):
    out_of_range = decoder[5]
    shown = "-inf" if number.startswith("-") else "inf"
    expected = (f"op 'a': output_bytes must be a finite number >= 0, got {shown}" if out_of_range is None
                else f"t.json is not valid JSON ({out_of_range})")
    assert text_error(TEXT % number) == expected


def test_read_json_file_errors(tmp_path):
    empty = tmp_path / "empty.json"
    empty.write_text("  \n")
    with pytest.raises(GraphError) as info:
        read_json_file(empty, error=GraphError)
    assert str(info.value) == f"{empty} is empty"
    with pytest.raises(GraphError) as info:
        read_json_file(tmp_path / "missing.json", error=GraphError)
    assert str(info.value) == f"{tmp_path / 'missing.json'}: no such file"
    with pytest.raises(GraphError) as info:
        read_json_file(tmp_path, error=GraphError)
    assert str(info.value) == f"{tmp_path} is a directory, not a file"
    big = tmp_path / "big.json"
    big.write_text("[" + ",".join(["1"] * 1_500_000) + "]")  # 3,000,001 bytes
    with pytest.raises(GraphError) as info:
        read_json_file(big, error=GraphError, max_bytes=2_000_000)
    assert str(info.value) == f"{big}: file is 3 MB, larger than the 2 MB limit"
    ok = tmp_path / "ok.json"
    ok.write_text('{"a": [1, 2.5, null]}')
    assert read_json_file(ok, error=GraphError) == {"a": [1, 2.5, None]}


def test_load_graph_json_of_a_truncated_file(tmp_path):
    path = tmp_path / "toy.json"
    text = json.dumps(toy())
    path.write_text(text[:40])
    with pytest.raises(GraphError) as info:
        load_graph_json(path)
    assert str(info.value).startswith(f"{path} is not valid JSON (line 1, column ")


# ---- property tests ----------------------------------------------------------------------

finite = st.one_of(st.integers(0, 10**12), st.floats(0, 1e6, allow_nan=False, allow_infinity=False))
# bytes are integers or multiples of 1/2, so sums of merged parallel edges are exact in any order
byte_values = st.one_of(st.integers(0, 10**9), st.integers(0, 10**6).map(lambda x: x / 2))


@st.composite
def graph_docs(draw, max_ops: int = 10) -> dict:
    """A valid placelab.graph/1 document with random optional fields and parallel edges."""
    names = draw(st.lists(st.text(NAME_CHARS, min_size=1, max_size=6), min_size=1, max_size=max_ops,
                          unique=True))
    n = len(names)
    ops = []
    for nm in names:
        op: dict = {"name": nm}
        if draw(st.booleans()):
            op["compute"] = draw(finite)
        else:
            kinds = draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=3, unique=True))
            op["compute"] = {k: draw(finite) for k in kinds}
        for f in ("output_bytes", "persistent_bytes", "temp_bytes"):
            if draw(st.booleans()):
                op[f] = draw(st.one_of(st.none(), byte_values))
        if draw(st.booleans()):
            op["type"] = draw(st.one_of(st.none(), st.sampled_from(["MatMul", "Relu", "", "Conv2D"])))
        if draw(st.booleans()):
            op["colocate"] = draw(st.one_of(st.none(), st.sampled_from(["g1", "g2", ""])))
        if draw(st.booleans()):
            op["device"] = draw(st.one_of(st.none(), st.sampled_from(["gpu:0", "gpu:1", "cpu:0"])))
        if draw(st.booleans()):
            op["phase"] = draw(st.one_of(st.none(), st.sampled_from(PHASES)))
        if draw(st.booleans()):
            op["scope"] = draw(st.one_of(st.none(), st.sampled_from(["", "enc/l1", "dec"])))
        ops.append(op)
    # edges follow a random topological rank, so they do not always point to higher indices
    rank = draw(st.permutations(range(n)))
    pairs = [(u, v) for u in range(n) for v in range(n) if rank[u] < rank[v]]
    edges = []
    if pairs:
        for u, v in draw(st.lists(st.sampled_from(pairs), max_size=3 * n)):
            ed: dict = {"src": names[u], "dst": names[v]}
            if draw(st.booleans()):
                ed["bytes"] = draw(byte_values)
            edges.append(ed)
    doc = {"schema": GRAPH_SCHEMA, "ops": ops, "edges": edges}
    if draw(st.booleans()):
        doc["name"] = draw(st.text(NAME_CHARS, max_size=5))
    return doc


def expected_of(doc: dict) -> dict:
    """What a document means, worked out from the document alone."""
    ops = doc["ops"]
    names = [op["name"] for op in ops]
    idx = {nm: i for i, nm in enumerate(names)}
    out = [float(op.get("output_bytes") or 0) for op in ops]
    edges: dict[tuple[int, int], float] = defaultdict(float)
    for ed in doc["edges"]:
        s, d = idx[ed["src"]], idx[ed["dst"]]
        edges[(s, d)] += float(ed["bytes"]) if ed.get("bytes") is not None else out[s]
    compute = {}
    for kind in (*KINDS, "other"):
        col = []
        for op in ops:
            c = op["compute"]
            col.append(float(c) if not isinstance(c, dict) else float(c.get(kind, math.nan)))
        compute[kind] = col
    return {
        "name": doc.get("name", "graph"),
        "names": names,
        "compute": compute,
        "out": out,
        "persistent": [float(op.get("persistent_bytes") or 0) for op in ops],
        "temp": [float(op.get("temp_bytes") or 0) for op in ops],
        "edges": dict(sorted(edges.items())),
        "type": [op.get("type") or "" for op in ops],
        "colocate": [op.get("colocate") for op in ops],
        "pin": [op.get("device") for op in ops],
        "phase": [op.get("phase") for op in ops],
        "scope": [op.get("scope") or "" for op in ops],
    }


def assert_matches(g, exp: dict) -> None:
    assert g.name == exp["name"]
    assert list(g.op_names) == exp["names"]
    for kind, col in exp["compute"].items():
        np.testing.assert_array_equal(g.compute_for_kind(kind), col)
    assert g.output_bytes.tolist() == exp["out"]
    assert g.persistent_bytes.tolist() == exp["persistent"]
    assert g.temp_bytes.tolist() == exp["temp"]
    got = dict(zip(zip(g.edge_src.tolist(), g.edge_dst.tolist(), strict=True), g.edge_bytes.tolist(), strict=True))
    assert got == exp["edges"]
    assert list(g.op_types) == exp["type"]
    assert list(g.colocate) == exp["colocate"]
    assert list(g.pin) == exp["pin"]
    assert list(g.phase) == exp["phase"]
    assert list(g.scope) == exp["scope"]


@settings(max_examples=100, deadline=None)
@given(graph_docs())
def test_round_trip_preserves_everything(doc):
    exp = expected_of(doc)
    g1 = graph_from_dict(doc)
    assert_matches(g1, exp)
    d1 = graph_to_dict(g1)
    # through JSON text, as a file would go
    g2 = graph_from_dict(loads(dumps(d1), what="rt", error=GraphError))
    assert_matches(g2, exp)
    assert g2.content_hash == g1.content_hash
    assert graph_to_dict(g2) == d1
    # parallel edges are merged: at most one edge per ordered pair
    assert len(d1["edges"]) == len({(e["src"], e["dst"]) for e in d1["edges"]}) == len(exp["edges"])


@settings(max_examples=25, deadline=None)
@given(graph_docs(max_ops=6))
def test_file_round_trip(doc):
    g = graph_from_dict(doc)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "g.json")
        save_graph(g, path)
        h = load_graph_json(path)
    assert_matches(h, expected_of(doc))
    assert h.content_hash == g.content_hash


# ---- malformed documents: always one GraphError -----------------------------------------

BAD_NUMBERS = [-1, -0.5, float("nan"), float("inf"), float("-inf"), True, False, "1", [1], 10**400]
BAD_NONE_NUMBERS = [-1, float("nan"), float("inf"), True, "1", [1], 10**400]  # None means "default"


MUTATIONS = [
    "truncate", "schema", "no_name", "no_compute", "bad_compute", "bad_kind_compute", "bad_optional",
    "bad_edge_bytes", "unknown_edge_op", "duplicate", "cycle", "self_loop", "non_dict_op", "empty_ops",
    "unknown_field", "bad_string_field", "bad_phase", "non_dict_doc", "bad_edge",
]


@st.composite
def malformed(draw, kind: str) -> tuple[str, object, str]:
    """(kind of mutation, document or JSON text, text the message must contain)."""
    doc = draw(graph_docs(max_ops=6))
    ops, edges = doc["ops"], doc["edges"]
    names = [op["name"] for op in ops]
    n = len(names)
    k = draw(st.integers(0, n - 1))
    nm = names[k]
    if kind == "truncate":
        text = dumps(doc)
        return "truncate", text[: draw(st.integers(0, len(text) - 1))], "is not valid JSON"
    if kind == "schema":
        value = draw(st.one_of(st.none(), st.text(max_size=5), st.integers(), st.just("placelab.graph/2")))
        if value is None:
            del doc["schema"]
        else:
            doc["schema"] = value
        return kind, doc, "expected schema 'placelab.graph/1', found "
    if kind == "no_name":
        bad = draw(st.sampled_from([None, "", 0, ["a"], True]))
        if bad is None:
            del ops[k]["name"]
        else:
            ops[k]["name"] = bad
        return kind, doc, f"op #{k} needs a non-empty string 'name'"
    if kind == "no_compute":
        if draw(st.booleans()):
            del ops[k]["compute"]
        else:
            ops[k]["compute"] = None
        return kind, doc, f"op {nm!r} has no 'compute'"
    if kind == "bad_compute":
        ops[k]["compute"] = draw(st.sampled_from([*BAD_NUMBERS, {}]))
        return kind, doc, f"op {nm!r}: compute"
    if kind == "bad_kind_compute":
        kname = draw(st.sampled_from(KINDS))
        c = ops[k]["compute"]
        bad = draw(st.sampled_from([*BAD_NUMBERS, None, {"x": 1}]))
        ops[k]["compute"] = {**(c if isinstance(c, dict) else {}), kname: bad}
        return kind, doc, f"op {nm!r}: compute on {kname!r} must be a"
    if kind == "bad_optional":
        f = draw(st.sampled_from(["output_bytes", "persistent_bytes", "temp_bytes"]))
        ops[k][f] = draw(st.sampled_from(BAD_NONE_NUMBERS))
        return kind, doc, f"op {nm!r}: {f} must be a"
    if kind == "bad_edge_bytes":
        if not edges:  # one edge cannot close a cycle
            if n == 1:
                ops.append({"name": "x>", "compute": 1})
                names.append("x>")
            edges.append({"src": names[0], "dst": names[1]})
        e = draw(st.integers(0, len(edges) - 1))
        edges[e]["bytes"] = draw(st.sampled_from(BAD_NONE_NUMBERS))
        return kind, doc, f"edge {edges[e]['src']!r} -> {edges[e]['dst']!r}"
    if kind == "unknown_edge_op":
        ghost = "ghost>"  # '>' is not in NAME_CHARS, so this op does not exist
        s, d = (ghost, nm) if draw(st.booleans()) else (nm, ghost)
        edges.insert(draw(st.integers(0, len(edges))), {"src": s, "dst": d})
        return kind, doc, f"edge {s!r} -> {d!r} refers to unknown op {ghost!r}"
    if kind == "duplicate":
        ops.insert(draw(st.integers(k + 1, n)), {"name": nm, "compute": 1.0})
        return kind, doc, f"duplicate op name {nm!r} (ops #{k} and #"
    if kind == "cycle":
        # close a cycle: an edge from an op back to any of its ancestors (any cycle length)
        succ = defaultdict(set)
        for ed in edges:
            succ[ed["src"]].add(ed["dst"])
        if edges:
            top = draw(st.sampled_from(sorted(succ)))
            below, todo = set(), [top]
            while todo:
                for w in succ[todo.pop()] - below:
                    below.add(w)
                    todo.append(w)
            back = {"src": draw(st.sampled_from(sorted(below))), "dst": top}
        elif n >= 2:
            edges.append({"src": names[0], "dst": names[1]})
            back = {"src": names[1], "dst": names[0]}
        else:
            ops.append({"name": "x>", "compute": 1})
            edges.extend([{"src": nm, "dst": "x>"}, {"src": "x>", "dst": nm}])
            back = edges[-1]
        edges.insert(draw(st.integers(0, len(edges))), back)
        return kind, doc, f"{back['src']!r} -> {back['dst']!r}"
    if kind == "self_loop":
        edges.insert(draw(st.integers(0, len(edges))), {"src": nm, "dst": nm})
        return kind, doc, f"edge {nm!r} -> {nm!r} is a self-loop"
    if kind == "non_dict_op":
        ops[k] = draw(st.sampled_from([None, 1, "a", [nm], True]))
        return kind, doc, f"op #{k} must be a JSON object"
    if kind == "empty_ops":
        doc["ops"] = draw(st.sampled_from([[], {}, None, "ops"]))
        return kind, doc, "'ops' must be a list of ops" if doc["ops"] != [] else "graph has no ops"
    if kind == "unknown_field":
        ops[k][draw(st.sampled_from(["bogus", "Name", "devices", "compute_time"]))] = 1
        return kind, doc, f"op {nm!r}: unknown field '"
    if kind == "bad_string_field":
        f = draw(st.sampled_from(["type", "colocate", "device", "scope"]))
        ops[k][f] = draw(st.sampled_from([1, 2.5, True, ["x"], {"a": "b"}]))
        return kind, doc, f"op {nm!r}: {f} must be a string or null"
    if kind == "bad_phase":
        ops[k]["phase"] = draw(st.sampled_from(["Forward", "fwd", "", "train"]))
        return kind, doc, f"op {nm!r}: phase must be one of forward, backward, update"
    if kind == "non_dict_doc":
        return kind, draw(st.sampled_from([None, [], "graph", 3, [doc]])), "expected a JSON object"
    # bad_edge
    bad = draw(st.sampled_from([None, 3, "a->b", {"src": nm}, {"dst": nm}, {"src": 1, "dst": nm}]))
    e = draw(st.integers(0, len(edges)))
    edges.insert(e, bad)
    return kind, doc, f"edge #{e}"


def _cycle_pairs(msg: str) -> list[tuple[str, str]]:
    names = [ast.literal_eval(part) for part in msg.split(" has a cycle: ", 1)[1].split(" -> ")]
    assert names[0] == names[-1] and len(names) >= 3
    return list(itertools.pairwise(names))


@pytest.mark.parametrize("mutation", MUTATIONS)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_malformed_documents_raise_one_line_graph_error(mutation, data):
    kind, doc, must_contain = data.draw(malformed(mutation))
    try:
        if kind == "truncate":
            graph_from_dict(loads(doc, what="t.json", error=GraphError))
        else:
            graph_from_dict(copy.deepcopy(doc))
    except GraphError as err:
        msg = str(err)
    else:
        pytest.fail(f"{kind}: no GraphError")
    assert "\n" not in msg and msg
    assert must_contain in msg, (kind, msg)
    if kind == "cycle":
        pairs = _cycle_pairs(msg)
        edge_set = {(e["src"], e["dst"]) for e in doc["edges"]}
        assert all(p in edge_set for p in pairs), msg


@settings(max_examples=30, deadline=None)
@given(st.integers(3, 3000), st.integers(0, 10**6))
def test_long_cycles_are_reported_op_by_op(length, salt):
    # a chain of `length` ops whose last op feeds the first, listed in a shuffled order
    rng = np.random.default_rng(salt)
    names = [f"r{i}" for i in range(length)]
    order = rng.permutation(length)
    ops = [{"name": names[i], "compute": 1} for i in order]
    edges = [{"src": names[i], "dst": names[(i + 1) % length]} for i in range(length)]
    msg = graph_error({"schema": GRAPH_SCHEMA, "name": "ring", "ops": ops, "edges": edges})
    assert msg.startswith("graph 'ring' has a cycle: ")
    cyc = [p[1:-1] for p in msg.split(": ", 1)[1].split(" -> ")]
    assert len(cyc) == length + 1 and cyc[0] == cyc[-1]
    assert sorted(cyc[:-1]) == sorted(names)
    for a, b in itertools.pairwise(cyc):
        assert int(b[1:]) == (int(a[1:]) + 1) % length


def test_files_with_malformed_content_raise_graph_error(tmp_path):
    text = json.dumps(toy())
    for cut in (1, 10, len(text) // 2, len(text) - 1):
        p = tmp_path / f"cut{cut}.json"
        p.write_text(text[:cut])
        with pytest.raises(GraphError) as info:
            load_graph_json(p)
        assert str(info.value).startswith(f"{p} is not valid JSON (line 1, column ")
