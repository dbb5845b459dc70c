"""The random-search reference of the learning-health check (:mod:`policies.rl.core.health`): the best of N
uniformly random feasible placements of a task, evaluated by the task itself (same simulator, same memory
penalty), seeded by the training's seed and the graph's index. No torch here: the app imports this module."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from policies.rl.core.task import Evaluation, PlacementTask

__all__ = ["RANDOM_CHUNK", "random_search", "random_search_seed"]

RANDOM_CHUNK = 1024  #: random placements drawn at once (one generator call)


def random_search_seed(seed: int, index: int) -> list[int]:
    """The seed of graph ``index``'s random search in a training seeded ``seed``."""
    return [int(seed) & 0xFFFF_FFFF_FFFF_FFFF, int(index)]


def random_search(task: PlacementTask, n: int, *, seed: int | Sequence[int] | np.random.Generator,
                  chunk: int = RANDOM_CHUNK) -> Evaluation | None:
    """The best (fewest OOM, then lowest objective) of ``n`` uniformly random feasible placements of ``task``.

    The placements are those of ``n`` calls of :meth:`PlacementTask.random_placement` with
    ``np.random.default_rng(seed)``, drawn ``chunk`` at a time in one generator call each, and
    evaluated by ``task.evaluate`` (its simulator and memory penalty); ``task.evaluations`` is
    left as it was. None when ``n`` is 0.
    """
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    best: Evaluation | None = None
    counted = task.evaluations
    try:
        done = 0
        while done < n:
            k = min(chunk, n - done)
            drawn = np.argmax(rng.random((k, *task.feasible.shape)) * task.feasible, axis=2).astype(np.int64)
            for devices in drawn:
                ev = task.evaluate(devices)
                if best is None or (ev.oom, ev.objective) < (best.oom, best.objective):
                    best = ev
            done += k
    finally:
        task.evaluations = counted
    return best
