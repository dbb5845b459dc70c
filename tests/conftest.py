"""Session-wide test setup: the ``local`` preset's calibration cache lives in a temp dir; the cyclic garbage
collector skips what earlier tests left alive.

The cache is seeded with an uncalibrated description of this machine (placeholder link and
overheads), so tests that merely list or load presets never start executor workers; tests
of calibration itself point ``PLACELAB_CACHE_DIR`` at their own empty directory.
"""

from __future__ import annotations

import gc
import signal
import sys

import pytest
from hypothesis_profiles import apply_profile

from engine.cluster import cluster_to_dict
from engine.jsonio import atomic_write_text, dumps


@pytest.fixture(autouse=True, scope="session")
def _no_kernel_warmup_thread():
    """The app's servers and AppTests do not load the numba kernels in a background thread beside the tests
    (dashboard/warm.py; tests/dashboard/test_warm.py tests it on its own)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("PLACELAB_WARM_KERNELS", "0")
    yield
    mp.undo()


@pytest.fixture(autouse=True, scope="session")
def _local_preset_cache(tmp_path_factory):
    from engine.executor.calibration import local_cache_path, local_devices, machine_cluster

    mp = pytest.MonkeyPatch()
    mp.setenv("PLACELAB_CACHE_DIR", str(tmp_path_factory.mktemp("placelab-cache")))
    path = local_cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, dumps(cluster_to_dict(machine_cluster(local_devices())), indent=1))
    yield
    mp.undo()


@pytest.fixture(autouse=True, scope="session")
def _ctrl_c_as_in_a_terminal():
    """SIGINT handled as in a terminal (Python's KeyboardInterrupt). A suite started with SIGINT ignored — a
    background job of a non-interactive shell, as ``make test &`` in a script, inherits it so — passes that
    on to every process it starts, and the Ctrl-C tests (a sweep's, the Train page's Stop) would see nothing
    happen."""
    previous = signal.getsignal(signal.SIGINT)
    if previous == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture(autouse=True)
def _restore_main_module():
    """Put ``__main__`` back after each test: AppTest runs a page script as ``__main__`` and leaves it
    there, and the executor's workers (``spawn``) re-run ``__main__`` — a later executor test in the
    same process would start workers that run the page script (``from_function`` ones die with NameError)."""
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main


@pytest.fixture
def estimating_placer(monkeypatch):
    """``register(predicted_s, name="estimating")`` adds a placer for this test only: HEFT's placement carrying the
    estimate ``predicted_s`` (s) the test chooses, so a test can make a placer's own estimate agree with the
    simulation or be far off it (issue 55). Returns the placer's name."""
    from dataclasses import replace

    from policies.base import PlacerInfo
    from policies.registry import PLACERS, make_placer

    def register(predicted_s: float | None, name: str = "estimating") -> str:
        class Estimating:
            def place(self, graph, cluster, *, seed=0, budget=None, progress=None):
                return replace(make_placer("heft").place(graph, cluster), predicted_makespan_s=predicted_s)

        Estimating.name = name
        monkeypatch.setitem(PLACERS, name, PlacerInfo(name, "HEFT's placement with the estimate a test sets",
                                                      Estimating, "test", {}))
        return name

    return register


#: The shortest time an AppTest script run may take before it counts as hung. Streamlit's default is 3 s and a
#: busy 2-core machine (load 5-14) took longer to render the home page (issue 34): no test may fail on a clock.
APP_TIMEOUT_S = 300.0


@pytest.fixture(autouse=True)
def _generous_app_test_timeouts():
    """Every AppTest run gets at least ``APP_TIMEOUT_S`` (a test that names a shorter ``default_timeout``, or
    none, too). Applied once, and only in a process whose tests imported AppTest (Streamlit loads slowly)."""
    module = sys.modules.get("streamlit.testing.v1.app_test")
    if module is not None and not getattr(module.AppTest.__init__, "_generous", False):
        original = module.AppTest.__init__

        def init(self, *args, default_timeout: float = APP_TIMEOUT_S, **kwargs):
            original(self, *args, default_timeout=max(float(default_timeout), APP_TIMEOUT_S), **kwargs)

        init._generous = True
        module.AppTest.__init__ = init
    yield


# -- garbage collection ----------------------------------------------------------------------------------------
# A worker holds torch, TensorFlow, Streamlit, Ray and plotly (600 k+ objects), and Streamlit's script runner ends
# every AppTest run with a full collection (``runner.postScriptGC``, and keras' clear_session once keras is
# imported), each a walk over all of them: 0.4–0.9 s apiece, 55 % of the dashboard tests' time
# (docs/lab/2026-11-27-test-suite-garbage-collection.md). Objects alive when a test ends are moved to the permanent
# generation, which collections skip; every FULL_COLLECTION_EVERY tests one full collection reclaims the cycles
# among them that died since. Nothing the tests check changes: reference counting frees as before, and objects a
# test creates stay collectable until it ends.
FULL_COLLECTION_EVERY = 200
_finished = 0


def pytest_collection_modifyitems(config, items):
    """Every property test runs under the active hypothesis profile (``hypothesis_profiles.py``); the longest
    tests run first (:func:`_start_order`)."""
    for item in items:
        test = getattr(item, "obj", None)
        if getattr(test, "is_hypothesis_test", False):
            apply_profile(test)
    items.sort(key=_start_order)


def _start_order(item) -> int:
    """Browser walks first, then tests marked slow, then the rest, each in collection order (a stable sort): with
    ``-n 2`` the workers hand out tests in this order, so the longest ones no longer start last and leave one
    worker running alone at the end. Only the start order changes, never what a test does or sees."""
    if item.get_closest_marker("e2e") is not None:
        return 0
    return 1 if item.get_closest_marker("slow") is not None else 2


def pytest_collection_finish(session):
    gc.collect()
    gc.freeze()


def pytest_runtest_logfinish(nodeid, location):
    global _finished
    _finished += 1
    if _finished % FULL_COLLECTION_EVERY == 0:
        gc.unfreeze()
    gc.collect()
    gc.freeze()
