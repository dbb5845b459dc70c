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
window, App. A.7), or when a stop is requested (the file ``stop.request`` in the run).

Every episode becomes a learning-curve row (CONTRACTS §6) — in the run's
``learning_curve.csv`` and as TensorBoard scalars under ``tensorboard/`` — and the run's
``progress`` field is refreshed about once a second for the app to poll. A checkpoint
(``checkpoint.pt``: weights, Adam state, baselines, counters, the random generator) is
written periodically and at the end; resuming from it continues exactly where it stopped.
Checkpoints are loaded with ``torch.load(weights_only=True)``: no code is unpickled. A checkpoint that
cannot be loaded (random bytes, truncated, a pickle of anything but weights) or that does not fit the
run's networks is one :class:`~engine.errors.RunError` naming the run (:func:`read_checkpoint`). A
checkpoint is written through :func:`engine.jsonio.atomic_write_bytes`: a full disk or a Ctrl-C while
it is written leaves the previous checkpoint and no temp file.
"""

from __future__ import annotations

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
from engine.runs import Run
from policies.rl.core.agent import Rollout, backward
from policies.rl.core.reinforce import Budget, StoppingRule, linear
from policies.rl.core.run_files import CHECKPOINT, CURVE, STOP_REQUEST
from policies.rl.core.task import PlacementTask

__all__ = ["Best", "Trainer", "read_checkpoint"]
_STATUS_EVERY_S = 1.0


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
        self.last_rows: list[dict[str, Any]] = []
        self._writer = None
        self._tensorboard = run is not None and tensorboard

    # -- one update ------------------------------------------------------------------------

    def step(self) -> list[dict[str, Any]]:
        """One parameter update (collect, then update); returns its learning-curve rows."""
        return self.update(self.collect())

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
                            self.sampled)
                self.best[st.key] = best
            rows.append({"episode": self.episodes, "graph": st.key, "sampled_runtime": st.final.makespan,
                         "best_runtime": best.makespan, "objective": st.final.objective, "oom": st.final.oom,
                         "reward": st.reward, "entropy": st.entropy, "learning_rate": lr, "entropy_coef": beta,
                         "placements_evaluated": self.placements, "placements_sampled": self.sampled,
                         "wall_time": 0.0,
                         **self.agent.curve_fields})
        return rows

    # -- the loop ----------------------------------------------------------------------------

    def train(self) -> str:
        """Train until a budget, the stopping rule or a stop request ends it; returns the reason."""
        t0 = time.perf_counter()
        wall0 = self.wall
        last_status = last_ckpt = 0.0
        reason = self.exhausted()
        while reason is None:
            before = time.perf_counter()
            rows = self.step()
            took = time.perf_counter() - before
            self.wall = wall0 + time.perf_counter() - t0
            converged = False
            for row in rows:
                row["wall_time"] = self.wall
                converged = self.stopping.add(row["objective"]) or converged
            self._log(rows)
            reason = "converged" if converged else self._stop_requested() or self.exhausted(next_update_s=took)
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
            self.run.append_rows(CURVE, rows)
        if rows and self._tensorboard:
            writer = self._tensorboard_writer(int(rows[0]["episode"]))
            for row in rows:
                for name in ("sampled_runtime", "best_runtime", "objective", "reward", "entropy", "learning_rate"):
                    writer.add_scalar(f"train/{name}", row[name], row["episode"])

    # -- checkpoints -------------------------------------------------------------------------

    def save_checkpoint(self, path: Path) -> None:
        """Atomically write everything a resume needs (weights, Adam, baselines, counters, RNG)."""
        state = {
            "episodes": self.episodes, "updates": self.updates, "placements": self.placements,
            "sampled": self.sampled, "wall": self.wall,
            "rng": self.rng.bit_generator.state, "agent": self.agent.state_dict(),
            "stopping": self.stopping.state_dict(),
            "best": {k: {"objective": b.objective, "makespan": b.makespan, "oom": b.oom,
                         "devices": b.devices.tolist(), "placements_evaluated": b.placements_evaluated,
                         "placements_sampled": b.placements_sampled}
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
                                 b["placements_evaluated"], b.get("placements_sampled"))
                         for k, b in state["best"].items()}
        except (KeyError, TypeError, ValueError, RuntimeError, AttributeError, IndexError) as exc:
            detail = f"no {exc}" if isinstance(exc, KeyError) else type(exc).__name__
            raise RunError(f"{what} does not fit the run's policy.json (damaged, or from another configuration: "
                           f"{detail})") from None
