"""Binary heaps of op indices for the list-scheduling kernel (``policies/_listsched_kernels.py``). Private.

Order (:func:`less`): with ``by_time``, earlier data-ready time on device ``d`` first; then higher priority, then
lower noise. Cached on disk (``cache=True``).
"""

from __future__ import annotations

from numba import njit

_TOL = 1e-15


@njit(cache=True, _nrt=False)
def better(key, noise, best_key, best_noise):
    if key < best_key - _TOL:
        return True
    return key <= best_key + _TOL and noise < best_noise


@njit(cache=True, _nrt=False)
def heap_less(a, b, prio, noise):
    if prio[a] != prio[b]:
        return prio[a] > prio[b]
    return noise[a] < noise[b]


@njit(cache=True, _nrt=False)
def less(a, b, d, drt, prio, noise, by_time):
    """Heap order: with ``by_time``, earlier data-ready time on device ``d`` first; then higher priority, then
    lower noise (:func:`_heap_less`)."""
    if by_time and drt[a, d] != drt[b, d]:
        return drt[a, d] < drt[b, d]
    return heap_less(a, b, prio, noise)


@njit(cache=True, _nrt=False)
def push(heap, size, v, d, drt, prio, noise, by_time):
    """Push ``v`` on the heap ``heap[:size]`` (order: :func:`_less`); returns the new size."""
    k = size
    heap[k] = v
    while k > 0:
        parent = (k - 1) // 2
        if less(heap[k], heap[parent], d, drt, prio, noise, by_time):
            heap[k], heap[parent] = heap[parent], heap[k]
            k = parent
        else:
            break
    return size + 1


@njit(cache=True, _nrt=False)
def pop(heap, size, d, drt, prio, noise, by_time):
    """Pop the first of the heap ``heap[:size]`` (order: :func:`_less`); returns it and the new size."""
    top = heap[0]
    size -= 1
    heap[0] = heap[size]
    k = 0
    while True:
        left = 2 * k + 1
        if left >= size:
            break
        c = left
        if left + 1 < size and less(heap[left + 1], heap[left], d, drt, prio, noise, by_time):
            c = left + 1
        if less(heap[c], heap[k], d, drt, prio, noise, by_time):
            heap[c], heap[k] = heap[k], heap[c]
            k = c
        else:
            break
    return top, size
