"""Fuzz soak: the CI fuzz cases (``tests/fuzz``) for as long as asked; prints cases/minute and failures.

Each case mutates a valid file of one importer format (formats taken in turn) and runs
``placelab graph info FILE --json`` on it in a worker process; a case fails on exit 1, a
traceback, more than one stderr line, a crash (signal) or no answer within the timeout. The
failing inputs are kept under ``--keep DIR`` (default: not kept) for reproduction.

Usage::

    .venv/bin/python benchmarks/fuzz_soak.py --minutes 5
    .venv/bin/python benchmarks/fuzz_soak.py --minutes 1 --formats graphml,tf-graphdef --json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fuzz"))
from harness import EXTREMES, MUTATION_KINDS, TEXT_SEEDS, Worker, file_name, make_tf_seeds, mutate


def random_ops(rng: random.Random) -> list[tuple]:
    """1-4 mutations, drawn like the CI test's hypothesis strategy."""
    return [(rng.choice(MUTATION_KINDS), rng.random(), rng.random(),
             rng.choice([rng.randbytes(rng.randrange(25)), rng.choice(EXTREMES)]))
            for _ in range(rng.randint(1, 4))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=5.0, help="how long to run (default 5)")
    ap.add_argument("--formats", default="", help="comma-separated formats (default: all)")
    ap.add_argument("--seed", type=int, default=0, help="random seed of the mutations")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds before a case counts as a hang")
    ap.add_argument("--keep", type=Path, default=None, help="folder for the failing inputs")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    if not args.minutes > 0 or not args.timeout > 0:
        ap.error("--minutes and --timeout must be positive")

    seeds = dict(TEXT_SEEDS)
    with tempfile.TemporaryDirectory(prefix="placelab-soak-") as tmp:
        try:
            seeds.update(make_tf_seeds(Path(tmp)))
        except (RuntimeError, OSError) as exc:
            print(f"skipping the TensorFlow formats: {exc}", file=sys.stderr)
    formats = [f for f in (args.formats.split(",") if args.formats else seeds) if f]
    unknown = [f for f in formats if f not in seeds]
    if unknown:
        ap.error(f"unknown format {unknown[0]!r} (formats: {', '.join(seeds)})")

    rng = random.Random(args.seed)
    worker = Worker(timeout_s=args.timeout)
    for fmt in formats:  # warm up (imports, TensorFlow) outside the timed loop; every seed must be a graph
        verdict = worker.run(seeds[fmt], file_name(fmt))
        if verdict.kind != "ok":
            print(f"the {fmt} seed is not a valid graph: {verdict.detail}", file=sys.stderr)
            worker.close()
            return 1
    cases, verdicts, failures = Counter(), Counter(), []
    busy = Counter()
    t0 = time.perf_counter()
    deadline = t0 + 60 * args.minutes
    try:
        while time.perf_counter() < deadline:
            for fmt in formats:
                ops = random_ops(rng)
                data = mutate(seeds[fmt], ops)
                t = time.perf_counter()
                verdict = worker.run(data, file_name(fmt))
                busy[fmt] += time.perf_counter() - t
                cases[fmt] += 1
                verdicts[(fmt, verdict.kind)] += 1
                if verdict.kind == "failure":
                    failures.append({"format": fmt, "mutations": repr(ops), "detail": verdict.detail})
                    print(f"FAILURE {fmt}: {verdict.detail}", file=sys.stderr, flush=True)
                    if args.keep:
                        args.keep.mkdir(parents=True, exist_ok=True)
                        (args.keep / f"failure-{len(failures):04d}-{fmt}").write_bytes(data)
    finally:
        worker.close()
    minutes = (time.perf_counter() - t0) / 60
    total = sum(cases.values())
    rows = [{"format": f, "cases": cases[f], "ok": verdicts[(f, "ok")], "bad_input": verdicts[(f, "bad input")],
             "failures": verdicts[(f, "failure")], "ms_per_case": 1e3 * busy[f] / max(cases[f], 1)} for f in formats]
    result = {"minutes": minutes, "cases": total, "cases_per_minute": total / minutes, "failures": len(failures),
              "per_format": rows, "failure_details": failures[:50]}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{total} cases in {minutes:.1f} min ({total / minutes:.0f} cases/min), {len(failures)} failures")
        print(f"{'format':18} {'cases':>7} {'ok':>6} {'exit 2':>7} {'fail':>5} {'ms/case':>8}")
        for r in rows:
            print(f"{r['format']:18} {r['cases']:>7} {r['ok']:>6} {r['bad_input']:>7} {r['failures']:>5} "
                  f"{r['ms_per_case']:>8.1f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
