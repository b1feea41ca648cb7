"""A scheduled model's handler_task given as a django.tasks @task: run inside handle_once, so
its effect commits with `handled_at` and a failure is retried with the model's backoff."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduling.delivery.handling.once import handle_once
from scheduling.rows.djangotasks import as_task
from scheduling.rows.registry import get_scheduled_model


def run_handler(event: Mapping[str, Any]) -> None:
    model = get_scheduled_model(event["model"])
    task = as_task(model.handler_task)
    if task is None:
        raise LookupError(
            f"{model._meta.label}.handler_task = {model.handler_task!r} is not a django.tasks "
            "task: expected a @task function or its dotted path."
        )
    with handle_once(event) as row:
        if row is not None:
            task.call(dict(event))
