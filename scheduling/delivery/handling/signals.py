"""Signals a host connects to, to act on a scheduled row's failures: page someone when a row
gives up, write to the business's own log, count failures by cause.

- `event_failed` (sender: the model; `row`, `error`, `will_retry`): a try failed and was
  recorded on the row: its handler raised, an at-most-once effect failed, it was not handled
  within its handling timeout, or it could not be published. `will_retry` says whether the row
  went back to pending (it is tried again) or became `failed`.
- `event_gave_up` (sender: the model; `row`, `error`): the row became `failed` and nothing
  retries it by itself (a person may `retry()` it). Sent after the `event_failed` of that try.

Both are sent once the transaction that recorded the failure commits (never for a failure
that rolled back), so a receiver sees the row as stored. `error` is the text recorded in
`last_error`. A receiver that raises is logged; it does not undo the recording nor stop the
other receivers.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

from django.db import transaction
from django.dispatch import Signal

from scheduling.rows.databases import database_of
from scheduling.rows.models import ScheduledEvent

log = logging.getLogger("scheduling.signals")  # the name the docs give

event_failed = Signal()
event_gave_up = Signal()


def send_after_commit(
    model: type[ScheduledEvent], row: ScheduledEvent, error: str, *, will_retry: bool
) -> None:
    """Send event_failed (and event_gave_up unless it will retry) when the current transaction
    commits."""
    if listened(model):
        send_it = partial(send_failure, model, row, error, will_retry=will_retry)
        transaction.on_commit(send_it, using=database_of(model))


def send_after_commit_for(
    model: type[ScheduledEvent], pks: list[Any], error: str, *, will_retry: bool
) -> None:
    """The same for rows known by primary key: read once the transaction commits, and only if
    someone listens."""
    if not pks or not listened(model):
        return

    def send() -> None:
        for row in model.objects.filter(pk__in=pks):
            send_failure(model, row, error, will_retry=will_retry)

    transaction.on_commit(send, using=database_of(model))


def listened(model: type[ScheduledEvent]) -> bool:
    return event_failed.has_listeners(model) or event_gave_up.has_listeners(model)


def send_failure(
    model: type[ScheduledEvent], row: ScheduledEvent, error: str, *, will_retry: bool
) -> None:
    send("event_failed", model, row=row, error=error, will_retry=will_retry)
    if not will_retry:
        send("event_gave_up", model, row=row, error=error)


def send(name: str, model: type[ScheduledEvent], row: ScheduledEvent, **kwargs: Any) -> None:
    signal = event_failed if name == "event_failed" else event_gave_up
    for receiver, outcome in signal.send_robust(model, row=row, **kwargs):
        if isinstance(outcome, Exception):
            receiver_name = getattr(receiver, "__qualname__", repr(receiver))
            log.error(
                "%s receiver %s failed for %s",
                name,
                receiver_name,
                row.event_id,
                exc_info=outcome,
            )


__all__ = ["event_failed", "event_gave_up"]
