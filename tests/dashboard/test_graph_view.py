"""The pyvis placement graph page: layout, colors, sizes, and the aggregated view."""

import json
import re

import numpy as np
import pytest

from dashboard.figures import GRAPH_VIEW_MAX_OPS, graph_view, graph_view_mode, placement_graph_html
from dashboard.figures.colors import PALETTE
from dashboard.figures.op_types import NO_COMPUTE_COLOR
from dashboard.figures.theme import device_color
from engine.generators import random_dag
from engine.graph.compgraph import CompGraph


def _data(page: str) -> tuple[list[dict], list[dict]]:
    nodes = json.loads(re.search(r"nodes = new vis\.DataSet\((\[.*?\])\);", page, re.S).group(1))
    edges = json.loads(re.search(r"edges = new vis\.DataSet\((\[.*?\])\);", page, re.S).group(1))
    return nodes, edges


@pytest.fixture
def chain():
    return CompGraph("chain", ["a", "b", "c"], compute_any=np.array([1e-3, 4e-3, 0.0]),
                     output_bytes=np.array([100.0, 400.0, 0.0]), edge_src=[0, 1], edge_dst=[1, 2],
                     op_types=["MatMul", "Relu", "MatMul"], scope=["l1", "l1", "l2"])


def test_ops_view_layout_colors_sizes(chain):
    page = placement_graph_html(chain, [0, 1, 1], device_names=["gpu:0", "gpu:1"])
    nodes, edges = _data(page)
    assert [n["label"] for n in nodes] == ["a", "b", "c"]
    assert [n["x"] for n in nodes] == [0.0, 140.0, 280.0]  # one topological level per column
    assert [n["color"] for n in nodes] == [device_color(0), device_color(1), device_color(1)]
    assert nodes[1]["size"] > nodes[0]["size"] > nodes[2]["size"]  # size grows with compute
    assert edges[1]["width"] > edges[0]["width"]  # 400 bytes vs 100 bytes
    assert "device: gpu:1" in nodes[1]["title"] and "type: Relu" in nodes[1]["title"]
    assert '"enabled": false' in page  # physics off
    assert "All 3 ops" in page and "gpu:0" in page
    assert "cdn.jsdelivr" not in page  # works offline


def test_color_by_type_and_scales(chain):
    nodes, _ = _data(placement_graph_html(chain, None, color_by="op type"))
    assert nodes[0]["color"] == nodes[2]["color"] != nodes[1]["color"]
    nodes, _ = _data(placement_graph_html(chain, None, color_by="compute"))
    assert len({n["color"] for n in nodes}) == 3
    # an unplaced graph colored "by device" falls back to op type
    nodes, _ = _data(placement_graph_html(chain, None))
    assert nodes[0]["color"] == nodes[2]["color"]
    with pytest.raises(ValueError):
        placement_graph_html(chain, None, color_by="nonsense")


def test_large_unscoped_graph_is_aggregated_by_level_bands():
    n = GRAPH_VIEW_MAX_OPS * 2
    g = random_dag(ops=n, seed=5)
    devices = np.arange(n) % 3
    mode, sentence = graph_view_mode(g, devices)
    assert mode == "levels" and "Aggregated view" in sentence
    page = placement_graph_html(g, devices)
    nodes, edges = _data(page)
    assert len(nodes) <= 400  # the explorer's hierarchy opened up to _MAX_GROUPS nodes
    assert sum(int(re.search(r"ops: (\d+)", nd["title"]).group(1)) for nd in nodes) == n
    assert all(e["from"] != e["to"] for e in edges)
    assert sentence in page
    # the full view can still be asked for
    assert graph_view_mode(g, devices, max_ops=n)[0] == "ops"


def test_large_scoped_graph_is_aggregated_by_scope():
    # 2,000 ops in 4 layer scopes of 500, each with 5 blocks of 100 ops: opening all 4 layers shows 20 blocks
    # (within 400 nodes); opening a block would add 99 nodes each, so 3 blocks fit: 20 + 3 * 99 = 317.
    n = 2000
    scope = [f"layer{i // 500}/block{(i // 100) % 5}" for i in range(n)]
    g = CompGraph("scoped", [f"op{i}" for i in range(n)], compute_any=np.full(n, 1e-3), output_bytes=np.zeros(n),
                  persistent_bytes=np.zeros(n), edge_src=list(range(n - 1)), edge_dst=list(range(1, n)), scope=scope)
    assert graph_view_mode(g, None)[0] == "scope"
    nodes, _ = _data(placement_graph_html(g, None, color_by="memory"))
    assert len(nodes) == 317
    assert sum(int(re.search(r"ops: (\d+)", nd["title"]).group(1)) for nd in nodes if "ops: " in nd["title"]) \
        + sum(1 for nd in nodes if "ops: " not in nd["title"]) == n


def test_aggregated_groups_are_coloured_by_the_type_doing_their_work(monkeypatch):
    monkeypatch.setattr(graph_view, "_MAX_GROUPS", 3)  # the three scopes stay closed
    # drawn aggregated (max_ops=1): l1 holds 3 variables and a MatMul (2 ms), l2 3 variables and a Relu (1 ms), l3
    # 2 variables. By count every group was "Variable"; by compute l1 is MatMul, l2 Relu, l3 has none
    scope = ["l1"] * 4 + ["l2"] * 4 + ["l3"] * 2
    types = ["Variable"] * 3 + ["MatMul"] + ["Variable"] * 3 + ["Relu"] + ["Variable"] * 2
    compute = np.array([0, 0, 0, 2e-3, 0, 0, 0, 1e-3, 0, 0])
    g = CompGraph("vars", [f"op{i}" for i in range(10)], compute_any=compute, output_bytes=np.ones(10),
                  persistent_bytes=np.zeros(10), edge_src=[3, 7], edge_dst=[7, 8], op_types=types, scope=scope)
    page = placement_graph_html(g, None, color_by="op type", max_ops=1)
    nodes, _ = _data(page)
    by_label = {n["label"]: n for n in nodes}
    assert set(by_label) == {"l1", "l2", "l3"}
    assert "main type (most compute): MatMul" in by_label["l1"]["title"]
    assert [by_label[k]["color"] for k in ("l1", "l2", "l3")] == [PALETTE[0], PALETTE[1], NO_COMPUTE_COLOR]
    assert "no compute: Variable" in page
