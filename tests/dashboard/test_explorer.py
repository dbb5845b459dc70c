"""The graph explorer's elements (dashboard.figures.explorer), against a hand-worked five-op graph."""

import numpy as np
import pytest
from plotly.colors import sample_colorscale

from dashboard.figures.colors import PALETTE
from dashboard.figures.explorer import HIGHLIGHT, _wrap, explorer_elements, focus_selector, framed, reveal
from dashboard.figures.op_types import NO_COMPUTE_COLOR
from dashboard.figures.scope_tree import hierarchy_scopes
from dashboard.figures.theme import device_color
from engine.graph.compgraph import CompGraph
from engine.graph.dag import levels

# a→b→c→d→e and a→c; scopes enc/l0 (a, b), enc/l1 (c), dec (d), none (e); levels 0..4
SCOPES = ["enc/l0", "enc/l0", "enc/l1", "dec", ""]


@pytest.fixture
def graph():
    return CompGraph("five", list("abcde"), compute_any=np.array([1e-3, 1e-3, 2e-3, 4e-3, 0.0]),
                     output_bytes=np.array([10.0, 20.0, 30.0, 40.0, 0.0]),
                     persistent_bytes=np.zeros(5), edge_src=[0, 1, 2, 3, 0], edge_dst=[1, 2, 3, 4, 2],
                     edge_bytes=np.array([1.0, 10.0, 100.0, 1000.0, 5.0]),
                     op_types=["MatMul", "Relu", "MatMul", "Add", "Add"], scope=SCOPES)


def _by_id(view) -> dict:
    return {n["data"]["id"]: n for n in view.elements["nodes"]}


def test_open_scope_is_a_compound_box_around_its_children(graph):
    view = explorer_elements(graph, SCOPES, {"enc"})
    nodes = _by_id(view)
    assert view.node_ids == ["s:enc/l0", "s:enc/l1", "s:dec", "op:e"]
    assert set(nodes) == {"s:enc/l0", "s:enc/l1", "s:dec", "op:e", "s:enc"}
    assert nodes["s:enc"]["data"]["label"] == "open" and "position" not in nodes["s:enc"]
    assert nodes["s:enc/l0"]["data"]["parent"] == nodes["s:enc/l1"]["data"]["parent"] == "s:enc"
    assert "parent" not in nodes["s:dec"]["data"] and "parent" not in nodes["op:e"]["data"]
    assert nodes["s:enc/l0"]["data"]["name"] == "l0 (2)" and nodes["s:enc/l0"]["data"]["ops"] == 2
    # nested layout by hand, each node at the lowest level of its ops that have an input: root columns
    # [box enc (b: 1)] [dec (3)] [e (4)]; inside the box [l0 (b: 1)] [l1 (2)]. Leaves are 110 wide, 40 apart;
    # the box adds 16 padding each side and a 24 title:
    # l0 centre x = 16 + 55, l1 = 16 + 150 + 55; the box is 292 wide, so dec = 292 + 40 + 55, e = 482 + 55.
    # Sizes (14 + 26 √(compute / max), +10 for scopes): l0 = l1 = 14 + 26 √.5 + 10, dec 50, e 14.
    s = 24 + 26 * np.sqrt(0.5)
    box_h = (s + 22) + 32 + 24
    xy = {i: (nodes[i]["position"]["x"], nodes[i]["position"]["y"]) for i in view.node_ids}
    assert xy["s:enc/l0"] == pytest.approx((71, 40 + s / 2), abs=0.01)
    assert xy["s:enc/l1"] == pytest.approx((221, 40 + s / 2), abs=0.01)
    assert xy["s:dec"] == pytest.approx((387, (box_h - 72) / 2 + 25), abs=0.01)
    assert xy["op:e"] == pytest.approx((537, (box_h - 36) / 2 + 7), abs=0.01)
    assert view.node_of_op.tolist() == [0, 0, 1, 2, 3]
    edges = [(e["data"]["source"], e["data"]["target"], e["data"]["edges"], e["data"]["bytes"])
             for e in view.elements["edges"]]
    assert edges == [("s:enc/l0", "s:enc/l1", 2, "15 B"), ("s:enc/l1", "s:dec", 1, "100 B"),
                     ("s:dec", "op:e", 1, "1 KB")]


