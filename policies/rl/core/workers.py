"""Parallel rollouts for the learned placers: N rollout workers (Ray actors) and one learner.

Placeto (App. A) trains with 8 workers that collect episodes and a parameter server that
applies **synchronous** updates; Mirhoseini et al. (§4) run several controllers in parallel.
Here the learner is the training process (:class:`policies.rl.core.trainer.Trainer`) and each
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
4. the learner merges the parts in worker order (``Agent.merge``) and computes the update's
   advantages over all of them (``Agent.advantages``: baselines and normalisation see the whole
   update, as in-process);
5. each worker takes the gradient of its own episodes' share of the loss (``Agent.accumulate``
   with its slice of the advantages; the loss divides by the whole update's count) on the
   episodes it kept, and the learner adds the workers' gradients up in worker order: the sum
   is the update's gradient, as in a parameter server's synchronous update (Placeto App. A).
   The learner then clips and steps (``Trainer.update``), so baselines, the learning curve,
   checkpoints, the stop request and resume are the in-process ones.

Taking the gradient in the workers matters for speed: the gradient runs the policy once more,
with autograd, over every step of the update, which costs as much as the rollout itself; done
by the learner alone, it capped 2 workers at 1.3× one worker (``benchmarks/bench_parallel.py
--training``).

**Deviation from the in-process path:** episodes are sampled by per-worker generators rather
than by the learner's one generator, so training with workers does not repeat a single-process
run episode for episode (and the gradient's floating-point sum runs in another order). Each
worker's seed is drawn from the learner's generator (which is seeded by ``--seed`` and
checkpointed), so a run with the same seed and worker count repeats
exactly, resumes exactly, and a rollout run again on a restarted worker returns the same episodes.

**Where:** each worker says which Ray node it ran its last rollout on (:attr:`RolloutWorkers.nodes`, in the
training's progress as ``worker_nodes``).

**Reliability:** a worker whose process dies is restarted by Ray and its rollout is run again
(``max_restarts``/``max_task_retries``): the update waits for it and nothing is lost. A worker
restarted between its rollout and its gradient no longer holds its episodes: it says so, and the
learner sends them back to it with the weights. Ctrl-C
reaches the learner while it waits; :meth:`RolloutWorkers.close` kills every actor and the
caller leaves the run ``interrupted`` at its last checkpointed update.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from engine.cluster import Cluster
from engine.graph.compgraph import CompGraph
from engine.parallel.ray_cluster import where
from engine.parallel.tasks import ParallelMap, TaskLost
from policies.rl.core.agent import Advantages, Rollout, record_entropies

__all__ = ["RolloutWorker", "RolloutWorkers"]

_POLL_S = 0.2  # ray.wait timeout: keeps the learner responsive to Ctrl-C


class RolloutWorker:
    """One rollout worker: its own grouped graphs and a copy of the policy (run as a Ray actor)."""

    def __init__(self, placer: str, cluster: Cluster, config: dict[str, Any], graphs: dict[str, CompGraph]) -> None:
        import torch

        from policies.rl.core.task import task_for
        from policies.rl.registry import make_agent

        torch.set_num_threads(1)  # one CPU per worker
        self.agent = make_agent(placer, cluster.num_devices, config)
        self.tasks = {k: task_for(g, cluster, self.agent.config) for k, g in graphs.items()}
        self.kept: Any = None  # the data of the last rollout, for its gradient

    def rollout(self, weights: dict[str, Any], state: dict[str, Any], keys: list[str], seed: int) -> Rollout:
        """Episodes of ``keys`` with ``weights`` and the learner's ``state``, sampled by a generator
        seeded with ``seed``; their data is kept for :meth:`gradient`."""
        self.agent.model.load_state_dict(weights)
        self.agent.load_state_dict(state)
        out = self.agent.rollout([self.tasks[k] for k in keys], keys, np.random.default_rng(seed))
        self.kept = out.data
        return out

    def gradient(self, advantages: Advantages, entropy_coef: float, weights: dict[str, Any] | None = None,
                 data: Any = None) -> tuple[dict[str, Any], list[float] | None] | None:
        """The gradient of the loss terms of the last rollout's episodes (``advantages``: their slice)
        with the weights of that rollout, by parameter name, and the episodes' entropies where the
        loss computes them. None when this worker holds no rollout (it was restarted since):
        ``weights`` and ``data`` give them back."""
        if data is not None:
            self.agent.model.load_state_dict(weights)
            self.kept = data
        if self.kept is None:
            return None
        model = self.agent.model
        model.zero_grad(set_to_none=True)
        entropies = self.agent.accumulate(self.kept, advantages, self.tasks, entropy_coef=entropy_coef)
        self.kept = None
        return {n: p.grad for n, p in model.named_parameters() if p.grad is not None}, entropies

    def pid(self) -> int:
        import os

        return os.getpid()

    def node(self) -> tuple[str, str]:
        """The node this worker runs on (:func:`engine.parallel.ray_cluster.where`)."""
        return where()


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
        self.executor = ParallelMap(workers=None if address else workers, address=address)
        self.executor.check()  # an address Ray would fail on: refused before the training and its run start
        self.requested = workers
        self.max_restarts = max_restarts
        self.placer = placer
        self.agent = agent
        self.tasks = tasks
        self.actors: list[Any] = []
        self.episodes: list[int] = []
        self.nodes: list[dict[str, str]] = []  # per worker: {node_id, ip} of the node of its last rollout
        self._last: tuple[Any, list[Rollout]] | None = None  # the last collect's weights and parts

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

        if not self.actors:
            self.start()
        parts = [p.tolist() for p in np.array_split(np.arange(len(keys)), len(self.actors)) if len(p)]
        seeds = rng.integers(2**63, size=len(parts)).tolist()
        weights = ray.put({k: v.detach() for k, v in self.agent.model.state_dict().items()})
        state = ray.put(self.agent.state_dict())
        n = len(parts)
        # node() runs after rollout() on each actor (an actor runs its calls in order): where the rollout ran
        done = self._gather([a.rollout.remote(weights, state, [keys[j] for j in p], s)
                             for a, p, s in zip(self.actors, parts, seeds, strict=False)]
                            + [a.node.remote() for a in self.actors[:n]], list(range(n)) * 2)
        out = done[:n]
        self.nodes = [{"node_id": node_id, "ip": ip} for node_id, ip in done[n:]]
        for i, part in enumerate(out):
            self.episodes[i] += len(part.episodes)
        self._last = (weights, out)
        return self.agent.merge(out)

    def backward(self, rollout: Rollout, *, entropy_coef: float, step: int) -> None:
        """The gradient of the last :meth:`collect` (``rollout``) into the learner's model: the
        learner's advantages, each worker's gradient of its own episodes, summed in worker order."""
        if self._last is None:
            raise RuntimeError("backward() needs the rollout of the last collect()")
        weights, parts = self._last
        self._last = None
        adv = self.agent.advantages(rollout, self.tasks, step=step)
        bounds = np.cumsum([0] + [len(p.episodes) for p in parts]).tolist()
        slices = [adv.part(bounds[i], bounds[i + 1]) for i in range(len(parts))]
        grads = self._gather([a.gradient.remote(sl, entropy_coef) for a, sl in zip(self.actors, slices, strict=False)])
        lost = [i for i, g in enumerate(grads) if g is None]  # restarted since the rollout
        again = [self.actors[i].gradient.remote(slices[i], entropy_coef, weights, parts[i].data) for i in lost]
        for i, g in zip(lost, self._gather(again, lost), strict=True):
            grads[i] = g
        params = dict(self.agent.model.named_parameters())
        for part_grads, _ in grads:
            for name, g in part_grads.items():
                p = params[name]
                p.grad = g.clone() if p.grad is None else p.grad.add_(g)
        parts_entropies = [h for _, h in grads]
        record_entropies(rollout, None if None in parts_entropies else [h for hs in parts_entropies for h in hs])

    def _gather(self, refs: list[Any], workers: list[int] | None = None) -> list[Any]:
        """The results of tasks on the workers numbered ``workers`` (default: one per worker, in
        order); a task's own error is raised as is."""
        import ray
        from ray.exceptions import RayActorError, RayTaskError

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
                worker = i if workers is None else workers[i]
                raise TaskLost(f"rollout worker {worker} died more than {self.max_restarts} times") from None
        return out

    def close(self) -> None:
        """Kill every worker and stop (or leave) the Ray runtime."""
        if self.actors:
            import ray

            for a in self.actors:
                ray.kill(a, no_restart=True)
            self.actors = []
            self._graphs = None
        self.executor.shutdown()
