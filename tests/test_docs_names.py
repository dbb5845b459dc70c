"""Every file and symbol a document names exists.

Checked: README.md, CONTRIBUTING.md and every ``docs/**/*.md`` except the lab notes in ``docs/lab/``: a lab note
is a dated record, not updated when the code changes, so it may name a file that was moved or removed since.
Inline code only (fenced blocks hold commands and code, not names):

* a **repository path** — a code span without spaces whose first part is a folder or file at the repository's
  top (``engine/sim/simulator.py``, ``runs/``, ``Makefile``) — must exist. ``path:LINE`` and ``path:FIRST-LAST``
  must be within the file, ``path::test_name`` must name a test of it, ``{a,b}`` stands for each of ``a`` and
  ``b``, a ``*`` must match at least one file, a trailing ``…`` names the folder before it. A span with a
  placeholder (``<run_id>``, ``YYYY``) is a pattern, not a name, and is skipped.
* a **dotted symbol** of placelab's packages (``engine.sim.simulator.simulate``, ``policies.…``, ``dashboard.…``,
  ``placelab.…``, optionally followed by its call ``(…)``) must import and resolve attribute by attribute.
"""

from __future__ import annotations

import importlib
import itertools
import re
from pathlib import Path

import pytest
from test_docs_links import _FENCE

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md",
        *sorted(p for p in (ROOT / "docs").rglob("*.md") if "lab" not in p.relative_to(ROOT / "docs").parts[:1])]
#: The repository's top: its folders and files, less the ignored ones (virtualenv, caches) and git's own.
TOP = {p.name for p in ROOT.iterdir() if not (p.name.startswith(".") and p.name != ".ci")
       and not p.name.endswith((".egg-info", "_cache"))}
PACKAGES = ("engine", "policies", "dashboard", "placelab")

_SPAN = re.compile(r"(`+)((?:(?!\1).)+?)\1", re.S)
_PLACEHOLDER = re.compile(r"[<>]|YYYY|\.\.\.")
_SUFFIX = re.compile(r"(?:::(?P<test>\w+)|:(?P<first>\d+)(?:-(?P<last>\d+))?)$")
_SYMBOL = re.compile(rf"((?:{'|'.join(PACKAGES)})(?:\.[A-Za-z_]\w*)+)(?:\(.*\))?", re.S)


def spans(path: Path) -> list[str]:
    """The inline code spans of one Markdown file, fenced blocks left out."""
    return [m.group(2).strip() for m in _SPAN.finditer(_FENCE.sub("", path.read_text(encoding="utf-8")))]


def named_paths(path: Path) -> list[str]:
    """The repository paths the file names (as written, suffixes included)."""
    return [s for s in spans(path) if not re.search(r"\s", s) and s.split("/")[0].split(":")[0] in TOP
            and ("/" in s or s in TOP) and not _PLACEHOLDER.search(s)]


def named_symbols(path: Path) -> list[str]:
    """The dotted symbols of placelab's packages the file names, their calls left off."""
    return [m.group(1) for s in spans(path) if (m := _SYMBOL.fullmatch(s))]


def _expand(name: str) -> list[str]:
    """``a/{b,c}/d`` as ``a/b/d`` and ``a/c/d`` (shell brace expansion, any number of groups)."""
    parts = re.split(r"\{([^{}]*)\}", name)
    choices = [[p] if i % 2 == 0 else p.split(",") for i, p in enumerate(parts)]
    return ["".join(c) for c in itertools.product(*choices)]


def missing_path(name: str) -> str | None:
    """Why ``name`` does not exist, or None when it does."""
    m = _SUFFIX.search(name)
    for path in _expand(name[:m.start()] if m else name):
        path = path.removesuffix("…")
        found = sorted(ROOT.glob(path)) if "*" in path else [ROOT / path] if (ROOT / path).exists() else []
        if not found:
            return f"{path}: no such file"
        if m and m.group("test"):
            if not re.search(rf"^\s*def {m.group('test')}\(", found[0].read_text(encoding="utf-8"), flags=re.M):
                return f"{path}: no test {m.group('test')}"
        elif m:
            lines = len(found[0].read_text(encoding="utf-8").splitlines())
            if int(m.group("last") or m.group("first")) > lines:
                return f"{path} has {lines} lines, not {m.group('last') or m.group('first')}"
    return None


def unresolved(symbol: str) -> str | None:
    """Why ``symbol`` does not resolve, or None when it does: the longest importable module, then attributes."""
    parts = symbol.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for j, attr in enumerate(parts[i:], start=i):
            if not hasattr(obj, attr):
                return f"{'.'.join(parts[:j])} has no {attr}"
            obj = getattr(obj, attr)
        return None
    return f"no module {parts[0]}"


def test_parser_finds_names_and_skips_patterns(tmp_path):
    md = tmp_path / "x.md"
    md.write_text("`engine/sim/simulator.py:12` `runs/<run_id>/` `policies/{base,trivial}.py` `placelab train -g x`\n"
                  "`engine.sim.simulator.simulate(g, c)` `placelab.graph/1` `docs/lab/YYYY-MM-DD-topic.md` `x.py`\n"
                  "```\n`engine/nothing.py`\n```\n", encoding="utf-8")
    assert named_paths(md) == ["engine/sim/simulator.py:12", "policies/{base,trivial}.py"]
    assert named_symbols(md) == ["engine.sim.simulator.simulate"]
    assert _expand("a/{b,c}/d{1,2}") == ["a/b/d1", "a/b/d2", "a/c/d1", "a/c/d2"]


def test_missing_names_are_caught():
    assert missing_path("engine/sim/simulator.py") is None and missing_path("policies/{base,trivial}.py") is None
    assert missing_path("engine/nothing.py") == "engine/nothing.py: no such file"
    assert missing_path("policies/{base,nothing}.py") == "policies/nothing.py: no such file"
    assert missing_path("engine/sim/_kernel_*.py") is None and missing_path("engine/_nothing_*.py") is not None
    assert missing_path("engine/errors.py:1-2") is None
    assert missing_path("engine/errors.py:100000").startswith("engine/errors.py has ")
    assert missing_path("tests/test_docs_names.py::test_missing_names_are_caught") is None
    assert missing_path("tests/test_docs_names.py::test_nothing") == "tests/test_docs_names.py: no test test_nothing"
    assert unresolved("engine.sim.simulator.simulate") is None
    assert unresolved("engine.sim.simulator.simulates") == "engine.sim.simulator has no simulates"
    assert unresolved("engine.nothing.x") == "engine has no nothing"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_named_files_exist(doc):
    broken = [f"`{name}` ({why})" for name in named_paths(doc) if (why := missing_path(name))]
    assert not broken, f"{doc.relative_to(ROOT)} names " + "; ".join(broken)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_named_symbols_resolve(doc):
    broken = [f"`{name}` ({why})" for name in named_symbols(doc) if (why := unresolved(name))]
    assert not broken, f"{doc.relative_to(ROOT)} names " + "; ".join(broken)
