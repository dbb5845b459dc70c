"""DOPPLER's plain-text graph format (Yao et al. 2025), as described in the data README.

Layout
------
Line 1: the total number of nodes T, input nodes included. Line 2: the ids of the input
nodes (only their count k matters); the graph's own nodes are the N = T − k others, numbered
0..N−1. Line 3: edge sources; line 4: edge destinations (paired by position, ids 0..N−1).
Then N lines, one per node in id order: ``comp_cost,comm_cost[,op_type]``. Numbers are
separated by commas and/or blanks; trailing separators are allowed; blank lines after line 4
are skipped.

Unit mapping (``reading="authors"``, the default)
-------------------------------------------------
In the published files both numbers are abstract costs of the authors' simulator, not FLOPs
and bytes: ``comm_cost`` is exactly 4 × ``comp_cost`` on every node, and the authors'
simulator divides both by :data:`AUTHORS_DIVISOR` (1e10) to get a time. So:

* op compute time = ``comp_cost / 1e10 × unit_s`` on every device kind;
* a transfer of the op's output to another device takes ``comm_cost / 1e10 × unit_s``,
  whatever the link: every out-edge carries it as ``transfer_s``;
* no memory is invented: every byte count is 0 and the graph says ``memory_known=False``,
  so no placement of such a file is OOM.

:data:`AUTHORS_UNIT_S` = 1e-3: one unit of the authors' time is taken to be a millisecond.
The paper reports every execution time in milliseconds (§6, Tables 2–8), and 1e10 work
units per millisecond is 10 TFLOP/s if ``comp_cost`` counts FLOPs, the FP32 peak of the
P100s it ran on (9.3–10.6 TFLOP/s, NVIDIA P100 datasheet); e.g. FFNN's first matmul
(2 × 2^15 × 2^5 × 2^16 FLOP, App. D.2) then takes 13.7 ms, of the order of the 50 ms the
paper measures for the whole FFNN (Table 1). Pass ``unit_s`` to use another scale.

The App. E reading (``reading="app_e"``), for files that do carry FLOPs and bytes
------------------------------------------------------------------------------------
* ``comp_cost`` is a FLOP count (App. E: "the floating-point operations ... of v as the
  computation cost"): compute seconds = ``comp_cost / flops_per_s``, by default
  :data:`REFERENCE_FLOPS` = 1e12 FLOP/s.
* ``comm_cost`` is the output tensor's bytes times the communication factor 4 (App. E), so
  ``output_bytes = comm_cost / COMM_FACTOR``; every edge out of a node carries them, and
  transfers take latency + bytes / bandwidth of the cluster's links.

Either way ``op_type`` (einsummable, formation, ...) becomes the op's type; op names are the
ids; edges keep the order of lines 3–4 (``CompGraph.edge_rank``), the order in which the
authors' simulator delivers an op's outputs.

Every malformed input (a bad number, an out-of-range id, edge lists of different lengths, a
wrong number of node lines, a cycle) raises one :class:`~engine.errors.GraphError` sentence.
An entry glued by a bare comma (``16,6``) in a line whose other entries are separated by a comma and a
blank — the one corrupted entry of three of the authors' published files — is read as the authors' reader
reads it (two ids) with one warning (``UserWarning``) naming the line and the edges.
"""

from __future__ import annotations

import math
import os
import re
import warnings

import numpy as np

from engine.errors import GraphError, quote
from engine.graph.compgraph import CompGraph
from engine.graph.formats import register_format
from engine.jsonio import read_file_bytes

__all__ = [
    "AUTHORS_DIVISOR",
    "AUTHORS_UNIT_S",
    "COMM_FACTOR",
    "READINGS",
    "REFERENCE_FLOPS",
    "graph_from_doppler_text",
    "load_doppler_text",
]

#: The authors' simulator divides comp_cost and comm_cost by this to get its time unit.
AUTHORS_DIVISOR = 1e10
#: Seconds per unit of the authors' time (a millisecond; see the module docstring).
AUTHORS_UNIT_S = 1e-3
#: How the two numbers are read: as the authors' simulator costs, or as App. E's FLOPs and bytes.
READINGS = ("authors", "app_e")
#: FLOP/s that turns ``comp_cost`` into seconds in the App. E reading.
REFERENCE_FLOPS = 1e12
#: DOPPLER App. E: communication cost = output bytes × 4.
COMM_FACTOR = 4.0