def test_fully_open_ops_nest_in_their_scope_boxes(graph):
    view = explorer_elements(graph, SCOPES, {"enc", "enc/l0", "enc/l1", "dec"})
    nodes = _by_id(view)
    assert view.node_ids == ["op:a", "op:b", "op:c", "op:d", "op:e"]
    assert nodes["op:a"]["data"]["parent"] == "s:enc/l0" and nodes["op:c"]["data"]["parent"] == "s:enc/l1"
    assert nodes["s:enc/l0"]["data"]["parent"] == "s:enc" and nodes["op:d"]["data"]["parent"] == "s:dec"
    # boxes never overlap: each op sits inside its own box's column band, boxes side by side
    xs = {i: nodes[i]["position"]["x"] for i in view.node_ids}
    assert xs["op:a"] < xs["op:b"] < xs["op:c"] < xs["op:d"] < xs["op:e"]
    # a scope whose parent is closed is not drawn open
    assert "s:enc/l0" not in _by_id(explorer_elements(graph, SCOPES, {"enc/l0"}))


def test_colour_by_device_and_start_time(graph):
    devices = np.array([0, 0, 1, 1, 0])
    view = explorer_elements(graph, SCOPES, {"enc"}, devices=devices, device_names=["gpu:0", "gpu:1"],
                             color_by="device")
    nodes = _by_id(view)
    assert [nodes[i]["data"]["_color"] for i in view.node_ids] == [device_color(d) for d in (0, 1, 1, 0)]
    assert view.legend == {"gpu:0": device_color(0), "gpu:1": device_color(1)}
    # group start = earliest op start: l0 0 s, l1 2 s, dec 3 s, e 4 s → Viridis at 0, 1/2, 3/4, 1
    view = explorer_elements(graph, SCOPES, {"enc"}, op_start=np.arange(5.0), color_by="start time")
    nodes = _by_id(view)
    assert [nodes[i]["data"]["_color"] for i in view.node_ids] == sample_colorscale("Viridis", [0, .5, .75, 1])
    assert nodes["s:dec"]["data"]["start"] == "3000 ms"
    with pytest.raises(ValueError, match="start time needs a schedule"):
        explorer_elements(graph, SCOPES, set(), color_by="start time")
    with pytest.raises(ValueError, match="color_by must be one of"):
        explorer_elements(graph, SCOPES, set(), color_by="nonsense")


def test_highlight_and_selection_mark_the_nodes_holding_the_ops(graph):
    view = explorer_elements(graph, SCOPES, {"enc"}, highlight=np.array([0, 0, 1, 0, 0], dtype=bool), selected=3)
    nodes = _by_id(view)
    assert nodes["s:enc/l1"]["data"]["_bw"] == 4.0 and nodes["s:enc/l1"]["data"]["_bc"] == HIGHLIGHT
    assert nodes["s:dec"]["data"]["_bw"] == 6.0 and nodes["s:dec"]["data"]["_bc"] == HIGHLIGHT
    assert nodes["s:enc/l0"]["data"]["_bw"] == 0.5
    assert view.legend["marked (1 ops)"] == HIGHLIGHT


def test_reveal_opens_every_scope_above_the_ops():
    assert reveal(SCOPES, np.array([0, 3, 4])) == {"enc", "enc/l0", "dec"}


def test_focus_selector_names_the_nodes_of_the_ops_and_their_neighbours(graph):
    view = explorer_elements(graph, SCOPES, {"enc", "enc/l0", "enc/l1", "dec"})  # every op a node
    # c's edges: b→c, a→c, c→d
    assert focus_selector(view, np.array([2])) == '[id = "op:a"], [id = "op:b"], [id = "op:c"], [id = "op:d"]'
    closed = explorer_elements(graph, SCOPES, set())  # a and b inside the collapsed enc: its node stands for them
    assert focus_selector(closed, np.array([0, 1])) == '[id = "s:dec"], [id = "s:enc"]'
    assert focus_selector(view, np.array([], dtype=int)) is None


def test_focus_selector_quotes_ids_as_cytoscape_reads_them():
    g = CompGraph("q", ['say "hi"', "back\\slash"], compute_any=np.ones(2), output_bytes=np.ones(2),
                  persistent_bytes=np.zeros(2), edge_src=[0], edge_dst=[1], edge_bytes=np.ones(1),
                  op_types=["A", "B"], scope=["", ""])
    view = explorer_elements(g, ["", ""], set())
    assert focus_selector(view, np.array([0])) == '[id = "op:back\\\\slash"], [id = "op:say \\"hi\\""]'


