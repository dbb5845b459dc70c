"""Size and magnitude limits: every count, budget, repeat, size and seed placelab accepts.

One place for every bound, so that a value that would hang a command, exhaust memory or break
a library is refused *before any work starts*, in one sentence that names the limit (exit 2 on
the command line). The values, and why each is what it is, are listed in ``docs/reference/contracts.md``
("Limits").

Every number in a graph or cluster file must be finite, but finite numbers can still add up
to infinity: two ops of ``1e308`` seconds make a total compute of ``inf``, and the
simulator, the lower bound and JSON output then fail far from the input. So each *total*
that the engine forms (compute, bytes, latencies, and the reciprocal of a speed or a
bandwidth, by which times are multiplied) must stay below :data:`MAX_TOTAL`, far beyond any
physical graph (1e100 seconds or bytes) yet far enough from float's 1.8e308 that every
product and sum the simulator forms stays finite.

The caps on counts keep a small input from asking for gigabytes or for years: a cluster's
per-pair link tables grow with the square of its devices, so :data:`MAX_DEVICES` devices are
allowed; a budget of ``2**63 − 1`` simulator evaluations never ends, so every count of work
is at most :data:`MAX_COUNT`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from engine.errors import PlacelabError, SpecError

__all__ = [
    "GENERATED_EDGES",
    "GENERATED_OPS",
    "GENERATOR_BATCH",
    "GENERATOR_CELLS",
    "GENERATOR_DIM",
    "GENERATOR_GPUS",
    "GENERATOR_LAYERS",
    "GENERATOR_LENGTH",
    "GENERATOR_NODES",
    "GENERATOR_SEED",
    "GENERATOR_STRUCTURE",
    "GRAPH_CACHE_MAX_BYTES",
    "GRAPH_CACHE_MAX_ENTRIES",
    "MAX_BATCH",
    "MAX_COUNT",
    "MAX_DEVICES",
    "MAX_GENERATED_EDGES",
    "MAX_GENERATED_OPS",
    "MAX_GENERATOR_BATCH",
    "MAX_GENERATOR_DIM",
    "MAX_GENERATOR_STRUCTURE",
    "MAX_INPUT_ELEMENTS",
    "MAX_NET_DEPTH",
    "MAX_NET_WIDTH",
    "MAX_NOISE",
    "MAX_SECONDS",
    "MAX_SEED",
    "MAX_SIM_RUNS",
    "MAX_STEP_SECONDS",
    "MAX_SWEEP_TASKS",
    "MAX_THREADS",
    "MAX_TOTAL",
    "MAX_WORKERS",
    "WORKERS_PER_CPU",
    "Bound",
    "ExhaustionError",
    "check_at_most",
    "check_local_workers",
    "check_seed",
    "check_simulations",
    "check_total",
    "exhaustion",
]

#: Largest total (seconds or bytes) and largest reciprocal speed or bandwidth the engine accepts.
MAX_TOTAL = 1e100
#: Most devices in one cluster (per-pair tables of 4,096² float64 are 134 MB each).
MAX_DEVICES = 4096

#: Seeds, for every placer, trainer, generator and the simulator's noise: ``0 <= seed <= MAX_SEED``.
#: KaHIP's ``kaffpa`` and METIS take a C ``int`` (a seed of 2**31 or more was a TypeError);
#: numpy, torch and Python's ``random`` accept the whole range.
MAX_SEED = 2**31 - 1
#: Any count of work: a placer's budget (simulator evaluations, list-scheduling runs, training
#: episodes), ``bench simulate --repeat``, ``train --episodes`` / ``--max-placements``, ``sweep
#: --seeds``, an integer ``--param``, every other integer option. 10^6 is more than ten times the
#: largest placement count a paper reports (Placeto Table 1: 73 K); ``--budget 2**63 − 1`` ran until killed.
MAX_COUNT = 1_000_000
#: Seeded executions averaged per simulation (``simulation.runs``; DOPPLER §6 averages 10). Every
#: placement a placer evaluates is simulated this many times.
MAX_SIM_RUNS = 10_000
#: Largest ``simulation.noise`` σ. The log-normal factor ``exp(σZ − σ²/2)`` has mean 1, but its
#: median ``exp(−σ²/2)`` collapses beyond σ ≈ 1 (σ = 3: 0.011; σ ≥ 38: 0.0 in float), so sampled
#: makespans fall far below the lower bound; up to 1 the coefficient of variation is about σ (1.31 at 1).
MAX_NOISE = 1.0
#: Tasks in one sweep (graphs × clusters × placers × seeds); each is a stored run.
MAX_SWEEP_TASKS = 100_000
#: Ops of ``gen:random`` (10^6-op graphs are the benchmarks' largest).
MAX_GENERATED_OPS = 10_000_000
#: Expected edges of ``gen:random`` (ops × degree): about 40 bytes each while it is built, 2 GB at the cap
#: (``ops=10^7&degree=1000`` asked for 74.5 GiB).
MAX_GENERATED_EDGES = 50_000_000
#: The product of a generator's structure parameters (:class:`Bound` ``structure``: layers, unroll length, GPUs,
#: cell nodes, cells — each multiplies the ops): ``gen:nmt?length=1000000000`` once asked for 24 GB.
MAX_GENERATOR_STRUCTURE = 20_000
#: Batch of a generated training step (``gen:nmt?batch=``, ``gen:inception-v3?batch=``): 20× the largest a paper
#: uses (Placeto's ptb family: 3,072); ``gen:nasnet?batch=1000000000`` was accepted.
MAX_GENERATOR_BATCH = 65_536
#: Any other size of a generated graph: layer widths, channels, vocabularies, matrix sides, sequence lengths
#: (they scale its costs, not its ops).
MAX_GENERATOR_DIM = 2**20
#: Built graphs kept in the on-disk graph cache (``engine.workloads.keras_models.cache_dir``: Keras models are
#: seconds to minutes to build), and their bytes; the least recently used go first. A link names any batch, so
#: without a bound the app's visitors could fill the server's disk one graph at a time.
GRAPH_CACHE_MAX_ENTRIES = 64
GRAPH_CACHE_MAX_BYTES = 2 * 1024**3
#: Width of any layer of a learned placer's network (hidden units, embeddings, attention, heads):
#: 8× the widest any paper uses (the RNN placer's 512); ``hidden=10^10`` asked torch for 4 TB.
MAX_NET_WIDTH = 4096
#: Message-passing rounds of a learned placer's graph network (Placeto: 4 or 8; DOPPLER: 6); each
#: round is a pass over every edge at every step of an episode.
MAX_NET_DEPTH = 64
#: Episodes a learned placer rolls out per update (``batch``, the RNN placer's ``samples``) and Placeto's passes
#: per episode: an update runs whole whatever the episode budget, so ``batch=10^6`` with ``--episodes 2`` rolled
#: out a million episodes. 128× the papers' 8 (Placeto App. A.7's workers, Mirhoseini §3.4's samples).
MAX_BATCH = 1024
#: Torch CPU threads (``--threads``): more than the hardware threads of any one machine; a million made
#: thread creation fail inside torch (signal 11).
MAX_THREADS = 1024
#: Any wall-time budget in seconds (``train --max-seconds``): 30 days, longer than any training a paper reports
#: (Mirhoseini et al. 2017: 27 hours); ``1e12`` (31,700 years) was accepted.
MAX_SECONDS = 30 * 24 * 3600
#: One device's share of one executed step (``--step-ms``, or the graph's compute × ``--time-scale``): an hour,
#: which every measured repeat and placement takes again (``--step-ms 1e30`` asked for steps of 10^27 s).
MAX_STEP_SECONDS = 3600
#: ``--workers`` of every command: the CPUs of a local Ray runtime, or the rollout workers ``train`` starts on a
#: cluster (``--address``). A local runtime is held to :data:`WORKERS_PER_CPU` per CPU of this machine too.
MAX_WORKERS = 1024
#: A local Ray runtime (``--workers N`` without ``--address``) gets at most this many CPUs per CPU of this
#: machine: Ray starts one worker process per CPU it is given, and ``compare --workers 100000`` ran 90 s before
#: Ray gave up on its own node ("timed out during startup").
WORKERS_PER_CPU = 4
#: Elements of one example input of an imported PyTorch module (``graph import --input-shape``), batch included:
#: 2^30, 4 GiB of float32, which the trace runs through the model for real (``--input-shape 10^9,10^9`` was an
#: internal error inside torch).
MAX_INPUT_ELEMENTS = 2**30


@dataclass(frozen=True)
class Bound:
    """The range of one numeric parameter, declared with it (every parameter of every generator:
    ``engine.workloads.card.generator``): ``low <= value <= high`` wherever it is given (a ``gen:`` spec on the command
    line, a call), and ``value <= app`` where a visitor of the app typed it (a link, the Graphs and Train pages;
    ``None``: ``high``), checked before anything is built. ``structure``: the value multiplies the graph's ops, and
    the product of a spec's structure values is bounded by :data:`GENERATOR_STRUCTURE`."""

    low: float
    high: float
    app: float | None = None
    structure: bool = False

    def ceiling(self, app: bool) -> float:
        """The largest value allowed on the command line (``app`` False) or in the app."""
        return self.high if not app or self.app is None else self.app


