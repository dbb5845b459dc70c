"""The run store: one directory per run under ``runs/<run_id>/`` (CONTRACTS §6).

Each run directory holds ``run.json`` (schema ``placelab.run/1``) plus whatever the run
produced: ``placement.json``, the schedule table, a learning curve, TensorBoard events.

Assumptions
-----------
- Every file write is atomic (temp file in the same directory, ``fsync``, ``os.replace``),
  so a crash never leaves a half-written file. The one exception is
  :meth:`Run.append_row`, which streams a learning curve line by line; readers ignore a
  torn last line.
- A run whose ``run.json`` says ``running`` but whose process is gone reads as
  ``interrupted``. Liveness is a lock, not a pid: the process running a run holds an
  exclusive ``flock`` on the run's ``.live.lock`` (see :mod:`engine.run_locks`), which the
  kernel drops when that process ends, ``kill -9`` included; a reused pid proves nothing.
  A run without a lock file (stored by an older placelab) reads as ``interrupted`` on its
  own host, and from another host by ``updated`` being older than 24 hours.
- ``run.json`` changes are read-modify-writes under the run's ``.run.json.lock``, so
  concurrent changes (a rename while a trainer records progress) are never lost. A running
  run cannot be started a second time (``--resume``) nor deleted.
- A ``run.json`` that is not what placelab writes — not JSON, a field of the wrong type, a
  number that is not finite (``NaN``, ``Infinity``, ``1e999``: placelab never writes one), or a
  metric that listings show (``makespan_s``, ``oom``, ...) that is not a number (a boolean for
  ``oom``) — makes its run unreadable: :meth:`RunStore.list` skips it with one line in
  ``problems``, :meth:`RunStore.load` raises one :class:`RunError` naming the run, and the run
  can still be deleted.
- Tables are CSV with a header row and CRLF line ends (RFC 4180; with them the csv module
  also quotes a lone carriage return). Cells read back as ``int``, else ``float``, else
  ``str``, and the empty cell as ``None`` (so a string such as ``"12"`` reads back as 12).
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import math
import os
import re
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from engine.errors import RunError
from engine.jsonio import atomic_write_json
from engine.run_locks import LIVE_LOCK, META_LOCK, hold_live_lock, live_lock_held, meta_lock, release_live_lock
from engine.tables import append_csv_rows, read_csv, write_csv

__all__ = [
    "RUN_SCHEMA",
    "STATUSES",
    "Run",
    "RunStore",
    "code_version",
]

RUN_SCHEMA = "placelab.run/1"
STATUSES = ("running", "done", "failed", "interrupted")
_RUN_JSON = "run.json"
_STALE_AFTER = timedelta(hours=24)
_LOCK_FILES = frozenset({LIVE_LOCK, META_LOCK})
#: Fields of ``run.json`` that readers rely on, and the JSON types they must have when present.
_FIELD_TYPES: dict[str, type | tuple[type, ...]] = {
    "id": str, "name": str, "created": str, "updated": str, "status": str, "kind": str,
    "graph": dict, "cluster": (str, type(None)), "placer": (str, type(None)), "parameters": dict,
    "metrics": dict, "tags": list,
}
#: Metrics that listings and the app show or compute with: a finite number (``oom``: a boolean) or null.
_NUMBER_METRICS = ("makespan_s", "lower_bound_s", "ratio_to_lower_bound", "best_makespan_s", "measured_makespan_s",
                   "seconds_to_place", "communication_bytes", "wall_s", "episodes", "placements_evaluated")
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
        if name == _RUN_JSON:
            raise ValueError("run.json is managed by the run; use Run.update()")
        path = self._file(name, create=True)
        atomic_write_json(path, obj)
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
        path = self._file(name, create=True)
        write_csv(path, columns)
        return path

    def append_row(self, name: str, row: Mapping[str, Any]) -> None:
        """Append one row to the CSV table ``name`` and ``fsync`` it (for learning curves).

        The header is written with the first row. A torn last line left by a crash is
        dropped before appending.

        Raises
        ------
        ValueError
            ``row``'s keys differ from the existing header.
        """
        append_csv_rows(self._file(name, create=True), [row])

    def append_rows(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """Append several rows to the CSV table ``name`` with one ``fsync`` (see :meth:`append_row`)."""
        append_csv_rows(self._file(name, create=True), rows)

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
                raise ValueError(f"run field {key!r} cannot be changed")
        if "status" in fields and fields["status"] not in STATUSES:
            raise ValueError(f"unknown run status {fields['status']!r}; expected {STATUSES}")
        self._require_dir()
        try:
            with meta_lock(self.path):
                if fields.get("status") == "running" and not hold_live_lock(self.path):
                    raise RunError(f"run {self.id} is running in another process; it cannot run twice at once")
                meta = {**_read_meta(self.path), **fields, "updated": _iso()}
                atomic_write_json(self.path / _RUN_JSON, meta)
        except FileNotFoundError:  # the folder went away under the lock files (a concurrent delete)
            raise RunError(f"run {self.id} was deleted") from None
        self._stored = meta
        if meta.get("status") != "running":
            release_live_lock(self.path)

    def set_metrics(self, metrics: Mapping[str, Any]) -> None:
        """Merge ``metrics`` into the run's ``metrics``."""
        self.update(metrics={**_read_meta(self.path).get("metrics", {}), **metrics})

    def finish(self, status: str = "done", metrics: Mapping[str, Any] | None = None) -> None:
        """End the run with ``status`` (``done``, ``failed`` or ``interrupted``)."""
        if status not in STATUSES or status == "running":
            raise ValueError(f"a run cannot finish as {status!r}")
        merged = {**_read_meta(self.path).get("metrics", {}), **(metrics or {})}
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
            raise RunError(f"run {self.id}: {name} has no column {column!r}")
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
        if _read_meta(self.path).get("status") != "running":
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
            raise RunError(f"run {self.id}: {name!r} is not a file name inside the run")
        if create:
            self._require_dir()  # never recreate a deleted run's folder
            (self.path / rel).parent.mkdir(parents=True, exist_ok=True)
        return self.path / rel

    def _existing(self, name: str) -> Path:
        path = self._file(name)
        if not path.is_file():
            raise RunError(f"run {self.id} has no file {name!r}")
        return path


