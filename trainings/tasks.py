from typing import Any

from celery import shared_task

from scheduling import EventHandlerTask, handle_batch, handle_once
from trainings.models import ScheduledTrainingNotification
from trainings.push import PushRetryLater
from trainings.reminders import reminders_send
from trainings.services import reminder_postpone, reminder_send


# Reminders come in batches (ScheduledTrainingNotification.handler_batch_size): one message,
# one transaction and a few queries for up to that many. A reminder whose pushes failed (the
# service down) is recorded on its row alone by handle_batch, and the sweep publishes it again
# after a backoff; the others are handled. The push stays single across those tries (the HTTP
# backend, whose effect is outside the database, by its per-player results).
@shared_task(base=EventHandlerTask, name="trainings.send_training_reminders")
def send_training_reminders(events: list[dict[str, Any]]) -> str:
    postpone: list[tuple[ScheduledTrainingNotification, PushRetryLater]] = []
    with handle_batch(events, ScheduledTrainingNotification) as batch:
        sent, failures = reminders_send(reminders=batch.rows)
        for row in batch.rows:
            error = failures.get(row.pk)
            if error is not None:
                batch.failed(row, error)
            if isinstance(error, PushRetryLater):
                postpone.append((row, error))
    # After the failures' commit: the push service's Retry-After moves the next try later.
    for row, retry in postpone:
        if retry.not_before is not None:
            reminder_postpone(pk=row.pk, version=row.version, not_before=retry.not_before)
    handled = len(batch.rows) - len(failures)
    return (
        f"sent {sent} pushes; {handled} of {len(events)} reminders handled, {len(failures)} failed"
    )


# One reminder a message: what the sweep published before reminders came in batches.
@shared_task(base=EventHandlerTask, name="trainings.send_training_reminder")
def send_training_reminder(event: dict[str, Any]) -> str:
    try:
        with handle_once(event, ScheduledTrainingNotification) as row:
            if row is None:
                return "skipped"
            sent = reminder_send(notification=row, event_id=event["id"])
            return f"sent {sent}"
    except PushRetryLater as exc:
        if exc.not_before is not None:
            reminder_postpone(pk=event["pk"], version=event["version"], not_before=exc.not_before)
        raise
