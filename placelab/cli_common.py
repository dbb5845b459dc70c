"""Option types and output helpers shared by the ``placelab`` command modules."""

from __future__ import annotations

import functools
import math
from typing import Annotated, Any

import typer

from engine.cluster import SIMULATION_MODES, Cluster, parse_simulation_options
from engine.errors import RunError, SpecError, printable, quote
from engine.jsonio import dumps
from engine.limits import MAX_COUNT, MAX_SECONDS, MAX_SEED, MAX_THREADS, MAX_WORKERS, check_at_most, exhaustion
from engine.specs import load_cluster
from engine.store.runs import RUNS_DIR_ENV, Run, RunStore, user_runs_dir

GraphArg = Annotated[str, typer.Argument(help="graph file (any supported format), gen:NAME?k=v, or bench:NAME "
                                                 "(a bundled published workload: `placelab graph list`)")]
ClusterOpt = Annotated[str, typer.Option("--cluster", "-c", help="preset name or cluster file")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print one JSON object")]
RunsDirOpt = Annotated[str, typer.Option("--runs-dir", envvar=RUNS_DIR_ENV, help="run store folder")]
ModeOpt = Annotated[str | None, typer.Option(
    "--mode", help=f"simulation mode: {' | '.join(SIMULATION_MODES)} (default: the cluster's)")]
SimParamOpt = Annotated[list[str] | None, typer.Option(
    "--sim-param", help="simulation setting key=value, e.g. choose=b_level, noise=0.1, runs=10 "
                        "(docs/reference/simulation.md)")]
#: Options with a limit of their own (:mod:`engine.limits`); every other integer option is a count (``MAX_COUNT``).
OPTION_LIMITS = {"seed": (MAX_SEED, "MAX_SEED"), "threads": (MAX_THREADS, "MAX_THREADS"),
                 "workers": (MAX_WORKERS, "MAX_WORKERS"), "max_seconds": (MAX_SECONDS, "MAX_SECONDS")}
#: Where runs are saved unless ``--runs-dir`` says otherwise: the user's own store, apart from the read-only
#: examples shipped in ``runs/`` (:func:`engine.store.runs.user_runs_dir`).
USER_RUNS_DIR = user_runs_dir()


def simulation_cluster(cluster: str | Cluster, mode: str | None, sim_params: list[str] | None) -> Cluster:
    """The cluster (a spec or a Cluster) with ``--mode`` / ``--sim-param`` applied: every
    simulation on it (placers, learned placers, trainers) runs with these settings, and runs
    store them with the cluster."""
    c = cluster if isinstance(cluster, Cluster) else load_cluster(cluster)
    return c.with_simulation(mode=mode, **parse_simulation_options(sim_params or []))


def emit(obj: dict[str, Any], as_json: bool, text: str) -> None:
    """Print ``obj`` as one JSON object, or ``text`` for people (control characters in names escaped, so a
    graph or op name cannot drive the terminal)."""
    typer.echo(dumps(obj) if as_json else printable(text))


def text_table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(r, widths, strict=True)).rstrip() for r in [header, *rows]]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]])


def fmt_s(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x * 1e3:.3f} ms" if x < 10 else f"{x:.2f} s"


def fmt_ratio(x: float | None) -> str:
    """A ratio such as makespan / lower bound, two decimals; ``—`` where it is undefined (None: a lower bound of
    0, on a graph whose compute is all zero)."""
    return "—" if x is None else f"{x:.2f}"


def ratio(num: float | None, den: float | None) -> float | None:
    """``num / den``, None where it is undefined (either missing, or ``den`` zero)."""
    return num / den if num is not None and den else None


