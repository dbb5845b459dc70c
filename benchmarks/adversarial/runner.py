"""The one runner of the adversarial pass: it runs each case's processes, judges them, reports, and holds the
command-line options of ``benchmarks/adversarial_pass.py``.

Each case runs ``placelab ...`` in a child process, in a fresh temporary folder (``PLACELAB_RUNS_DIR``,
the caches and ``XDG_*`` point there: the bundled ``runs/`` and the user's files are never touched),
with a timeout (a hang is a failure). A case is **clean** when

* it exits 0 with a correct-looking result: with ``--json``, stdout is one strict JSON object (no
  ``NaN``); no control character on stdout; stderr holds only placelab's notes (progress bars, steps,
  ``warning: ...`` lines: short, no control characters, no library's warnings or log lines); or
* it exits 2 with nothing on stdout and exactly one ``error: ...`` line on stderr of at most
  ``MAX_LINE`` (300) characters without control characters, "Traceback" or "internal error" (after,
  at most, the notes of work done before the failure: a disk that fills mid-training);

and then passes the case's own check where it has one (a makespan not below the lower bound, a good run
still listed beside a corrupt one, no file written by a malicious pickle, the line an error names, ...).

A case that must be refused (``expect="bad"``) fails on exit 0 (silent nonsense); one that must work
(``expect="ok"``) fails on exit 2. ``placelab`` or a command group without a command is clean when it
prints its help on stderr and exits 2 (``expect="usage"``). An app case is clean when the page raises
no exception and shows at most one short error alert.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from engine.errors import MAX_LINE

from . import ROOT, cases_app, cases_cli, cases_files, cases_limits, cases_output, cases_pass3, cases_runs, cases_store
from .fixtures import BASE_FILES, CONTROL, FIXTURE_IDS, Case, Fixtures, Outcome, placelab_argv, strict_json, write_files

#: Every class, in the order the pass runs them: name -> the function that yields its cases.
CLASSES: dict[str, Callable[[], Iterator[Case]]] = {
    "limits": cases_limits.limits, "exhaustion": cases_limits.exhaustion, "seeds": cases_limits.seeds,
    "nonsense": cases_limits.nonsense, "store": cases_store.store, "checkpoint": cases_store.checkpoint,
    "disk": cases_runs.disk, "resume": cases_runs.resume, "ray": cases_runs.ray, "race": cases_runs.race,
    "one-line": cases_output.one_line, "outputs": cases_output.outputs, "escapes": cases_output.escapes,
    "json": cases_output.json_output, "formats": cases_files.formats, "clusters": cases_files.clusters,
    "placements": cases_files.placements, "names": cases_cli.names, "usage": cases_cli.usage,
    "paths": cases_files.paths, "app": cases_app.app, "pass3": cases_pass3.pass3,
}
#: The script the app worker runs in (``--app-case FILE``).
ENTRY = ROOT / "benchmarks" / "adversarial_pass.py"
#: stderr lines that are a library's noise, never placelab's notes: Python warnings and tracebacks, TensorFlow,
#: absl, glog and Ray log lines, indented continuation lines.
NOISE = re.compile(r"Warning:|Traceback|^\s|^\d{4}-\d\d-\d\d|^[IWEF]\d{4} |^(WARNING|INFO|ERROR|DEBUG)\b|^\*\*\*|"
                   r"^\((raylet|pid=)|^error|^internal error")


# ---- running a case's processes ---------------------------------------------------------------------------


def substitute(argv: list[str], d: Path) -> list[str]:
    """``argv`` with the fixture runs' ids, the last stored run (``@LAST``) and the case's folder (``{DIR}``)."""
    out = []
    for a in argv:
        for token, run_id in FIXTURE_IDS.items():
            a = a.replace("{" + token + "}", run_id)
        if "@LAST" in a and (d / "last_id").exists():
            a = a.replace("@LAST", (d / "last_id").read_text())
        out.append(a.replace("{DIR}", str(d)))
    return out


def run_process(argv: list[str], d: Path, env: dict, timeout: float) -> Outcome:
    """``placelab ARGV`` (app cases: ARGV as it is) in its own session, killed with its children after ``timeout``."""
    cmd = argv if argv and argv[0] == sys.executable else placelab_argv(argv)
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=d, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        code = None
    return Outcome(code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), time.perf_counter() - t)


def run_concurrently(argvs: list[list[str]], d: Path, env: dict, timeout: float) -> list[Outcome]:
    """The commands ``argvs`` started at once (a race); their outcomes."""
    results: list[Outcome | None] = [None] * len(argvs)

    def one(i: int) -> None:
        results[i] = run_process(substitute(argvs[i], d), d, env, timeout)
    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(argvs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [r for r in results if r is not None]


# ---- judging ------------------------------------------------------------------------------------------------


def judge(c: Case, o: Outcome, d: Path, argv: list[str], check: Callable | None = None) -> tuple[str, str]:
    """``("clean" | "failed" | "hung", detail)`` of one finished process (module docstring); ``check`` after a
    clean verdict."""
    verdict, detail, data = _verdict(c, o, argv)
    problem = check(o, d, data) if check and verdict == "clean" else None
    return ("failed", problem) if problem else (verdict, detail)


def _verdict(c: Case, o: Outcome, argv: list[str]) -> tuple[str, str, Any]:
    """The verdict of the process alone, and its parsed ``--json`` output (None if none)."""
    if o.code is None:
        return "hung", f"no exit within {o.seconds:.0f} s", None
    text = o.out + o.err
    if "Traceback (most recent call last)" in text:
        return "failed", f"traceback: {o.err.strip().splitlines()[-1][:200] if o.err.strip() else ''}", None
    if "internal error" in o.err:
        return "failed", first_line(o.err), None
    if o.code == 2:
        return (*_refusal(c, o), None)
    if o.code != 0:
        return "failed", f"exit {o.code}: {first_line(o.err) or first_line(o.out)}", None
    if c.expect in ("bad", "usage"):
        return "failed", f"accepted (exit 0) where a refusal was due: {o.out[:120]!r}", None
    data = None
    if "--json" in argv:
        try:
            data = strict_json(o.out)
        except ValueError as exc:
            return "failed", f"--json output is not one JSON object ({exc}): {o.out[:120]!r}", None
        if not isinstance(data, dict):
            return "failed", f"--json output is a {type(data).__name__}, not an object", None
    if CONTROL.search(o.out):
        return "failed", f"control character on stdout: {CONTROL.search(o.out).group()!r}", None
    for line in o.err.splitlines():
        if line.strip() and not is_note(line):
            return "failed", f"unexpected stderr line on success: {line[:160]!r}", None
    return "clean", "exit 0", data


def _refusal(c: Case, o: Outcome) -> tuple[str, str]:
    """The verdict of an exit 2: help for ``usage``, else one short ``error: ...`` line after notes."""
    if c.expect == "usage":
        return ("clean", "help on stderr") if not o.out and "Usage" in o.err else (
            "failed", f"exit 2 without help on stderr (stdout {len(o.out)} chars)")
    if c.expect == "ok":
        return "failed", f"refused a valid input: {first_line(o.err)}"
    if o.out.strip():
        return "failed", f"exit 2 with {len(o.out)} characters on stdout"
    lines = o.err.splitlines()
    while len(lines) > 1 and is_note(lines[0]):
        lines = lines[1:]  # progress of the work done before the failure (a full disk mid-training)
    if len(lines) != 1 or not o.err.endswith("\n"):
        return "failed", f"exit 2 with {len(lines)} stderr lines: {first_line(o.err)}"
    if len(lines[0]) > MAX_LINE:
        return "failed", f"error line of {len(lines[0]):,} characters"
    if CONTROL.search(lines[0]):
        return "failed", f"control character in the error line: {lines[0][:120]!r}"
    if not lines[0].startswith("error: "):
        return "failed", f"not an error line: {lines[0][:120]!r}"
    return "clean", lines[0]


def is_note(line: str) -> bool:
    """A line placelab prints on stderr besides its result: a progress bar, a step, a ``warning: ...``."""
    return len(line) <= MAX_LINE and not CONTROL.search(line) and (line.startswith("warning: ")
                                                                   or not NOISE.search(line))


def first_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[0][:300] if lines else ""


def judge_app(o: Outcome) -> tuple[str, str]:
    """The verdict of an app worker's outcome (its last line: the page's exceptions and alerts)."""
    if o.code is None:
        return "hung", f"no answer within {o.seconds:.0f} s"
    lines = [ln for ln in o.out.splitlines() if ln.startswith("{")]
    if o.code != 0 or not lines:
        return "failed", f"app worker exit {o.code}: {first_line(o.err)[:200]}"
    r = json.loads(lines[-1])
    if r["exceptions"]:
        return "failed", f"exception: {r['exceptions'][0][:200]}"
    if len(r["errors"]) > 1:
        return "failed", f"{len(r['errors'])} error alerts: {r['errors'][0][:150]!r}"
    for e in r["errors"]:
        if len(e) > MAX_LINE or CONTROL.search(e) or "Traceback" in e:
            return "failed", f"alert of {len(e):,} characters or with control characters: {e[:120]!r}"
    return "clean", r["errors"][0][:200] if r["errors"] else "no alert"


# ---- one case, in its folder ------------------------------------------------------------------------------


def prepare(c: Case, d: Path, env: dict, fx: Fixtures) -> str | None:
    """Write the case's files; the reason when it cannot run here (``skipped``)."""
    write_files(d, BASE_FILES, fx)
    if "local" in c.needs:
        shutil.copy(fx.local(), d / "local.json")
    if c.store:
        fx.build_runs(set(c.store))
        for name in c.store:
            shutil.copytree(fx.base / "runs" / FIXTURE_IDS[name], d / "runs" / FIXTURE_IDS[name], symlinks=True)
    write_files(d, c.files, fx)
    if "mount" in c.needs and not _can_mount(d):
        return "mounting a tmpfs is not allowed here"
    if c.setup:
        c.setup(d, env)
    return None


