"""One stored run: its directory and its ``run.json`` (CONTRACTS §6; the store is :mod:`engine.store.runs`).

Writes are atomic, ``run.json`` changes are read-modify-writes under the run's lock, and a
run's liveness is a kernel lock held by the process running it (:mod:`engine.store.locks`).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from engine.errors import RunError, quote
from engine.jsonio import atomic_write_bytes, atomic_write_json, file_kind, json_text, special_file
from engine.store.locks import (
    LIVE_LOCK,
    META_LOCK,
    LockFileError,
    hold_live_lock,
    live_lock_held,
    meta_lock,
    release_live_lock,
)
from engine.store.meta import RUN_JSON, STATUSES, iso_timestamp, read_meta
from engine.store.tables import append_csv_rows, append_json_line, csv_text, read_csv, read_json_lines, write_csv

__all__ = ["Run", "lock_file_error"]

_RUN_JSON = RUN_JSON
_STALE_AFTER = timedelta(hours=24)
_LOCK_FILES = frozenset({LIVE_LOCK, META_LOCK})


class Run:
    """One stored run: its directory and its ``run.json``.

    Attributes
    ----------
    id : str
        The run id (the directory name).
    path : Path
        The run directory.
    """

    def __init__(self, path: Path, meta: dict[str, Any]) -> None:
        self.path = Path(path)
        self.id = self.path.name
        self._stored = meta

    def __repr__(self) -> str:
        return f"Run({self.id!r}, status={self.status!r})"

    @property
    def meta(self) -> dict[str, Any]:
        """A copy of ``run.json`` whose ``status`` is the effective one (see :attr:`status`)."""
        return {**self._stored, "status": self.status}

    @property
    def status(self) -> str:
        """``running``, ``done``, ``failed`` or ``interrupted``.

        A run stored as ``running`` reads as ``interrupted`` when no process holds its live
        lock; without a lock file, on its own host at once, on another host when ``updated``
        is over 24 h old.
        """
        stored = self._stored.get("status")
        if stored != "running":
            return stored if stored in STATUSES else "failed"
        held = live_lock_held(self.path)
        if held is not None:
            return "running" if held else "interrupted"
        if self._stored.get("host") == socket.gethostname():
            return "interrupted"
        try:
            updated = datetime.fromisoformat(self._stored["updated"])
        except (KeyError, TypeError, ValueError):
            return "interrupted"
        return "running" if datetime.now(UTC) - updated < _STALE_AFTER else "interrupted"

    def files(self) -> list[str]:
        """Relative POSIX paths of the run's files, sorted (temp files left out)."""
        return sorted(
            p.relative_to(self.path).as_posix()
            for p in self.path.rglob("*")
            if p.is_file() and p.name not in _LOCK_FILES and not (p.name.startswith(".") and p.name.endswith(".tmp"))
        )

    def write_json(self, name: str, obj: Any) -> Path:
        """Atomically write ``obj`` as JSON to the run file ``name``; returns its path."""
        return self.write_bytes(name, json_text(obj).encode("utf-8"))

    def write_bytes(self, name: str, data: bytes) -> Path:
        """Atomically write ``data`` to the run file ``name``; returns its path."""
        if name == _RUN_JSON:
            raise ValueError("run.json is managed by the run; use Run.update()")
        path = self._file(name, create=True)
        atomic_write_bytes(path, data)
        return path

    def read_json(self, name: str) -> Any:
        """Read the run's JSON file ``name``.

        Raises
        ------
        RunError
            The file is missing or not valid JSON.
        """
        path = self._existing(name)
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            raise RunError(f"run {self.id}: {name} is not valid JSON") from None

    def write_table(self, name: str, columns: Mapping[str, Sequence]) -> Path:
        """Atomically write ``columns`` as a CSV table (header = the keys); returns its path.

        Floats are written with ``repr`` so they read back exactly; ``None`` becomes an
        empty cell; strings are quoted as needed (commas, quotes, newlines).

        Raises
        ------
        ValueError
            The columns do not all have the same length.
        """
        return self.write_bytes(name, csv_text(columns, name).encode("utf-8"))

    def append_row(self, name: str, row: Mapping[str, Any]) -> None:
        """Append one row to the CSV table ``name`` and ``fsync`` it (for learning curves).

        The header is written with the first row. A torn last line left by a crash is
        dropped before appending.

        Raises
        ------
        ValueError
            ``row``'s keys differ from the existing header.
        """
        append_csv_rows(self._appendable(name), [row])

    def append_rows(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """Append several rows to the CSV table ``name`` with one ``fsync`` (see :meth:`append_row`)."""
        append_csv_rows(self._appendable(name), rows)

    def append_json_line(self, name: str, value: Any) -> None:
        """Append one JSON line to file ``name`` and ``fsync`` it (a journal); a torn tail is dropped first."""
        append_json_line(self._appendable(name), value)

    def read_json_lines(self, name: str) -> list[Any]:
        """The JSON values of file ``name``'s lines (none when it does not exist), a torn line skipped.

        Raises
        ------
        RunError
            ``name`` is there but is not a regular file (a named pipe would block the read).
        """
        path = self._regular(self._file(name), name)
        return read_json_lines(path) if path.is_file() else []

    def read_table(self, name: str) -> dict[str, list]:
        """Read a CSV table as ``{column: values}``, ignoring a torn last line.

        Raises
        ------
        RunError
            The file is missing, or a row other than the last has the wrong field count.
        """
        try:
            return read_csv(self._existing(name))
        except ValueError as exc:
            raise RunError(f"run {self.id}: {name} {exc}") from None

    def update(self, **fields: Any) -> None:
        """Merge ``fields`` into ``run.json`` atomically and bump ``updated``.

        Setting ``status="running"`` takes the run's live lock for this process; ending the
        run (any other status) drops it.

        Raises
        ------
        RunError
            The run was deleted, or ``status="running"`` while another process runs it.
        """
        for key in ("schema", "id", "created"):
            if key in fields:
                raise ValueError(f"run field {quote(key)} cannot be changed")
        if "status" in fields and fields["status"] not in STATUSES:
            raise ValueError(f"unknown run status {quote(fields['status'])}; expected {STATUSES}")
        self._require_dir()
        try:
            with meta_lock(self.path):
                if fields.get("status") == "running" and not hold_live_lock(self.path):
                    raise RunError(f"run {self.id} is running in another process; it cannot run twice at once")
                meta = {**read_meta(self.path), **fields, "updated": iso_timestamp()}
                atomic_write_json(self.path / _RUN_JSON, meta)
        except FileNotFoundError:  # the folder went away under the lock files (a concurrent delete)
            raise RunError(f"run {self.id} was deleted") from None
        except LockFileError as exc:
            raise lock_file_error(self.id, exc) from None
        self._stored = meta
        if meta.get("status") != "running":
            release_live_lock(self.path)

    def claim(self) -> bool:
        """Take the run's live lock for this process before changing a stopped run (a resume), so that of two
        resumes at once only one touches its files; False when another process holds it. :meth:`update` to
        ``running`` keeps it, :meth:`release` drops it (a resume refused before it started).

        Raises
        ------
        RunError
            The lock file is not a regular file (a named pipe, a folder).
        """
        try:
            return hold_live_lock(self.path)
        except LockFileError as exc:
            raise lock_file_error(self.id, exc) from None

    def release(self) -> None:
        """Drop this process's live lock on the run (taken by :meth:`claim`), if it holds it."""
        release_live_lock(self.path)

    def finish(self, status: str = "done", metrics: Mapping[str, Any] | None = None) -> None:
        """End the run with ``status`` (``done``, ``failed`` or ``interrupted``)."""
        if status not in STATUSES or status == "running":
            raise ValueError(f"a run cannot finish as {quote(status)}")
        merged = {**read_meta(self.path).get("metrics", {}), **(metrics or {})}
        self.update(status=status, metrics=merged)

    def fail(self, message: str) -> None:
        """End the run as ``failed`` and record ``message`` in its ``error`` field."""
        self.update(status="failed", error=message)

    def cut_table(self, name: str, column: str, last: float) -> int:
        """Drop the rows of table ``name`` whose ``column`` is beyond ``last``; returns how many.

        A resumed training run calls it with the checkpoint's episode count: the episodes
        logged after the last checkpoint are trained again, so their rows must go (a learning
        curve holds each episode number once). No table: nothing to do.

        Raises
        ------
        RunError
            The table has no column ``column`` or is unreadable.
        """
        if not self._file(name).is_file():
            return 0
        table = self.read_table(name)
        if column not in table:
            raise RunError(f"run {self.id}: {name} has no column {quote(column)}")
        keep = [i for i, v in enumerate(table[column]) if isinstance(v, int | float) and v <= last]
        dropped = len(table[column]) - len(keep)
        if dropped:
            write_csv(self._file(name), {k: [vals[i] for i in keep] for k, vals in table.items()})
        return dropped

    def _require_dir(self) -> None:
        if not self.path.is_dir():
            raise RunError(f"run {self.id} was deleted")

    def __enter__(self) -> Run:
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if read_meta(self.path).get("status") != "running":
            return False
        if exc is None:
            self.finish("done")
        elif isinstance(exc, Exception):
            self.fail(str(exc) or type(exc).__name__)
        else:  # KeyboardInterrupt, SystemExit: stopped, not broken
            self.finish("interrupted")
        return False

    def _file(self, name: str, *, create: bool = False) -> Path:
        rel = Path(name)
        if not name or rel.is_absolute() or ".." in rel.parts:
            raise RunError(f"run {self.id}: {quote(name)} is not a file name inside the run")
        if create:
            self._require_dir()  # never recreate a deleted run's folder
            (self.path / rel).parent.mkdir(parents=True, exist_ok=True)
        return self.path / rel

    def _regular(self, path: Path, name: str) -> Path:
        """``path`` (the run's file ``name``), refused with one line when it is there but not a regular file."""
        kind = special_file(path)
        if kind is not None:
            raise RunError(f"run {self.id}: {quote(name)} is {kind}, not a regular file")
        return path

    def _appendable(self, name: str) -> Path:
        """The run's file ``name`` to append to: opening a named pipe to append blocks, so it is refused first."""
        return self._regular(self._file(name, create=True), name)

    def _existing(self, name: str) -> Path:
        path = self._file(name)
        if not path.is_file():
            raise RunError(f"run {self.id} has no file {quote(name)}")
        return path


def lock_file_error(run_id: str, exc: LockFileError) -> RunError:
    """The one line for a run whose lock file is not a regular file (:class:`~engine.store.locks.LockFileError`)."""
    return RunError(f"run {run_id}: {Path(exc.filename).name} is {file_kind(exc.mode)}, not a regular file; "
                    "remove it (placelab cannot tell whether the run is running while it is there)")
