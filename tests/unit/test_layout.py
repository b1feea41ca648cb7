"""The source tree keeps its shape where import contracts cannot say it: modules and functions
stay small, and the top of `scheduling` reads as a table of contents. The imports are held by
`lint-imports` (tests/unit/test_import_contracts.py)."""

import ast

import scheduling
from tests.unit import layout


def test_no_source_module_is_over_the_limit():
    big = {
        layout.module_name(path): layout.line_count(path)
        for path in layout.source_files()
        if layout.line_count(path) > layout.MAX_MODULE_LINES
    }
    assert big == {}


def test_no_source_function_is_over_the_limit():
    long = [found for path in layout.source_files() for found in layout.long_functions(path)]
    assert long == []


def test_scheduling_has_at_most_twelve_entries_at_its_top_each_package_saying_its_role():
    """The public modules and the deprecated paths (small modules that only re-export, or
    forward and warn) are not counted."""
    top = layout.ROOT / "scheduling"
    paths = {name.split(".")[1] for name in (*scheduling.PUBLIC_MODULES, *scheduling.DEPRECATED)}
    entries = sorted(
        path.name
        for path in top.iterdir()
        if path.name not in ("__init__.py", "py.typed", "__pycache__")
        and path.name.removesuffix(".py") not in paths
    )
    assert len(entries) <= 12, entries
    silent = [
        str(init.relative_to(layout.ROOT))
        for init in top.rglob("__init__.py")
        if "migrations" not in init.parts and not ast.get_docstring(ast.parse(init.read_text()))
    ]
    assert silent == []


def test_public_and_deprecated_modules_only_re_export():
    """No logic hides in them: imports, __all__, a __getattr__ and a docstring, nothing else."""
    for name in (*scheduling.PUBLIC_MODULES, *scheduling.DEPRECATED):
        if name in ("scheduling.models", "scheduling.extensions"):
            continue  # Django's place for the models; the registry's stand-in
        where = layout.ROOT.joinpath(*name.split("."))
        path = where / "__init__.py" if where.is_dir() else where.with_suffix(".py")
        assert layout.line_count(path) <= 100, name
        assert [
            f.name for f in ast.walk(ast.parse(path.read_text())) if isinstance(f, ast.ClassDef)
        ] == [], name
