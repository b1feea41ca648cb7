"""The timeline's writes the models make themselves (models.py calls them from a schedule's save()
and the sweep's after_batch hook): the chain step, "make sure of the pending occurrence", a new
schedule's first occurrences. services.py has the rest, and the locking rules.

models.py imports this module, so it never imports models.py: the schedule comes in, and the
occurrence model with it (`schedule.occurrences.model`) or as `model`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import models
from django.db.models import F, Value
from django.db.models.functions import Coalesce, Greatest, Now
from django.utils import timezone as django_timezone

from scheduling.recurring.bulk import batch_successors
from scheduling.recurring.conf import recurring_settings
from scheduling.recurring.jitter import planned_fire
from scheduling.recurring.policies import MisfirePolicy, finished
from scheduling.recurring.shapes import Occurrence, Schedule
from scheduling.recurring.sql import HOLD_SCHEDULES, INHERIT_SCHEDULE_CONTEXT, INSERT_PENDING
from scheduling.recurring.timeline import (
    MICROSECOND,
    Successor,
    occurrence_successors,
    successor,
    timeline_successors,
)
from scheduling.rows import arrays
from scheduling.rows.databases import connection_of
from scheduling.rows.history import bulk
from scheduling.rows.history.models import Kind
from scheduling.rows.states import Status
from scheduling.rows.tracing import context as tracing


def schedule_model(model: type[Any]) -> type[Any]:
    """RecurringSchedule, from the occurrence model's `schedule` foreign key."""
    return model._meta.get_field("schedule").related_model


def occurrences_chain(
    *,
    model: type[Any],
    delivered: Sequence[Occurrence],
    expired: Sequence[Occurrence],
    now: datetime,
) -> int:
    """Inside the sweep's batch: cancel stale rows, insert each schedule's next occurrences,
    record the last fire. Returns how many occurrences were inserted. `model`: the rows'
    (ScheduledOccurrence)."""
    stale = [row for row in expired if row.is_stale()]
    if stale:
        reason = "stale schedule version"
        stale_rows = model.objects.located(stale)
        values = {"status": Status.CANCELLED, "cancel_reason": reason, "cancelled_at": Now()}
        bulk.apply(stale_rows, bulk.Change(Kind.CANCELLED, values, {"reason": reason}), held=True)
    rows = [row for row in [*delivered, *expired] if not row.manual and not row.is_stale()]
    held = _hold_schedules(rows, model=model)
    # A catch-up row records its fire; only the head carries the timeline on.
    heads = [row for row in rows if row.schedule_id in held and not row.catch_up]
    for row in heads:  # counted in this batch: max_fires reads the new count
        row.schedule.fire_count = held[row.schedule_id]
    conf = recurring_settings()
    return insert_pending(batch_successors(heads, now=now, conf=conf), model=model)


def insert_pending(successors: Sequence[Successor], *, model: type[Any]) -> int:
    """Insert new pending occurrences (`model`: ScheduledOccurrence) in one statement; returns
    how many were inserted. A head that would be a schedule's second is dropped (ON CONFLICT DO
    NOTHING on the one-pending index): the first one stands."""
    if not successors:
        return 0
    if connection_of(model).vendor != "postgresql":
        rows = [
            model(
                schedule_id=s.schedule_id,
                schedule_version=s.version,
                due_at=s.due_at,
                missed_run=s.missed_run,
                catch_up=s.catch_up,
                business_due_at=s.business_due_at,
            )
            for s in successors
        ]
        before = model.objects.count()
        model.objects.bulk_create(rows, ignore_conflicts=True)
        return model.objects.count() - before
    # One statement over arrays: the ORM's bulk_create spends more time building the
    # statement for a 1000-row batch than PostgreSQL spends running it.
    ids, versions, dues, runs, catch_ups, planned = zip(*successors, strict=True)
    literals = [
        *(arrays.numbers(ids), arrays.numbers(versions), arrays.times(dues)),
        *(arrays.numbers(runs), arrays.booleans(catch_ups), arrays.times(planned)),
    ]
    with connection_of(model).cursor() as cursor:
        cursor.execute(INSERT_PENDING, literals)
        inserted: int = cursor.rowcount
        if inserted and tracing.tracing_on():
            schedules = schedule_model(model)._meta.label_lower
            traced = arrays.numbers(sorted({s.schedule_id for s in successors}))
            cursor.execute(INHERIT_SCHEDULE_CONTEXT, [model._meta.label_lower, schedules, traced])
        return inserted


def _hold_schedules(rows: list[Occurrence], *, model: type[Any]) -> dict[int, int]:
    """Lock the rows' schedules and record their last fire and fire count; returns the ids
    held, each with its fire count.

    SKIP LOCKED: a schedule locked by an editor is the editor's to materialise (see the
    module docstring); waiting for it could deadlock on the occurrences this batch holds.
    """
    if not rows:
        return {}
    if connection_of(model).vendor != "postgresql":
        schedules = schedule_model(model)
        held = _lock_schedules(schedules, {row.schedule_id for row in rows})
        _record_last_fired(schedules, [r for r in rows if r.schedule_id in held])
        counts = schedules.objects.filter(pk__in=held).values_list("pk", "fire_count")
        return dict(counts)
    ids = [row.schedule_id for row in rows]
    fired = [planned_fire(row) if row.status == Status.DELIVERED else None for row in rows]
    first = [row.attempts == 0 for row in rows]  # attempts counts earlier publications
    with connection_of(model).cursor() as cursor:
        keys = arrays.numbers(ids)
        cursor.execute(HOLD_SCHEDULES, [keys, arrays.times(fired), arrays.booleans(first), keys])
        return dict(cursor.fetchall())


