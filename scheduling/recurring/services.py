"""Writes on schedules and their occurrences, as service functions named
<entity>_<action>: the repair, and the admin's and the API's actions. The sweep's chain step
and the editor's "make sure of the pending occurrence", which the models call, are chain.py's.

Locking, which keeps edits and the sweep from racing or deadlocking: the sweep holds its
claimed occurrences and takes the schedules with `FOR NO KEY UPDATE SKIP LOCKED`; a schedule
that an editor holds is skipped, and the editor (which always updates the schedule row first)
makes sure of the pending occurrence itself before it commits. So the sweep never waits for
an editor, and a successor is never inserted from a schedule version that is being replaced.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q
from django.db.models.functions import Now
from django.utils import timezone as django_timezone

from scheduling.recurring.calendars import schedule_plan
from scheduling.recurring.chain import insert_pending, occurrence_ensure
from scheduling.recurring.jitter import planned_fire
from scheduling.recurring.models import RecurringSchedule, ScheduledOccurrence
from scheduling.recurring.policies import finished
from scheduling.recurring.timeline import successor
from scheduling.rows.databases import database_of
from scheduling.rows.states import Status


def schedules_repair(*, limit: int = 10_000) -> int:
    """Give enabled schedules left without a pending occurrence (one cancelled by hand, or
    edits made around the ORM) the next one; returns how many were repaired."""
    has_pending = ScheduledOccurrence.objects.filter(
        schedule=OuterRef("pk"), status=Status.PENDING, manual=False, catch_up=False
    )
    broken = RecurringSchedule.objects.filter(enabled=True).exclude(Exists(has_pending))
    broken = broken.exclude(max_fires__isnull=False, fire_count__gte=F("max_fires"))
    unfinished = broken.filter(Q(ends_at__isnull=True) | Q(ends_at__gt=Now()))
    repaired = 0
    for pk in unfinished.order_by("pk").values_list("pk", flat=True)[:limit]:
        with transaction.atomic(using=database_of(RecurringSchedule)):
            # SKIP LOCKED: a schedule being edited is materialised by its editor.
            locked = RecurringSchedule.objects.select_for_update(skip_locked=True)
            schedule = locked.filter(pk=pk).first()
            if schedule is not None and occurrence_ensure(schedule=schedule) is not None:
                repaired += 1
    return repaired


def schedule_trigger(*, schedule: RecurringSchedule) -> ScheduledOccurrence:
    """Fire now, once, outside the timeline: the next sweep publishes it."""
    occurrence = ScheduledOccurrence(
        schedule=schedule,
        schedule_version=schedule.version,
        due_at=django_timezone.now(),
        manual=True,
    )
    occurrence.save()
    return occurrence


def schedule_preview(
    *, schedule: RecurringSchedule, count: int, after: datetime | None = None
) -> list[datetime]:
    """The next `count` fire times (fewer if the schedule ends), as its calendars leave them."""
    plan = schedule_plan(schedule, count=count, after=after or django_timezone.now())
    return [planned.at for planned in plan if planned.at is not None]


def schedule_set_enabled(*, schedule: RecurringSchedule, enabled: bool) -> bool:
    """Enable or disable; returns whether anything changed."""
    if schedule.enabled == enabled:
        return False
    schedule.enabled = enabled
    schedule.save()
    return True


def occurrence_skip(*, occurrence: ScheduledOccurrence) -> bool:
    """Cancel one pending occurrence and materialise the one after it; False if it was no
    longer pending."""
    with transaction.atomic(using=database_of(RecurringSchedule)):
        # The schedule first, as every editor does (see the module docstring).
        schedule = RecurringSchedule.objects.select_for_update().get(pk=occurrence.schedule_id)
        if not ScheduledOccurrence.objects.filter(pk=occurrence.pk).cancel("skipped"):
            # A sweep delivered it first, and skipped this locked schedule when chaining:
            # the successor is ours to insert, as for every editor.
            occurrence_ensure(schedule=schedule)
            return False
        if (
            occurrence.manual
            or occurrence.catch_up
            or occurrence.schedule_version != schedule.version
        ):
            return True
        occurrence.schedule = schedule
        fire = schedule.next_fire_after(planned_fire(occurrence))
        if fire is not None and schedule.enabled and not finished(schedule):
            insert_pending([successor(schedule, fire, 0)], model=ScheduledOccurrence)
        return True
