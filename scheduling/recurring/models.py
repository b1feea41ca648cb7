"""Recurring schedules: a cron-like timeline whose next fire time is one pending row.

Each enabled schedule has exactly one pending timeline occurrence, its head (a partial unique
index refuses a second). The sweep publishes it like any scheduled row; `after_batch` then
inserts the one after, computed from the delivered row's own due time, in the same transaction.
A `fire_all` catch-up inserts every missed fire time within the schedule's `catchup_window` in
one statement, as `catch_up` rows beside the head; only the head carries the timeline on.

Locking, which keeps edits and the sweep from racing or deadlocking: the sweep holds its
claimed occurrences and takes the schedules with `FOR NO KEY UPDATE SKIP LOCKED`; a schedule
that an editor holds is skipped, and the editor (which always updates the schedule row first)
makes sure of the pending occurrence itself before it commits. So the sweep never waits for
an editor, and a successor is never inserted from a schedule version that is being replaced.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any, ClassVar, NamedTuple, Self

from celery import current_app
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import connection, models, transaction
from django.db.models import Exists, F, OuterRef, Q, Value
from django.db.models.functions import Coalesce, Greatest, Now
from django.utils import timezone as django_timezone

from scheduling.conf import scheduling_settings
from scheduling.messages import OutgoingJson, OutgoingMessage, OutgoingTask
from scheduling.models import ScheduledEvent, Status, iso_utc, storable_utc
from scheduling.recurring import cron
from scheduling.recurring.templates import TemplateError, render, validate_template
from scheduling.targets import TargetError, check_callback

MICROSECOND = timedelta(microseconds=1)


# --- settings -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecurringSettings:
    catch_up_chunk: int  # fire_all: missed fire times one chain step inserts, at most
    misfire_grace: float  # seconds late before a fire time counts as missed


def recurring_settings() -> RecurringSettings:
    conf = scheduling_settings()
    return RecurringSettings(
        catch_up_chunk=conf.batch_size, misfire_grace=conf.recurring_misfire_grace
    )


DEFAULT_CATCHUP_WINDOW = timedelta(days=1)
MAX_CATCHUP_WINDOW = timedelta(days=366)
CATCHUP_WINDOW_FORM = "a positive duration of at most 366 days, e.g. P1D or PT6H"


# --- models ---------------------------------------------------------------------------------


class MisfirePolicy(models.TextChoices):
    FIRE_ALL = "fire_all", "Fire every missed time"
    FIRE_ONCE = "fire_once", "Fire once, then move on"
    SKIP = "skip", "Skip missed times"


# Changing any of these moves the fire times or the target: the schedule is checked again.
TIMELINE_FIELDS = ("cron", "timezone", "task", "queue", "starts_at", "ends_at", "enabled")
# Changing any of these (every field a person edits) bumps the version and replaces the
# pending occurrences: one created under an older version is never published.
VERSIONED_FIELDS = (
    *TIMELINE_FIELDS,
    "name",
    "template_timezone",
    "payload_template",
    "misfire_policy",
    "max_lateness",
    "catchup_window",
)


class RecurringSchedule(models.Model):
    MisfirePolicy = MisfirePolicy

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
    starts_at = models.DateTimeField(default=django_timezone.now)
    ends_at = models.DateTimeField(null=True, blank=True)
    version = models.PositiveIntegerField(default=1, editable=False)
    last_fired_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

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
        with transaction.atomic():
            if not self._state.adding:
                self.next_fire_at = _due_at(_save_existing(self, *args, **kwargs))
            elif self.pk is None:  # an INSERT: the schedule has no occurrence yet
                super().save(*args, **kwargs)
                self.next_fire_at = occurrences_begin(schedule=self)
            else:  # an explicit pk may name a stored row, which save() then updates
                super().save(*args, **kwargs)
                self.next_fire_at = _due_at(occurrence_ensure(schedule=self))
        self._loaded = _snapshot(self)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        with transaction.atomic():
            # Lock the schedule first (the sweep then skips it), then wait out a sweep that is
            # delivering its occurrence, so no successor appears between the two deletes.
            RecurringSchedule.objects.select_for_update().filter(pk=self.pk).first()
            list(self.occurrences.select_for_update().filter(status=Status.PENDING))
            return super().delete(*args, **kwargs)

    @classmethod
    def from_db(cls, db: str | None, field_names: Any, values: Any) -> Self:
        instance = super().from_db(db, field_names, values)
        if set(VERSIONED_FIELDS) <= set(field_names):
            instance._loaded = _snapshot(instance)
        return instance

    def timeline_changed(self, names: Sequence[str] = TIMELINE_FIELDS) -> bool:
        # Unknown (not loaded from the database, or loaded partly) counts as changed.
        loaded = getattr(self, "_loaded", None)
        return loaded is None or any(loaded[name] != getattr(self, name) for name in names)

    @property
    def variables_timezone(self) -> str:
        """The zone of the payload template's variables: template_timezone, else timezone."""
        return self.template_timezone or self.timezone

    def next_fire_after(self, after: datetime) -> datetime | None:
        """The schedule's first fire time after `after`, within starts_at and ends_at."""
        return _next_fire(self.cron, self.timezone, self.starts_at, self.ends_at, after)

    def clean(self) -> None:
        errors = schedule_errors(
            self,
            check_fires=self._state.adding or self.timeline_changed(),
            check_target=self._state.adding or self.timeline_changed(("task", "queue")),
        )
        if errors:
            raise ValidationError(errors)