class RunStore:
    """The directory of runs, one sub-directory per run.

    Parameters
    ----------
    root : str or PathLike
        The store's directory; created on the first :meth:`create`.

    Attributes
    ----------
    problems : list of str
        One line per directory the last :meth:`list` skipped because it is not a readable run.
    """

    def __init__(self, root: str | os.PathLike = "runs") -> None:
        self.root = Path(root)
        self.problems: list[str] = []
        if self.root.exists() and not self.root.is_dir():
            raise RunError(f"the run store {self.root} is not a folder")

    def create(
        self,
        kind: str,
        *,
        graph_name: str,
        graph_hash: str,
        cluster: str,
        placer: str | None,
        parameters: Mapping[str, Any],
        seed: int | None,
        tags: Sequence[str] = (),
        name: str | None = None,
    ) -> Run:
        """Start a run: make ``root/<run_id>/`` and write its ``run.json`` (status ``running``).

        The id is ``YYYYmmdd-HHMMSS-<kind>-<placer or none>-<4 hex>`` (UTC time), so ids
        sort by creation time; a collision is retried with fresh hex digits.

        Raises
        ------
        TypeError, ValueError
            ``parameters`` cannot be encoded as JSON; nothing is left on disk.
        """
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RunError(f"cannot create the run store {self.root}: {exc.strerror or type(exc).__name__}") from None
        now = datetime.now(UTC)
        stem = f"{now:%Y%m%d-%H%M%S}-{_slug(kind)}-{_slug(placer or 'none')}"
        for _ in range(1000):
            run_id = f"{stem}-{secrets.token_hex(2)}"
            try:
                (self.root / run_id).mkdir(exist_ok=False)
                break
            except FileExistsError:
                continue
            except OSError as exc:
                raise RunError(f"cannot create a run in {self.root}: {exc.strerror or type(exc).__name__}") from None
        else:
            raise RunError(f"could not find a free run id for {stem} in {self.root}")
        path = self.root / run_id
        stamp = _iso(now)
        meta = {
            "schema": RUN_SCHEMA,
            "id": run_id,
            "name": name or run_id,
            "created": stamp,
            "updated": stamp,
            "status": "running",
            "kind": kind,
            "graph": {"name": graph_name, "hash": graph_hash},
            "cluster": cluster,
            "placer": placer,
            "parameters": dict(parameters),
            "seed": seed,
            "code_version": code_version(),
            "metrics": {},
            "tags": _clean_tags(tags),
            "pid": os.getpid(),
            "host": socket.gethostname(),
        }
        try:
            hold_live_lock(path)  # before run.json says running, so it never reads as dead
            atomic_write_json(path / _RUN_JSON, meta)
        except BaseException:
            release_live_lock(path)
            shutil.rmtree(path, ignore_errors=True)
            raise
        return Run(path, meta)

    def load(self, ref: str) -> Run:
        """Load a run by its id or a unique prefix of it.

        Raises
        ------
        RunError
            No run matches, the prefix is ambiguous, or ``run.json`` is missing, corrupt or
            of another schema.
        """
        path = self._run_dir(ref)
        return Run(path, _read_meta(path))

    def _run_dir(self, ref: str) -> Path:
        """The folder of the run ``ref`` (an id or a unique prefix), its run.json unread."""
        if not ref or Path(ref).name != ref or ref.startswith("."):
            raise RunError(f"{ref!r} is not a run id")
        if (self.root / ref).is_dir():
            return self.root / ref
        matches = sorted(p.name for p in self._dirs() if p.name.startswith(ref))
        if not matches:
            raise RunError(f"no run matches {ref!r} in {self.root}")
        if len(matches) > 1:
            shown = ", ".join(matches[:5])
            more = f" and {len(matches) - 5} more" if len(matches) > 5 else ""
            raise RunError(f"run prefix {ref!r} is ambiguous: it matches {shown}{more}")
        return self.root / matches[0]

    def delete(self, ref: str) -> str:
        """Remove the run ``ref`` (an id or a unique prefix) and everything in it; returns its id.

        A run with an unreadable ``run.json`` can be deleted too. The folder is first renamed
        to a hidden name (atomic), so a half-finished removal never looks like a run.

        Raises
        ------
        RunError
            ``ref`` is not a run in this store, or the run is running (in any process).
        """
        path = self._run_dir(ref)
        root = self.root.resolve()
        if path.is_symlink() or path.resolve().parent != root:
            raise RunError(f"refusing to delete {ref!r}: it is not a run inside {self.root}")
        gone = RunError(f"run {path.name} was deleted by another process")
        try:
            held = live_lock_held(path) or not hold_live_lock(path)
        except FileNotFoundError:  # another `runs delete` moved the folder away after we found it
            raise gone from None
        if held:
            if _being_deleted(path):  # the holder was another delete of this run, not the process running it
                raise gone
            raise RunError(f"run {path.name} is running; stop it before deleting it")
        trash = self.root / f".deleting-{path.name}-{secrets.token_hex(4)}"
        try:
            os.rename(path, trash)
        except FileNotFoundError:
            raise gone from None
        except OSError as exc:
            raise RunError(f"cannot delete run {path.name}: {exc.strerror or type(exc).__name__}") from None
        finally:
            release_live_lock(path)
        shutil.rmtree(trash, ignore_errors=True)
        return path.name

    def rename(self, run_id: str, name: str) -> Run:
        """Set the display name of a run (id or unique prefix); the id does not change."""
        if not name.strip():
            raise RunError("a run name cannot be empty")
        run = self.load(run_id)
        run.update(name=name.strip())
        return run

    def set_tags(self, run_id: str, tags: Iterable[str]) -> Run:
        """Replace the tags of a run (id or unique prefix); blanks and duplicates are dropped."""
        run = self.load(run_id)
        run.update(tags=_clean_tags(tags))
        return run

    def list(
        self, *, kind: str | None = None, status: str | None = None, tag: str | None = None
    ) -> list[Run]:
        """Readable runs, newest first, optionally filtered; skipped dirs go to ``problems``."""
        self.problems, runs = [], []
        for path in self._dirs():
            try:
                run = Run(path, _read_meta(path))
            except RunError as err:
                self.problems.append(str(err))
                continue
            meta = run.meta
            if (
                kind in (None, meta.get("kind"))
                and status in (None, meta["status"])
                and (tag is None or tag in meta.get("tags", []))
            ):
                runs.append(run)
        runs.sort(key=lambda r: (str(r.meta.get("created", "")), r.id), reverse=True)
        return runs

    def _dirs(self) -> list[Path]:
        if not self.root.is_dir():
            return []
        return [p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith(".")]


