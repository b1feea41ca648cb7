"""Tests of the layout checker itself (tests/unit/layout.py), each on a small throwaway tree:
it must find the circles that imports inside functions or under `if TYPE_CHECKING:` draw, and
circles between folders, pass a tree without any, and report an import that runs back up."""

from pathlib import Path

import pytest

from tests.unit import layout
from tests.unit.layout import FUNCTION, MODULE, TYPE_CHECKING, Import


def build(root: Path, files: dict[str, str], wings: tuple[str, ...] = ()) -> layout.Tree:
    """Write `files` (path -> source) under root, with an `__init__.py` in every folder."""
    for name, source in files.items():
        path = root / name
        for folder in reversed(path.relative_to(root).parents):
            if folder != Path("."):
                (root / folder).mkdir(exist_ok=True)
                (root / folder / "__init__.py").touch()
        path.write_text(source)
    return layout.Tree(root=root, packages=("pkg",), optional_apps=(), wings=wings, framework="pkg")


def circles(tree: layout.Tree) -> list[tuple[str, tuple[str, ...]]]:
    return [(circle.folder, circle.members) for circle in layout.import_cycles(tree)]


def test_a_circle_made_only_by_imports_inside_functions_is_found(tmp_path):
    tree = build(
        tmp_path,
        {
            "pkg/a.py": "def f():\n    from pkg import b\n    return b\n",
            "pkg/b.py": "def g():\n    from pkg.a import f\n    return f\n",
        },
    )
    assert circles(tree) == [("pkg", ("a.py", "b.py"))]
    (circle,) = layout.import_cycles(tree)
    assert {found.where for found in circle.imports} == {FUNCTION}
    assert not any(found.top_level for found in circle.imports)  # the old check's blind spot


def test_a_circle_made_only_under_type_checking_is_found(tmp_path):
    guarded = "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from pkg.{} import X\n"
    tree = build(tmp_path, {"pkg/a.py": guarded.format("b"), "pkg/b.py": guarded.format("a")})
    assert circles(tree) == [("pkg", ("a.py", "b.py"))]
    (circle,) = layout.import_cycles(tree)
    assert {found.where for found in circle.imports} == {TYPE_CHECKING}


def test_the_else_of_a_type_checking_block_runs_at_import_time(tmp_path):
    source = "if TYPE_CHECKING:\n    from pkg import a\nelse:\n    from pkg import b\n"
    tree = build(tmp_path, {"pkg/a.py": "", "pkg/b.py": "", "pkg/c.py": source})
    found = {(i.target, i.where) for i in layout.all_imports(tree) if i.source == "pkg.c"}
    assert found == {("pkg.a", TYPE_CHECKING), ("pkg.b", MODULE)}


def test_a_circle_between_folders_is_found_though_no_file_circles(tmp_path):
    tree = build(
        tmp_path,
        {
            "pkg/a/x.py": "from pkg.b.y import Y\n",
            "pkg/a/w.py": "W = 1\n",
            "pkg/b/y.py": "Y = 1\n",
            "pkg/b/z.py": "from pkg.a.w import W\n",
        },
    )
    assert circles(tree) == [("pkg", ("a/", "b/"))]
    (circle,) = layout.import_cycles(tree)
    assert {(found.source, found.target) for found in circle.imports} == {
        ("pkg.a.x", "pkg.b.y"),
        ("pkg.b.z", "pkg.a.w"),
    }


def test_a_package_init_stands_for_its_folder(tmp_path):
    tree = build(tmp_path, {"pkg/a/x.py": "import pkg.b\n", "pkg/b/y.py": "X = 1\n"})
    (tmp_path / "pkg/b/__init__.py").write_text("def f():\n    from pkg.a import x\n")
    assert circles(tree) == [("pkg", ("a/", "b/"))]


def test_an_acyclic_tree_passes(tmp_path):
    tree = build(
        tmp_path,
        {
            "pkg/__init__.py": "if TYPE_CHECKING:\n    from pkg.high.top import T\n",
            "pkg/low/base.py": "import os\nfrom django.db import models\nB = 1\n",
            "pkg/low/more.py": "from .base import B\n",
            "pkg/high/top.py": "from pkg.low import more\n\ndef f():\n    from pkg.low.base import B\n",
            "pkg/high/side.py": "from pkg.high.top import f\nfrom pkg.low.base import B\n",
        },
        wings=("pkg.low", "pkg.high"),
    )
    assert layout.import_cycles(tree) == []
    assert layout.upward_imports(tree) == []
    assert len(layout.all_imports(tree)) == 6  # django and os are outside the tree


def test_an_import_that_runs_back_up_from_a_lower_wing_is_reported(tmp_path):
    tree = build(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.high import y\n",  # the top may import any wing
            "pkg/models.py": "from pkg.low.x import f\nfrom pkg.high.y import Y\n",
            "pkg/low/x.py": "def f():\n    from pkg.high.y import Y\n    from pkg import models\n",
            "pkg/high/y.py": "from pkg.low.x import f\nY = 1\n",
        },
        wings=("pkg.low", "pkg.high"),
    )
    assert layout.upward_imports(tree) == [
        Import("pkg.low.x", "pkg.high.y", FUNCTION),
        Import("pkg.low.x", "pkg.models", FUNCTION),
    ]


def test_from_a_package_import_a_submodule_resolves_to_the_submodule(tmp_path):
    tree = build(
        tmp_path,
        {
            "pkg/__init__.py": "helper = 1\n",
            "pkg/sub.py": "S = 1\n",
            "pkg/deep/leaf.py": "L = 1\n",
            "pkg/user.py": "from pkg import sub, helper\nfrom pkg.sub import S\n",
            "pkg/relative.py": "from . import sub\nfrom .deep import leaf\nfrom . import helper\n",
        },
    )
    reached = {(found.source, found.target) for found in layout.all_imports(tree)}
    assert reached == {
        ("pkg.user", "pkg.sub"),
        ("pkg.user", "pkg"),
        ("pkg.relative", "pkg.sub"),
        ("pkg.relative", "pkg.deep.leaf"),
        ("pkg.relative", "pkg"),
    }


def test_the_report_prints_the_counts(tmp_path, capsys):
    tree = build(
        tmp_path,
        {"pkg/low/a.py": "def f():\n    from pkg.high import b\n", "pkg/high/b.py": ""},
        wings=("pkg.low", "pkg.high"),
    )
    layout.report(tree)
    out = capsys.readouterr().out
    for line in ("modules: 5", "at function level: 1", "import circles: 0", "back up a wing: 1"):
        assert line in out


@pytest.mark.parametrize("name", ["layout.py", "test_layout.py", "test_layout_checker.py"])
def test_the_checker_keeps_the_limits_it_enforces(name):
    path = Path(layout.__file__).with_name(name)
    assert layout.line_count(path) <= layout.MAX_MODULE_LINES
    assert layout.long_functions(path, layout.ROOT) == []
