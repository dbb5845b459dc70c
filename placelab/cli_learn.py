"""``placelab train``, ``placelab eval`` and ``placelab experiment``: the learned placers (CONTRACTS §5)."""

from __future__ import annotations

import sys
import time
from typing import Annotated

import typer

from engine.errors import SpecError
from engine.store.runs import RunStore
from placelab.cli_common import (
    USER_RUNS_DIR,
    JsonOpt,
    ModeOpt,
    RunsDirOpt,
    SimParamOpt,
    emit,
    fmt_ratio,
    fmt_s,
    parse_params,
    ratio,
    simulation_cluster,
    text_table,
)

__all__ = ["register"]

_GRAPHS_HELP = "graph specs, comma-separated; family:NAME[:train|:test]"
GraphsOpt = Annotated[str, typer.Option("--graphs", "-g", help=_GRAPHS_HELP)]
WorkersOpt = Annotated[int | None, typer.Option(
    help="train: rollout workers; experiment: parallel Optimized trainings — on a local Ray runtime with this "
         "many CPUs (default: in this process)")]
AddressOpt = Annotated[str | None, typer.Option(
    help="run them on the Ray cluster at this address (auto, HOST:PORT or ray://HOST:10001; a cluster with token "
         "authentication also needs RAY_AUTH_MODE=token and its token: docs/guide/sweeps-and-ray.md)")]


class ProgressLine:
    """A progress bar on stderr: redrawn in place on a terminal, a line every few seconds otherwise."""

    def __init__(self, what: str, every_s: float = 5.0) -> None:
        self.what = what
        self.tty = sys.stderr.isatty()
        self.every_s = every_s
        self._last = 0.0
        self._t0 = time.perf_counter()

    def __call__(self, done: int, total: int, message: str) -> None:
        now = time.perf_counter()
        if not self.tty and now - self._last < self.every_s and done < total:
            return
        self._last = now
        rate = 60.0 * done / max(now - self._t0, 1e-9)
        if total:
            filled = int(30 * min(done / total, 1.0))
            bar = f"[{'#' * filled}{'-' * (30 - filled)}] {done}/{total} {self.what}"
        else:
            bar = f"{done} {self.what}"
        line = f"{bar}  {message}  {rate:.0f}/min"
        typer.echo(f"\r{line}\x1b[K" if self.tty else line, err=True, nl=not self.tty)

    def close(self) -> None:
        if self.tty:
            typer.echo("", err=True)


def _threads(n: int | None) -> None:
    if n is not None:
        if n < 1:
            raise SpecError("--threads must be at least 1")
        import torch

        torch.set_num_threads(n)


def _given(options: dict[str, object]) -> list[str]:
    """The command-line names of the options given (not None)."""
    return ["--" + k.replace("_", "-") for k, v in options.items() if v is not None]


