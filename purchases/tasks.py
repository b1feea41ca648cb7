from __future__ import annotations

from django.core.mail import get_connection

from purchases.models import ScheduledPurchase
from purchases.refunds import send_refund_confirmation
from purchases.services import fulfillment_prefetch, fulfillment_send
from scheduling import handler

__all__ = ["send_fulfillment_email", "send_refund_confirmation"]
# send_refund_confirmation (a django.tasks @task) is imported here so that a worker, which
# imports each app's tasks module, knows it: a stored task name is never imported.


class MailConnection:
    """One connection to the mail provider for a message's emails, opened again before the next
    email once one failed (the provider may have dropped it): a refused reopening fails that
    email before its effect begins, so it is retried after a backoff, not left for a person."""

    def __init__(self, rows: list[ScheduledPurchase]) -> None:
        fulfillment_prefetch(rows)  # what the emails read, in two queries for the message
        self.backend = get_connection()
        self.broken = True  # not open yet

    def __enter__(self) -> MailConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.backend.close()

    def ready(self, row: ScheduledPurchase) -> None:
        if self.broken:
            self.backend.close()
            self.backend.open()
            self.broken = False

    def send(self, row: ScheduledPurchase) -> str:
        try:
            return "sent" if fulfillment_send(row=row, connection=self.backend) else "refunded"
        except Exception:
            self.broken = True
            raise


# A customer must never receive the same email twice: ScheduledPurchase is at-most-once. Each
# email is its own effect, whether the message carries one event or a batch
# (ScheduledPurchase.handler_batch_size): its claim commits before it is sent and its handled_at
# with it. A refused or timed-out connection (nothing sent) is retried after a backoff by
# itself; a send that fails or is cut short leaves that row failed, with a note, for a person
# to check and retry. "purchases.send_fulfillment_emails" was the batch task's name.
@handler(
    ScheduledPurchase,
    name="purchases.send_fulfillment_email",
    also=["purchases.send_fulfillment_emails"],
    setup=MailConnection,
    prepare=lambda row, mail: mail.ready(row),
)
def send_fulfillment_email(row: ScheduledPurchase, mail: MailConnection) -> str:
    return mail.send(row)
