"""Run a reproduction: its commands, then its table and figures, stored as one run (CONTRACTS §7).

Each step is a ``placelab`` command run in this process (the public CLI, with ``--json``), so
its output is exactly what the command prints and the recorded command is exactly what reruns
it. Steps are independent; ``workers`` hands them to the parallel runner
(:mod:`engine.parallel.tasks`, Ray) when this installation has it. A step that fails on bad input
(a placer that does not apply, a graph it cannot place) records its one-line error and the
reproduction goes on: the cells it would have filled carry the error as their note.

A step may name the run an earlier step stored (:data:`placelab.reproduce.core.REF`):
``{run:KEY}`` (its id), ``{rundir:KEY}`` (its directory) or ``{placement:KEY}`` (its
``placement.json``) — a training continued from another (``--init-from``), a stored placement
executed again (``simulate --placement``). Such a step runs once the steps it names have run;
when one of them failed or stored no run, it is not run and records why.

Every finished step is written to the run's journal (:data:`JOURNAL`) as it ends, so a reproduction
stopped part way (Ctrl-C, a killed process, the end of a machine's lease: a full setting takes hours)
goes on with ``resume=RUN`` (``placelab reproduce NAME --resume RUN``) in the same run: a step whose
command, references filled in, is the one the journal holds, and whose stored run is still there, is
not run again. The journal names the run store ``$RUNS`` and the ``--graphs-dir`` folder ``$GRAPHS``, so
a store moved or copied elsewhere resumes as well (journals written before hold absolute paths: they
match while the store has not moved; a step not taken from the journal says why on its progress line).
Each journal line carries the sha256 of its contents: a line changed since it was written (an edited
value, a damaged disk) is not trusted: one ``warning:`` line names it and its step runs again.
A journal that is not a regular file (a named pipe, a folder) is refused with one line, the run left
as it was.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from engine.errors import PlacelabError, RunError, SpecError, one_line, quote
from engine.parallel.tasks import ParallelMap
from engine.store.meta import code_version, iso_timestamp
from engine.store.runs import Run, RunStore, user_runs_dir
from placelab.reproduce.core import REF, Reproduction, Step, search_column_name
from placelab.reproduce.papers import TABLE_COLUMNS, agreement, join, lower_is_better, paper_table
from placelab.reproduce.published import GraphSources, graph_records, resolve
from placelab.reproduce.registry import all_reproductions, get

__all__ = ["JOURNAL", "CommandRunner", "reproduce", "run_step"]

#: Runs ``placelab ARGV`` in this process and returns its exit code (``placelab.cli.run_command``). The
#: runner is handed one, never imports the CLI: the CLI sits above the reproductions.
CommandRunner = Callable[[list[str]], int]
#: The reproduction's journal in its run folder: one JSON line per finished step, ``{"key", "argv", "out",
#: "sha256"}`` (the command as run, references filled in, the run store written :data:`RUNS_VAR` and the
#: ``--graphs-dir`` folder ``$GRAPHS``; its JSON output; the sha256 of the three, :func:`_digest`), appended as
#: each step ends. Lines without ``sha256`` were written by an older placelab, with absolute paths.
JOURNAL = "steps.jsonl"
#: How the journal and the stored commands name the run store of the steps.
RUNS_VAR = "$RUNS"


def run_step(run_command: CommandRunner, argv: tuple[str, ...]) -> dict[str, Any]:
    """Run ``placelab ARGV --json`` in this process; its JSON output, or ``{"error": message}``."""
    buf = io.StringIO()
    t0 = time.perf_counter()
    try:
        with contextlib.redirect_stdout(buf):
            run_command([*argv, "--json"])  # a Ctrl-C in the step stops the reproduction
    except PlacelabError as exc:
        return {"error": one_line(exc), "wall_s": time.perf_counter() - t0}
    text = buf.getvalue().strip()
    try:
        out = json.loads(text.splitlines()[-1]) if text else {}
    except json.JSONDecodeError:
        return {"error": f"no JSON output: {text[:200]}", "wall_s": time.perf_counter() - t0}
    return {**out, "wall_s": time.perf_counter() - t0}


def _executor(workers: int | None) -> ParallelMap:
    """Ray with ``workers`` CPUs, or in this process (one worker or none asked for)."""
    return ParallelMap(workers=workers) if workers is not None and workers > 1 else ParallelMap()


def _with_store(step: Step, runs_dir: str) -> tuple[str, ...]:
    """The step's argv with the run store of this reproduction (commands that store runs take it)."""
    stores = step.argv[0] in ("compare", "train", "experiment", "eval", "place", "validate")
    return (*step.argv, "--runs-dir", runs_dir) if stores else step.argv