def _snapshot(schedule: RecurringSchedule) -> dict[str, Any]:
    # A deep copy: a payload edited in place must still compare as changed.
    loaded = {name: getattr(schedule, name) for name in VERSIONED_FIELDS}
    loaded["payload_template"] = copy.deepcopy(loaded["payload_template"])
    return loaded


def _due_at(occurrence: ScheduledOccurrence | None) -> datetime | None:
    return occurrence.due_at if occurrence is not None else None


def _save_existing(
    schedule: RecurringSchedule, *args: Any, **kwargs: Any
) -> ScheduledOccurrence | None:
    changed = schedule.timeline_changed(VERSIONED_FIELDS)
    if changed:
        schedule.version = F("version") + 1
        if kwargs.get("update_fields") is not None:
            kwargs["update_fields"] = {*kwargs["update_fields"], "version", "updated_at"}
    # last_fired_at is the sweep's to write; a form save must not move it back.
    kwargs.setdefault(
        "update_fields",
        [
            field.name
            for field in schedule._meta.concrete_fields
            if not field.primary_key and field.name not in ("last_fired_at", "created_at")
        ],
    )
    models.Model.save(schedule, *args, **kwargs)
    if changed:
        schedule.refresh_from_db(fields=["version"])
        ScheduledOccurrence.objects.filter(schedule=schedule, manual=False).cancel(
            f"schedule changed (version {schedule.version})"
        )
    return occurrence_ensure(schedule=schedule)


@lru_cache(maxsize=65536)
def _next_fire(
    expression: str, tz: str, starts_at: datetime, ends_at: datetime | None, after: datetime
) -> datetime | None:
    # Pure, so cached: schedules sharing a cron and a fire time (a batch of them, typically)
    # compute it once.
    fire = cron.next_fire(expression, max(after, starts_at - MICROSECOND), tz, anchor=starts_at)
    if fire is None or (ends_at is not None and fire > ends_at):
        return None
    return fire


def schedule_errors(
    schedule: RecurringSchedule, *, check_fires: bool = True, check_target: bool = True
) -> dict[str, str]:
    """Every problem with a schedule, by field; empty when it can be saved. A stored target
    that later rules refuse does not keep the schedule from being edited or disabled."""
    errors: dict[str, str] = {}
    for field, check in (
        ("name", lambda: validate_slug(schedule.name)),
        ("timezone", lambda: cron.time_zone(schedule.timezone)),
        ("template_timezone", lambda: _check_template_timezone(schedule.template_timezone)),
        ("cron", lambda: cron.parse(schedule.cron)),
        ("payload_template", lambda: validate_template(schedule.payload_template)),
    ):
        try:
            check()
        except (ValidationError, cron.CronError, TemplateError) as exc:
            errors[field] = (
                "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
            )
    errors.update(_target_errors(schedule, check_rules=check_target))
    errors.update(_time_errors(schedule))
    if check_fires and schedule.enabled and not errors and not _fires_at_all(schedule):
        errors["cron"] = (
            f"{schedule.cron!r} never fires after {iso_utc(max(schedule.starts_at, django_timezone.now()))}"
            + (f" and before ends_at {iso_utc(schedule.ends_at)}" if schedule.ends_at else "")
        )
    return errors


