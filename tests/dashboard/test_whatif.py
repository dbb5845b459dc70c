"""The Place page's what-if editor (issue 58, item 2): edits as text, their replay through the simulator on a
five-op graph whose schedules are worked out by hand, and the editor on the page — a move whose makespan is the
simulator's for the edited placement computed here, undo and redo, the link's round trip, *Save as run* with its
parent."""

from __future__ import annotations

import itertools
import json
import re

import numpy as np
import pytest

from dashboard.data.whatif import (
    MAX_EDITS,
    Edit,
    apply_edit,
    device_changes,
    edits_text,
    parse_edit,
    read_edits,
    replay_edits,
    scope_choices,
)
from engine.cluster import cluster_from_dict
from engine.errors import RunError, SpecError
from engine.graph.io import graph_from_dict
from engine.sim.simulator import Simulator, simulate

MS = 1e-3


def tiny(memory: float = 1e12, mode: str = "default", persistent: float = 0.0):
    """Five ops in a chain, 1 ms each, every output 1 MB; ``cpu:0``, ``gpu:0``, ``gpu:1`` at 1 GB/s (a cross-device
    edge takes 1 ms) with no overheads. ``w1`` and ``w2`` are colocated, ``gpuonly`` has no CPU time, ``pinned`` is
    pinned to gpu:0."""
    ops = [{"name": "in", "scope": "enc/l1"}, {"name": "w1", "scope": "enc/l1", "colocate": "g"},
           {"name": "w2", "scope": "enc/l2", "colocate": "g"}, {"name": "gpuonly", "scope": "enc/l2"},
           {"name": "pinned", "scope": "dec", "device": "gpu:0"}]
    for op in ops:
        op.update(compute={"gpu": MS} if op["name"] == "gpuonly" else MS, output_bytes=1e6,
                  persistent_bytes=persistent)
    graph = graph_from_dict({"schema": "placelab.graph/1", "name": "tiny", "ops": ops,
                             "edges": [{"src": a["name"], "dst": b["name"]} for a, b in itertools.pairwise(ops)]})
    cluster = cluster_from_dict({
        "schema": "placelab.cluster/1", "name": "tiny3",
        "devices": [{"name": n, "kind": n[:3], "memory_bytes": memory} for n in ("cpu:0", "gpu:0", "gpu:1")],
        "link": {"bandwidth_bytes_per_s": 1e9, "latency_s": 0.0},
        "simulation": {"mode": mode, **({"op_overhead_s": 0.0, "transfer_gap_s": 0.0} if mode != "work_conserving"
                                        else {"memory_aware": True})}})
    return graph, cluster


def on_gpu0(graph, cluster):
    sim = Simulator(graph, cluster)
    base = np.ones(graph.num_ops, dtype=np.int64)  # every op on gpu:0: 0-1, 1-2, 2-3, 3-4, 4-5 ms
    return sim, base, sim.run(base)


# -- edits as the link writes them ---------------------------------------------------------------------


@pytest.mark.parametrize("edit", [
    Edit("op", "a,b>c@d*%2C e", "gpu:1"),
    Edit("op", "x/y", "dev@,>*"),
    Edit("scope", "enc/l1", "gpu:0"),
    Edit("range", "gpu:0", "cpu:0", (1e-05, 2.5)),
    Edit("range", "a@b", "gpu:1", (0.0, 0.0)),
])
def test_an_edit_reads_back_from_its_link_text(edit):
    assert parse_edit(edit.text()) == edit
    assert "," not in edit.text()
    assert read_edits(edits_text({0: [edit], 3: [edit, edit]})) == ({0: [edit], 3: [edit, edit]}, [])


def test_the_link_text_is_compact():
    assert edits_text({0: [Edit("op", "conv1", "gpu:1"), Edit("scope", "enc", "gpu:0")],
                       1: [Edit("range", "gpu:0", "gpu:1", (1.5, 2.25))]}) == \
        "0:conv1>gpu:1,0:enc/*>gpu:0,1:gpu:0@1.5~2.25>gpu:1"


