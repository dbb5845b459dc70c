"""One way to run independent tasks: in this process (the default) or on Ray.

A *task* is a call ``fn(*args)`` of a module-level function whose result the caller wants
back in the driver. :class:`ParallelMap` runs a list of them and hands each result to the
caller as it finishes (``on_result``), so the caller stores results one by one in the run
store, in the driver process: workers never write runs, and a task whose worker dies has
written nothing.

In-process (``ParallelMap()``) the tasks run one after another in the calling process, in
order, through the same code path the caller uses with Ray.

On Ray (``ParallelMap(workers=N)`` starts a local Ray runtime with N CPUs, one task per CPU;
``ParallelMap(address=...)`` joins an existing cluster, ``HOST:PORT``, ``"auto"`` or ``ray://host:10001``,
token authentication included: :mod:`engine.parallel.ray_cluster`):

* a task whose worker process dies is retried up to ``max_retries`` times (Ray's task
  retries; exceptions the task raises are *not* retried, they are the task's answer);
* an object passed to more than one task (the same graph or cluster) is put into Ray's
  object store once, not shipped with every task;
* each task reports the node it ran on: :meth:`ParallelMap.nodes` counts them;
* the workers of a runtime it starts run at the driver's priority (:data:`WORKER_NICENESS`), not Ray's
  default niceness 15, under which a busy machine's other processes starve the job's whole compute;
* the messages Ray's driver prints about the cluster (a task retried because its node died) go to stderr,
  not to the command's stdout (:class:`engine.parallel.ray_cluster.RayMessagesToStderr`);
* Ctrl-C (or any exception in ``on_result`` or a task) stops every task still pending or
  running before the exception propagates, so the caller can mark its runs ``interrupted``:
  the executor shuts down the runtime it started (Ray kills its workers) or leaves the cluster
  it joined (Ray kills a departed driver's tasks). It does not call ``ray.cancel``: cancelling
  tasks while results arrive crashes the Ray 2.x driver now and then (a failed check,
  ``task_manager.cc``: "Tried to complete task that was not pending"; 3 of 10 interrupts
  here, 2 of 4 with ``force=True``, 1 of 6 without), which kills the process and leaves
  Ray's daemons behind.
  An executor that joined a runtime started by another in the same process leaves the
  remaining tasks running; their results are dropped.

A driver killed hard (``kill -9``) cannot shut its runtime down, and two of Ray's processes outlive
it: raylet's ``ray::DashboardAgent`` and ``ray::RuntimeEnvAgent`` (Ray 2.60; its other daemons and the
workers end with the driver), which ignore SIGTERM. So a local runtime is recorded while it runs: a
state file ``<cache>/ray-local/<driver pid>.json`` (``$PLACELAB_CACHE_DIR``, else
``$XDG_CACHE_HOME/placelab``, else ``~/.cache/placelab``) names the driver (pid and start time) and
every process of its Ray session (pid and start time: the head processes and their descendants,
the agents included), and each of those processes carries the environment variable
``PLACELAB_RAY_DRIVER=<pid>-<start time>``. A clean shutdown removes the file. The next start of a
local runtime (and ``placelab ray stop``; :mod:`engine.parallel.ray_runtimes`) stops, for every state file
whose driver is gone, the processes recorded in it, or carrying its driver's mark, that still run:
SIGTERM, then SIGKILL after a few seconds. A process is matched by pid *and* start time, so a
reused pid is never killed; a driver that still runs (pid and start time match) keeps its runtime.

Ray is imported only here and only when a Ray executor is used: importing ``engine``,
``policies``, ``placelab`` or opening the app never imports or starts Ray.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from engine.errors import SpecError
from engine.limits import check_local_workers
from engine.parallel.ray_cluster import (
    RayMessagesToStderr,
    check_address,
    check_local_start,
    join,
    local_start_error,
    node_counts,
    where,
)
from engine.parallel.ray_runtimes import LocalRuntimeRecord, stop_orphaned_runtimes, stopped_line

__all__ = ["WORKER_NICENESS", "ParallelMap", "TaskLost"]

#: The niceness of the workers of a runtime this process starts: the driver's own (Ray's default is 15). A
#: cluster that ``--address`` joins keeps its own setting (``RAY_worker_niceness`` when it was started).
WORKER_NICENESS = 0

_PLAIN = (str, int, float, bool, bytes, type(None))
_POLL_S = 0.2  # ray.wait timeout: keeps the driver responsive to Ctrl-C


class TaskLost(RuntimeError):
    """A task's worker died more often than the executor retries."""


