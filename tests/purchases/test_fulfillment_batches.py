"""Pre-order emails in batches: one message and one SMTP connection for many emails, each still
sent at most once, a refund still honoured, one failed send left alone for a person."""

import pytest
from django.core import mail
from django.core.mail.backends.locmem import EmailBackend

from purchases.models import ScheduledPurchase
from purchases.services import purchase_create, purchase_refund
from purchases.tasks import send_fulfillment_email
from scheduling.delivery.sweep.run import sweep
from tests.conftest import queued_events
from tests.purchases.factories import CustomerFactory
from tests.purchases.test_fulfillment import out_now

# The emails' at-most-once claims commit before each send: the rows must be committed too.
pytestmark = pytest.mark.django_db(transaction=True)

Status = ScheduledPurchase.Status


class CountingBackend(EmailBackend):
    """The in-memory backend, counting the connections opened; refuses mail to "bounce@"."""

    opened = 0

    def open(self):
        type(self).opened += 1
        return super().open()

    def send_messages(self, messages):
        if any("bounce@example.com" in message.to for message in messages):
            raise ConnectionResetError("the provider dropped the connection mid-send")
        return super().send_messages(messages)


@pytest.fixture
def counting(settings):
    settings.EMAIL_BACKEND = f"{__name__}.CountingBackend"
    CountingBackend.opened = 0
    return CountingBackend


def published(*emails, broker):
    release = out_now(title="Blue")
    purchases = [
        purchase_create(customer=CustomerFactory(email=e), release=release) for e in emails
    ]
    assert sweep(ScheduledPurchase).delivered == len(emails)
    return purchases, queued_events(broker, "purchases")


def test_a_batch_sends_each_email_once_over_one_connection(counting, broker):
    _, events = published("a@example.com", "b@example.com", "c@example.com", broker=broker)

    assert send_fulfillment_email(events) == "3 handled, 0 failed, 0 skipped"
    assert (
        send_fulfillment_email(events) == "0 handled, 0 failed, 3 skipped"
    )  # a duplicate of the message

    assert sorted(message.to[0] for message in mail.outbox) == [
        "a@example.com",
        "b@example.com",
        "c@example.com",
    ]
    assert counting.opened == 1
    assert ScheduledPurchase.objects.filter(handled_at__isnull=True).count() == 0


def test_a_purchase_refunded_after_publication_gets_nothing(counting, broker):
    (_, refunded), events = published("a@example.com", "b@example.com", broker=broker)
    purchase_refund(purchase=refunded)

    assert send_fulfillment_email(events) == "2 handled, 0 failed, 0 skipped"

    assert [message.to for message in mail.outbox] == [["a@example.com"]]


def test_a_send_cut_short_leaves_that_email_for_a_person_and_the_rest_go_out(counting, broker):
    _, events = published("a@example.com", "bounce@example.com", "c@example.com", broker=broker)

    assert send_fulfillment_email(events) == "2 handled, 1 failed, 0 skipped"

    rows = {row.purchase.customer.email: row for row in ScheduledPurchase.objects.all()}
    assert rows["bounce@example.com"].status == Status.FAILED
    assert "Check, then retry" in rows["bounce@example.com"].last_error
    assert rows["c@example.com"].handled_at is not None
    assert counting.opened == 2  # opened again after the broken send, before the next email
