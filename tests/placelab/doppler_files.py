"""Synthetic graph files in the layout of the DOPPLER authors' published ones (never their files).

Each file has 14 nodes, 2 of them inputs (line 2), so nodes 0..11; entries separated by ", " with a
trailing separator, as published. The graph: shards 0..3 (cost ``c``, no predecessor in the file),
formations 10 <- 0, 1 and 11 <- 2, 3 (cost 1e8), shards 4, 5 <- 10 and 6, 7 <- 11 (cost ``c``),
formations 8 <- 4, 5 and 9 <- 6, 7. comm_cost = 4 × comp_cost, as in every published file.

The ``gdp_`` twin types every node (``einsummable`` / ``formation``); the file "as published" has no
types and, when ``glued``, the corrupted entry of three published files: line 4 starts ``10,0`` where
``10, 10`` was meant, so the authors' reader makes edge #1 ``1 -> 0`` instead of ``1 -> 10``.
"""

from __future__ import annotations

from pathlib import Path

from placelab.reproduce.doppler import AUTHORS_FILES

SRC = "0, 1, 2, 3, 4, 5, 6, 7, 10, 10, 11, 11, "
DST = "10, 10, 11, 11, 8, 8, 9, 9, 4, 5, 6, 7, "
#: shard cost of each row's graph (so that the four files differ)
COSTS = {"CHAINMM": 10**12, "FFNN": 2 * 10**12, "LLAMA-BLOCK": 3 * 10**12, "LLAMA-LAYER": 4 * 10**12}


def published_text(c: int = 10**12, *, typed: bool, glued: bool = False) -> str:
    """One file's text (see the module docstring)."""
    costs = [c] * 8 + [10**8] * 4
    kinds = ["einsummable"] * 8 + ["formation"] * 4
    nodes = [f"{x},{4 * x}" + (f",{k}" if typed else "") for x, k in zip(costs, kinds, strict=True)]
    dst = DST.replace("10, 10, ", "10,0, ", 1) if glued else DST
    return "\n".join(["14", "0, 1, ", SRC, dst, *nodes]) + "\n"


def write_authors_dir(root: Path, rows=tuple(COSTS), twins: bool = True, plain: bool = True) -> dict[str, bytes]:
    """Write the files of ``rows`` under their published names (the gdp_ twins and/or the files as published,
    three of the four with the glued entry, as published); returns name → the bytes written."""
    root.mkdir(parents=True, exist_ok=True)
    out = {}
    for row in rows:
        twin, as_published = AUTHORS_FILES[row]
        texts = {twin: published_text(COSTS[row], typed=True)} if twins else {}
        if plain:
            texts[as_published] = published_text(COSTS[row], typed=False, glued=row != "FFNN")
        for name, text in texts.items():
            (root / name).write_bytes(text.encode())
            out[name] = text.encode()
    return out
