"""The admin and a row's story: who changed it (the signed-in user), its timeline on its page,
a confirmation before retrying rows past max_lateness, and the business search."""

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.messages import get_messages
from django.utils import timezone

from purchases.models import ScheduledPurchase
from purchases.services import purchase_create
from scheduling.ops.admin.timeline import details
from scheduling.rows.history.models import EventHistory, Kind
from scheduling.rows.history.record import written_for
from scheduling.rows.history.timeline import Entry
from tests.factories import PingFactory, ScheduledPingFactory
from tests.purchases.factories import CustomerFactory, ReleaseFactory
from tests.testapp.models import ScheduledPing

pytestmark = pytest.mark.django_db

Status = ScheduledPurchase.Status
RELEASE_DAY = datetime(2030, 3, 1, 9, 0, tzinfo=UTC)
PURCHASES = "/admin/purchases/scheduledpurchase/"
PINGS = "/admin/testapp/scheduledping/"


def sold(customer=None):
    release = ReleaseFactory(release_date=RELEASE_DAY)
    purchase = purchase_create(customer=customer or CustomerFactory(), release=release)
    return purchase.scheduled.get(track=None)


def post_action(client, url, action, rows, **extra):
    """The changelist's action button (with `index`), or an intermediate page's form."""
    data = {"action": action, ACTION_CHECKBOX_NAME: [row.pk for row in rows], **extra}
    if not extra:
        data["index"] = 0
    return client.post(url, data, follow=True)


def messages_of(response):
    return [str(message) for message in get_messages(response.wsgi_request)]


def logged(row, kind):
    return list(written_for(type(row), row.pk).filter(kind=kind))


def test_an_admin_cancel_records_the_admin_user_and_the_reason(admin_client):
    row = sold()

    post_action(admin_client, PURCHASES, "cancel_rows", [row])

    (entry,) = logged(row, Kind.CANCELLED)
    assert entry.actor == "admin:admin"
    assert entry.detail["reason"] == "cancelled in the admin by admin"


def test_an_admin_shift_records_the_user_and_both_due_times(admin_client):
    row = sold()

    post_action(admin_client, PURCHASES, "shift_rows", [row], apply="Shift", delta="P7D")

    (entry,) = logged(row, Kind.RESCHEDULED)
    assert entry.actor == "admin:admin"
    assert datetime.fromisoformat(entry.detail["before"]) == RELEASE_DAY
    assert datetime.fromisoformat(entry.detail["after"]) == RELEASE_DAY + timedelta(days=7)
    assert entry.detail["how"] == "shift"


def test_the_row_page_shows_its_timeline_and_business_time(admin_client):
    row = sold()
    post_action(
        admin_client, PURCHASES, "reschedule_rows", [row], apply="1", due_at="2031-05-01T10:00Z"
    )
    post_action(admin_client, PURCHASES, "cancel_rows", [row])

    page = admin_client.get(f"{PURCHASES}{row.pk}/change/")

    html = page.content.decode()
    timeline = html[html.index('id="timeline"') :]
    assert [line.kind for line in page.context["timeline"]] == [
        "scheduled",
        "rescheduled",
        "cancelled",
    ]
    for text in ("Scheduled", "Rescheduled", "Cancelled", "admin:admin", "(reschedule)"):
        assert text in timeline
    assert "cancelled in the admin by admin" in timeline
    assert "business time" in html.lower()


def test_the_timeline_says_how_late_a_row_was_sent_against_the_business_time(admin_client):
    row = sold()
    ScheduledPurchase.objects.filter(pk=row.pk).update(
        status=Status.DELIVERED, delivered_at=RELEASE_DAY + timedelta(days=3, seconds=5)
    )

    page = admin_client.get(f"{PURCHASES}{row.pk}/change/")

    (published,) = [line for line in page.context["timeline"] if line.kind == "published"]
    assert published.details == ["sent 3 days late"]
    assert "sent 3 days late" in page.content.decode()


def expired_ping(ago):
    due_at = timezone.now() - ago
    return ScheduledPingFactory(due_at=due_at, status=ScheduledPing.Status.EXPIRED)


def test_retrying_a_row_past_max_lateness_asks_first_and_retries_once_confirmed(admin_client):
    row = expired_ping(timedelta(days=3))

    question = post_action(admin_client, PINGS, "retry_rows", [row])

    assert question.templates[0].name == "admin/scheduling/late_retry.html"
    assert "sent 3 days late" in question.content.decode()
    assert ScheduledPing.objects.get(pk=row.pk).status == ScheduledPing.Status.EXPIRED
    assert not logged(row, Kind.RETRIED)

    done = post_action(admin_client, PINGS, "retry_rows", [row], late="confirmed")

    assert messages_of(done) == ["Back to pending: 1 scheduled ping."]
    retried = ScheduledPing.objects.get(pk=row.pk)
    assert (retried.status, retried.business_time) == (ScheduledPing.Status.PENDING, row.due_at)
    (entry,) = logged(row, Kind.RETRIED)
    assert entry.actor == "admin:admin"


def test_rows_within_max_lateness_are_retried_without_a_question(admin_client):
    row = expired_ping(timedelta(hours=2))

    done = post_action(admin_client, PINGS, "retry_rows", [row])

    assert messages_of(done) == ["Back to pending: 1 scheduled ping."]
    assert ScheduledPing.objects.get(pk=row.pk).status == ScheduledPing.Status.PENDING


def test_the_purchases_changelist_finds_every_email_of_a_customer(admin_client):
    ann = CustomerFactory(email="ann@example.com")
    ann_rows = [sold(ann), sold(ann)]
    sold(CustomerFactory(email="bob@example.com"))

    page = admin_client.get(PURCHASES, {"q": "ann@example.com"})

    assert {row.pk for row in page.context["cl"].result_list} == {row.pk for row in ann_rows}


def test_the_default_admin_searches_the_fields_the_model_lists(admin_client):
    wanted = ScheduledPingFactory(ping=PingFactory(name="billing-42"))
    ScheduledPingFactory(ping=PingFactory(name="other"))

    page = admin_client.get(PINGS, {"q": "billing-42"})

    assert [row.pk for row in page.context["cl"].result_list] == [wanted.pk]


def test_business_code_is_recorded_as_code_and_the_admin_view_resets_the_actor(admin_client):
    row = sold()
    post_action(admin_client, PURCHASES, "cancel_rows", [sold()])

    ScheduledPurchase.objects.filter(pk=row.pk).cancel("refund")

    assert EventHistory.objects.get(row_id=row.pk, kind=Kind.CANCELLED).actor == "code"


def test_an_expiry_reads_as_its_due_time_its_deadline_and_how_late_it_was():
    detail = {
        "due_at": "2030-03-01T09:00:00+00:00",
        "expires_at": "2030-03-02T09:00:00+00:00",
        "late_by_seconds": 90000.0,
    }
    entry = Entry(RELEASE_DAY, Kind.EXPIRED, 0, 1, "sweep@host", detail)

    assert details(entry) == [
        "due at 2030-03-01 09:00:00 UTC",
        "expiring at 2030-03-02 09:00:00 UTC",
        "expired 25 h after its due time",
    ]
