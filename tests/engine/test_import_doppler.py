"""Tests for engine.importers.doppler_text (DOPPLER's plain-text graph format)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import GraphError
from engine.importers.doppler_text import (
    AUTHORS_DIVISOR,
    AUTHORS_UNIT_S,
    COMM_FACTOR,
    REFERENCE_FLOPS,
    _is_doppler_text,
    graph_from_doppler_text,
    load_doppler_text,
)
from engine.specs import detect_format, load_graph

# 6 nodes in total, 2 of them inputs: the graph has nodes 0..3.
# Edges 0->1, 0->2, 1->3, 2->3; separators mixed, trailing commas as in the published files.
SAMPLE = """6
4, 5,
0,0 1 2,
1 2,3,3
2000000000000,8000000000000,einsummable
1e12, 4e12,
500000000000 2000000000000 formation,
0,0,fill
"""


def error(text: str) -> str:
    with pytest.raises(GraphError) as info:
        graph_from_doppler_text(text, name="t")
    msg = str(info.value)
    assert msg and "\n" not in msg
    return msg


def test_sample_file_loads_with_documented_units(tmp_path):
    f = tmp_path / "chain.txt"
    f.write_text(SAMPLE)
    assert detect_format(f).name == "doppler-text"
    g = load_graph(f)
    assert g.name == "chain" and g.op_names == ("0", "1", "2", "3")
    assert AUTHORS_DIVISOR == 1e10 and AUTHORS_UNIT_S == 1e-3
    # the authors' reading: cost / 1e10 milliseconds; comm is a transfer time on every out-edge
    assert np.allclose(g.compute_any, [0.2, 0.1, 0.05, 0.0])  # 2e12 / 1e10 = 200 units = 0.2 s
    assert list(zip(g.edge_src.tolist(), g.edge_dst.tolist(), strict=True)) == [(0, 1), (0, 2), (1, 3), (2, 3)]
    assert np.allclose(g.edge_transfer_s, [0.8, 0.8, 0.4, 0.2])
    assert not g.memory_known and g.has_transfer_times
    for a in (g.output_bytes, g.persistent_bytes, g.temp_bytes, g.edge_bytes):
        assert not a.any()
    assert g.op_types == ("einsummable", "", "formation", "fill")


def test_app_e_reading_is_flops_and_bytes():
    g = graph_from_doppler_text(SAMPLE, reading="app_e")
    assert REFERENCE_FLOPS == 1e12 and COMM_FACTOR == 4
    assert g.compute_any.tolist() == [2.0, 1.0, 0.5, 0.0]  # FLOP / 1e12 FLOP/s
    assert g.output_bytes.tolist() == [2e12, 1e12, 5e11, 0.0]  # comm_cost / 4
    assert list(zip(g.edge_src.tolist(), g.edge_dst.tolist(), g.edge_bytes.tolist(), strict=True)) == [
        (0, 1, 2e12), (0, 2, 2e12), (1, 3, 1e12), (2, 3, 5e11)]
    assert g.memory_known and not g.has_transfer_times


def test_unit_scale_and_bad_options():
    g = graph_from_doppler_text(SAMPLE, unit_s=1.0)  # one authors' unit = one second
    assert np.allclose(g.compute_any, [200.0, 100.0, 50.0, 0.0])
    with pytest.raises(GraphError, match="reading must be one of"):
        graph_from_doppler_text(SAMPLE, reading="flops")
    with pytest.raises(GraphError, match="unit_s must be a finite number > 0"):
        graph_from_doppler_text(SAMPLE, unit_s=-1.0)


def test_other_throughput_and_no_inputs_no_edges():
    g = graph_from_doppler_text("2\n\n\n\n10,40\n30,4\n", reading="app_e", flops_per_s=10.0)
    assert g.compute_any.tolist() == [1.0, 3.0] and g.num_edges == 0 and g.output_bytes.tolist() == [10.0, 1.0]


@pytest.mark.parametrize(("text", "pattern"), [
    ("x\n\n\n\n1,1\n", "line 1 must be the number of nodes"),
    ("3 4\n\n\n\n1,1\n", "line 1 must hold only the number of nodes"),
    ("2\n0 1\n\n\n", "leaves no node"),
    ("2\n\n0 1\n1\n1,1\n1,1\n", "line 3 has 2 edge sources but line 4 has 1 destinations"),
    ("2\n\n0\n2\n1,1\n1,1\n", "edge #0 (0 -> 2) refers to a node id outside 0..1"),
    ("2\n\n-1\n1\n1,1\n1,1\n", "outside 0..1"),
    ("2\n\n0\n1\n1,1\n", "expected 2 node lines"),
    ("1\n\n\n\n1,1\n2,2\n", "expected 1 node lines"),
    ("1\n\n\n\n1\n", "must be 'comp_cost,comm_cost[,op_type]'"),
    ("1\n\n\n\n1,abc\n", "comm_cost must be a number"),
    ("1\n\n\n\n-1,2\n", "comp_cost must be a finite number >= 0"),
    ("1\n\n\n\nnan,2\n", "comp_cost must be a finite number >= 0"),
    ("1\n\n\n\ninf,2\n", "finite"),
    ("2\n\n0 1\n1 0\n1,1\n1,1\n", "cycle"),
    ("1\n\n0\n0\n1,1\n", "self-loop"),
    ("1\nа\n\n\n1,1\n", "line 2: input node ids must be integers"),
    ("1\n", "expected at least 4 lines"),
])
def test_malformed_inputs_raise_one_sentence(text, pattern):
    assert pattern in error(text)


def test_non_ascii_file_is_rejected(tmp_path):
    f = tmp_path / "g.txt"
    f.write_bytes(b"1\n\n\n\n1,1\xff\n")
    with pytest.raises(GraphError, match="not plain ASCII"):
        load_doppler_text(f)


def test_detection():
    assert _is_doppler_text(SAMPLE.encode())
    assert _is_doppler_text(SAMPLE.encode()[:17])  # a head cut inside line 3
    assert not _is_doppler_text(b'{"nodes": []}')
    assert not _is_doppler_text(b"12\nhello world\n")
    assert not _is_doppler_text(b"3\n\n\n\nfoo bar baz qux\n1,1\n")
    assert not _is_doppler_text(b"<graphml>")


@st.composite
def doppler_graphs(draw):
    n = draw(st.integers(1, 8))
    inputs = draw(st.lists(st.integers(0, 99), max_size=3))
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=12))
    edges = sorted({(min(a, b), max(a, b)) for a, b in pairs if a != b})  # forward edges: a DAG
    comp = draw(st.lists(st.integers(0, 10**13), min_size=n, max_size=n))
    sep = draw(st.sampled_from([",", " ", ", ", ",  "]))
    types = draw(st.lists(st.sampled_from(["", "einsummable", "fill", "select"]), min_size=n, max_size=n))
    lines = [str(n + len(inputs)), sep.join(map(str, inputs)), sep.join(str(a) for a, _ in edges),
             sep.join(str(b) for _, b in edges)]
    lines += [sep.join([str(c), str(4 * c)] + ([t] if t else [])) + draw(st.sampled_from(["", ","]))
              for c, t in zip(comp, types, strict=True)]
    return "\n".join(lines) + "\n", n, edges, comp, types


@settings(max_examples=200, deadline=None)
@given(doppler_graphs())
def test_generated_valid_files_parse_exactly(case):
    text, n, edges, comp, types = case
    assert _is_doppler_text(text.encode()[:4096])
    g = graph_from_doppler_text(text, reading="app_e")
    assert g.num_ops == n
    assert sorted(zip(g.edge_src.tolist(), g.edge_dst.tolist(), strict=True)) == edges
    np.testing.assert_array_equal(g.compute_any, np.asarray(comp, float) / 1e12)
    np.testing.assert_array_equal(g.output_bytes, np.asarray(comp, float))  # 4c / 4
    assert list(g.op_types) == types
    a = graph_from_doppler_text(text)  # the authors' reading: times, edges in file order
    np.testing.assert_allclose(a.compute_any, np.asarray(comp, float) / 1e13)
    order = np.argsort(a.edge_rank)
    assert list(zip(a.edge_src[order].tolist(), a.edge_dst[order].tolist(), strict=True)) == edges
    np.testing.assert_allclose(a.edge_transfer_s[order], [4 * comp[s] / 1e13 for s, _ in edges])


@settings(max_examples=300, deadline=None)
@given(doppler_graphs(), st.data())
def test_truncated_or_corrupted_files_raise_graph_error_only(case, data):
    text = case[0]
    kind = data.draw(st.sampled_from(["truncate", "replace", "insert"]))
    pos = data.draw(st.integers(0, len(text)))
    if kind == "truncate":
        text = text[:pos]
    else:
        junk = data.draw(st.text(alphabet="0123456789,- \nxe.a", min_size=1, max_size=4))
        text = text[:pos] + junk + text[pos + (1 if kind == "replace" else 0):]
    try:
        graph_from_doppler_text(text)
    except GraphError as exc:
        assert str(exc) and "\n" not in str(exc)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789,. -\nabcinf", max_size=60))
def test_arbitrary_text_raises_graph_error_only(text):
    try:
        graph_from_doppler_text(text)
    except GraphError as exc:
        assert str(exc) and "\n" not in str(exc)