def reproduce(name: str, *, command: CommandRunner, quick: bool = False, runs_dir: str | None = None,
              workers: int | None = None, keep_step_runs: bool = True, only: str | None = None,
              progress: Callable[[str], None] | None = None, graphs_dir: str | None = None,
              resume: str | None = None, search: int | None = None) -> dict[str, Any]:
    """Run reproduction ``name`` and store it; returns ``{run_id, name, table, wall_s, setting, graphs}``.

    Each step is ``placelab ARGV`` run through ``command`` (``placelab.cli.run_command``).

    The commands' own runs (placements, trainings) go to the same store, tagged
    ``reproduce:<run_id>``, or with ``keep_step_runs=False`` to a scratch store that is removed
    once the table and figures are built (the bundled runs keep only the reproduction's run).
    ``only`` (comma-separated texts) runs just the steps whose key contains one of them (e.g.
    ``"NMT / 2 GPUs,cpu/NMT"``): the other cells read "step did not run". ``graphs_dir``: run on the graphs
    the paper's authors published, found there by name (:mod:`placelab.reproduce.published`; rows without
    a file run on ours, marked). ``progress`` gets a first line ("reproducing NAME (...)") once every check
    has passed, then one line per published file name looked for, then one line per finished step.
    ``resume`` (a run id or prefix): go on with that stopped reproduction in its own run, the same
    reproduction, setting, ``only`` and graphs; the steps its journal holds are not run again. ``search``
    (evaluations): add the search reference's column (:class:`~placelab.reproduce.core.SearchColumn`, its budget
    in its name) and each cell's ``x_search``, the cell ÷ that column's cell of its row.

    Raises
    ------
    SpecError
        An unknown name, a reproduction whose requirements are missing, ``workers`` without
        the parallel runner, ``workers`` for an exclusive reproduction (one that measures), or a
        ``graphs_dir`` that does not apply (:func:`placelab.reproduce.published.resolve`), a ``resume`` run
        that is not a stopped run of this reproduction as asked, ``resume`` with scratch step runs, or ``search``
        for a reproduction without a search column or below one evaluation.
    RunError
        A ``resume`` run that another process is running, or none by that id.
    GraphError
        A published graph file in ``graphs_dir`` that cannot be read.
    """
    runs_dir = runs_dir or user_runs_dir()
    wanted = [w.strip() for w in (only or "").split(",") if w.strip()]
    if only is not None and not wanted:  # `--only ''` or `--only ,`: not "every step"
        raise SpecError(f"--only {quote(only)} names no step: give texts that step keys contain, comma-separated "
                        "(leave --only out to run every step)")
    rep = get(name)
    missing = rep.missing()
    if missing:
        raise SpecError(f"reproduction {quote(name)} needs {', '.join(missing)}, which this installation does not "
                        f"have yet")
    if rep.exclusive and workers is not None and workers > 1:
        raise SpecError(f"reproduction {quote(name)} measures executions on this machine's cores: its steps must not "
                        "run side by side; run it without --workers")
    store = RunStore(runs_dir)
    store.check_writable()  # a read-only or full store: one line before any graph is read or step run
    sources = resolve(rep, graphs_dir) if graphs_dir is not None else None
    executor = _executor(workers)
    if search is not None:
        rep = _with_search(rep, search)
    steps = [s for s in rep.steps(quick) if not wanted or any(w in s.key for w in wanted)]
    if sources is not None:
        steps = [sources.substitute(s) for s in steps]
    if not steps:
        keys = ", ".join(s.key for s in rep.steps(quick))
        raise SpecError(f"--only {quote(only)} matches no step of {name} (steps: {keys})")
    if resume is not None and not keep_step_runs:
        raise SpecError("--resume needs the step runs of the first attempt, so it cannot use a scratch store "
                        "(--no-keep-step-runs)")
    t = paper_table(rep.paper, rep.table)
    setting = "quick" if quick else "full"
    parameters = {"setting": setting, "paper": t["paper"], "citation": t["citation"],
                  "seeds": sorted({s.seed for s in steps if s.seed is not None}),
                  "workers": workers or 1, "only": only, "graphs": graph_records(rep, sources), "search": search}
    prior, damaged = _resumable(store, resume, rep.name, parameters) if resume is not None else ({}, [])
    if progress:  # only now: a refused reproduction says nothing but its error
        progress(f"reproducing {rep.name} ("
                 + ("quick setting: small budgets, minutes on a 2-core machine" if quick
                    else "full setting: paper-scale budgets") + f"; {len(steps)} steps)")
        for line in sources.lines if sources else ():
            progress(line)
    if resume is not None:
        run = store.load(resume)
        now = code_version()
        resumed = [*run.meta["parameters"].get("resumed", []), {"at": iso_timestamp(), "code_version": now}]
        run.update(status="running", pid=os.getpid(), host=socket.gethostname(), error=None,
                   parameters={**run.meta["parameters"], "workers": workers or 1, "resumed": resumed})
        if progress:
            progress(f"resuming run {run.id}: its journal holds {len(prior)} finished step(s); those whose "
                     "command and stored run are unchanged are not run again")
            for line in damaged:
                progress(f"warning: {line}")
            if now != run.meta.get("code_version"):
                progress(f"note: the run started on code {_version(run.meta.get('code_version'))}, this is "
                         f"{_version(now)}: the steps taken from its journal ran on the earlier code")
    else:
        run = store.create("reproduce", graph_name=rep.name, graph_hash="", cluster="", placer=rep.name,
                           parameters=parameters, seed=None, tags=["reproduce", rep.name],
                           name=f"{rep.name} ({setting})")
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    scratch = None if keep_step_runs else tempfile.mkdtemp(prefix="placelab-reproduce-")
    step_dir = scratch or runs_dir
    try:
        with run, sources.quiet() if sources else contextlib.nullcontext():
            wall, rows, built = _run(rep, steps, run, store if scratch is None else None, step_dir,
                                     (executor, command), quick, setting, progress, (t0, cpu0), sources, prior,
                                     None if search is None else search_column_name(search))
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    return {"run_id": run.id, "name": rep.name, "setting": setting, "wall_s": wall, "table": rows,
            "notes": built.notes, "graphs": parameters["graphs"]}