_SEP = re.compile(r"[,\s]+")
_INT_LINE = re.compile(rb"^[0-9,\s]*$")
#: A cost as detection sees it: a number, or ``nan`` / ``inf`` (refused by the parser, which names the line).
_NUM = rb"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|(?i:nan|inf(?:inity)?))"
_NODE_CHARS = re.compile(rb"^[\w.,\s+\-]*$")
_NODE_LINE = re.compile(rb"^\s*" + _NUM + rb"[,\s]+" + _NUM + rb"(?:[,\s]+[A-Za-z_][\w\-]*)?[,\s]*$")


def _tokens(line: str) -> list[str]:
    return [t for t in _SEP.split(line.strip()) if t]


def _ints(line: str, lineno: int, what: str) -> list[int]:
    out = []
    for t in _tokens(line):
        try:
            out.append(int(t))
        except ValueError:
            raise GraphError(f"line {lineno}: {what} must be integers, got {t[:40]!r}") from None
    return out


def _warn_glued_entries(line: str, lineno: int, name: str, src: list[int], dst: list[int]) -> None:
    """Warn (one line) about an entry like ``16,6`` in an id line whose other entries are separated by a
    comma *and a blank*: a corrupted entry (three of the authors' published files have one, in line 4:
    ``16,6``, ``4,7`` and ``95,38`` where their ``gdp_`` twins have ``16, 16``, ``4, 18`` and ``95, 97``).
    It is read as the authors' reader reads it — every run of digits is
    an id, so ``16,6`` is the two ids 16 and 6 — and, as there, the graph gets an edge the file's
    author did not mean; the warning names the edges read from it."""
    parts = re.split(r",[ \t]+", line.strip().rstrip(",").strip())
    glued = [k for k, part in enumerate(parts) if "," in part]
    if not glued or len(glued) == len(parts):
        return  # no entry glued, or the line separates every entry with a bare comma (a layout of its own)
    entry = parts[glued[0]]
    first, count = sum(len(_tokens(part)) for part in parts[:glued[0]]), len(_tokens(entry))
    read = f"{count} input ids" if lineno == 2 else "edges " + ", ".join(
        f"#{e} {src[e]} -> {dst[e]}" for e in range(first, min(first + count, len(src))))
    more = f" (and {len(glued) - 1} more such entries)" if len(glued) > 1 else ""
    warnings.warn(f"{name}: line {lineno}: entry {entry[:40]!r} has no blank after its comma, unlike the line's other "
                  f"entries: a corrupted entry{more}, read as the DOPPLER authors' reader does: {read}",
                  UserWarning, stacklevel=3)