class ParallelMap:
    """Runs independent tasks in-process or on Ray (see the module docstring).

    Parameters
    ----------
    workers : int, optional
        Start a local Ray runtime with this many CPUs (one task per CPU at a time).
    address : str, optional
        Join the Ray cluster at this address instead (``auto``, ``HOST:PORT`` or
        ``ray://HOST:10001``); its CPUs decide the parallelism.
    max_retries : int
        How often a task whose worker died is run again.

    Raises
    ------
    SpecError
        Both ``workers`` and ``address``, fewer than one worker, or more than
        :func:`engine.limits.check_local_workers` allows a local runtime.

    Examples
    --------
    >>> with ParallelMap() as ex:
    ...     ex.map(pow, [(2, 3), (3, 2)])
    [8, 9]
    """

    def __init__(self, workers: int | None = None, address: str | None = None, *, max_retries: int = 3) -> None:
        if workers is not None and address is not None:
            raise SpecError("give --workers (a local Ray runtime) or --address (an existing cluster), not both")
        if workers is not None and workers < 1:
            raise SpecError(f"--workers must be at least 1, got {workers}")
        if workers is not None:
            check_local_workers(workers)
        if max_retries < 0:
            raise SpecError(f"max_retries must be at least 0, got {max_retries}")
        self.workers = workers
        self.address = address
        self.max_retries = max_retries
        self._started = False
        self._state: LocalRuntimeRecord | None = None  # the record of the local runtime this executor started
        self._places: list[tuple[str, str]] = []  # where each task finished on Ray ran: (node id, IP)
        self._messages = RayMessagesToStderr()  # Ray's error messages: stderr, not the command's stdout

    @property
    def in_process(self) -> bool:
        """True when tasks run in this process (no Ray)."""
        return self.workers is None and self.address is None

    def describe(self) -> str:
        """One line for logs and run parameters: where the tasks run."""
        if self.in_process:
            return "in-process"
        return f"ray local, {self.workers} CPUs" if self.workers else f"ray cluster at {self.address}"

    def nodes(self) -> list[dict[str, Any]]:
        """``{node_id, ip, tasks}`` for each Ray node that ran tasks of this executor (empty in-process)."""
        return node_counts(self._places)

    def check(self) -> None:
        """Refuse now, in one line and in seconds, what :meth:`start` would fail on (nothing is started): an
        ``address`` nothing answers on, a token Ray cannot read. For a caller that starts Ray only later
        (``train``'s rollout workers, at its first update)."""
        if self.address is not None:
            check_address(self.address)
        elif self.workers is not None:
            check_local_start(self.workers)

    def __enter__(self) -> ParallelMap:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def start(self) -> None:
        """Start (``workers``) or join (``address``) Ray; a no-op in-process or when Ray already runs."""
        if self.in_process:
            return
        import ray

        if ray.is_initialized():
            return
        # Workers must import placelab's packages: give them this process's import path.
        env = {"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in _import_roots() if p)}}
        quiet = {"include_dashboard": False, "log_to_driver": False, "logging_level": "error",
                 "configure_logging": True}
        self._messages.install()  # before ray.init, which starts Ray's message thread
        try:
            if self.workers is not None:
                self._start_local(env, quiet)
            else:
                join(self.address, **quiet)
        except BaseException:
            self._messages.remove()
            raise
        self._started = True

    def _start_local(self, env: dict, quiet: dict) -> None:
        """A Ray runtime of this executor's own, recorded so that one a killed driver left is found and stopped."""
        import ray

        check_local_start(self.workers)
        stopped = stop_orphaned_runtimes()
        if stopped["stopped"]:
            warnings.warn(stopped_line(stopped), stacklevel=3)
        self._state = LocalRuntimeRecord()
        try:
            with self._state.marking():
                # "local": always a runtime of our own. Without an address Ray joins the newest cluster
                # started on this machine (/tmp/ray/ray_current_cluster), e.g. another program's.
                # Workers at the driver's priority: Ray's default niceness 15 starves them, the job's whole
                # compute, beside any other load (docs/lab/2026-11-27-test-suite-under-load.md).
                ray.init(address="local", num_cpus=self.workers, runtime_env=env,
                         _system_config={"worker_niceness": WORKER_NICENESS}, **quiet)
        except BaseException as exc:
            self._state.remove()
            self._state = None
            err = local_start_error(exc, self.workers)  # an unreadable token, a start-up timeout: one line
            if err is not None:
                raise err from None
            raise
        self._state.record()

    def shutdown(self) -> None:
        """Stop the Ray runtime this executor started (or disconnect from the cluster it joined)."""
        if self._started:
            import ray

            with self._messages.diverted():  # Ray prints the messages it held back as repeats here
                ray.shutdown()
            self._started = False
            self._messages.remove()
        if self._state is not None:
            self._state.remove()
            self._state = None

    def map(self, fn: Callable[..., Any], tasks: Sequence[tuple], *,
            on_start: Callable[[int], None] | None = None,
            on_result: Callable[[int, Any], None] | None = None,
            more: Callable[[int, Any], Sequence[tuple]] | None = None) -> list[Any]:
        """Run ``fn(*args)`` for every ``args`` in ``tasks``; the results in task order.

        ``on_start(i)`` is called when task ``i`` is handed out (in-process: just before it
        runs; on Ray: when it is submitted) and ``on_result(i, result)`` in the driver as each
        task finishes (in-process: in order; on Ray: in completion order). A Ctrl-C during
        ``on_result`` takes effect when it returns, so a result is stored whole or not at all.

        ``more(i, result)``, called after ``on_result``, returns the tasks that task ``i``'s
        result lets run (a task that needs earlier results): they are handed out at once, without
        waiting for the other running tasks, and take the next indices (in-process they run
        after the tasks already queued); the returned list holds their results too.

        Raises
        ------
        Exception
            The first exception a task raises, as the task raised it (pending tasks are cancelled).
        TaskLost
            A task's worker died more than ``max_retries`` times.
        KeyboardInterrupt
            Ctrl-C; the runtime this executor started or joined has been shut down or left, which
            stops every task still pending or running.
        """
        if self.in_process:
            queue, results = list(tasks), []
            while len(results) < len(queue):
                i = len(results)
                if on_start:
                    on_start(i)
                results.append(fn(*queue[i]))
                queue += self._finished(i, results[-1], on_result, more)
            return results
        self.start()
        if self._state is not None:
            self._state.record()  # the workers started since, and any agent Ray restarted
        return self._ray_map(fn, tasks, on_start, on_result, more)

    def _ray_map(self, fn, tasks, on_start, on_result, more) -> list[Any]:
        import ray
        from ray.exceptions import RayError, RayTaskError

        remote = ray.remote(max_retries=self.max_retries, retry_exceptions=False)(_located).options(
            name=getattr(fn, "__name__", "task"))
        fn_ref = ray.put(fn)
        shared = _shared_refs(tasks, ray.put)
        pending: dict[Any, int] = {}
        results: list[Any] = []

        def submit(batch: Sequence[tuple]) -> None:
            for args in batch:
                pending[remote.remote(fn_ref, *(shared.get(id(a), a) for a in args))] = len(results)
                results.append(None)
                if on_start:
                    on_start(len(results) - 1)

        try:
            submit(tasks)
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1, timeout=_POLL_S)
                for ref in done:
                    i = pending.pop(ref)
                    try:
                        place, results[i] = ray.get(ref)
                    except RayTaskError as exc:  # the task's own exception: re-raise it as raised
                        raise exc.cause from None
                    except RayError as exc:  # the worker or its node died more often than retried
                        raise TaskLost(f"task {i}: its worker died in each of its {self.max_retries + 1} "
                                       f"attempt(s) ({type(exc).__name__})") from None
                    self._places.append(place)
                    submit(self._finished(i, results[i], on_result, more))
        except BaseException:
            self.shutdown()  # stops the pending tasks (see the module docstring: no ray.cancel)
            raise
        return results

    @staticmethod
    def _finished(i: int, result: Any, on_result, more) -> Sequence[tuple]:
        """``on_result`` then ``more`` for a finished task, with Ctrl-C held off until both return."""
        with _sigint_deferred():
            if on_result:
                on_result(i, result)
            return more(i, result) if more else ()



