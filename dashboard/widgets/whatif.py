"""The Place page's what-if editor (issue 58, item 2): move an op, a scope or a device's ops in a time range of a
result to another device and see at once what the same simulator makes of it — the makespan beside the
old one, the change per device (compute, memcpy, memory peak, OOM), the two timelines on one time axis with
the moved ops marked, and the ops that moved; undo, redo, reset; *Save as run* stores the edited placement
with its parent run. The edits live with their result and in the link (``edits=``), so a reload restores
them. The logic is :mod:`dashboard.data.whatif`; this module only lays it out.

The editor is a fragment: *Apply*, *Undo*, *Redo* and a click in its timeline rerun the editor alone (the
result's own timeline, explorer and figures around it stay as they are), and the editor writes the link
itself on such a rerun; after *Save as run* the whole page runs again, so the results table names the runs.

What to move is picked with the editor's own widgets (an op by name, type or scope; a scope of the
explorer's; a device and a time range), or by a click: an op's bar in the *after* timeline picks that op,
a busy bin of a crowded lane picks that device and the bin's time span, and the op selected in the
result's graph explorer or timeline is one click away.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pandas as pd
import streamlit as st

from dashboard import state as keys
from dashboard.context import cluster_label, keep
from dashboard.data import link
from dashboard.data.format import fmt_ms
from dashboard.data.place import default_run_name, save_result
from dashboard.data.whatif import (
    MAX_EDITS,
    MOVES,
    Edit,
    Outcome,
    default_name,
    device_changes,
    edits_text,
    moved_mask,
    replay_edits,
    save_edited,
    scope_choices,
)
from dashboard.figures import timeline
from dashboard.figures.diff import placement_diff
from dashboard.figures.timeline import bin_at_points, lane_names, match_ops
from dashboard.stores import run_store
from dashboard.widgets.explorer import selected_op
from dashboard.widgets.link import set_page_params, write_link
from dashboard.widgets.schedule import op_at_points
from dashboard.widgets.ui import show_error, show_figure, show_table, table_downloads
from engine.errors import PlacelabError, SpecError
from engine.sim.simulator import Simulator

__all__ = ["edits_param", "restore_edits", "show_whatif"]

#: Ops the op picker lists at once (those matching the search; the op picked is always among them).
MAX_OP_CHOICES = 1000
#: Rows of the moved-ops table shown (the CSV holds them all).
DIFF_ROWS = 500
_MOVE_LABELS = {"op": "one op", "scope": "a scope", "range": "a device's ops in a time range"}


@st.cache_data(max_entries=8, show_spinner=False)
def _count(n: int, one: str, many: str | None = None) -> str:
    """``1 op``, ``2 ops``: a count with its noun in the right number."""
    return f"{n:,} {one if n == 1 else many or one + 's'}"


def _device_label(device) -> str:
    """A device's name, with its kind where the name does not already say it (``cpu:0``, ``gpu:1 (V100)``)."""
    extra = device.model or ("" if device.name.split(":")[0] == device.kind else device.kind)
    return f"{device.name} ({extra})" if extra else device.name


def _scopes(_graph, graph_hash: str) -> dict[str, int]:
    return scope_choices(_graph)


def _state(r: dict) -> dict:
    """Result ``r``'s editor: its edits, the edits undone (redo), the last error, the runs saved, the outcome."""
    return r.setdefault("whatif", {"edits": [], "undone": [], "error": None, "saved": {}, "outcome": None})


def _outcome(state: dict, r: dict) -> Outcome:
    """The result's placement after its edits, simulated as the result was (kept until the edits change)."""
    w = _state(r)
    edits = tuple(w["edits"])
    if w["outcome"] is None or w["outcome"].edits != edits:
        sim = Simulator(state["graph"], state["cluster"])
        w["outcome"] = replay_edits(sim, r["placement"].devices, r["schedule"], edits, skip=True)
        w["edits"] = list(w["outcome"].edits)
    return w["outcome"]


def _linked(state: dict | None) -> list[dict]:
    """The results as the link numbers them: those the link names (a result kept nowhere is not named)."""
    return [r for r in (state or {}).get("results", []) if r.get("run_id") or r.get("kept_id")]


def edits_param(state: dict | None) -> str | None:
    """The link's ``edits``: every result's edits, or None where there are none or they are too long for a link."""
    text = edits_text({n: _state(r)["edits"] for n, r in enumerate(_linked(state)) if r.get("whatif")})
    return text if text and len(text) <= link.MAX_VALUE else None


