"""Graph generators, addressed by spec strings ``gen:NAME[?key=value&...]`` (CONTRACTS §5).

Generators register with :func:`register` and are listed by :func:`generator_descriptions`;
:func:`from_spec` parses a spec, converts parameters to the generator's annotated types and
reports unknown names or parameters in one sentence.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from engine.errors import SpecError
from engine.graph import CompGraph
from engine.limits import (
    GENERATOR_STRUCTURE_CAPS,
    MAX_GENERATED_EDGES,
    MAX_GENERATED_OPS,
    MAX_GENERATOR_INT,
    MAX_GENERATOR_STRUCTURE,
)
from engine.spec_params import spec_kwargs

__all__ = ["GENERATORS", "from_spec", "generator_descriptions", "random_dag", "register"]


@dataclass(frozen=True)
class Generator:
    name: str
    make: Callable[..., CompGraph]
    description: str


GENERATORS: dict[str, Generator] = {}


def register(name: str, description: str) -> Callable[[Callable[..., CompGraph]], Callable[..., CompGraph]]:
    """Decorator: register ``fn(**params) -> CompGraph`` under ``gen:name``."""

    def deco(fn: Callable[..., CompGraph]) -> Callable[..., CompGraph]:
        GENERATORS[name] = Generator(name, fn, description)
        return fn

    return deco


def _load_workloads() -> None:
    import engine.workloads
    from engine._discover import import_submodules

    import_submodules(engine.workloads)


def generator_descriptions() -> dict[str, str]:
    _load_workloads()
    return {g.name: g.description for g in GENERATORS.values()}


def from_spec(spec: str) -> CompGraph:
    """Build the graph named by ``gen:NAME?key=value&...``."""
    _load_workloads()
    body = spec[4:] if spec.startswith("gen:") else spec
    name, _, query = body.partition("?")
    gen = GENERATORS.get(name)
    if gen is None:
        raise SpecError(f"unknown generator '{name}' (available: {', '.join(sorted(GENERATORS))})")
    params = inspect.signature(gen.make).parameters
    kwargs = spec_kwargs(query, dict(params), f"gen:{name}")
    _check_size(name, {k: p.default for k, p in params.items()} | kwargs)
    return gen.make(**kwargs)


def _check_size(name: str, params: dict) -> None:
    """One sentence for a parameter that would make the graph too large to build (or overflow);
    the caps are in :mod:`engine.limits`."""
    product = 1
    for key, value in params.items():
        if not isinstance(value, int) or isinstance(value, bool):
            continue
        cap = GENERATOR_STRUCTURE_CAPS.get(key, MAX_GENERATED_OPS if key == "ops" else MAX_GENERATOR_INT)
        if abs(value) > cap:
            raise SpecError(f"gen:{name}: {key}={value} is beyond the limit of {cap:,}")
        if key in GENERATOR_STRUCTURE_CAPS:
            product *= max(value, 1)
    if product > MAX_GENERATOR_STRUCTURE:
        keys = "×".join(k for k in params if k in GENERATOR_STRUCTURE_CAPS)
        raise SpecError(f"gen:{name}: {keys} = {product:,} is beyond the limit of {MAX_GENERATOR_STRUCTURE:,} "
                        "(the graph would be too large to build)")


@register("random", "random layered DAG with float costs (tests, benchmarks)")
def random_dag(ops: int = 1000, degree: float = 2.0, seed: int = 0, window: int = 50,
               name: str = "") -> CompGraph:
    """A random DAG of ``ops`` ops, each with ~``degree`` inputs from the previous ``window`` ops.

    Compute times are uniform in [1, 100] µs, output sizes uniform in [1 KB, 1 MB],
    persistent bytes in [0, 4 MB]; edge bytes equal the producer's output size. Op ``i``'s
    name is ``op{i:07d}`` so names sort in index order. Seeded: the same parameters always
    give the same graph.
    """
    if ops < 1:
        raise SpecError("gen:random: ops must be >= 1")
    if not (math.isfinite(degree) and degree >= 0) or window < 1:
        raise SpecError("gen:random: degree must be a finite number >= 0 and window >= 1")
    if seed < 0:
        raise SpecError("gen:random: seed must be >= 0")
    # ~ops × degree edges are drawn before any is kept (ops=10^7: degree=1e15 was "array is too big", 1000 74.5 GiB)
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
