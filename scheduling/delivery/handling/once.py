"""Effect-once handling: the guard every handler task runs its side effect inside.

A handling is part of the row's lifecycle, whatever task base the handler uses:
- done: `handled_at` is set in the transaction that ran the effect;
- failed: the exception is recorded on the row (`last_error`) and the row goes back to
  `pending`, due after an exponential backoff, so the sweep publishes it again (no retry state
  hides in the broker: the admin, the API and SQL see it). At the model's max attempts
  (SCHEDULING_MAX_ATTEMPTS unless it sets its own; publications counted by the sweep) the row
  becomes `failed`; `retry()` brings it back.
- at-most-once models (`at_most_once = True`) commit a claim (`effect_started_at`) where the
  effect begins: the row is `in_flight` (still `delivered`) while the effect runs, and
  `handled_at` is set once it is done. The handler marks that point (`effect_begins`, with
  `handle_once(..., marks_effect=True)`); otherwise its whole body is the effect. A failure
  before the mark is retried like any other; one during the effect leaves the row `failed`
  with a note for a person, and a crash during it leaves the row in flight, which the
  reconciliation never republishes: past the handling timeout it is `stuck_in_flight()`,
  for a person to retry or cancel.
Each recorded failure sends scheduling.delivery.handling.signals' event_failed (and event_gave_up once the row is
`failed`) after the commit.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar, overload

from django.db import DatabaseError, transaction
from django.db.models import F, QuerySet
from django.db.models.functions import Coalesce, Now
from django.utils import timezone

from scheduling.delivery import metrics, tracing
from scheduling.delivery.handling.signals import send_after_commit
from scheduling.delivery.handling.sql import statements_for
from scheduling.delivery.handling.worker import as_worker
from scheduling.rows.actors import process_actor
from scheduling.rows.databases import database_of
from scheduling.rows.history import record
from scheduling.rows.history.models import Kind
from scheduling.rows.models import ScheduledEvent
from scheduling.rows.partitions import partitioning_of, retrying_moved_rows
from scheduling.rows.policy import backoff_ceiling, longest_backoff
from scheduling.rows.querysets import awaiting_handling_row_q, in_flight_row_q
from scheduling.rows.registry import get_scheduled_model
from scheduling.rows.states import Status

log = logging.getLogger(__name__)

E = TypeVar("E", bound=ScheduledEvent)
T = TypeVar("T")

FAILED_DURING_EFFECT = (
    "at-most-once: the handler failed during the effect, which may have happened: {error}. "
    "Check, then retry (to do it again) or cancel."
)


class EffectNotOurs(Exception):
    """Raised by effect_begins() when another delivery of the event began the effect first (or a
    person retried or cancelled the row): the effect must not run. handle_once() swallows it."""


@dataclass
class Handling:
    """One handling of one row, as handle_once() and effect_begins() share it."""

    model: type[ScheduledEvent]
    row: ScheduledEvent
    at_most_once: bool
    started: bool = False  # the claim committed: a failure from here on goes to a person
    lost: bool = False  # another delivery (or a person) took the row: nothing to do here

    @property
    def using(self) -> str:
        return database_of(self.model)

    def unclaimed(self) -> QuerySet[ScheduledEvent]:
        """The row as this delivery found it: this version, delivered, effect not begun."""
        return self.model.objects.filter(pk=self.row.pk, version=self.row.version).filter(
            awaiting_handling_row_q()
        )

    def claimed(self) -> QuerySet[ScheduledEvent]:
        """The row once this handling claimed it: in flight."""
        return self.model.objects.filter(pk=self.row.pk, version=self.row.version).filter(
            in_flight_row_q()
        )


# The handlings under way in this context, innermost last (a handler may handle two events).
_current: ContextVar[tuple[Handling, ...]] = ContextVar("scheduling_handlings", default=())


@overload
def handle_once(
    event: Mapping[str, Any], *, marks_effect: bool = False
) -> AbstractContextManager[ScheduledEvent | None]: ...


@overload
def handle_once(
    event: Mapping[str, Any], model: type[E], *, marks_effect: bool = False
) -> AbstractContextManager[E | None]: ...


def handle_once(
    event: Mapping[str, Any],
    model: type[ScheduledEvent] | None = None,
    *,
    marks_effect: bool = False,
) -> AbstractContextManager[ScheduledEvent | None]:
    """Yield the event's row if this event still needs handling, else None.

    `model`, when given, types the row and refuses an event of another model.

    The row lock serialises duplicate deliveries of one event: the second waits for the first
    to commit, then sees `handled_at` set. It also waits for a sweep that published the event
    but has not committed yet, so a handler never acts on a row that may still roll back to
    pending. On success `handled_at` is set in the same transaction; an exception is recorded
    on the row, which is delivered again after a backoff, and raised again.

    At-most-once models: the whole body is the effect, unless `marks_effect=True`, where the
    body marks it with `with effect_begins(row):`; what runs before the mark (opening a
    connection, rendering) is retried like an at-least-once failure.
    """
    event_model = get_scheduled_model(event["model"])
    if model is not None and event_model is not model:
        raise ValueError(f"event {event.get('id')!r} is not a {model._meta.label} event")
    if event_model.at_most_once:
        handling = _handling_at_most_once(event, event_model, marks_effect)
    else:
        handling = _handling(event, event_model)
    return as_worker(handling, event_model, [event])


@contextmanager
def _current_handling(handling: Handling) -> Iterator[Handling]:
    token = _current.set((*_current.get(), handling))
    try:
        yield handling
    finally:
        _current.reset(token)


@contextmanager
def _handling(
    event: Mapping[str, Any], model: type[ScheduledEvent]
) -> Iterator[ScheduledEvent | None]:
    using = database_of(model)  # the row's lock and handled_at in one transaction, there
    locked = False
    try:
        with transaction.atomic(using=using):
            row = _locked_if_unhandled(model, event)
            if row is None:
                yield None
                return
            locked = True
            with _current_handling(Handling(model, row, False)):
                yield row
            statements_for(model).mark_handled(row.pk)
            metrics.record_handled(model)
    except Exception as exc:
        if locked:
            _record_after_rollback(model, event, exc)
        raise


def _record_after_rollback(
    model: type[ScheduledEvent], event: Mapping[str, Any], exc: Exception
) -> None:
    """The effect failed and its transaction rolled back: the row is locked again to record
    why. No savepoint around the effect (two round trips an event, on the path every event
    takes): in the moment between, a duplicate delivery may handle the row, or the
    reconciliation requeue it if it was past its handling timeout; either only tries it again
    sooner, and the failure then finds no row awaiting handling to record on."""
    try:
        with transaction.atomic(using=database_of(model)):
            row = _locked_if_unhandled(model, event)
            if row is not None:
                record_failure(model, row, exc)
    except DatabaseError:  # the database itself failed: reconciliation republishes the event
        log.exception("could not record the failed handling of %s", event.get("id"))


@contextmanager
def _handling_at_most_once(
    event: Mapping[str, Any], model: type[ScheduledEvent], marks_effect: bool
) -> Iterator[ScheduledEvent | None]:
    with transaction.atomic(using=database_of(model)):
        row = _locked_if_unhandled(model, event)  # waits for the publishing sweep's commit
    handling = None if row is None else Handling(model, row, True)
    if handling is None or (not marks_effect and not claim_effect(handling)):
        yield None  # handled, in flight elsewhere, or not this version any more
        return
    try:
        with _current_handling(handling):
            if marks_effect:
                yield handling.row  # the body marks the effect: effect_begins(row)
            else:
                with effect_transaction(handling) as claimed:
                    yield claimed  # the whole body is the effect
    except EffectNotOurs:
        return
    except Exception as exc:
        _record(handling, exc)
        raise
    if not handling.started and not handling.lost:
        _handled_without_effect(handling)


@contextmanager
def effect_begins(row: ScheduledEvent) -> Iterator[None]:
    """Mark where the effect begins, inside `handle_once(event, marks_effect=True)`:

        with handle_once(event, ScheduledPurchase, marks_effect=True) as row:
            ...  # may fail and be retried: open the connection, render the message
            with effect_begins(row):
                ...  # must never repeat: send it

    The claim commits on entry. A failure inside is left for a person (the row `failed`, with
    a note); the effect's transaction commits with `handled_at` on exit. If another delivery of
    the event claimed the row first, this raises EffectNotOurs, which handle_once swallows.
    For at-least-once models it marks nothing: everything is retried.
    """
    handling = next((h for h in reversed(_current.get()) if h.row is row), None)
    if handling is None:
        raise RuntimeError("effect_begins(row) belongs inside `with handle_once(...) as row:`")
    if not handling.at_most_once:
        yield
        return
    if handling.started:
        raise RuntimeError(f"{row.event_id}: effect_begins() once per handling")
    if not claim_effect(handling):
        raise EffectNotOurs(f"{row.event_id}: the effect began elsewhere")
    with effect_transaction(handling) as claimed:
        if claimed is None:
            raise EffectNotOurs(f"{row.event_id}: retried or cancelled since the claim")
        yield


def claim_effect(handling: Handling) -> bool:
    # The claim commits before the effect. Deliveries of one event (a duplicate message, a
    # republication) may both get here; the one whose UPDATE changes the row begins the effect,
    # the other finds effect_started_at set and leaves it. Reconciliation never requeues it.
    won = statements_for(handling.model).claim(handling.row.pk, handling.row.version)
    handling.started, handling.lost = won, not won
    return won


@contextmanager
def effect_transaction(handling: Handling) -> Iterator[ScheduledEvent | None]:
    # The effect's own reads and writes run in a transaction, which commits with `handled_at`;
    # only the claim had to commit before it. The claimed row stays locked through the effect:
    # a person's retry() or cancel() of a stuck row waits until the effect is done, then finds
    # it handled, so a second effect cannot start mid-way.
    statements = statements_for(handling.model)
    pk, version = handling.row.pk, handling.row.version
    with transaction.atomic(using=handling.using):
        if not statements.lock_claimed(pk, version):
            handling.lost = True
            yield None  # retried or cancelled between the claim and now: not ours
            return
        yield handling.row
        statements.mark_claimed_handled(pk, version)
        metrics.record_handled(handling.model)


def _handled_without_effect(handling: Handling) -> None:
    """The body never reached its effect (nothing to do): handled, as at-least-once."""
    if handling.unclaimed().update(handled_at=Now(), updated_at=Now()):
        metrics.record_handled(handling.model)


def _record(handling: Handling, exc: Exception) -> None:
    if handling.started:
        record_failure_during_effect(handling, exc)
    else:  # before the effect began: retried after a backoff, like at-least-once
        record_failure(handling.model, handling.row, exc)


def record_failure_during_effect(handling: Handling, exc: Exception) -> None:
    """An at-most-once effect failed: the row becomes `failed`, with a note for a person."""
    model, row = handling.model, handling.row
    note = FAILED_DURING_EFFECT.format(error=describe(exc))[:2000]
    with transaction.atomic(using=handling.using):
        if not handling.claimed().update(status=Status.FAILED, last_error=note, updated_at=Now()):
            return  # the effect had committed (the failure came after it), or a person took over
        failure = {"error_type": type(exc).__name__, "error": note}
        ended = record.entry(row, Kind.FAILED, actor=process_actor("worker"), detail=failure)
        record.write([*record.publication(row), ended])
        row.status, row.last_error = Status.FAILED, note
        send_after_commit(model, row, note, will_retry=False)
    metrics.record_handle_failure(model, retried=False)


def _locked_if_unhandled(
    model: type[ScheduledEvent], event: Mapping[str, Any]
) -> ScheduledEvent | None:
    row = locked_row(model, event["pk"])
    if row is None or not row.can_be_handled(event["version"]):
        return None
    tracing.note_attempt(row)
    return row


def locked_row(model: type[ScheduledEvent], pk: Any) -> ScheduledEvent | None:
    statements = statements_for(model)
    if partitioning_of(model) is None:
        return statements.lock(pk)

    # A retry() or another delivery's backoff may move the row to another partition while we
    # wait for its lock; a savepoint lets the lock be taken again where the row now is.
    def lock() -> ScheduledEvent | None:
        with transaction.atomic(using=statements.using):
            return statements.lock(pk)

    return retrying_moved_rows(lock, f"handling of {model._meta.label}")


def record_failure(model: type[ScheduledEvent], row: ScheduledEvent, exc: BaseException) -> None:
    """The effect (or an at-most-once effect's preparation) failed and rolled back. Note why,
    and either schedule the next try (the sweep publishes it again when due) or, out of tries,
    mark the row failed. At-least-once callers still hold the row lock; the UPDATE's condition
    (this delivery, not handled, no effect begun) keeps it right without."""
    out_of_tries = row.attempts >= model.get_max_attempts()
    retry_at = None if out_of_tries else next_try(row.attempts, model, exc)
    changes: dict[str, Any] = {"last_error": describe(exc)[:2000], "updated_at": Now()}
    if retry_at is None:
        changes["status"] = Status.FAILED
    else:
        changes["status"] = Status.PENDING
        # The backoff moves due_at; the time the business asked for stays.
        changes["business_due_at"] = Coalesce(F("business_due_at"), F("due_at"))
        changes["due_at"] = retry_at
    try:
        # A savepoint: a failed write leaves the caller usable.
        with transaction.atomic(using=database_of(model)):
            this_delivery = model.objects.filter(pk=row.pk, version=row.version)
            updated = this_delivery.filter(awaiting_handling_row_q()).update(**changes)
            if updated:
                entries = record.handling_failed(
                    row, exc, out_of_tries=out_of_tries, retry_at=retry_at
                )
                record.write(entries)
                recorded_on(row, changes, retry_at)
                send_after_commit(model, row, row.last_error, will_retry=not out_of_tries)
        if updated:
            metrics.record_handle_failure(model, retried=not out_of_tries)
    except DatabaseError:  # the database itself failed: reconciliation republishes the event
        log.exception("could not record the failed handling of %s", row.event_id)


def recorded_on(row: ScheduledEvent, changes: dict[str, Any], retry_at: datetime | None) -> None:
    """The instance as the failure left it in the database, for the signals' receivers."""
    row.status, row.last_error = changes["status"], changes["last_error"]
    if retry_at is not None:
        row.business_due_at, row.due_at = row.business_time, retry_at


class RetryLater(Exception):
    """A handler's failure that knows when a next try may help (a service's Retry-After): the
    row's next try is due no earlier than `not_before`, and no later than the model's
    maximum backoff from now."""

    def __init__(self, message: str, *, not_before: datetime | None = None) -> None:
        super().__init__(message)
        self.not_before = not_before


def next_try(attempts: int, model: type[ScheduledEvent], exc: BaseException) -> datetime:
    now = timezone.now()
    retry_at = now + retry_delay(attempts, model)
    if isinstance(exc, RetryLater) and exc.not_before is not None:
        ceiling = now + timedelta(seconds=longest_backoff(model))
        retry_at = max(retry_at, min(exc.not_before, ceiling))
    return retry_at


def retry_delay(attempts: int, model: type[ScheduledEvent] = ScheduledEvent) -> timedelta:
    """The model's retry backoff (SCHEDULING_RETRY_BACKOFF unless it sets its own) doubling with
    each try, up to its maximum; "equal jitter" (between half and all of it), so rows that
    failed together spread out. Clamped to the policy's bounds before any date arithmetic: a
    failure is recorded whatever the backoff (scheduling.rows.policy.backoff_ceiling)."""
    ceiling = backoff_ceiling(attempts, model)
    return timedelta(seconds=random.uniform(ceiling / 2, ceiling))


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"