def restore_edits(text: str) -> None:
    """The edits the link's ``edits`` holds, applied to the results in hand (call after they are restored); what
    does not apply is one warning line."""
    state = st.session_state.get(keys.PLACE_RESULTS)
    per_result, problems = link.read_edits(text)
    results = _linked(state)
    for n, edits in per_result.items():
        if n >= len(results):
            problems.append(f"{len(edits)} edit(s) of result {n}, but the link names {len(results)} result(s)")
            continue
        r = results[n]
        sim = Simulator(state["graph"], state["cluster"])
        outcome = replay_edits(sim, r["placement"].devices, r["schedule"], edits, skip=True)
        _state(r).update(edits=list(outcome.edits), undone=[], outcome=outcome)
        problems += outcome.problems
    line = link.edits_warning(problems)
    if line:
        st.warning(line, icon=":material/link_off:")


# -- the callbacks (they run before the page does, so the page and the link show their effect) -------


def _edit(i: int, graph, cluster) -> Edit:
    """The edit the editor's widgets describe."""
    s, key = st.session_state, partial(keys.place_whatif, i)
    to = cluster.devices[s[key("to")]].name
    move = s.get(key("move"), "op")
    if move == "scope":
        if not s.get(key("scope")):
            raise SpecError("this graph's ops carry no scopes: move an op or a device's ops in a time range")
        return Edit("scope", s[key("scope")], to)
    if move == "range":
        lo, hi = s[key("window")]
        return Edit("range", cluster.devices[s[key("lane")]].name, to, (float(lo), float(hi)))
    return Edit("op", graph.op_names[s[key("op")]], to)


def _apply(state: dict, r: dict, i: int) -> None:
    w = _state(r)
    w["error"] = None
    try:
        if len(w["edits"]) >= MAX_EDITS:
            raise SpecError(f"at most {MAX_EDITS} edits: save this placement as a run and go on from there")
        edit = _edit(i, state["graph"], state["cluster"])
        w["outcome"] = _outcome(state, r).then(Simulator(state["graph"], state["cluster"]), edit)
        w["edits"], w["undone"] = list(w["outcome"].edits), []
    except PlacelabError as exc:
        w["error"] = f"Not applied: {exc}"


def _undo(r: dict) -> None:
    w = _state(r)
    if w["edits"]:  # a second click that arrived before the rerun disabled the button finds none
        w["undone"].append(w["edits"].pop())
    w["error"] = None


def _redo(r: dict) -> None:
    w = _state(r)
    if w["undone"]:
        w["edits"].append(w["undone"].pop())
    w["error"] = None


def _reset(r: dict) -> None:
    """Undo every edit (redo brings them back one by one)."""
    w = _state(r)
    w["undone"] += reversed(w["edits"])
    w["edits"], w["error"] = [], None


def _take_op(i: int, op: int) -> None:
    st.session_state[keys.place_whatif(i, "move")] = "op"
    st.session_state[keys.place_whatif(i, "op")] = op


def _on_pick(i: int, graph, cluster, fig) -> None:
    """A click on the *after* timeline: an op's bar picks the op; a busy bin of a device's compute lane picks the
    device and the bin's time span."""
    selection = (st.session_state.get(keys.place_whatif(i, "after")) or {}).get("selection") or {}
    points = selection.get("points", [])
    op = op_at_points(fig, points, graph.index)
    if op is not None:
        _take_op(i, op)
        return
    lanes = lane_names(cluster)
    for p in points:
        trace = fig.data[p["curve_number"]]
        span = bin_at_points(fig, [p])
        if span is not None and trace.name in lanes and lanes.index(trace.name) % 2 == 0:
            st.session_state[keys.place_whatif(i, "move")] = "range"
            st.session_state[keys.place_whatif(i, "lane")] = lanes.index(trace.name) // 2
            st.session_state[keys.place_whatif(i, "window")] = span
            return


def _save(state: dict, r: dict, i: int) -> None:
    """Store the edited placement with its parent: the result is saved first where it is not yet."""
    w = _state(r)
    w["error"] = None
    graph, cluster = state["graph"], state["cluster"]
    try:
        store = run_store()
        if not r["run_id"]:
            parent = save_result(store, graph, cluster, r, ["app"])
            typed = (st.session_state.get(keys.place_result(i, "name")) or "").strip()  # the result's own name box
            store.rename(parent.id, typed or default_run_name(r["placer"], graph.name, cluster_label(cluster)))
            r["run_id"] = parent.id
        outcome = _outcome(state, r)
        name = (st.session_state.get(keys.place_whatif(i, "name")) or "").strip()
        run = save_edited(store, graph, cluster, r, outcome, name or default_name(
            r["placer"], len(outcome.edits), graph.name, cluster_label(cluster)))
        w["saved"][outcome.edits] = run.id
        w["saved_now"] = True
        st.session_state[keys.PLACE_SAVED_MESSAGE] = (f"Saved the edited placement as run {run.id} "
                                                      f"(parent {r['run_id']})")
    except (PlacelabError, OSError) as exc:
        w["error"] = f"Save as run: {exc}"


