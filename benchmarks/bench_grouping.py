"""How long does Merge-and-Colocate (Placeto App. A.6) take, with and without the pruned search?

Before every merge, :func:`engine.grouping.rules.merge_and_colocate` asks whether another path joins
the two nodes. The plain search explores everything downstream of the node's other successors; the
default bounds it by the target's place in a topological order kept valid across the merges
(:mod:`engine.grouping.dynamic_order`). Both group identically (checked here on every graph, and in
``tests/engine/test_dynamic_order.py``). Per graph spec: the §3.3 rule's groups (computed once), then
Merge-and-Colocate to ``--groups`` with each search, the median of ``--repeat`` runs, summed over the
spec's graphs (a family has 16 training graphs).

Usage::

    .venv/bin/python benchmarks/bench_grouping.py                 # gen:nmt, gen:nasnet, family:nmt:train
    .venv/bin/python benchmarks/bench_grouping.py --specs gen:nmt --groups 32 --json
"""

from __future__ import annotations

import argparse
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from bench_import import _timed as _median_s  # a sibling script: the median of repeated runs

SPECS = ("gen:nmt", "gen:nasnet", "family:nmt:train")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--specs", nargs="+", default=list(SPECS))
    ap.add_argument("--groups", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=3, help="runs per graph and search (median)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    from engine.grouping.rules import merge_and_colocate, mirhoseini_groups
    from engine.specs import load_graphs

    rows = []
    for spec in args.specs:
        graphs = load_graphs(spec)
        plain = pruned = 0.0
        same = True
        for g in graphs:
            init = mirhoseini_groups(g, colocation=False, min_groups=args.groups)
            t0, a = _median_s(lambda g=g, init=init: merge_and_colocate(g, args.groups, op_group=init, prune=False),
                              args.repeat)
            t1, b = _median_s(lambda g=g, init=init: merge_and_colocate(g, args.groups, op_group=init), args.repeat)
            plain, pruned, same = plain + t0, pruned + t1, same and a.tolist() == b.tolist()
        rows.append({"spec": spec, "graphs": len(graphs), "ops": sum(g.num_ops for g in graphs),
                     "plain_s": plain, "pruned_s": pruned, "speedup": plain / pruned if pruned else None,
                     "same_groups": same})
    if args.json:
        print(json.dumps({"groups": args.groups, "repeat": args.repeat, "cpus": os.cpu_count(), "rows": rows}))
        return 0 if all(r["same_groups"] for r in rows) else 1
    print(f"Merge-and-Colocate to {args.groups} groups, medians of {args.repeat} runs ({os.cpu_count()} CPUs)")
    print(f"{'spec':22} {'graphs':>6} {'ops':>9} {'plain s':>9} {'pruned s':>9} {'speed-up':>9}  same groups")
    for r in rows:
        print(f"{r['spec']:22} {r['graphs']:6} {r['ops']:9,} {r['plain_s']:9.2f} {r['pruned_s']:9.2f} "
              f"{r['speedup']:8.1f}x  {'yes' if r['same_groups'] else 'NO'}")
    return 0 if all(r["same_groups"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