def _check_template_timezone(name: str) -> None:
    if name:
        cron.time_zone(name)


def _target_errors(schedule: RecurringSchedule, *, check_rules: bool) -> dict[str, str]:
    if bool(schedule.task) == bool(schedule.queue):
        message = "Set exactly one target: task (a Celery task name) or queue (a queue name)."
        return {"task": message, "queue": message}
    if not check_rules:
        return {}
    # The same rules as a keyed job's callback: no internal task, no queue Celery or the
    # broker reads, no odd characters.
    field = "task" if schedule.task else "queue"
    try:
        check_callback({"type": field, field: getattr(schedule, field)})
    except TargetError as error:
        message = error.message.removeprefix(f"{field}: ")
        return {field: message[0].upper() + message[1:]}
    return {}


def _time_errors(schedule: RecurringSchedule) -> dict[str, str]:
    errors: dict[str, str] = {}
    for name in ("starts_at", "ends_at"):
        value = getattr(schedule, name)
        if value is None:
            continue
        if not isinstance(value, datetime) or value.utcoffset() is None:
            errors[name] = f"{name} must be an aware datetime, e.g. 2026-12-24T14:00:00Z."
            continue
        try:
            storable_utc(value)
        except ValueError as exc:
            errors[name] = f"{name}: {exc}"
    if not errors and schedule.ends_at is not None and schedule.ends_at <= schedule.starts_at:
        errors["ends_at"] = "ends_at must be after starts_at."
    lateness = schedule.max_lateness
    if lateness is not None and lateness <= timedelta(0):
        errors["max_lateness"] = "max_lateness must be a positive duration, e.g. PT15M."
    window = schedule.catchup_window
    if not isinstance(window, timedelta) or not timedelta(0) < window <= MAX_CATCHUP_WINDOW:
        errors["catchup_window"] = f"catchup_window must be {CATCHUP_WINDOW_FORM}."
    return errors


def _fires_at_all(schedule: RecurringSchedule) -> bool:
    return schedule.next_fire_after(django_timezone.now()) is not None


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
            # every batch sort all of them (measured: 3x slower claims at 100k at once).
            models.Index(
                fields=["due_at", "id"],
                condition=Q(status=Status.PENDING.value),
                name="occurrence_pending_due_id",
            ),
        ]

    @property
    def fire_id(self) -> str:
        """Stable per fire time: `<name>-<unix seconds>`; a manual trigger has its own."""
        if self.manual:
            return f"{self.schedule.name}-manual-{self.pk}"
        return f"{self.schedule.name}-{int(self.due_at.timestamp())}"

    def is_stale(self) -> bool:
        schedule = self.schedule
        return not self.manual and (
            self.schedule_version != schedule.version or not schedule.enabled
        )

    def expires_at(self) -> datetime | None:
        if self.is_stale():
            return self.due_at - MICROSECOND  # never published; after_batch cancels it
        schedule = self.schedule
        deadlines = []
        if schedule.max_lateness is not None:
            deadlines.append(self.due_at + schedule.max_lateness)
        if schedule.misfire_policy == MisfirePolicy.SKIP and not self.manual:
            grace = timedelta(seconds=recurring_settings().misfire_grace)
            deadlines.append(self.due_at + grace)
        if schedule.misfire_policy == MisfirePolicy.FIRE_ALL and not self.manual:
            deadlines.append(self.due_at + schedule.catchup_window)
        return min(deadlines) if deadlines else None

    def event_data(self) -> dict[str, Any]:
        schedule = self.schedule
        return {
            "id": self.fire_id,
            "schedule": schedule.name,
            "scheduled_for": iso_utc(self.due_at),
            "manual": self.manual,
            "payload": render(
                schedule.payload_template,
                fire_time=self.due_at,
                tz=schedule.variables_timezone,
                schedule_name=schedule.name,
            ),
        }

    def to_message(self, published_at: str) -> OutgoingMessage:
        schedule = self.schedule
        if schedule.queue:
            body = {**self.event_data(), "published_at": published_at}
            return OutgoingJson(queue=schedule.queue, body=body)
        return OutgoingTask(
            task_name=schedule.task,
            queue=task_queue(schedule.task),
            task_id=self.event_id,
            kwargs={"event": self.to_event(published_at)},
        )

    @classmethod
    def after_batch(
        cls, *, delivered: list[Self], expired: list[Self], failed: list[Self], now: datetime
    ) -> None:
        # A failed occurrence is a fire time lost, like an expired one: the schedule goes on.
        occurrences_chain(delivered=delivered, expired=[*expired, *failed], now=now)


