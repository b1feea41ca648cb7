"""A change of a job's fields: what it may touch, and the history it leaves.

A django.tasks task's job (scheduling.jobs.backends) keeps what enqueue() wrote: the task's
path, queue and backend (its labels), its arguments (its payload) and its callback. The worker
runs what these name, so no PATCH, PUT or admin form may change them; the run may still be
rescheduled, cancelled or retried.

Every change of a job's fields is written in its runs' history, as the actor's `rescheduled`
entry with the names of the fields changed (`detail.fields`): on each pending run, which will
publish the new values, or on the job's newest run when none is pending.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from scheduling.delivery.publishing.targets import TargetError
from scheduling.jobs.models import Job, ScheduledJobRun
from scheduling.rows.djangotasks import RUN_TASK
from scheduling.rows.history import record
from scheduling.rows.history.models import Kind
from scheduling.rows.states import Status

FIXED_AT_ENQUEUE = (
    "{path}: fixed at enqueue for a django.tasks task (this job runs {task!r}); enqueue the "
    "task again to run it with other arguments. Its run may still be rescheduled "
    "(POST /api/jobs/reschedule/), cancelled or retried."
)
EDITED = "job edited"  # the entries' detail.how


def runs_a_django_task(job: Job) -> bool:
    """The job of a task enqueued through SchedulingBackend (no API or admin can make one)."""
    return isinstance(job.callback, dict) and job.callback.get("task") == RUN_TASK


def changed_fields(job: Job, values: Mapping[str, Any]) -> list[str]:
    """The names of the fields whose new value (in `values`) differs from the job's."""
    return [name for name, value in values.items() if getattr(job, name) != value]


def check_fixed_at_enqueue(job: Job, values: Mapping[str, Any]) -> None:
    """Refuses a change of a django.tasks task's job, naming the first field it would change."""
    if not runs_a_django_task(job):
        return
    for name in changed_fields(job, values):
        path = _changed_path(name, getattr(job, name), values[name])
        task = str(job.labels.get("task", ""))[:200]
        raise TargetError(name, FIXED_AT_ENQUEUE.format(path=path, task=task))


def _changed_path(name: str, before: Any, after: Any) -> str:
    """`labels.task` rather than `labels`: the keys that changed (the callback is one whole)."""
    if name == "callback" or not (isinstance(before, dict) and isinstance(after, dict)):
        return name
    keys = sorted(key for key in before.keys() | after.keys() if before.get(key) != after.get(key))
    return ", ".join(f"{name}.{key}" for key in keys) or name


def apply_changes(job: Job, values: Mapping[str, Any]) -> list[str]:
    """Checks and saves `values` on the (locked) job; the names of the fields changed."""
    check_fixed_at_enqueue(job, values)
    changed = changed_fields(job, values)
    for name, value in values.items():
        setattr(job, name, value)
    job.save()
    return changed


def record_changes(job: Job, fields: Iterable[str]) -> None:
    """The change's history entries, in the transaction of the change, by the current actor."""
    names = sorted(set(fields))
    if not names:
        return
    runs = _runs_to_tell(job)
    entries = [
        record.entry(
            run,
            Kind.RESCHEDULED,
            detail={
                "how": EDITED,
                "fields": names,
                # Unmoved: the timeline reads a run's first due time from its first entry.
                "before": run.business_time.isoformat(),
                "after": run.business_time.isoformat(),
            },
        )
        for run in runs
    ]
    record.write(entries)


def _runs_to_tell(job: Job) -> list[ScheduledJobRun]:
    pending = list(job.runs.filter(status=Status.PENDING).order_by("pk"))
    return pending or list(job.runs.order_by("-pk")[:1])