def test_bad_edit_text_is_one_line_each_and_the_rest_applies():
    text = "nonsense,0:a>,0:dev@x~y>gpu:0,0:dev@3~1>gpu:0,0:dev@nan~1>gpu:0,0:ok>gpu:1"
    per_result, problems = read_edits(text)
    assert per_result == {0: [Edit("op", "ok", "gpu:1")]}
    assert len(problems) == 5 and all("\n" not in p for p in problems)
    assert problems[0] == "'nonsense' is not N:WHAT>DEVICE (N: the result's number)"
    many = ",".join(f"0:op{k}>gpu:1" for k in range(MAX_EDITS + 3))
    per_result, problems = read_edits(many)
    assert len(per_result[0]) == MAX_EDITS and problems == [f"result 0 has more than {MAX_EDITS} edits"] * 3


# -- edits replayed through the simulator -------------------------------------------------------------


def test_scopes_are_every_prefix_with_its_op_count():
    graph, _ = tiny()
    assert scope_choices(graph) == {"dec": 1, "enc": 4, "enc/l1": 2, "enc/l2": 2}


def test_a_colocated_op_takes_its_group_and_ops_that_cannot_go_stay():
    graph, cluster = tiny()
    sim, base, schedule = on_gpu0(graph, cluster)
    devices, n = apply_edit(sim, base, schedule, Edit("op", "w1", "gpu:1"))
    assert devices.tolist() == [1, 2, 2, 1, 1] and n == 2  # w2 goes with w1
    devices, n = apply_edit(sim, base, schedule, Edit("scope", "enc", "cpu:0"))
    assert devices.tolist() == [0, 0, 0, 1, 1] and n == 3  # gpuonly has no CPU time: it stays
    devices, n = apply_edit(sim, base, schedule, Edit("scope", "enc/l2", "cpu:0"))
    assert devices.tolist() == [1, 0, 0, 1, 1] and n == 2  # w2's group brings w1 from enc/l1
    # the ops gpu:0 runs in 0-1.5 ms: in (0-1) and w1 (1-2), and w1's group
    devices, n = apply_edit(sim, base, schedule, Edit("range", "gpu:0", "gpu:1", (0.0, 1.5)))
    assert devices.tolist() == [2, 2, 2, 1, 1] and n == 3


@pytest.mark.parametrize(("edit", "says"), [
    (Edit("op", "nope", "gpu:1"), "no op 'nope' in 'tiny'"),
    (Edit("op", "in", "gpu:9"), "no device 'gpu:9' in 'tiny3' (it has cpu:0, gpu:0, gpu:1)"),
    (Edit("scope", "enc/l3", "gpu:1"), "no op of 'tiny' is in scope 'enc/l3'"),
    (Edit("range", "gpu:1", "gpu:0", (0.0, 5.0)), "no op runs on 'gpu:1' in 0–5 ms"),
    (Edit("range", "tpu:0", "gpu:0", (0.0, 5.0)), "no device 'tpu:0' in 'tiny3'"),
    (Edit("op", "pinned", "gpu:1"), "moves nothing: op 'pinned' cannot go there (pinned to 'gpu:0')"),
    (Edit("op", "gpuonly", "cpu:0"), "moves nothing: op 'gpuonly' cannot go there (no compute time on 'cpu')"),
    (Edit("op", "in", "gpu:0"), "moves nothing: already there"),
])
def test_an_edit_that_does_not_apply_is_one_line(edit, says):
    graph, cluster = tiny()
    sim, base, schedule = on_gpu0(graph, cluster)
    with pytest.raises(SpecError) as err:
        apply_edit(sim, base, schedule, edit)
    assert says in str(err.value) and "\n" not in str(err.value)
    outcome = replay_edits(sim, base, schedule, [edit, Edit("op", "in", "cpu:0")], skip=True)
    assert outcome.edits == (Edit("op", "in", "cpu:0"),) and len(outcome.problems) == 1


