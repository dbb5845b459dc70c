"""How long do ``placelab place``, ``compare`` and ``graph info`` take, wall clock, on a 1k-op JSON graph?

Issue #57, item 4: each at most 1.5 s wall on an idle machine (median of 5). Each command runs as
users run it, a fresh ``python -m placelab.cli`` process (interpreter start, imports, numba's cached
kernels loaded, the work, the output), ``--repeat`` times; the median wall time is printed, with
``python -c pass`` and ``placelab --help`` as the floors under them. The CPU time (user + system) of each
process is printed beside its wall time: on a loaded machine the wall time measures the other jobs too, and
on an idle one a command's wall time is about its CPU time. The graph is
``gen:random?ops=1000`` written as a ``placelab.graph/1`` file into a temporary folder, runs are
stored in another temporary folder (never in the bundled ``runs/``). ``compare`` runs the guide's
placers (``single-device,m-etf,metis``, docs/guide/your-model.md §4); its default set includes
``anneal``, a search of 20,000 simulations, whose time is placing, not starting.

Usage::

    .venv/bin/python benchmarks/bench_cli_startup.py             # a table
    .venv/bin/python benchmarks/bench_cli_startup.py --json      # one JSON object on stdout
    .venv/bin/python benchmarks/bench_cli_startup.py --root /tmp/old-placelab --root .   # a before/after
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL_S = 1.5
OPS = 1000
COMPARE_PLACERS = "single-device,m-etf,metis"


def commands(graph: str, runs: str) -> dict[str, list[str]]:
    """The timed commands by label: each a ``placelab`` argument list."""
    return {
        "--help": ["--help"],
        "graph info": ["graph", "info", graph],
        "place m-etf": ["place", graph, "-c", "k80x2", "--placer", "m-etf"],
        "place m-etf --save": ["place", graph, "-c", "k80x2", "--placer", "m-etf", "--save", "--runs-dir", runs],
        "compare": ["compare", graph, "-c", "k80x2", "--placers", COMPARE_PLACERS, "--runs-dir", runs],
    }


def timed(argv: list[str], root: Path) -> tuple[float, float]:
    """Wall seconds from starting ``argv`` in ``root`` to its exit, and the CPU seconds (user + system) it used;
    a failed command stops the benchmark with its stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run(argv, cwd=root, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        sys.exit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def write_graph(folder: Path) -> Path:
    from engine.generators import from_spec
    from engine.graph.io import save_graph

    path = folder / "random-1k.json"
    save_graph(from_spec(f"gen:random?ops={OPS}"), path)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs per command (median)")
    ap.add_argument("--root", type=Path, action="append",
                    help="a placelab checkout to time (default: this one); repeat it for a before/after, the "
                         "checkouts' runs taking turns so that a change of load falls on all of them alike")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    roots = [r.resolve() for r in args.root or [ROOT]]
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory(prefix="placelab-bench-cli-") as tmp:
        graph = write_graph(Path(tmp))
        runs = str(Path(tmp) / "runs")
        python = [sys.executable, "-m", "placelab.cli"]
        todo = {"python -c pass": [sys.executable, "-c", "pass"],
                **{label: [*python, *cmd] for label, cmd in commands(str(graph), runs).items()}}
        for root in roots:  # once each, untimed: numba's cache and the OS's file cache warm
            timed([*python, "graph", "info", str(graph)], root)
        load = os.getloadavg()[0]
        times: dict[tuple[Path, str], list[tuple[float, float]]] = {(r, label): [] for r in roots for label in todo}
        for _ in range(args.repeat):
            for label, cmd in todo.items():
                for root in roots:
                    times[(root, label)].append(timed(cmd, root))
    wall = {str(r): {label: statistics.median(w for w, _ in times[(r, label)]) for label in todo} for r in roots}
    cpu = {str(r): {label: statistics.median(c for _, c in times[(r, label)]) for label in todo} for r in roots}
    result = {"ops": OPS, "repeat": args.repeat, "goal_s": GOAL_S, "median_wall_s": wall, "median_cpu_s": cpu,
              "load_average": [load, os.getloadavg()[0]], "cpus": os.cpu_count(), "python": platform.python_version()}
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"placelab on a {OPS}-op JSON graph, median of {args.repeat}: wall and CPU (user + system) seconds; "
          f"load average {load:.2f} → {result['load_average'][1]:.2f} on {result['cpus']} CPUs")
    for r in map(str, roots):
        print(f"{r}\n  {'command':<20} {'wall':>7} {'CPU':>7}")
        for label in todo:
            mark = "" if label == "python -c pass" else ("  ok" if wall[r][label] <= GOAL_S else f"  wall > {GOAL_S} s")
            print(f"  {label:<20} {wall[r][label]:6.2f}s {cpu[r][label]:6.2f}s{mark}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
