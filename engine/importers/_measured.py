"""Shared by the measured cost modes (``pytorch_measured``, ``tensorflow_measured``): option checks
and the measured graph built from its reference graph."""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.errors import GraphError, quote
from engine.graph.compgraph import CompGraph

__all__ = ["check_measure_options", "with_measured_times"]


def check_measure_options(repeats: Any, warmup: Any, kind: Any) -> None:
    """``repeats`` >= 1 and ``warmup`` >= 0 whole numbers, ``kind`` a non-empty string, else GraphError."""
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise GraphError(f"repeats must be an integer >= 1, got {quote(repeats)}")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise GraphError(f"warmup must be an integer >= 0, got {quote(warmup)}")
    if not isinstance(kind, str) or not kind:
        raise GraphError(f"kind must be a non-empty string, got {quote(kind)}")


def with_measured_times(ref: CompGraph, seconds: np.ndarray, kind: str) -> CompGraph:
    """``ref`` with one compute kind, ``kind``, whose times are ``seconds`` (everything else copied)."""
    return CompGraph(
        ref.name, ref.op_names, compute_any=np.full(ref.num_ops, np.nan),
        compute_by_kind=np.asarray(seconds, dtype=float)[:, None], kinds=(kind,),
        output_bytes=ref.output_bytes.copy(), persistent_bytes=ref.persistent_bytes.copy(),
        temp_bytes=ref.temp_bytes.copy(),
        edge_src=ref.edge_src.copy(), edge_dst=ref.edge_dst.copy(), edge_bytes=ref.edge_bytes.copy(),
        op_types=ref.op_types, colocate=ref.colocate, pin=ref.pin, phase=ref.phase, scope=ref.scope,
    )
