from typing import Any

from celery import shared_task

from scheduling.delivery.handling.once import handle_once
from scheduling.delivery.tasks import EventHandlerTask
from tests.remoteapp.models import ReminderSent, ScheduledReminder


@shared_task(base=EventHandlerTask, name="remoteapp.send_reminder")
def send_reminder(event: dict[str, Any]) -> str:
    with handle_once(event, ScheduledReminder) as row:
        if row is None:
            return "skipped"
        if row.account.name.startswith("fail"):
            raise RuntimeError(f"planned failure of {row.account.name}")
        ReminderSent.objects.create(event_id=event["id"], account_id=row.account_id)
        return "handled"
