"""The REINFORCE training loop shared by the learned placers.

One **update** is two parts: :meth:`Trainer.collect` picks graphs (Placeto §2.3: a graph
sampled per episode; the RNN placer: one graph for its K samples, Mirhoseini §3.1) and lets the
agent roll out its episodes with the current weights, without autograd or optimizer (a
:class:`~policies.rl.core.agent.Rollout`, which another process could collect as well);
:meth:`Trainer.update` has the agent compute the advantages and accumulate the policy gradient
of that rollout (with rollout workers, each worker takes the gradient of its own episodes and the
learner adds them up), clips the gradient norm, and takes an Adam step. The learning rate and
the entropy weight decay linearly from their initial to their final values over the budget
(Placeto App. A.7). Training stops when a budget is used up (episodes, placements
sampled — counted as each placer's paper counts them, ``docs/budgets.md`` — or wall time),
when the stopping rule fires (reward within 2 % over a 1000-episode
window, App. A.7), or when a stop is requested (the file ``stop.request`` in the run). An episode
budget is never overshot: the last update collects only the episodes left.

Every episode becomes a learning-curve row (CONTRACTS §6) — in the run's
``learning_curve.csv`` and as TensorBoard scalars under ``tensorboard/`` — and the run's
``progress`` field is refreshed about once a second for the app to poll. Besides the contract's
columns a row holds the agent's exploration parameters (:attr:`~policies.rl.core.agent.Agent.exploration`:
ε) and, on the rows of a **greedy checkpoint**, what the learning-health check
(:mod:`policies.rl.core.health`) compares at equal exploration: ``greedy_runtime`` and
``greedy_objective``, the simulated makespan and objective of the policy's greedy placement
(argmax at every decision, ε = 0) of the row's graph with the weights after the row's update — on
the training's first row, the weights it starts from —, and ``weight_change``, the sum over the
checkpoints so far of how far the weights moved since the previous one (‖θ − θ_prev‖ / ‖θ_prev‖).
A checkpoint is taken on the first row of a training that starts (not of a resumed one), then
whenever the episodes pass a multiple of :meth:`Trainer.greedy_every`, and at the last update; it
is simulated and not counted among the placements evaluated, so it neither feeds the best
placement nor draws from the training's generator.
A run whose curve was started before a column existed keeps its header (a resume drops the new
columns). A checkpoint
(``checkpoint.pt``: weights, Adam state, baselines, counters, the random generator) is
written periodically and at the end; resuming from it continues exactly where it stopped.
Checkpoints are loaded with ``torch.load(weights_only=True)``: no code is unpickled. A checkpoint that
cannot be loaded (random bytes, truncated, a pickle of anything but weights) or that does not fit the
run's networks is one :class:`~engine.errors.RunError` naming the run (:func:`read_checkpoint`). A
checkpoint is written through :func:`engine.jsonio.atomic_write_bytes`: a full disk or a Ctrl-C while
it is written leaves the previous checkpoint and no temp file.
"""

from __future__ import annotations

import csv
import io
import json
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from engine.errors import RunError
from engine.jsonio import atomic_write_bytes
from engine.store.runs import Run
from policies.rl.core.agent import Rollout, backward
from policies.rl.core.health import window_size
from policies.rl.core.reinforce import Budget, StoppingRule, linear
from policies.rl.core.run_files import CHECKPOINT, CURVE, STOP_REQUEST
from policies.rl.core.task import PlacementTask

__all__ = ["Best", "Trainer", "read_checkpoint"]
_STATUS_EVERY_S = 1.0
GREEDY_EVERY = 25  #: episodes between greedy checkpoints when the budget has no episode or placement count


