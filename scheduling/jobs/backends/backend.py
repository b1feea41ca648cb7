"""SchedulingBackend: each enqueue() is a keyed job with one run, written in the caller's
transaction; the sweep publishes the run when due and a Celery worker runs the function
through handle_once (scheduling.jobs.taskruns), with the jobs' retries and backoff."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import uuid4

from celery import current_app
from django.utils import timezone

from scheduling.delivery.publishing.targets import CallbackType, TargetError, check_queue_name
from scheduling.jobs.backends.known import remember
from scheduling.jobs.backends.results import job_key, read_result
from scheduling.jobs.models import Job, ScheduledJobRun
from scheduling.jobs.services import JobError, check_labels, check_payload
from scheduling.rows import djangotasks
from scheduling.rows.databases import atomic_on

PRIORITY_REFUSED = (
    "priority: SchedulingBackend runs tasks in the order they fall due and has no priorities; "
    "got {priority}. Leave it at 0, or give urgent tasks a queue_name of their own, consumed "
    "by workers of their own."
)


class SchedulingBackend(djangotasks.BaseTaskBackend):
    """`queue_name` is the Celery queue the run is published to ("default": the queue Celery's
    routes give scheduling.run_task, else Celery's default queue). Priorities are refused."""

    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = False

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        for name in self.queues:
            celery_queue(name)  # a QUEUES entry no broker could take is refused at start

    def validate_task(self, task: Any) -> None:
        if task.priority != 0:
            raise djangotasks.InvalidTask(PRIORITY_REFUSED.format(priority=task.priority))
        super().validate_task(task)
        remember(task)  # django.tasks validates each Task as it is defined: the worker's lookup

    def enqueue(self, task: Any, args: Any, kwargs: Any) -> Any:
        self.validate_task(task)
        result = djangotasks.TaskResult(
            task=task,
            id=uuid4().hex,
            status=djangotasks.TaskResultStatus.READY,
            enqueued_at=None,
            started_at=None,
            finished_at=None,
            last_attempted_at=None,
            args=args,
            kwargs=kwargs,
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )
        run = task_job_create(
            result_id=result.id,
            queue=celery_queue(task.queue_name),
            payload={"args": result.args, "kwargs": result.kwargs},
            labels={"task": task.module_path, "queue_name": task.queue_name, "backend": self.alias},
            due_at=task.run_after or timezone.now(),
        )
        object.__setattr__(result, "enqueued_at", run.created_at)
        djangotasks.task_enqueued.send(type(self), task_result=result)
        return result

    def get_result(self, result_id: str) -> Any:
        return read_result(result_id)


def celery_queue(queue_name: str) -> str:
    if queue_name == djangotasks.DEFAULT_QUEUE_NAME:
        # Not the routes of scheduling.* tasks, which hosts point at the sweep's queue.
        return str(current_app.conf.task_default_queue)
    try:
        return check_queue_name(queue_name, "queue_name")
    except TargetError as exc:
        raise djangotasks.InvalidTask(exc.message) from None


@atomic_on(Job)
def task_job_create(
    *,
    result_id: str,
    queue: str,
    payload: dict[str, Any],
    labels: dict[str, str],
    due_at: datetime,
) -> ScheduledJobRun:
    """The job of one enqueued task and its run; a savepoint in the caller's transaction."""
    try:
        checked = check_payload(payload)
    except JobError as exc:
        raise JobError("args", f"{exc.message} (the task's args and kwargs)") from None
    job = Job.objects.create(
        key=job_key(result_id),
        callback={"type": CallbackType.TASK, "task": djangotasks.RUN_TASK, "queue": queue},
        payload=checked,
        labels=check_labels(labels),
    )
    return ScheduledJobRun.objects.create(job=job, due_at=due_at)
