"""The house limits (CONTRIBUTING.md, "Modules"): no product file over 500 lines, no function over 120.

Product code is every module of the four packages; tests, benchmarks and the bundled data are not.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "policies", "placelab", "dashboard")
MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 120


def product_files() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py"))


def long_functions(source: str, limit: int) -> list[tuple[str, int]]:
    """``(name, lines)`` of every function or method of ``source`` longer than ``limit`` lines."""
    return [(node.name, node.end_lineno - node.lineno + 1) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno - node.lineno + 1 > limit]


def test_the_limits_are_checked_on_every_product_module():
    assert len(product_files()) > 100  # the walk finds the packages


@pytest.mark.parametrize("path", product_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_product_file_or_function_is_over_the_limits(path):
    source = path.read_text(encoding="utf-8")
    assert source.count("\n") <= MAX_FILE_LINES, f"{path.name} has {source.count(chr(10))} lines"
    assert long_functions(source, MAX_FUNCTION_LINES) == []


def test_a_long_function_is_found():
    body = "\n".join(f"    x{i} = {i}" for i in range(130))
    assert long_functions(f"def f():\n{body}\n\ndef g():\n    return 1\n", MAX_FUNCTION_LINES) == [("f", 131)]