def read_checkpoint(path: Path, what: str) -> dict[str, Any]:
    """The dictionary of a checkpoint file, loaded with ``weights_only=True`` (nothing in it is run).

    ``what`` names the file in messages (``"run ID: checkpoint.pt"``).

    Raises
    ------
    RunError
        The file is missing, cannot be loaded (corrupt, truncated, a pickle of objects other than
        weights: refused unread) or holds no model weights.
    """
    try:
        with warnings.catch_warnings():  # torch warns about pickle protocols of files it then refuses
            warnings.simplefilter("ignore")
            ckpt = torch.load(path, weights_only=True, map_location="cpu")
    except FileNotFoundError:
        raise RunError(f"{what} is missing") from None
    except Exception as exc:  # UnpicklingError, RuntimeError (not a zip archive), EOFError, OSError, ...
        raise RunError(f"{what} cannot be loaded: it is corrupt, truncated or not a placelab checkpoint "
                       f"({type(exc).__name__})") from None
    if not isinstance(ckpt, dict) or not isinstance(ckpt.get("model"), dict):
        raise RunError(f"{what} is not a placelab checkpoint (it holds no model weights)")
    return ckpt


@dataclass
class Best:
    """The best placement found for one graph (fewest OOM first, then the lowest objective)."""

    objective: float
    makespan: float
    oom: bool
    devices: np.ndarray
    placements_evaluated: int  # placements evaluated in the run when it was found
    placements_sampled: int | None = None  # placements sampled (docs/budgets.md) then; None: an older checkpoint
    source: str | None = "policy"  # whose placement it is (EpisodeStats.best_source); None: an older checkpoint

    def beaten_by(self, oom: bool, objective: float) -> bool:
        return (oom, objective) < (self.oom, self.objective)


