"""System checks (`manage.py check`) for what would otherwise fail silently.

Errors stop `check`, `runserver` and `migrate`; configuration_errors() also stops a worker,
beat or `sweep` at start (scheduling.delivery.celery, the sweep command), one line each.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from celery import current_app
from django.apps import apps
from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register
from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, router

from scheduling.delivery.publishing.targets import is_external_task
from scheduling.rows import routers
from scheduling.rows.conf import a_rate, scheduling_settings, setting_errors
from scheduling.rows.databases import database_of, redis_client_for_locks
from scheduling.rows.fairness import fairness_key_error
from scheduling.rows.history.models import EventHistory
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.partitions.checks import unpartitioned_warnings
from scheduling.rows.registry import calendar_named_by, scheduled_models
from scheduling.rows.setting_names import unknown_setting_lines
from scheduling.time.calendars.models import Calendar


@register()
def check_configuration(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    return list(configuration_errors())


def configuration_errors() -> list[Error]:
    """Each SCHEDULING_* setting with a value its kind refuses, USE_TZ off, no broker URL."""
    errors = [Error(line, id="scheduling.E001") for line in setting_errors()]
    errors += [Error(line, id="scheduling.E011") for line in routers.setting_errors()]
    if not settings.USE_TZ:
        errors.append(
            Error(
                "USE_TZ=False is not valid: expected True (scheduled rows keep aware times; "
                "with USE_TZ off every create fails).",
                id="scheduling.E002",
            )
        )
    if not (current_app.conf.broker_read_url and current_app.conf.broker_write_url):
        errors.append(
            Error(
                "No Celery broker URL is configured: expected CELERY_BROKER_URL (Celery would "
                "fall back to amqp://localhost and nothing would be delivered).",
                hint="Set CELERY_BROKER_URL, read by app.config_from_object('django.conf:"
                "settings', namespace='CELERY') in the Celery app the project's __init__.py "
                "imports.",
                id="scheduling.E003",
            )
        )
    return errors


@register()
def check_setting_names(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    return [Warning(line, id="scheduling.W006") for line in unknown_setting_lines()]


@register(Tags.caches)
def check_lock_store(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    if redis_client_for_locks() is not None:
        return []
    return [
        Warning(
            "The default cache is not Redis: the sweep lock is per process, so sweepers on "
            "several hosts or workers all sweep every tick (still correct, but more work).",
            hint="Set CACHES['default'] to django-redis or django.core.cache.backends.redis."
            "RedisCache.",
            id="scheduling.W001",
        )
    ]


@register()
def check_handler_tasks(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    models = scheduled_models()
    if not models:
        return []
    registered = defined_tasks()
    return [
        Error(
            f"{model._meta.label}.handler_task = {model.handler_task!r}, but no tasks module of "
            "an installed app defines a task of that name: its events would be published to "
            f"queue {model.get_queue()!r} and never handled.",
            hint="Define it with @shared_task(name=...) in <app>/tasks.py, or as a django.tasks "
            "@task (give the task or its dotted path), or fix the name; a task another "
            "codebase's workers run goes in SCHEDULING_EXTERNAL_TASKS.",
            obj=model,
            id="scheduling.E004",
        )
        for model in models
        if model.handler_task
        and model.get_handler_task() not in registered
        and not external(model.get_handler_task())
    ]


@register()
def check_queues_declared(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    declared = current_app.conf.task_queues
    if not declared:  # no declared list: a worker consumes what the framework adds to it
        return []
    names = {queue.name for queue in declared}
    return [
        Warning(
            f"{model._meta.label} publishes to queue {model.get_queue()!r}, which "
            "CELERY_TASK_QUEUES does not declare: a worker started with -Q for the declared "
            "queues never consumes its events.",
            hint=f"Declare Queue({model.get_queue()!r}), or run a worker with "
            f"-Q {model.get_queue()}.",
            obj=model,
            id="scheduling.W003",
        )
        for model in scheduled_models()
        if model.get_queue() not in names
    ]


@register(Tags.database)
def check_quiet_calendars(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[CheckMessage]:
    """Models whose quiet_hours names a calendar that is not stored (reads the database)."""
    return missing_calendar_warnings(databases)


@register(Tags.database)
def check_partitioned_tables(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[CheckMessage]:
    """Models declared partitioned whose table is not (reads the database)."""
    return unpartitioned_warnings(databases)


@register()
def check_partition_labels(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """SCHEDULING_PARTITIONS naming no scheduled model."""
    try:
        configured = [label for label, _ in scheduling_settings().partitions]
    except ImproperlyConfigured:  # reported by scheduling.E001
        return []
    return unknown_labels(
        "SCHEDULING_PARTITIONS", configured, scheduled_models(), "scheduling.E008"
    )


def unknown_labels(
    setting: str, labels: list[str], models: Any, error_id: str
) -> list[CheckMessage]:
    """An Error for each label of `setting` that names none of the scheduled `models`."""
    known = {model._meta.label_lower: model._meta.label for model in models}
    return [
        Error(
            f"{setting} names {label!r}, which is not a scheduled model: expected "
            f"app_label.ModelName, one of: {', '.join(sorted(known.values())) or 'none'}.",
            id=error_id,
        )
        for label in labels
        if label.lower() not in known
    ]


@register()
def check_rate_limits(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """SCHEDULING_RATE_LIMITS naming no scheduled model, and models' own bad `rate_limit`."""
    try:
        configured = [label for label, _ in scheduling_settings().rate_limits]
    except ImproperlyConfigured:  # reported by scheduling.E001
        configured = []
    models = scheduled_models()
    errors: list[CheckMessage] = [
        *unknown_labels("SCHEDULING_RATE_LIMITS", configured, models, "scheduling.E006")
    ]
    return errors + [error for model in models for error in own_rate_limit_errors(model)]


