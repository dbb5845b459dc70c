"""The app's layout (issue #36, step 5): ``app_pages/`` holds the pages only, thin; data helpers and the report
import no streamlit; every session-state key is named in ``dashboard/state.py``."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

DASHBOARD = Path(__file__).resolve().parents[2] / "dashboard"
PAGES = {"home", "graphs", "place", "train", "compare", "runs", "papers", "fidelity"}
MAX_PAGE_LINES = 150


def test_app_pages_holds_the_eight_pages_only_each_thin():
    modules = {p.stem for p in (DASHBOARD / "app_pages").glob("*.py") if p.stem != "__init__"}
    assert modules == PAGES
    for name in sorted(PAGES):
        source = (DASHBOARD / "app_pages" / f"{name}.py").read_text(encoding="utf-8")
        assert source.count("\n") <= MAX_PAGE_LINES, f"app_pages/{name}.py has {source.count(chr(10))} lines"
        tree = ast.parse(source)
        assert any(isinstance(n, ast.FunctionDef) and n.name == "page" for n in tree.body), name
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert not {m for m in imported if m.startswith("dashboard.app_pages")}, f"{name} imports another page"


@pytest.mark.parametrize(("package", "modules"), [("data", 8), ("report", 6)])
def test_no_data_or_report_module_imports_streamlit(package, modules):
    """The data helpers, and the figures of runs and the report that ``placelab plot`` and ``placelab report``
    call from the command line."""
    names = sorted(f"dashboard.{package}.{m.name}" for m in pkgutil.iter_modules([str(DASHBOARD / package)]))
    assert len(names) >= modules
    code = ("import sys\n" + "".join(f"import {n}\n" for n in names)
            + "print(sorted(m for m in sys.modules if m == 'streamlit' or m.startswith('streamlit.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=DASHBOARD.parent, timeout=600)
    assert out.stdout.strip() == "[]", out.stdout[:500]


def _literal(node: ast.AST | None) -> bool:
    """A key spelled in place: a string or an f-string."""
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def _session_state(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "session_state") or (
        isinstance(node, ast.Name) and node.id == "session_state")


def raw_keys(source: str) -> list[tuple[int, str]]:
    """``(line, what)`` for each session-state key spelled as a string in ``source``: ``session_state[...]``,
    ``session_state.get/pop/setdefault(...)``, ``... in session_state`` and a widget's ``key=``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and _session_state(node.value) and _literal(node.slice):
            found.append((node.lineno, "session_state[...]"))
        elif isinstance(node, ast.Call):
            func = node.func
            if (isinstance(func, ast.Attribute) and func.attr in ("get", "pop", "setdefault", "__setitem__")
                    and _session_state(func.value) and node.args and _literal(node.args[0])):
                found.append((node.lineno, f"session_state.{func.attr}(...)"))
            found += [(node.lineno, "key=") for kw in node.keywords if kw.arg == "key" and _literal(kw.value)]
        elif isinstance(node, ast.Compare) and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops) \
                and _session_state(node.comparators[-1]) and _literal(node.left):
            found.append((node.lineno, "in session_state"))
    return found


def test_raw_keys_are_found():
    source = ('st.session_state["a"] = 1\nst.session_state.get(f"{k}_b")\nst.button("x", key="c")\n'
              '"d" in st.session_state\nst.session_state.pop("e", None)\nst.session_state[keys.A]\n'
              'st.button("y", key=keys.part(k, "z"))\n')
    assert [line for line, _ in raw_keys(source)] == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("path", sorted(p for p in DASHBOARD.rglob("*.py") if p.name != "state.py"),
                         ids=lambda p: str(p.relative_to(DASHBOARD)))
def test_every_session_state_key_is_named_in_the_state_module(path):
    assert raw_keys(path.read_text(encoding="utf-8")) == []
