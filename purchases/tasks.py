from typing import Any

from celery import shared_task
from django.core.mail import get_connection

from purchases.models import ScheduledPurchase
from purchases.services import fulfillment_send
from scheduling.handling import effect_begins, handle_once
from scheduling.tasks import EventHandlerTask


# A customer must never receive the same email twice: ScheduledPurchase is at-most-once. The
# SMTP connection opens before the effect begins, so a refused or timed-out connection (nothing
# sent) is retried after a backoff by itself. Sending is the effect: a send that fails or is
# cut short leaves the row failed, with a note, for a person to check and retry.
@shared_task(base=EventHandlerTask, name="purchases.send_fulfillment_email")
def send_fulfillment_email(event: dict[str, Any]) -> str:
    outcome = "skipped"
    with handle_once(event, ScheduledPurchase, marks_effect=True) as row:
        if row is None:
            return outcome
        with get_connection() as connection, effect_begins(row):
            outcome = "sent" if fulfillment_send(row=row, connection=connection) else "refunded"
    return outcome
