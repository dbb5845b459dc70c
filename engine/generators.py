"""Graph generators, addressed by spec strings ``gen:NAME[?key=value&...]`` (CONTRACTS §5).

Generators register with :func:`register` and are listed by :func:`generator_descriptions`;
:func:`from_spec` parses a spec, converts parameters to the generator's annotated types and
reports unknown names or parameters in one sentence. Every numeric parameter of every generator
declares its range where the generator registers (:class:`~engine.limits.Bound`): checked on every
call before anything is built, and by the app's guard (``dashboard/visitor.py``) with the app's
ceilings.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.errors import SpecError, quote
from engine.graph.compgraph import CompGraph
from engine.limits import (
    GENERATED_OPS,
    GENERATOR_SEED,
    GENERATOR_STRUCTURE,
    MAX_GENERATED_EDGES,
    MAX_GENERATED_OPS,
    Bound,
)
from engine.spec_params import spec_kwargs

__all__ = ["GENERATORS", "check_parameters", "from_spec", "generator_descriptions", "random_dag", "register",
           "spec_arguments"]

_NUMBERS = (int, float, "int", "float")


@dataclass(frozen=True)
class Generator:
    name: str
    make: Callable[..., CompGraph]
    description: str
    bounds: Mapping[str, Bound] = field(default_factory=dict)


GENERATORS: dict[str, Generator] = {}


def register(name: str, description: str, bounds: Mapping[str, Bound] | None = None,
             ) -> Callable[[Callable[..., CompGraph]], Callable[..., CompGraph]]:
    """Decorator: register ``fn(**params) -> CompGraph`` under ``gen:name``.

    ``bounds`` gives each numeric (``int`` or ``float``) parameter of ``fn`` its range, every one of them (a
    generator without is a TypeError here, at import); the function returned checks them on every call, before
    ``fn`` builds anything, and the app's guard checks the app's ceilings (:func:`check_parameters`).
    """
    bounds = dict(bounds or {})

    def deco(fn: Callable[..., CompGraph]) -> Callable[..., CompGraph]:
        sig = inspect.signature(fn)
        numeric = {k for k, p in sig.parameters.items() if p.annotation in _NUMBERS}
        if numeric != set(bounds):
            raise TypeError(f"gen:{name}: bounds must name each numeric parameter ({', '.join(sorted(numeric))}), "
                            f"got {', '.join(sorted(bounds)) or 'none'}")

        @functools.wraps(fn)
        def checked(*args: Any, **kwargs: Any) -> CompGraph:
            call = sig.bind(*args, **kwargs)
            call.apply_defaults()
            check_parameters(name, call.arguments)
            return fn(*args, **kwargs)

        GENERATORS[name] = Generator(name, checked, description, bounds)
        return checked

    return deco


def _shown(x: float) -> str:
    return f"{x:,}" if isinstance(x, int) else f"{x:g}"


def check_parameters(name: str, values: Mapping[str, Any], *, app: bool = False) -> None:
    """Raise a one-sentence SpecError unless every value of ``gen:name``'s numeric parameters in ``values`` is
    within its declared :class:`~engine.limits.Bound` (up to the app's ceiling when ``app``) and the product of
    its structure parameters within :data:`~engine.limits.GENERATOR_STRUCTURE`."""
    whose = "the app's limit" if app else "the limit"
    product, keys = 1, []
    for key, bound in GENERATORS[name].bounds.items():
        value = values.get(key)
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            continue
        value = value.item() if isinstance(value, np.generic) else value  # shown as the number it is
        if isinstance(value, float) and not math.isfinite(value):  # a huge int is refused below
            raise SpecError(f"gen:{name}: {key} must be a finite number, got {quote(value)}")
        if value < bound.low:
            raise SpecError(f"gen:{name}: {key} must be >= {_shown(bound.low)}, got {quote(value)}")
        if value > bound.ceiling(app):
            raise SpecError(f"gen:{name}: {key}={quote(value)} is beyond {whose} of {_shown(bound.ceiling(app))}")
        if bound.structure:
            product *= value
            keys.append(key)
    if product > GENERATOR_STRUCTURE.ceiling(app):
        raise SpecError(f"gen:{name}: {'×'.join(keys)} = {product:,} is beyond {whose} of "
                        f"{GENERATOR_STRUCTURE.ceiling(app):,} (the graph would be too large to build)")


def _load_workloads() -> None:
    import engine.workloads
    from engine._discover import import_submodules

    import_submodules(engine.workloads)


def generator_descriptions() -> dict[str, str]:
    _load_workloads()
    return {g.name: g.description for g in GENERATORS.values()}


def spec_arguments(spec: str) -> tuple[str, dict[str, Any]]:
    """The generator named by ``gen:NAME?key=value&...`` and every parameter's value: the spec's, converted to the
    parameter's type, else the default. SpecError for an unknown generator or parameter or a value of the wrong
    type; nothing is checked against the bounds or built."""
    _load_workloads()
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


@register("random", "random layered DAG with float costs (tests, benchmarks)",
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
