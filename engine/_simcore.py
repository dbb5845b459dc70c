"""Shared compiled pieces of the simulator kernels (numba, cached on disk): the event heap
and the memory records.

The event heap holds ``(time, key)`` pairs in two parallel arrays, ordered by time, then
key, so ties break deterministically (SimPy's ``(time, priority, counter)`` idea with the
priority and counter packed into one int64 key by each kernel). ``counts[HEAP_SIZE]`` is
the heap's size and ``counts[MEM_RECORDS]`` the number of memory records written so far.
Every function runs without numba's reference counting (``_nrt=False``): no allocation, and
is inlined into the kernel that calls it (``inline="always"``), so a call costs no more than
the arithmetic in it.
"""

from __future__ import annotations

from numba import njit

__all__ = ["HEAP_SIZE", "MEM_RECORDS", "ev_pop", "ev_push", "record"]

HEAP_SIZE, MEM_RECORDS = range(2)


@njit(cache=True, _nrt=False, inline="always")
def ev_push(ev_t, ev_k, counts, t, k):
    """Add event ``(t, k)``."""
    i = counts[HEAP_SIZE]
    counts[HEAP_SIZE] = i + 1
    while i > 0:
        par = (i - 1) >> 1
        pt = ev_t[par]
        pk = ev_k[par]
        if pt < t or (pt == t and pk < k):
            break
        ev_t[i] = pt
        ev_k[i] = pk
        i = par
    ev_t[i] = t
    ev_k[i] = k


@njit(cache=True, _nrt=False, inline="always")
def ev_pop(ev_t, ev_k, counts):
    """Remove and return the earliest event ``(t, k)`` (the heap must not be empty)."""
    t0 = ev_t[0]
    k0 = ev_k[0]
    n = counts[HEAP_SIZE] - 1
    counts[HEAP_SIZE] = n
    if n > 0:
        t = ev_t[n]
        k = ev_k[n]
        i = 0
        while True:
            c = 2 * i + 1
            if c >= n:
                break
            if c + 1 < n and (ev_t[c + 1] < ev_t[c] or (ev_t[c + 1] == ev_t[c] and ev_k[c + 1] < ev_k[c])):
                c += 1
            if ev_t[c] < t or (ev_t[c] == t and ev_k[c] < k):
                ev_t[i] = ev_t[c]
                ev_k[i] = ev_k[c]
                i = c
            else:
                break
        ev_t[i] = t
        ev_k[i] = k
    return t0, k0


@njit(cache=True, _nrt=False, inline="always")
def record(mr, counts, t, d, b):
    """Append one memory change: ``b`` bytes (negative: freed) on device ``d`` at time ``t``."""
    k = counts[MEM_RECORDS]
    mr[k, 0] = t
    mr[k, 1] = d
    mr[k, 2] = b
    counts[MEM_RECORDS] = k + 1
