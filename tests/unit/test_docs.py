"""The documentation, read as a newcomer would, with no service: the Python blocks of the tutorial
and the how-to guides parse and import only public names; the reference pages written from the
code cover every setting, check id, public name and command; the README stays a front page.
The strict build itself is tests/packaging/test_docs_site.py (and `.ci/docs`, run by CI)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

import scheduling
from docsite import pages
from scheduling.rows.setting_names import known_names

ROOT = Path(__file__).parents[2]
DOCS = ROOT / "docs"
NAV = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
# A ```python fence, also inside a list item (indented): its body, dedented.
FENCE = re.compile(r"^(?P<indent>[ \t]*)```python\n(?P<body>.*?)^(?P=indent)```", re.M | re.S)


def section(title: str) -> list[str]:
    """The pages under one heading of the navigation."""
    for entry in NAV:
        if title in entry:
            return [next(iter(page.values())) for page in entry[title]]
    raise LookupError(title)


GUIDES = section("Tutorial") + section("How-to guides")


def python_blocks(page: str) -> list[tuple[int, str]]:
    text = (DOCS / page).read_text()
    found = []
    for match in FENCE.finditer(text):
        indent = len(match["indent"])
        body = "".join(line[indent:] for line in match["body"].splitlines(keepends=True))
        found.append((text.count("\n", 0, match.start()) + 1, body))
    return found


def public_module_names(module: str) -> set[str]:
    return set(importlib.import_module(module).__all__)


def test_the_guides_have_python_blocks() -> None:
    assert "adding-scheduling.md" in GUIDES
    assert "testing.md" in GUIDES
    assert sum(len(python_blocks(page)) for page in GUIDES) > 30


@pytest.mark.parametrize("page", GUIDES)
def test_each_python_block_parses_and_imports_only_public_names(page: str) -> None:
    problems = []
    for line, body in python_blocks(page):
        try:
            tree = ast.parse(body)
        except SyntaxError as error:
            problems.append(f"{page}:{line}: does not parse: {error}")
            continue
        problems += [f"{page}:{line}: {problem}" for problem in private_imports(tree)]
    assert not problems, "\n".join(problems)


def private_imports(tree: ast.AST) -> list[str]:
    """Each import of the framework that is not the facade's names or a public module's."""
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if is_framework(alias.name) and alias.name not in public_modules():
                    problems.append(f"import {alias.name}: not a public module")
        elif isinstance(node, ast.ImportFrom) and node.module and is_framework(node.module):
            names = {alias.name for alias in node.names}
            if node.module == "scheduling":
                allowed = set(scheduling.PUBLIC) | {
                    m.split(".")[1] for m in scheduling.PUBLIC_MODULES
                }
            elif node.module in public_modules():
                allowed = public_module_names(node.module)
            else:
                problems.append(f"from {node.module} import ...: not a public module")
                continue
            problems += [
                f"from {node.module} import {name}: not one of its public names"
                for name in sorted(names - allowed)
            ]
    return problems


def is_framework(module: str) -> bool:
    return module == "scheduling" or module.startswith("scheduling.")


def public_modules() -> set[str]:
    return {"scheduling", *scheduling.PUBLIC_MODULES}


def test_the_import_check_refuses_an_internal_module() -> None:
    tree = ast.parse(
        "import scheduling.ops.admin\n"
        "from scheduling.rows.models import ScheduledEvent\n"
        "from scheduling import handle_once, sweep_everything\n"
        "from scheduling.admin import ScheduledEventAdmin\n"
    )

    assert private_imports(tree) == [
        "import scheduling.ops.admin: not a public module",
        "from scheduling.rows.models import ...: not a public module",
        "from scheduling import sweep_everything: not one of its public names",
    ]


def test_every_page_is_in_the_navigation() -> None:
    listed = set(flatten(NAV))
    written = {str(path.relative_to(DOCS)) for path in DOCS.rglob("*.md")}
    generated = set(hook_pages())

    assert written | generated == listed
    assert not written & generated, "a generated page is also written by hand"


def flatten(entries: Any) -> list[str]:
    if isinstance(entries, str):
        return [entries]
    if isinstance(entries, dict):
        return [page for value in entries.values() for page in flatten(value)]
    return [page for entry in entries for page in flatten(entry)]


def hook_pages() -> list[str]:
    source = (ROOT / "docsite" / "hooks.py").read_text()
    return re.findall(r'"(reference/[a-z-]+\.md)"', source)


def test_the_settings_page_has_every_setting_with_a_meaning() -> None:
    page = pages.settings_page()
    rows = {line.split("`")[1]: line for line in page.splitlines() if line.startswith("| `")}

    assert set(rows) == set(known_names())
    for name, row in rows.items():
        meaning = row.rstrip(" |").rsplit("|", 1)[-1].strip()
        assert len(meaning) > 10, f"{name} has no meaning on the settings page"


def test_the_checks_page_lists_every_check_id_of_the_code() -> None:
    in_code = set()
    for path in (ROOT / "scheduling").rglob("*.py"):
        in_code |= set(re.findall(r'"(scheduling\.[EW]\d{3})"', path.read_text()))
    listed = set(re.findall(r"^\| `(scheduling\.[EW]\d{3})` \|", checks_page(), re.M))

    assert in_code
    assert listed == in_code


def checks_page() -> str:
    return (DOCS / "reference" / "checks.md").read_text()


def test_the_reference_pages_name_every_public_name() -> None:
    facade = pages.facade_page()
    modules = pages.modules_page()

    assert [m for m in pages.public_modules()] == list(scheduling.PUBLIC_MODULES)
    for name in scheduling.__all__:
        assert f"::: scheduling.{name}\n" in facade
    for module in scheduling.PUBLIC_MODULES:
        for name in pages.public_names(module):
            assert f"::: {module}.{name}\n" in modules
        assert set(pages.public_names(module)) == public_module_names(module)


def test_the_commands_page_finds_every_command() -> None:
    commands = {
        path.stem
        for _, folder in pages.COMMAND_FOLDERS
        for path in folder.glob("*.py")
        if not path.name.startswith("_")
    }

    assert {"sweep", "scheduling_purge", "scheduling_status", "recurring_repair"} <= commands


def test_the_readme_is_a_front_page() -> None:
    readme = (ROOT / "README.md").read_text()

    assert len(readme.splitlines()) <= 200
    # Dated figures and machine timings live in docs/benchmarks.md only.
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", readme)
    assert not re.search(r"\d+ min \d+ s|\d+(\.\d+)?k?/s\b", readme)
    # The two commands, and what they do.
    assert "```bash\n.ci/up\n```" in readme
    assert "```bash\n.ci/test\n```" in readme
    assert "Run the whole system (web on port 8000, Celery worker, Celery beat):" in readme
    assert "Run the tests (lint, types, migration check, then pytest against" in readme
    for link in re.findall(r"\]\(((?:docs/)?[\w./-]+\.md)(?:#[\w-]+)?\)", readme):
        assert (ROOT / link).exists(), f"the README links to {link}, which does not exist"


def test_the_supported_versions_are_stated_once() -> None:
    """Django's and Python's versions are on one page; the others link to it."""
    pattern = re.compile(
        r"(Python )?3\.1\d (or later|and newer|to 3\.1\d)|(Django )?5\.2( LTS)?, 6\.0 and 6\.1"
    )
    stating = [
        str(path.relative_to(DOCS))
        for path in DOCS.rglob("*.md")
        if pattern.search(path.read_text())
    ]

    assert stating == ["reference/versions.md"]