def task_queue(task_name: str) -> str:
    """The queue Celery's routes give the task, else the default queue."""
    route = current_app.amqp.router.route({}, task_name)
    queue = route.get("queue")
    return str(getattr(queue, "name", queue) or current_app.conf.task_default_queue)


# --- services -------------------------------------------------------------------------------


def occurrences_chain(
    *,
    delivered: Sequence[ScheduledOccurrence],
    expired: Sequence[ScheduledOccurrence],
    now: datetime,
) -> int:
    """Inside the sweep's batch: cancel stale rows, insert each schedule's next occurrences,
    record the last fire. Returns how many occurrences were inserted."""
    stale = [row for row in expired if row.is_stale()]
    if stale:
        ScheduledOccurrence.objects.filter(pk__in=[row.pk for row in stale]).update(
            status=Status.CANCELLED, cancel_reason="stale schedule version", cancelled_at=Now()
        )
    rows = [row for row in [*delivered, *expired] if not row.manual and not row.is_stale()]
    held = _hold_schedules(rows)
    # A catch-up row records its fire; only the head carries the timeline on.
    heads = [row for row in rows if row.schedule_id in held and not row.catch_up]
    conf = recurring_settings()
    successors = [s for row in heads for s in occurrence_successors(row, now=now, conf=conf)]
    return insert_pending(successors)


def insert_pending(successors: Sequence[Successor]) -> int:
    """Insert new pending occurrences in one statement; returns how many were inserted. A head
    that would be a schedule's second is dropped (ON CONFLICT DO NOTHING on the one-pending
    index): the first one stands."""
    if not successors:
        return 0
    if connection.vendor != "postgresql":
        rows = [
            ScheduledOccurrence(
                schedule_id=s.schedule_id,
                schedule_version=s.version,
                due_at=s.due_at,
                missed_run=s.missed_run,
                catch_up=s.catch_up,
            )
            for s in successors
        ]
        before = ScheduledOccurrence.objects.count()
        ScheduledOccurrence.objects.bulk_create(rows, ignore_conflicts=True)
        return ScheduledOccurrence.objects.count() - before
    # One statement over arrays: the ORM's bulk_create spends more time building the
    # statement for a 1000-row batch than PostgreSQL spends running it.
    arrays: list[list[Any]] = [list(column) for column in zip(*successors, strict=True)]
    with connection.cursor() as cursor:
        cursor.execute(INSERT_PENDING, arrays)
        return cursor.rowcount


INSERT_PENDING = """
INSERT INTO scheduled_occurrence (schedule_id, schedule_version, due_at, missed_run, catch_up,
    manual, status, version, attempts, cancel_reason, last_error, created_at, updated_at)
SELECT schedule_id, schedule_version, due_at, missed_run, catch_up,
    false, 'pending', 1, 0, '', '', now(), now()
FROM unnest(%s::bigint[], %s::integer[], %s::timestamptz[], %s::integer[], %s::boolean[])
    AS successor(schedule_id, schedule_version, due_at, missed_run, catch_up)
ON CONFLICT DO NOTHING
"""


def _hold_schedules(rows: list[ScheduledOccurrence]) -> set[int]:
    """Lock the rows' schedules and record their last fire; returns the ids held.

    SKIP LOCKED: a schedule locked by an editor is the editor's to materialise (see the
    module docstring); waiting for it could deadlock on the occurrences this batch holds.
    """
    if not rows:
        return set()
    if connection.vendor != "postgresql":
        held = _lock_schedules({row.schedule_id for row in rows})
        _record_last_fired([r for r in rows if r.schedule_id in held])
        return held
    ids = [row.schedule_id for row in rows]
    fired = [row.due_at if row.status == Status.DELIVERED else None for row in rows]
    with connection.cursor() as cursor:
        cursor.execute(HOLD_SCHEDULES, [ids, fired, ids])
        return {schedule_id for (schedule_id,) in cursor.fetchall()}