# -- the editor ---------------------------------------------------------------------------------------


def _pick_what(i: int, graph, cluster, current: Outcome) -> None:
    """What to move: an op (searchable), a scope, or a device's ops in a time range of the current schedule."""
    key = partial(keys.place_whatif, i)
    moves = list(MOVES)
    move = st.radio("Move", moves, horizontal=True, key=keep(key("move"), moves[0], options=moves),
                    format_func=_MOVE_LABELS.get)
    if move == "op":
        cols = st.columns([2, 3], vertical_alignment="bottom")
        query = cols[0].text_input("Search ops (name, type or scope)", key=keep(key("find"), ""))
        hits = np.flatnonzero(match_ops(graph, query)) if query.strip() else np.arange(graph.num_ops)
        options = hits[:MAX_OP_CHOICES].tolist()
        chosen = st.session_state.get(key("op"))
        if isinstance(chosen, int) and 0 <= chosen < graph.num_ops and chosen not in options:
            options.append(chosen)
        if not options:
            cols[1].caption("No op matches.")
            return
        listed = f"; the first {MAX_OP_CHOICES:,} listed" if len(hits) > MAX_OP_CHOICES else ""
        cols[1].selectbox(f"Op ({_count(len(hits), 'match', 'matches')}{listed})", options,
                          key=keep(key("op"), options[0], options=options),
                          format_func=lambda o: f"{graph.op_names[o]} — on {cluster.devices[current.devices[o]].name}")
    elif move == "scope":
        scopes = _scopes(graph, graph.content_hash)
        if not scopes:
            st.info("This graph's ops carry no scopes: move an op, or a device's ops in a time range.")
            return
        names = list(scopes)
        st.selectbox("Scope (and every scope under it)", names, key=keep(key("scope"), names[0], options=names),
                     format_func=lambda s: f"{s} ({scopes[s]:,} ops)")
    else:
        devices = list(range(cluster.num_devices))
        end = float(current.schedule.makespan * 1e3) or 1.0
        cols = st.columns([1, 3])
        cols[0].selectbox("Device", devices, key=keep(key("lane"), 0, options=devices),
                          format_func=lambda d: cluster.devices[d].name)
        lo, hi = st.session_state.get(key("window"), (0.0, end))
        st.session_state[key("window")] = (min(max(float(lo), 0.0), end), min(max(float(hi), 0.0), end))
        cols[1].slider("Its ops running in (ms, the schedule as edited so far)", 0.0, end, step=end / 1000,
                       key=key("window"), help="Or click a busy bin of a device's lane in the timeline below")


def _buttons(state: dict, r: dict, i: int) -> None:
    key, w = partial(keys.place_whatif, i), _state(r)
    cols = st.columns([2, 1, 1, 1, 3])
    cols[0].button("Apply", type="primary", key=key("apply"), on_click=_apply, args=(state, r, i),
                   icon=":material/play_arrow:", disabled=len(w["edits"]) >= MAX_EDITS)
    cols[1].button("Undo", key=key("undo"), on_click=_undo, args=(r,), disabled=not w["edits"],
                   icon=":material/undo:")
    cols[2].button("Redo", key=key("redo"), on_click=_redo, args=(r,), disabled=not w["undone"],
                   icon=":material/redo:")
    cols[3].button("Reset", key=key("reset"), on_click=_reset, args=(r,), disabled=not w["edits"],
                   icon=":material/restart_alt:")


