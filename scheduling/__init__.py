"""Per-domain scheduling for Django: the public facade.

A host imports what it needs from here (`from scheduling import ScheduledEvent, handle_once`);
nothing heavy is imported until a name is asked for, so this package loads before Django's apps
are ready. Dotted paths for settings: "scheduling.AppDatabaseRouter" and
"scheduling.ReplicaRouter" (DATABASE_ROUTERS), "scheduling.ReplicaReadsMiddleware" (MIDDLEWARE),
"scheduling.jobs.backends.SchedulingBackend" (TASKS). Models: `scheduling.models`.

The framework itself lives in four wings, each importing only those below it:
  ops/       what people look at: admin, REST API, dashboard and health views, forms
  delivery/  from due to handled: the sweep, publishing, handling, Celery tasks, metrics, checks
  rows/      the scheduled row and where it lives: model, QuerySet, history, quiet hours, storage
  time/      time alone: zones, parsing, storable due times, calendars
and `recurring/` and `jobs/`, the two optional apps, above them all.

Module paths from before the wings (`scheduling.sweep`, `scheduling.quiet`, ...) still import,
with a DeprecationWarning, for one release (see CHANGELOG).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scheduling.delivery.handling.batches import handle_batch
    from scheduling.delivery.handling.once import effect_begins, handle_once
    from scheduling.delivery.handling.signals import event_failed, event_gave_up
    from scheduling.delivery.tasks import EventHandlerTask
    from scheduling.delivery.testing import assert_scheduled, run_due, scheduled
    from scheduling.ops.admin import ScheduledEventAdmin, ScheduledEventInline
    from scheduling.rows.actors import actor
    from scheduling.rows.due_partitions import DuePartitions
    from scheduling.rows.extensions import extensions
    from scheduling.rows.history.timeline import timeline
    from scheduling.rows.models import ScheduledEvent
    from scheduling.rows.partitions.operations import PartitionByDueTime
    from scheduling.rows.querysets import ScheduledEventQuerySet
    from scheduling.rows.quiet.hours import DailyQuietHours
    from scheduling.rows.replicas import ReplicaReadsMiddleware, ReplicaRouter, reads_primary
    from scheduling.rows.retention import older_than_done_retention
    from scheduling.rows.routers import AppDatabaseRouter
    from scheduling.rows.states import Status

PUBLIC = {
    "AppDatabaseRouter": "scheduling.rows.routers",
    "DailyQuietHours": "scheduling.rows.quiet.hours",
    "DuePartitions": "scheduling.rows.due_partitions",
    "EventHandlerTask": "scheduling.delivery.tasks",
    "PartitionByDueTime": "scheduling.rows.partitions.operations",
    "ReplicaReadsMiddleware": "scheduling.rows.replicas",
    "ReplicaRouter": "scheduling.rows.replicas",
    "ScheduledEvent": "scheduling.rows.models",
    "ScheduledEventAdmin": "scheduling.ops.admin",
    "ScheduledEventInline": "scheduling.ops.admin",
    "ScheduledEventQuerySet": "scheduling.rows.querysets",
    "Status": "scheduling.rows.states",
    "actor": "scheduling.rows.actors",
    "assert_scheduled": "scheduling.delivery.testing",
    "effect_begins": "scheduling.delivery.handling.once",
    "event_failed": "scheduling.delivery.handling.signals",
    "event_gave_up": "scheduling.delivery.handling.signals",
    "extensions": "scheduling.rows.extensions",
    "handle_batch": "scheduling.delivery.handling.batches",
    "handle_once": "scheduling.delivery.handling.once",
    "older_than_done_retention": "scheduling.rows.retention",
    "reads_primary": "scheduling.rows.replicas",
    "run_due": "scheduling.delivery.testing",
    "scheduled": "scheduling.delivery.testing",
    "timeline": "scheduling.rows.history.timeline",
}
__all__ = [
    "AppDatabaseRouter",
    "DailyQuietHours",
    "DuePartitions",
    "EventHandlerTask",
    "PartitionByDueTime",
    "ReplicaReadsMiddleware",
    "ReplicaRouter",
    "ScheduledEvent",
    "ScheduledEventAdmin",
    "ScheduledEventInline",
    "ScheduledEventQuerySet",
    "Status",
    "actor",
    "assert_scheduled",
    "effect_begins",
    "event_failed",
    "event_gave_up",
    "extensions",
    "handle_batch",
    "handle_once",
    "older_than_done_retention",
    "reads_primary",
    "run_due",
    "scheduled",
    "timeline",
]


def __getattr__(name: str) -> Any:
    if name not in PUBLIC:
        raise AttributeError(f"module 'scheduling' has no attribute {name!r}")
    return getattr(importlib.import_module(PUBLIC[name]), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *PUBLIC])


# Module paths from before the wings, under scheduling.: old -> new. Not `admin` and `tasks`:
# Django's admin and Celery look for `<app>.admin` and `<app>.tasks` on every start, and an
# alias there would warn each time (apps.py imports their new homes).
MOVED = {
    "actors": "rows.actors",
    "api": "ops.api",
    "backends": "jobs.backends",
    "batch_plan": "delivery.sweep.plan",
    "batches": "delivery.handling.batches",
    "calendars": "time.calendars",
    "calendars.admin": "ops.admin.calendars",
    "calendars.api": "ops.api.calendars",
    "calendars.forms": "ops.admin.calendar_fields",
    "calendars.models": "time.calendars.models",
    "calendars.parsing": "time.calendars.parsing",
    "calendars.references": "time.calendars.references",
    "calendars.rules": "time.calendars.rules",
    "calendars.store": "time.calendars.models",
    "celery": "delivery.celery",
    "checks": "delivery.checks",
    "clock": "rows.clock",
    "conf": "rows.conf",
    "connections": "delivery.handling.connections",
    "daemon": "delivery.sweep.daemon",
    "databases": "rows.databases",
    "djangotasks": "rows.djangotasks",
    "drain": "delivery.sweep.loop",
    "extensions": "rows.extensions",
    "forms": "ops.forms",
    "handling": "delivery.handling.once",
    "handling_sql": "delivery.handling.sql",
    "health": "ops.health",
    "history": "rows.history",
    "hold": "delivery.sweep.loop",
    "host_fields": "rows.host_fields",
    "jsonvalues": "rows.jsonvalues",
    "locks": "delivery.locks",
    "metrics": "delivery.metrics",
    "migration_operations": "rows.migration_operations",
    "outgoing": "rows.outgoing",
    "parsing": "time.parsing",
    "partitions": "rows.partitions",
    "partitions.spec": "rows.due_partitions",
    "policy": "rows.policy",
    "publishing": "delivery.publishing",
    "purge": "rows.purge",
    "queries": "delivery.sweep.sql",
    "querysets": "rows.querysets",
    "quiet": "rows.quiet.hours",
    "quiet_rows": "rows.quiet.holds",
    "ratelimit": "delivery.ratelimit",
    "reconcile": "delivery.sweep.reconcile",
    "registry": "rows.registry",
    "replicas": "rows.replicas",
    "results": "delivery.sweep.results",
    "routers": "rows.routers",
    "setting_names": "rows.setting_names",
    "signals": "delivery.handling.signals",
    "states": "rows.states",
    "sweep": "delivery.sweep.run",
    "targets": "delivery.publishing.targets",
    "task_handlers": "delivery.handling.task_handlers",
    "testing": "delivery.testing",
    "times": "time.times",
    "views": "ops.views",
    "zones": "time.zones",
}


def moved_to(fullname: str) -> str | None:
    """The module an old path now names: the longest moved prefix, the rest kept."""
    parts = fullname.split(".")
    if parts[0] != "scheduling":
        return None
    for end in range(len(parts), 1, -1):
        new = MOVED.get(".".join(parts[1:end]))
        if new is not None:
            return ".".join(["scheduling", new, *parts[end:]])
    return None


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old module path as the module it moved to (the same object, so patches and
    isinstance checks see one module), with a DeprecationWarning."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if moved_to(fullname) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return types.ModuleType(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        new = moved_to(module.__name__)
        assert new is not None
        warnings.warn(
            f"{module.__name__} moved to {new}; the old path goes in the next release.",
            DeprecationWarning,
            stacklevel=2,
        )
        # The import system hands back whatever sys.modules holds under the old name now.
        sys.modules[module.__name__] = importlib.import_module(new)


# First: below an old package path (`scheduling.calendars.rules`) the path finder would load the
# file a second time, as another module, from the package the old path gave.
if not any(isinstance(finder, MovedModules) for finder in sys.meta_path):
    sys.meta_path.insert(0, MovedModules())