_MOUNT_OK: bool | None = None


def _can_mount(d: Path) -> bool:
    global _MOUNT_OK
    if _MOUNT_OK is None:
        probe = d / "mount-probe"
        probe.mkdir()
        _MOUNT_OK = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(probe)],
                                   capture_output=True, check=False).returncode == 0
        if _MOUNT_OK:
            subprocess.run(["umount", str(probe)], check=False)
        probe.rmdir()
    return _MOUNT_OK


def run_case(c: Case, base: Path, env0: dict, fx: Fixtures, timeout: float, keep: Path | None) -> dict:
    d = Path(tempfile.mkdtemp(prefix="case-", dir=base))
    env = {**env0, "PLACELAB_RUNS_DIR": str(d / "runs")}
    result: dict[str, Any] = {"class": c.cls, "case": c.name}
    t0 = time.perf_counter()
    try:
        why = prepare(c, d, env, fx)
        if why:
            return {**result, "verdict": "skipped", "detail": why, "command": ""}
        limit = c.timeout or timeout
        run_env = {**env, **{k: v.replace("{DIR}", str(d)) for k, v in c.env.items()}}
        if c.app is not None:
            (d / "app_case.json").write_text(json.dumps(c.app))
            run_env["PLACELAB_EXAMPLE_RUNS_DIR"] = str(d / "no-examples")
            o = run_process([sys.executable, str(ENTRY), "--app-case", str(d / "app_case.json")], d, run_env, limit)
            verdict, detail = judge_app(o)
            if verdict == "clean" and c.check:
                problem = c.check(o, d, None)
                verdict, detail = ("failed", problem) if problem else (verdict, detail)
            result.update(command=f"app: {json.dumps({k: v for k, v in c.app.items() if k != 'data'})[:200]}")
        elif c.runner or c.concurrent:
            outcomes = (c.runner(c, d, run_env, limit) if c.runner
                        else run_concurrently(c.concurrent, d, run_env, limit))
            verdicts = [judge(c, o, d, ["--json"] if o.out.startswith("{") else []) for o in outcomes]
            bad = [v for v in verdicts if v[0] != "clean"]
            verdict, detail = bad[0] if bad else ("clean", f"{len(outcomes)} processes")
            if verdict == "clean" and c.check:
                problem = c.check(outcomes, d, None)
                verdict, detail = ("failed", problem) if problem else (verdict, detail)
            result.update(command=f"{len(outcomes)} at once: placelab ...")
        else:
            argv = substitute(c.argv, d)
            o = run_process(argv, d, run_env, limit)
            verdict, detail = judge(c, o, d, argv, c.check)
            result.update(command="placelab " + shlex.join(_short(a) for a in argv))
        result.update(verdict=verdict, detail=detail)
    except Exception as exc:  # the benchmark's own setup failed: count it, say so
        result.update(verdict="failed", detail=f"setup: {type(exc).__name__}: {str(exc)[:200]}",
                      command="placelab " + shlex.join(_short(a) for a in c.argv))
    finally:
        if c.teardown:
            c.teardown(d, env)
        result["seconds"] = round(time.perf_counter() - t0, 2)
        if keep is not None and result.get("verdict") in ("failed", "hung"):
            dest = keep / re.sub(r"[^A-Za-z0-9._-]+", "_", c.key)[:120]
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(d, dest, symlinks=True, ignore=_skip_special)
            (dest / "command.txt").write_text(result.get("command", "") + "\n")
        _remove(d)
    return result


