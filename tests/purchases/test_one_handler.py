"""One handler in the declarative form serves ScheduledPurchase whatever its batch size: the same
`purchases.send_fulfillment_email` consumes single messages (handler_batch_size = 0) and batches
(100), each email at most once, a duplicate message sending nothing; messages still queued under
the former batch task's name are handled too."""

import base64
import json

import pytest
from django.core import mail

from purchases.models import ScheduledPurchase
from purchases.services import purchase_create
from purchases.tasks import send_fulfillment_email
from scheduling.delivery.sweep.run import sweep
from tests.conftest import queued_messages
from tests.purchases.factories import CustomerFactory
from tests.purchases.test_fulfillment import out_now

pytestmark = pytest.mark.django_db(transaction=True)
EMAILS = ["a@example.com", "b@example.com", "c@example.com"]


def run(message):
    """The message as a worker runs it: its task, by name, with its kwargs."""
    _, kwargs, _ = json.loads(base64.b64decode(message["body"]))
    task = send_fulfillment_email.app.tasks[message["headers"]["task"]]
    return task(**kwargs)


@pytest.mark.parametrize("size", [0, 100])
def test_the_same_handler_sends_each_email_once_in_single_messages_and_in_batches(
    monkeypatch, broker, size
):
    monkeypatch.setattr(ScheduledPurchase, "handler_batch_size", size)
    release = out_now(title="Blue")
    for email in EMAILS:
        purchase_create(customer=CustomerFactory(email=email), release=release)
    assert sweep(ScheduledPurchase).delivered == len(EMAILS)
    messages = queued_messages(broker, "purchases")
    assert len(messages) == (1 if size else len(EMAILS))
    assert {m["headers"]["task"] for m in messages} == {"purchases.send_fulfillment_email"}

    first = [run(message) for message in messages]
    again = [run(message) for message in messages]  # each message delivered twice

    assert sorted(message.to[0] for message in mail.outbox) == EMAILS
    if size:
        assert (first, again) == (
            ["3 handled, 0 failed, 0 skipped"],
            ["0 handled, 0 failed, 3 skipped"],
        )
    else:
        assert (first, again) == (["sent"] * 3, ["skipped"] * 3)
    assert ScheduledPurchase.objects.handled().count() == len(EMAILS)


def test_a_message_queued_under_the_former_batch_task_name_is_handled(broker):
    release = out_now(title="Blue")
    purchase_create(customer=CustomerFactory(email="a@example.com"), release=release)
    assert sweep(ScheduledPurchase).delivered == 1
    (message,) = queued_messages(broker, "purchases")
    message["headers"]["task"] = "purchases.send_fulfillment_emails"  # queued before the change

    assert run(message) == "1 handled, 0 failed, 0 skipped"
    assert [m.to for m in mail.outbox] == [["a@example.com"]]
