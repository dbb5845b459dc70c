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
  exclusive ``flock`` on the run's ``.live.lock`` (see :mod:`engine.store.locks`), which the
  kernel drops when that process ends, ``kill -9`` included; a reused pid proves nothing.
  A run without a lock file (stored by an older placelab) reads as ``interrupted`` on its
  own host, and from another host by ``updated`` being older than 24 hours.
- ``run.json`` changes are read-modify-writes under the run's ``.run.json.lock``, so
  concurrent changes (a rename while a trainer records progress) are never lost. A running
  run cannot be started a second time (``--resume``) nor deleted.
- A ``run.json`` that is not what placelab writes (:mod:`engine.store.meta`) makes its run
  unreadable: :meth:`RunStore.list` skips it with one line in ``problems``, :meth:`RunStore.load`
  raises one :class:`RunError` naming the run, and the run can still be deleted.
- A run is a real folder inside the store: a symbolic link in the store (to a folder elsewhere, or a
  second name of a run) is not listed, read nor deleted through the store (remove the link with ``rm``).
- Commands that store runs check first that the store can be written (:meth:`RunStore.check_writable`).
- Tables are CSV with a header row and CRLF line ends (RFC 4180; with them the csv module
  also quotes a lone carriage return). Cells read back as ``int``, else ``float``, else
  ``str``, and the empty cell as ``None`` (so a string such as ``"12"`` reads back as 12).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import shutil
import socket
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from engine.errors import RunError, quote
from engine.jsonio import atomic_write_json
from engine.store.locks import LIVE_LOCK, META_LOCK, LockFileError, hold_live_lock, live_lock_held, release_live_lock
from engine.store.meta import RUN_JSON, RUN_SCHEMA, code_version, iso_timestamp, read_meta
from engine.store.run_dir import Run, lock_file_error

__all__ = ["RUNS_DIR_ENV", "Run", "RunStore", "resolve_run", "user_runs_dir"]

_RUN_JSON = RUN_JSON
_STALE_AFTER = timedelta(hours=24)
_NAME_MAX = 255  # bytes of a file name on Linux file systems: a longer ref names no run's folder
_LOCK_FILES = frozenset({LIVE_LOCK, META_LOCK})
_PROBE_BYTES = 4096  # what RunStore.check_writable writes: a full disk refuses it
#: The one environment variable naming the user's run store (CLI ``--runs-dir`` reads it too).
RUNS_DIR_ENV = "PLACELAB_RUNS_DIR"


