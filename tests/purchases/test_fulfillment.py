from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.core import mail
from django.utils import timezone
from rest_framework.test import APIClient

from purchases.models import ScheduledPurchase
from purchases.services import purchase_create, purchase_refund
from purchases.tasks import send_fulfillment_email
from scheduling.delivery.sweep.run import sweep
from scheduling.time.times import iso_utc
from tests.conftest import message_events, queued_messages
from tests.purchases.factories import CustomerFactory, ReleaseFactory, TrackFactory

pytestmark = pytest.mark.django_db

Status = ScheduledPurchase.Status


def delivered(row):
    """What the sweep does to a row it publishes."""
    ScheduledPurchase.objects.filter(pk=row.pk).update(status=Status.DELIVERED)
    row.refresh_from_db()
    return row.to_event(iso_utc(timezone.now()))


def out_now(**kwargs):
    return ReleaseFactory(release_date=timezone.now() - timedelta(minutes=1), **kwargs)


def download_path(message):
    (link,) = [word for word in message.body.split() if "/downloads/" in word]
    return urlsplit(link).path


def test_the_handler_emails_the_customer_once_even_when_the_event_arrives_twice():
    customer = CustomerFactory(email="ann@example.com")
    purchase = purchase_create(customer=customer, release=out_now(title="Blue"))
    event = delivered(purchase.scheduled.get())

    assert send_fulfillment_email(event) == "sent"
    assert send_fulfillment_email(event) == "skipped"

    (message,) = mail.outbox
    assert message.to == ["ann@example.com"]
    assert "Blue" in message.subject
    assert "/api/downloads/" in message.body
    assert purchase.scheduled.get().handled_at is not None


def test_a_published_message_is_handled_by_the_task_it_names(broker):
    purchase = purchase_create(customer=CustomerFactory(), release=out_now())

    assert sweep(ScheduledPurchase).delivered == 1

    (message,) = queued_messages(broker, "purchases")
    event_id = f"purchases.scheduledpurchase:{purchase.scheduled.get().pk}:v1"
    assert message["headers"]["task"] == "purchases.send_fulfillment_email"
    assert message["headers"]["id"] == f"{event_id}+0"  # a batch of one: its first event, +0
    assert [event["id"] for event in message_events(message)] == [event_id]


def test_a_refunded_purchase_gets_no_email_even_if_its_event_was_already_published():
    purchase = purchase_create(customer=CustomerFactory(), release=out_now())
    event = delivered(purchase.scheduled.get())
    purchase_refund(purchase=purchase)

    assert send_fulfillment_email(event) == "refunded"
    assert mail.outbox == []
    assert send_fulfillment_email(event) == "skipped"


def test_a_stale_version_of_a_rescheduled_row_is_not_handled():
    purchase = purchase_create(customer=CustomerFactory(), release=out_now())
    row = purchase.scheduled.get()
    stale = row.to_event(iso_utc(timezone.now()))
    ScheduledPurchase.objects.filter(pk=row.pk).update(status=Status.DELIVERED, version=2)

    assert send_fulfillment_email(stale) == "skipped"
    assert mail.outbox == []


def test_a_track_email_names_the_track_and_its_link_lists_only_that_file():
    release = ReleaseFactory(title="Album")
    single = TrackFactory(release=release, title="Single", release_date=timezone.now())
    TrackFactory(release=release, title="Other")
    purchase = purchase_create(customer=CustomerFactory(), release=release)

    send_fulfillment_email(delivered(purchase.scheduled.get(track=single)))

    (message,) = mail.outbox
    assert "Single" in message.subject
    answer = APIClient().get(download_path(message))
    assert answer.status_code == 200
    assert [f["title"] for f in answer.json()["files"]] == ["Single"]


def test_the_release_link_lists_every_track_and_is_gone_after_a_refund():
    release = out_now(title="Album")
    TrackFactory(release=release, title="One", position=1)
    TrackFactory(release=release, title="Two", position=2)
    purchase = purchase_create(customer=CustomerFactory(), release=release)
    send_fulfillment_email(delivered(purchase.scheduled.get()))
    path = download_path(mail.outbox[0])

    answer = APIClient().get(path)
    assert answer.status_code == 200
    assert answer.json()["release"] == "Album"
    assert [f["file"] for f in answer.json()["files"]] == ["01 One.flac", "02 Two.flac"]

    purchase_refund(purchase=purchase)
    assert APIClient().get(path).status_code == 410


def test_a_tampered_link_is_refused():
    purchase = purchase_create(customer=CustomerFactory(), release=out_now())
    send_fulfillment_email(delivered(purchase.scheduled.get()))
    path = download_path(mail.outbox[0])

    assert APIClient().get(path.replace(":", "x:", 1)).status_code == 404