def train(placer: Annotated[str | None, typer.Option(help="a learned placer (placelab placers)")] = None,
          graphs: Annotated[str | None, typer.Option("--graphs", "-g", help=_GRAPHS_HELP)] = None,
          cluster: Annotated[str | None, typer.Option("--cluster", "-c", help="preset name or cluster file")] = None,
          episodes: Annotated[int | None, typer.Option(help="episode budget (default 1000)")] = None,
          max_placements: Annotated[int | None, typer.Option(
              help="budget of placements sampled, counted as the placer's paper counts them: one per episode "
                   "(docs/budgets.md)")] = None,
          max_seconds: Annotated[float | None, typer.Option(
              help="wall-time budget (s); with --episodes or --max-placements it only stops the training, the "
                   "decays follow the counts")] = None,
          stop_window: Annotated[int, typer.Option(help="stopping rule window in episodes (0: off)")] = 1000,
          stop_tolerance: Annotated[float, typer.Option(help="stopping rule relative change")] = 0.02,
          param: Annotated[list[str] | None, typer.Option(
              help="hyper-parameter key=value: a field of the placer's config (rl/<placer>/config.py)")] = None,
          seed: int = 0, save: Annotated[bool, typer.Option(help="store the run (policy, curve, checkpoint)")] = False,
          resume: Annotated[str | None, typer.Option(help="continue the stored training run RUN")] = None,
          name: Annotated[str | None, typer.Option(help="run name")] = None,
          tag: Annotated[list[str] | None, typer.Option(help="run tag")] = None,
          threads: Annotated[int | None, typer.Option(help="torch CPU threads")] = None,
          stage: Annotated[str | None, typer.Option(help="DOPPLER's training stage: imitation, sim or real "
                                                    "(the same as --param stage=...)")] = None,
          init_from: Annotated[str | None, typer.Option(help="start from the weights of the stored training run "
                                                        "RUN (DOPPLER's next stage, transfer, k-shot)")] = None,
          mode: ModeOpt = None, sim_param: SimParamOpt = None,
          reward: Annotated[str | None, typer.Option(help="simulated (default), or measured: execute every placement "
                                                     "on the cluster's devices and reward its measured makespan "
                                                     "(DOPPLER: --stage real)")] = None,
          workers: WorkersOpt = None, address: AddressOpt = None,
          health_max_random: Annotated[int | None, typer.Option(
              help="learning health: compare with at most this many random placements per graph (default: as many "
                   "as the training evaluated)")] = None,
          request: Annotated[str | None, typer.Option(
              help="train as this request file says (the app's Train page writes one; it holds every option)")] = None,
          runs_dir: RunsDirOpt = USER_RUNS_DIR, as_json: JsonOpt = False) -> None:
    """Train a learned placer (Placeto, the RNN placer or DOPPLER) on one or many graphs.

    Every training ends with its learning-health verdict (policies/rl/core/health.py): entropy, the greedy placement
    (runtime at equal exploration) and the weights' movement, first vs last window, and the best found vs the best
    of as many uniformly random placements."""
    from policies.rl.core.reinforce import Budget, StoppingRule
    from policies.rl.core.request import TrainingRequest, build_request
    from policies.rl.core.training_runs import resume_training, run_training

    _threads(threads)
    if health_max_random is not None and health_max_random < 0:
        raise SpecError("--health-max-random must be at least 0")
    training = {"placer": placer, "graphs": graphs, "cluster": cluster, "param": param, "stage": stage,
                "init_from": init_from, "mode": mode, "sim_param": sim_param, "reward": reward}
    if request is not None and (given := _given({**training, "episodes": episodes, "max_placements": max_placements,
                                                 "max_seconds": max_seconds, "resume": resume, "name": name,
                                                 "tag": tag, "workers": workers, "address": address})):
        raise SpecError(f"--request holds the whole training: leave out {', '.join(given)}")
    bar = ProgressLine("episodes")
    try:
        if request is not None:
            out = run_training(TrainingRequest.read(request), progress=bar)
        elif resume is not None:  # `--resume ''` is refused as a run id, not taken as no --resume
            if _given(training):
                raise SpecError("--resume continues a stored run: leave out --placer, --graphs, --cluster, --param, "
                                "--stage, --init-from, --mode, --sim-param, --reward")
            out = resume_training(RunStore(runs_dir), resume, episodes=episodes, seconds=max_seconds, progress=bar,
                                  workers=workers, address=address, max_random=health_max_random)
        else:
            missing = [o for o, v in (("--placer", placer), ("--graphs", graphs), ("--cluster", cluster)) if not v]
            if missing:
                raise SpecError(f"train needs {', '.join(missing)} (or --resume RUN)")
            if episodes is None and max_placements is None and max_seconds is None:
                episodes = 1000
            c = simulation_cluster(cluster, mode, sim_param) if mode or sim_param else cluster
            params = parse_params(param or [])
            if stage is not None:
                params["stage"] = stage
            checked = build_request(placer, graphs, c, params=params, seed=seed, init_from=init_from,
                                    runs_dir=runs_dir, budget=Budget(episodes, max_placements, max_seconds),
                                    stopping=StoppingRule(stop_window, stop_tolerance),
                                    store=runs_dir if save else None, tags=tag or (), name=name, reward=reward,
                                    workers=workers, address=address, max_random=health_max_random)
            out = run_training(checked, progress=bar)
    finally:
        bar.close()
    res = out.to_dict()
    text = (f"trained {out.episodes} episodes ({out.placements_evaluated} placements evaluated) in "
            f"{out.wall_s:.1f} s, stopped by {out.stop_reason}; best makespan {fmt_s(out.best_makespan_s)}")
    if out.learning_health is not None:
        from policies.rl.core.health import cli_lines

        text += "\n" + "\n".join(cli_lines(out.learning_health))
    if out.run_id:
        text += f"\nsaved as run {out.run_id}"
    emit(res, as_json, text)