def _short(a: str) -> str:
    return a if len(a) <= 120 else f"{a[:60]}...<{len(a):,} chars>...{a[-20:]}"


def _skip_special(folder: str, names: list[str]) -> list[str]:
    skip = []
    for n in names:
        p = Path(folder) / n
        try:
            st = p.lstat()
        except OSError:
            continue
        if not (p.is_symlink() or p.is_dir() or p.is_file()) or (p.is_file() and st.st_blocks * 512 < st.st_size // 2
                                                                 and st.st_size > 2**26):
            skip.append(n)
    return skip


def _remove(d: Path) -> None:
    for p in sorted(d.rglob("*"), reverse=True):
        if p.is_dir() and not p.is_symlink() and os.path.ismount(p):
            subprocess.run(["umount", "-l", str(p)], check=False, capture_output=True)
    for p in d.rglob("*"):
        if p.is_dir() and not p.is_symlink():
            with contextlib.suppress(OSError):
                os.chmod(p, 0o755)
    shutil.rmtree(d, ignore_errors=True)


# ---- the pass -----------------------------------------------------------------------------------------


def build_cases() -> list[Case]:
    return [c for make in CLASSES.values() for c in make()]


def select(cases: list[Case], args: argparse.Namespace) -> list[Case]:
    if args.classes:
        wanted = set(args.classes.split(","))
        cases = [c for c in cases if c.cls in wanted]
    if args.match:
        cases = [c for c in cases if re.search(args.match, c.key)]
    if args.quick:
        by_class: dict[str, list[Case]] = {}
        for c in cases:
            by_class.setdefault(c.cls, []).append(c)
        cases = [c for group in by_class.values() for c in group[:: max(1, min(8, len(group) // 2))]]
    return cases


def summarize(results: list[dict]) -> dict:
    classes: dict[str, dict[str, int]] = {}
    for r in results:
        row = classes.setdefault(r["class"], {"cases": 0, "clean": 0, "failed": 0, "hung": 0, "skipped": 0})
        row[r["verdict"]] += 1
        row["cases"] += r["verdict"] != "skipped"
    cases = sum(r["cases"] for r in classes.values())
    clean = sum(r["clean"] for r in classes.values())
    return {"cases": cases, "clean": clean, "failed": sum(r["failed"] for r in classes.values()),
            "hung": sum(r["hung"] for r in classes.values()),
            "skipped": sum(r["skipped"] for r in classes.values()),
            "clean_percent": round(100.0 * clean / cases, 2) if cases else None, "classes": classes,
            "failures": [r for r in results if r["verdict"] in ("failed", "hung")]}


def print_report(s: dict) -> None:
    print(f"{'class':<12} {'cases':>6} {'clean':>6} {'failed':>7} {'hung':>5} {'skipped':>8}")
    for name, row in s["classes"].items():
        print(f"{name:<12} {row['cases']:>6} {row['clean']:>6} {row['failed']:>7} {row['hung']:>5} {row['skipped']:>8}")
    print(f"{'all':<12} {s['cases']:>6} {s['clean']:>6} {s['failed']:>7} {s['hung']:>5} {s['skipped']:>8}")
    print(f"\nclean: {s['clean_percent']} % of {s['cases']} cases")
    if s["failures"]:
        print("\nfailures:")
        for r in s["failures"]:
            print(f"- [{r['class']}] {r['case']} ({r['verdict']}, {r['seconds']} s)\n    {r['command'][:300]}\n"
                  f"    {r['detail'][:300]}")


def main(argv: list[str] | None = None, description: str = "The adversarial pass.") -> None:
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--quick", action="store_true", help="about one case in eight of each class")
    ap.add_argument("--classes", default="", help=f"comma-separated classes (default: all): {', '.join(CLASSES)}")
    ap.add_argument("--match", default="", help="only the cases whose class/name matches this regular expression")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds before a case counts as hung (default 60)")
    ap.add_argument("--keep", type=Path, default=None, help="copy the folders of failing cases here")
    ap.add_argument("--json", action="store_true", help="print one JSON object (the summary and every case)")
    ap.add_argument("--list", action="store_true", help="list the selected cases, run nothing")
    ap.add_argument("--app-case", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.app_case:
        cases_app.play(args.app_case)
        return
    cases = select(build_cases(), args)
    if args.list:
        for c in cases:
            print(f"{c.key}\t{shlex.join(_short(a) for a in c.argv) if c.argv else c.app or 'several processes'}")
        print(f"{len(cases)} cases", file=sys.stderr)
        return
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="placelab-adversarial-"))
    env = {k: v for k, v in os.environ.items() if k not in ("PLACELAB_DEBUG", "PLACELAB_RUNS_DIR")}
    env.update(PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), COLUMNS="120",
               PLACELAB_CACHE_DIR=str(base / "cache"), PLACELAB_CACHE=str(base / "graph-cache"),
               XDG_CACHE_HOME=str(base / "xdg-cache"), XDG_DATA_HOME=str(base / "xdg-data"))
    fx = Fixtures(base, env)
    results = []
    t0 = time.perf_counter()
    try:
        for i, c in enumerate(cases, 1):
            r = run_case(c, base, env, fx, args.timeout, args.keep)
            results.append(r)
            print(f"[{i}/{len(cases)}] {r['verdict']:<7} {r['seconds']:>6.1f} s  {c.key}"
                  + ("" if r["verdict"] == "clean" else f"\n    {r['detail'][:200]}"), file=sys.stderr, flush=True)
    finally:
        _remove(base)
    s = summarize(results)
    s["seconds"] = round(time.perf_counter() - t0, 1)
    if args.json:
        print(json.dumps({**s, "results": results}))
    else:
        print_report(s)
        print(f"\n{len(results)} cases in {s['seconds'] / 60:.1f} min")