# GREATEST ignores NULLs: an expired row (fired NULL) leaves last_fired_at as it is.
HOLD_SCHEDULES = """
UPDATE recurring_schedule AS schedule
SET last_fired_at = GREATEST(schedule.last_fired_at, fire.fired_at)
FROM unnest(%s::bigint[], %s::timestamptz[]) AS fire(schedule_id, fired_at)
WHERE schedule.id = fire.schedule_id AND schedule.id IN (
    SELECT id FROM recurring_schedule WHERE id = ANY(%s::bigint[])
    ORDER BY id FOR NO KEY UPDATE SKIP LOCKED
)
RETURNING schedule.id
"""


def _lock_schedules(ids: set[int]) -> set[int]:
    locked = RecurringSchedule.objects.select_for_update(skip_locked=True, no_key=True)
    return set(locked.filter(pk__in=ids).order_by("pk").values_list("pk", flat=True))


def _record_last_fired(rows: list[ScheduledOccurrence]) -> None:
    by_time: dict[datetime, list[int]] = defaultdict(list)
    for row in rows:
        if row.status == Status.DELIVERED:
            by_time[row.due_at].append(row.schedule_id)
    for fired, ids in by_time.items():
        value = Value(fired, output_field=models.DateTimeField())
        RecurringSchedule.objects.filter(pk__in=ids).update(
            last_fired_at=Greatest(Coalesce("last_fired_at", value), value)
        )


class Successor(NamedTuple):
    schedule_id: int
    version: int
    due_at: datetime
    missed_run: int
    catch_up: bool = False


def occurrence_successors(
    occurrence: ScheduledOccurrence, *, now: datetime, conf: RecurringSettings
) -> list[Successor]:
    """What follows this occurrence, by the schedule's misfire policy: its next fire time,
    or in a fire_all catch-up every fire time missed since, the last of them the head."""
    return timeline_successors(
        occurrence.schedule,
        after=occurrence.due_at,
        missed_run=occurrence.missed_run,
        now=now,
        conf=conf,
    )


def timeline_successors(
    schedule: RecurringSchedule,
    *,
    after: datetime,
    missed_run: int,
    now: datetime,
    conf: RecurringSettings,
) -> list[Successor]:
    """The schedule's fire times after `after` that are due by the misfire policy, then its
    next one; empty when the schedule has ended. The last one returned is the head."""
    missed_before = now - timedelta(seconds=conf.misfire_grace)
    fire = schedule.next_fire_after(max(after, _floor(schedule, now, missed_before) - MICROSECOND))
    if fire is None:
        return []
    if fire >= missed_before or schedule.misfire_policy != MisfirePolicy.FIRE_ALL:
        run = missed_run + 1 if fire < missed_before else 0
        return [Successor(schedule.pk, schedule.version, fire, run)]
    # A catch-up: every missed fire time up to now, and the next one. A long one goes in
    # chunks: the chunk's last row is the head, and delivering it inserts the next chunk.
    times = [fire]
    while times[-1] <= now and len(times) < conf.catch_up_chunk:
        following = schedule.next_fire_after(times[-1])
        if following is None:
            break
        times.append(following)
    last = len(times) - 1
    return [
        Successor(
            schedule.pk,
            schedule.version,
            time,
            missed_run + 1 + index if time < missed_before else 0,
            catch_up=index < last,
        )
        for index, time in enumerate(times)
    ]


def _floor(schedule: RecurringSchedule, now: datetime, missed_before: datetime) -> datetime:
    """The earliest fire time still worth publishing now."""
    floors = [now - schedule.max_lateness] if schedule.max_lateness is not None else []
    if schedule.misfire_policy == MisfirePolicy.FIRE_ALL:
        floors.append(now - schedule.catchup_window)
    else:
        floors.append(missed_before)
    return max(floors)


def _occurrence(
    schedule: RecurringSchedule, due_at: datetime, *, missed_run: int = 0, manual: bool = False
) -> ScheduledOccurrence:
    return ScheduledOccurrence(
        schedule=schedule,
        schedule_version=schedule.version,
        due_at=due_at,
        missed_run=missed_run,
        manual=manual,
    )


