"""The source tree keeps its shape: modules by role stay small, the core never imports an
optional app, no wing imports a wing above it, and no import (at module level, inside a function
or for type checkers alone) closes a circle at any folder level."""

import ast

import pytest

import scheduling
from tests.unit import layout


@pytest.fixture(scope="module")
def every_import() -> list[layout.Import]:
    return layout.all_imports()


def test_no_source_module_is_over_the_limit():
    big = {
        layout.module_name(path): layout.line_count(path)
        for path in layout.source_files()
        if layout.line_count(path) > layout.MAX_MODULE_LINES
    }
    assert big == {}


def test_the_core_imports_no_optional_app(every_import):
    assert [str(found) for found in layout.core_to_optional(every=every_import)] == []


def test_no_import_runs_back_up_a_wing(every_import):
    assert [str(found) for found in layout.upward_imports(every=every_import)] == []


def test_no_import_circle_at_any_folder_level(every_import):
    assert [str(circle) for circle in layout.import_cycles(every=every_import)] == []


def test_no_source_function_is_over_the_limit():
    long = [found for path in layout.source_files() for found in layout.long_functions(path)]
    assert long == []


def test_scheduling_has_at_most_twelve_entries_at_its_top_each_package_saying_its_role():
    """The public modules and the deprecated paths (small modules that only re-export, or
    forward and warn) are not counted."""
    top = layout.ROOT / "scheduling"
    former = {name.split(".")[1] for name in (*scheduling.PUBLIC_MODULES, *scheduling.DEPRECATED)}
    entries = sorted(
        path.name
        for path in top.iterdir()
        if path.name not in ("__init__.py", "py.typed", "__pycache__")
        and path.name.removesuffix(".py") not in former
    )
    assert len(entries) <= 12, entries
    silent = [
        str(init.relative_to(layout.ROOT))
        for init in top.rglob("__init__.py")
        if "migrations" not in init.parts and not ast.get_docstring(ast.parse(init.read_text()))
    ]
    assert silent == []