def _being_deleted(path: Path, wait_s: float = 1.0) -> bool:
    """Whether the run folder ``path``, whose live lock another process holds, is going away: a run that
    ``run.json`` says is running is taken as running; otherwise the holder is a delete of the same run
    (or a resume about to start it), and the folder is watched for ``wait_s`` seconds."""
    try:
        if _read_meta(path).get("status") == "running":
            return False
    except RunError:
        pass
    deadline = time.monotonic() + wait_s
    while path.is_dir():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _read_meta(path: Path) -> dict[str, Any]:
    run_id, file = path.name, path / _RUN_JSON
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
            raise RunError(f"run {run_id}: run.json field {key!r} has the wrong type ({type(meta[key]).__name__})")
    metrics = meta.get("metrics") or {}
    for key in _NUMBER_METRICS:
        value = metrics.get(key)
        if value is not None and not _is_finite_number(value):
            raise RunError(f"run {run_id}: run.json metric {key!r} is not a number ({_short(value)})")
    for key in _BOOL_METRICS:
        value = metrics.get(key)
        if value is not None and not isinstance(value, bool):
            raise RunError(f"run {run_id}: run.json metric {key!r} is not true or false ({_short(value)})")
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


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:32] or "none"


def _clean_tags(tags: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(t.strip() for t in tags if t.strip()))


def _iso(moment: datetime | None = None) -> str:
    return (moment or datetime.now(UTC)).isoformat(timespec="microseconds")
