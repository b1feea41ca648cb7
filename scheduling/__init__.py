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

Beside the facade, a few documented modules at the top (PUBLIC_MODULES: `scheduling.admin`,
`scheduling.api`, `scheduling.testing`, ...) re-export what a host needs for its admin, REST API,
tests and migrations; the wings are internal. Paths that released versions documented and that
moved (`scheduling.handling`, `scheduling.tasks`, ...) are small modules that warn (DEPRECATED).
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scheduling.delivery.handlers import handler
    from scheduling.delivery.handling.batches import handle_batch
    from scheduling.delivery.handling.once import RetryLater, effect_begins, handle_once
    from scheduling.delivery.handling.signals import event_failed, event_gave_up
    from scheduling.delivery.pauses.services import delivery_pause, delivery_resume
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
    from scheduling.rows.tracing.context import traced_insert
    from scheduling.time.times import require_aware, storable_utc

PUBLIC = {
    "AppDatabaseRouter": "scheduling.rows.routers",
    "DailyQuietHours": "scheduling.rows.quiet.hours",
    "DuePartitions": "scheduling.rows.due_partitions",
    "EventHandlerTask": "scheduling.delivery.tasks",
    "PartitionByDueTime": "scheduling.rows.partitions.operations",
    "ReplicaReadsMiddleware": "scheduling.rows.replicas",
    "ReplicaRouter": "scheduling.rows.replicas",
    "RetryLater": "scheduling.delivery.handling.once",
    "ScheduledEvent": "scheduling.rows.models",
    "ScheduledEventAdmin": "scheduling.ops.admin",
    "ScheduledEventInline": "scheduling.ops.admin",
    "ScheduledEventQuerySet": "scheduling.rows.querysets",
    "Status": "scheduling.rows.states",
    "actor": "scheduling.rows.actors",
    "assert_scheduled": "scheduling.delivery.testing",
    "delivery_pause": "scheduling.delivery.pauses.services",
    "delivery_resume": "scheduling.delivery.pauses.services",
    "effect_begins": "scheduling.delivery.handling.once",
    "event_failed": "scheduling.delivery.handling.signals",
    "event_gave_up": "scheduling.delivery.handling.signals",
    "extensions": "scheduling.rows.extensions",
    "handle_batch": "scheduling.delivery.handling.batches",
    "handle_once": "scheduling.delivery.handling.once",
    "handler": "scheduling.delivery.handlers",
    "older_than_done_retention": "scheduling.rows.retention",
    "require_aware": "scheduling.time.times",
    "storable_utc": "scheduling.time.times",
    "reads_primary": "scheduling.rows.replicas",
    "run_due": "scheduling.delivery.testing",
    "scheduled": "scheduling.delivery.testing",
    "timeline": "scheduling.rows.history.timeline",
    "traced_insert": "scheduling.rows.tracing.context",
}
__all__ = [
    "AppDatabaseRouter",
    "DailyQuietHours",
    "DuePartitions",
    "EventHandlerTask",
    "PartitionByDueTime",
    "ReplicaReadsMiddleware",
    "ReplicaRouter",
    "RetryLater",
    "ScheduledEvent",
    "ScheduledEventAdmin",
    "ScheduledEventInline",
    "ScheduledEventQuerySet",
    "Status",
    "actor",
    "assert_scheduled",
    "delivery_pause",
    "delivery_resume",
    "effect_begins",
    "event_failed",
    "event_gave_up",
    "extensions",
    "handle_batch",
    "handle_once",
    "handler",
    "older_than_done_retention",
    "reads_primary",
    "require_aware",
    "run_due",
    "scheduled",
    "storable_utc",
    "timeline",
    "traced_insert",
]


def lazy_names(
    module: str, homes: Mapping[str, str], own: Mapping[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module's `__getattr__` and `__dir__` that take each name in `homes` from its module
    when it is first asked for (`own`: the module's globals)."""

    def getattr_(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        return getattr(importlib.import_module(homes[name]), name)

    def dir_() -> list[str]:
        return sorted([*own, *homes])

    return getattr_, dir_


__getattr__, __dir__ = lazy_names(__name__, PUBLIC, globals())


# The documented modules at the top of the package, besides this facade: plain modules that
# re-export what a host needs for its admin, REST API, URLconf, tests and migrations. Those that a
# host's migrations name (migration_operations, quiet, partitions) stay for good.
PUBLIC_MODULES = (
    "scheduling.admin",
    "scheduling.api",
    "scheduling.api.urls",
    "scheduling.migration_operations",
    "scheduling.models",
    "scheduling.partitions",
    "scheduling.partitions.operations",
    "scheduling.quiet",
    "scheduling.testing",
    "scheduling.views",
)
# Former paths that a released version's docs gave: each a plain module at the top of the package
# whose names come from where they live now, warning, until DEPRECATED_PATHS_END (two minor
# releases). old -> (where its names live, the public module to import them from instead; the
# facade's own names always point at the facade). Importing one alone never warns: Django's
# admin and Celery import `scheduling.tasks` on every start.
DEPRECATED_PATHS_END = "0.5.0"
DEPRECATED = {
    "scheduling.admin.views": ("scheduling.ops.admin.views", "scheduling"),
    "scheduling.api.views": ("scheduling.ops.api.views", "scheduling.api"),
    "scheduling.backends": ("scheduling.jobs.backends", "scheduling.jobs.backends"),
    "scheduling.batches": ("scheduling.delivery.handling.batches", "scheduling"),
    "scheduling.extensions": ("scheduling.rows.extensions", "scheduling"),
    "scheduling.handling": ("scheduling.delivery.handling.once", "scheduling"),
    "scheduling.history": ("scheduling.rows.history", "scheduling"),
    "scheduling.history.timeline": ("scheduling.rows.history.timeline", "scheduling"),
    "scheduling.metrics": ("scheduling.delivery.metrics", "scheduling"),
    "scheduling.purge": ("scheduling.rows.purge", "scheduling"),
    "scheduling.replicas": ("scheduling.rows.replicas", "scheduling"),
    "scheduling.routers": ("scheduling.rows.routers", "scheduling"),
    "scheduling.signals": ("scheduling.delivery.handling.signals", "scheduling"),
    "scheduling.tasks": ("scheduling.delivery.tasks", "scheduling"),
}


def forwarding(old: str) -> Callable[[str], Any]:
    """The `__getattr__` of the deprecated path `old`: each name comes from where it lives now,
    with a DeprecationWarning that names the module to import it from instead."""
    new, public = DEPRECATED[old]

    def forward(name: str) -> Any:
        if name.startswith("__"):  # probes such as __wrapped__ or __path__: not forwarded
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        try:
            value = getattr(importlib.import_module(new), name)
        except AttributeError:
            raise AttributeError(f"module {old!r} has no attribute {name!r}") from None
        warnings.warn(
            f"{old} is deprecated and goes in {DEPRECATED_PATHS_END}: {instead(name, new, public)}",
            DeprecationWarning,
            stacklevel=2,
        )
        return value

    return forward


def instead(name: str, new: str, public: str) -> str:
    if name in PUBLIC:
        return f"import {name} from scheduling instead."
    if public != "scheduling":
        return f"import {name} from {public} instead."
    return f"{name} is internal now ({new}), with no public replacement."