def user_runs_dir() -> str:
    """The user's run store: ``$PLACELAB_RUNS_DIR``, else ``$XDG_DATA_HOME/placelab/runs``, else
    ``~/.local/share/placelab/runs``. Never the repository's ``runs/``: those are read-only examples.
    The CLI, the app and the library (a :class:`RunStore` made without a folder) all default to it."""
    data = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return os.environ.get(RUNS_DIR_ENV) or str(Path(data) / "placelab" / "runs")


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

    def __init__(self, root: str | os.PathLike | None = None) -> None:
        self.root = Path(user_runs_dir() if root is None else root)
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
        stamp = iso_timestamp(now)
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
        return Run(path, read_meta(path))

    def _run_dir(self, ref: str) -> Path:
        """The folder of the run ``ref`` (an id or a unique prefix), its run.json unread."""
        if not ref or Path(ref).name != ref or ref.startswith(".") or len(os.fsencode(ref)) > _NAME_MAX:
            raise RunError(f"{quote(ref)} is not a run id")
        exact = self.root / ref
        if exact.is_symlink() and exact.is_dir():
            raise RunError(f"{quote(ref)} in {self.root} is a symbolic link to a folder, not a run: the store's runs "
                           "are the folders inside it (remove the link with rm)")
        if exact.is_dir():
            return exact
        matches = sorted(p.name for p in self._dirs() if p.name.startswith(ref))
        if not matches:
            raise RunError(f"no run matches {quote(ref)} in {self.root}")
        if len(matches) > 1:
            shown = ", ".join(matches[:5])
            more = f" and {len(matches) - 5} more" if len(matches) > 5 else ""
            raise RunError(f"run prefix {quote(ref)} is ambiguous: it matches {shown}{more}")
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
        if not _is_run_folder(path) or path.resolve().parent != root:
            raise RunError(f"refusing to delete {quote(ref)}: it is not a run inside {self.root}")
        gone = RunError(f"run {path.name} was deleted by another process")
        self.check_writable()  # a read-only store: one line, before the run's lock file is touched
        try:
            held = live_lock_held(path) or not hold_live_lock(path)
        except FileNotFoundError:  # another `runs delete` moved the folder away after we found it
            raise gone from None
        except LockFileError as exc:  # a named pipe would have blocked: it is refused unopened
            raise lock_file_error(path.name, exc) from None
        except OSError as exc:
            raise RunError(f"cannot delete run {path.name}: {exc.strerror or type(exc).__name__}") from None
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
                run = Run(path, read_meta(path))
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
        """The run folders: real folders inside the store, never a symbolic link (to a folder outside the store,
        or a second name of a run inside it), nor a hidden name (a run being deleted, the app's jobs)."""
        if not self.root.is_dir():
            return []
        return [p for p in self.root.iterdir() if _is_run_folder(p) and not p.name.startswith(".")]

    def check_writable(self) -> None:
        """Check, before any work, that runs can be stored here: a small file is written, ``fsync``-ed and removed
        in the store's folder (or, while it does not exist yet, in the nearest folder above it, where it would be
        made). Commands that store runs call it first, so a read-only or full store is one line before anything is
        computed, not after; it leaves nothing behind.

        Raises
        ------
        RunError
            The store cannot be written (read-only file system, no permission, disk full, under a file).
        """
        where = self.root
        while not os.path.lexists(where) and where.parent != where:
            where = where.parent
        try:
            if not where.is_dir():
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
            fd, probe = tempfile.mkstemp(dir=where, prefix=".write-check-", suffix=".tmp")
        except OSError as exc:
            raise RunError(f"cannot store runs in {self.root}: {exc.strerror or type(exc).__name__}") from None
        try:
            os.write(fd, b"\0" * _PROBE_BYTES)
            os.fsync(fd)
        except OSError as exc:
            raise RunError(f"cannot store runs in {self.root}: {exc.strerror or type(exc).__name__}") from None
        finally:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(probe)


def resolve_run(ref: str, runs_dir: str | os.PathLike | None = None) -> Run:
    """A run given by id (or unique prefix) in ``runs_dir`` (default: the user's store), or by the path of
    its directory."""
    p = Path(ref)
    try:
        is_run_dir = p.is_dir() and (p / "run.json").is_file()
    except OSError:  # a name or path too long to be a folder: an id, then (refused as one)
        is_run_dir = False
    if is_run_dir:  # a path given as such is read where it leads (a link to a run folder included)
        real = p.resolve()
        return RunStore(real.parent).load(real.name)
    return RunStore(runs_dir).load(ref)


def _is_run_folder(path: Path) -> bool:
    """Whether ``path`` is a real folder (a symbolic link, even to a folder, is not a run folder)."""
    return path.is_dir() and not path.is_symlink()


def _being_deleted(path: Path, wait_s: float = 1.0) -> bool:
    """Whether the run folder ``path``, whose live lock another process holds, is going away: a run that
    ``run.json`` says is running is taken as running; otherwise the holder is a delete of the same run
    (or a resume about to start it), and the folder is watched for ``wait_s`` seconds."""
    try:
        if read_meta(path).get("status") == "running":
            return False
    except RunError:
        pass
    deadline = time.monotonic() + wait_s
    while path.is_dir():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:32] or "none"


def _clean_tags(tags: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(t.strip() for t in tags if t.strip()))
