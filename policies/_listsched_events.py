"""The work-conserving simulator's order of simultaneous events, for the list-scheduling kernel's estimate of a
finished placement (``policies/_listsched_kernels.py``, issue 55). Private.

The work-conserving simulator (:mod:`engine.sim._kernel_wc`) handles the events of one instant in the order it
made them. An op's start is triggered by its device's previous op ending (an event made when that op started; when
the op owes an overhead, when it ended) or by its last input arriving (a local input's op ending; a transfer's
landing, made when the transfer left). :func:`last_input` and :func:`trigger` give that event as ``(the time it was
made, the placement order of its op)``; the kernel orders ops that become ready together on one device by the
first, and :func:`event_order` orders picks that start together on several devices by the second. Cached on disk
(``cache=True``).
"""

from __future__ import annotations

from numba import njit

from engine.sim import _plankernels as _p
from engine.sim.estimator import CHANNEL_NONE
from policies import _listsched_heaps as _h


@njit(cache=True, _nrt=False)
def last_input(o, d, t, tp, pi, tr, dev, unit_dev, op_unit, out_t, avail, start):
    """Of op ``o``'s inputs that are on device ``d`` at ``t``, the event of the one the work-conserving simulator
    handles last, as ``(the time it was made, the placement order of its op)``: a local input's op ending (made
    when that op started), a transfer landing (made when it left: its op's end, or later behind its channel);
    ``(-1, -1)`` for none. The simulator handles the events of an instant in the order they were made."""
    ct, sq = -1.0, -1
    for k in range(tp.pred_ptr[o], tp.pred_ptr[o + 1]):
        p = tp.pred_idx[k]
        if dev[p] == d:
            if out_t[p] != t:
                continue
            c = start[p]
        else:
            land = _p.arrival(p, dev[p], d, tp.pred_edge[k], o, False, tp, pi, tr, dev, unit_dev, op_unit, out_t,
                              avail)
            if land != t:
                continue
            c = out_t[p]
            if pi.channel != CHANNEL_NONE:  # made when it left its channel
                busy, extra = _p.group_time(p, dev[p], d, tp.pred_edge[k], o, False, tp, pi, dev, unit_dev, op_unit)
                c = land - busy - extra
        if c > ct or (c == ct and tr.seq[p] > sq):
            ct, sq = c, tr.seq[p]
    return ct, sq


@njit(cache=True, _nrt=False)
def trigger(o, d, t, tp, pi, tr, dev, unit_dev, op_unit, out_t, avail, start, last_op):
    """The event that lets op ``o`` start on device ``d`` at ``t`` in the work-conserving simulator, as
    :func:`last_input` gives it: the device's previous op ending (made when that op started; when it owes an
    overhead, when it ended) or the input that came last, the later of the two when both happen at ``t``;
    ``(-1, -1)`` for an op with neither (a source on an idle device)."""
    ct, sq = last_input(o, d, t, tp, pi, tr, dev, unit_dev, op_unit, out_t, avail, start)
    prev = last_op[d]
    if prev >= 0 and avail[d] == t:
        c = out_t[prev] if pi.hold[prev, d] > pi.compute[prev, d] else start[prev]
        if c > ct or (c == ct and tr.seq[prev] > sq):
            ct, sq = c, tr.seq[prev]
    return ct, sq


@njit(cache=True, _nrt=False)
def event_order(i, d, cand_o, cand_t, prio, noise, tp, pi, tr, dev, unit_dev, op_unit, out_t, avail, start,
                 last_op):
    """Among the devices whose pick starts at the same instant as ETF's choice ``(i, d)``, the one the
    work-conserving simulator starts first: it handles the events of an instant in the order they were made
    (:func:`trigger`), where ETF would break the tie by priority and noise (issue 55: the estimate of a finished
    placement, in FIFO order)."""
    t = cand_t[d]
    bc, bs = trigger(i, d, t, tp, pi, tr, dev, unit_dev, op_unit, out_t, avail, start, last_op)
    for dd in range(len(cand_o)):
        o = cand_o[dd]
        if dd == d or o < 0 or cand_t[dd] != t:
            continue
        c, sq = trigger(o, dd, t, tp, pi, tr, dev, unit_dev, op_unit, out_t, avail, start, last_op)
        if c < bc or (c == bc and (sq < bs or (sq == bs and _h.heap_less(o, i, prio, noise)))):
            i, d, bc, bs = o, dd, c, sq
    return i, d
