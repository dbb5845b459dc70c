"""File locks of the run store: which process is running a run, and one writer of ``run.json`` at a time.

A pid in ``run.json`` cannot tell a live run from a dead one whose pid the system has given
to another process. So the process that runs a run holds an exclusive ``flock`` on the
run's ``.live.lock`` for as long as the run is ``running``; the kernel drops the lock when
that process ends in any way (``kill -9`` included). A run is live exactly when some
process holds that lock. The same lock keeps two processes from resuming one run.

``run.json`` is changed by read-modify-write (a rename from the app while a trainer writes
its progress); an exclusive ``flock`` on ``.run.json.lock`` around each change makes the
changes serial, so none is lost.

``flock`` is POSIX; where ``fcntl`` is missing (Windows) liveness is unknown and writes are
not serialized.

Lock files are opened without blocking and must be regular files: a ``.live.lock`` that is a named pipe
(opening one for reading blocks until a writer comes) or a folder makes the run's liveness unknown, and
taking a lock on such a file raises :class:`LockFileError` (the run store makes it one line naming the file).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["LIVE_LOCK", "META_LOCK", "LockFileError", "hold_live_lock", "live_lock_held", "meta_lock",
           "release_live_lock"]

LIVE_LOCK = ".live.lock"
META_LOCK = ".run.json.lock"

class LockFileError(OSError):
    """A lock file that is not a regular file (a named pipe, a folder, a device); ``mode`` is its ``st_mode``."""

    def __init__(self, path: Path, mode: int) -> None:
        super().__init__(errno.EINVAL, "not a regular file", str(path))
        self.mode = mode


#: Live locks this process holds: resolved run directory → open file descriptor.
_HELD: dict[Path, int] = {}


def _key(run_dir: Path) -> Path:
    return Path(os.path.abspath(run_dir))


def hold_live_lock(run_dir: Path) -> bool:
    """Take the run's live lock for this process; False when another process holds it.

    Idempotent within a process. The descriptor is not inherited across ``exec``.
    """
    key = _key(run_dir)
    if key in _HELD or fcntl is None:
        return True
    fd = _open_lock(key / LIVE_LOCK, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # BlockingIOError: held elsewhere
        os.close(fd)
        return False
    _HELD[key] = fd
    return True


def release_live_lock(run_dir: Path) -> None:
    """Drop this process's live lock on the run, if it holds it."""
    fd = _HELD.pop(_key(run_dir), None)
    if fd is not None:
        os.close(fd)


def live_lock_held(run_dir: Path) -> bool | None:
    """Whether some process (this one included) holds the run's live lock.

    ``None`` when it cannot be told: no lock file (a run stored by an older placelab) or no
    ``flock`` on this platform.
    """
    key = _key(run_dir)
    if key in _HELD:
        return True
    if fcntl is None:
        return None
    try:
        fd = _open_lock(key / LIVE_LOCK, os.O_RDONLY)
    except OSError:  # no lock file, or not a regular file (LockFileError): liveness cannot be told
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing drops the probe's shared lock
    return False


@contextlib.contextmanager
def meta_lock(run_dir: Path) -> Iterator[None]:
    """Hold the run's ``run.json`` lock (blocking) for one read-modify-write."""
    if fcntl is None:
        yield
        return
    fd = _open_lock(_key(run_dir) / META_LOCK, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _open_lock(path: Path, flags: int) -> int:
    """A descriptor of the lock file ``path``, opened without blocking (a named pipe would block).

    Raises
    ------
    LockFileError
        ``path`` is not a regular file (a named pipe, a folder, a device).
    OSError
        It cannot be opened (missing without ``O_CREAT``, no permission, a read-only file system).
    """
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    except IsADirectoryError:
        fd = None
    mode = os.fstat(fd).st_mode if fd is not None else stat.S_IFDIR
    if not stat.S_ISREG(mode):
        if fd is not None:
            os.close(fd)
        raise LockFileError(path, mode)
    return fd
