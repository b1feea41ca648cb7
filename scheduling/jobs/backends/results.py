"""A django.tasks TaskResult, read from the keyed job that stores the task and its run."""

from __future__ import annotations

from typing import Any

from scheduling.jobs.backends.known import check_our_backend, defined_task
from scheduling.jobs.models import Job, ScheduledJobRun, TaskOutcome
from scheduling.rows import djangotasks
from scheduling.rows.states import Status

# A task's job key is this prefix and the result id; the labels hold what built the task.
KEY_PREFIX = "task:"
# The run's place in its lifecycle -> the result's status; any other place (failed, expired,
# cancelled) is FAILED. A run the sweep has handed to the broker counts as running.
STATUSES = {
    "pending": "READY",
    "awaiting_handling": "RUNNING",
    "in_flight": "RUNNING",
    "handled": "SUCCESSFUL",
}


def job_key(result_id: str) -> str:
    return KEY_PREFIX + result_id


def read_result(result_id: str) -> Any:
    """The TaskResult of `result_id`; TaskResultDoesNotExist if no task has that id."""
    job = Job.objects.filter(key=job_key(result_id), callback__task=djangotasks.RUN_TASK).first()
    run = job.runs.order_by("-pk").first() if job is not None else None
    if job is None or run is None:
        raise djangotasks.TaskResultDoesNotExist(f"no task result with id {result_id!r}")
    return task_result(job, run, TaskOutcome.objects.filter(job=job).first())


def task_result(job: Job, run: ScheduledJobRun, outcome: TaskOutcome | None) -> Any:
    outcome = outcome or TaskOutcome(job=job)
    result = djangotasks.TaskResult(
        task=stored_task(job),
        id=job.key.removeprefix(KEY_PREFIX),
        status=djangotasks.TaskResultStatus[STATUSES.get(run.lifecycle, "FAILED")],
        enqueued_at=run.created_at,
        started_at=outcome.started_at,
        finished_at=finished_at(run),
        last_attempted_at=outcome.last_attempted_at,
        args=job.payload["args"],
        kwargs=job.payload["kwargs"],
        backend=job.labels["backend"],
        errors=[djangotasks.TaskError(**error) for error in outcome.errors],
        worker_ids=list(outcome.worker_ids),
    )
    object.__setattr__(result, "_return_value", outcome.return_value)
    return result


def stored_task(job: Job) -> Any:
    """The task as it was enqueued: the @task the code defines at the stored path (never an
    import of it), with the queue and backend it had; UnknownTask for any other name."""
    labels = job.labels
    backend = check_our_backend(labels.get("backend"))
    return defined_task(labels.get("task")).using(queue_name=labels["queue_name"], backend=backend)


def finished_at(run: ScheduledJobRun) -> Any:
    if run.handled_at is not None:
        return run.handled_at
    if run.status in (Status.FAILED, Status.EXPIRED, Status.CANCELLED):
        return run.cancelled_at or run.updated_at
    return None
