"""Keep third-party start-up chatter off the user's terminal.

TensorFlow logs from C++ when it is imported (CPU-feature and oneDNN notices), past Python's
``sys.stderr``; a CLI command must print only its own progress and one-line errors on stderr
(docs/reference/contracts.md §5). Both the TensorFlow importers and the TensorBoard writer of the learned
placers (``torch.utils.tensorboard`` imports tensorflow) go through :func:`quiet_tensorflow_start`.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

__all__ = ["quiet_stderr", "quiet_tensorflow_start"]


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """Send file descriptor 2 to /dev/null for the duration (C++ logs bypass ``sys.stderr``)."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


@contextlib.contextmanager
def quiet_tensorflow_start() -> Iterator[None]:
    """Run a block that may import tensorflow for the first time without its start-up log lines.

    Once tensorflow is imported nothing is silenced (later warnings may be about the user's input).
    """
    if "tensorflow" in sys.modules:
        yield
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    with quiet_stderr():
        yield