def test_wrap_cuts_a_long_row_into_the_rows_that_fit_the_frame_best():
    # six columns 300 wide and 100 tall, 40 apart: one row is 2,000 × 100 (score max(2000, 2.2 × 100) = 2000);
    # rows of 3 are 980 × 240 (980), of 2 are 640 × 380 (836), of 1 are 300 × 740 (1628): rows of 2 win
    assert _wrap([300.0] * 6, [100.0] * 6) == [[0, 1], [2, 3], [4, 5]]
    assert _wrap([300.0, 300.0], [100.0, 100.0]) == [[0, 1]]  # 640 wide: under 1,200, one row


def test_a_training_graph_flows_left_to_right_from_its_first_layer():
    # x → f1 → f2 → loss → g2 → g1a → g1b → g1c (levels 0..7); l1 = {f1, g1a, g1b, g1c}, l2 = {f2, g2}. By the
    # median level l1 (5.5) would sit right of l2 (3), the forward pass drawn backwards; data enters l1 at
    # level 1 (f1) and l2 at level 2 (f2), so l1 is left of l2; x, a source alone, stays at its level 0
    names = ["x", "f1", "f2", "loss", "g2", "g1a", "g1b", "g1c"]
    scopes = ["", "l1", "l2", "", "l2", "l1", "l1", "l1"]
    g = CompGraph("train", names, compute_any=np.ones(8), output_bytes=np.ones(8), persistent_bytes=np.zeros(8),
                  edge_src=list(range(7)), edge_dst=list(range(1, 8)), edge_bytes=np.ones(7),
                  op_types=["T"] * 8, scope=scopes)
    nodes = _by_id(explorer_elements(g, scopes, set()))
    x = {i: n["position"]["x"] for i, n in nodes.items()}
    assert x["op:x"] < x["s:l1"] < x["s:l2"] < x["op:loss"]


def _fan(names: list[str], scopes: list[str], types: list[str] | None = None, compute=None) -> CompGraph:
    """Op 0 feeding every other op: ops 1.. all at level 1, drawn in one column."""
    n = len(names)
    return CompGraph("fan", names, compute_any=np.ones(n) if compute is None else np.asarray(compute, dtype=float),
                     output_bytes=np.ones(n), persistent_bytes=np.zeros(n), edge_src=[0] * (n - 1),
                     edge_dst=list(range(1, n)), edge_bytes=np.ones(n - 1), op_types=types or ["T"] * n, scope=scopes)


def test_sibling_scopes_read_apart_with_their_counts_whole():
    # three sibling scopes of two ops each after a source op; "normal_A_block_10 (2)" is 10.948 em of Helvetica
    # bold × 1.05 × 14 px = 160.9 px, more than its 140-px slot. Room for the name: 140 - " (2)" 22.05 - "…" 14.7
    # = 103.25; after "10" (16.35) the whole tokens "normal_A_" (75.97) fit, "block" (38.4 more) does not
    scopes = ["", "normal_A_block_1", "normal_A_block_1", "normal_A_block_2", "normal_A_block_2",
              "normal_A_block_10", "normal_A_block_10"]
    g = _fan([f"op{i}" for i in range(7)], scopes)
    nodes = _by_id(explorer_elements(g, scopes, set()))
    blocks = ["s:normal_A_block_1", "s:normal_A_block_2", "s:normal_A_block_10"]
    assert [nodes[b]["data"]["_caption"] for b in blocks] == ["normal_A_…1 (2)", "normal_A_…2 (2)",
                                                              "normal_A_…10 (2)"]
    assert nodes["s:normal_A_block_10"]["data"]["name"] == "normal_A_block_10 (2)"  # the card keeps it whole
    assert nodes["op:op0"]["data"]["_caption"] == "op0"
    # one column (data enters each at level 1), top to bottom in natural order: _1, _2, _10 (strings: _1, _10, _2)
    xs = {nodes[b]["position"]["x"] for b in blocks}
    ys = [nodes[b]["position"]["y"] for b in blocks]
    assert len(xs) == 1 and ys == sorted(ys)


def test_an_op_in_an_open_scope_is_captioned_by_its_own_name():
    scopes = ["", "enc/conv", "enc/conv"]
    g = _fan(["x", "enc/conv/kernel", "enc/conv/Conv2D"], scopes)
    nodes = _by_id(explorer_elements(g, scopes, {"enc", "enc/conv"}))
    assert nodes["op:enc/conv/kernel"]["data"]["_caption"] == "kernel"
    assert nodes["op:enc/conv/kernel"]["data"]["name"] == "enc/conv/kernel"
    assert nodes["s:enc/conv"]["data"]["_caption"] == "conv (open)"


