"""The source tree keeps its shape: modules by role stay small, the core never imports an
optional app, and nothing imported at start-up imports itself back."""

from tests.unit import layout


def test_no_source_module_is_over_the_limit():
    big = {
        layout.module_name(path): layout.line_count(path)
        for path in layout.source_files()
        if layout.line_count(path) > layout.MAX_MODULE_LINES
    }
    assert big == {}


def test_the_core_imports_no_optional_app():
    assert layout.core_to_optional() == []


def test_no_import_cycle():
    assert layout.import_cycles() == []
