"""The public facade: every name a host imports from `scheduling` resolves, lazily; the module
paths from before the wings still import, as the same module, with a warning naming the new."""

import importlib
import subprocess
import sys
import warnings

import pytest

import scheduling
from scheduling.delivery.sweep import run


@pytest.mark.parametrize("name", scheduling.__all__)
def test_each_public_name_is_the_object_its_module_defines(name):
    module = importlib.import_module(scheduling.PUBLIC[name])
    assert getattr(scheduling, name) is getattr(module, name)


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'sweep_now'"):
        scheduling.sweep_now  # noqa: B018


def test_the_facade_imports_nothing_heavy():
    code = "import sys, scheduling; print(sorted(m for m in sys.modules if m.startswith(('scheduling.', 'django.db'))))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert loaded.stdout.strip() == "[]"


def test_an_old_path_is_the_moved_module_with_a_warning_naming_the_new():
    sys.modules.pop("scheduling.sweep", None)
    with pytest.warns(
        DeprecationWarning, match="scheduling.sweep moved to scheduling.delivery.sweep.run"
    ):
        old = importlib.import_module("scheduling.sweep")
    assert old is run


def test_a_path_below_an_old_package_is_the_moved_module_not_a_second_copy():
    sys.modules.pop("scheduling.calendars.rules", None)
    sys.modules.pop("scheduling.calendars", None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        rules = importlib.import_module("scheduling.calendars.rules")
    assert rules is importlib.import_module("scheduling.time.calendars.rules")


@pytest.mark.parametrize("name", ["scheduling.admin", "scheduling.tasks", "scheduling.nothing"])
def test_admin_and_tasks_have_no_alias_as_autodiscovery_imports_them(name):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(name)
