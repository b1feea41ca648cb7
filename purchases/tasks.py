from typing import Any, cast

from celery import shared_task

from purchases.models import ScheduledPurchase
from purchases.services import fulfillment_send
from scheduling.handling import handle_once


# OSError covers SMTP and connection failures: nothing was recorded, so a retry (same task id,
# same event) sends the email once the mail server is back.
@shared_task(
    name="purchases.send_fulfillment_email",
    acks_late=True,
    autoretry_for=(OSError,),
    retry_backoff=True,
    retry_backoff_max=600,
    max_retries=10,
)
def send_fulfillment_email(event: dict[str, Any]) -> str:
    with handle_once(event) as row:
        if row is None:
            return "skipped"
        sent = fulfillment_send(row=cast(ScheduledPurchase, row))
        return "sent" if sent else "refunded"
