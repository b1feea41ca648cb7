from typing import Any

from celery import shared_task

from purchases.models import ScheduledPurchase
from purchases.services import fulfillment_send
from scheduling.handling import handle_once
from scheduling.tasks import EventHandlerTask


# A customer must never receive the same email twice: ScheduledPurchase is at-most-once, so
# handle_once commits a claim before sending. A send that fails or is cut short leaves the row
# failed, with a note, for a person to check and retry; it is never re-sent by itself.
@shared_task(base=EventHandlerTask, name="purchases.send_fulfillment_email")
def send_fulfillment_email(event: dict[str, Any]) -> str:
    with handle_once(event, ScheduledPurchase) as row:
        if row is None:
            return "skipped"
        return "sent" if fulfillment_send(row=row) else "refunded"
