"""Cases of the classes ``disk`` (a full disk), ``resume``, ``ray`` and ``race``: runs that write, go on, spread
over Ray and compete; and the setups and teardowns they share with other classes (:func:`first_run`,
:func:`mark_interrupted`, :func:`ray_stop`)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from .fixtures import ESC, Case, G, K, Outcome, chain, placelab_argv, run_placelab


def _mount(d: Path, env: dict, fill: bool) -> None:
    full = d / "full"
    full.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", str(full)], check=True, capture_output=True)
    if fill:
        fd = os.open(full / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:  # full
            pass
        finally:
            os.close(fd)


def _umount(d: Path, env: dict) -> None:
    subprocess.run(["umount", "-l", str(d / "full")], check=False, capture_output=True)


def disk() -> Iterator[Case]:
    """Writing to a 160 KB tmpfs, empty or full (skipped where mounting is not allowed)."""
    case = partial(Case, "disk")
    cases = [
        ("train --save on 160 KB", ["train", "--placer", "placeto", "-g", G, "-c", K, "--episodes", "4", "--param",
                                    "batch=2", "--save", "--runs-dir", "full/runs"], False),
        ("train --save on a full disk", ["train", "--placer", "placeto", "-g", G, "-c", K, "--episodes", "4",
                                         "--save", "--runs-dir", "full/runs"], True),
        ("place --save on a full disk", ["place", G, "-c", K, "--placer", "heft", "--save", "--runs-dir", "full/runs"],
         True),
        ("compare --save on 160 KB", ["compare", "gen:random?ops=200&seed=1", "-c", K, "--placers",
                                      "heft,random,round-robin,critical-path", "--runs-dir", "full/runs"], False),
        ("sweep on 160 KB", ["sweep", "-g", "gen:random?ops=200&seed=1", "-c", K, "--placers", "random,heft",
                             "--seeds", "3", "--runs-dir", "full/runs"], False),
        ("place -o on a full disk", ["place", G, "-c", K, "--placer", "heft", "-o", "full/p.json"], True),
        ("export-trace on a full disk", ["runs", "export-trace", "{PLACE}", "-o", "full/t.json"], True),
        ("graph import on a full disk", ["graph", "import", "g.json", "-o", "full/g.json"], True),
        ("calibrate -o on a full disk", ["calibrate", "-o", "full/c.json", "--devices", "1"], True),
    ]
    for label, argv, fill in cases:
        yield case(label, argv, needs=("mount",), expect="bad", setup=lambda d, env, fill=fill: _mount(d, env, fill),
                   teardown=_umount, timeout=120)


SWEEP_FIRST = ["sweep", "-g", "g.json", "-c", K, "--placers", "random,round-robin", "--json"]
TRAIN_FIRST = ["train", "--placer", "placeto", "-g", "g.json", "-c", K, "--episodes", "2", "--param", "batch=2",
               "--save", "--json"]


def first_run(argv: list[str], edit: Callable[[Path], Any] | None = None,
              env_changes: dict[str, str] | None = None) -> Callable[[Path, dict], None]:
    """A setup: ``placelab ARGV`` (``--json``, storing a run), whose id a case names as ``@LAST``, then
    ``edit(case folder)``; ``env_changes`` for that first command ({DIR}: the case's folder)."""
    def setup(d: Path, env: dict) -> None:
        changes = {k: v.replace("{DIR}", str(d)) for k, v in (env_changes or {}).items()}
        proc = run_placelab(argv, d, {**env, **changes})
        (d / "last_id").write_text(json.loads(proc.stdout)["run_id"] if proc.returncode == 0 else "none")
        if edit is not None:
            edit(d)
    return setup


def resume() -> Iterator[Case]:
    """Resuming a sweep or a training whose graph changed, or a run of another kind."""
    case = partial(Case, "resume")
    edits: dict[str, Callable[[Path], None]] = {
        "graph edited": lambda d: (d / "g.json").write_text(chain(5)),
        "graph deleted": lambda d: (d / "g.json").unlink(),
        "graph made garbage": lambda d: (d / "g.json").write_text("{"),
        "run interrupted, graph edited": lambda d: (mark_interrupted(d), (d / "g.json").write_text(chain(5))),
    }
    for label, edit in edits.items():
        yield case(f"sweep --resume, {label}", ["sweep", "--resume", "@LAST", "--json"],
                   setup=first_run(SWEEP_FIRST, edit), timeout=120)
    for label in ("graph edited", "graph made garbage"):
        yield case(f"train --resume, {label}", ["train", "--resume", "@LAST", "--episodes", "4"],
                   setup=first_run(TRAIN_FIRST, edits[label]), timeout=120)
    yield case("sweep --resume of a place run", ["sweep", "--resume", "{PLACE}"], store=("PLACE",), expect="bad")
    yield case("sweep --resume nosuch", ["sweep", "--resume", "nosuch"], expect="bad")
    yield case("sweep --resume with -g", ["sweep", "--resume", "{SWEEP}", "-g", G], store=("SWEEP",))
    yield case("train --resume of a sweep", ["train", "--resume", "{SWEEP}"], store=("SWEEP",), expect="bad")
    yield case("train --resume with another placer", ["train", "--resume", "{TRAIN}", "--placer", "rnn"],
               store=("TRAIN",))
    yield case("train --resume --episodes 0", ["train", "--resume", "{TRAIN}", "--episodes", "0"],
               store=("TRAIN",))
    yield case("train --resume with -g", ["train", "--resume", "{TRAIN}", "-g", "g.json", "--episodes", "4"],
               store=("TRAIN",))
    yield case("train --init-from a place run", ["train", "--placer", "placeto", "-g", G, "-c", K,
                                                 "--init-from", "{PLACE}", "--episodes", "2"], store=("PLACE",),
               expect="bad")
    yield case("train --init-from an rnn run into placeto", ["train", "--placer", "placeto", "-g", G, "-c", K,
                                                             "--init-from", "{RNN}", "--episodes", "2"],
               store=("RNN",))


def mark_interrupted(d: Path) -> None:
    """Make the last sweep look killed half-way: status running (no live lock: interrupted), last row gone."""
    run = d / "runs" / (d / "last_id").read_text()
    doc = json.loads((run / "run.json").read_text())
    doc["status"] = "running"
    (run / "run.json").write_text(json.dumps(doc))
    for csv in run.glob("*.csv"):
        lines = csv.read_text().splitlines()
        csv.write_text("\n".join(lines[:-1]) + "\n")


def ray_stop(d: Path, env: dict) -> None:
    """A teardown: ``placelab ray stop`` (a case that may have started Ray leaves none running)."""
    subprocess.run(placelab_argv(["ray", "stop"]), cwd=d, env=env, capture_output=True, timeout=120, check=False)


def ray() -> Iterator[Case]:
    """Bad --workers and --address, ray stop, a kill -9 of a sweep driver (each case ends with ray stop)."""
    case = partial(Case, "ray", teardown=ray_stop)
    sw = ["sweep", "-g", G, "-c", K, "--placers", "random", "--json"]
    for v in ("0", "2147483648"):
        yield case(f"sweep --workers {v}", [*sw, "--workers", v])
    for addr in ("nosuch-host:6379", "ray://127.0.0.1:1", "auto", f"x{ESC}"):
        yield case(f"sweep --address {addr!r}", [*sw, "--address", addr], timeout=120)
    yield case("compare --workers 0", ["compare", G, "-c", K, "--placers", "heft", "--workers", "0", "--no-save"])
    yield case("train --workers -1", ["train", "--placer", "placeto", "-g", G, "-c", K, "--workers", "-1"],
               expect="bad")
    yield case("ray stop, nothing to stop", ["ray", "stop"], expect="ok")
    yield case("ray stop --json", ["ray", "stop", "--json"], expect="ok")
    state = lambda env: Path(env["PLACELAB_CACHE_DIR"]) / "ray-local" / "999999.json"  # noqa: E731
    yield case("ray stop with a corrupt state file", ["ray", "stop", "--json"], expect="ok",
               setup=lambda d, env: (state(env).parent.mkdir(parents=True, exist_ok=True), state(env).write_text("{x")),
               teardown=lambda d, env: (state(env).unlink(missing_ok=True), ray_stop(d, env)))
    yield case("sweep --workers 1", [*sw, "--workers", "1"], expect="ok", timeout=240)
    for workers in (0, 2):  # issue #34, item 9: fuzz_soak.py's round (a sweep driver SIGKILLs itself, --resume)
        yield case(f"kill -9 of a sweep driver, --workers {workers}", [], runner=_kill_round(workers), timeout=300)


def _kill_round(workers: int) -> Callable[[Case, Path, dict, float], list[Outcome]]:
    def run(c: Case, d: Path, env: dict, timeout: float) -> list[Outcome]:
        import random

        from fuzz_soak import kill_round  # this script's folder

        t = time.perf_counter()
        problem = kill_round(random.Random(workers), workers, timeout)["problem"]
        err = "" if problem is None else f"kill -9 round: {problem}\n"
        return [Outcome(0 if problem is None else 1, "", err, time.perf_counter() - t)]
    return run


def race() -> Iterator[Case]:
    """Commands racing on one run: deletes, shows, exports, resumes, saves under one name."""
    case = partial(Case, "race")
    for n in (2, 4):
        yield case(f"{n} x runs delete of one run", [], store=("PLACE",),
                   concurrent=[["runs", "delete", "{PLACE}"]] * n, check=_one_deleted)
    yield case("runs delete + runs show", [], store=("PLACE",),
               concurrent=[["runs", "delete", "{PLACE}"], ["runs", "show", "{PLACE}", "--json"]])
    yield case("runs delete + export-trace", [], store=("PLACE",),
               concurrent=[["runs", "delete", "{PLACE}"], ["runs", "export-trace", "{PLACE}", "-o", "t.json"]])
    yield case("2 x train --resume", [], store=("TRAIN",),
               concurrent=[["train", "--resume", "{TRAIN}", "--episodes", "8"]] * 2)
    yield case("3 x place --save, same name", [],
               concurrent=[["place", G, "-c", K, "--placer", "heft", "--save", "--name", "same"]] * 3)
    yield case("runs delete + runs list", [], store=("PLACE", "TRAIN"),
               concurrent=[["runs", "delete", "{TRAIN}"], ["runs", "list", "--json"]])


def _one_deleted(outcomes: Any, d: Path, data: Any) -> str | None:
    zero = sum(o.code == 0 for o in outcomes)
    return None if zero == 1 else f"{zero} of {len(outcomes)} deletes said they deleted the run"
