from typing import Any

from celery import shared_task
from django.core.mail import get_connection

from purchases.models import ScheduledPurchase
from purchases.refunds import send_refund_confirmation
from purchases.services import fulfillment_prefetch, fulfillment_send
from scheduling import EventHandlerTask, effect_begins, handle_batch, handle_once

__all__ = ["send_fulfillment_email", "send_fulfillment_emails", "send_refund_confirmation"]
# send_refund_confirmation (a django.tasks @task) is imported here so that a worker, which
# imports each app's tasks module, knows it: a stored task name is never imported.


class MailConnection:
    """One connection to the mail provider for a batch of emails, opened again before the next
    email once one failed (the provider may have dropped it): a refused reopening fails that
    email before its effect begins, so it is retried after a backoff, not left for a person."""

    def __init__(self) -> None:
        self.backend = get_connection()
        self.broken = True  # not open yet

    def ready(self, row: ScheduledPurchase) -> None:
        if self.broken:
            self.backend.close()
            self.backend.open()
            self.broken = False

    def send(self, row: ScheduledPurchase) -> bool:
        try:
            return fulfillment_send(row=row, connection=self.backend)
        except Exception:
            self.broken = True
            raise

    def close(self) -> None:
        self.backend.close()


# A customer must never receive the same email twice: ScheduledPurchase is at-most-once. Emails
# come in batches (ScheduledPurchase.handler_batch_size) over one SMTP connection; each email
# is still its own effect: its claim commits before it is sent and its handled_at with it
# (scheduling.delivery.handling.batches). A refused or timed-out connection (nothing sent) is retried after a
# backoff by itself; a send that fails or is cut short leaves that row failed, with a note,
# for a person to check and retry.
@shared_task(base=EventHandlerTask, name="purchases.send_fulfillment_emails")
def send_fulfillment_emails(events: list[dict[str, Any]]) -> str:
    with handle_batch(events, ScheduledPurchase) as batch:
        if not batch.rows:
            return f"skipped {len(events)}"
        fulfillment_prefetch(batch.rows)
        mail = MailConnection()
        try:
            outcomes = batch.each(mail.send, prepare=mail.ready)
        finally:
            mail.close()
    sent = sum(outcomes.values())
    return f"sent {sent}, refunded {len(outcomes) - sent}, of {len(events)}"


# One email a message: what the sweep published before emails came in batches.
@shared_task(base=EventHandlerTask, name="purchases.send_fulfillment_email")
def send_fulfillment_email(event: dict[str, Any]) -> str:
    outcome = "skipped"
    with handle_once(event, ScheduledPurchase, marks_effect=True) as row:
        if row is None:
            return outcome
        with get_connection() as connection, effect_begins(row):
            outcome = "sent" if fulfillment_send(row=row, connection=connection) else "refunded"
    return outcome
