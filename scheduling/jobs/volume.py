"""How much a keyed job may ask of the broker: instants not long past, and per-user caps.

- An instant more than SCHEDULING_JOB_MAX_PAST in the past is refused, unless the job already
  has it (pending, or delivered: a retried PUT lists it again and nothing is scheduled). Such
  an instant would be published at once, years late; refusing says so to the client, where
  collapsing it into one run would change what was asked without a word.
- The pending runs of one API user's jobs (the jobs' `owner`) are capped in number
  (SCHEDULING_JOB_MAX_PENDING_RUNS_PER_USER) and in bytes, each run counting its job's
  payload and labels (SCHEDULING_JOB_MAX_PENDING_BYTES_PER_USER): what they will put on the
  broker. A write that would pass a cap is refused whole (its transaction rolls back).
- The plain-JSON queues they send to are capped too (SCHEDULING_JOB_MAX_QUEUES_PER_USER): the
  sweep fills no queue past SCHEDULING_QUEUE_TARGET_MAX_BACKLOG, so what one user can put on
  the broker is at most that many queues of that many messages.

Jobs that code or the admin creates have no owner and no cap.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from django.db import connections
from django.db.models import Count, Sum
from django.db.models.functions import Coalesce

from scheduling.delivery.publishing.targets import TargetError
from scheduling.jobs.models import Job, ScheduledJobRun
from scheduling.rows.clock import database_now
from scheduling.rows.conf import scheduling_settings
from scheduling.rows.databases import database_of
from scheduling.rows.states import Status
from scheduling.time.times import iso_utc

# pg_advisory_xact_lock(OWNER_LOCK, owner id): one write at a time per owner, so two concurrent
# PUTs of one user cannot each pass the cap with the other's runs unseen.
OWNER_LOCK = 0x5C4E_4A0B
# A run's instant as asked for: the sweep may have moved its due_at (a full queue's backlog).
BUSINESS_TIME = Coalesce("business_due_at", "due_at")


def check_not_long_past(job: Job, instants: Iterable[datetime]) -> None:
    """Refuses a new instant older than SCHEDULING_JOB_MAX_PAST, naming `schedules`."""
    max_past = scheduling_settings().job_max_past
    oldest_allowed = database_now(database_of(Job)) - timedelta(seconds=max_past)
    old = {instant for instant in instants if instant < oldest_allowed}
    if not old or job.pk is None:
        known: set[datetime] = set()
    else:
        has = job.runs.annotate(asked_for=BUSINESS_TIME).filter(
            asked_for__in=old, status__in=(Status.PENDING, Status.DELIVERED)
        )
        known = set(has.values_list("asked_for", flat=True))
    refused = sorted(old - known)
    if refused:
        raise TargetError(
            "schedules",
            f"{iso_utc(refused[0])} is more than {max_past:g} s in the past "
            f"(SCHEDULING_JOB_MAX_PAST); enter instants after {iso_utc(oldest_allowed)}"
            f" ({len(refused)} instant{'s' if len(refused) > 1 else ''} too old).",
        )


def take_ownership(job: Job, owner_id: int | None) -> None:
    """A job with no owner yet (created by code, or before owners) becomes the writer's."""
    if owner_id is not None and job.owner_id is None:
        Job.objects.filter(pk=job.pk).update(owner_id=owner_id)
        job.owner_id = owner_id


def lock_owner(owner_id: int) -> None:
    """Held until the write's transaction ends; SQLite (the embedded mode) has one writer.

    Taken after the write, before counting: a concurrent write of the same owner waits here
    until this one commits, and its count (a new statement) then sees these runs."""
    connection = connections[database_of(Job)]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [OWNER_LOCK, owner_id])


def check_owner_caps(job: Job, field: str) -> None:
    """After a write, in its transaction: the owner's pending runs and bytes within the caps;
    else a TargetError naming `field` (the write's transaction then rolls back)."""
    if job.owner_id is None:
        return
    lock_owner(job.owner_id)
    conf = scheduling_settings()
    pending = ScheduledJobRun.objects.filter(job__owner_id=job.owner_id, status=Status.PENDING)
    totals = pending.aggregate(runs=Count("pk"), size=Sum("job__run_bytes"))
    runs, size = totals["runs"], totals["size"] or 0
    if runs > conf.job_max_pending_runs_per_user:
        raise TargetError(
            "schedules",
            f"Your jobs would hold {runs:,} pending runs; at most "
            f"{conf.job_max_pending_runs_per_user:,} (SCHEDULING_JOB_MAX_PENDING_RUNS_PER_USER). "
            "Delete jobs or wait for their runs to be delivered.",
        )
    if size > conf.job_max_pending_bytes_per_user:
        raise TargetError(
            field,
            f"Your jobs' pending runs would carry {size:,} bytes (each run its job's payload "
            f"and labels as JSON; this job's: {job.run_bytes:,}); at most "
            f"{conf.job_max_pending_bytes_per_user:,} (SCHEDULING_JOB_MAX_PENDING_BYTES_PER_USER).",
        )
    check_owner_queues(job.owner_id, conf.job_max_queues_per_user)


def check_owner_queues(owner_id: int, most: int) -> None:
    """The plain-JSON queues the owner's jobs with pending runs send to: at most `most`."""
    targets = Job.objects.filter(
        owner_id=owner_id, callback__type="queue", runs__status=Status.PENDING
    )
    queues = set(targets.values_list("callback__queue", flat=True))
    if len(queues) > most:
        raise TargetError(
            "callback",
            f"Your jobs would send to {len(queues)} plain-JSON queues; at most {most:,} "
            "(SCHEDULING_JOB_MAX_QUEUES_PER_USER). Send to a queue your jobs already use, or "
            "delete the jobs of another.",
        )
