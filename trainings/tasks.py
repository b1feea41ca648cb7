from typing import Any

from celery import shared_task

from scheduling import EventHandlerTask, handle_batch, handle_once
from trainings.models import ScheduledTrainingNotification
from trainings.push import PushRetryLater
from trainings.reminders import recipients_of
from trainings.services import reminder_postpone, reminder_send


# Reminders come in batches (ScheduledTrainingNotification.handler_batch_size): one message for
# up to that many, each reminder then handled in a transaction of its own (`batch.each`): its row
# and its training locked, the training checked not cancelled and the reminder not expired, its
# pushes sent, the row marked handled, committed. So a training_cancel waits for one reminder's
# pushes at most, never for the batch's, and nothing is pushed once its cancel has committed.
# A reminder whose pushes failed (the service down) is recorded on its row alone, and the sweep
# publishes it again after a backoff. The push stays single across those tries (the HTTP
# backend, whose effect is outside the database, by its per-player results).
@shared_task(base=EventHandlerTask, name="trainings.send_training_reminders")
def send_training_reminders(events: list[dict[str, Any]]) -> str:
    with handle_batch(events, ScheduledTrainingNotification) as batch:
        recipients = recipients_of(batch.rows)  # a few queries for the batch, no lock

        def send_reminder(row: ScheduledTrainingNotification) -> int:
            return reminder_send(
                notification=row, event_id=row.event_id, players=recipients[row.pk]
            )

        sent = batch.each(send_reminder)
    # After each failure's commit: the push service's Retry-After moves the next try later.
    for row in batch.rows:
        retry = batch.failures.get(row.pk)
        if isinstance(retry, PushRetryLater) and retry.not_before is not None:
            reminder_postpone(pk=row.pk, version=row.version, not_before=retry.not_before)
    return (
        f"sent {sum(sent.values())} pushes; {len(sent)} of {len(events)} reminders handled,"
        f" {len(batch.failures)} failed"
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
