"""JSON reading and writing shared by every placelab file format.

Reading uses orjson when installed (3-5x faster on 10^6-op graphs) and the standard
library otherwise; both reject malformed text with one sentence naming the file and the
position. Reading and writing touch regular files only: a named pipe, a device or a socket
is refused before it is opened (opening a FIFO blocks; replacing ``/dev/null`` by a JSON file
is worse). Writing is atomic (temp file in the same folder + ``os.replace``) into the
symlink's target, so a link stays a link; any failure is one :class:`WriteError` sentence
naming the path the user gave.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from engine.errors import PATH_LIMIT, PlacelabError, WriteError, quote

try:  # pragma: no cover - exercised implicitly
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None

__all__ = [
    "MAX_FILE_BYTES",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "check_write_target",
    "dumps",
    "file_kind",
    "loads",
    "read_file_bytes",
    "read_json_file",
    "special_file",
]

#: Largest file any placelab reader accepts: a graph of 10^6 ops fits well within it (its file's size:
#: docs/lab/2026-11-21-simulator-speed.md, addendum of 2026-11-29).
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
    shown = quote(p, PATH_LIMIT, bare=True)
    try:
        st = p.stat()
        if not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
            raise error(f"{shown} is {file_kind(st.st_mode)}, not a regular file")
        size = st.st_size
        if size > max_bytes:
            raise error(f"{shown}: file is {size / 1e6:.0f} MB, larger than the {max_bytes / 1e6:.0f} MB limit")
        with p.open("rb") as f:
            data = f.read() if head is None else f.read(head)
    except IsADirectoryError:
        raise error(f"{shown} is a directory, not a file") from None
    except FileNotFoundError:
        raise error(f"{shown}: no such file") from None
    except PermissionError:
        raise error(f"{shown}: permission denied") from None
    except OSError as exc:
        raise error(f"{shown}: cannot read the file ({exc.strerror or type(exc).__name__})") from None
    if not data.strip():
        raise error(f"{shown} is empty")
    return data


def read_json_file(path: str | os.PathLike, *, error: type[PlacelabError], max_bytes: int = MAX_FILE_BYTES) -> Any:
    """Read and parse a JSON file with a size limit; errors are one sentence naming the file."""
    data = read_file_bytes(path, error=error, max_bytes=max_bytes)
    return loads(data, what=quote(path, PATH_LIMIT, bare=True), error=error)


def _default(o: Any) -> Any:
    if isinstance(o, np.generic | np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"{type(o).__name__} is not JSON serializable")


def dumps(obj: Any, *, indent: int | None = None) -> str:
    """Serialize to JSON text (numpy values and paths converted; NaN and infinities refused)."""
    return json.dumps(obj, indent=indent, default=_default, allow_nan=False)


def file_kind(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, for messages: ``"a named pipe"``, ``"a directory"``, ..."""
    for test, kind in ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return kind
    return "not a regular file"


def special_file(path: str | os.PathLike) -> str | None:
    """What ``path`` is when it exists but is not a regular file (``"a named pipe"``, ``"a directory"``, ...;
    symlinks followed), else None. Never opens it: opening a named pipe blocks."""
    try:
        mode = os.stat(path).st_mode
    except OSError:  # missing, a link loop, a name too long: the caller's own open says so
        return None
    return None if stat.S_ISREG(mode) else file_kind(mode)


def check_write_target(path: str | os.PathLike) -> Path:
    """The regular file that writing ``path`` replaces (symlinks followed), checked up front.

    Commands call it before any work so a bad ``-o`` fails at once, and
    :func:`atomic_write_bytes` calls it again at the write.

    Raises
    ------
    WriteError
        ``path`` is empty, names a directory, a device, a named pipe or a socket, a link loop,
        or its folder does not exist or is not writable. The sentence names ``path`` as given.
    """
    shown = os.fspath(path)
    if not shown:
        raise WriteError("the output path is empty")
    try:
        target = Path(path).resolve(strict=False)
    except (OSError, RuntimeError):  # a symlink loop
        raise WriteError(f"cannot write {shown}: it is a symbolic link that loops") from None
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        mode = None
    except NotADirectoryError:
        raise WriteError(f"cannot write {shown}: {target.parent} is not a folder") from None
    except OSError as exc:
        raise WriteError(f"cannot write {shown}: {exc.strerror or type(exc).__name__}") from None
    if mode is not None and not stat.S_ISREG(mode):
        raise WriteError(f"cannot write {shown}: it is {file_kind(mode)}, not a regular file")
    parent = target.parent
    if not parent.is_dir():
        raise WriteError(f"cannot write {shown}: the folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise WriteError(f"cannot write {shown}: permission denied in {parent}")
    return target


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Replace the regular file ``path`` (whose directory must exist) by ``data``; readers never see a mix.

    Symlinks are followed and their target replaced. Temp file in the target's directory,
    ``fsync``, ``os.replace``, then a best-effort ``fsync`` of the directory so the rename
    itself is durable.

    Raises
    ------
    WriteError
        See :func:`check_write_target`; also when the write itself fails (disk full, I/O
        error). ``path`` is left as it was.
    """
    p = check_write_target(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    except OSError as exc:
        raise WriteError(f"cannot write {os.fspath(path)}: {exc.strerror or type(exc).__name__}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, p)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            reason = exc.strerror or str(exc) or type(exc).__name__
            raise WriteError(f"cannot write {os.fspath(path)}: {reason}") from None
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
    atomic_write_text(path, json_text(obj, indent=indent))


def json_text(obj: Any, *, indent: int | None = 1) -> str:
    """``obj`` as the text :func:`atomic_write_json` writes (NaN and infinities refused: ValueError)."""
    return dumps(obj, indent=indent) + "\n"
