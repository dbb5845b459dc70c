"""Parallel rollouts for the learned placers: N rollout workers (Ray actors) and one learner.

Placeto (App. A) trains with 8 workers that collect episodes and a parameter server that
applies **synchronous** updates; Mirhoseini et al. (§4) run several controllers in parallel.
Here the learner is the training process (:class:`policies.rl.trainer.Trainer`) and each
update is:

1. the learner picks the update's graphs with its own generator, exactly as in-process, and
   draws one rollout seed per worker from that same generator;
2. it splits the episodes into contiguous, near-equal parts (Placeto: its ``batch``
   episodes; RNN placer: its K samples of one graph) and puts the current weights into Ray's
   object store once (``ray.put``), then asks worker *i* for part *i*;
3. each worker — an actor holding its own grouped graphs, simulator and copy of the policy —
   loads those weights and the learner's non-parameter state (``Agent.state_dict``: baselines,
   and DOPPLER's episode count, which sets its ε) and rolls out its part without autograd
   (``Agent.rollout``) with a generator seeded by its seed;
4. the learner merges the parts in worker order (``Agent.merge``) and takes the gradient step
   (``Trainer.update``), so baselines, the learning curve, checkpoints, the stop request and
   resume are the in-process ones.

**Deviation from the in-process path:** episodes are sampled by per-worker generators rather
than by the learner's one generator, so training with workers does not repeat a single-process
run episode for episode. Each worker's seed is drawn from the learner's generator (which is
seeded by ``--seed`` and checkpointed), so a run with the same seed and worker count repeats
exactly, resumes exactly, and a rollout run again on a restarted worker returns the same episodes.

**Reliability:** a worker whose process dies is restarted by Ray and its rollout is run again
(``max_restarts``/``max_task_retries``): the update waits for it and nothing is lost. Ctrl-C
reaches the learner while it waits; :meth:`RolloutWorkers.close` kills every actor and the
caller leaves the run ``interrupted`` at its last checkpointed update.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from engine.cluster import Cluster
from engine.graph import CompGraph
from policies.parallel import Executor, TaskLost
from policies.rl.agent import Rollout

__all__ = ["RolloutWorker", "RolloutWorkers"]

_POLL_S = 0.2  # ray.wait timeout: keeps the learner responsive to Ctrl-C


class RolloutWorker:
    """One rollout worker: its own grouped graphs and a copy of the policy (run as a Ray actor)."""

    def __init__(self, placer: str, cluster: Cluster, config: dict[str, Any], graphs: dict[str, CompGraph]) -> None:
        import torch

        from policies.rl.jobs import task_for
        from policies.rl.registry import make_agent

        torch.set_num_threads(1)  # one CPU per worker
        self.agent = make_agent(placer, cluster.num_devices, config)
        self.tasks = {k: task_for(g, cluster, self.agent.config) for k, g in graphs.items()}

    def rollout(self, weights: dict[str, Any], state: dict[str, Any], keys: list[str], seed: int) -> Rollout:
        """Episodes of ``keys`` with ``weights`` and the learner's ``state``, sampled by a generator
        seeded with ``seed``."""
        self.agent.model.load_state_dict(weights)
        self.agent.load_state_dict(state)
        return self.agent.rollout([self.tasks[k] for k in keys], keys, np.random.default_rng(seed))

    def pid(self) -> int:
        import os

        return os.getpid()


class RolloutWorkers:
    """N rollout workers on a local Ray runtime (``workers``) or an existing cluster (``address``).

    ``workers`` alone starts a local runtime with that many CPUs; with ``address`` it is the
    number of workers on the cluster (default: one per CPU of the cluster).
    """

    def __init__(self, placer: str, agent: Any, tasks: Mapping[str, Any], *, workers: int | None = None,
                 address: str | None = None, max_restarts: int = 3) -> None:
        from engine.errors import SpecError

        if workers is not None and workers < 1:
            raise SpecError(f"--workers must be at least 1, got {workers}")
        self.executor = Executor(workers=None if address else workers, address=address)
        self.requested = workers
        self.max_restarts = max_restarts
        self.placer = placer
        self.agent = agent
        self.tasks = tasks
        self.actors: list[Any] = []
        self.episodes: list[int] = []

    def describe(self) -> str:
        return f"{len(self.actors)} rollout workers ({self.executor.describe()})"

    def start(self) -> None:
        """Start or join Ray and create the workers (each builds its tasks and policy once)."""
        import ray

        self.executor.start()
        n = self.requested or max(1, int(ray.cluster_resources().get("CPU", 1)))
        actor = ray.remote(num_cpus=1, max_restarts=self.max_restarts,
                           max_task_retries=self.max_restarts)(RolloutWorker)
        cluster = next(iter(self.tasks.values())).cluster
        # held for the pool's lifetime: a restarted worker is constructed from it again
        self._graphs = ray.put({k: t.graph for k, t in self.tasks.items()})
        config = self.agent.config.to_dict()
        self.actors = [actor.remote(self.placer, cluster, config, self._graphs) for _ in range(n)]
        self.episodes = [0] * n

    def collect(self, keys: list[str], rng: np.random.Generator) -> Rollout:
        """The update's rollout: ``keys`` split across the workers, merged in worker order."""
        import ray
        from ray.exceptions import RayActorError, RayTaskError

        if not self.actors:
            self.start()
        parts = [p.tolist() for p in np.array_split(np.arange(len(keys)), len(self.actors)) if len(p)]
        seeds = rng.integers(2**63, size=len(parts)).tolist()
        weights = ray.put({k: v.detach() for k, v in self.agent.model.state_dict().items()})
        state = ray.put(self.agent.state_dict())
        refs = [a.rollout.remote(weights, state, [keys[j] for j in p], s)
                for a, p, s in zip(self.actors, parts, seeds, strict=False)]
        pending = list(refs)
        while pending:  # short waits: Ctrl-C reaches the learner at once
            _, pending = ray.wait(pending, num_returns=len(pending), timeout=_POLL_S)
        out = []
        for i, ref in enumerate(refs):
            try:
                out.append(ray.get(ref))
            except RayTaskError as exc:
                raise exc.cause from None
            except RayActorError:
                raise TaskLost(f"rollout worker {i} died more than {self.max_restarts} times") from None
            self.episodes[i] += len(out[-1].episodes)
        return self.agent.merge(out)

    def close(self) -> None:
        """Kill every worker and stop (or leave) the Ray runtime."""
        if self.actors:
            import ray

            for a in self.actors:
                ray.kill(a, no_restart=True)
            self.actors = []
            self._graphs = None
        self.executor.shutdown()
