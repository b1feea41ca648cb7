"""The abstract scheduled row every domain subclasses, and the QuerySet business code uses.

QuerySet methods are data-only: one UPDATE each, a row count back. Publishing lives in
sweep.py and the publishing package; a row only says what it publishes (outgoing.py).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import partial
from typing import Any, ClassVar, Self

from django.apps import apps
from django.core import checks
from django.db import models
from django.db.models import Q
from django.db.models.signals import class_prepared
from django.dispatch import receiver

from scheduling.rows.conf import rate_limit_of
from scheduling.rows.djangotasks import RUN_HANDLER, as_task
from scheduling.rows.due_partitions import DuePartitions
from scheduling.rows.outgoing import OutgoingMessage, OutgoingTask
from scheduling.rows.policy import own_or_setting, validate_policy
from scheduling.rows.querysets import ScheduledEventQuerySet
from scheduling.rows.quiet import holds as quiet_rows
from scheduling.rows.quiet.hours import QuietHours, validate_quiet_hours
from scheduling.rows.states import Status, lifecycle_state
from scheduling.rows.tracing import context as tracing
from scheduling.time.times import (
    STORABLE_FROM,
    STORABLE_UNTIL,
    due_range_constraint_name,
    iso_utc,
    require_aware,
)

# Names hosts and the framework import from here.
__all__ = ["RECORD_FIELDS", "SCHEDULING_FIELDS", "STATE_FIELDS", "ScheduledEvent"]


# What the framework records about delivery; never read while publishing.
RECORD_FIELDS = (
    "business_due_at",
    "delivered_at",
    "handled_at",
    "effect_started_at",
    "cancelled_at",
    "cancel_reason",
    "last_error",
    "created_at",
    "updated_at",
)
# Every column the framework owns; read-only in the admin and the API.
STATE_FIELDS = ("status", "version", "attempts", *RECORD_FIELDS)
SCHEDULING_FIELDS = ("due_at", *STATE_FIELDS)


ScheduledEventManager = models.Manager.from_queryset(ScheduledEventQuerySet)


class ScheduledEvent(models.Model):
    """A row that must be delivered at `due_at`. Subclasses add the FK to their entity.

    Class-level hooks a subclass sets:
    - handler_task: the Celery task name that consumes this model's events (required), or a
      django.tasks @task (the object or its dotted path), which the framework runs inside
      handle_once with the event as its argument;
    - queue: the queue its events go to (default: the app label);
    - event_type: the event's type name (default: "<app_label>.<model_name>");
    - max_lateness: a row not delivered by due_at + max_lateness expires instead (default none);
    - related_for_event: select_related paths that event_data() and expires_at() read;
    - awaits_handling: the handler runs handle_once, so a delivered row is done once handled,
      and an event not handled within SCHEDULING_HANDLING_TIMEOUT is published again (default:
      True when handler_task is set; a model publishing plain JSON ends at publishing);
    - at_most_once: the effect must never repeat, even after a crash (see handling.py);
    - handler_batch_size: N > 0 makes the handler take batches: the sweep publishes one message
      of up to N events (kwargs {"events": [...]}) and the handler runs `handle_batch`
      (scheduling.delivery.handling.batches); 0 (the default): one message and one `handle_once` an event;
    - max_attempts, retry_backoff, retry_backoff_max (seconds), handling_timeout (seconds): this
      model's retry policy; None (the default) takes SCHEDULING_MAX_ATTEMPTS,
      SCHEDULING_RETRY_BACKOFF, SCHEDULING_RETRY_BACKOFF_MAX, SCHEDULING_HANDLING_TIMEOUT.
      The framework reads them through get_max_attempts() and the like.
    - quiet_hours: spans in which its rows are not delivered (scheduling.rows.quiet.hours: an object
      with excluded_span(at) such as DailyQuietHours, or a function of the row returning one
      or None); quiet_policy: "deliver_at_end" (default), "fold" (one per quiet_fold_by
      entity, the latest wins) or "skip"; quiet_related: select_related paths quiet_hours
      reads. Applied as rows are created (bulk_create, save) and moved (docs/adding-scheduling.md).
    - rate_limit: publish at most this many events per second or minute ("500/s", "10/m"),
      across every sweeper of every host (default None: unlimited); SCHEDULING_RATE_LIMITS
      overrides it. The framework reads it through get_rate_limit().
    - fairness_key: a field path through the row's relations ("purchase__release__artist__account",
      "training__team"): the sweep claims due rows round-robin across its values, in due order
      within each, so a key with 20 rows due is not held behind one with 200,000 when a rate limit
      or the batch size cuts the claim (default None: due order alone; scheduling.rows.fairness).
    - partitioning: DuePartitions(interval=timedelta(days=1), premake=14) range-partitions the
      table on due_at (PostgreSQL; its migration runs PartitionByDueTime); SCHEDULING_PARTITIONS
      overrides it. Default None: one plain table (docs/partitioning.md).
    """

    Status = Status

    due_at = models.DateTimeField()
    # The time the business asked for, once the framework moved due_at away from it (a retry's
    # backoff, deliver_now(), retry()); NULL while due_at is that time. See business_time.
    business_due_at = models.DateTimeField(null=True, blank=True, editable=False)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    version = models.PositiveIntegerField(default=1)
    attempts = models.PositiveIntegerField(default=0)
    delivered_at = models.DateTimeField(null=True, blank=True)
    handled_at = models.DateTimeField(null=True, blank=True)
    # At-most-once models: when the handler's effect began (its claim, committed before the
    # effect). Delivered, not handled and set: the row is in flight (see handling.py).
    effect_started_at = models.DateTimeField(null=True, blank=True, editable=False)
    cancelled_at = models.DateTimeField(null=True, blank=True)
    cancel_reason = models.CharField(max_length=255, blank=True, default="")
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ScheduledEventManager()

    handler_task: ClassVar[Any] = ""  # a Celery task name, or a django.tasks Task or its path
    queue: ClassVar[str] = ""
    event_type: ClassVar[str] = ""
    max_lateness: ClassVar[timedelta | None] = None
    related_for_event: ClassVar[tuple[str, ...]] = ()
    awaits_handling: ClassVar[bool | None] = None
    at_most_once: ClassVar[bool] = False
    handler_batch_size: ClassVar[int] = 0
    max_attempts: ClassVar[int | None] = None
    retry_backoff: ClassVar[float | None] = None
    retry_backoff_max: ClassVar[float | None] = None
    handling_timeout: ClassVar[float | None] = None
    quiet_hours: ClassVar[QuietHours | None] = None
    quiet_policy: ClassVar[str] = "deliver_at_end"
    quiet_fold_by: ClassVar[tuple[str, ...]] = ()
    quiet_related: ClassVar[tuple[str, ...]] = ()
    rate_limit: ClassVar[str | None] = None
    fairness_key: ClassVar[str | None] = None
    partitioning: ClassVar[DuePartitions | None] = None
    # The business fields the admin's changelist searches (ModelAdmin.search_fields lookups,
    # e.g. "purchase__customer__email"), unless the model's admin lists its own.
    search_fields: ClassVar[tuple[str, ...]] = ()

    class Meta:
        abstract = True
        ordering = ("due_at", "pk")
        # Declared (empty) so subclasses' migrations carry what class_prepared adds.
        indexes: ClassVar[list[models.Index]] = []
        constraints: ClassVar[list[models.BaseConstraint]] = []

    def __str__(self) -> str:
        return f"{self.event_id} due {iso_utc(self.due_at)} ({self.lifecycle.replace('_', ' ')})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        require_aware(self.due_at, "due_at")
        if not self._state.adding:
            super().save(*args, **kwargs)
            return
        with tracing.creation(type(self)) as carrier:
            if self.quiet_hours is not None:  # held, folded or skipped
                insert = partial(super().save, *args, **kwargs)
                quiet_rows.create(type(self), [self], insert, using=kwargs.get("using"))
            else:
                super().save(*args, **kwargs)
            tracing.keep(type(self), [self.pk], carrier, using=self._state.db or "default")

    @classmethod
    def check(cls, **kwargs: Any) -> list[checks.CheckMessage]:
        # Here, not in scheduling.delivery.checks: without the app installed, its checks never load.
        errors = super().check(**kwargs)
        if not apps.is_installed("scheduling"):
            errors.append(
                checks.Error(
                    f"{cls._meta.label} is a scheduled model, but 'scheduling' is not in "
                    "INSTALLED_APPS: no sweep finds it, so its rows are never delivered.",
                    hint="Add 'scheduling' to INSTALLED_APPS.",
                    obj=cls,
                    id="scheduling.E005",
                )
            )
        return errors

    @classmethod
    def get_handler_task(cls) -> str:
        if not cls.handler_task:
            raise NotImplementedError(
                f"{cls.__name__}.handler_task must name the Celery task that handles its events"
            )
        # A django.tasks @task is run by the framework's own Celery task, inside handle_once.
        return RUN_HANDLER if as_task(cls.handler_task) is not None else str(cls.handler_task)

    @classmethod
    def get_queue(cls) -> str:
        return cls.queue or cls._meta.app_label

    @classmethod
    def get_awaits_handling(cls) -> bool:
        return bool(cls.handler_task) if cls.awaits_handling is None else cls.awaits_handling

    @classmethod
    def get_event_type(cls) -> str:
        return cls.event_type or cls._meta.label_lower

    @classmethod
    def get_max_attempts(cls) -> int:
        """Tries (each publication, and each failed handling) before the row is `failed`."""
        return own_or_setting(cls.max_attempts, "max_attempts")

    @classmethod
    def get_retry_backoff(cls) -> float:
        """Seconds before a failed handling is tried again, doubling with each try."""
        return own_or_setting(cls.retry_backoff, "retry_backoff")

    @classmethod
    def get_retry_backoff_max(cls) -> float:
        return own_or_setting(cls.retry_backoff_max, "retry_backoff_max")

    @classmethod
    def get_handling_timeout(cls) -> float:
        """Seconds a published event may wait to be handled before it is published again."""
        return own_or_setting(cls.handling_timeout, "handling_timeout")

    @classmethod
    def get_rate_limit(cls) -> str | None:
        """How fast the sweep may publish this model's events ("500/s"); None: unlimited."""
        return rate_limit_of(cls._meta.label, cls.rate_limit)

    @property
    def business_time(self) -> datetime:
        """When the business asked for this row to happen, whatever retries did to due_at."""
        return self.business_due_at or self.due_at

    @property
    def lifecycle(self) -> str:
        """Where the row is in its lifecycle (LIFECYCLE_STATES), e.g. "in_flight"."""
        return lifecycle_state(self.status, self.handled_at, self.effect_started_at)

    @property
    def event_id(self) -> str:
        return f"{self._meta.label_lower}:{self.pk}:v{self.version}"

    def expires_at(self) -> datetime | None:
        """The instant after which an undelivered row expires instead of being published."""
        return self.due_at + self.max_lateness if self.max_lateness is not None else None

    def event_data(self) -> dict[str, Any]:
        """The domain part of the message body; must be JSON-serialisable."""
        return {}

    def to_event(self, published_at: str) -> dict[str, Any]:
        return {
            "id": self.event_id,
            "type": self.get_event_type(),
            "model": self._meta.label_lower,
            "pk": self.pk,
            "version": self.version,
            "due_at": iso_utc(self.due_at),
            "published_at": published_at,
            "data": self.event_data(),
        }

    def to_message(self, published_at: str) -> OutgoingMessage:
        """What the sweep publishes for this row: by default a task message for handler_task.

        Built-in domains with per-row targets return an OutgoingJson for a plain queue.
        """
        return self.task_message(published_at, self.get_handler_task(), self.get_queue())

    def task_message(self, published_at: str, task_name: str, queue: str) -> OutgoingTask:
        """This row's event for `task_name` on `queue`; rows with per-row targets use it too."""
        kwargs = {"event": self.to_event(published_at)}
        return OutgoingTask(task_name=task_name, queue=queue, task_id=self.event_id, kwargs=kwargs)

    @classmethod
    def keep_back(cls, rows: list[Self], *, now: datetime) -> set[Any]:
        """Called by the sweep inside the batch's transaction, before publishing: the pks of
        claimed rows it must not publish now. The model has written what becomes of each
        (moved its due_at later, cancelled it), with its history. Default: none (or what a
        model's `hold_back`, this hook's name before 0.x, returns: for one release)."""
        return cls.hold_back(rows, now=now)

    @classmethod
    def hold_back(cls, rows: list[Self], *, now: datetime) -> set[Any]:
        """Deprecated name of keep_back (a "hold" is the holding sweep's)."""
        return set()

    @classmethod
    def after_batch(
        cls, *, delivered: list[Self], expired: list[Self], failed: list[Self], now: datetime
    ) -> None:
        """Called by the sweep inside the batch's transaction, after marking the rows.

        The rows given are delivered, expired or (out of attempts) failed in the database;
        whatever this writes commits or rolls back with them. `now` is the batch's cutoff, by
        the database's clock. Recurring schedules insert their next occurrence here; rows it
        inserts that are already due are delivered by the same sweep.
        """

    def can_be_handled(self, version: int) -> bool:
        """Published as this version, and not handled yet (nor claimed, for at-most-once)."""
        return self.version == version and self.lifecycle == "awaiting_handling"