def test_replayed_edits_give_the_makespan_worked_out_by_hand():
    """enc to cpu:0 (in, w1, w2: 0-3 ms), then w2's output crosses to gpu:0 (3-4 ms), gpuonly 4-5, pinned 5-6."""
    graph, cluster = tiny()
    sim, base, schedule = on_gpu0(graph, cluster)
    assert schedule.makespan == pytest.approx(5 * MS)
    outcome = replay_edits(sim, base, schedule, [Edit("op", "in", "gpu:1"), Edit("scope", "enc", "cpu:0")])
    assert outcome.devices.tolist() == [0, 0, 0, 1, 1] and outcome.moved == (1, 3)
    assert outcome.schedule.makespan == pytest.approx(6 * MS)
    assert outcome.schedule.makespan == simulate(graph, cluster, outcome.devices).makespan
    table = device_changes(cluster, schedule, outcome.schedule)
    assert table["ops"].tolist() == [3, 2, 0] and table["ops Δ"].tolist() == [3, -3, 0]
    assert table["compute (ms)"].tolist() == pytest.approx([3.0, 2.0, 0.0])
    assert table["compute Δ (ms)"].tolist() == pytest.approx([3.0, -3.0, 0.0])
    assert table["memcpy (ms)"].tolist() == pytest.approx([1.0, 0.0, 0.0])  # cpu:0 sends w2's 1 MB
    assert not table["OOM"].any() and not table["OOM before"].any()


def test_a_time_range_reads_the_schedule_before_its_edit():
    """After in → gpu:1, gpu:0 runs w1 at 2-3 ms (in ends at 1, its output arrives at 2): 0-1.5 ms on gpu:0 holds no op
    any more, 1.5-2.5 holds w1 (and its group)."""
    graph, cluster = tiny()
    sim, base, schedule = on_gpu0(graph, cluster)
    first = Edit("op", "in", "gpu:1")
    with pytest.raises(SpecError, match=re.escape("no op runs on 'gpu:0' in 0–1.5 ms")):
        replay_edits(sim, base, schedule, [first, Edit("range", "gpu:0", "cpu:0", (0.0, 1.5))])
    outcome = replay_edits(sim, base, schedule, [first, Edit("range", "gpu:0", "cpu:0", (1.5, 2.5))])
    assert outcome.devices.tolist() == [2, 0, 0, 1, 1]


@pytest.mark.parametrize("mode", ["default", "work_conserving"])
def test_an_edit_that_does_not_fit_in_memory_reads_oom(mode):
    """Each op holds 0.4 GB of weights on 1 GB devices: two fit on a device, five do not (the memory-aware mode
    deadlocks, which reads as OOM too)."""
    graph, cluster = tiny(memory=1e9, mode=mode, persistent=0.4e9)
    sim = Simulator(graph, cluster)
    base = np.array([0, 2, 2, 1, 1])
    before = sim.run(base)
    assert not before.any_oom
    outcome = replay_edits(sim, base, before, [Edit("scope", "enc", "gpu:0")])
    table = device_changes(cluster, before, outcome.schedule)
    assert table["OOM"].tolist() == [False, True, False] and table["OOM before"].tolist() == [False] * 3
    if mode == "default":
        assert table["peak memory (GB)"][1] == pytest.approx(2.0 + 0.001 * 1, abs=0.01)  # five weights + an output


def test_a_run_json_with_a_parent_of_the_wrong_type_is_refused(tmp_path):
    from engine.store.runs import RunStore

    store = RunStore(tmp_path)
    run = store.create("place", graph_name="g", graph_hash="0", cluster="k80x2", placer="x", parameters={}, seed=0)
    run.finish("done", {})
    assert "parent" not in store.load(run.id).meta  # a run without the field loads
    doc = json.loads((run.path / "run.json").read_text())
    (run.path / "run.json").write_text(json.dumps({**doc, "parent": 5}))
    with pytest.raises(RunError, match="field 'parent' has the wrong type"):
        store.load(run.id)


# -- the editor on the page ----------------------------------------------------------------------------

SPEC = "gen:chainmm"  # 112 ops in scopes meta0/shard0 ...; the sidebar's default cluster, k80x2


def expected_after(moves: dict[str, int]):
    """Round-robin's placement of SPEC on k80x2 with ``moves`` (op name → device) applied, simulated here."""
    from engine.presets import PRESETS
    from engine.specs import load_graph
    from policies.registry import make_placer

    graph, cluster = load_graph(SPEC), PRESETS["k80x2"]()
    base = make_placer("round-robin").place(graph, cluster).devices.copy()
    edited = base.copy()
    for name, device in moves.items():
        edited[graph.index[name]] = device
    return graph, base, edited, simulate(graph, cluster, base).makespan, simulate(graph, cluster, edited).makespan


def whatif_state(app) -> dict:
    return app.session_state["place_results"]["results"][0]["whatif"]


def metrics(app) -> dict[str, str]:
    return {m.label: m.value for m in app.metric}


