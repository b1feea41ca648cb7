"""Effect-once handling: the guard every handler task runs its side effect inside.

A handling is part of the row's lifecycle, whatever task base the handler uses:
- done: `handled_at` is set in the transaction that ran the effect;
- failed: the exception is recorded on the row (`last_error`) and the row goes back to
  `pending`, due after an exponential backoff, so the sweep publishes it again (no retry state
  hides in the broker: the admin, the API and SQL see it). At the model's max attempts
  (SCHEDULING_MAX_ATTEMPTS unless it sets its own; publications counted by the sweep) the row
  becomes `failed`; `retry()` brings it back.
- at-most-once models (`at_most_once = True`) commit a claim before the effect: the row reads
  `failed` with a note while the effect runs, and `delivered` + `handled_at` once it is done. A
  crash during the effect leaves the note for a person; nothing retries it by itself.
Each recorded failure sends scheduling.signals' event_failed (and event_gave_up once the row is
`failed`) after the commit.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime, timedelta
from typing import Any, TypeVar, overload

from django.db import DatabaseError, transaction
from django.db.models import F, QuerySet
from django.db.models.functions import Coalesce, Now
from django.utils import timezone

from scheduling import metrics
from scheduling.actors import actor, process_actor
from scheduling.history import record
from scheduling.history.models import Kind
from scheduling.models import ScheduledEvent, Status
from scheduling.registry import get_scheduled_model
from scheduling.signals import send_after_commit

log = logging.getLogger(__name__)

E = TypeVar("E", bound=ScheduledEvent)

CLAIMED = (
    "at-most-once: a handler began the effect at {at} and has not reported back. If this "
    "stays, it stopped during the effect: check whether the effect happened, then retry (to "
    "do it again) or cancel."
)
FAILED_DURING_EFFECT = (
    "at-most-once: the handler failed during the effect, which may have happened: {error}. "
    "Check, then retry (to do it again) or cancel."
)


@overload
def handle_once(event: Mapping[str, Any]) -> AbstractContextManager[ScheduledEvent | None]: ...


@overload
def handle_once(event: Mapping[str, Any], model: type[E]) -> AbstractContextManager[E | None]: ...


def handle_once(
    event: Mapping[str, Any], model: type[ScheduledEvent] | None = None
) -> AbstractContextManager[ScheduledEvent | None]:
    """Yield the event's row if this event still needs handling, else None.

    `model`, when given, types the row and refuses an event of another model.

    The row lock serialises duplicate deliveries of one event: the second waits for the first
    to commit, then sees `handled_at` set. It also waits for a sweep that published the event
    but has not committed yet, so a handler never acts on a row that may still roll back to
    pending. On success `handled_at` is set in the same transaction; an exception is recorded
    on the row, which is delivered again after a backoff, and raised again.
    """
    event_model = get_scheduled_model(event["model"])
    if model is not None and event_model is not model:
        raise ValueError(f"event {event.get('id')!r} is not a {model._meta.label} event")
    if event_model.at_most_once:
        return _as_worker(_handling_at_most_once(event, event_model))
    return _as_worker(_handling(event, event_model))


@contextmanager
def _as_worker(
    handling: AbstractContextManager[ScheduledEvent | None],
) -> Iterator[ScheduledEvent | None]:
    # What the handler changes is recorded as the worker's doing.
    with actor(process_actor("worker")), handling as row:
        yield row


@contextmanager
def _handling(
    event: Mapping[str, Any], model: type[ScheduledEvent]
) -> Iterator[ScheduledEvent | None]:
    failure: Exception | None = None
    with transaction.atomic():
        row = _locked_if_unhandled(model, event)
        if row is None:
            yield None
            return
        try:
            with transaction.atomic():  # a savepoint: a failed effect rolls back alone
                yield row
                model.objects.filter(pk=row.pk).update(handled_at=Now())
                metrics.record_handled(model)
        except Exception as exc:
            # Recorded while the row is still locked, so the reconciliation cannot requeue it
            # in between and lose the error and the backoff.
            record_failure(model, row, exc)
            failure = exc
    if failure is not None:
        raise failure


@contextmanager
def _handling_at_most_once(
    event: Mapping[str, Any], model: type[ScheduledEvent]
) -> Iterator[ScheduledEvent | None]:
    with transaction.atomic():
        row = _locked_if_unhandled(model, event)
        if row is not None:
            # The claim commits before the effect: a redelivery, a duplicate message or the
            # reconciliation now finds the row `failed` and leaves it alone.
            note = CLAIMED.format(at=timezone.now().isoformat())
            model.objects.filter(pk=row.pk).update(
                status=Status.FAILED, last_error=note, updated_at=Now()
            )
    if row is None:
        yield None
        return
    claimed = model.objects.filter(pk=row.pk, status=Status.FAILED, version=row.version)
    try:
        # The effect's own reads and writes still run in a transaction, which commits with
        # `handled_at`; only the claim had to commit before it. The claimed row stays locked
        # through the effect: a retry() or cancel() of it waits until the effect is done, then
        # finds the row handled, so a person cannot start a second effect mid-way.
        with transaction.atomic():
            if not claimed.select_for_update().values_list("pk", flat=True):
                yield None  # retried or cancelled between the claim and now: not ours
                return
            yield row
            claimed.update(
                status=Status.DELIVERED, handled_at=Now(), last_error="", updated_at=Now()
            )
            metrics.record_handled(model)
    except Exception as exc:
        record_failure_during_effect(model, row, claimed, exc)
        raise


def record_failure_during_effect(
    model: type[ScheduledEvent],
    row: ScheduledEvent,
    claimed: QuerySet[ScheduledEvent],
    exc: Exception,
) -> None:
    """An at-most-once effect failed: the row stays `failed`, with a note for a person."""
    note = FAILED_DURING_EFFECT.format(error=describe(exc))[:2000]
    with transaction.atomic():
        claimed.update(last_error=note)
        failure = {"error_type": type(exc).__name__, "error": note}
        ended = record.entry(row, Kind.FAILED, actor=process_actor("worker"), detail=failure)
        record.write([*record.publication(row), ended])
        row.status, row.last_error = Status.FAILED, note
        send_after_commit(model, row, note, will_retry=False)
    metrics.record_handle_failure(model, retried=False)


def _locked_if_unhandled(
    model: type[ScheduledEvent], event: Mapping[str, Any]
) -> ScheduledEvent | None:
    row = model.objects.select_for_update(of=("self",)).filter(pk=event["pk"]).first()
    if row is None or not row.can_be_handled(event["version"]):
        return None
    return row


def record_failure(model: type[ScheduledEvent], row: ScheduledEvent, exc: BaseException) -> None:
    """The effect failed and its savepoint rolled back; the caller still holds the row lock.
    Note why, and either schedule the next try (the sweep publishes it again when due) or, out
    of tries, mark the row failed."""
    out_of_tries = row.attempts >= model.get_max_attempts()
    retry_at = None if out_of_tries else timezone.now() + retry_delay(row.attempts, model)
    changes: dict[str, Any] = {"last_error": describe(exc)[:2000], "updated_at": Now()}
    if retry_at is None:
        changes["status"] = Status.FAILED
    else:
        changes["status"] = Status.PENDING
        # The backoff moves due_at; the time the business asked for stays.
        changes["business_due_at"] = Coalesce(F("business_due_at"), F("due_at"))
        changes["due_at"] = retry_at
    try:
        with transaction.atomic():  # a savepoint: a failed write leaves the caller usable
            updated = model.objects.filter(
                pk=row.pk, version=row.version, status=Status.DELIVERED, handled_at__isnull=True
            ).update(**changes)
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


def retry_delay(attempts: int, model: type[ScheduledEvent] = ScheduledEvent) -> timedelta:
    """The model's retry backoff (SCHEDULING_RETRY_BACKOFF unless it sets its own) doubling with
    each try, up to its maximum; "equal jitter" (between half and all of it), so rows that
    failed together spread out."""
    doublings = min(max(attempts - 1, 0), 64)
    ceiling = min(model.get_retry_backoff() * 2**doublings, model.get_retry_backoff_max())
    return timedelta(seconds=random.uniform(ceiling / 2, ceiling))


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"
