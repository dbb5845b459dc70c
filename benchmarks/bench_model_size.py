"""The learned placers at real model size (issue #35): DOPPLER and Placeto on six real models.

Each model of ``benchmarks/six_models.py`` (ResNet50, InceptionV3, MobileNetV2 from ``tf.keras.applications``;
``nn.Transformer`` 6+6, an unrolled LSTM NMT with attention, a 12-layer GPT-2-like decoder) is imported with
``placelab graph import`` (a training step, roofline costs), then each placer trains on it with
``placelab train --max-seconds S --threads 1`` in its own process, at its defaults (on graphs above 1,000 ops
DOPPLER places 256 groups and Placeto its 128). Per training: the graph's ops, the episodes, the trainer's
wall time against ``--max-seconds`` (and the whole process's, which adds start-up, loading the graph and
the learning-health check), episodes per CPU-minute of the process tree, and the peak resident memory of the
process tree (sampled every 0.1 s with psutil).

Usage::

    .venv/bin/python benchmarks/bench_model_size.py                        # six models × 2 placers, 60 s each
    .venv/bin/python benchmarks/bench_model_size.py --models lstm_nmt --placers doppler --max-seconds 30
    .venv/bin/python benchmarks/bench_model_size.py --graphs-dir /tmp/six  # keep the imported graphs
    .venv/bin/python benchmarks/bench_model_size.py --models "" --specs gen:nasnet   # a 13,482-op graph

Slow: the imports take about half a minute each, then 2 × 6 trainings of ``--max-seconds`` each.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from six_models import IMPORT_ARGS  # noqa: E402

PLACELAB = [sys.executable, "-m", "placelab.cli"]


def import_model(model: str, out: Path) -> float:
    """``placelab graph import`` of one model into ``out`` (kept when it exists); the seconds it took."""
    if out.exists():
        return 0.0
    t0 = time.perf_counter()
    subprocess.run([*PLACELAB, "graph", "import", f"{HERE / 'six_models.py'}:{model}", "-o", str(out),
                    *IMPORT_ARGS[model]], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _tree_rss(proc: psutil.Process) -> int:
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            total += p.memory_info().rss
    return total


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def train(graph: Path | str, placer: str, cluster: str, seconds: float, runs_dir: Path) -> dict[str, Any]:
    """One training in its own process: its JSON result, peak RSS of the tree, CPU seconds and wall time."""
    cmd = [*PLACELAB, "train", "--placer", placer, "-g", str(graph), "-c", cluster, "--max-seconds", str(seconds),
           "--threads", "1", "--json", "--runs-dir", str(runs_dir)]
    cpu0, t0 = _children_cpu(), time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    watch, peak = psutil.Process(proc.pid), 0
    while proc.poll() is None:
        with contextlib.suppress(psutil.Error):
            peak = max(peak, _tree_rss(watch))
        time.sleep(0.1)
    out = proc.stdout.read()
    wall, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    if proc.returncode != 0:
        return {"error": f"exit {proc.returncode}", "wall_s": wall}
    res = json.loads(out)
    return {"episodes": res["episodes"], "train_wall_s": res["wall_s"], "wall_s": wall, "cpu_s": cpu,
            "peak_rss_bytes": peak, "best_makespan_s": res["best_makespan_s"], "stop_reason": res["stop_reason"],
            "health": (res.get("learning_health") or {}).get("label")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(IMPORT_ARGS))
    ap.add_argument("--placers", default="doppler,placeto")
    ap.add_argument("--cluster", default="p100x4")
    ap.add_argument("--max-seconds", type=float, default=60.0)
    ap.add_argument("--graphs-dir", default=None, help="keep the imported graphs here (reused when present)")
    ap.add_argument("--specs", default="", help="comma-separated graph specs trained on as well, e.g. gen:nasnet "
                                                "(13,482 ops)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from engine.specs import load_graph

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        graphs = Path(args.graphs_dir or tmp)
        graphs.mkdir(parents=True, exist_ok=True)
        targets = [(m, graphs / f"{m}.json") for m in args.models.split(",") if m]
        for model, path in [*targets, *((spec, spec) for spec in args.specs.split(",") if spec)]:
            took = import_model(model, path) if model in IMPORT_ARGS else 0.0
            ops = load_graph(path).num_ops
            for placer in args.placers.split(","):
                r = train(path, placer, args.cluster, args.max_seconds, Path(tmp) / "runs")
                rows.append({"model": model, "ops": ops, "import_s": took, "placer": placer, **r})
                if not args.json:
                    _print_row(rows[-1], args.max_seconds)
    meta = {"python": platform.python_version(), "machine": platform.machine(), "cores": psutil.cpu_count(),
            "cluster": args.cluster, "max_seconds": args.max_seconds}
    if args.json:
        print(json.dumps({"meta": meta, "rows": rows}, indent=1))
    return 1 if any("error" in r for r in rows) else 0


def _print_row(r: dict[str, Any], seconds: float) -> None:
    if "error" in r:
        print(f"{r['model']:>13} {r['ops']:>6} ops  {r['placer']:<8} FAILED ({r['error']})", flush=True)
        return
    over = r["train_wall_s"] / seconds - 1
    print(f"{r['model']:>13} {r['ops']:>6} ops  {r['placer']:<8} {r['episodes']:>5} episodes  "
          f"trainer {r['train_wall_s']:6.1f} s ({over:+.1%} of --max-seconds), process {r['wall_s']:6.1f} s  "
          f"{60 * r['episodes'] / r['cpu_s']:7.1f} episodes/CPU-min  peak RSS {r['peak_rss_bytes'] / 2**30:5.2f} GiB  "
          f"best {r['best_makespan_s'] * 1e3:.1f} ms  {r['health']}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