#: The bounds generator parameters share (each generator names its own: ``engine.workloads.card.generator``). The app's
#: ceilings keep what a visitor builds in the app server's thread to a few seconds: ``gen:nmt?layers=25&length=40``
#: is ~76 K ops, ``gen:family-ptb?nodes=128`` 110 K; 10^5 ops of ``gen:random`` build in a second.
GENERATOR_SEED = Bound(0, MAX_SEED)
GENERATOR_BATCH = Bound(1, MAX_GENERATOR_BATCH, app=4_096)
GENERATOR_DIM = Bound(1, MAX_GENERATOR_DIM)
GENERATED_OPS = Bound(1, MAX_GENERATED_OPS, app=200_000)
#: Not a parameter: ops × degree of ``gen:random``, checked by the generator (and in the app by its guard).
GENERATED_EDGES = Bound(0, MAX_GENERATED_EDGES, app=1_000_000)
GENERATOR_LAYERS = Bound(1, 256, app=32, structure=True)
GENERATOR_LENGTH = Bound(1, 4096, app=512, structure=True)  # unroll length, steps
GENERATOR_GPUS = Bound(1, 256, app=64, structure=True)
GENERATOR_NODES = Bound(1, 1024, app=128, structure=True)
GENERATOR_CELLS = Bound(1, 1024, app=64, structure=True)
#: The product of a spec's structure parameters (not a parameter itself).
GENERATOR_STRUCTURE = Bound(1, MAX_GENERATOR_STRUCTURE, app=1_000)


