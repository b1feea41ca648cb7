"""Recurring schedules: a cron-like timeline whose next fire time is one pending row.

Each enabled schedule has exactly one pending timeline occurrence, its head (a partial unique
index refuses a second). The sweep publishes it like any scheduled row; `after_batch` then
inserts the one after, computed from the delivered row's own due time, in the same transaction.
A `fire_all` catch-up inserts every missed fire time within the schedule's `catchup_window` in
one statement, as `catch_up` rows beside the head; only the head carries the timeline on.

The writes save() and the sweep's hooks make live in chain.py and overlap.py, the others in
services.py (with the locking rules), the fire-time arithmetic in timeline.py and cron/, the
checks in validation.py. This module imports them; they take the schedule, or the model class,
as an argument and never import it back (services.py, above it, does).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any, ClassVar, Self

from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.db.models import F, Q
from django.utils import timezone as django_timezone

from scheduling.delivery.publishing.targets import task_queue
from scheduling.recurring import cron
from scheduling.recurring.calendars import CalendarPolicy, calendar_fire
from scheduling.recurring.chain import occurrence_ensure, occurrences_begin, occurrences_chain
from scheduling.recurring.changes import (
    SWEEP_FIELDS,
    TIMELINE_FIELDS,
    VERSIONED_FIELDS,
    compared,
    snapshot,
)
from scheduling.recurring.conf import DEFAULT_CATCHUP_WINDOW, recurring_settings
from scheduling.recurring.overlap import needs_planned_time, occurrences_keep_back
from scheduling.recurring.policies import (
    DstGapPolicy,
    DstRepeatPolicy,
    MisfirePolicy,
    track_pause,
)
from scheduling.recurring.policy_fields import SchedulePolicies
from scheduling.recurring.templates import render_shared
from scheduling.recurring.timeline import MICROSECOND
from scheduling.recurring.validation import schedule_errors
from scheduling.rows.databases import database_of
from scheduling.rows.instances import quick_from_db
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.outgoing import OutgoingJson, OutgoingMessage
from scheduling.rows.states import Status
from scheduling.rows.tracing import context as tracing
from scheduling.time.times import iso_utc


class RecurringSchedule(SchedulePolicies):
    MisfirePolicy = MisfirePolicy
    CalendarPolicy = CalendarPolicy

    name = models.SlugField(max_length=100, unique=True)
    cron = models.CharField(
        max_length=200,
        help_text="5 fields (minute first), Quartz 6 or 7 fields (second first, then year), "
        "@daily-style macros, @every 90m, or @at 2026-12-24T09:00:00Z.",
    )
    timezone = models.CharField(
        max_length=64,
        default="UTC",
        help_text="IANA name the cron is read in, e.g. Europe/Paris.",
    )
    # Database defaults too: rows inserted in SQL (a bench, older code) get the same values.
    template_timezone = models.CharField(
        max_length=64,
        blank=True,
        default="",
        db_default="",
        help_text="IANA name every template variable is computed in, e.g. America/Los_Angeles; "
        "empty: the schedule's timezone.",
    )
    task = models.CharField(
        max_length=200, blank=True, default="", help_text="Celery task name (or set queue)."
    )
    queue = models.CharField(
        max_length=200, blank=True, default="", help_text="Queue for plain JSON (or set task)."
    )
    payload_template = models.JSONField(
        default=dict, blank=True, help_text="JSON; strings may contain ${variable}."
    )
    enabled = models.BooleanField(default=True)
    misfire_policy = models.CharField(
        max_length=16, choices=MisfirePolicy.choices, default=MisfirePolicy.FIRE_ONCE
    )
    max_lateness = models.DurationField(
        null=True, blank=True, help_text="An occurrence later than this expires unpublished."
    )
    catchup_window = models.DurationField(
        default=DEFAULT_CATCHUP_WINDOW,
        db_default=DEFAULT_CATCHUP_WINDOW,
        help_text="fire_all: after downtime or a past starts_at, every fire time missed within "
        "this much before now is published, each with its own processTime; older ones are "
        "skipped. Default one day.",
    )
    jitter = models.PositiveIntegerField(
        default=0,
        db_default=0,
        help_text="Seconds: each fire is due at a stable offset in [t, t + jitter) after its "
        "planned time t, so schedules sharing a cron do not all fire in the same second; "
        "processTime and the history keep t. 0: no jitter; at most 86,400 (one day).",
    )
    starts_at = models.DateTimeField(default=django_timezone.now)
    ends_at = models.DateTimeField(null=True, blank=True)

    version = models.PositiveIntegerField(default=1, editable=False)
    last_fired_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    # Bookkeeping the sweep's per-occurrence work never reads (scheduling.rows.instances).
    not_read_by_the_sweep = ("created_at", "updated_at", "last_fired_at")

    _loaded: dict[str, Any]
    # The pending head's due time, as the API and the admin annotate it; save() sets it too.
    next_fire_at: datetime | None

    class Meta:
        db_table = "recurring_schedule"
        ordering = ("name",)
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.CheckConstraint(
                condition=(Q(task="") & ~Q(queue="")) | (~Q(task="") & Q(queue="")),
                name="recurring_schedule_one_target",
            ),
            models.CheckConstraint(
                condition=Q(ends_at__isnull=True) | Q(ends_at__gt=F("starts_at")),
                name="recurring_schedule_ends_after_start",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Validated, and keeps exactly one pending occurrence in step with the schedule."""
        self.clean()
        resume_from = track_pause(self)
        using = database_of(RecurringSchedule)
        # The create or edit's trace context, which the occurrences from now on take.
        with tracing.creation(RecurringSchedule) as context, transaction.atomic(using=using):
            if not self._state.adding:
                tracing.keep(RecurringSchedule, [self.pk], context, using=using)
                saved = _save_existing(self, *args, resume_from=resume_from, **kwargs)
                self.next_fire_at = _due_at(saved)
            elif self.pk is None:  # an INSERT: the schedule has no occurrence yet
                super().save(*args, **kwargs)
                tracing.keep(RecurringSchedule, [self.pk], context, using=using)
                self.next_fire_at = occurrences_begin(schedule=self)
            else:  # an explicit pk may name a stored row, which save() then updates
                super().save(*args, **kwargs)
                tracing.keep(RecurringSchedule, [self.pk], context, using=using)
                self.next_fire_at = _due_at(occurrence_ensure(schedule=self))
        self._loaded = snapshot(self)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        with transaction.atomic(using=database_of(RecurringSchedule)):
            # Lock the schedule first (the sweep then skips it), then wait out a sweep that is
            # delivering its occurrence, so no successor appears between the two deletes.
            RecurringSchedule.objects.select_for_update().filter(pk=self.pk).first()
            list(self.occurrences.select_for_update().filter(status=Status.PENDING))
            return super().delete(*args, **kwargs)

    @classmethod
    def from_db(cls, db: str | None, field_names: Any, values: Any, **kwargs: Any) -> Self:
        # Django 6.1 passes fetch_mode=; 5.2 passes nothing more.
        # A sweep reads a thousand schedules a batch: no __init__ where it would change nothing.
        instance = quick_from_db(cls, db, field_names, values) or super().from_db(
            db, field_names, values, **kwargs
        )
        if set(VERSIONED_FIELDS) <= set(field_names):
            instance._loaded = snapshot(instance)
        return instance

    def timeline_changed(self, names: Sequence[str] = TIMELINE_FIELDS) -> bool:
        # Unknown (not loaded from the database, or loaded partly) counts as changed.
        loaded = getattr(self, "_loaded", None)
        return loaded is None or any(loaded[name] != compared(self, name) for name in names)

    @property
    def variables_timezone(self) -> str:
        """The zone of the payload template's variables: template_timezone, else timezone."""
        return self.template_timezone or self.timezone

    def next_fire_after(self, after: datetime) -> datetime | None:
        """The schedule's first fire time after `after`, within starts_at and ends_at, as its
        calendars leave it (a moved fire may come after ends_at)."""
        if self.calendars:
            return calendar_fire(self.cron_fire_after, self, after)
        return self.cron_fire_after(after)

    def cron_fire_after(self, after: datetime) -> datetime | None:
        """The cron's own first fire time after `after`, before any calendar."""
        policy = (self.dst_gap_policy, self.dst_repeat_policy)
        return _next_fire(self.cron, self.timezone, self.starts_at, self.ends_at, after, policy)

    def clean(self) -> None:
        errors = schedule_errors(
            self,
            check_fires=self._state.adding or self.timeline_changed(),
            check_target=self._state.adding or self.timeline_changed(("task", "queue")),
        )
        if errors:
            raise ValidationError(errors)


