"""The source tree's shape, read from the files alone: module sizes, function lengths, the
import graph (cycles, and imports from the core up to an optional app).

Run as a script for the counts: `python -m tests.unit.layout`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE_PACKAGES = ("scheduling", "purchases", "trainings", "project", "bench")
# Apps a host may leave out: the core (the rest of `scheduling`) must never import them.
# scheduling.jobs.backends (the django.tasks backend) stores tasks as keyed jobs: it needs jobs.
OPTIONAL_APPS = (
    "scheduling.recurring",
    "scheduling.jobs",
    "scheduling.jobs.backends",
    "purchases",
    "trainings",
)
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 40


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    top_level: bool  # runs when the module is imported (not inside a function)


def source_files() -> Iterator[Path]:
    for package in SOURCE_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def line_count(path: Path) -> int:
    return len(path.read_text().splitlines())


def long_functions(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append((f"{module_name(path)}.{node.name}", length))
    return found


def imports(path: Path) -> Iterator[Import]:
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    deferred = {id(n) for fn in ast.walk(tree) if _is_function(fn) for n in ast.walk(fn)}
    deferred |= {id(n) for block in tree.body if _is_type_checking(block) for n in ast.walk(block)}
    for node in ast.walk(tree):
        for target in _targets(node, package):
            yield Import(name, target, id(node) not in deferred)


def _is_function(node: ast.AST) -> bool:
    return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)


def _is_type_checking(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _targets(node: ast.AST, package: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parent = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join([*parent, base] if base else parent)
        return [base]
    return []


def is_optional(module: str) -> bool:
    return any(module == app or module.startswith(f"{app}.") for app in OPTIONAL_APPS)


def is_core(module: str) -> bool:
    return (module == "scheduling" or module.startswith("scheduling.")) and not is_optional(module)


def core_to_optional() -> list[Import]:
    return [
        found
        for path in source_files()
        for found in imports(path)
        if is_core(found.source) and is_optional(found.target)
    ]


def import_cycles() -> list[list[str]]:
    """Cycles among the imports that run at import time (Tarjan's strongly connected parts)."""
    modules = {module_name(path): path for path in source_files()}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for found in imports(path):
            target = _known(found.target, modules)
            if found.top_level and target and target != name:
                graph[name].add(target)
    return [sorted(part) for part in _components(graph) if len(part) > 1]


def _known(target: str, modules: dict[str, Path]) -> str | None:
    while target and target not in modules:
        target = target.rpartition(".")[0]
    return target or None


def _components(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    parts: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            part = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                part.append(top)
                if top == node:
                    break
            parts.append(part)

    for node in graph:
        if node not in index:
            visit(node)
    return parts


def report() -> None:
    big = [
        (module_name(p), line_count(p)) for p in source_files() if line_count(p) > MAX_MODULE_LINES
    ]
    longs = [found for path in source_files() for found in long_functions(path)]
    print(f"modules over {MAX_MODULE_LINES} lines: {len(big)}", *big, sep="\n  ")
    print(f"functions over {MAX_FUNCTION_LINES} lines: {len(longs)}", *longs, sep="\n  ")
    print(f"import cycles: {len(import_cycles())}", *import_cycles(), sep="\n  ")
    ups = core_to_optional()
    print(f"imports from the core up to an optional app: {len(ups)}", *ups, sep="\n  ")


if __name__ == "__main__":
    report()
