"""Where does the executor's repeat noise come from? (issue #14 goal: std ≤ 5 % of the mean.)

One placement executed ``--repeats`` times after a warm-up, on 2 CPU workers; every repeat's
makespan is split, per device, into what the measured schedule says the device did:

* **compute** — the sum of its op intervals (pure matmuls sized by the worker's timing model);
  ``compute / planned`` is how much slower than modelled the kernels ran;
* **copies** — the sum of the copies it made (a worker copies its outputs itself);
* **wake-up** — for every op, its start less the moment it became ready (its last input
  arrived and its device was free: the previous op or copy on the device ended): the
  executor's own dispatch and wake-up latency;
* **waiting** — the rest of the makespan (the device idle because inputs were not there).

The coefficient of variation (std / mean over the repeats) of each part says which one makes
the makespan vary: if compute varies as much as the makespan, the noise is the machine's
(the cores' speed), not the executor's. ``single-device`` (no copies, no waiting) is the
executor's floor; below it, **bare matmuls** are the same ops' matmuls timed in a loop in this
process (pinned to one core, one thread, no executor at all): the machine's own noise.

Usage::

    .venv/bin/python benchmarks/bench_executor_noise.py [--graph gen:chainmm] [--repeats 10] [--step-ms 100]
    .venv/bin/python benchmarks/bench_executor_noise.py --json    # one JSON object on stdout
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

from engine.executor import Executor, scale_graph
from engine.executor.calibration import machine_cluster
from engine.sim.schedule import Schedule
from engine.specs import load_graph
from policies.registry import make_placer


def parts(s: Schedule, planned: np.ndarray, pred: list[list[int]], num_devices: int) -> dict[str, float]:
    """One repeat's makespan split into compute, copies, wake-up and waiting, summed over devices."""
    out = {"makespan": s.makespan, "compute": 0.0, "planned": 0.0, "copies": 0.0, "wakeup": 0.0}
    arrival = {(int(o), int(d)): float(e) for o, d, e in zip(s.transfer_op, s.transfer_dst, s.transfer_end,
                                                             strict=True)}
    for d in range(num_devices):
        ops = np.flatnonzero(s.op_device == d)
        ops = ops[np.argsort(s.op_start[ops])]
        tr = np.flatnonzero(s.transfer_src == d)
        out["compute"] += float((s.op_end[ops] - s.op_start[ops]).sum())
        out["planned"] += float(planned[ops].sum())
        out["copies"] += float((s.transfer_end[tr] - s.transfer_start[tr]).sum())
        ends = np.sort(np.concatenate([s.op_end[ops], s.transfer_end[tr]]))
        for o in ops:
            before = ends[ends <= s.op_start[o] + 1e-12]  # the device's previous op or copy
            busy_until = float(before[-1]) if len(before) else 0.0
            inputs = [float(s.op_end[p]) if s.op_device[p] == d else arrival.get((int(p), d), 0.0)
                      for p in pred[o]]
            out["wakeup"] += max(0.0, float(s.op_start[o]) - max([busy_until, *inputs]))
    out["waiting"] = num_devices * s.makespan - out["compute"] - out["copies"] - out["wakeup"]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graph", default="gen:chainmm")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--step-ms", type=float, default=100.0)
    ap.add_argument("--link-gbps", type=float, default=20.0, help="transfers scaled as on a link this fast")
    ap.add_argument("--cores", default=None, help="comma-separated cores to pin the 2 workers to")
    ap.add_argument("--json", action="store_true", help="print one JSON object (figures go to stderr)")
    args = ap.parse_args(argv)
    out: dict = {"load_average": os.getloadavg()[0], "repeats": args.repeats}

    def say(text: str) -> None:
        print(text, file=sys.stderr if args.json else sys.stdout)

    cluster = machine_cluster(2, name="two")
    g = load_graph(args.graph)
    scale = args.step_ms * 1e-3 / (float(g.min_compute().sum()) / 2)
    g = scale_graph(g, scale, scale * cluster.link.bandwidth_bytes_per_s / (args.link_gbps * 1e9))
    pred: list[list[int]] = [[] for _ in range(g.num_ops)]
    for s, d in zip(g.edge_src.tolist(), g.edge_dst.tolist(), strict=True):
        pred[d].append(s)
    planned = g.min_compute()
    cores = [int(c) for c in args.cores.split(",")] if args.cores else None
    out["graph"] = g.name
    say(f"{g.name}: {g.num_ops} ops, {args.repeats} repeats; load average {os.getloadavg()[0]:.2f} on "
          f"{os.cpu_count()} cores")
    with Executor(cluster, cores=cores) as ex:
        for placer in ("single-device", "round-robin"):
            p = make_placer(placer).place(g, cluster, seed=0)
            m = ex.run(g, p, repeats=args.repeats)
            rows = [parts(s, planned, pred, cluster.num_devices) for s in m.schedules]
            out[placer] = {"makespan_mean_s": m.mean, "makespan_std_s": m.std}
            say(f"\n{placer}: makespan {m.mean * 1e3:.2f} ± {m.std * 1e3:.2f} ms ({m.std / m.mean:.1%})")
            for key in ("compute", "copies", "wakeup", "waiting"):
                v = np.array([r[key] for r in rows]) * 1e3
                out[placer][f"{key}_mean_s"], out[placer][f"{key}_std_s"] = v.mean() / 1e3, v.std(ddof=1) / 1e3
                say(f"  {key:8s} mean {v.mean():8.2f} ms  std {v.std(ddof=1):7.2f} ms  "
                      f"cv {v.std(ddof=1) / v.mean() if v.mean() > 0 else 0.0:6.1%}")
            ratio = np.array([r["compute"] / r["planned"] for r in rows])
            out[placer]["compute_over_planned"] = ratio.tolist()
            say(f"  compute / planned: {', '.join(f'{x:.2f}' for x in ratio)}")
    bare = bare_matmuls(planned, args.repeats, (cores or sorted(os.sched_getaffinity(0)))[0])
    out["bare_matmuls_s"] = bare.tolist()
    say(f"\nbare matmuls (no executor): {bare.mean() * 1e3:.2f} ± {bare.std(ddof=1) * 1e3:.2f} ms "
          f"({bare.std(ddof=1) / bare.mean():.1%}); planned {planned.sum() * 1e3:.2f} ms")
    if args.json:
        print(json.dumps(out))
    return 0


def bare_matmuls(durations: np.ndarray, repeats: int, core: int) -> np.ndarray:
    """Seconds per pass over every op's matmuls, run back to back in this process on ``core`` (after a warm-up)."""
    import time

    from engine.executor.kernels import make_kernel

    os.sched_setaffinity(0, {core})
    kernel = make_kernel("cpu")
    model = kernel.calibrate()
    splits = [model.split(float(t)) for t in durations]
    out = []
    for r in range(repeats + 1):
        t0 = time.perf_counter()
        for split in splits:
            kernel.run_for(split)
        if r:
            out.append(time.perf_counter() - t0)
    return np.array(out)


if __name__ == "__main__":
    sys.exit(main())
