"""Measured rewards: learned placers trained on executed runtimes instead of simulated ones.

Mirhoseini et al. (2017, §3.1) and Placeto (Addanki et al. 2019, §4) reward a placement by its
runtime measured on the real devices; DOPPLER (Yao et al. 2025, §5, Stage III) fine-tunes its
policy on the real engine's measured makespans after training it in the simulator. Here each
evaluated placement is executed by :class:`engine.executor.Executor` (one executor, its
workers started once, kept open for the whole training) and the mean measured makespan of its
``repeats`` runs replaces the simulated one. Peak memory is the CONTRACTS §4 memory rules on
the measured intervals (the executor allocates no memory), so Placeto's memory penalty still
applies.

The hook is one place: :meth:`policies.rl.core.task.PlacementTask.evaluate` asks ``task.sim`` for
``makespan_and_peak(devices)``; :func:`measured_rewards` puts a :class:`MeasuredRuntime` there
for every task while a training runs and restores the simulators afterwards. Every learned
placer (and DOPPLER's Stage III) is rewarded through it without a line of its own:

    with measured_rewards(tasks, repeats=1):
        trainer.train()

The graph runs with its own compute times; scale it first (:func:`engine.executor.scale_graph`)
when a step would be too long or too short to measure.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

import numpy as np

from engine.cluster import Cluster
from engine.errors import SpecError, quote
from engine.graph.compgraph import CompGraph
from policies.rl.core.task import PlacementTask

__all__ = ["REWARDS", "MeasuredRuntime", "check_executable", "measured_rewards", "rewards_for"]

#: What a learned placer's reward is computed from.
REWARDS = ("simulated", "measured")


class MeasuredRuntime:
    """Stands in for a task's simulator: executes each placement and reports what it measured.

    ``history`` keeps the mean measured makespan of every placement executed, in order.
    """

    def __init__(self, executor, graph: CompGraph, *, repeats: int = 1, warmup: int = 1) -> None:
        if repeats < 1 or warmup < 0:
            raise SpecError(f"measured rewards need repeats >= 1 and warmup >= 0, got {repeats} and {warmup}")
        self.executor, self.graph, self.repeats, self.warmup = executor, graph, repeats, warmup
        self.history: list[float] = []

    def makespan_and_peak(self, devices: np.ndarray) -> tuple[float, np.ndarray]:
        """Execute ``devices`` (one device per op); its mean measured makespan and peak memory per device."""
        m = self.executor.run(self.graph, np.asarray(devices, dtype=np.int64), repeats=self.repeats,
                              warmup=self.warmup)
        self.history.append(m.mean)
        return m.mean, m.schedule.peak_memory


@contextlib.contextmanager
def measured_rewards(tasks: Mapping[str, PlacementTask], *, repeats: int = 1, warmup: int = 1,
                     cores: list[int] | None = None) -> Iterator[dict[str, MeasuredRuntime]]:
    """While open, every task's evaluations are executed on its cluster's devices and measured.

    All tasks must share one cluster (a training does). Yields the :class:`MeasuredRuntime`
    of each task by key. The executor's workers stop, and the simulators come back, on exit.
    """
    from engine.executor import Executor

    clusters = {id(t.cluster): t.cluster for t in tasks.values()}
    if len(clusters) != 1:
        raise SpecError(f"measured rewards execute on one cluster; the tasks have {len(clusters)}")
    saved = {k: t.sim for k, t in tasks.items()}
    with Executor(next(iter(clusters.values())), cores=cores) as ex:
        runtimes = {k: MeasuredRuntime(ex, t.graph, repeats=repeats, warmup=warmup) for k, t in tasks.items()}
        try:
            for k, t in tasks.items():
                t.sim = runtimes[k]
            yield runtimes
        finally:
            for k, t in tasks.items():
                t.sim = saved[k]


def check_executable(cluster: Cluster) -> None:
    """One sentence (SpecError) when this machine cannot execute ``cluster``'s devices: too few cores
    for its ``cpu`` devices, or no CUDA device for each ``gpu`` one. Checked before a training starts."""
    from engine.executor.pool import ExecutionError
    from engine.executor.pool import check_executable as executable

    try:
        executable(cluster)
    except ExecutionError as exc:
        raise SpecError(f"measured rewards (DOPPLER Stage III, --reward measured) execute every placement on "
                        f"cluster {quote(cluster.name)}, and this machine cannot run it ({exc}); train on `-c local` "
                        "(this machine's cores) or on a cluster file from `placelab calibrate`") from None


def rewards_for(tasks: Mapping[str, PlacementTask], reward: str) -> contextlib.AbstractContextManager:
    """The context a training runs in: nothing for ``simulated``, :func:`measured_rewards` for ``measured``."""
    if reward not in REWARDS:
        raise SpecError(f"reward must be one of {', '.join(REWARDS)}, got {quote(reward)}")
    return measured_rewards(tasks) if reward == "measured" else contextlib.nullcontext()
