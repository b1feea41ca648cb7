"""The source tree keeps its shape: modules by role stay small, the core never imports an
optional app, no wing imports a wing above it, and no import (at module level, inside a function
or for type checkers alone) closes a circle at any folder level."""

import pytest

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
