"""Joining a Ray cluster started with ``ray start`` (``--address``; issue #39), and where tasks ran.

**Token authentication** (Ray 2.60; https://docs.ray.io/en/latest/ray-security/token-auth.html and, in the
installed package, ``ray/_private/authentication/authentication_token_setup.py``, ``ray/_private/worker.py``
``init`` and ``ray/scripts/scripts.py`` ``start``):

* ``ray start --head`` turns it on when ``RAY_AUTH_MODE=token``, or when ``RAY_AUTH_MODE`` is unset and a
  token exists (a local ``ray.init()``, so any ``--workers`` command, writes one to ``~/.ray/auth_token``);
  ``RAY_AUTH_MODE=disabled`` turns it off. ``ray start --address=...`` (a worker node) does not look for a
  token unless ``RAY_AUTH_MODE=token``.
* A driver joining by an explicit address (``HOST:PORT``) sends a token only when ``RAY_AUTH_MODE=token``:
  Ray turns it on by itself only for ``auto``. Without it the head answers ``InvalidAuthToken`` and
  ``ray.init`` retries for about 20 s, printing a C++ warning a second, before a bare "Failed to connect".
* The token is read, in this order (the C++ ``AuthenticationTokenLoader`` in ``ray/_raylet.so``), from
  ``RAY_AUTH_TOKEN``, the file ``RAY_AUTH_TOKEN_PATH`` names (a missing or empty one aborts the process in a
  failed check when a connection loads it: :func:`_check_token` asks first), the Kubernetes service-account
  token (``RAY_ENABLE_K8S_TOKEN_AUTH``), else ``~/.ray/auth_token``. Every node and every driver needs the
  head's token (``ray get-auth-token`` prints it).

:func:`join` checks all this before ``ray.init``, in under a second, and says what to set in one line.

**Loopback.** Ray replaces ``127.0.0.1``, ``localhost`` and ``::1`` by the machine's outward address, in
``--node-ip-address`` and in a driver's address alike (``ray._private.services.resolve_ip_for_localhost``);
other loopback addresses (``127.0.0.2`` ...) are kept, so a one-machine cluster on them stays on loopback.

**Where tasks ran.** :func:`where` (called in a task or an actor) names its node; :func:`node_counts` and
:func:`nodes_line` sum them up for a report.

**Ray's messages on stdout.** A driver's thread ``ray_listen_error_messages`` (``ray/_private/worker.py``,
``connect`` and ``listen_error_messages``) prints the cluster's error messages to ``sys.stdout``, e.g. "Task …
failed. There are 3 retries remaining … the node it was running on is dead": a sweep's ``--json`` was no
longer JSON after a node was lost. Ray also holds back repeats of a message ("[repeated 2x across cluster]") and
prints them at ``ray.shutdown`` from the calling thread (``disconnect``, ``stdout_deduplicator.flush()``): a
CI run's ``--json`` began with "(raylet) Raylet is terminated …" after a node was killed.
:class:`RayMessagesToStderr` sends what that thread writes to stderr, and everything written while
:meth:`RayMessagesToStderr.diverted` is active (``ParallelMap.shutdown`` wraps ``ray.shutdown`` in it).
"""

from __future__ import annotations

import os
import socket
import stat
import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from engine.errors import SpecError, first_line, quote
from engine.quiet import quiet_stderr

__all__ = ["RayMessagesToStderr", "check_address", "check_local_start", "join", "local_start_error", "node_counts",
           "nodes_line", "where"]

_CONNECT_S = 5.0
_RAY_MESSAGES_THREAD = "ray_listen_error_messages"  # ray/_private/worker.py, connect()
_LOCAL_TOKEN_FIX = "put a token there (`ray get-auth-token --generate`) or unset it"
_TOKEN_HELP = ("the head's token (`ray get-auth-token` there) in RAY_AUTH_TOKEN, or in a file named by "
               "RAY_AUTH_TOKEN_PATH, else in ~/.ray/auth_token")


