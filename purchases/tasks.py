from typing import Any

from celery import shared_task

from purchases.models import ScheduledPurchase
from purchases.services import fulfillment_send
from scheduling.handling import handle_once
from scheduling.tasks import EventHandlerTask


# EventHandlerTask retries a failed send (SMTP down) with the same task id, the event id;
# handle_once recorded nothing for the failed attempt, so the retry sends the email once.
@shared_task(base=EventHandlerTask, name="purchases.send_fulfillment_email")
def send_fulfillment_email(event: dict[str, Any]) -> str:
    with handle_once(event, ScheduledPurchase) as row:
        if row is None:
            return "skipped"
        return "sent" if fulfillment_send(row=row) else "refunded"
