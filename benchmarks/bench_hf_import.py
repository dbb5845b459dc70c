"""How long, and how much memory, does `placelab graph import` take on GPT-2 small (issue 57)?

The model: Hugging Face ``GPT2LMHeadModel(GPT2Config())`` built from its config with random weights (nothing
is downloaded; transformers is a test dependency in requirements.txt), 124,439,808 parameters (the
embedding matrix is tied to the language-model head). The command, as a user runs it, in a child process::

    placelab graph import gpt2_factory.py:gpt2 -o gpt2.json --input-shape 1024:int64 --batch 8 --json

Per run: the command's wall time (start-up, building the model, tracing the training step, writing the graph
file), its peak resident memory (``ru_maxrss`` of the child), the graph's ops and edges, and its parameter
count read back from the file (the ``Parameter`` ops' bytes / 4: float32). Several runs: the median time and
the largest peak. The load average is printed before and after: other jobs on the machine slow the run.

The issue's goal, on an idle machine: at most 2 minutes and 2 GB, and the parameter count within 1 % of
124,439,808.

Usage::

    .venv/bin/python benchmarks/bench_hf_import.py                 # GPT-2 small, one run
    .venv/bin/python benchmarks/bench_hf_import.py --layers 2      # a 2-layer GPT-2 (a quick check)
    .venv/bin/python benchmarks/bench_hf_import.py --repeat 3 --json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

GPT2_SMALL_PARAMETERS = 124_439_808
GOAL_S = 120.0
GOAL_BYTES = 2 * 1024**3

FACTORY = '''
from transformers import GPT2Config, GPT2LMHeadModel


def gpt2():
    return GPT2LMHeadModel(GPT2Config(n_layer={layers}))
'''


def _run_once(workdir: Path, args: argparse.Namespace) -> dict[str, Any]:
    """One `placelab graph import` in a child process: wall seconds, peak RSS bytes, the command's JSON."""
    out = workdir / "gpt2.json"
    cmd = [sys.executable, "-c", "from placelab.cli import main; main()", "graph", "import",
           f"{workdir / 'gpt2_factory.py'}:gpt2", "-o", os.fspath(out), "--input-shape", f"{args.seq}:int64",
           "--batch", str(args.batch), "--force", "--json"]
    t = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = child.communicate()
    seconds = time.perf_counter() - t
    if child.returncode != 0:
        raise SystemExit(f"placelab graph import failed (exit {child.returncode}): {stderr.strip()[-500:]}")
    # ru_maxrss of the children waited for so far is the largest of them: each run is a fresh process
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    return {"seconds": seconds, "peak_bytes": peak, "result": json.loads(stdout), "graph": out}


def _parameters(path: Path) -> int:
    from engine.specs import load_graph

    g = load_graph(os.fspath(path))
    return int(sum(b for b, t in zip(g.persistent_bytes, g.op_types, strict=True) if t == "Parameter") // 4)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=12, help="transformer blocks (12: GPT-2 small)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1024, help="tokens per row (GPT-2's context: 1024)")
    ap.add_argument("--repeat", type=int, default=1, help="runs (median time, largest peak)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        (workdir / "gpt2_factory.py").write_text(FACTORY.format(layers=args.layers))
        runs = [_run_once(workdir, args) for _ in range(args.repeat)]
        parameters = _parameters(runs[-1]["graph"])
    load_after = os.getloadavg()
    result = runs[-1]["result"]
    report = {
        "model": f"GPT2LMHeadModel(GPT2Config(n_layer={args.layers}))",
        "batch": args.batch, "seq": args.seq, "runs": args.repeat,
        "seconds": statistics.median(r["seconds"] for r in runs),
        "peak_rss_bytes": max(r["peak_bytes"] for r in runs),
        "parameters": parameters,
        "ops": result["ops"], "edges": result["edges"], "phases": result["phases"],
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "cpus": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"{report['model']}, batch {args.batch} x {args.seq} tokens, {args.repeat} run(s)")
    print(f"  wall time       {report['seconds']:8.1f} s   (goal <= {GOAL_S:.0f} s)")
    print(f"  peak memory     {report['peak_rss_bytes'] / 1024**3:8.2f} GiB (goal <= {GOAL_BYTES / 1024**3:.0f} GiB)")
    print(f"  parameters      {parameters:,}"
          + (f"   (GPT-2 small: {GPT2_SMALL_PARAMETERS:,}, {100 * (parameters / GPT2_SMALL_PARAMETERS - 1):+.2f} %)"
             if args.layers == 12 else ""))
    print(f"  graph           {report['ops']:,} ops, {report['edges']:,} edges, phases {report['phases']}")
    print(f"  load average    {load_before[0]:.2f} before, {load_after[0]:.2f} after ({report['cpus']} CPUs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
