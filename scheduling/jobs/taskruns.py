"""Running a django.tasks task that SchedulingBackend stored as a keyed job: in a worker, through
handle_once, so a failure is recorded on the run and retried with the jobs' backoff."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from traceback import format_exception
from typing import Any

from django.db import transaction
from django.utils import timezone

from scheduling.delivery.handling.once import handle_once
from scheduling.jobs.backends.results import task_result
from scheduling.jobs.models import ScheduledJobRun, TaskOutcome
from scheduling.rows import djangotasks
from scheduling.rows.conf import scheduling_settings
from scheduling.rows.databases import database_of
from scheduling.rows.jsonvalues import check_json_value

MAX_ERRORS = 20  # the newest errors a result keeps
MAX_TRACEBACK = 4000  # characters of each error's traceback, its end kept


def run_enqueued(event: Mapping[str, Any], *, worker_id: str) -> None:
    """Run the task of this event's run once; a failure is recorded, then raised again."""
    began = timezone.now()
    attempt: list[tuple[ScheduledJobRun, Any]] = []  # the run and its TaskResult, once begun
    try:
        with handle_once(event, ScheduledJobRun) as run:
            if run is not None:
                attempt.append((run, started(run, began, worker_id)))
                value = call(attempt[0][1])
                record_attempt(run.job_id, began, worker_id, value=value)
    except Exception as exc:
        if attempt:  # the handling's transaction rolled back: the attempt is written on its own
            record_attempt(attempt[0][0].job_id, began, worker_id, error=task_error(exc))
            finished(attempt[0][1], "FAILED")
        raise
    if attempt:
        finished(attempt[0][1], "SUCCESSFUL", value)


def started(run: ScheduledJobRun, began: datetime, worker_id: str) -> Any:
    """The TaskResult as this attempt begins (django.tasks' task_started signal is sent)."""
    result = task_result(run.job, run, TaskOutcome.objects.filter(job_id=run.job_id).first())
    object.__setattr__(result, "started_at", result.started_at or began)
    object.__setattr__(result, "last_attempted_at", began)
    result.worker_ids.append(worker_id)
    djangotasks.task_started.send(type(result.task.get_backend()), task_result=result)
    return result


def call(result: Any) -> Any:
    """The task's return value, as JSON would give it back."""
    task = result.task
    context = [djangotasks.TaskContext(task_result=result)] if task.takes_context else []
    return returned_json(task.call(*context, *result.args, **result.kwargs))


def finished(result: Any, status: str, value: Any = None) -> None:
    """django.tasks' task_finished signal, once the attempt's outcome is committed."""
    object.__setattr__(result, "status", djangotasks.TaskResultStatus[status])
    object.__setattr__(result, "finished_at", timezone.now())
    object.__setattr__(result, "_return_value", value)
    djangotasks.task_finished.send(type(result.task.get_backend()), task_result=result)


def returned_json(value: Any) -> Any:
    """The value as stored: JSON, at most SCHEDULING_JOB_MAX_PAYLOAD_BYTES (64 KiB) of it."""
    try:
        normalised = json.loads(json.dumps(value))
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"return value: enter a JSON value (dict, list, str, number); {exc}"
        ) from None
    check_json_value(
        normalised, path="return value", max_bytes=scheduling_settings().job_max_payload_bytes
    )
    return normalised


def record_attempt(
    job_id: int,
    began: datetime,
    worker_id: str,
    *,
    value: Any = None,
    error: dict[str, str] | None = None,
) -> None:
    with transaction.atomic(using=database_of(TaskOutcome)):
        outcome, _ = TaskOutcome.objects.select_for_update().get_or_create(job_id=job_id)
        outcome.started_at = outcome.started_at or began
        outcome.last_attempted_at = began
        outcome.worker_ids = [*outcome.worker_ids, worker_id]
        if error is not None:
            outcome.errors = [*outcome.errors, error][-MAX_ERRORS:]
        else:
            outcome.return_value = value
        outcome.save()


def task_error(exc: BaseException) -> dict[str, str]:
    kind = type(exc)
    return {
        "exception_class_path": f"{kind.__module__}.{kind.__qualname__}",
        "traceback": "".join(format_exception(exc))[-MAX_TRACEBACK:],
    }
