"""The abstract scheduled row every domain subclasses, and the QuerySet business code uses.

QuerySet methods are data-only: one UPDATE each, a row count back. Publishing lives in
sweep.py and the publishing package; a row only says what it publishes (outgoing.py).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, Self, TypeVar

from django.db import IntegrityError, connections, models, transaction
from django.db.models import F, Lookup, Q
from django.db.models.functions import Now
from django.db.models.signals import class_prepared
from django.dispatch import receiver

from scheduling.outgoing import OutgoingMessage, OutgoingTask


class Status(models.TextChoices):
    PENDING = "pending", "Pending"
    DELIVERED = "delivered", "Delivered"
    CANCELLED = "cancelled", "Cancelled"
    EXPIRED = "expired", "Expired"
    FAILED = "failed", "Failed"


def require_aware(value: object, field: str) -> datetime:
    """Refuse anything but an aware datetime, naming the field and the accepted form."""
    if not isinstance(value, datetime):
        raise TypeError(
            f"{field} must be a timezone-aware datetime, e.g. 2026-12-24T14:00:00+00:00; "
            f"got {type(value).__name__}"
        )
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(
            f"{field} must be timezone-aware (with an offset, e.g. 2026-12-24T14:00:00+00:00); "
            f"got the naive datetime {value.isoformat()}"
        )
    return value


MIN_YEAR, MAX_YEAR = 1970, 9000
OUT_OF_RANGE = (
    f"This date and time is out of range: enter one in the years {MIN_YEAR} to {MAX_YEAR}"
)
STORABLE_FROM = datetime(MIN_YEAR, 1, 1, tzinfo=UTC)
STORABLE_UNTIL = datetime(MAX_YEAR + 1, 1, 1, tzinfo=UTC)


def storable_utc(value: datetime) -> datetime:
    """An aware datetime in UTC, refused (ValueError) unless its year is MIN_YEAR..MAX_YEAR.

    PostgreSQL refuses offsets of 16 hours or more and psycopg cannot read years BC back, so
    a value is checked before any service writes it; every scheduled table also refuses a
    due_at outside the range (a CHECK constraint), which is what bounds bulk shifts.
    """
    try:
        utc = value.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:30+01:00 is in year 0
        raise ValueError(f"{OUT_OF_RANGE}.") from None
    if not MIN_YEAR <= utc.year <= MAX_YEAR:
        raise ValueError(f"{OUT_OF_RANGE}.")
    return utc


def iso_utc(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


# What the framework records about delivery; never read while publishing.
RECORD_FIELDS = (
    "delivered_at",
    "handled_at",
    "cancelled_at",
    "cancel_reason",
    "last_error",
    "created_at",
    "updated_at",
)
# Every column the framework owns; read-only in the admin and the API.
STATE_FIELDS = ("status", "version", "attempts", *RECORD_FIELDS)
SCHEDULING_FIELDS = ("due_at", *STATE_FIELDS)


def _bumped() -> dict[str, Any]:
    return {"version": F("version") + 1, "updated_at": Now()}


M = TypeVar("M", bound=models.Model)

# A row's place in its lifecycle, as the admin and the API filter it: pending -> delivered
# (awaiting handling) -> handled; or cancelled, expired, failed.
LIFECYCLE_STATES = ("pending", "awaiting_handling", "handled", "failed", "expired", "cancelled")


class ScheduledEventQuerySet(models.QuerySet[M]):
    def pending(self) -> Self:
        return self.filter(status=Status.PENDING)

    def due(self, now: datetime | None = None) -> Self:
        cutoff = Now() if now is None else require_aware(now, "now")
        return self.pending().filter(due_at__lte=cutoff)

    def awaiting_handling(self) -> Self:
        """Published, and not yet handled (models whose handler runs handle_once)."""
        return self.filter(status=Status.DELIVERED, handled_at__isnull=True)

    def handled(self) -> Self:
        return self.filter(status=Status.DELIVERED, handled_at__isnull=False)

    def lifecycle(self, state: str) -> Self:
        """Rows in one lifecycle state (LIFECYCLE_STATES), for the admin's and the API's filter."""
        if state not in LIFECYCLE_STATES:
            accepted = ", ".join(LIFECYCLE_STATES)
            raise ValueError(f"Unknown lifecycle state {state!r}; accepted: {accepted}.")
        return (
            getattr(self, state)()
            if state in ("awaiting_handling", "handled")
            else self.filter(status=state)
        )

    def reschedule(self, due_at: datetime) -> int:
        due_at = storable_utc(require_aware(due_at, "due_at"))
        return self._pending_for_update().exclude(due_at=due_at).update(due_at=due_at, **_bumped())

    def shift(self, delta: timedelta) -> int:
        if not isinstance(delta, timedelta):
            raise TypeError(
                f"delta must be a datetime.timedelta, e.g. timedelta(days=7); got {delta!r}"
            )
        if not delta:
            return 0
        try:
            with transaction.atomic():  # a savepoint: a refused shift leaves the caller usable
                return self._pending_for_update().update(due_at=F("due_at") + delta, **_bumped())
        except IntegrityError as exc:
            if due_range_constraint_name(self.model) not in str(exc):
                raise
            raise ValueError(f"{OUT_OF_RANGE}: this shift would move rows outside it.") from None

    def cancel(self, reason: str = "") -> int:
        return self._pending_for_update().update(
            status=Status.CANCELLED,
            cancelled_at=Now(),
            cancel_reason=reason[:255],
            updated_at=Now(),
        )

    def deliver_now(self) -> int:
        return self._pending_for_update().filter(due_at__gt=Now()).update(due_at=Now(), **_bumped())

    def retry(self) -> int:
        # A new version: a message of the earlier tries that is still queued finds its version
        # stale and does nothing, so the retried event is handled once.
        return self._rows_for_update(Q(status__in=[Status.FAILED, Status.EXPIRED])).update(
            status=Status.PENDING,
            due_at=Now(),
            attempts=0,
            last_error="",
            handled_at=None,
            **_bumped(),
        )

    def bulk_create(self, objs: Any, *args: Any, **kwargs: Any) -> list[M]:
        objs = list(objs)
        for obj in objs:
            require_aware(obj.due_at, "due_at")
        return super().bulk_create(objs, *args, **kwargs)

    def _pending_for_update(self) -> Self:
        return self._rows_for_update(Q(status=Status.PENDING))

    def _rows_for_update(self, condition: Q) -> Self:
        # With joins Django turns an UPDATE into `WHERE id IN (SELECT ... joins ...)` and drops
        # every other condition from the updated table. A row the sweep has locked would then be
        # re-checked after the sweep commits only against that snapshot subquery, and a
        # delivered row could be moved. Keeping the status test on the updated table itself
        # makes PostgreSQL re-check it on the row's newest version.
        if self.query.count_active_tables() <= 1:
            return self.filter(condition)
        selected = self.values("pk")
        selected.query.clear_ordering(clear_default=True)  # as `pk__in` does; kept if sliced
        rows = self.model._default_manager.all()
        if connections[self.db].vendor == "postgresql":
            # Not `id IN (SELECT ...)`, which PostgreSQL plans as a self-join: the selected ids
            # hashed or sorted, then one primary-key probe each, in that order. As an array the
            # selection is an InitPlan, run once, and the UPDATE walks the primary key through
            # it in id order, the table's order (measured in docs/benchmarks.md).
            return rows.filter(condition, _AnyOf(F("pk"), selected))  # type: ignore[return-value]
        return rows.filter(condition, pk__in=selected)  # type: ignore[return-value]


class _AnyOf(Lookup):
    """`lhs = ANY(ARRAY(subquery))` (PostgreSQL): the subquery's values as one array."""

    lookup_name = "any_of_array"

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)  # "(SELECT ...)"
        return f"{lhs} = ANY(ARRAY{rhs})", [*lhs_params, *rhs_params]


