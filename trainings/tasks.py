from typing import Any, cast

from celery import shared_task

from scheduling.handling import handle_once
from trainings.models import ScheduledTrainingNotification
from trainings.services import reminder_send


@shared_task(name="trainings.send_training_reminder", acks_late=True)
def send_training_reminder(event: dict[str, Any]) -> str:
    with handle_once(event) as row:
        if row is None:
            return "skipped"
        notification = cast(ScheduledTrainingNotification, row)
        sent = reminder_send(notification=notification, event_id=event["id"])
        return f"sent {sent}"