def join(address: str, **init_kwargs: Any) -> None:
    """``ray.init(address=address, **init_kwargs)``, or a :class:`SpecError` of one line that says why not:
    nothing listens there, the cluster wants a token this process does not send (or another one), no token
    is found, or nothing there answers as a Ray cluster."""
    import ray
    import ray.exceptions

    # a Ray before token authentication (requirements.txt allows 2.40) has no such error: catch nothing
    auth_error = getattr(ray.exceptions, "AuthenticationError", ())
    check_address(address)
    try:
        ray.init(address=address, **init_kwargs)
    except auth_error as exc:
        if _token_file_unreadable():
            raise _unreadable_token(f"cannot join the Ray cluster at {address}") from None
        raise SpecError(f"cannot join the Ray cluster at {address}: {first_line(exc)}") from None
    except (ConnectionError, ValueError) as exc:
        raise SpecError(f"cannot join the Ray cluster at {address}: {exc}") from None


def check_address(address: str) -> None:
    """Refuse, in one line and in seconds, an address :func:`join` would fail on: nothing listens there, or
    its token authentication would refuse this process (``train`` asks before it creates its run)."""
    _check_reachable(address)
    if address != "auto" and not address.startswith("ray://"):  # Ray Client and auto: ray.init says
        _check_token(address)


def check_local_start(workers: int) -> None:
    """Refuse, in one line and before anything starts, a local runtime ``ray.init`` would refuse: one whose
    token file (``RAY_AUTH_TOKEN_PATH``) is missing, a folder or empty (Ray's loader reads it on every start)."""
    if _token_file_unreadable():
        raise _unreadable_token(_local_start(workers), _LOCAL_TOKEN_FIX)


def local_start_error(exc: BaseException, workers: int) -> SpecError | None:
    """``exc``, raised by ``ray.init`` starting a local runtime of ``workers`` CPUs, as one line when it is not
    a bug: a token Ray cannot read (``RAY_AUTH_TOKEN_PATH`` naming a missing file or a folder) or Ray's node
    not starting in time (an overloaded machine); else None."""
    what = _local_start(workers)
    if type(exc).__name__ == "AuthenticationError":  # ray.exceptions: absent from a Ray before tokens
        if _token_file_unreadable():
            return _unreadable_token(what, _LOCAL_TOKEN_FIX)
        return SpecError(f"{what}: {first_line(exc).split('. ')[0]}; give {_TOKEN_HELP}")
    if "timed out during startup" in str(exc):  # ray/_private/node.py: the raylet did not register in 30 s
        return SpecError(f"{what}: Ray's node did not start within its time limit ({first_line(exc).split('. ')[0]}); "
                         "give fewer --workers, or try again when this machine is less busy")
    return None


def _local_start(workers: int) -> str:
    return f"cannot start a local Ray runtime with {workers} CPU{'' if workers == 1 else 's'}"


def _token_file_unreadable() -> bool:
    """Whether ``RAY_AUTH_TOKEN_PATH`` is set and names no readable, non-empty file (a missing file, a folder),
    which Ray's token loader refuses."""
    path = os.environ.get("RAY_AUTH_TOKEN_PATH")
    if not path:
        return False
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a folder, or a pipe that open() would block on
            return True
        with open(path, "rb") as f:
            return not f.read(4096).strip()
    except OSError:  # missing, no permission
        return True


def _unreadable_token(what: str, fix: str = "put the head's token there (`ray get-auth-token` on the head)"
                      ) -> SpecError:
    return SpecError(f"{what}: RAY_AUTH_TOKEN_PATH names {quote(os.environ.get('RAY_AUTH_TOKEN_PATH'))}, which "
                     f"cannot be read or is empty; {fix}")


def _check_reachable(address: str) -> None:
    """Refuse an address nothing listens on in seconds (Ray itself retries for minutes)."""
    if address == "auto":  # Ray looks up the cluster started on this machine and says so at once
        return
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit():
        raise SpecError(f"--address expects auto, HOST:PORT or ray://HOST:PORT, got {quote(address)}")
    try:
        socket.create_connection((host, int(port)), timeout=_CONNECT_S).close()
    except OSError as exc:
        raise SpecError(f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}") from None