def _due_at(occurrence: ScheduledOccurrence | None) -> datetime | None:
    return occurrence.due_at if occurrence is not None else None


def _save_existing(
    schedule: RecurringSchedule, *args: Any, resume_from: datetime | None, **kwargs: Any
) -> ScheduledOccurrence | None:
    changed = schedule.timeline_changed(VERSIONED_FIELDS)
    if changed:
        schedule.version = F("version") + 1
        if kwargs.get("update_fields") is not None:
            kwargs["update_fields"] = {*kwargs["update_fields"], "version", "updated_at"}
    # last_fired_at and fire_count are the sweep's to write; a form save must not move them.
    kwargs.setdefault(
        "update_fields",
        [
            field.name
            for field in schedule._meta.concrete_fields
            if not field.primary_key and field.name not in (*SWEEP_FIELDS, "created_at")
        ],
    )
    models.Model.save(schedule, *args, **kwargs)
    if changed:
        schedule.refresh_from_db(fields=["version"])
        ScheduledOccurrence.objects.filter(schedule=schedule, manual=False).cancel(
            f"schedule changed (version {schedule.version})"
        )
    return occurrence_ensure(schedule=schedule, catch_up_from=resume_from)


@lru_cache(maxsize=65536)
def _next_fire(
    expression: str,
    tz: str,
    starts_at: datetime,
    ends_at: datetime | None,
    after: datetime,
    dst_policy: tuple[str, str] = (DstGapPolicy.SHIFT, DstRepeatPolicy.AUTO),
) -> datetime | None:
    # Pure, so cached: schedules sharing a cron and a fire time (a batch of them, typically)
    # compute it once.
    gap, repeat = dst_policy
    fire = cron.next_fire(
        expression,
        max(after, starts_at - MICROSECOND),
        tz,
        anchor=starts_at,
        dst_gap=gap,
        dst_repeat=repeat,
    )
    if fire is None or (ends_at is not None and fire > ends_at):
        return None
    return fire


