"""The QuerySet business code uses on every scheduled model.

Each bulk method is one UPDATE of the selected rows (pending ones; `retry`: failed or expired),
returning how many changed. On PostgreSQL the same statement writes each changed row's
history entry (scheduling.rows.history.bulk); elsewhere one transaction does.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from functools import partial
from typing import Any, Self, TypeVar

from django.db import IntegrityError, connections, models, transaction
from django.db.models import F, Lookup, Q
from django.db.models.functions import Coalesce, Now

from scheduling.rows.databases import write_db
from scheduling.rows.history import bulk
from scheduling.rows.history.models import Kind
from scheduling.rows.quiet import holds as quiet_rows
from scheduling.rows.states import LIFECYCLE_STATES, Status
from scheduling.rows.tracing import context as tracing
from scheduling.time.times import (
    OUT_OF_RANGE,
    due_range_constraint_name,
    require_aware,
    storable_utc,
)

M = TypeVar("M", bound=models.Model)


class LateRetryError(ValueError):
    """retry() of rows past their model's max_lateness, without allow_late=True."""

    def __init__(self, message: str, *, count: int, earliest: datetime, max_lateness: timedelta):
        super().__init__(message)
        self.count = count
        self.earliest = earliest
        self.max_lateness = max_lateness


def _bumped() -> dict[str, Any]:
    return {"version": F("version") + 1, "updated_at": Now()}


def _business_time_kept() -> dict[str, Any]:
    # The framework moves due_at (deliver_now, retry, backoff); the time the business asked
    # for stays in business_due_at, set on the first such move.
    return {"business_due_at": Coalesce(F("business_due_at"), F("due_at"))}


# Lifecycle states that are not statuses: a published row keeps status `delivered` through them.
NOT_A_STATUS = {
    "awaiting_handling": ".awaiting_handling()",
    "in_flight": ".in_flight()",
    "handled": ".handled()",
}


def status_refusal(lookup: str, value: Any) -> str | None:
    """Why a filter on `status` can match no row, if it names a lifecycle state that is not a
    status (the admin shows "Handled"; the column never holds it)."""
    if lookup.partition("__")[0] != "status":
        return None
    values = value if isinstance(value, list | tuple | set | frozenset) else [value]
    for state in values:
        if isinstance(state, str) and state.lower() in NOT_A_STATUS:
            return (
                f"status is never {state!r}: a published row keeps status 'delivered' while it "
                f"awaits handling, is in flight and once handled. Use "
                f"{NOT_A_STATUS[state.lower()]} (or .lifecycle({state.lower()!r}))."
            )
    return None


