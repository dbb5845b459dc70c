"""JSON reading and writing shared by every placelab file format.

Reading uses orjson when installed (3-5x faster on 10^6-op graphs) and the standard
library otherwise; both reject malformed text with one sentence naming the file and the
position. Writing is atomic (temp file in the same folder + ``os.replace``).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from engine.errors import PlacelabError

try:  # pragma: no cover - exercised implicitly
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None

__all__ = [
    "MAX_FILE_BYTES",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "dumps",
    "loads",
    "read_file_bytes",
    "read_json_file",
]

#: Largest file any placelab reader accepts (a 10^6-op graph is ~150 MB).
MAX_FILE_BYTES = 1 << 30


def loads(text: str | bytes, *, what: str, error: type[PlacelabError]) -> Any:
    """Parse JSON text; raise ``error`` with one sentence naming ``what`` on failure."""
    try:
        if _orjson is not None:
            return _orjson.loads(text)
        return json.loads(text)
    except json.JSONDecodeError as exc:  # orjson's error subclasses it
        raise error(f"{what} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise error(f"{what} is not valid JSON ({exc.__class__.__name__})") from None


def read_file_bytes(path: str | os.PathLike, *, error: type[PlacelabError], max_bytes: int = MAX_FILE_BYTES,
                    head: int | None = None) -> bytes:
    """The bytes of a file (or its first ``head`` bytes), refusing files over ``max_bytes``.

    Missing files, directories, unreadable, oversized and empty files raise ``error`` with
    one sentence naming the file.
    """
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > max_bytes:
            raise error(f"{p}: file is {size / 1e6:.0f} MB, larger than the {max_bytes / 1e6:.0f} MB limit")
        with p.open("rb") as f:
            data = f.read() if head is None else f.read(head)
    except IsADirectoryError:
        raise error(f"{p} is a directory, not a file") from None
    except FileNotFoundError:
        raise error(f"{p}: no such file") from None
    except PermissionError:
        raise error(f"{p}: permission denied") from None
    if not data.strip():
        raise error(f"{p} is empty")
    return data


def read_json_file(path: str | os.PathLike, *, error: type[PlacelabError], max_bytes: int = MAX_FILE_BYTES) -> Any:
    """Read and parse a JSON file with a size limit; errors are one sentence naming the file."""
    data = read_file_bytes(path, error=error, max_bytes=max_bytes)
    return loads(data, what=str(Path(path)), error=error)


def _default(o: Any) -> Any:
    if isinstance(o, np.generic | np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"{type(o).__name__} is not JSON serializable")


def dumps(obj: Any, *, indent: int | None = None) -> str:
    """Serialize to JSON text (numpy values and paths converted; NaN and infinities refused)."""
    return json.dumps(obj, indent=indent, default=_default, allow_nan=False)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Replace ``path`` (whose directory must exist) by ``data``; readers never see a mix.

    Temp file in the same directory, ``fsync``, ``os.replace``, then a best-effort
    ``fsync`` of the directory so the rename itself is durable.
    """
    p = Path(path)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    with contextlib.suppress(OSError):
        dfd = os.open(p.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> None:
    """Atomically write ``text`` to ``path`` (see :func:`atomic_write_bytes`)."""
    atomic_write_bytes(path, text.encode(encoding))


def atomic_write_json(path: str | os.PathLike, obj: Any, *, indent: int | None = 1) -> None:
    """Atomically write ``obj`` as JSON; on an encoding error ``path`` is left untouched.

    Raises
    ------
    TypeError, ValueError
        ``obj`` cannot be encoded (NaN and infinities are refused).
    """
    atomic_write_text(path, dumps(obj, indent=indent) + "\n")
