"""The app server's kernel warm-up (dashboard/warm.py): on by default, off by PLACELAB_WARM_KERNELS=0, and what it
runs loads every kernel group it names."""

from __future__ import annotations

from dashboard import warm
from placelab.warmup import JOBS


def test_the_warm_up_is_on_unless_turned_off(monkeypatch):
    monkeypatch.delenv("PLACELAB_WARM_KERNELS", raising=False)
    assert warm.enabled()
    monkeypatch.setenv("PLACELAB_WARM_KERNELS", "0")
    assert not warm.enabled()
    warm.warm_kernels.clear()
    assert warm.warm_kernels() is None  # turned off: no thread


def test_the_warm_up_thread_loads_every_group_it_names(monkeypatch):
    assert set(warm.KERNEL_GROUPS) <= set(JOBS)
    ran = []
    monkeypatch.setattr(warm, "compile_job", ran.append)
    monkeypatch.setenv("PLACELAB_WARM_KERNELS", "1")
    warm.warm_kernels.clear()
    thread = warm.warm_kernels()
    thread.join(timeout=60)
    assert not thread.is_alive() and ran == list(warm.KERNEL_GROUPS)
    warm.warm_kernels.clear()


def test_a_failing_warm_up_stays_quiet(monkeypatch):
    def fail(name):
        raise RuntimeError("no cache")

    monkeypatch.setattr(warm, "compile_job", fail)
    warm._load_quietly()  # returns: the page that needs a kernel reports its own problem