def _resumable(store: RunStore, ref: str, name: str,
               parameters: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The journal of run ``ref`` (:func:`_read_journal`), checked to be a stopped reproduction ``name`` asked for
    as it was started (the setting, ``only`` and the graphs, hashes included, of ``parameters``)."""
    run = store.load(ref)
    meta = run.meta
    if meta.get("kind") != "reproduce" or meta.get("placer") != name:
        what = (f"a {meta.get('placer')} reproduction" if meta.get("kind") == "reproduce"
                else f"a {meta.get('kind')} run")
        raise SpecError(f"run {run.id} is {what}, not a {name} reproduction: it cannot be resumed as one")
    if run.status == "done":
        raise SpecError(f"run {run.id} finished; there is nothing to resume (start a new reproduction instead)")
    if run.status == "running":
        raise RunError(f"run {run.id} is running in another process; it cannot run twice at once")
    stored = meta.get("parameters", {})
    for key, flag in (("setting", "--quick"), ("only", "--only"), ("graphs", "--graphs-dir"), ("search", "--search")):
        if stored.get(key) != parameters[key]:
            raise SpecError(f"run {run.id} ran with other {flag} ({_said(key, stored.get(key))}; now "
                            f"{_said(key, parameters[key])}): resume it with the options it started with")
    return _read_journal(run)


def _version(v: Any) -> str:
    return str((v or {}).get("git") or (v or {}).get("placelab") or "unknown")


def _said(key: str, value: Any) -> str:
    if key == "graphs":
        return ", ".join(f"{g.get('row')}: {g.get('file') or g.get('spec')} {(g.get('sha256') or '')[:12]}".strip()
                         for g in value or [] if isinstance(g, dict)) or "none"
    return "none" if value is None else str(value)


def _digest(entry: dict[str, Any]) -> str:
    """The sha256 of a journal line's ``key``, ``argv`` and ``out`` (canonical JSON: sorted keys)."""
    body = {k: entry.get(k) for k in ("key", "argv", "out")}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def _journal_line(key: str, argv: list[str], out: dict[str, Any]) -> dict[str, Any]:
    """The journal line of a finished step, with its checksum (computed on the values as JSON reads them back)."""
    line = json.loads(json.dumps({"key": key, "argv": argv, "out": out}, default=str))
    return {**line, "sha256": _digest(line)}


def _read_journal(run: Run) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The finished steps a run's journal holds, by key (a key's last line wins), and one line for each line
    not trusted: not of the journal's shape, or changed since it was written (its checksum differs). A line cut
    short by a killed process is skipped silently.

    Raises
    ------
    RunError
        The journal is not a regular file (a named pipe, a folder).
    """
    entries: dict[str, dict[str, Any]] = {}
    damaged: list[str] = []
    for n, entry in enumerate(run.read_json_lines(JOURNAL), start=1):
        if not (isinstance(entry, dict) and isinstance(entry.get("key"), str) and isinstance(entry.get("argv"), list)
                and isinstance(entry.get("out"), dict)):
            damaged.append(f"{JOURNAL} entry {n} of run {run.id} is not a finished step's record; ignored")
        elif "sha256" in entry and entry["sha256"] != _digest(entry):
            damaged.append(f"{JOURNAL} entry {n} (step {quote(entry['key'])}) of run {run.id} was changed since it "
                           "was written (its checksum differs): that step runs again")
            entries.pop(entry["key"], None)
        else:
            entries[entry["key"]] = entry
    return entries, damaged


def _portable(argv: tuple[str, ...], step_dir: str, sources: GraphSources | None) -> list[str]:
    """``argv`` as the journal holds it: the run store written :data:`RUNS_VAR`, the graphs folder ``$GRAPHS``."""
    inside = os.path.join(step_dir, "")
    return [RUNS_VAR if a == step_dir else RUNS_VAR + "/" + a[len(inside):] if a.startswith(inside)
            else sources.hide(a) if sources else a for a in argv]


def _not_reusable(entry: dict[str, Any], argv: tuple[str, ...], step_dir: str,
                  sources: GraphSources | None) -> str | None:
    """Why a journal entry does not stand for the step about to run ``argv`` (None when it does: the same
    command, paths relative to the store, no error, and the run it stored still in the store)."""
    if "sha256" in entry:
        same = entry["argv"] == _portable(argv, step_dir, sources)
    else:  # an older journal: absolute paths, which match while the store has not moved
        same = entry["argv"] == list(argv)
        if not same and "--runs-dir" in entry["argv"][:-1]:
            then = entry["argv"][entry["argv"].index("--runs-dir") + 1]
            if then != step_dir:
                return (f"its journal entry names the run store {then} (a journal of an older placelab holds "
                        f"absolute paths), this is {step_dir}")
    if not same:
        return "its command differs from the journal's"
    if entry["out"].get("error"):
        return "it failed before"
    rid = entry["out"].get("run_id")
    if rid and not os.path.isdir(os.path.join(step_dir, str(rid))):
        return f"its run {quote(str(rid))} is no longer in the store"
    return None


def _resolve(step: Step, outputs: dict[str, dict[str, Any]], step_dir: str) -> tuple[str, ...] | str:
    """The step's argv with its references to earlier steps' runs filled in, or why it cannot run."""
    why: list[str] = []

    def fill(m) -> str:
        what, key = m.group(1), m.group(2)
        out = outputs.get(key) or {}
        rid = out.get("run_id")
        if not rid:
            state = (f"failed: {out['error']}" if out.get("error") else "stored none" if key in outputs
                     else "did not run")
            why.append(f"needs the run of step {quote(key)}, which {state}")
            return ""
        return {"run": rid, "rundir": os.path.join(step_dir, rid),
                "placement": os.path.join(step_dir, rid, "placement.json")}[what]

    argv = tuple(REF.sub(fill, a) for a in _with_store(step, step_dir))
    return "; ".join(why) if why else argv


def _run_steps(steps: list[Step], step_dir: str, runner: tuple[ParallelMap, CommandRunner],
               tag: tuple[RunStore, str] | None, progress: Callable[[str], None] | None,
               journal: tuple[Run | None, dict[str, dict[str, Any]]] = (None, {}),
               sources: GraphSources | None = None,
               ) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """Run every step, each as soon as the steps it references have run (on Ray: without waiting for
    other running steps), each through ``runner``'s command runner on its executor; outputs by key and the log.
    ``journal``: the run whose :data:`JOURNAL` gets each finished step, and the entries an earlier attempt
    left there (a step they hold, unchanged, is taken from them instead of run; one they hold but that runs
    again says why on its progress line). ``sources``: the ``--graphs-dir`` folder, named ``$GRAPHS`` in the
    journal."""
    executor, command = runner
    record, prior = journal
    outputs: dict[str, dict[str, Any]] = {}
    log: list[dict[str, Any]] = []
    again: dict[str, str] = {}  # key -> why the journal's entry of the step was not taken

    def done(s: Step, argv: tuple[str, ...] | None, out: dict[str, Any], reused: bool = False) -> None:
        outputs[s.key] = out
        shown = None if argv is None else _resolve(s, outputs, RUNS_VAR)  # the command, the run store as $RUNS
        resolved = Step(s.key, shown).command() if isinstance(shown, tuple) else None
        log.append({"key": s.key, "argv": ["placelab", *s.argv], "command": s.command(), "resolved": resolved,
                    "seed": s.seed, "wall_s": round(out.get("wall_s", 0.0), 3), "error": out.get("error"),
                    **({"reused": True} if reused else {})})
        if record is not None and argv is not None and not reused:  # one line per step, as it ends
            record.append_json_line(JOURNAL, _journal_line(s.key, _portable(argv, step_dir, sources), out))
        if tag is not None and not reused:
            _tag_step_runs(tag[0], out, tag[1])
        if progress:
            state = ("ran before: taken from the journal" if reused else
                     f"error: {out['error']}" if out.get("error") else f"{out.get('wall_s', 0):.1f} s")
            if s.key in again:
                state += f"; not taken from the journal: {again[s.key]}"
            progress(f"[{len(log)}/{len(steps)}] {s.command()}  ({state})")

    todo, handed, running = list(steps), [], set()

    def release() -> list[tuple]:
        """Hand out every step whose referenced steps have all finished, its references filled in;
        a step that cannot run (a referenced step failed) is recorded at once, which may free others."""
        out: list[tuple] = []
        while True:
            blocked = {s.key for s in todo} | running
            free = [s for s in todo if not blocked & set(s.references())]
            if not free and todo and not running:  # a cycle: each one fails
                free = list(todo)
            if not free:
                return out
            for s in free:
                todo.remove(s)
                argv = _resolve(s, outputs, step_dir)
                why = None if isinstance(argv, str) or s.key not in prior else _not_reusable(prior[s.key], argv,
                                                                                            step_dir, sources)
                if isinstance(argv, str):
                    done(s, None, {"error": argv})
                elif s.key in prior and why is None:
                    done(s, argv, dict(prior[s.key]["out"]), reused=True)
                else:
                    if why is not None:
                        again[s.key] = why
                    handed.append((s, argv))
                    running.add(s.key)
                    out.append((command, argv))

    def finished(i: int, out: dict[str, Any]) -> None:
        running.discard(handed[i][0].key)
        done(*handed[i], out)

    first = release()
    with executor:
        executor.map(run_step, first, on_result=finished, more=lambda i, out: release())
    return outputs, log


def _run(rep: Reproduction, steps: list[Step], run: Run, tag_store: RunStore | None, step_dir: str,
         runner: tuple[ParallelMap, CommandRunner],
         quick: bool, setting: str, progress: Callable[[str], None] | None, start: tuple[float, float],
         sources: GraphSources | None = None, prior: dict[str, dict[str, Any]] | None = None,
         search_column: str | None = None):
    """Run the steps, build and store the table, figures and commands; ``(wall_s, rows, build)``. With
    ``sources`` (``--graphs-dir``) the rows on our graphs are marked and the stored commands name the
    folder ``$GRAPHS``. ``search_column``: the search reference's column (``--search``), None without one."""
    outputs, log = _run_steps(steps, step_dir, runner, (tag_store, run.id) if tag_store else None, progress,
                              (run, prior or {}), sources=sources)
    unchecked = [e["key"] for e in log if e.get("reused") and "sha256" not in (prior or {}).get(e["key"], {})]
    try:
        built = rep.build(outputs, step_dir, quick)
        if sources is not None:
            built = sources.mark(built)
        rows = join(built.cells, rep.paper, rep.table, rep.reference, search_column)
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:
        if not unchecked:  # every output is what its command printed: not the journal's doing
            raise
        raise RunError(f"run {run.id}: the {JOURNAL} entries of step(s) {', '.join(map(quote, unchecked))}, written "
                       f"by an older placelab without a checksum, hold values this reproduction cannot read "
                       f"({type(exc).__name__}); move {JOURNAL} out of the run folder and resume to run every "
                       "step again") from None
    if sources is not None:
        log = [{**e, "argv": [sources.hide(a) for a in e["argv"]], "command": sources.hide(e["command"]),
                "resolved": e["resolved"] and sources.hide(e["resolved"])} for e in log]
    run.write_table("table.csv", {c: [r[c] for r in rows] for c in TABLE_COLUMNS})
    for fname, fig in built.figures.items():
        run.write_json(f"figures/{fname}.json", fig)
    wall = time.perf_counter() - start[0]
    cpu = time.process_time() - start[1]  # this process's CPU time: about the wall time on an idle machine
    run.write_json("commands.json", {"reproduction": rep.name, "setting": setting, "steps": log,
                                     "notes": built.notes, "wall_s": round(wall, 3)})
    scored = [agreement(r["rel_ratio"] if rep.reference else r["ratio"], "OOM" in r["note"], r["paper"] == "OOM",
                        r["ours"] is not None, lower_is_better(r["unit"])) for r in rows]
    run.finish("done", {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "cells": len(rows), "steps": len(steps),
                        "step_errors": sum(1 for e in log if e["error"]),
                        "steps_reused": sum(1 for e in log if e.get("reused")),
                        "cells_within_10pct": scored.count("agree"), "cells_better": scored.count("better"),
                        "cells_compared": len(scored) - scored.count("n/a")})
    return wall, rows, built