class Trainer:
    """Train ``agent`` on ``tasks`` (key → task) under ``budget``; see the module docstring."""

    def __init__(self, agent: Any, tasks: dict[str, PlacementTask], *, seed: int = 0, budget: Budget | None = None,
                 stopping: StoppingRule | None = None, run: Run | None = None,
                 progress: Callable[[int, int, str], None] | None = None, checkpoint_every_s: float = 60.0,
                 tensorboard: bool = True, rollouts: Any = None) -> None:
        if not tasks:
            raise ValueError("training needs at least one graph")
        self.agent = agent
        self.tasks = tasks
        self.keys = list(tasks)
        self.budget = budget or Budget(episodes=1000)
        self.stopping = stopping or StoppingRule()
        self.run = run
        self.progress = progress
        self.checkpoint_every_s = checkpoint_every_s
        self.rollouts = rollouts  # policies.rl.core.workers.RolloutWorkers, or None: roll out in this process
        agent.fit_budget(self.budget)  # DOPPLER: ε decays over the episode budget (§6.1)
        # fused: one kernel per step over all parameters, the same update as torch's per-tensor loop; it is what
        # lets DOPPLER's 4.5 M weights step quickly on a CPU (`benchmarks/bench_doppler.py speed`)
        self.optimizer = torch.optim.Adam(agent.model.parameters(), lr=agent.config.lr, fused=True)
        self.rng = np.random.default_rng(seed)
        # placements: evaluated (simulated or executed); sampled: the papers' unit, what Budget.placements counts
        self.episodes = self.updates = self.placements = self.sampled = 0
        self.wall = 0.0
        self.best: dict[str, Best] = {}
        self.weight_change = 0.0  # summed over the greedy checkpoints (module docstring)
        self._weights_at: Any = None  # the weights at the last greedy checkpoint (or when train() began)
        self._curve_header: list[str] | None = None  # the stored curve's columns, read at the first write
        self.last_rows: list[dict[str, Any]] = []
        self._writer = None
        self._tensorboard = run is not None and tensorboard

    # -- one update ------------------------------------------------------------------------

    def step(self) -> list[dict[str, Any]]:
        """One parameter update (collect, then update); returns its learning-curve rows. The training's first
        row holds the greedy checkpoint of the weights it starts from (module docstring)."""
        rollout = self.collect()
        start = None
        if self.episodes == 0 and rollout.episodes:
            start = self._greedy(rollout.episodes[0].key)
            self._weights_at = self._weights()
        rows = self.update(rollout)
        if start is not None:
            rows[0].update(greedy_runtime=start.makespan, greedy_objective=start.objective, weight_change=0.0)
        return rows

    def schedule(self) -> tuple[float, float]:
        """The learning rate and entropy weight now (linear decays over the budget, Placeto App. A.7)."""
        cfg = self.agent.config
        frac = self.budget.progress(self.episodes, self.sampled, self.wall)
        return linear(cfg.lr, cfg.lr_final, frac), linear(cfg.entropy, cfg.entropy_final, frac)

    def exhausted(self, next_update_s: float = 0.0) -> str | None:
        """The budget limit reached so far (``episodes``, ``placements`` — sampled, ``docs/budgets.md`` —
        or ``seconds``, looking ``next_update_s`` ahead: :class:`Budget`), or None."""
        return self.budget.exhausted(self.episodes, self.sampled, self.wall, next_update_s)

    def collect(self) -> Rollout:
        """The rollout of one update: graphs picked with the trainer's generator, episodes by the agent
        in this process or by the rollout workers (:mod:`policies.rl.core.workers`)."""
        n = self.agent.episodes_per_update
        left = None if self.budget.episodes is None else self.budget.episodes - self.episodes
        if left is not None and left > 0:  # the last update: only the episodes left
            n = min(n, left)
        if self.agent.same_graph_per_update:
            keys = [self.keys[int(self.rng.integers(len(self.keys)))]] * n
        else:
            keys = [self.keys[i] for i in self.rng.integers(len(self.keys), size=n).tolist()]
        if self.rollouts is not None:
            return self.rollouts.collect(keys, self.rng)
        return self.agent.rollout([self.tasks[k] for k in keys], keys, self.rng)

    def update(self, rollout: Rollout) -> list[dict[str, Any]]:
        """The gradient step of ``rollout``; returns its learning-curve rows."""
        lr, beta = self.schedule()
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.optimizer.zero_grad(set_to_none=True)
        if self.rollouts is not None:
            self.rollouts.backward(rollout, entropy_coef=beta, step=self.updates)
        else:
            backward(self.agent, rollout, self.tasks, entropy_coef=beta, step=self.updates)
        if self.agent.config.clip_grad > 0:  # 0: no clipping (DOPPLER, as its authors train)
            torch.nn.utils.clip_grad_norm_(self.agent.model.parameters(), self.agent.config.clip_grad)
        self.optimizer.step()
        self.updates += 1
        rows = []
        for st in rollout.episodes:
            self.episodes += 1
            self.placements += st.evaluations
            self.sampled += st.sampled
            best = self.best.get(st.key)
            if best is None or best.beaten_by(st.best.oom, st.best.objective):
                best = Best(st.best.objective, st.best.makespan, st.best.oom, st.best_devices.copy(), self.placements,
                            self.sampled, st.best_source)
                self.best[st.key] = best
            rows.append({"episode": self.episodes, "graph": st.key, "sampled_runtime": st.final.makespan,
                         "best_runtime": best.makespan, "objective": st.final.objective, "oom": st.final.oom,
                         "reward": st.reward, "entropy": st.entropy, "learning_rate": lr, "entropy_coef": beta,
                         "placements_evaluated": self.placements, "placements_sampled": self.sampled,
                         "wall_time": 0.0,
                         **{k: st.exploration.get(k) for k in self.agent.exploration},
                         "greedy_runtime": None, "greedy_objective": None, "weight_change": None,
                         **self.agent.curve_fields})
        return rows

    # -- greedy checkpoints ------------------------------------------------------------------

    def greedy_every(self) -> int:
        """Episodes between greedy checkpoints: half a learning-health window of the count budget
        (:func:`~policies.rl.core.health.window_size`), so that each window holds one or more; without a
        count budget :data:`GREEDY_EVERY`."""
        limits = [n for n in (self.budget.episodes, self.budget.placements) if n]
        return max(window_size(min(limits)) // 2, 1) if limits else GREEDY_EVERY

    def greedy_checkpoint(self, rows: list[dict[str, Any]]) -> None:
        """Fill the last row's greedy-checkpoint columns (module docstring), unless it holds the starting
        weights' already: the greedy placement of its graph and the weights' movement since the last one."""
        row = rows[-1]
        if row.get("greedy_objective") is not None:
            return
        ev = self._greedy(row["graph"])
        row["greedy_runtime"], row["greedy_objective"] = ev.makespan, ev.objective
        weights = self._weights()
        if self._weights_at is not None:
            size = float(self._weights_at.norm())
            self.weight_change += float((weights - self._weights_at).norm()) / size if size > 0 else 0.0
        self._weights_at = weights
        row["weight_change"] = self.weight_change

    def _greedy(self, key: str) -> Any:
        """The evaluation of the policy's greedy placement of graph ``key``: simulated, not counted
        (:meth:`~policies.rl.core.task.PlacementTask.uncounted`), with a generator of its own."""
        task = self.tasks[key]
        with torch.no_grad(), task.uncounted():
            return task.evaluate(self.agent.place(task, np.random.default_rng(0), greedy=True))

    def _weights(self) -> torch.Tensor:
        with torch.no_grad():
            return torch.nn.utils.parameters_to_vector(self.agent.model.parameters()).detach().clone()

    # -- the loop ----------------------------------------------------------------------------

    def train(self) -> str:
        """Train until a budget, the stopping rule or a stop request ends it; returns the reason."""
        t0 = time.perf_counter()
        wall0 = self.wall
        last_status = last_ckpt = 0.0
        reason = self.exhausted()
        every = self.greedy_every()
        if self._weights_at is None:
            self._weights_at = self._weights()
        while reason is None:
            before = time.perf_counter()
            done = self.episodes
            rows = self.step()
            took = time.perf_counter() - before
            self.wall = wall0 + time.perf_counter() - t0
            converged = False
            for row in rows:
                row["wall_time"] = self.wall
                converged = self.stopping.add(row["objective"]) or converged
            reason = "converged" if converged else self._stop_requested() or self.exhausted(next_update_s=took)
            if rows and (reason is not None or self.episodes // every > done // every):
                self.greedy_checkpoint(rows)
            self._log(rows)
            now = time.perf_counter()
            if self.progress is not None:
                total = self.budget.episodes or 0
                self.progress(self.episodes, total, f"best {self._best_text()}")
            if self.run is not None and (now - last_status >= _STATUS_EVERY_S or reason):
                self.run.update(progress=self.status())
                last_status = now
            if self.run is not None and now - last_ckpt >= self.checkpoint_every_s and not reason:
                self.save_checkpoint(self.run.path / CHECKPOINT)
                last_ckpt = now
        if reason != "stopped":
            self.agent.end_training()  # e.g. DOPPLER's Stage I handoff, before the final checkpoint
        if self.run is not None:
            self.save_checkpoint(self.run.path / CHECKPOINT)
        if self._writer is not None:
            self._writer.flush()
        return reason

    def close(self) -> None:
        """Close the TensorBoard writer (which flushes it: it may fail, e.g. on a full disk) and the rollout
        workers (always)."""
        writer, self._writer = self._writer, None
        try:
            if writer is not None:
                writer.close()
        finally:
            if self.rollouts is not None:
                self.rollouts.close()

    def status(self) -> dict[str, Any]:
        """What the app shows while the run trains."""
        last = self.last_rows[-1] if self.last_rows else {}
        workers = ({"worker_episodes": list(self.rollouts.episodes), "worker_nodes": list(self.rollouts.nodes)}
                   if self.rollouts is not None else {})
        return {**workers, "episodes": self.episodes, "episodes_total": self.budget.episodes, "updates": self.updates,
                "placements_evaluated": self.placements, "placements_sampled": self.sampled,
                "wall_s": round(self.wall, 3),
                "last_runtime_s": last.get("sampled_runtime"), "best_runtime_s": self.best_makespan()}

    def best_makespan(self) -> float | None:
        """The best makespan found, averaged over the graphs (one graph: its best makespan)."""
        if not self.best:
            return None
        return float(np.mean([b.makespan for b in self.best.values()]))

    def _best_text(self) -> str:
        ms = self.best_makespan()
        return "-" if ms is None else f"{ms * 1e3:.2f} ms"

    def _stop_requested(self) -> str | None:
        if self.run is None:
            return None
        flag = self.run.path / STOP_REQUEST
        if flag.exists():
            flag.unlink(missing_ok=True)
            return "stopped"
        return None

    def _tensorboard_writer(self, first_episode: int) -> Any:
        """The run's TensorBoard writer, opened at the first logged update. After a resume it opens with
        ``purge_step`` at the checkpoint's next episode, so TensorBoard drops the events a killed process
        wrote past its checkpoint, as the learning curve CSV is cut back (``Run.cut_table``)."""
        if self._writer is None and self._tensorboard:
            from engine.quiet import quiet_tensorflow_start

            with quiet_tensorflow_start():  # torch's TensorBoard writer imports tensorflow
                from torch.utils.tensorboard import SummaryWriter

                self._writer = SummaryWriter(log_dir=str(self.run.path / "tensorboard"),
                                             purge_step=first_episode if first_episode > 1 else None)
        return self._writer

    def _log(self, rows: list[dict[str, Any]]) -> None:
        self.last_rows = rows
        if self.run is not None:
            self.run.append_rows(CURVE, self._stored_columns(rows))
        if rows and self._tensorboard:
            writer = self._tensorboard_writer(int(rows[0]["episode"]))
            names = ("sampled_runtime", "best_runtime", "objective", "reward", "entropy", "learning_rate",
                     *self.agent.exploration, "greedy_runtime")
            for row in rows:
                for name in names:
                    if row.get(name) is not None:
                        writer.add_scalar(f"train/{name}", row[name], row["episode"])

    def _stored_columns(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``rows`` with the columns of the run's stored curve: a curve started before a column existed (a
        resumed old run) keeps its header; a new one takes the rows' columns."""
        if not rows:
            return rows
        if self._curve_header is None:
            path = self.run.path / CURVE
            stored = None
            if path.is_file() and path.stat().st_size > 0:
                with path.open(newline="", encoding="utf-8") as f:
                    stored = next(csv.reader(f), None)
            self._curve_header = stored or list(rows[0])
        header = self._curve_header
        if set(header) == set(rows[0]):
            return rows
        return [{k: row.get(k) for k in header} for row in rows]

    # -- checkpoints -------------------------------------------------------------------------

    def save_checkpoint(self, path: Path) -> None:
        """Atomically write everything a resume needs (weights, Adam, baselines, counters, RNG)."""
        state = {
            "episodes": self.episodes, "updates": self.updates, "placements": self.placements,
            "sampled": self.sampled, "wall": self.wall,
            "rng": self.rng.bit_generator.state, "agent": self.agent.state_dict(),
            "stopping": self.stopping.state_dict(), "weight_change": self.weight_change,
            "best": {k: {"objective": b.objective, "makespan": b.makespan, "oom": b.oom,
                         "devices": b.devices.tolist(), "placements_evaluated": b.placements_evaluated,
                         "placements_sampled": b.placements_sampled, "source": b.source}
                     for k, b in self.best.items()},
        }
        buf = io.BytesIO()  # serialized in memory, then one atomic write: a failure leaves no temp file
        torch.save({"model": self.agent.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                    "state": json.dumps(state)}, buf)
        atomic_write_bytes(path, buf.getvalue())

    def load_checkpoint(self, path: Path) -> None:
        """Restore a checkpoint written by :meth:`save_checkpoint` (same agent and graphs).

        Raises
        ------
        RunError
            The checkpoint cannot be loaded or does not fit this agent (naming the run).
        """
        what = f"run {self.run.id}: {path.name}" if self.run is not None else str(path)
        ckpt = read_checkpoint(path, what)
        try:
            self.agent.model.load_state_dict(ckpt["model"])
            self.optimizer.load_state_dict(ckpt["optimizer"])
            state = json.loads(ckpt["state"])
            self.episodes, self.updates = int(state["episodes"]), int(state["updates"])
            self.placements, self.wall = int(state["placements"]), float(state["wall"])
            self.sampled = int(state.get("sampled", self.episodes))  # older checkpoints: one per episode
            self.rng.bit_generator.state = state["rng"]
            self.agent.load_state_dict(state["agent"])
            self.stopping.load_state_dict(state["stopping"])
            self.best = {k: Best(b["objective"], b["makespan"], b["oom"], np.asarray(b["devices"], dtype=np.int64),
                                 b["placements_evaluated"], b.get("placements_sampled"), b.get("source"))
                         for k, b in state["best"].items()}
            self.weight_change = float(state.get("weight_change", 0.0))
            self._weights_at = None  # measured again from these weights
        except (KeyError, TypeError, ValueError, RuntimeError, AttributeError, IndexError) as exc:
            detail = f"no {exc}" if isinstance(exc, KeyError) else type(exc).__name__
            raise RunError(f"{what} does not fit the run's policy.json (damaged, or from another configuration: "
                           f"{detail})") from None