class ScheduledOccurrence(ScheduledEvent):
    """One fire time of a schedule; the pending one is its next fire."""

    schedule = models.ForeignKey(
        RecurringSchedule, on_delete=models.CASCADE, related_name="occurrences", db_index=False
    )
    schedule_version = models.PositiveIntegerField()
    manual = models.BooleanField(
        default=False, help_text="Triggered by hand, outside the timeline."
    )
    # In a fire_all catch-up: how many missed fire times in a row came before this one.
    missed_run = models.PositiveIntegerField(default=0)
    catch_up = models.BooleanField(
        default=False,
        db_default=False,
        help_text="A missed fire time published by a fire_all catch-up; the timeline goes on "
        "from the schedule's head occurrence, not from this one.",
    )

    related_for_event = ("schedule",)
    event_type = "scheduling.recurring"

    class Meta(ScheduledEvent.Meta):
        db_table = "scheduled_occurrence"
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(
                fields=["schedule"],
                condition=Q(status=Status.PENDING.value, manual=False, catch_up=False),
                name="one_pending_occurrence_per_schedule",
            )
        ]
        indexes: ClassVar[list[models.Index]] = [
            # Serves a schedule's history (admin, API, the last fire before an edit).
            models.Index(fields=["schedule", "due_at"], name="occurrence_schedule_due"),
            # Serves the sweep's claim, ORDER BY due_at, id: cron fire times fall on the same
            # second for many schedules, and the framework's due_at-only index then makes
            # every batch sort all of them.
            models.Index(
                fields=["due_at", "id"],
                condition=Q(status=Status.PENDING.value),
                name="occurrence_pending_due_id",
            ),
        ]

    @property
    def fire_time(self) -> datetime:
        """The fire time this occurrence stands for: its due_at, unless jitter moved it later
        or buffer_one held it past that (overlap.py); then its planned time, which
        business_due_at keeps."""
        return self.fire_time_of(self.schedule)

    def fire_time_of(self, schedule: RecurringSchedule) -> datetime:
        """fire_time, given this occurrence's schedule (a related read costs a descriptor's
        lookup, and the sweep's per-row path would make it several times an occurrence)."""
        return self.business_time if needs_planned_time(schedule) else self.due_at

    @property
    def fire_id(self) -> str:
        """Stable per fire time: `<name>-<unix seconds>`; a manual trigger has its own."""
        return self._fire_id(self.schedule.name, self.fire_time)

    def _fire_id(self, name: str, fire_time: datetime) -> str:
        if self.manual:
            return f"{name}-manual-{self.pk}"
        return f"{name}-{int(fire_time.timestamp())}"

    def is_stale(self, schedule: RecurringSchedule | None = None) -> bool:
        schedule = schedule or self.schedule
        return not self.manual and (
            self.schedule_version != schedule.version or not schedule.enabled
        )

    def expires_at(self) -> datetime | None:
        schedule = self.schedule
        if self.is_stale(schedule):
            return self.due_at - MICROSECOND  # never published; after_batch cancels it
        deadlines = []
        if schedule.max_lateness is not None:
            deadlines.append(self.due_at + schedule.max_lateness)
        if schedule.misfire_policy == MisfirePolicy.SKIP and not self.manual and not self.catch_up:
            grace = timedelta(seconds=recurring_settings().misfire_grace)
            deadlines.append(self.due_at + grace)
        # A catch_up row also comes from a resume with resume_policy catch_up, any policy.
        if (schedule.misfire_policy == MisfirePolicy.FIRE_ALL or self.catch_up) and not self.manual:
            deadlines.append(self.due_at + schedule.catchup_window)
        return min(deadlines) if deadlines else None

    def event_data(self, schedule: RecurringSchedule | None = None) -> dict[str, Any]:
        schedule = schedule or self.schedule  # read once: the sweep's per-row path
        fire_time = self.fire_time_of(schedule)
        name = schedule.name
        return {
            "id": self._fire_id(name, fire_time),
            "schedule": name,
            "scheduled_for": iso_utc(fire_time),
            "manual": self.manual,
            "payload": render_shared(
                schedule.payload_template,
                fire_time=fire_time,
                tz=schedule.variables_timezone,
                schedule_name=name,
            ),
        }

    def to_message(self, published_at: str) -> OutgoingMessage:
        schedule = self.schedule
        if schedule.queue:
            body = {**self.event_data(schedule), "published_at": published_at}
            return OutgoingJson(queue=schedule.queue, body=body)
        return self.task_message(published_at, schedule.task, task_queue(schedule.task))

    @classmethod
    def keep_back(cls, rows: list[Self], *, now: datetime) -> set[Any]:
        # Overlap policies: a fire whose predecessor is not handled is skipped or held.
        return occurrences_keep_back(rows, now=now, model=cls)

    @classmethod
    def after_batch(
        cls, *, delivered: list[Self], expired: list[Self], failed: list[Self], now: datetime
    ) -> None:
        # A failed occurrence is a fire time lost, like an expired one: the schedule goes on.
        occurrences_chain(model=cls, delivered=delivered, expired=[*expired, *failed], now=now)
