"""The Place page's what-if editor, without Streamlit: edits that move ops of a placement to another device, their
text in the link, their replay through the simulator, and what changed per device.

An edit moves one op, a scope (every op whose ``/``-separated scope is it or lies under it, as the graph
explorer nests them) or the ops one device runs in a time range of the schedule before the edit (a busy bin
of the timeline) to one device. Edits apply in order to the placement a placer returned, and the edited
placement is simulated by the same :class:`~engine.sim.simulator.Simulator` (graph, cluster, mode and settings)
as the result, so the new makespan is the one ``placelab simulate`` gives for the edited placement.

A placement's constraints hold under edits (:class:`engine.placement.Constraints`): a colocation group
moves as one (an op's group goes with it), and an op pinned to another device, or with no compute time on
the target's kind, stays where it is (with the rest of its group); an edit that would move nothing is
refused with one line. An edited placement that does not fit in memory is simulated as any other: its
devices read OOM (``Schedule.oom``).

The link holds the edits of each result (``edits=``, :func:`edits_text`): ``N:WHAT>DEVICE`` separated by
commas, ``N`` the result's position among the results the link names (``results=``), ``WHAT`` an op
name, ``SCOPE/*``, or ``DEVICE@T0~T1`` (ms); ``%``, ``,``, ``>``, ``@`` and ``*`` inside names are written
``%25``, ``%2C``, ``%3E``, ``%40``, ``%2A``. At most :data:`MAX_EDITS` edits per result.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dashboard.data.place import default_run_name, save_result
from dashboard.figures.diff import moved_ops
from dashboard.figures.scope_tree import ancestors
from dashboard.figures.timeline import ops_in_window
from engine.cluster import Cluster
from engine.errors import PlacelabError, SpecError, quote
from engine.graph.compgraph import CompGraph
from engine.placement import Placement
from engine.sim.schedule import Schedule
from engine.sim.simulator import Simulator
from engine.store.records import single_device_metrics
from engine.store.runs import Run, RunStore

__all__ = ["MAX_EDITS", "MOVES", "WHATIF_TAG", "Edit", "Outcome", "apply_edit", "default_name", "device_changes",
           "edits_text", "moved_mask", "parse_edit", "read_edits", "replay_edits", "save_edited", "scope_choices"]

#: Most edits of one result (the editor refuses more; a link's further edits are ignored with a warning).
MAX_EDITS = 32
#: What an edit moves: one op, a scope (and every scope under it), the ops of a device in a time range.
MOVES = ("op", "scope", "range")
#: The tag of a run stored from the what-if editor (besides ``app``).
WHATIF_TAG = "what-if"
_ESCAPES = {"%": "%25", ",": "%2C", ">": "%3E", "@": "%40", "*": "%2A"}
_UNESCAPE = re.compile(r"%(25|2C|3E|40|2A)", re.IGNORECASE)
_ENTRY = re.compile(r"(\d{1,4}):(.*)", re.DOTALL)


def _escape(name: str) -> str:
    return "".join(_ESCAPES.get(c, c) for c in name)


def _unescape(text: str) -> str:
    return _UNESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)


def _ms(value: float) -> str:
    """A time (ms) as the link writes it: the shortest text that reads back as the same float."""
    return repr(float(value))


@dataclass(frozen=True)
class Edit:
    """Move ``what`` to the device named ``device``.

    ``move`` is ``op`` (``what``: an op name), ``scope`` (``what``: a scope; its ops and those of every scope
    under it) or ``range`` (``what``: a device name; the ops it runs that overlap ``window_ms``, ends
    included, in the schedule before this edit)."""

    move: str
    what: str
    device: str
    window_ms: tuple[float, float] | None = None

    def text(self) -> str:
        """The edit as the link writes it (without the result's number)."""
        if self.move == "scope":
            target = _escape(self.what) + "/*"
        elif self.move == "range":
            lo, hi = self.window_ms or (0.0, 0.0)
            target = f"{_escape(self.what)}@{_ms(lo)}~{_ms(hi)}"
        else:
            target = _escape(self.what)
        return f"{target}>{_escape(self.device)}"

    def label(self) -> str:
        """The edit in words: ``op 'a/b' → gpu:1``."""
        if self.move == "range":
            lo, hi = self.window_ms or (0.0, 0.0)
            return f"ops on {quote(self.what)} in {lo:.4g}–{hi:.4g} ms → {self.device}"
        return f"{self.move} {quote(self.what + ('/*' if self.move == 'scope' else ''))} → {self.device}"

    def record(self, ops: int) -> dict[str, Any]:
        """The edit as a stored run records it (``edits`` of ``run.json``, CONTRACTS §6): ``ops`` moved."""
        out: dict[str, Any] = {"move": self.move, "what": self.what, "to": self.device, "ops": int(ops)}
        if self.window_ms is not None:
            out["window_ms"] = [float(self.window_ms[0]), float(self.window_ms[1])]
        return out


def parse_edit(text: str) -> Edit:
    """The edit a link writes as ``WHAT>DEVICE`` (:meth:`Edit.text`); SpecError for text that is none."""
    target, sep, device = text.rpartition(">")
    if not sep or not target.strip() or not device.strip():
        raise SpecError(f"{quote(text)} is not WHAT>DEVICE")
    device = _unescape(device.strip())
    if "@" in target:
        where, _, window = target.partition("@")
        lo, tilde, hi = window.partition("~")
        try:
            times = (float(lo), float(hi)) if tilde else None
        except ValueError:
            times = None
        if times is None or not all(math.isfinite(t) for t in times) or not 0 <= times[0] <= times[1]:
            raise SpecError(f"{quote(text)}: a time range is DEVICE@START~END in ms, 0 <= START <= END")
        return Edit("range", _unescape(where), device, times)
    if target.endswith("/*"):
        return Edit("scope", _unescape(target[:-2]), device)
    return Edit("op", _unescape(target), device)


def edits_text(per_result: Mapping[int, Sequence[Edit]]) -> str:
    """The link's ``edits`` value: each result's edits in order as ``N:WHAT>DEVICE``, comma separated."""
    return ",".join(f"{n}:{e.text()}" for n, edits in sorted(per_result.items()) for e in edits)


def read_edits(text: str) -> tuple[dict[int, list[Edit]], list[str]]:
    """The edits of each result a link's ``edits`` value holds, and one line per part refused (text that is no
    edit; edits of a result beyond :data:`MAX_EDITS`). Whether an edit fits its result's graph and cluster is
    :func:`replay_edits`'s to say."""
    per_result: dict[int, list[Edit]] = {}
    problems: list[str] = []
    for part in (p for p in text.split(",") if p.strip()):
        entry = _ENTRY.fullmatch(part.strip())
        try:
            if entry is None:
                raise SpecError(f"{quote(part)} is not N:WHAT>DEVICE (N: the result's number)")
            edits = per_result.setdefault(int(entry.group(1)), [])
            if len(edits) >= MAX_EDITS:
                raise SpecError(f"result {entry.group(1)} has more than {MAX_EDITS} edits")
            edits.append(parse_edit(entry.group(2)))
        except SpecError as exc:
            problems.append(str(exc))
    return {n: e for n, e in per_result.items() if e}, problems


def _scopes(graph: CompGraph) -> list[str]:
    """Each op's scope as the explorer nests it: its ``/``-separated parts, empty parts left out."""
    return [(ancestors(s) or [""])[-1] if s else "" for s in graph.scope]


def scope_choices(graph: CompGraph) -> dict[str, int]:
    """Every scope of the graph (each prefix of each op's scope), sorted, with how many ops lie in it or under it."""
    counts: dict[str, int] = {}
    for scope in _scopes(graph):
        for prefix in ancestors(scope):
            counts[prefix] = counts.get(prefix, 0) + 1
    return dict(sorted(counts.items()))


def _device(cluster: Cluster, name: str) -> int:
    d = cluster.index.get(name)
    if d is None:
        raise SpecError(f"no device {quote(name)} in {quote(cluster.name)} (it has {', '.join(cluster.index)})")
    return d


def _selected(graph: CompGraph, cluster: Cluster, schedule: Schedule, edit: Edit) -> np.ndarray:
    """Bool per op: what ``edit`` names (before colocation groups and constraints)."""
    if edit.move == "op":
        i = graph.index.get(edit.what)
        if i is None:
            raise SpecError(f"no op {quote(edit.what)} in {quote(graph.name)}")
        sel = np.zeros(graph.num_ops, dtype=bool)
        sel[i] = True
        return sel
    if edit.move == "scope":
        inside = edit.what + "/"
        sel = np.array([s == edit.what or s.startswith(inside) for s in _scopes(graph)], dtype=bool)
        if not edit.what or not sel.any():
            raise SpecError(f"no op of {quote(graph.name)} is in scope {quote(edit.what)}")
        return sel
    if edit.move == "range" and edit.window_ms is not None:
        d = _device(cluster, edit.what)
        sel = (schedule.op_device == d) & ops_in_window(schedule, edit.window_ms)
        if not sel.any():
            lo, hi = edit.window_ms
            raise SpecError(f"no op runs on {quote(edit.what)} in {lo:.4g}–{hi:.4g} ms")
        return sel
    raise SpecError(f"an edit moves an op, a scope or a time range, not {quote(edit.move)}")


def apply_edit(sim: Simulator, devices: np.ndarray, schedule: Schedule, edit: Edit) -> tuple[np.ndarray, int]:
    """``devices`` (the placement before ``edit``; ``schedule`` its simulation, which a time range reads) with
    ``edit`` applied, and how many ops changed device. A colocation group moves with its ops; an op that cannot
    go to the target (pinned elsewhere, or no compute time on its kind) stays, and its group with it.

    Raises
    ------
    SpecError
        ``edit`` names no op, scope, device or busy time of this graph and cluster, or moves nothing.
    """
    graph, cluster, constraints = sim.graph, sim.cluster, sim.constraints
    sel = _selected(graph, cluster, schedule, edit)
    target = _device(cluster, edit.device)
    groups = graph.colocation_ids
    if (groups[sel] >= 0).any():
        sel |= np.isin(groups, groups[sel & (groups >= 0)])
    pinned = np.full(graph.num_ops, -1, dtype=np.int64)
    pinned[constraints.pinned] = constraints.pin_dev
    blocked = sel & (np.isnan(constraints.cost[:, target]) | ((pinned >= 0) & (pinned != target)))
    if (groups[blocked] >= 0).any():
        blocked |= sel & np.isin(groups, groups[blocked & (groups >= 0)])
    moved = sel & ~blocked & (devices != target)
    if not moved.any():
        if blocked.any():
            i = int(np.argmax(blocked))
            why = (f"pinned to {quote(graph.pin[i])}" if pinned[i] >= 0 and pinned[i] != target
                   else f"no compute time on {quote(cluster.devices[target].kind)}")
            raise SpecError(f"{edit.label()}: moves nothing: op {quote(graph.op_names[i])} cannot go there ({why})")
        raise SpecError(f"{edit.label()}: moves nothing: already there")
    out = devices.copy()
    out[moved] = target
    return out, int(moved.sum())


@dataclass(frozen=True, eq=False)
class Outcome:
    """A placement after edits: its devices, its simulation (the result's simulator), the edits applied and how
    many ops each moved, and one line per edit left out (:func:`replay_edits` with ``skip``)."""

    devices: np.ndarray
    schedule: Schedule
    edits: tuple[Edit, ...] = ()
    moved: tuple[int, ...] = ()
    problems: tuple[str, ...] = ()

    def then(self, sim: Simulator, edit: Edit) -> Outcome:
        """This outcome with ``edit`` applied after its edits, simulated (SpecError where it does not apply)."""
        devices, n = apply_edit(sim, self.devices, self.schedule, edit)
        return Outcome(devices, sim.run(devices), (*self.edits, edit), (*self.moved, n), self.problems)


def replay_edits(sim: Simulator, devices: np.ndarray, schedule: Schedule, edits: Iterable[Edit], *,
                 skip: bool = False) -> Outcome:
    """The placement ``devices`` (simulated by ``sim`` as ``schedule``) with ``edits`` applied in order, simulated
    by ``sim``. A time range reads the schedule before its edit, so that is simulated first where an edit came
    before it; op and scope edits need one simulation at the end.

    Raises
    ------
    SpecError
        An edit that does not apply (:func:`apply_edit`); with ``skip`` it is left out instead, its line in
        :attr:`Outcome.problems`.
    """
    current, known = np.asarray(devices, dtype=np.int64), schedule
    applied, moved, problems = [], [], []
    for edit in edits:
        if edit.move == "range" and not np.array_equal(known.op_device, current):
            known = sim.run(current)
        try:
            current, n = apply_edit(sim, current, known, edit)
        except SpecError as exc:
            if not skip:
                raise
            problems.append(str(exc))
            continue
        applied.append(edit)
        moved.append(n)
    if not np.array_equal(known.op_device, current):
        known = sim.run(current)
    return Outcome(current, known, tuple(applied), tuple(moved), tuple(problems))


def device_changes(cluster: Cluster, before: Schedule, after: Schedule, memory_known: bool = True) -> pd.DataFrame:
    """One row per device: ops, compute busy and memcpy busy (ms), memory peak (GB) after the edits and their
    change from before, and OOM before and after (peaks None where the graph's source gives no sizes)."""
    ops_b = np.bincount(before.op_device, minlength=cluster.num_devices)
    ops_a = np.bincount(after.op_device, minlength=cluster.num_devices)
    known = 1.0 if memory_known else None
    return pd.DataFrame({
        "device": [d.name for d in cluster.devices],
        "ops": ops_a, "ops Δ": ops_a - ops_b,
        "compute (ms)": after.compute_time * 1e3, "compute Δ (ms)": (after.compute_time - before.compute_time) * 1e3,
        "memcpy (ms)": after.memcpy_time * 1e3, "memcpy Δ (ms)": (after.memcpy_time - before.memcpy_time) * 1e3,
        "peak memory (GB)": [None if known is None else p / 1e9 for p in after.peak_memory.tolist()],
        "peak Δ (GB)": [None if known is None else (a - b) / 1e9
                        for a, b in zip(after.peak_memory.tolist(), before.peak_memory.tolist(), strict=True)],
        "OOM before": before.oom, "OOM": after.oom,
    })


def moved_mask(cluster: Cluster, base: np.ndarray, edited: np.ndarray) -> np.ndarray:
    """Bool per op: on another device after the edits (:func:`dashboard.figures.diff.moved_ops`)."""
    names = [d.name for d in cluster.devices]
    return moved_ops(base, edited, names, names)


def default_name(placer: str, edits: int, graph_name: str, cluster_name: str) -> str:
    """The name an edited placement is saved under unless the user types another: ``placer + 2 edits · graph ·
    cluster``."""
    return default_run_name(f"{placer} + {edits} edit{'s' if edits != 1 else ''}", graph_name, cluster_name)


def save_edited(store: RunStore, graph: CompGraph, cluster: Cluster, r: dict, outcome: Outcome, name: str) -> Run:
    """Store the edited placement of result ``r`` (a Place result whose ``run_id`` names its stored run) as a
    placement run of ``store``, tagged :data:`WHATIF_TAG`, with ``parent`` (that run's id) and ``edits`` (each
    edit and how many ops it moved) in its ``run.json`` (CONTRACTS §6)."""
    if not r.get("run_id"):
        raise PlacelabError("save the result first: an edited placement is stored with its parent run")
    single = (r.get("metrics") or {}).get("single_device_makespan_s")
    edited = {**r, "placement": Placement(outcome.devices), "schedule": outcome.schedule, "startup": None,
              "metrics": single_device_metrics(outcome.schedule.makespan, single)}
    run = save_result(store, graph, cluster, edited, ["app", WHATIF_TAG])
    run.update(name=name.strip() or run.id, parent=r["run_id"],
               edits=[e.record(n) for e, n in zip(outcome.edits, outcome.moved, strict=True)])
    return run
