"""Run every ``benchmarks/bench_*.py`` script in turn with this interpreter.

Each script's output goes straight to the terminal. Arguments given to this script are
passed to every benchmark (e.g. ``--json``). The exit status is 1 if any benchmark failed,
after all of them have run.

Usage::

    .venv/bin/python benchmarks/run_all.py        # or: make bench
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    scripts = sorted(HERE.glob("bench_*.py"))
    if not scripts:
        print(f"no bench_*.py scripts in {HERE}", file=sys.stderr)
        return 1
    failed = []
    for script in scripts:
        print(f"=== {script.name}", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        rc = subprocess.call([sys.executable, str(script), *argv], cwd=HERE.parent)
        status = "ok" if rc == 0 else f"FAILED (exit status {rc})"
        print(f"=== {script.name}: {status} in {time.perf_counter() - t0:.0f} s\n",
              file=sys.stderr, flush=True)
        if rc != 0:
            failed.append(script.name)
    if failed:
        print(f"{len(failed)} of {len(scripts)} benchmarks failed: {', '.join(failed)}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
