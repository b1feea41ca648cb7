"""The source tree's shape, read from the files alone: module sizes, function lengths, and the
import graph: circles at every folder level, imports that run back up the framework's wings, and
imports from the core up to an optional app.

Every import counts, wherever it sits: at module level, inside a function, or under
`if TYPE_CHECKING:`. A deferred import still ties two modules together; it only hides the knot
until something calls the function (or until a type checker reads the file).

Circles are drawn the way a structure drawing shows them: for each folder, its direct children
(files and sub-folders) are the nodes, and child A -> child B when any module under A imports any
module under B. Any strongly connected part of two or more nodes is a circle. A package's
`__init__.py` belongs to its folder: it is that folder's node one level up.

Every function takes a `Tree` (a root folder, the packages under it and the rules that hold
there), so the checker can be pointed at a small tree in a test. Run as a script for the counts
on the real tree: `python -m tests.unit.layout`.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

from scheduling import DEPRECATED

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
# The framework's wings, lowest first: a wing imports only the wings below it. Everything else
# (the facade, apps, models and management on top, the optional apps, the domain apps) stands
# above every wing, so a wing importing it runs back up too.
WINGS = ("scheduling.time", "scheduling.rows", "scheduling.delivery", "scheduling.ops")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 40

# Where an import sits in its module.
MODULE = "module"
FUNCTION = "function"
TYPE_CHECKING = "type-checking"


@dataclass(frozen=True)
class Tree:
    """A root folder, the packages read under it, and the rules that hold among them."""

    root: Path = ROOT
    packages: tuple[str, ...] = SOURCE_PACKAGES
    optional_apps: tuple[str, ...] = OPTIONAL_APPS
    wings: tuple[str, ...] = WINGS
    framework: str = "scheduling"  # the core is this package less its optional apps
    former_paths: tuple[str, ...] = ()


REAL = Tree(former_paths=tuple(DEPRECATED))


@dataclass(frozen=True)
class Import:
    source: str
    target: str  # the module reached: the submodule when the name is one, else the package
    where: str = MODULE  # MODULE, FUNCTION or TYPE_CHECKING

    @property
    def top_level(self) -> bool:
        """Runs when the module is imported (neither in a function nor for type checkers)."""
        return self.where == MODULE

    def __str__(self) -> str:
        return f"{self.source} -> {self.target} ({self.where})"


@dataclass(frozen=True)
class Circle:
    folder: str  # "scheduling/time", or "." for the root
    members: tuple[str, ...]  # the folder's children in the circle: "store.py", "rows/"
    imports: tuple[Import, ...]  # the module imports that draw it

    def __str__(self) -> str:
        lines = [f"{self.folder}: {' <-> '.join(self.members)}"]
        return "\n    ".join([*lines, *map(str, self.imports)])


def source_files(tree: Tree = REAL) -> Iterator[Path]:
    for package in tree.packages:
        for path in sorted((tree.root / package).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(tree: Tree = REAL) -> dict[str, Path]:
    return {module_name(path, tree.root): path for path in source_files(tree)}


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


# -- reading imports -------------------------------------------------------------------------


def imports(path: Path, known: Collection[str], root: Path = ROOT) -> Iterator[Import]:
    """The imports in one file that reach a module in `known`, each resolved to that module."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    for node, where in _placed(tree):
        for target in _targets(node, package):
            reached = _known(target, known)
            if reached and reached != name:
                yield Import(name, reached, where)


def all_imports(tree: Tree = REAL) -> list[Import]:
    """Every import among the tree's modules, once per (source, target, where)."""
    files = modules(tree)
    found = {found for path in files.values() for found in imports(path, files, tree.root)}
    return sorted(found, key=lambda found: (found.source, found.target, found.where))


