"""The Celery app: settings from Django's CELERY_* names, one beat entry per sweeper slot."""

import os
from typing import Any

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

app = Celery("project")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_finalize.connect
def add_sweep_entries(sender: Celery, **kwargs: Any) -> None:
    from scheduling.registry import beat_schedule

    sender.conf.beat_schedule = {**beat_schedule(), **(sender.conf.beat_schedule or {})}


@signals.celeryd_init.connect
def consume_every_project_queue(sender: str, instance: Any, conf: Any, **kwargs: Any) -> None:
    # Runs before the worker applies -Q, so a plain worker consumes every queue and -Q narrows.
    import django

    django.setup()
    from scheduling.registry import queue_names

    for queue in queue_names():
        instance.app.amqp.queues.select_add(queue)