def test_numbered_ops_stack_in_natural_order():
    # DOPPLER's files name ops by number: ops 1, 2 and 10 at level 1 stack 1, 2, 10 (as strings: 1, 10, 2)
    g = _fan(["0", "10", "2", "1"], [""] * 4)
    nodes = _by_id(explorer_elements(g, [""] * 4, set()))
    assert sorted(["op:1", "op:2", "op:10"], key=lambda i: nodes[i]["position"]["y"]) == ["op:1", "op:2", "op:10"]


def test_colour_by_op_type_chooses_the_types_doing_the_work():
    # 7 of 10 ops are variables; conv holds 3 + Conv2D (3 ms) + BiasAdd (0.5 ms), fc 2 + MatMul (2 ms), bn 2
    # variables only, after a source op. Before: every scope's type was its most common one, Variable.
    scopes = ["", "conv", "conv", "conv", "conv", "conv", "fc", "fc", "fc", "bn", "bn"]
    types = ["Placeholder", "Variable", "Variable", "Variable", "Conv2D", "BiasAdd", "Variable", "Variable", "MatMul",
             "Variable", "Variable"]
    compute = [0, 0, 0, 0, 3e-3, 0.5e-3, 0, 0, 2e-3, 0, 0]
    g = _fan([f"op{i}" for i in range(11)], scopes, types, compute)
    view = explorer_elements(g, scopes, set(), color_by="op type")
    nodes = _by_id(view)
    assert {i: nodes[i]["data"]["type"] for i in ("s:conv", "s:fc", "s:bn", "op:op0")} == {
        "s:conv": "Conv2D", "s:fc": "MatMul", "s:bn": "Variable", "op:op0": "Placeholder"}
    assert view.legend == {"Conv2D": PALETTE[0], "MatMul": PALETTE[1],
                           "no compute: Placeholder, Variable": NO_COMPUTE_COLOR}
    assert nodes["s:bn"]["data"]["_color"] == nodes["op:op0"]["data"]["_color"] == NO_COMPUTE_COLOR


def test_level_bands_of_a_short_graph_are_one_box_each():
    # five levels: each band is one level, so "level 1" holds the ops, not a second box "level 1" (two boxes
    # titled "level 1 (open)" before)
    names = ["0", "1", "2", "3", "4", "5"]
    g = CompGraph("chain", names, compute_any=np.ones(6), output_bytes=np.ones(6), persistent_bytes=np.zeros(6),
                  edge_src=[0, 0, 1, 3, 4], edge_dst=[1, 2, 3, 4, 5], edge_bytes=np.ones(5), op_types=["T"] * 6,
                  scope=[""] * 6)
    bands, own = hierarchy_scopes(g.scope, levels(g))
    assert not own and bands == ["level 0", "level 1", "level 1", "level 2", "level 3", "level 4"]
    view = explorer_elements(g, bands, {"level 0", "level 1", "level 2", "level 3", "level 4"})
    titles = [n["data"]["_caption"] for n in view.elements["nodes"] if n["data"]["label"] == "open"]
    assert titles == ["level 0 (open)", "level 1 (open)", "level 2 (open)", "level 3 (open)", "level 4 (open)"]


def test_framed_adds_two_invisible_corners_carrying_the_margins():
    # one leaf at (0, 0), 20 px, no box: its extent is its caption slot, x -70..70, and the node down to its
    # caption, y -10..10 + 22. Frame 340 × 142 less margins (10, 20, 10, 20): zoom min(300 / 140, 122 / 42) = 15/7,
    # so the corners sit 20 / (15/7) = 9.33 and 10 / (15/7) = 4.67 further out
    elements = {"nodes": [{"data": {"id": "op:a", "label": "op", "_size": 20.0}, "position": {"x": 0.0, "y": 0.0}}],
                "edges": []}
    out = framed(elements, frame=(340, 142), margin=(10, 20, 10, 20))
    assert out["nodes"][0] is elements["nodes"][0] and out["edges"] is elements["edges"]
    corners = {n["data"]["id"]: (n["position"]["x"], n["position"]["y"]) for n in out["nodes"][1:]}
    assert corners == {"frame:top-left": pytest.approx((-79.33, -14.67), abs=0.01),
                       "frame:bottom-right": pytest.approx((79.33, 36.67), abs=0.01)}
    assert {n["data"]["label"] for n in out["nodes"][1:]} == {"frame"}
    assert framed({"nodes": [], "edges": []}) == {"nodes": [], "edges": []}
