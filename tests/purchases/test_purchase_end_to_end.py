"""Pre-orders sold over REST, the release moved and one refunded, then the real delivery path:
sweep -> Redis -> a Celery worker process -> emails. Every message is published twice, as
after a sweeper crash between publish and commit, and still each buyer gets one email."""

from collections.abc import Sequence
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.utils import timezone
from rest_framework.test import APIClient

from purchases.models import ScheduledPurchase
from scheduling.delivery.publishing import PreparedMessage, make_publisher
from scheduling.delivery.sweep.run import sweep
from tests.conftest import wait_for
from tests.purchases.conftest import sent_emails, worker_log
from tests.purchases.factories import ArtistFactory

Status = ScheduledPurchase.Status


class PublishingTwice:
    def __init__(self) -> None:
        self.inner = make_publisher(5.0)

    def prepare(self, task):
        return self.inner.prepare(task)

    def publish(self, batch: Sequence[PreparedMessage]) -> dict[int, str]:
        self.inner.publish(batch)
        return self.inner.publish(batch)

    def close(self) -> None:
        self.inner.close()


def handled(worker) -> int:
    assert worker.poll() is None, f"the worker exited:\n{worker_log()[-3000:]}"
    return worker_log().count("succeeded in")


def created(api: APIClient, path: str, body: dict) -> int:
    response = api.post(path, body, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def sell(api: APIClient, release: int, email: str) -> int:
    customer = created(api, "/api/customers/", {"email": email, "name": email.split("@")[0]})
    return created(api, "/api/purchases/", {"customer": customer, "release": release})


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_buyers_of_a_moved_release_get_exactly_one_email_each_and_refunded_ones_none(
    api, purchases_worker, mail_dir
):
    artist = ArtistFactory(name="The Band")
    in_a_month = (timezone.now() + timedelta(days=30)).isoformat()
    moved = created(
        api,
        "/api/releases/",
        {"artist": artist.pk, "title": "Moved Up", "release_date": in_a_month},
    )
    later = created(
        api, "/api/releases/", {"artist": artist.pk, "title": "Later", "release_date": in_a_month}
    )
    sell(api, moved, "ann@example.com")
    refunded = sell(api, moved, "bob@example.com")
    sell(api, moved, "cat@example.com")
    sell(api, later, "dan@example.com")

    # The artist releases today instead; Bob is refunded.
    now = timezone.now().isoformat()
    move = api.patch(f"/api/releases/{moved}/", {"release_date": now}, format="json")
    assert move.status_code == 200
    assert api.post(f"/api/purchases/{refunded}/refund/").json()["cancelled"] == 1

    publisher = PublishingTwice()
    try:
        result = sweep(ScheduledPurchase, publisher=publisher)
    finally:
        publisher.close()
    assert (result.delivered, result.failed) == (2, 0)

    # One batch message, published twice: the first sends both emails, its duplicate nothing.
    wait_for(lambda: handled(purchases_worker) >= 2, timeout=90)
    log = worker_log()
    assert (
        log.count("'2 handled, 0 failed, 0 skipped'"),
        log.count("'0 handled, 0 failed, 2 skipped'"),
    ) == (1, 1)
    emails = sent_emails(mail_dir)
    assert sorted(message["To"] for message in emails) == ["ann@example.com", "cat@example.com"]
    for message in emails:
        assert message["Subject"] == "Your download: The Band - Moved Up"
        assert message["From"] == settings.DEFAULT_FROM_EMAIL
        link = next(w for w in message.get_payload().split() if "/downloads/" in w)
        listing = APIClient().get(urlsplit(link).path)
        assert (listing.status_code, listing.json()["release"]) == (200, "Moved Up")
    delivered = ScheduledPurchase.objects.filter(status=Status.DELIVERED)
    assert delivered.count() == delivered.exclude(handled_at=None).count() == 2
    assert ScheduledPurchase.objects.filter(purchase__release=later, status=Status.PENDING).exists()