def graph_from_doppler_text(text: str, *, name: str = "doppler", reading: str = "authors",
                            unit_s: float = AUTHORS_UNIT_S, flops_per_s: float = REFERENCE_FLOPS) -> CompGraph:
    """Parse DOPPLER's text format into a :class:`CompGraph` (units in the module docstring).

    Parameters
    ----------
    reading : {"authors", "app_e"}
        ``authors``: both costs are times of the authors' simulator (÷ 1e10 × ``unit_s``
        seconds; transfer times on the edges, no memory). ``app_e``: FLOPs at
        ``flops_per_s`` and comm_cost = 4 × output bytes.
    unit_s : float
        Seconds per unit of the authors' time (``authors`` reading).
    flops_per_s : float
        Device throughput (``app_e`` reading).

    Raises
    ------
    GraphError
        For every malformed input; the message names the line, the node or the edge.
    """
    if reading not in READINGS:
        raise GraphError(f"DOPPLER text reading must be one of {', '.join(READINGS)}, got {quote(reading)}")
    for what, v in (("unit_s", unit_s), ("flops_per_s", flops_per_s)):
        if not (isinstance(v, int | float) and math.isfinite(v) and v > 0):
            raise GraphError(f"DOPPLER text import: {what} must be a finite number > 0, got {quote(v)}")
    lines = text.split("\n")
    if len(lines) < 4:
        raise GraphError(f"{name}: expected at least 4 lines (node count, input ids, edge sources, "
                         f"edge destinations), found {len(lines)}")
    head = _tokens(lines[0])
    if len(head) != 1:
        raise GraphError(f"{name}: line 1 must hold only the number of nodes")
    try:
        total = int(head[0])
    except ValueError:
        raise GraphError(f"{name}: line 1 must be the number of nodes, got {head[0][:40]!r}") from None
    inputs = len(_ints(lines[1], 2, "input node ids"))
    n = total - inputs
    if n <= 0:
        raise GraphError(f"{name}: line 1 says {total} nodes and line 2 lists {inputs} inputs, "
                         "which leaves no node to place")
    src = _ints(lines[2], 3, "edge sources")
    dst = _ints(lines[3], 4, "edge destinations")
    if len(src) != len(dst):
        raise GraphError(f"{name}: line 3 has {len(src)} edge sources but line 4 has {len(dst)} destinations")
    for e, (s, d) in enumerate(zip(src, dst, strict=True)):
        if not (0 <= s < n and 0 <= d < n):
            raise GraphError(f"{name}: edge #{e} ({s} -> {d}) refers to a node id outside 0..{n - 1}")
    for lineno in (2, 3, 4):
        _warn_glued_entries(lines[lineno - 1], lineno, name, src, dst)
    body = [(i + 5, ln) for i, ln in enumerate(lines[4:]) if ln.strip()]
    if len(body) != n:
        raise GraphError(f"{name}: expected {n} node lines ({total} nodes minus {inputs} inputs), "
                         f"found {len(body)}")
    comp = np.empty(n)
    comm = np.empty(n)
    types = [""] * n
    for i, (lineno, ln) in enumerate(body):
        toks = _tokens(ln)
        if len(toks) not in (2, 3):
            raise GraphError(f"{name}: line {lineno} (node {i}) must be 'comp_cost,comm_cost[,op_type]'")
        for arr, t, what in ((comp, toks[0], "comp_cost"), (comm, toks[1], "comm_cost")):
            try:
                v = float(t)
            except ValueError:
                raise GraphError(f"{name}: line {lineno} (node {i}): {what} must be a number, "
                                 f"got {t[:40]!r}") from None
            if not (math.isfinite(v) and v >= 0):
                raise GraphError(f"{name}: line {lineno} (node {i}): {what} must be a finite number >= 0, got "
                                 f"{quote(t)}")
            arr[i] = v
        if len(toks) == 3:
            types[i] = toks[2]
    s_arr = np.asarray(src, dtype=np.int64)
    d_arr = np.asarray(dst, dtype=np.int64)
    names = [str(i) for i in range(n)]
    if reading == "authors":
        scale = unit_s / AUTHORS_DIVISOR
        return CompGraph(name, names, compute_any=comp * scale, edge_src=s_arr, edge_dst=d_arr,
                         edge_bytes=np.zeros(len(src)), edge_transfer_s=(comm * scale)[s_arr], op_types=types,
                         memory_known=False)
    out_bytes = comm / COMM_FACTOR
    return CompGraph(name, names, compute_any=comp / flops_per_s, output_bytes=out_bytes,
                     edge_src=s_arr, edge_dst=d_arr, edge_bytes=out_bytes[s_arr], op_types=types)


def load_doppler_text(path: str | os.PathLike, *, reading: str = "authors", unit_s: float = AUTHORS_UNIT_S,
                      flops_per_s: float = REFERENCE_FLOPS) -> CompGraph:
    """Load a DOPPLER text graph file; the graph is named after the file.

    The options are those of :func:`graph_from_doppler_text`; from the CLI they follow the
    path as a query, ``FILE?unit_s=1e-3`` or ``FILE?reading=app_e`` (:func:`engine.specs.load_graph`).
    """
    p = os.fspath(path)
    base = quote(os.path.basename(p), bare=True)
    data = read_file_bytes(p, error=GraphError)
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise GraphError(f"{base} is not a DOPPLER text graph (it is not plain ASCII text)") from None
    return graph_from_doppler_text(text, name=os.path.splitext(base)[0] or base, reading=reading, unit_s=unit_s,
                                   flops_per_s=flops_per_s)


def _is_doppler_text(head: bytes) -> bool:
    lines = head.split(b"\n")
    if len(lines) < 2 or not re.fullmatch(rb"\s*\d+\s*", lines[0]):
        return False
    last = len(lines) - 1  # the head may cut its last line short: only its characters are checked
    for k, ln in enumerate(lines[1:], start=1):
        if k <= 3:
            ok = _INT_LINE.match(ln) is not None
        elif k == last:
            ok = _NODE_CHARS.match(ln) is not None
        else:
            ok = not ln.strip() or _NODE_LINE.match(ln) is not None
        if not ok:
            return False
    return True


register_format("doppler-text", "DOPPLER text graph (costs ÷ 1e10 in ms as the authors' simulator; "
                "comm_cost is a transfer time; no memory sizes)",
                _is_doppler_text, load_doppler_text)