def _check_token(address: str) -> None:
    """Refuse, in one line, a join the head would refuse for its token (see the module docstring)."""
    try:
        from ray._private.authentication.authentication_utils import is_token_auth_enabled
        from ray._raylet import AuthenticationTokenLoader, GcsClient
        from ray.exceptions import AuthenticationError, RpcError
    except ImportError:  # a Ray before token authentication: nothing to check
        return

    sending = is_token_auth_enabled()  # RAY_AUTH_MODE=token
    if sending:
        try:
            found = AuthenticationTokenLoader.instance().has_token(ignore_auth_mode=True)
        except AuthenticationError:  # RAY_AUTH_TOKEN_PATH names a missing or empty file
            raise _unreadable_token(f"cannot join the Ray cluster at {address}") from None
        if not found:
            raise SpecError(f"cannot join the Ray cluster at {address}: RAY_AUTH_MODE=token but no token is "
                            f"set; give {_TOKEN_HELP}")
    try:
        with quiet_stderr():  # Ray's C++ client logs each refusal on fd 2
            GcsClient(address=address)
    except AuthenticationError:
        if sending:
            raise SpecError(f"cannot join the Ray cluster at {address}: it refused this process's token "
                            f"({_token_source()}); give {_TOKEN_HELP}") from None
        raise SpecError(f"cannot join the Ray cluster at {address}: it has token authentication on; set "
                        f"RAY_AUTH_MODE=token and give {_TOKEN_HELP}") from None
    except RpcError as exc:
        raise SpecError(f"cannot join the Ray cluster at {address}: nothing there answers as a Ray head "
                        f"({first_line(exc)})") from None
    except Exception:  # anything else: ray.init meets it too, and join says it in one line
        pass


def _token_source() -> str:
    """Where Ray's loader took this process's token from (its order: the module docstring)."""
    if os.environ.get("RAY_AUTH_TOKEN"):
        return "RAY_AUTH_TOKEN"
    if os.environ.get("RAY_AUTH_TOKEN_PATH"):
        return f"RAY_AUTH_TOKEN_PATH: {os.environ['RAY_AUTH_TOKEN_PATH']}"
    return "the Kubernetes token or ~/.ray/auth_token" if os.environ.get("RAY_ENABLE_K8S_TOKEN_AUTH") \
        else "~/.ray/auth_token"


def where() -> tuple[str, str]:
    """The node this task or actor runs on: Ray's node id (hex) and the node's IP address."""
    import ray

    return ray.get_runtime_context().get_node_id(), ray.util.get_node_ip_address()


def node_counts(places: Iterable[tuple[str, str]]) -> list[dict[str, Any]]:
    """``{node_id, ip, tasks}`` per node of ``places`` (:func:`where` answers), by IP then node id."""
    counts: dict[tuple[str, str], int] = {}
    for node_id, ip in places:
        counts[(ip, node_id)] = counts.get((ip, node_id), 0) + 1
    return [{"node_id": node_id, "ip": ip, "tasks": n} for (ip, node_id), n in sorted(counts.items())]


def nodes_line(nodes: list[dict[str, Any]], what: str = "tasks") -> str:
    """E.g. ``tasks on 2 nodes: 127.0.0.2 (6), 127.0.0.3 (6)`` ('' for no node: in-process)."""
    if not nodes:
        return ""
    each = ", ".join(f"{n['ip']} ({n['tasks']})" for n in nodes)
    return f"{what} on {len(nodes)} node{'s' if len(nodes) != 1 else ''}: {each}"


class RayMessagesToStderr:
    """While installed (:meth:`install` … :meth:`remove`), ``sys.stdout`` passes what Ray's error-message
    thread writes to ``sys.stderr`` and everything else to the stdout it replaced (see the module docstring)."""

    def __init__(self) -> None:
        self._out: TextIO | None = None
        self._diverted = False

    def install(self) -> None:
        if self._out is None:
            self._out, sys.stdout = sys.stdout, self  # type: ignore[assignment]

    def remove(self) -> None:
        if self._out is not None:
            if sys.stdout is self:  # else someone replaced it since: leave theirs
                sys.stdout = self._out
            self._out = None

    @contextmanager
    def diverted(self) -> Iterator[None]:
        """While active, what any thread writes to stdout goes to stderr (for ``ray.shutdown``, which prints the
        messages Ray held back as repeats)."""
        self._diverted = True
        try:
            yield
        finally:
            self._diverted = False

    def _sink(self) -> TextIO:
        ray_thread = threading.current_thread().name == _RAY_MESSAGES_THREAD
        return sys.stderr if ray_thread or self._diverted or self._out is None else self._out

    def write(self, text: str) -> int:
        return self._sink().write(text)

    def flush(self) -> None:
        self._sink().flush()

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, ...: the replaced stdout's
        return getattr(self._out if self._out is not None else sys.__stdout__, name)