def occurrence_ensure(*, schedule: RecurringSchedule) -> ScheduledOccurrence | None:
    """Give an enabled schedule its pending occurrence if it has none (and, for a fire_all
    catch-up, the missed ones before it); call with the schedule row locked (after updating
    it), inside a transaction."""
    if not schedule.enabled:
        return None
    pending = schedule.occurrences.filter(status=Status.PENDING, manual=False, catch_up=False)
    # Waits for a sweep delivering the pending row; once it commits, the row is delivered.
    current = pending.select_for_update(of=("self",)).first()
    if current is not None:
        return current
    successors = _next_successors(schedule, django_timezone.now())
    if not successors:
        return None
    # The head first: if a sweep that held the schedule before us inserted one meanwhile,
    # it inserted this catch-up too.
    if insert_pending(successors[-1:]):
        insert_pending(successors[:-1])
    return pending.first()


def occurrences_begin(*, schedule: RecurringSchedule) -> datetime | None:
    """A schedule inserted in this transaction: insert its first occurrences (and, fire_all
    with a past starts_at, the missed ones) in one statement; returns the head's due time.

    Nothing to read or lock first: no sweep sees the schedule before it commits, so it has no
    occurrence yet (the reads occurrence_ensure makes cost a creation five of its queries)."""
    if not schedule.enabled:
        return None
    successors = _next_successors(schedule, django_timezone.now(), new=True)
    if not successors:
        return None
    insert_pending(successors)
    return successors[-1].due_at


def _next_successors(
    schedule: RecurringSchedule, now: datetime, *, new: bool = False
) -> list[Successor]:
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
    return [Successor(schedule.pk, schedule.version, fire, 0)] if fire is not None else []


def _last_fire(schedule: RecurringSchedule) -> datetime | None:
    happened = (Status.DELIVERED, Status.EXPIRED, Status.FAILED)
    rows = schedule.occurrences.filter(manual=False, status__in=happened).order_by("-due_at")
    return rows.values_list("due_at", flat=True).first()


def _ever_materialised(schedule: RecurringSchedule, *, new: bool = False) -> bool:
    # last_fired_at too: the purge may have deleted every occurrence of older versions.
    return schedule.last_fired_at is not None or (
        not new and schedule.occurrences.filter(manual=False).exists()
    )


def _next_occurrence(schedule: RecurringSchedule, now: datetime) -> ScheduledOccurrence | None:
    """The schedule's next head occurrence, unsaved (see _next_successors)."""
    successors = _next_successors(schedule, now)
    if not successors:
        return None
    head = successors[-1]
    return _occurrence(schedule, head.due_at, missed_run=head.missed_run)


def schedules_repair(*, limit: int = 10_000) -> int:
    """Give enabled schedules left without a pending occurrence (one cancelled by hand, or
    edits made around the ORM) the next one; returns how many were repaired."""
    has_pending = ScheduledOccurrence.objects.filter(
        schedule=OuterRef("pk"), status=Status.PENDING, manual=False, catch_up=False
    )
    broken = RecurringSchedule.objects.filter(enabled=True).exclude(Exists(has_pending))
    unfinished = broken.filter(Q(ends_at__isnull=True) | Q(ends_at__gt=Now()))
    repaired = 0
    for pk in unfinished.order_by("pk").values_list("pk", flat=True)[:limit]:
        with transaction.atomic():
            # SKIP LOCKED: a schedule being edited is materialised by its editor.
            locked = RecurringSchedule.objects.select_for_update(skip_locked=True)
            schedule = locked.filter(pk=pk).first()
            if schedule is not None and occurrence_ensure(schedule=schedule) is not None:
                repaired += 1
    return repaired


def schedule_trigger(*, schedule: RecurringSchedule) -> ScheduledOccurrence:
    """Fire now, once, outside the timeline: the next sweep publishes it."""
    occurrence = _occurrence(schedule, django_timezone.now(), manual=True)
    occurrence.save()
    return occurrence


def schedule_preview(
    *, schedule: RecurringSchedule, count: int, after: datetime | None = None
) -> list[datetime]:
    """The next `count` fire times (fewer if the schedule ends)."""
    times: list[datetime] = []
    current = after or django_timezone.now()
    while len(times) < count:
        fire = schedule.next_fire_after(current)
        if fire is None:
            break
        times.append(fire)
        current = fire
    return times


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
    with transaction.atomic():
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
        fire = schedule.next_fire_after(occurrence.due_at)
        if fire is not None and schedule.enabled:
            _occurrence(schedule, fire).save()
        return True