def _pending_due_index(model: type[ScheduledEvent]) -> models.Index:
    # Serves the sweep's claim: WHERE status = 'pending' AND due_at <= now() ORDER BY due_at, pk.
    # Only pending rows are in it, so its size follows the backlog, not the table's history.
    # The pk column gives the claim its order outright: on due_at alone, a burst of rows due in
    # the same second would be sorted again by every claim (docs/benchmarks.md).
    fields = ["due_at", model._meta.pk.name]
    index = models.Index(
        fields=fields, condition=Q(status=Status.PENDING.value), name="pending_due"
    )
    index.set_name_with_model(model)
    return index


def _awaiting_handling_index(model: type[ScheduledEvent]) -> models.Index:
    # Serves the sweep's reconciliation: delivered rows not handled within the handling timeout
    # (WHERE status = 'delivered' AND handled_at IS NULL AND delivered_at < ...). Only rows in
    # flight are in it, a handful whatever the table's size.
    index = models.Index(
        fields=["delivered_at"],
        condition=Q(status=Status.DELIVERED.value, handled_at__isnull=True),
        name="awaiting_handling",
    )
    index.set_name_with_model(model)
    return index


def _failed_index(model: type[ScheduledEvent]) -> models.Index:
    # Serves counting and listing failed rows (/metrics, the "needs attention" page, newest
    # first): only failed rows are in it, so a scrape stays cheap on a table of millions.
    fields = ["updated_at", model._meta.pk.name]
    index = models.Index(fields=fields, condition=Q(status=Status.FAILED.value), name="failed")
    index.set_name_with_model(model)
    return index


