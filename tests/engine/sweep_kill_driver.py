"""A sweep driver that SIGKILLs itself, for the kill -9 tests (``test_ray_orphans.py``) and the fuzz soak's
``--kill-rounds`` (``benchmarks/fuzz_soak.py``); run as a script with ``PYTHONPATH`` at the repository root.

    python tests/engine/sweep_kill_driver.py WHERE N RUNS WORKERS GRAPHS CLUSTERS PLACERS SEEDS

``WHERE`` ``row``: it dies at its N-th append to ``sweep.csv`` (the N-th result's run is stored, its row
not); ``finish``: while its N-th result's run is stored (its ``run.json`` still says running). ``WORKERS``
0 runs in this process, else on a local Ray runtime with that many CPUs.
"""

from __future__ import annotations

import os
import signal
import sys

from engine.parallel.tasks import ParallelMap
from engine.store.run_dir import Run
from engine.store.runs import RunStore
from placelab.sweep import SweepSpec, run_sweep


def main(argv: list[str]) -> None:
    where, nth, runs, workers = argv[0], int(argv[1]), argv[2], int(argv[3])
    graphs, clusters, placers, seeds = argv[4], argv[5], argv[6], int(argv[7])
    calls = [0]

    def hit() -> None:
        calls[0] += 1
        if calls[0] == nth:
            os.kill(os.getpid(), signal.SIGKILL)

    append_row, finish = Run.append_row, Run.finish

    def killing_append_row(self, name, row):
        if where == "row" and name == "sweep.csv":
            hit()
        return append_row(self, name, row)

    def killing_finish(self, status="done", metrics=None):
        if where == "finish" and self._stored.get("kind") == "compare":
            hit()
        return finish(self, status, metrics)

    Run.append_row, Run.finish = killing_append_row, killing_finish
    with ParallelMap(workers=workers or None) as ex:
        run_sweep(RunStore(runs), SweepSpec.from_specs(graphs, clusters, placers, seeds=seeds), executor=ex)


if __name__ == "__main__":
    main(sys.argv[1:])
