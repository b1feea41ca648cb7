"""System checks (`manage.py check`) for what would otherwise fail silently."""

from __future__ import annotations

import importlib
from typing import Any

from celery import current_app
from django.apps import apps
from django.core.checks import CheckMessage, Tags, Warning, register

from scheduling.locks import redis_client_for_locks
from scheduling.registry import scheduled_models


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
        Warning(
            f"{model._meta.label}.handler_task = {model.handler_task!r}, but no tasks module of "
            "an installed app defines a task of that name: its events would be published to "
            f"queue {model.get_queue()!r} and never handled.",
            hint="Define it with @shared_task(name=...) in <app>/tasks.py, or fix the name.",
            obj=model,
            id="scheduling.W002",
        )
        for model in models
        if model.handler_task and model.handler_task not in registered
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