@receiver(class_prepared)
def refuse_a_bad_retry_policy(sender: type[models.Model], **kwargs: Any) -> None:
    if issubclass(sender, ScheduledEvent) and not sender._meta.abstract:
        validate_policy(sender)
        validate_quiet_hours(sender)


@receiver(class_prepared)
def add_due_range_check_and_indexes(sender: type[models.Model], **kwargs: Any) -> None:
    # The index name must be short and unique per table, which "%(class)s" names cannot promise
    # (30 characters at most), so each concrete subclass gets a hashed name once it is prepared.
    if not issubclass(sender, ScheduledEvent) or sender._meta.abstract:
        return
    sender._meta.constraints = [*sender._meta.constraints, _due_range_constraint(sender)]
    added = []
    if not any(
        index.fields[:1] == ["due_at"] and index.condition for index in sender._meta.indexes
    ):
        added.append(_pending_due_index(sender))  # unless the model declares its own
    if sender.get_awaits_handling():
        added.append(_awaiting_handling_index(sender))
    added.append(_failed_index(sender))
    sender._meta.indexes = [*sender._meta.indexes, *added]


def _due_range_constraint(model: type[ScheduledEvent]) -> models.CheckConstraint:
    # The database refuses a due_at it could not give back (years BC, beyond 9999), whatever
    # path writes it: a bulk shift that would carry one row out fails as a whole.
    return models.CheckConstraint(
        condition=Q(due_at__gte=STORABLE_FROM, due_at__lt=STORABLE_UNTIL),
        name=due_range_constraint_name(model),
    )
