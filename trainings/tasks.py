from typing import Any

from celery import shared_task

from scheduling.handling import handle_once
from scheduling.tasks import EventHandlerTask
from trainings.models import ScheduledTrainingNotification
from trainings.services import reminder_send


# A failed push (service down) is recorded on the row by handle_once, and the sweep publishes
# the reminder again after a backoff; handle_once keeps the push single across those tries.
@shared_task(base=EventHandlerTask, name="trainings.send_training_reminder")
def send_training_reminder(event: dict[str, Any]) -> str:
    with handle_once(event, ScheduledTrainingNotification) as row:
        if row is None:
            return "skipped"
        sent = reminder_send(notification=row, event_id=event["id"])
        return f"sent {sent}"
