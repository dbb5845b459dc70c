"""The simulator kernels' array layout: their inputs, workspaces, named columns and codes.

Every compiled kernel (``engine/sim/_kernel_placeto.py``, ``engine/sim/_kernel_default.py``,
``engine/sim/_kernel_wc.py``) and their shared pieces (``engine/sim/_core.py``) read their
arrays through the names below; nothing else in them says what a column holds. The column
names are module-level integers, which numba reads as compile-time constants, so a named
column costs nothing. The arrays travel in named tuples (numba types them field by field):
the per-graph inputs (:class:`QueueInputs`, :class:`WCInputs`) and the per-graph
workspaces (:class:`QueueWorkspace`, :class:`WCWorkspace`), allocated once and reused for
every placement (the kernels allocate nothing).

One concept has one column in every kernel: columns shared by the kernels come first, at
the same index; a kernel's own columns follow, named for what they hold.

numba's on-disk cache (``cache=True``) is keyed on the file of each compiled kernel only: after
editing this module, ``engine/sim/_core.py`` or ``engine/sim/_kernel_wc_queues.py`` alone, delete
``engine/sim/__pycache__/_kernel_*.nb*`` (or touch the kernel modules), or the old kernels load.

Workspace arrays (``n`` ops, ``m`` edges, ``D`` devices)
--------------------------------------------------------
======== ================= ===============================================================
array    shape, dtype      rows and columns
======== ================= ===============================================================
op_i     [n, *] int64      per op: REMAINING, OUT_REF (shared); PRODUCER, TIE, FIRST_ROW,
                           N_ROWS (queue kernels); REQUEST_NO (work-conserving)
op_f     [n, *] float64    per op: START, END (shared); READY_AT, OUT_LANDS (queue kernels)
ready    [n] int64         ready ops, one segment per device at ``dev_i[d, Q_OFF]``: a FIFO
                           (queue kernels, work-conserving ``FIFO``) or a binary heap
                           (work-conserving ``PRIORITY``)
row_i    [m, *] int64      per transfer row: R_OP, R_SRC, R_DST (shared); R_REF, R_PRIMARY
                           (queue kernels); R_CONSUMER (work-conserving)
row_f    [m, *] float64    per transfer row: R_BYTES, R_START, R_END (shared); R_TIME (w-c)
dev_i    [D(+1), *] int64  per device: COUNT, Q_OFF, Q_HEAD, Q_TAIL (shared); then per kernel
dev_f    [D, *] float64    per device: BUSY, MEMCPY, PEAK, MEM (shared); then per kernel
ev_t     [e] float64       event heap: times ...
ev_k     [e] int64         ... and keys (heap order: time, then key; see the key layouts)
mem_log  [k, 3] float64    memory changes: LOG_T, LOG_DEV, LOG_BYTES (freed: negative)
counts   [N_COUNTS] int64  HEAP_SIZE, MEM_RECORDS, EVENT_SEQ, ROWS, TIE_SEQ
======== ================= ===============================================================

The queue kernels add ``frees`` (per-device FIFOs of pending frees, FREE_T / FREE_B, in the
ready segments) and ``chan_key`` / ``chan_t`` (per-channel FIFOs of pending arrivals, one
segment per device at ``dev_i[d, CQ_OFF]``); the work-conserving kernel adds
``row_of_edge`` (the transfer row of each cross-device edge), ``row_next`` (the next row on
the same channel or copy queue, -1: none) and ``chan`` (its channels: CH_HEAD, CH_TAIL,
CH_BUSY, one row per device or ordered device pair).

Memory levels (every kernel's ``memory`` argument): ``MEM_OFF`` the makespan and op times
only (the makespan-only call: the queue kernels then write no transfer rows, nor the
work-conserving kernel without contention or sender copies: a transfer is then only the
event of its landing), ``MEM_PEAK`` transfer rows and peaks too, ``MEM_RECORD`` peaks and
every change in ``mem_log``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

# ------------------------------------------------------------------------------ every kernel
MEM_OFF, MEM_PEAK, MEM_RECORD = range(3)

# counts: int64 [N_COUNTS]
HEAP_SIZE, MEM_RECORDS, EVENT_SEQ, ROWS, TIE_SEQ = range(5)
N_COUNTS = 5

REMAINING, OUT_REF = range(2)  # op_i: inputs still to come, readers / holders of its output
START, END = range(2)  # op_f: when the op started and ended
R_OP, R_SRC, R_DST = range(3)  # row_i: producer, source device, destination device
R_BYTES, R_START, R_END = range(3)  # row_f: bytes, start, arrival
COUNT, Q_OFF, Q_HEAD, Q_TAIL = range(4)  # dev_i: ops placed there, its ready segment, head, tail
BUSY, MEMCPY, PEAK, MEM = range(4)  # dev_f: compute s, transfer s, peak bytes, bytes in use
LOG_T, LOG_DEV, LOG_BYTES = range(3)  # mem_log

# ------------------------------------------------------------------------------ placeto and default
# op_i: the largest producer key among the latest inputs, the tie among ops ready at one time,
# the op's transfer rows (first, count)
PRODUCER, TIE, FIRST_ROW, N_ROWS = range(2, 6)
READY_AT, OUT_LANDS = range(2, 4)  # op_f: when its last input came; when its output's last transfer lands
R_REF, R_PRIMARY = range(3, 5)  # row_i: readers of the copy not yet started; 1 for an output's first row
FREE_T, FREE_B = range(2)  # frees: a pending free (time, bytes)
# dev_i [D + 1, 12]: a device wake-up is queued; the op whose consumers are being counted, and how many are
# on this device; the free FIFO's head and tail (in the ready segment); the channel FIFO's segment, head, tail
EV_PENDING, SEEN, DCOUNT, FQ_HEAD, FQ_TAIL, CQ_OFF, CQ_HEAD, CQ_TAIL = range(4, 12)
# dev_f [D, 11]: when the device is free again; when its channel is; the free due when its running op ends
# (time, bytes); per output being sent: the largest bytes, largest given time, largest bytes without one
BUSY_UNTIL, CH_FREE, PEND_T, PEND_B, DBYTES, DGT, DBNT = range(4, 11)

# event keys: kind << KIND_SHIFT | payload; at one time arrivals, then bus landings, then device starts
ARRIVAL, BUS, DEVICE = range(3)
KIND_SHIFT = 56
PAYLOAD_MASK = (1 << KIND_SHIFT) - 1

# ------------------------------------------------------------------------------ work_conserving
REQUEST_NO = 2  # op_i: the order in which it asked for its device
R_CONSUMER = 3  # row_i: the op its edge feeds (row_i has 4 columns: 32-byte rows)
R_TIME = 3  # row_f: its duration (on the sender, with sender copies)
# dev_i [D, 9]: running op (-1 idle, -2 busy with copies or overhead), stalled, the copy queue's first and
# last row and the row being copied (-1: none)
RUNNING, STALLED, C_HEAD, C_TAIL, C_ROW = range(4, 9)
# dev_f [D, 8]: the copy in progress: its time still to go at full speed, when that was counted, when it ends,
# and the overhead owed after the copies
C_LEFT, C_SINCE, C_END, C_AFTER = range(4, 8)
CH_HEAD, CH_TAIL, CH_BUSY = range(3)  # chan: first and last waiting row, 1 while a transfer runs

# event keys: seq << SEQ_SHIFT | kind << WC_KIND_SHIFT | payload (seq: creation order, the tie rule);
# payload: op, transfer row, device, transfer row, consumer op (a transfer without a row, see MEM_OFF)
OP_ENDS, LANDS, DEVICE_FREE, COPIED, INPUT_LANDS = range(5)
SEQ_SHIFT = 32
WC_KIND_SHIFT = 29
WC_KIND_MASK = 7
WC_PAYLOAD_MASK = (1 << WC_KIND_SHIFT) - 1

# option codes
FIFO, PRIORITY = range(2)
NO_CONTENTION, PER_DEVICE, PER_LINK = range(3)
NO_SENDER_COPIES, SENDER_COPIES, SHARED_BUS = range(3)


class QueueInputs(NamedTuple):
    """What the ``placeto`` and ``default`` kernels read of one graph and cluster."""

    num_devices: int
    succ_ptr: np.ndarray  # consumers of op i: succ_idx[succ_ptr[i]:succ_ptr[i + 1]], along succ_edge
    succ_idx: np.ndarray
    succ_edge: np.ndarray
    pred_ptr: np.ndarray  # producers of op i: pred_idx[pred_ptr[i]:pred_ptr[i + 1]]
    pred_idx: np.ndarray
    edge_bytes: np.ndarray
    edge_time: np.ndarray  # given transfer time per edge (NaN: none); read only when has_times
    has_times: bool
    out_bytes: np.ndarray
    persistent: np.ndarray
    temp: np.ndarray
    bandwidth: np.ndarray  # [D, D] (default); placeto uses bw0, the default link's
    latency: np.ndarray
    bw0: float
    op_overhead: float  # δ1
    transfer_gap: float  # δ2


class QueueWorkspace(NamedTuple):
    """Every array the ``placeto`` / ``default`` kernels write (see the module docstring)."""

    op_i: np.ndarray
    op_f: np.ndarray
    ready: np.ndarray
    frees: np.ndarray
    row_i: np.ndarray
    row_f: np.ndarray
    chan_key: np.ndarray
    chan_t: np.ndarray
    ev_t: np.ndarray
    ev_k: np.ndarray
    mem_log: np.ndarray
    dev_i: np.ndarray
    dev_f: np.ndarray
    counts: np.ndarray


def _mem_log(n: int, m: int, record_memory: bool) -> np.ndarray:
    """The memory log of every workspace: an op's temp and output allocated and freed (4 changes an op), a
    received copy allocated when it lands and freed when its consumer ends (2 an edge). The kernels do not
    check bounds, so one size for all of them (the work-conserving one had room for 3 an op: a segfault)."""
    return np.zeros(((4 * n + 2 * m + 8) if record_memory else 1, 3))


def queue_workspace(n: int, m: int, num_devices: int, record_memory: bool) -> QueueWorkspace:
    """A :class:`QueueWorkspace` for ``n`` ops, ``m`` edges and ``num_devices`` devices."""
    d, rows, events = num_devices, max(m, 1), n + m + 2 * num_devices + 8
    return QueueWorkspace(
        op_i=np.zeros((n, 6), np.int64), op_f=np.zeros((n, 4)), ready=np.zeros(n, np.int64),
        frees=np.zeros((n, 2)), row_i=np.zeros((rows, 5), np.int64), row_f=np.zeros((rows, 3)),
        chan_key=np.zeros(rows, np.int64), chan_t=np.zeros(rows), ev_t=np.zeros(events),
        ev_k=np.zeros(events, np.int64), mem_log=_mem_log(n, m, record_memory),
        dev_i=np.zeros((d + 1, 12), np.int64), dev_f=np.zeros((d, 11)),
        counts=np.zeros(N_COUNTS, np.int64))


class WCInputs(NamedTuple):
    """What the ``work_conserving`` kernel reads of one graph, cluster and option set."""

    num_devices: int
    out_ptr: np.ndarray  # out-edges of op i, in the source's order: out_edge[out_ptr[i]:out_ptr[i + 1]]
    out_edge: np.ndarray
    out_dst: np.ndarray  # the consumer of each of them (edge_dst[out_edge]: read in order, not at random)
    pred_ptr: np.ndarray  # in-edges of op i: pred_edge[pred_ptr[i]:pred_ptr[i + 1]]
    pred_edge: np.ndarray
    pred_src: np.ndarray  # the producer of each of them (edge_src[pred_edge])
    edge_bytes: np.ndarray
    edge_given: np.ndarray  # given (or measured-curve) time per edge; NaN: latency + bytes / bandwidth
    bandwidth: np.ndarray
    latency: np.ndarray
    out_bytes: np.ndarray
    persistent: np.ndarray
    temp: np.ndarray
    need: np.ndarray  # temp + output bytes per op (memory-aware service)
    capacity: np.ndarray  # memory per device
    choose: int  # FIFO | PRIORITY
    contention: int  # NO_CONTENTION | PER_DEVICE | PER_LINK
    memory_aware: bool
    overhead: float  # dispatch_s
    sender_copies: int  # NO_SENDER_COPIES | SENDER_COPIES | SHARED_BUS
    bus_capacity: float


class WCWorkspace(NamedTuple):
    """Every array the ``work_conserving`` kernel writes (see the module docstring)."""

    op_i: np.ndarray
    op_f: np.ndarray
    ready: np.ndarray
    row_i: np.ndarray
    row_f: np.ndarray
    row_of_edge: np.ndarray
    row_next: np.ndarray
    chan: np.ndarray
    ev_t: np.ndarray
    ev_k: np.ndarray
    mem_log: np.ndarray
    dev_i: np.ndarray
    dev_f: np.ndarray
    counts: np.ndarray


def wc_workspace(n: int, m: int, num_devices: int, record_memory: bool, shared_bus: bool = False) -> WCWorkspace:
    """A :class:`WCWorkspace`; with ``shared_bus`` room for every rescheduled copy end."""
    d, rows = num_devices, max(m, 1)
    # events: ops, transfers, one DEVICE_FREE per device; a copy end is pushed again whenever a copy on
    # another device starts or ends (shared bus)
    events = n + m + d + 8 + (2 * d * m if shared_bus else 0)
    return WCWorkspace(
        op_i=np.zeros((n, 3), np.int64), op_f=np.zeros((n, 2)), ready=np.zeros(n, np.int64),
        row_i=np.zeros((rows, 4), np.int64), row_f=np.zeros((rows, 4)), row_of_edge=np.zeros(rows, np.int64),
        row_next=np.zeros(rows, np.int64),
        chan=np.zeros((d * d, 3), np.int64), ev_t=np.zeros(events), ev_k=np.zeros(events, np.int64),
        mem_log=_mem_log(n, m, record_memory),
        dev_i=np.zeros((d, 9), np.int64), dev_f=np.zeros((d, 8)),
        counts=np.zeros(N_COUNTS, np.int64))
