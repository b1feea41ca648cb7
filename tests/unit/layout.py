"""What the import contracts (`lint-imports`, [tool.importlinter] in pyproject.toml) cannot say
about the source tree: how long its modules and functions are."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE_PACKAGES = ("scheduling", "purchases", "trainings", "project", "bench")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 40


def source_files(root: Path = ROOT) -> Iterator[Path]:
    for package in SOURCE_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def line_count(path: Path) -> int:
    return len(path.read_text().splitlines())


def long_functions(path: Path, root: Path = ROOT) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append((f"{module_name(path, root)}.{node.name}", length))
    return found
