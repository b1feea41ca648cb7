from typing import Any

from celery import shared_task

from scheduling.handling import handle_once
from scheduling.tasks import EventHandlerTask
from trainings.models import ScheduledTrainingNotification
from trainings.push import PushRetryLater
from trainings.services import reminder_postpone, reminder_send


# A failed push (service down) is recorded on the row by handle_once, and the sweep publishes
# the reminder again after a backoff; handle_once keeps the push single across those tries
# (the HTTP backend, whose effect is outside the database, by its per-player results).
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
