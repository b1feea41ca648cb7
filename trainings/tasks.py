from typing import Any

from celery import shared_task

from scheduling.handling import handle_once
from scheduling.tasks import EventHandlerTask
from trainings.models import ScheduledTrainingNotification
from trainings.services import reminder_send


# EventHandlerTask retries a failed push (service down) with the same task id, the event id;
# handle_once recorded nothing for the failed attempt, so the retry sends the reminder once.
@shared_task(base=EventHandlerTask, name="trainings.send_training_reminder")
def send_training_reminder(event: dict[str, Any]) -> str:
    with handle_once(event, ScheduledTrainingNotification) as row:
        if row is None:
            return "skipped"
        sent = reminder_send(notification=row, event_id=event["id"])
        return f"sent {sent}"