def move_op(app, graph, name: str, device: int):
    app.radio(key="place_whatif_move_0").set_value("op")
    app.selectbox(key="place_whatif_op_0").set_value(graph.index[name])
    app.selectbox(key="place_whatif_to_0").set_value(device)
    return app.button(key="place_whatif_apply_0").click().run()


def heavy_op(graph, base) -> str:
    """The op on gpu:0 with the most compute: moving it changes the makespan."""
    on0 = np.flatnonzero(base == 0)
    return graph.op_names[int(on0[np.argmax(graph.min_compute()[on0])])]


def test_moving_an_op_shows_the_simulators_makespan_and_undo_redo_restore(empty_runs):
    from dashboard.data.format import fmt_ms
    from tests.dashboard.test_pages import page_app

    graph, base, _, _, _ = expected_after({})
    name = heavy_op(graph, base)
    _, _, edited, before, after = expected_after({name: 1})
    assert after != pytest.approx(before, rel=1e-6)  # the move matters
    app = page_app("place", SPEC).run()
    app.multiselect(key="place_placers").set_value(["round-robin"]).run()
    app.button(key="place_run").click().run()
    assert "Makespan after" not in metrics(app)
    move_op(app, graph, name, 1)
    assert not app.exception and not app.error
    shown = metrics(app)
    assert shown["Makespan before"] == fmt_ms(before) and shown["Makespan after"] == fmt_ms(after)
    assert shown["Ops moved"] == f"1 of {graph.num_ops}"
    outcome = whatif_state(app)["outcome"]
    assert outcome.schedule.makespan == pytest.approx(after, rel=1e-12)
    assert np.array_equal(outcome.devices, edited)
    edits = next(t.value for t in app.dataframe if list(t.value.columns)[:2] == ["#", "edit"])
    assert edits["edit"].tolist() == [f"op '{name}' → gpu:1"] and edits["ops moved"].tolist() == [1]
    app.button(key="place_whatif_undo_0").click().run()
    assert whatif_state(app)["edits"] == [] and "Makespan after" not in metrics(app)
    app.button(key="place_whatif_redo_0").click().run()
    assert metrics(app)["Makespan after"] == fmt_ms(after)
    assert whatif_state(app)["outcome"].schedule.makespan == pytest.approx(after, rel=1e-12)
    app.button(key="place_whatif_reset_0").click().run()  # undo all: redo brings the edit back
    assert whatif_state(app)["edits"] == []
    app.button(key="place_whatif_redo_0").click().run()
    assert whatif_state(app)["edits"] == [Edit("op", name, "gpu:1")]
    move_op(app, graph, name, 1)  # already there: one error line, nothing added
    assert [e.value for e in app.error] == [f"Not applied: op '{name}' → gpu:1: moves nothing: already there"]
    assert len(whatif_state(app)["edits"]) == 1


def test_the_link_holds_the_edits_and_a_reload_restores_them(empty_runs):
    from tests.dashboard.test_link import app_with_link, params, warnings

    graph, base, _, _, _ = expected_after({})
    name = heavy_op(graph, base)
    app = app_with_link({"graph": SPEC}).run()
    app.multiselect(key="place_placers").set_value(["round-robin"]).run()
    app.button(key="place_run").click().run()
    move_op(app, graph, name, 1)
    app.radio(key="place_whatif_move_0").set_value("scope").run()
    app.selectbox(key="place_whatif_scope_0").set_value("meta1")
    app.selectbox(key="place_whatif_to_0").set_value(0)
    app.button(key="place_whatif_apply_0").click().run()
    assert not app.exception and not app.error
    link_params = params(app)
    assert link_params["edits"] == f"0:{name}>gpu:1,0:meta1/*>gpu:0"
    before = whatif_state(app)["outcome"]
    again = app_with_link(link_params).run()  # the reload
    assert not again.exception and not again.error and not warnings(again)
    after = whatif_state(again)["outcome"]
    assert after.edits == before.edits and np.array_equal(after.devices, before.devices)
    assert after.schedule.makespan == before.schedule.makespan
    assert params(again) == link_params
    # a link whose edits do not apply: one warning, the rest applies
    bad = {**link_params, "edits": f"0:nope>gpu:1,0:{name}>gpu:9,junk,0:{name}>gpu:1,5:{name}>gpu:1"}
    third = app_with_link(bad).run()
    assert not third.exception and not third.error
    assert warnings(third) == ["Ignored the link's edits: 'junk' is not N:WHAT>DEVICE (N: the result's number) "
                               "(and 3 more)"]
    assert whatif_state(third)["edits"] == [Edit("op", name, "gpu:1")]
    assert params(third)["edits"] == f"0:{name}>gpu:1"