@contextlib.contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Ctrl-C waits for the block to end: ``on_result`` stores a result whole or not at all (a real Ctrl-C
    landing halfway through storing one left a stray ``interrupted`` run the sweep did not index)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if received:
        if callable(previous):
            previous(signal.SIGINT, None)
        elif previous == signal.SIG_DFL:
            raise KeyboardInterrupt


def _shared_refs(tasks: Sequence[tuple], put: Callable[[Any], Any]) -> dict[int, Any]:
    """Object-store references for the non-plain arguments that several tasks share (by identity)."""
    seen: dict[int, Any] = {}
    counts: dict[int, int] = {}
    for args in tasks:
        for a in args:
            if not isinstance(a, _PLAIN):
                seen[id(a)] = a
                counts[id(a)] = counts.get(id(a), 0) + 1
    return {k: put(seen[k]) for k, n in counts.items() if n > 1}


def _located(fn: Callable[..., Any], *args: Any) -> tuple[tuple[str, str], Any]:
    """A task on Ray: ``fn(*args)`` and the node it ran on (:func:`engine.parallel.ray_cluster.where`)."""
    return where(), fn(*args)


def _import_roots() -> list[str]:
    """The import path workers need: the directory holding ``engine``/``policies``, then ``$PYTHONPATH``."""
    import engine

    root = os.path.dirname(os.path.dirname(os.path.abspath(engine.__file__)))
    return [root, *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
