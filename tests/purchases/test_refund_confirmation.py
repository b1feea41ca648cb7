"""The demo's own django.tasks task: a refund enqueues its confirmation email on the framework's
SchedulingBackend (TASKS in project/settings.py) in the refund's transaction; the sweep delivers
it and handle_once runs it (scheduling.run_due: the real claim and handler task, in process)."""

from typing import Any

import pytest
from django.core import mail
from django.db import transaction
from django.test import override_settings
from rest_framework.test import APIClient

from purchases.models import Purchase
from purchases.refunds import send_refund_confirmation
from purchases.services import purchase_refund
from scheduling import run_due, timeline
from scheduling.jobs.models import Job, ScheduledJobRun
from tests.purchases.factories import CustomerFactory, PurchaseFactory, ReleaseFactory

pytestmark = pytest.mark.django_db

TASK = "purchases.refunds.send_refund_confirmation"


@pytest.fixture
def purchase() -> Any:
    release = ReleaseFactory(title="Blue", artist__name="The Band")
    return PurchaseFactory(customer=CustomerFactory(email="ann@example.com"), release=release)


def confirmations() -> Any:
    return Job.objects.filter(labels__task=TASK)


def test_a_refund_over_the_api_sends_its_confirmation_once_through_the_sweep(
    api: APIClient, purchase: Purchase
) -> None:
    assert api.post(f"/api/purchases/{purchase.pk}/refund/").status_code == 200
    assert mail.outbox == []  # enqueued, not sent: the sweep delivers it

    assert run_due(ScheduledJobRun) == 1
    assert run_due(ScheduledJobRun) == 0

    (message,) = mail.outbox
    assert (message.to, message.subject) == (["ann@example.com"], "Your refund: The Band - Blue")
    (job,) = confirmations()
    assert (job.labels["task"], job.payload) == (TASK, {"args": [purchase.pk], "kwargs": {}})
    result = send_refund_confirmation.get_result(job.key.removeprefix("task:"))
    assert (result.status, result.return_value) == ("SUCCESSFUL", "sent")


def test_a_refund_that_rolls_back_enqueues_nothing(purchase: Purchase) -> None:
    def refund_refused_by_the_provider() -> None:
        with transaction.atomic():
            purchase_refund(purchase=purchase)
            raise RuntimeError("the payment provider refused the refund")

    with pytest.raises(RuntimeError):
        refund_refused_by_the_provider()

    assert not confirmations().exists()
    assert run_due(ScheduledJobRun) == 0
    assert mail.outbox == []


def test_a_second_refund_enqueues_no_second_confirmation(purchase: Purchase) -> None:
    purchase_refund(purchase=purchase)
    purchase_refund(purchase=purchase)

    assert confirmations().count() == 1


@override_settings(EMAIL_BACKEND="tests.purchases.test_refund_confirmation.RefusingBackend")
def test_a_failed_send_is_recorded_on_the_run_and_retried(purchase: Purchase) -> None:
    purchase_refund(purchase=purchase)

    assert run_due(ScheduledJobRun) == 0

    run = confirmations().get().runs.get()
    assert (run.status, run.attempts) == ("pending", 1)
    assert run.last_error.startswith("ConnectionRefusedError: the mail server is down")
    assert [entry.kind for entry in timeline(run)][-1] == "handling_failed"


class RefusingBackend:
    def __init__(self, **kwargs: Any) -> None:
        pass

    def send_messages(self, messages: Any) -> int:
        raise ConnectionRefusedError("the mail server is down")
