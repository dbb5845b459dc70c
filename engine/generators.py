"""Graph generators, addressed by spec strings ``gen:NAME[?key=value&...]`` (CONTRACTS §5).

The registry of generators: :data:`GENERATORS` lists the workload modules and collects their cards
(:func:`engine.workloads.card.generator`, where each name is written once). :func:`generator_descriptions`
lists them; :func:`from_spec` parses a spec, converts parameters to the generator's annotated types and
reports unknown names or parameters in one sentence. Every numeric parameter of every generator declares its
range on its card (:class:`~engine.limits.Bound`): checked on every call before anything is built, and by the
app's guard (``dashboard/input_guard.py``) with the app's ceilings (:func:`check_parameters`).
"""

from __future__ import annotations

import inspect
import math
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np

from engine.errors import SpecError, quote
from engine.graph.compgraph import CompGraph
from engine.limits import (
    GENERATED_OPS,
    GENERATOR_SEED,
    MAX_GENERATED_EDGES,
    MAX_GENERATED_OPS,
    Bound,
)
from engine.spec_params import spec_kwargs
from engine.workloads import doppler, keras_models, placeto_families, recurrent
from engine.workloads.card import Generator, cards_of, check_bounds, generator

__all__ = ["GENERATORS", "Generator", "check_parameters", "from_spec", "generator_descriptions", "random_dag",
           "spec_arguments"]


def check_parameters(name: str, values: Mapping[str, Any], *, app: bool = False) -> None:
    """:func:`~engine.workloads.card.check_bounds` for ``gen:name`` (a known generator)."""
    check_bounds(GENERATORS[name], values, app=app)


def generator_descriptions() -> dict[str, str]:
    """Every generator's description, by name."""
    return {g.name: g.description for g in GENERATORS.values()}


def spec_arguments(spec: str) -> tuple[str, dict[str, Any]]:
    """The generator named by ``gen:NAME?key=value&...`` and every parameter's value: the spec's, converted to the
    parameter's type, else the default. SpecError for an unknown generator or parameter or a value of the wrong
    type; nothing is checked against the bounds or built."""
    name, _, query = spec.removeprefix("gen:").partition("?")
    gen = GENERATORS.get(name)
    if gen is None:
        raise SpecError(f"unknown generator {quote(name)} (available: {', '.join(sorted(GENERATORS))})")
    params = inspect.signature(gen.make).parameters
    return name, {k: p.default for k, p in params.items()} | spec_kwargs(query, dict(params), f"gen:{name}")


def from_spec(spec: str) -> CompGraph:
    """Build the graph named by ``gen:NAME?key=value&...`` (its parameters checked first)."""
    name, values = spec_arguments(spec)
    return GENERATORS[name].make(**values)


@generator("random", "random layered DAG with float costs (tests, benchmarks)",
          {"ops": GENERATED_OPS, "degree": Bound(0, math.inf),  # ops × degree: MAX_GENERATED_EDGES
           "seed": GENERATOR_SEED, "window": Bound(1, MAX_GENERATED_OPS)})
def random_dag(ops: int = 1000, degree: float = 2.0, seed: int = 0, window: int = 50,
               name: str = "") -> CompGraph:
    """A random DAG of ``ops`` ops, each with ~``degree`` inputs from the previous ``window`` ops.

    Compute times are uniform in [1, 100] µs, output sizes uniform in [1 KB, 1 MB],
    persistent bytes in [0, 4 MB]; edge bytes equal the producer's output size. Op ``i``'s
    name is ``op{i:07d}`` so names sort in index order. Seeded: the same parameters always
    give the same graph.
    """
    # ~ops × degree edges are drawn before any is kept: bounded before any is drawn
    if ops * degree > MAX_GENERATED_EDGES:
        raise SpecError(f"gen:random: degree {degree:g} is too large: ops × degree = {ops * degree:.3g} edges, "
                        f"beyond the limit of {MAX_GENERATED_EDGES:,}")
    rng = np.random.default_rng(seed)
    k = rng.poisson(degree, size=ops)
    k[0] = 0
    dst = np.repeat(np.arange(ops), k)
    lo = np.maximum(dst - window, 0)
    src = lo + (rng.random(len(dst)) * (dst - lo)).astype(np.int64)
    keep = src < dst
    src, dst = src[keep], dst[keep]
    out_bytes = rng.integers(1_000, 1_000_000, size=ops).astype(np.float64)
    return CompGraph(
        name or f"random-{ops}-s{seed}",
        [f"op{i:07d}" for i in range(ops)],
        compute_any=rng.uniform(1e-6, 100e-6, size=ops),
        output_bytes=out_bytes,
        persistent_bytes=rng.integers(0, 4_000_000, size=ops).astype(np.float64),
        edge_src=src, edge_dst=dst, edge_bytes=out_bytes[src],
    )


#: Every generator, by name: the cards of this module's and the workload modules' generators.
GENERATORS: dict[str, Generator] = cards_of(sys.modules[__name__], doppler, keras_models, placeto_families, recurrent)