def refuse_lifecycle_statuses(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    pending: list[Any] = [*args, *kwargs.items()]
    while pending:
        item = pending.pop()
        if isinstance(item, Q):
            pending.extend(item.children)
        elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
            why = status_refusal(item[0], item[1])
            if why is not None:
                raise ValueError(why)


class ScheduledEventQuerySet(models.QuerySet[M]):
    def _filter_or_exclude(self, negate: bool, args: Any, kwargs: Any) -> Self:
        # filter(status="handled") would silently match nothing: refused, naming .handled().
        refuse_lifecycle_statuses(tuple(args), dict(kwargs))
        return super()._filter_or_exclude(negate, args, kwargs)  # type: ignore[misc]

    def located(self, rows: Iterable[Any]) -> Self:
        """Exactly `rows` (instances read from the table), each found by its (id, due time): on
        a table partitioned by due time only their partitions' indexes are probed, where ids
        alone probe every partition's. For rows whose due time cannot have moved since they
        were read: rows this transaction locked (the sweep's claimed batch)."""
        rows = list(rows)
        return self.filter(pk__in=[row.pk for row in rows], due_at__in={r.due_at for r in rows})

    def pending(self) -> Self:
        return self.filter(status=Status.PENDING)

    def due(self, now: datetime | None = None) -> Self:
        cutoff = Now() if now is None else require_aware(now, "now")
        return self.pending().filter(due_at__lte=cutoff)

    def awaiting_handling(self) -> Self:
        """Published, and not yet handled (models whose handler runs handle_once); an
        at-most-once effect not begun either (that is in_flight)."""
        return self.filter(awaiting_handling_q())

    def in_flight(self) -> Self:
        """At-most-once rows whose effect began and has not reported back yet."""
        return self.filter(in_flight_q())

    def stuck_in_flight(self, now: datetime | None = None) -> Self:
        """In flight for longer than the model's handling timeout: the worker most likely
        stopped during the effect, and a person must check whether it happened."""
        return self.filter(stuck_in_flight_q(self.model, now))

    def handled(self) -> Self:
        return self.filter(status=Status.DELIVERED, handled_at__isnull=False)

    def lifecycle(self, state: str) -> Self:
        """Rows in one lifecycle state (LIFECYCLE_STATES), for the admin's and the API's filter."""
        if state not in LIFECYCLE_STATES:
            accepted = ", ".join(LIFECYCLE_STATES)
            raise ValueError(f"Unknown lifecycle state {state!r}; accepted: {accepted}.")
        return (
            getattr(self, state)()
            if state in ("awaiting_handling", "in_flight", "handled")
            else self.filter(status=state)
        )

    def reschedule(self, due_at: datetime) -> int:
        due_at = storable_utc(require_aware(due_at, "due_at"))
        rows = self._pending_for_update().exclude(due_at=due_at)
        change = bulk.moved("reschedule", due_at=due_at, business_due_at=None, **_bumped())
        return rows._move(change)

    def reschedule_with(self, how: str, **values: Any) -> int:
        """A move whose values the caller computes (e.g. a per-row due time from a Case), on
        the rows selected as they are (the caller keeps its own status conditions on this
        table). Recorded as `rescheduled` with `how`, or `cancelled` for rows it cancels."""
        return self._move(bulk.moved(how, **values))

    def shift(self, delta: timedelta) -> int:
        if not isinstance(delta, timedelta):
            raise TypeError(
                f"delta must be a datetime.timedelta, e.g. timedelta(days=7); got {delta!r}"
            )
        if not delta:
            return 0
        change = bulk.moved(
            "shift",
            due_at=F("due_at") + delta,
            business_due_at=F("business_due_at") + delta,
            **_bumped(),
        )
        try:
            with transaction.atomic(
                using=write_db(self)
            ):  # a savepoint: a refused shift leaves the
                return self._pending_for_update()._move(change, shifted_by=delta)  # caller usable
        except IntegrityError as exc:
            if due_range_constraint_name(self.model) not in str(exc):
                raise
            raise ValueError(f"{OUT_OF_RANGE}: this shift would move rows outside it.") from None

    def cancel(self, reason: str = "", *, include_failed: bool = False) -> int:
        """Pending rows to cancelled. With `include_failed`, also the rows left for a person:
        failed ones, and those stuck in flight (past the handling timeout)."""
        condition = Q(status=Status.PENDING)
        if include_failed:
            condition |= Q(status=Status.FAILED) | stuck_in_flight_q(self.model)
        change = bulk.Change(
            Kind.CANCELLED,
            {
                "status": Status.CANCELLED,
                "cancelled_at": Now(),
                "cancel_reason": reason[:255],
                "updated_at": Now(),
            },
            detail={"reason": reason[:255]},
        )
        return bulk.apply(self._rows_for_update(condition), change)

    def deliver_now(self) -> int:
        rows = self._pending_for_update().filter(due_at__gt=Now())
        change = bulk.moved("deliver_now", **_business_time_kept(), due_at=Now(), **_bumped())
        return bulk.apply(rows, change)

    def retry(self, *, allow_late: bool = False) -> int:
        """Failed and expired rows, and rows stuck in flight past the handling timeout, back to
        pending, due now. Rows past their model's max_lateness (by the time the business asked
        for) are refused unless `allow_late`. A row whose effect is still running holds its
        lock: the retry waits for it, then leaves it alone if it was handled."""
        retryable = Q(status__in=[Status.FAILED, Status.EXPIRED]) | stuck_in_flight_q(self.model)
        rows = self._rows_for_update(retryable)
        if not allow_late:
            refuse_late_retry(rows)
        # A new version: a message of the earlier tries that is still queued finds its version
        # stale and does nothing, so the retried event is handled once.
        change = bulk.Change(
            Kind.RETRIED,
            {
                "status": Status.PENDING,
                **_business_time_kept(),
                "due_at": Now(),
                "attempts": 0,
                "last_error": "",
                "handled_at": None,
                "effect_started_at": None,
                **_bumped(),
            },
        )
        return bulk.apply(rows, change)

    def bulk_create(self, objs: Any, *args: Any, **kwargs: Any) -> list[M]:
        objs = list(objs)
        for obj in objs:
            require_aware(obj.due_at, "due_at")
        with tracing.creation(self.model) as carrier:
            if quiet_rows.has_quiet_hours(self.model):
                insert = partial(super().bulk_create, objs, *args, **kwargs)
                quiet_rows.create(self.model, objs, insert, using=write_db(self))
            else:
                objs = super().bulk_create(objs, *args, **kwargs)
            tracing.keep(self.model, [obj.pk for obj in objs], carrier, using=write_db(self))
        return objs

    # --- quiet hours (scheduling/rows/quiet/holds.py): moved rows that land in a quiet span -------

    def _move(self, change: bulk.Change, *, shifted_by: timedelta | None = None) -> int:
        """bulk.apply(self, change), then, for a model with quiet hours, its policy applied to
        the moved rows in the same transaction. A model without pays nothing more."""
        if not quiet_rows.has_quiet_hours(self.model):
            return bulk.apply(self, change)
        with transaction.atomic(using=write_db(self), savepoint=False):  # one with the move
            moved = bulk.changed_rows(self, change)
            quiet_rows.after_move(self.model, moved, using=write_db(self), shifted_by=shifted_by)
        return len(moved)

    def _pending_for_update(self) -> Self:
        return self._rows_for_update(Q(status=Status.PENDING))

    def _rows_for_update(self, condition: Q) -> Self:
        # With joins Django turns an UPDATE into `WHERE id IN (SELECT ... joins ...)` and drops
        # every other condition from the updated table. A row the sweep has locked would then be
        # re-checked after the sweep commits only against that snapshot subquery, and a
        # delivered row could be moved. Keeping the status test on the updated table itself
        # makes PostgreSQL re-check it on the row's newest version.
        if self.query.count_active_tables() <= 1 and not self.query.distinct:
            return self.filter(condition)
        selected = self.values("pk")
        selected.query.clear_ordering(clear_default=True)  # as `pk__in` does; kept if sliced
        rows = self.model._default_manager.all()
        if connections[write_db(self)].vendor == "postgresql":
            # Not `id IN (SELECT ...)`, which PostgreSQL plans as a self-join: the selected ids
            # hashed or sorted, then one primary-key probe each, in that order. As an array the
            # selection is an InitPlan, run once, and the UPDATE walks the primary key through
            # it in id order, the table's order (measured in docs/benchmarks.md).
            return rows.filter(condition, _AnyOf(F("pk"), selected))  # type: ignore[return-value]
        return rows.filter(condition, pk__in=selected)  # type: ignore[return-value]


def awaiting_handling_q() -> Q:
    return Q(status=Status.DELIVERED, handled_at__isnull=True, effect_started_at__isnull=True)


def awaiting_handling_row_q() -> Q:
    """awaiting_handling_q for statements on rows named by primary key: the status as a range
    of one value, so the planner takes the primary key, not the awaiting_handling index
    (scheduling.delivery.handling.sql says why)."""
    delivered = Status.DELIVERED.value
    return Q(
        status__range=(delivered, delivered),
        handled_at__isnull=True,
        effect_started_at__isnull=True,
    )


def in_flight_row_q() -> Q:
    """in_flight_q for statements on rows named by primary key, as awaiting_handling_row_q."""
    delivered = Status.DELIVERED.value
    return Q(
        status__range=(delivered, delivered),
        handled_at__isnull=True,
        effect_started_at__isnull=False,
    )


def in_flight_q() -> Q:
    return Q(status=Status.DELIVERED, handled_at__isnull=True, effect_started_at__isnull=False)


def stuck_in_flight_q(model: type[models.Model], now: datetime | None = None) -> Q:
    """In flight since before the model's handling timeout, by `now` or the database's clock."""
    timeout = timedelta(seconds=model.get_handling_timeout())  # type: ignore[attr-defined]
    clock = Now() if now is None else require_aware(now, "now")
    return in_flight_q() & Q(effect_started_at__lt=clock - timeout)


def refuse_late_retry(rows: models.QuerySet[Any]) -> None:
    max_lateness: timedelta | None = getattr(rows.model, "max_lateness", None)
    if max_lateness is None:
        return
    business_time = Coalesce(F("business_due_at"), F("due_at"))
    late = rows.annotate(business_time=business_time).filter(business_time__lt=Now() - max_lateness)
    found = late.aggregate(count=models.Count("pk"), earliest=models.Min("business_time"))
    if found["count"]:
        raise LateRetryError(
            f"{found['count']} of these rows are past {rows.model._meta.label}'s max_lateness"
            f" ({max_lateness}): the earliest was due at {found['earliest'].isoformat()}."
            " Retrying sends them that late; pass allow_late=True (the API's and the admin's"
            " confirmation) to retry them anyway.",
            count=found["count"],
            earliest=found["earliest"],
            max_lateness=max_lateness,
        )


class _AnyOf(Lookup):
    """`lhs = ANY(ARRAY(subquery))` (PostgreSQL): the subquery's values as one array."""

    lookup_name = "any_of_array"

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)  # "(SELECT ...)"
        return f"{lhs} = ANY(ARRAY{rhs})", [*lhs_params, *rhs_params]