def _comparison(state: dict, r: dict, i: int, current: Outcome) -> None:
    """Old against new: makespans, the change per device, the two timelines on one axis, the ops moved."""
    graph, cluster, w = state["graph"], state["cluster"], _state(r)
    key, before, after = partial(keys.place_whatif, i), r["schedule"], current.schedule
    moved = moved_mask(cluster, r["placement"].devices, current.devices)
    cols = st.columns(4)
    cols[0].metric("Makespan before", fmt_ms(before.makespan))
    ratio = after.makespan / before.makespan if before.makespan else float("nan")
    cols[1].metric("Makespan after", fmt_ms(after.makespan), delta_color="inverse",
                   delta=f"{(after.makespan - before.makespan) * 1e3:+.4g} ms · ×{ratio:.3f}")
    cols[2].metric("Ops moved", f"{int(moved.sum()):,} of {graph.num_ops:,}")
    oom = [d.name for d, o in zip(cluster.devices, after.oom, strict=True) if o]
    cols[3].metric("Out of memory after", ("yes: " + ", ".join(oom)) if oom else "no")
    show_table(device_changes(cluster, before, after, graph.memory_known),
               None if graph.memory_known else {"peak memory (GB)": "unknown", "peak Δ (GB)": "unknown"})
    end = max(before.makespan, after.makespan) * 1e3 * 1.03
    placer = r["placer"]
    if w.get("before") is None:  # the result's own timeline, built once (this editor's copy: its axis follows)
        w["before"] = timeline(before, graph, cluster, title=f"Before: {placer}")
    show_figure(w["before"].update_xaxes(range=[0.0, end]), key=key("before"))
    fig = timeline(after, graph, cluster, title=f"After {len(current.edits)} edit(s): {placer}",
                   time_range_ms=(0.0, end), highlight=moved)
    st.caption("Moved ops are marked red. Click an op's bar to pick it, or a busy bin of a device's lane to pick "
               "that device's ops in its time span.")
    show_figure(fig, key=key("after"), on_select=partial(_on_pick, i, graph, cluster, fig))
    names = [d.name for d in cluster.devices]
    table = placement_diff(graph, r["placement"].devices, current.devices, names, names,
                           compute=after.op_end - after.op_start).rename(
        columns={"left device": "placer's device", "right device": "edited device"})
    st.caption(f"{_count(len(table), 'op')} on another device than {placer} put them; "
               f"{table['compute (ms)'].sum():.4g} ms of compute moved (each op's time on its edited device, as "
               "simulated). Heaviest first.")
    show_table(table.head(DIFF_ROWS), height=240)
    table_downloads(table, key("diff"), f"whatif-{placer}-{graph.name}")


def _save_controls(state: dict, r: dict, i: int, current: Outcome) -> None:
    saved = _state(r)["saved"].get(current.edits)
    if saved:
        st.caption(f"These edits are stored as run `{saved}` (parent `{r['run_id']}`)")
        return
    graph, cluster = state["graph"], state["cluster"]
    cols = st.columns([4, 1], vertical_alignment="bottom")
    cols[0].text_input("Run name of the edited placement", key=keys.place_whatif(i, "name"),
                       placeholder=default_name(r["placer"], len(current.edits), graph.name, cluster_label(cluster)))
    cols[1].button("Save as run", key=keys.place_whatif(i, "save"), on_click=_save, args=(state, r, i),
                   help="Stores the edited placement with its parent run and the edits; the original result is "
                        "saved first where it is not yet, so the parent is one of your runs")


def show_whatif(state: dict, r: dict, i: int) -> None:
    """Result ``r``'s (the ``i``-th of the results in hand ``state``) what-if editor: a fragment, so that an edit,
    undo or redo reruns the editor alone, not the result's own figures and explorer around it."""
    w = _state(r)
    w["full_run"] = True  # this run draws the whole page (and writes the link at its end)
    w.pop("saved_now", None)
    st.fragment(_section)(state, r, i)


def _section(state: dict, r: dict, i: int) -> None:
    graph, cluster, w = state["graph"], state["cluster"], _state(r)
    if not w.pop("full_run", False):  # a rerun of the editor alone: the link and, after a save, the page follow
        if w.pop("saved_now", False):
            st.rerun()  # the results table and the result's caption name the runs saved
        set_page_params({link.EDITS: edits_param(st.session_state.get(keys.PLACE_RESULTS))})
        write_link()
    with st.expander("What if? Move ops to another device and re-simulate", expanded=bool(w["edits"] or w["undone"]),
                     icon=":material/alt_route:"):
        current = _outcome(state, r)
        st.caption(f"Simulated as the result ({cluster_label(cluster)}, mode {current.schedule.mode}); colocated ops "
                   "move together, pinned ops stay. The link holds the edits.")
        _pick_what(i, graph, cluster, current)
        cols = st.columns([2, 3], vertical_alignment="bottom")
        devices = list(range(cluster.num_devices))
        cols[0].selectbox("To device", devices, key=keep(keys.place_whatif(i, "to"), devices[-1], options=devices),
                          format_func=lambda d: _device_label(cluster.devices[d]))
        picked = selected_op(keys.place_explorer(i))
        if picked is not None and picked < graph.num_ops:
            cols[1].button(f"Pick the op selected in the graph: {graph.op_names[picked][:60]}",
                           key=keys.place_whatif(i, "pick"), on_click=_take_op, args=(i, picked))
        _buttons(state, r, i)
        if w["error"]:
            show_error(w["error"])
        if not w["edits"]:
            return
        show_table(pd.DataFrame({"#": range(1, len(current.edits) + 1), "edit": [e.label() for e in current.edits],
                                 "ops moved": list(current.moved)}))
        if edits_param(st.session_state.get(keys.PLACE_RESULTS)) is None:
            st.caption(f"These edits are longer than a link holds ({link.MAX_VALUE:,} characters): save them as a run "
                       "to keep them.")
        _comparison(state, r, i, current)
        _save_controls(state, r, i, current)