def _placed(tree: ast.Module) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    """Each import statement with where it sits: MODULE, FUNCTION or TYPE_CHECKING."""
    pending: list[tuple[ast.AST, str]] = [(tree, MODULE)]
    while pending:
        node, where = pending.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, where
            continue
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            where = FUNCTION
        if where == MODULE and _is_type_checking(node):
            assert isinstance(node, ast.If)
            pending.extend((statement, TYPE_CHECKING) for statement in node.body)
            pending.extend((statement, where) for statement in node.orelse)  # `else:` runs
            continue
        pending.extend((child, where) for child in ast.iter_child_nodes(node))


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _targets(node: ast.AST, package: str) -> list[str]:
    """Dotted names an import statement may reach; `from p import n` gives `p.n` per name."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parts = package.split(".")
            parent = parts[: len(parts) - node.level + 1]
            base = ".".join([*parent, base] if base else parent)
        return [f"{base}.{alias.name}" for alias in node.names]
    return []


def _known(target: str, known: Collection[str]) -> str | None:
    """The longest known module `target` names: `p.submodule` if it is one, else `p`."""
    while target and target not in known:
        target = target.rpartition(".")[0]
    return target or None


# -- rules -------------------------------------------------------------------------------------


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")


def is_optional(module: str, tree: Tree = REAL) -> bool:
    return any(_under(module, app) for app in tree.optional_apps)


def is_core(module: str, tree: Tree = REAL) -> bool:
    """A module of the framework's core: not an optional app's, nor a former path (which only
    forwards to where its names live now, an optional app included)."""
    former = tree.former_paths
    return (
        _under(module, tree.framework)
        and not is_optional(module, tree)
        and not any(_under(module, path) for path in former)
    )


def core_to_optional(tree: Tree = REAL, every: list[Import] | None = None) -> list[Import]:
    return [
        found
        for found in (all_imports(tree) if every is None else every)
        if is_core(found.source, tree) and is_optional(found.target, tree)
    ]


def wing_of(module: str, tree: Tree = REAL) -> int | None:
    """The wing's height (0 the lowest), or None for a module in no wing."""
    for height, wing in enumerate(tree.wings):
        if _under(module, wing):
            return height
    return None


def upward_imports(tree: Tree = REAL, every: list[Import] | None = None) -> list[Import]:
    """Imports that run back up: a module in a wing importing a higher wing, or anything
    outside the wings (the top of the package, an optional app, a domain app)."""
    found = []
    for imported in all_imports(tree) if every is None else every:
        source = wing_of(imported.source, tree)
        target = wing_of(imported.target, tree)
        if source is not None and (target is None or target > source):
            found.append(imported)
    return found


# -- circles at every folder level -------------------------------------------------------------


def _place(path: Path, root: Path) -> tuple[str, ...]:
    """Path parts of a module: a package's `__init__.py` stands for its folder."""
    parts = path.relative_to(root).parts
    return parts[:-1] if parts[-1] == "__init__.py" else parts


def _child(parts: tuple[str, ...], depth: int) -> str:
    name = parts[depth]
    return name if name.endswith(".py") else f"{name}/"


def folder_edges(
    tree: Tree = REAL, every: list[Import] | None = None
) -> dict[str, list[tuple[str, str, Import]]]:
    """For each folder, (child, child, import) for each module import between two of its
    children. An import between two modules shows in exactly one folder: their deepest common
    one (above it both sit in the same child, below it they are not both inside)."""
    files = modules(tree)
    edges: dict[str, list[tuple[str, str, Import]]] = defaultdict(list)
    for found in all_imports(tree) if every is None else every:
        source = _place(files[found.source], tree.root)
        target = _place(files[found.target], tree.root)
        depth = 0
        while depth < min(len(source), len(target)) and source[depth] == target[depth]:
            depth += 1
        if depth < len(source) and depth < len(target):
            folder = "/".join(source[:depth]) or "."
            edges[folder].append((_child(source, depth), _child(target, depth), found))
    return edges


def import_cycles(tree: Tree = REAL, every: list[Import] | None = None) -> list[Circle]:
    """Circles among every import, at every folder level (Tarjan's strongly connected parts)."""
    circles = []
    for folder, edges in sorted(folder_edges(tree, every).items()):
        graph: dict[str, set[str]] = defaultdict(set)
        for source, target, _ in edges:
            graph[source].add(target)
        for part in _components(graph):
            if len(part) > 1:
                inside = [found for a, b, found in edges if a in part and b in part]
                circles.append(Circle(folder, tuple(sorted(part)), tuple(inside)))
    return circles


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
        for nxt in sorted(graph.get(node, ())):
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

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return parts


# -- the counts ------------------------------------------------------------------------------


def _section(title: str, items: list[object]) -> None:
    print(f"{title}: {len(items)}", *items, sep="\n  ")


def report(tree: Tree = REAL) -> None:
    files = modules(tree)
    big = [(name, line_count(path)) for name, path in files.items()]
    longs = [found for path in files.values() for found in long_functions(path, tree.root)]
    every = all_imports(tree)
    print(f"modules: {len(files)}")
    _section(f"modules over {MAX_MODULE_LINES} lines", [b for b in big if b[1] > MAX_MODULE_LINES])
    _section(f"functions over {MAX_FUNCTION_LINES} lines", list(longs))
    print(f"imports between modules: {len(every)}")
    for where in (MODULE, FUNCTION, TYPE_CHECKING):
        print(f"  at {where} level: {sum(found.where == where for found in every)}")
    _section("import circles", list(import_cycles(tree, every)))
    _section("imports that run back up a wing", list(upward_imports(tree, every)))
    _section("imports from the core up to an optional app", list(core_to_optional(tree, every)))


if __name__ == "__main__":
    report()
