"""The queues of the ``work_conserving`` kernel (:mod:`engine.sim._kernel_wc`; numba, inlined).

Each device's requests live in its own segment of ``ready`` (segment sizes = ops placed
there, from ``dev_i[d, Q_OFF]``): a FIFO for ``choose=FIFO``, a binary heap keyed by
(−priority, request number) for ``choose=PRIORITY`` (``docs/reference/simulation.md``,
``work_conserving``: the ``choose`` and ``memory_aware`` options). Each channel and each
device's queue of copies is a linked list of transfer rows through ``row_next``. Arrays and
columns: :mod:`engine.sim._layout` (``L``).
"""

from __future__ import annotations

from numba import njit

from engine.sim import _layout as L


@njit(cache=True, _nrt=False, inline="always")
def before(a, b, prio, ws):
    """True when op ``a`` is served before op ``b`` (higher priority, then earlier request)."""
    return prio[a] > prio[b] or (prio[a] == prio[b] and ws.op_i[a, L.REQUEST_NO] < ws.op_i[b, L.REQUEST_NO])


@njit(cache=True, _nrt=False, inline="always")
def heap_fix(off, size, i, prio, ws):
    """Restore the heap order below slot ``i`` of a device's segment."""
    q = ws.ready
    x = q[off + i]
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and before(q[off + c + 1], q[off + c], prio, ws):
            c += 1
        if before(q[off + c], x, prio, ws):
            q[off + i] = q[off + c]
            i = c
        else:
            break
    q[off + i] = x


@njit(cache=True, _nrt=False, inline="always")
def sift_up(off, i, x, prio, ws):
    """Put op ``x`` into slot ``i`` of a device's heap segment, moving it up past the ops it is
    served before; returns its slot."""
    q = ws.ready
    while i > 0:
        par = (i - 1) >> 1
        if not before(x, q[off + par], prio, ws):
            break
        q[off + i] = q[off + par]
        i = par
    q[off + i] = x
    return i


@njit(cache=True, _nrt=False, inline="always")
def ask(c, d, g, prio, ws):
    """Op ``c`` asks for device ``d`` (rule 1 of ``work_conserving``): it takes the next
    request number and joins the device's queue."""
    ws.op_i[c, L.REQUEST_NO] = ws.counts[L.EVENT_SEQ]
    ws.counts[L.EVENT_SEQ] += 1
    off = ws.dev_i[d, L.Q_OFF]
    i = ws.dev_i[d, L.Q_TAIL]
    ws.dev_i[d, L.Q_TAIL] = i + 1
    if g.choose == L.FIFO:
        ws.ready[off + i] = c
    else:
        sift_up(off, i, c, prio, ws)


@njit(cache=True, _nrt=False, inline="always")
def take_fifo(d, g, ws):
    """Remove and return the first op of device ``d``'s FIFO (memory-aware: the first that
    fits in its free memory; the others keep their order), or -1."""
    q, dev_i = ws.ready, ws.dev_i
    off = dev_i[d, L.Q_OFF]
    h = dev_i[d, L.Q_HEAD]
    tail = dev_i[d, L.Q_TAIL]
    j = h
    if g.memory_aware:
        while j < tail and ws.dev_f[d, L.MEM] + g.need[q[off + j]] > g.capacity[d]:
            j += 1
    if j >= tail:
        return -1
    c = q[off + j]
    while j > h:  # close the gap: the ops it passed keep their order
        q[off + j] = q[off + j - 1]
        j -= 1
    dev_i[d, L.Q_HEAD] = h + 1
    return c


@njit(cache=True, _nrt=False, inline="always")
def take_priority(d, g, prio, ws):
    """Remove and return the op of device ``d``'s heap served first (memory-aware: the first
    in that order that fits in its free memory), or -1."""
    q, dev_i = ws.ready, ws.dev_i
    off = dev_i[d, L.Q_OFF]
    size = dev_i[d, L.Q_TAIL]
    best = -1
    if g.memory_aware:
        for j in range(size):
            x = q[off + j]
            if ws.dev_f[d, L.MEM] + g.need[x] <= g.capacity[d] and (best < 0 or before(x, q[off + best], prio, ws)):
                best = j
    elif size > 0:
        best = 0
    if best < 0:
        return -1
    c = q[off + best]
    size -= 1
    dev_i[d, L.Q_TAIL] = size
    if best < size:  # move the last entry into the hole, then sift it up or down
        heap_fix(off, size, sift_up(off, best, q[off + size], prio, ws), prio, ws)
    return c


@njit(cache=True, _nrt=False, inline="always")
def append_row(lists, i, head, tail, r, ws):
    """Append transfer row ``r`` to the linked list whose first and last rows are
    ``lists[i, head]`` and ``lists[i, tail]`` (-1: empty); rows link through ``row_next``."""
    ws.row_next[r] = -1
    if lists[i, tail] < 0:
        lists[i, head] = r
    else:
        ws.row_next[lists[i, tail]] = r
    lists[i, tail] = r


@njit(cache=True, _nrt=False, inline="always")
def pop_row(lists, i, head, tail, ws):
    """Remove and return the first row of a linked list (see :func:`append_row`; not empty)."""
    r = lists[i, head]
    lists[i, head] = ws.row_next[r]
    if ws.row_next[r] < 0:
        lists[i, tail] = -1
    return r