def test_save_as_run_stores_the_edited_placement_with_its_parent(empty_runs):
    from engine.store.records import load_placement_run
    from engine.store.runs import RunStore
    from tests.dashboard.test_pages import page_app

    graph, base, _, _, _ = expected_after({})
    name = heavy_op(graph, base)
    _, _, edited, _, after = expected_after({name: 1})
    app = page_app("place", SPEC).run()
    app.multiselect(key="place_placers").set_value(["round-robin"]).run()
    app.button(key="place_run").click().run()
    move_op(app, graph, name, 1)
    app.button(key="place_whatif_save_0").click().run()
    assert not app.exception and not app.error
    runs = {("what-if" in r.meta["tags"]): r for r in RunStore(empty_runs).list()}
    assert len(runs) == 2  # the parent was saved first: it was only kept for a reload
    child, parent = runs[True], runs[False]
    assert child.meta["parent"] == parent.id and "parent" not in parent.meta and "edits" not in parent.meta
    assert child.meta["edits"] == [{"move": "op", "what": name, "to": "gpu:1", "ops": 1}]
    assert child.meta["name"] == "round-robin + 1 edit · chainmm-g4 · k80x2"
    assert child.meta["placer"] == parent.meta["placer"] == "round-robin"
    assert child.meta["metrics"]["makespan_s"] == pytest.approx(after, rel=1e-12)
    assert np.array_equal(load_placement_run(child).placement.devices, edited)
    assert np.array_equal(load_placement_run(parent).placement.devices, base)  # a run without the fields loads
    assert any(s.value.startswith(f"Saved the edited placement as run {child.id}") for s in app.success)
    assert f"These edits are stored as run `{child.id}` (parent `{parent.id}`)" in [c.value for c in app.caption]


def test_a_click_on_the_after_timeline_picks_an_op_or_a_devices_time_span(monkeypatch):
    import streamlit as st

    from dashboard.figures import timeline
    from dashboard.widgets import whatif
    from engine.generators import random_dag
    from engine.presets import PRESETS

    g, c = random_dag(ops=800, seed=2), PRESETS["k80x2"]()
    sched = Simulator(g, c).run(np.arange(g.num_ops) % 2)
    state: dict = {}
    monkeypatch.setattr(st, "session_state", state)
    bars = timeline(sched, g, c, window_ms=(0.0, float(sched.op_end[5] * 1e3)))
    state["place_whatif_after_0"] = {"selection": {"points": [{"curve_number": 0, "point_index": 0}]}}
    whatif._on_pick(0, g, c, bars)
    assert state["place_whatif_move_0"] == "op"
    assert state["place_whatif_op_0"] == g.index[bars.data[0].customdata[0][0]]
    binned = timeline(sched, g, c)
    lane = next(i for i, t in enumerate(binned.data) if t.meta == "bins" and t.name == "gpu:1")
    state["place_whatif_after_0"] = {"selection": {"points": [{"curve_number": lane, "point_index": 3}]}}
    whatif._on_pick(0, g, c, binned)
    row = binned.data[lane].customdata[3]
    assert state["place_whatif_move_0"] == "range" and state["place_whatif_lane_0"] == 1
    assert state["place_whatif_window_0"] == pytest.approx((float(row[2]), float(row[3])))


def test_the_op_selected_in_the_graph_is_one_click_away(empty_runs):
    from tests.dashboard.test_pages import explorer_app

    app = explorer_app("place", SPEC)
    app.session_state["explorer"] = "place_0_gv"
    app.run()
    app.multiselect(key="place_placers").set_value(["round-robin"]).run()
    app.button(key="place_run").click().run()
    assert not [b for b in app.button if b.key == "place_whatif_pick_0"]
    app.session_state["pick"] = 7  # as a click on op 7 in the timeline or the graph would
    app.radio(key="place_whatif_move_0").set_value("scope").run()
    app.button(key="place_whatif_pick_0").click().run()
    assert app.radio(key="place_whatif_move_0").value == "op" and app.selectbox(key="place_whatif_op_0").value == 7