def fmt_bytes(b: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if b >= size:
            return f"{b / size:.2f} {unit}"
    return f"{b:.0f} B"



def parse_params(pairs: list[str]) -> dict[str, Any]:
    """``--param key=value`` pairs as a dict: int, else finite float, else ``true``/``false`` (any case) as
    a bool, else string."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SpecError(f"--param expects key=value, got {quote(pair)}")
        try:
            out[key] = int(value)
            check_at_most(f"--param {key}", abs(out[key]), MAX_COUNT, "MAX_COUNT")  # every integer config is a count
        except ValueError:
            try:
                out[key] = float(value)
            except ValueError:
                out[key] = {"true": True, "false": False}.get(value.lower(), value)
            else:
                if not math.isfinite(out[key]):
                    raise SpecError(f"--param {key} must be a finite number, got {quote(value)}") from None
    return out


def load_runs(store: RunStore, refs: list[str], last: int | None, verb: str) -> list[Run]:
    """The runs named by ``refs`` (ids or prefixes), or the ``last`` newest of the store, oldest first; a run named
    twice (an id and its prefix) once. ``verb`` says what the command does with them (``draw``, ``report on``)."""
    if bool(refs) == (last is not None):
        raise SpecError(f"name the runs to {verb}: RUN ids, or --last N for the newest N runs" if not refs
                        else "name the runs by RUN ids or by --last N, not both")
    if last is not None:
        newest = store.list()[:last]
        if len(newest) < last:
            raise RunError(f"--last {last}: the run store {store.root} holds {len(newest)} readable runs")
        return newest[::-1]
    runs: dict[str, Run] = {}
    for ref in refs:
        run = store.load(ref)
        runs.setdefault(run.id, run)
    return list(runs.values())


# ---------------------------------------------------------------------------------- numbers
def check_number(name: str, value: Any, low: float | None = 0, high: float | None = None,
                 limit: str | None = None) -> None:
    """Raise a one-sentence :class:`SpecError` unless ``value`` is finite and in ``[low, high]``;
    ``limit`` names the :mod:`engine.limits` constant that ``high`` is."""
    if isinstance(value, float) and not math.isfinite(value):
        raise SpecError(f"{name} must be a finite number, got {value}")
    if low is not None and value < low:
        raise SpecError(f"{name} must be >= {low}, got {value}")
    if high is not None and limit is not None:
        check_at_most(name, value, high, limit)
    elif high is not None and value > high:
        raise SpecError(f"{name} must be <= {high}, got {value}")


def guard_numbers(command: Any) -> None:
    """Give every numeric option of ``command`` and its subcommands one validation.

    Before a command body runs, each int or float value it received is checked: floats must
    be finite (``nan`` or ``inf`` would make a time budget never end), a number is >= 0 unless
    the option declares its own range (typer's ``min``/``max``), a ``--seed`` is at most
    :data:`~engine.limits.MAX_SEED`, ``--threads``, ``--workers`` and ``--max-seconds`` at most their own
    limits (:data:`OPTION_LIMITS`) and every other integer (a budget, a repeat, a count) at most
    :data:`~engine.limits.MAX_COUNT` unless the option declares its own ``max``. A bad value is
    one :class:`SpecError` naming the option and the limit (exit 2), and no work has started.
    Memory exhaustion while the command runs becomes an :class:`~engine.limits.ExhaustionError`
    (exit 2, one line) instead of an internal error.
    """
    callback = getattr(command, "callback", None)
    if callback is not None and not getattr(callback, "_numbers_guarded", False):
        params = {p.name: p for p in command.params}

        @functools.wraps(callback)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            for key, value in kwargs.items():
                if not isinstance(value, int | float) or isinstance(value, bool) or key not in params:
                    continue
                p = params[key]
                opts = getattr(p, "opts", None) or [f"--{key.replace('_', '-')}"]
                low = getattr(p, "min", None)
                high = getattr(p, "max", None)
                limit = None
                if key in OPTION_LIMITS or (isinstance(value, int) and high is None):
                    high, limit = OPTION_LIMITS.get(key, (MAX_COUNT, "MAX_COUNT"))
                check_number(max(opts, key=len), value, 0 if low is None else low, high, limit)
            try:
                return callback(*args, **kwargs)
            except (MemoryError, RuntimeError, ValueError) as exc:  # exhaustion the limits did not foresee: exit 2
                err = exhaustion(exc)
                if err is None:
                    raise
                raise err from None

        guarded._numbers_guarded = True  # type: ignore[attr-defined]
        command.callback = guarded
    for sub in getattr(command, "commands", {}).values():
        guard_numbers(sub)