def _with_search(rep: Reproduction, evaluations: int) -> Reproduction:
    """``rep`` with the search reference's steps after its own and its column among its cells (``--search``)."""
    if rep.search is None:
        some = ", ".join(n for n, r in all_reproductions().items() if r.search)
        raise SpecError(f"reproduction {quote(rep.name)} has no search reference column; --search applies to {some}")
    if isinstance(evaluations, bool) or not isinstance(evaluations, int) or evaluations < 1:
        raise SpecError(f"--search (the search reference's evaluations) must be at least 1, got {evaluations}")
    column = search_column_name(evaluations)
    extra = rep.search

    def steps(quick: bool) -> list[Step]:
        return [*rep.steps(quick), *extra.steps(evaluations)]

    def build(outputs, runs_dir: str, quick: bool):
        built = rep.build(outputs, runs_dir, quick)
        built.cells = [*built.cells, *extra.cells(outputs, runs_dir, column)]
        built.notes = [*built.notes, f"×search (x_search): each cell ÷ the cell of its row in column {quote(column)}, "
                       "the search reference's placement measured as the other methods' are."]
        return built

    return replace(rep, steps=steps, build=build)


def _tag_step_runs(store: RunStore, out: dict[str, Any], rid: str) -> None:
    ids = [out.get("run_id"), out.get("policy_run_id"), *(r.get("run_id") for r in out.get("results", [])
                                                         if isinstance(r, dict))]
    for i in ids:
        if i:
            with contextlib.suppress(PlacelabError):
                store.set_tags(i, [*store.load(i).meta.get("tags", []), f"reproduce:{rid}"])


def describe(rep: Reproduction) -> dict[str, Any]:
    """One listing entry: name, title, paper citation, expected quick minutes, readiness."""
    missing = rep.missing()
    return {"name": rep.name, "title": rep.title, "paper": paper_table(rep.paper, rep.table)["citation"],
            "quick_minutes": rep.quick_minutes, "ready": not missing, "missing": missing}
