"""What a run's ``run.json`` must be to be read (CONTRACTS §6), and the code version a run records.

A ``run.json`` that is not what placelab writes — not JSON, a field of the wrong type, a number that
is not finite (``NaN``, ``Infinity``, ``1e999``: placelab never writes one), or a metric that listings
show that is not a number — is refused by :func:`read_meta` with one :class:`RunError` naming the run.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import math
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engine.errors import RunError, quote

__all__ = ["RUN_JSON", "RUN_SCHEMA", "STATUSES", "code_version", "iso_timestamp", "read_meta"]

RUN_SCHEMA = "placelab.run/1"
STATUSES = ("running", "done", "failed", "interrupted")
RUN_JSON = "run.json"
#: Fields of ``run.json`` that readers rely on, and the JSON types they must have when present.
_FIELD_TYPES: dict[str, type | tuple[type, ...]] = {
    "id": str, "name": str, "created": str, "updated": str, "status": str, "kind": str,
    "graph": dict, "cluster": (str, type(None)), "placer": (str, type(None)), "parameters": dict,
    "metrics": dict, "tags": list, "parent": str, "edits": list,
}
#: Metrics that listings and the app show or compute with: a finite number (``oom``: a boolean) or null.
_NUMBER_METRICS = ("makespan_s", "lower_bound_s", "ratio_to_lower_bound", "best_makespan_s", "measured_makespan_s",
                   "seconds_to_place", "communication_bytes", "wall_s", "episodes", "placements_evaluated",
                   "predicted_makespan_s", "single_device_makespan_s", "ratio_to_single_device")
_BOOL_METRICS = ("oom",)


@functools.lru_cache(maxsize=1)
def _code_version() -> tuple[str, str | None]:
    try:
        version = importlib.metadata.version("placelab")
    except (importlib.metadata.PackageNotFoundError, ValueError):
        version = "0+unknown"
    commit = None
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=2,
            check=False,
        )
        if out.returncode == 0:
            commit = out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        pass
    return version, commit


def code_version() -> dict[str, str | None]:
    """The placelab version and, when git can tell cheaply, the short commit hash.

    Returns
    -------
    dict
        ``{"placelab": "0.1.0", "git": "abc1234"}``; ``git`` is ``None`` when unknown.
    """
    version, commit = _code_version()
    return {"placelab": version, "git": commit}


def read_meta(path: Path) -> dict[str, Any]:
    """The checked ``run.json`` of the run directory ``path`` (RunError naming the run otherwise)."""
    run_id, file = path.name, path / RUN_JSON
    if not file.is_file():
        raise RunError(f"run {run_id}: run.json is missing")
    try:
        meta = json.loads(file.read_text(encoding="utf-8"), parse_constant=_not_finite, parse_float=_finite_float)
    except _NotFinite as exc:
        raise RunError(f"run {run_id}: run.json holds {exc}, which is not a finite number") from None
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise RunError(f"run {run_id}: run.json is not valid JSON") from None
    except FileNotFoundError:  # deleted between the check and the read
        raise RunError(f"run {run_id}: run.json is missing") from None
    except OSError as exc:
        raise RunError(f"run {run_id}: cannot read run.json ({exc.strerror or type(exc).__name__})") from None
    if not isinstance(meta, dict):
        raise RunError(f"run {run_id}: run.json is not a JSON object")
    if meta.get("schema") != RUN_SCHEMA:
        raise RunError(
            f"run {run_id} has schema {meta.get('schema')!r}; this placelab reads {RUN_SCHEMA!r}"
        )
    for key, kind in _FIELD_TYPES.items():
        if key in meta and not isinstance(meta[key], kind):
            raise RunError(f"run {run_id}: run.json field {quote(key)} has the wrong type ({type(meta[key]).__name__})")
    metrics = meta.get("metrics") or {}
    for key in _NUMBER_METRICS:
        value = metrics.get(key)
        if value is not None and not _is_finite_number(value):
            raise RunError(f"run {run_id}: run.json metric {quote(key)} is not a number ({_short(value)})")
    for key in _BOOL_METRICS:
        value = metrics.get(key)
        if value is not None and not isinstance(value, bool):
            raise RunError(f"run {run_id}: run.json metric {quote(key)} is not true or false ({_short(value)})")
    return meta


class _NotFinite(ValueError):
    """A JSON number that is not finite (``NaN``, ``Infinity``, ``1e999``)."""


def _not_finite(token: str) -> float:
    raise _NotFinite(token)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(text if len(text) <= 24 else f"{text[:20]}...")
    return value


def _is_finite_number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer too large for a float
        return False


def _short(value: Any) -> str:
    text = json.dumps(value) if isinstance(value, str | int | float | bool) else type(value).__name__
    return text if len(text) <= 40 else f"{text[:37]}..."


def iso_timestamp(moment: datetime | None = None) -> str:
    """A ``run.json`` time: ISO 8601 in UTC, to the microsecond (now, unless ``moment``)."""
    return (moment or datetime.now(UTC)).isoformat(timespec="microseconds")
