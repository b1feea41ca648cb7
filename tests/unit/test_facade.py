"""The public facade: every name a host imports from `scheduling` resolves, lazily; the former
paths are plain modules: those a released version documented warn when a name is taken from them,
naming where it lives now; those hosts' migrations name never warn."""

import importlib
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import scheduling


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


TOP = (*scheduling.PUBLIC_MODULES, *scheduling.DEPRECATED)


@pytest.mark.parametrize("path", sorted(TOP))
def test_a_public_or_former_path_is_a_plain_module_that_imports_without_a_warning(path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        importlib.import_module(path)
    where = Path(scheduling.__file__).parent.joinpath(*path.split(".")[1:])
    assert where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


@pytest.mark.parametrize(
    ("old", "name", "home"),
    [
        ("scheduling.tasks", "EventHandlerTask", "scheduling"),
        ("scheduling.handling", "handle_once", "scheduling"),
        ("scheduling.handling", "effect_begins", "scheduling"),
        ("scheduling.api.views", "ScheduledEventViewSet", "scheduling.api"),
        ("scheduling.admin.views", "add_attention_url", None),
        ("scheduling.signals", "event_gave_up", "scheduling"),
        ("scheduling.history.timeline", "timeline", "scheduling"),
        ("scheduling.purge", "older_than_done_retention", "scheduling"),
        ("scheduling.batches", "handle_batch", "scheduling"),
        ("scheduling.routers", "AppDatabaseRouter", "scheduling"),
        ("scheduling.replicas", "ReplicaRouter", "scheduling"),
        ("scheduling.backends", "SchedulingBackend", "scheduling.jobs.backends"),
        ("scheduling.metrics", "recent_minutes", None),
    ],
)
def test_a_name_from_a_deprecated_path_warns_naming_where_to_import_it_from(old, name, home):
    module = importlib.import_module(old)
    says = f"import {name} from {home} instead" if home else f"{name} is internal now"
    with pytest.warns(DeprecationWarning, match=says) as seen:
        value = getattr(module, name)
    assert value is getattr(importlib.import_module(scheduling.DEPRECATED[old][0]), name)
    assert seen[0].filename == __file__  # the warning points at the line that took the name


def test_from_scheduling_tasks_import_the_handler_task_class_warns():
    with pytest.warns(DeprecationWarning, match="scheduling.tasks is deprecated"):
        from scheduling.tasks import EventHandlerTask
    assert EventHandlerTask is scheduling.EventHandlerTask


@pytest.mark.parametrize(
    ("path", "name", "home"),
    [
        ("scheduling.quiet", "DailyQuietHours", "scheduling.rows.quiet.hours"),
        ("scheduling.quiet", "validate_time_zone", "scheduling.rows.quiet.hours"),
        (
            "scheduling.migration_operations",
            "AdoptOrCreateModel",
            "scheduling.rows.migration_operations",
        ),
        (
            "scheduling.migration_operations",
            "TuneScheduledTable",
            "scheduling.rows.migration_operations",
        ),
        ("scheduling.partitions", "PartitionByDueTime", "scheduling.rows.partitions"),
        ("scheduling.partitions", "DuePartitions", "scheduling.rows.partitions"),
        ("scheduling.partitions.operations", "PartitionByDueTime", "scheduling.rows.partitions"),
        ("scheduling.admin", "ScheduledEventAdmin", "scheduling.ops.admin"),
        ("scheduling.api", "ScheduledEventViewSet", "scheduling.ops.api.views"),
        ("scheduling.api.urls", "urlpatterns", "scheduling.ops.api.urls"),
        ("scheduling.views", "metrics_view", "scheduling.ops.views"),
        ("scheduling.testing", "run_due", "scheduling.delivery.testing"),
    ],
)
def test_a_public_module_and_the_paths_migrations_name_never_warn(path, name, home):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value = getattr(importlib.import_module(path), name)
    assert value is getattr(importlib.import_module(home), name)


def test_each_public_module_lists_what_it_exports():
    for path in scheduling.PUBLIC_MODULES:
        module = importlib.import_module(path)
        if path != "scheduling.models":
            assert module.__all__, path
            assert all(hasattr(module, name) for name in module.__all__), path


def test_a_name_the_new_home_lacks_is_an_attribute_error_naming_the_former_path():
    with pytest.raises(AttributeError, match=r"'scheduling\.handling' has no attribute 'nothing'"):
        importlib.import_module("scheduling.handling").nothing  # noqa: B018


def test_the_extensions_registry_is_the_same_whatever_was_imported_first():
    code = (
        "import warnings; warnings.simplefilter('error');"
        "import scheduling.extensions;"
        "from scheduling import extensions;"
        "from scheduling.rows.extensions import Extensions;"
        "print(isinstance(extensions, Extensions), hasattr(extensions, 'also_purge'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True"]


def test_from_scheduling_extensions_import_extensions_is_the_registry_with_a_warning():
    with pytest.warns(DeprecationWarning, match="`from scheduling import extensions`"):
        from scheduling.extensions import extensions
    assert extensions is scheduling.extensions


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ("DailyQuietHours", "scheduling.quiet.DailyQuietHours"),
        ("validate_time_zone", "scheduling.quiet.validate_time_zone"),
        ("PartitionByDueTime", "scheduling.partitions.PartitionByDueTime"),
        ("TuneScheduledTable", "scheduling.migration_operations.TuneScheduledTable"),
        ("AdoptOrCreateModel", "scheduling.migration_operations.AdoptOrCreateModel"),
    ],
)
def test_django_writes_the_public_path_into_a_hosts_migrations(value, path):
    module = importlib.import_module(path.rpartition(".")[0])
    obj = getattr(module, value)
    assert f"{obj.__module__}.{obj.__qualname__}" == path