def _lock_schedules(schedules: type[Any], ids: set[int]) -> set[int]:
    locked = schedules.objects.select_for_update(skip_locked=True, no_key=True)
    return set(locked.filter(pk__in=ids).order_by("pk").values_list("pk", flat=True))


def _record_last_fired(schedules: type[Any], rows: list[Occurrence]) -> None:
    by_time: dict[datetime, list[int]] = defaultdict(list)
    for row in rows:
        if row.status == Status.DELIVERED:
            by_time[planned_fire(row)].append(row.schedule_id)
            if row.attempts == 0:  # a first publication is a fire
                schedules.objects.filter(pk=row.schedule_id).update(fire_count=F("fire_count") + 1)
    for fired, ids in by_time.items():
        value = Value(fired, output_field=models.DateTimeField())
        schedules.objects.filter(pk__in=ids).update(
            last_fired_at=Greatest(Coalesce("last_fired_at", value), value)
        )


def occurrence_ensure(*, schedule: Schedule, catch_up_from: datetime | None = None) -> Any:
    """Give an enabled schedule its pending occurrence if it has none (and, for a fire_all
    catch-up, the missed ones before it); call with the schedule row locked (after updating
    it), inside a transaction. `catch_up_from`: a resume with resume_policy catch_up, which
    publishes the fire times after it within the catch-up window."""
    if not schedule.enabled or finished(schedule):
        return None
    pending = schedule.occurrences.filter(status=Status.PENDING, manual=False, catch_up=False)
    # Waits for a sweep delivering the pending row; once it commits, the row is delivered.
    current = pending.select_for_update(of=("self",)).first()
    if current is not None:
        return current
    now = django_timezone.now()
    successors = (
        _resume_successors(schedule, catch_up_from, now)
        if catch_up_from is not None
        else _next_successors(schedule, now)
    )
    if not successors:
        return None
    # The head first: if a sweep that held the schedule before us inserted one meanwhile,
    # it inserted this catch-up too.
    model = schedule.occurrences.model
    if insert_pending(successors[-1:], model=model):
        insert_pending(successors[:-1], model=model)
    return pending.first()


def occurrences_begin(*, schedule: Schedule) -> datetime | None:
    """A schedule inserted in this transaction: insert its first occurrences (and, fire_all
    with a past starts_at, the missed ones) in one statement; returns the head's due time.

    Nothing to read or lock first: no sweep sees the schedule before it commits, so it has no
    occurrence yet (the reads occurrence_ensure makes cost a creation five of its queries)."""
    if not schedule.enabled or finished(schedule):
        return None
    successors = _next_successors(schedule, django_timezone.now(), new=True)
    if not successors:
        return None
    insert_pending(successors, model=schedule.occurrences.model)
    return successors[-1].due_at


def _next_successors(schedule: Schedule, now: datetime, *, new: bool = False) -> list[Successor]:
    """`new`: the schedule was inserted in this transaction, so it has no occurrences to read."""
    conf = recurring_settings()
    # The timeline goes on after its last fire time however that ended: delivered, expired,
    # failed, or cancelled by hand (a version change cancels with the old version).
    latest = (
        None
        if new
        else schedule.occurrences.filter(manual=False, schedule_version=schedule.version)
        .exclude(status=Status.PENDING, catch_up=False)
        .order_by("-due_at")
        .first()
    )
    if latest is not None:
        latest.schedule = schedule
        return occurrence_successors(latest, now=now, conf=conf)
    starts_before_now = schedule.starts_at < now
    if (
        starts_before_now
        and schedule.misfire_policy == MisfirePolicy.FIRE_ALL
        and not _ever_materialised(schedule, new=new)
    ):
        # A new fire_all schedule catches up from its starts_at, even one in the past.
        return timeline_successors(
            schedule, after=schedule.starts_at - MICROSECOND, missed_run=0, now=now, conf=conf
        )
    # A new version starts from now (what an edit or a disabled spell left out is not sent),
    # and after the last fire of any version, which a sweep may have sent a moment ago.
    last = None if new else _last_fire(schedule)
    fire = schedule.next_fire_after(max(now, last or now))
    return [successor(schedule, fire, 0)] if fire is not None else []


def _resume_successors(schedule: Schedule, paused_at: datetime, now: datetime) -> list[Successor]:
    """A resume with resume_policy catch_up: the fire times since the pause (or the last fire
    after it), within the catch-up window, as a catch-up, then the next one."""
    after = max(paused_at, _last_fire(schedule) or paused_at)
    conf = recurring_settings()
    return timeline_successors(
        schedule, after=after, missed_run=0, now=now, conf=conf, catch_up=True
    )


def _last_fire(schedule: Schedule) -> datetime | None:
    happened = (Status.DELIVERED, Status.EXPIRED, Status.FAILED)
    rows = schedule.occurrences.filter(manual=False, status__in=happened).order_by("-due_at")
    last = rows.only("due_at", "business_due_at").first()
    if last is None:
        return None
    last.schedule = schedule  # an older version's jitter differs: its due_at then stands
    return planned_fire(last)


def _ever_materialised(schedule: Schedule, *, new: bool = False) -> bool:
    # last_fired_at too: the purge may have deleted every occurrence of older versions.
    return schedule.last_fired_at is not None or (
        not new and schedule.occurrences.filter(manual=False).exists()
    )
