"""The import contracts ([tool.importlinter] in pyproject.toml) hold on the tree, and break, with
the contract named, when a change would break the layout: a demo importing an internal module, a
wing importing one above it, a circle drawn only by imports inside functions or for type
checkers. Each breaking case runs `lint-imports` on a copy of the tree with one file added."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit import layout

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture
def tree_copy(tmp_path: Path) -> Path:
    for package in layout.SOURCE_PACKAGES:
        shutil.copytree(
            layout.ROOT / package,
            tmp_path / package,
            ignore=shutil.ignore_patterns("__pycache__", "static", "templates"),
        )
    shutil.copy(layout.ROOT / "pyproject.toml", tmp_path)
    return tmp_path


def test_the_tree_keeps_every_contract():
    result = lint_imports(layout.ROOT)
    assert result.returncode == 0, result.stdout
    assert "0 broken" in result.stdout


def test_a_demo_importing_an_internal_module_breaks_the_contract(tree_copy):
    (tree_copy / "purchases" / "probe.py").write_text(
        "from scheduling.rows.models import ScheduledEvent\n"
    )
    result = lint_imports(tree_copy)
    assert result.returncode == 1
    assert "The wings are internal" in result.stdout
    assert "purchases.probe -> scheduling.rows.models" in result.stdout


def test_a_wing_importing_one_above_it_breaks_the_layers(tree_copy):
    (tree_copy / "scheduling" / "time" / "probe.py").write_text(
        "def f():\n    from scheduling.delivery import tasks\n    return tasks\n"
    )
    result = lint_imports(tree_copy)
    assert result.returncode == 1
    assert "each imports only the wings below it BROKEN" in result.stdout


@pytest.mark.parametrize(
    "guard",
    [
        "def f():\n    from scheduling.time.{} import f as g\n    return g\n",
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from scheduling.time.{} import f\n",
    ],
    ids=["inside-functions", "type-checking"],
)
def test_a_circle_drawn_only_by_hidden_imports_breaks_the_contract(tree_copy, guard):
    folder = tree_copy / "scheduling" / "time"
    (folder / "probe_a.py").write_text(guard.format("probe_b") + "\ndef f(): ...\n")
    (folder / "probe_b.py").write_text(guard.format("probe_a") + "\ndef f(): ...\n")
    result = lint_imports(tree_copy)
    assert result.returncode == 1
    assert "No import circle at any folder level BROKEN" in result.stdout
