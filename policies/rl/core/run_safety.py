"""A stored training's safety: Ctrl-C held while it saves, disk space reserved for its last words, and a
failure (a full disk above all) stored as the run's end with its temp files removed (issue #34)."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import threading
from collections.abc import Iterator

from engine.errors import RunError
from engine.store.locks import release_live_lock
from engine.store.run_dir import Run
from policies.rl.core.run_files import CHECKPOINT
from policies.rl.core.trainer import Trainer

__all__ = ["disk_full", "fail_run", "one_line", "release_space", "remove_temp_files", "reserve_space", "sigint_held",
           "stop_run"]


@contextlib.contextmanager
def sigint_held() -> Iterator[list[int]]:
    """Hold off Ctrl-C (SIGINT) for the block; yields the list of signals that arrived meanwhile.

    Saving a stopped run (checkpoint, then ``run.json``) takes a moment; a second Ctrl-C in that moment
    used to leave the run ``running`` with a checkpoint temp file. Outside the main thread (signals
    cannot be handled there) the block runs as is.
    """
    pending: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield pending
        return
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, lambda signum, frame: pending.append(signum))
    try:
        yield pending
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)


#: A file of :data:`_RESERVE_BYTES` a stored training holds while it trains: on a full disk it is removed first,
#: so that the run's end (``failed`` and why, or ``interrupted``) can still be written to ``run.json``.
_RESERVE = ".disk-reserve.tmp"
_RESERVE_BYTES = 64 * 1024


def reserve_space(run: Run) -> None:
    path = run.path / _RESERVE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            if hasattr(os, "posix_fallocate"):
                os.posix_fallocate(fd, 0, _RESERVE_BYTES)
            else:  # pragma: no cover - macOS, Windows
                os.write(fd, bytes(_RESERVE_BYTES))
        finally:
            os.close(fd)
    except OSError:  # already too little space (or a file system without it): train without the reserve
        release_space(run)


def release_space(run: Run) -> None:
    with contextlib.suppress(OSError):
        (run.path / _RESERVE).unlink(missing_ok=True)


def stop_run(trainer: Trainer, run: Run) -> None:
    """Save an interrupted training run so that it resumes: checkpoint, progress, status ``interrupted``.
    When the checkpoint cannot be written (a full disk), the previous one stays and ``error`` says why."""
    error = None
    try:
        trainer.save_checkpoint(run.path / CHECKPOINT)
    except Exception as exc:
        remove_temp_files(run)
        release_space(run)
        error = (f"interrupted; its last checkpoint could not be written ({one_line(exc)}): "
                 "it resumes from the one before")
    try:
        run.update(progress=trainer.status(), **({"error": error} if error else {}))
        run.finish("interrupted")
    except Exception:  # the stop is what the user asked for: report it, whatever the disk says
        release_live_lock(run.path)  # this process no longer runs it: it reads interrupted


def disk_full(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or an exception it was raised from) says the disk or the quota is full: an
    ``OSError`` with ``ENOSPC``/``EDQUOT``, or a wrapped one (``WriteError``, TensorFlow's
    ``ResourceExhaustedError`` from the TensorBoard writer) that carries the system's message."""
    codes = (errno.ENOSPC, errno.EDQUOT)
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in codes:
            return True
        if any(os.strerror(code) in str(exc) for code in codes):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def one_line(exc: BaseException, limit: int = 200) -> str:
    text = " ".join((str(exc) or type(exc).__name__).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def remove_temp_files(run: Run) -> None:
    """Remove the checkpoint's temp files from the run (a failed or killed write leaves them)."""
    with contextlib.suppress(OSError):
        for path in run.path.glob(f".{CHECKPOINT}*.tmp"):
            path.unlink(missing_ok=True)


def fail_run(run: Run, exc: BaseException) -> None:
    """End ``run`` as ``failed`` with the reason, after ``exc`` stopped it, and remove its temp files.

    A full disk becomes one :class:`RunError` naming the run (raised from here); any other failure is
    recorded and left to the caller to re-raise. Recording never hides ``exc``: when ``run.json`` cannot be
    written either, the run keeps its status (``running`` reads ``interrupted`` once this process ends).
    """
    remove_temp_files(run)
    release_space(run)
    full = disk_full(exc)
    if isinstance(exc, KeyboardInterrupt):
        message = "interrupted"
    elif full:
        detail = one_line(exc)  # what was being written, when the error says (not for a bare "[Errno 28] ...")
        message = "no space left on device" + ("" if detail.startswith("[Errno") else f" ({detail})")
    else:
        message = one_line(exc, 1000)
    stored = True
    try:
        if isinstance(exc, KeyboardInterrupt):
            run.finish("interrupted")
        else:
            run.fail(message)
    except Exception:
        stored = False
        release_live_lock(run.path)  # this process no longer runs it: it reads interrupted
    if full:
        kept = "stored as failed" if stored else "its run.json could not be updated either"
        raise RunError(f"training run {run.id} stopped: no space left on device in {run.path.parent} ({kept}); "
                       "resume it once there is space") from None