class ExhaustionError(PlacelabError):
    """The input asked for more memory than this machine has: caught where the limits above could not
    foresee it (the command line turns it into exit 2 and one line, as any other bad input)."""


def exhaustion(exc: BaseException) -> ExhaustionError | None:
    """``exc`` as an :class:`ExhaustionError` when it is memory exhaustion — Python's or numpy's
    ``MemoryError``, numpy's refusal of an array beyond the address space, torch's CPU allocator
    failing — else None."""
    text = " ".join(str(exc).split())
    if isinstance(exc, MemoryError):
        detail = text or "MemoryError"
    elif isinstance(exc, RuntimeError) and "can't allocate memory" in text:
        asked = re.search(r"you tried to allocate (\d+) bytes", text)
        detail = f"torch could not allocate {int(asked.group(1)):,} bytes" if asked else "torch could not allocate"
    elif isinstance(exc, ValueError) and text.startswith("array is too big"):
        detail = "an array larger than the address space was asked for"
    else:
        return None
    return ExhaustionError(f"out of memory ({detail}): the input asks for more than this machine has; "
                           "placelab's limits are in docs/reference/contracts.md")


def _fmt(x: float) -> str:
    return f"{x:,}" if isinstance(x, int) else f"{x:g}"


def check_at_most(what: str, value: float, limit: float, name: str,
                  error: type[PlacelabError] = SpecError) -> None:
    """Raise ``error`` — one sentence naming ``what``, the limit and its constant ``name`` — if ``value > limit``."""
    if value > limit:
        raise error(f"{what} must be <= {_fmt(limit)} (placelab's limit {name}), got {_fmt(value)}")


def check_seed(what: str, value: int, error: type[PlacelabError] = SpecError) -> None:
    """Raise ``error`` unless ``0 <= value <= MAX_SEED`` (the one seed range of every placer)."""
    if value < 0:
        raise error(f"{what} must be >= 0, got {value}")
    check_at_most(what, value, MAX_SEED, "MAX_SEED", error)


def check_local_workers(workers: int, error: type[PlacelabError] = SpecError) -> None:
    """Raise ``error`` unless a local Ray runtime of ``workers`` CPUs stays within :data:`WORKERS_PER_CPU` per CPU
    this process may run on (and :data:`MAX_WORKERS`)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cpus = os.cpu_count() or 1
    check_at_most("--workers", workers, MAX_WORKERS, "MAX_WORKERS", error)
    check_at_most("--workers (a local Ray runtime)", workers, WORKERS_PER_CPU * cpus,
                  f"WORKERS_PER_CPU × this machine's {cpus} CPUs", error)


def check_simulations(what: str, count: int, runs: int, error: type[PlacelabError] = SpecError) -> None:
    """Raise ``error`` unless ``count`` evaluations (a budget, a repeat) of ``runs`` simulations each
    (``simulation.runs``) stay within :data:`MAX_COUNT` simulations: a count of work like any other
    (``--repeat 10^6`` with ``runs=10^4``, each within its own limit, asked for 10^10 simulations)."""
    if runs > 1:
        check_at_most(f"{what} × simulation.runs", count * runs, MAX_COUNT, "MAX_COUNT", error)


def check_total(values: Iterable[float] | np.ndarray, what: str, error: type[PlacelabError]) -> None:
    """Raise ``error`` (one sentence naming ``what``) unless the sum of ``values`` is at most :data:`MAX_TOTAL`.

    NaN entries (a compute time missing for a device kind) are skipped.
    """
    arr = np.asarray(values if isinstance(values, np.ndarray) else list(values), dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        total = float(np.nansum(np.abs(arr)))
    if not total <= MAX_TOTAL:
        raise error(f"{what} total {total:.3g}, beyond the {MAX_TOTAL:.0e} placelab computes with")