@register()
def check_fairness_keys(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """A `fairness_key` that names no field, or goes through a non-relation or a to-many one."""
    return [
        Error(error, obj=model, id="scheduling.E012")
        for model in scheduled_models()
        if (error := fairness_key_error(model))
    ]


@register()
def check_databases(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """A scheduled model on a database where the routers do not allow the history table, whose
    entries are written in the row's transaction. (SCHEDULING_DATABASES itself: E011.)"""
    return [
        Error(
            f"{model._meta.label} is written on database {database_of(model)!r}, but the "
            f"database routers do not allow scheduling's history table "
            f"({EventHistory._meta.db_table}) there: expected allow_migrate to be True for the "
            f"app 'scheduling' on {database_of(model)!r}.",
            hint="scheduling.rows.routers.AppDatabaseRouter allows it on every alias of "
            "SCHEDULING_DATABASES; a router of your own must too (docs/databases.md).",
            obj=model,
            id="scheduling.E009",
        )
        for model in scheduled_models()
        if not router.allow_migrate_model(database_of(model), EventHistory)
    ]


def own_rate_limit_errors(model: type[ScheduledEvent]) -> list[Error]:
    if model.rate_limit is None:
        return []
    try:
        a_rate(f"{model._meta.label}.rate_limit", model.rate_limit)
    except ImproperlyConfigured as refusal:
        return [Error(str(refusal), obj=model, id="scheduling.E007")]
    return []


def external(task: str) -> bool:
    try:
        return is_external_task(task)
    except ImproperlyConfigured:  # reported by scheduling.E001; a check must not raise
        return False


def defined_tasks() -> set[str]:
    """The task names a worker would register: each installed app's tasks module, imported as
    Celery's autodiscovery does, then Celery's registry."""
    for config in apps.get_app_configs():
        try:
            importlib.import_module(f"{config.name}.tasks")
        except ModuleNotFoundError as exc:
            if exc.name != f"{config.name}.tasks":
                raise
    return set(current_app.tasks.keys())


def missing_calendar_warnings(databases: Sequence[str] | None) -> list[CheckMessage]:
    """A warning per model (W004: without it, the first row created names the model and
    the calendar) naming a calendar that is not stored; nothing unless the check may
    read the calendars' database (and nothing before its table exists)."""
    naming = {model: name for model in scheduled_models() if (name := calendar_named_by(model))}
    alias = router.db_for_read(Calendar)
    if not naming or alias not in (databases or ()):
        return []
    try:
        stored = Calendar.objects.using(alias).filter(name__in=set(naming.values()))
        known = set(stored.values_list("name", flat=True))
    except DatabaseError:  # not migrated yet: migrate runs the check first
        return []
    return [
        Warning(
            f"{model._meta.label}.quiet_hours names the calendar {name!r}, but no calendar "
            "has that name: creating its rows fails until one does.",
            hint="Add it in the admin (Calendars) or the API (POST calendars/), e.g. with "
            'daily_windows ["22:00-07:00"] and its time zone, or change quiet_hours.',
            obj=model,
            id="scheduling.W004",
        )
        for model, name in naming.items()
        if name not in known
    ]