ScheduledEventManager = models.Manager.from_queryset(ScheduledEventQuerySet)


class ScheduledEvent(models.Model):
    """A row that must be delivered at `due_at`. Subclasses add the FK to their entity.

    Class-level hooks a subclass sets:
    - handler_task: the Celery task name that consumes this model's events (required);
    - queue: the queue its events go to (default: the app label);
    - event_type: the event's type name (default: "<app_label>.<model_name>");
    - max_lateness: a row not delivered by due_at + max_lateness expires instead (default none);
    - related_for_event: select_related paths that event_data() and expires_at() read;
    - awaits_handling: the handler runs handle_once, so a delivered row is done once handled,
      and an event not handled within SCHEDULING_HANDLING_TIMEOUT is published again (default:
      True when handler_task is set; a model publishing plain JSON ends at publishing);
    - at_most_once: the effect must never repeat, even after a crash (see handling.py).
    """

    Status = Status

    due_at = models.DateTimeField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    version = models.PositiveIntegerField(default=1)
    attempts = models.PositiveIntegerField(default=0)
    delivered_at = models.DateTimeField(null=True, blank=True)
    handled_at = models.DateTimeField(null=True, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)
    cancel_reason = models.CharField(max_length=255, blank=True, default="")
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ScheduledEventManager()

    handler_task: ClassVar[str] = ""
    queue: ClassVar[str] = ""
    event_type: ClassVar[str] = ""
    max_lateness: ClassVar[timedelta | None] = None
    related_for_event: ClassVar[tuple[str, ...]] = ()
    awaits_handling: ClassVar[bool | None] = None
    at_most_once: ClassVar[bool] = False

    class Meta:
        abstract = True
        ordering = ("due_at", "pk")
        # Declared (empty) so subclasses' migrations carry what class_prepared adds.
        indexes: ClassVar[list[models.Index]] = []
        constraints: ClassVar[list[models.BaseConstraint]] = []

    def __str__(self) -> str:
        return f"{self.event_id} due {iso_utc(self.due_at)} ({self.status})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        require_aware(self.due_at, "due_at")
        super().save(*args, **kwargs)

    @classmethod
    def get_handler_task(cls) -> str:
        if not cls.handler_task:
            raise NotImplementedError(
                f"{cls.__name__}.handler_task must name the Celery task that handles its events"
            )
        return cls.handler_task

    @classmethod
    def get_queue(cls) -> str:
        return cls.queue or cls._meta.app_label

    @classmethod
    def get_awaits_handling(cls) -> bool:
        return bool(cls.handler_task) if cls.awaits_handling is None else cls.awaits_handling

    @classmethod
    def get_event_type(cls) -> str:
        return cls.event_type or cls._meta.label_lower

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
        return (
            self.status == Status.DELIVERED and self.version == version and self.handled_at is None
        )


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


def due_range_constraint_name(model: type[models.Model]) -> str:
    return f"{model._meta.db_table}_due_at_storable"[:63]


def _due_range_constraint(model: type[ScheduledEvent]) -> models.CheckConstraint:
    # The database refuses a due_at it could not give back (years BC, beyond 9999), whatever
    # path writes it: a bulk shift that would carry one row out fails as a whole.
    return models.CheckConstraint(
        condition=Q(due_at__gte=STORABLE_FROM, due_at__lt=STORABLE_UNTIL),
        name=due_range_constraint_name(model),
    )