def evaluate(run: Annotated[str, typer.Argument(help="a stored training run")], graphs: GraphsOpt,
             cluster: Annotated[str | None, typer.Option("--cluster", "-c",
                                                         help="cluster (default: the training cluster)")] = None,
             seed: int = 0, save: Annotated[bool, typer.Option(help="store the results as an eval run")] = False,
             threads: Annotated[int | None, typer.Option(help="torch CPU threads")] = None,
             mode: ModeOpt = None, sim_param: SimParamOpt = None,
             runs_dir: RunsDirOpt = USER_RUNS_DIR, as_json: JsonOpt = False) -> None:
    """Apply a trained policy to graphs without retraining (zero-shot)."""
    from policies.rl.core.training_runs import evaluate_policy

    _threads(threads)
    if (mode or sim_param) and not cluster:
        raise SpecError("eval --mode / --sim-param need --cluster (the cluster to simulate on)")
    c = simulation_cluster(cluster, mode, sim_param) if cluster else None
    rows, eval_id = evaluate_policy(RunStore(runs_dir), run, graphs, cluster=c, seed=seed, save=save)
    table = text_table([[r["graph"], fmt_s(r["makespan_s"]), fmt_ratio(ratio(r["makespan_s"], r["lower_bound_s"])),
                         "yes" if r["oom"] else "no"] for r in rows], ["graph", "makespan", "×LB", "OOM"])
    out = {"policy": run, "results": rows}
    if eval_id:
        out["run_id"] = eval_id
        table += f"\nsaved as run {eval_id}"
    emit(out, as_json, table)


def experiment(family: Annotated[str, typer.Option(help="graph family: nmt, ptb or cifar10")],
               cluster: Annotated[str, typer.Option("--cluster", "-c", help="preset name or cluster file")],
               placer: Annotated[str, typer.Option(help="learned placer")] = "placeto",
               episodes: Annotated[int, typer.Option(help="episodes of training on the train split")] = 3000,
               optimized_episodes: Annotated[int, typer.Option(help="episodes per test graph for Optimized")] = 300,
               random_samples: Annotated[int, typer.Option(help="random placements per test graph")] = 10,
               test_graphs: Annotated[int | None, typer.Option(min=1, help="use only the first N test graphs")] = None,
               param: Annotated[list[str] | None, typer.Option(help="hyper-parameter key=value")] = None,
               seed: int = 0, threads: Annotated[int | None, typer.Option(help="torch CPU threads")] = None,
               workers: WorkersOpt = None, address: AddressOpt = None,
               runs_dir: RunsDirOpt = USER_RUNS_DIR, as_json: JsonOpt = False) -> None:
    """Placeto §4.2 generalization: Zero-Shot vs Optimized vs Random on a family's test graphs."""
    from engine.parallel.tasks import ParallelMap
    from policies.rl.core.experiment import generalization
    from policies.rl.registry import make_config

    make_config(placer, parse_params(param or []))  # a wrong placer or parameter fails before any training
    _threads(threads)
    for what, v in (("--episodes", episodes), ("--optimized-episodes", optimized_episodes),
                    ("--random-samples", random_samples)):
        if v <= 0:
            raise SpecError(f"{what} must be positive")
    bar = ProgressLine("steps")
    try:
        with ParallelMap(workers=workers, address=address) as ex:
            res = generalization(RunStore(runs_dir), family, cluster, placer=placer, episodes=episodes,
                                 optimized_episodes=optimized_episodes, random_samples=random_samples,
                                 test_graphs=test_graphs, params=parse_params(param or []), seed=seed,
                                 progress=bar, executor=ex)
    finally:
        bar.close()
    rows = [[r["graph"], fmt_s(r["zero_shot_s"]), fmt_s(r["optimized_s"]), fmt_s(r["random_s"])]
            for r in res["per_graph"]]
    summary = res["summary"]
    text = (text_table(rows, ["test graph", "zero-shot", "optimized", "random"])
            + f"\nmedian zero-shot / optimized: {summary['median_zero_shot_over_optimized']:.3f}"
            + f"\nsaved as run {res['run_id']} (policy: run {res['policy_run_id']})")
    emit(res, as_json, text)


def register(app: typer.Typer) -> None:
    """Add the learned-placer commands to the ``placelab`` app."""
    app.command()(train)
    app.command("eval")(evaluate)
    app.command()(experiment)
