"""The changelists show the business columns; the schedule form previews its payload."""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from purchases.models import ScheduledPurchase
from purchases.services import purchase_create
from scheduling.jobs.services import job_put
from scheduling.rows.states import Status
from tests.purchases.factories import CustomerFactory, ReleaseFactory, TrackFactory

pytestmark = pytest.mark.django_db
T1 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)


def test_scheduled_purchases_show_customer_release_track_due_status_and_lateness(admin_client):
    release = ReleaseFactory(title="Loud", release_date=T1)
    TrackFactory(release=release, title="Single", release_date=T1 - timedelta(days=7))
    purchase = purchase_create(customer=CustomerFactory(email="ann@example.com"), release=release)
    whole, single = purchase.scheduled.order_by("track")
    now = timezone.now()
    ScheduledPurchase.objects.filter(pk=whole.pk).update(
        status=Status.DELIVERED, due_at=now - timedelta(minutes=5), delivered_at=now
    )
    ScheduledPurchase.objects.filter(pk=single.pk).update(due_at=now - timedelta(seconds=30))

    page = admin_client.get("/admin/purchases/scheduledpurchase/").content.decode()

    for text in ("ann@example.com", "Loud", "Single", "whole release", "Awaiting handling"):
        assert text in page
    assert "5 min" in page  # published five minutes late
    assert "s overdue" in page  # the pending row, due half a minute ago


def test_jobs_show_their_runs_status_next_run_and_count(admin_client):
    job_put(
        key="report",
        schedules=[T1, T1 + timedelta(days=1)],
        callback={"type": "queue", "queue": "reports"},
        payload={},
        labels={},
    )

    page = admin_client.get("/admin/scheduling_jobs/job/").content.decode()

    assert "2 pending" in page
    assert "Jan. 1, 2030, 9 a.m." in page
    assert "/admin/scheduling_jobs/scheduledjobrun/?job__id__exact=" in page


def test_the_fire_preview_renders_the_payload_for_the_next_fire_time(admin_client):
    query = {
        "name": "nightly",
        "cron": "0 3 * * *",
        "timezone": "Europe/Paris",
        "starts_at_0": "2030-01-01",
        "starts_at_1": "00:00:00",
        "payload_template": '{"day": "${todaysDate}", "at": "${processTime}", "by": "${scheduleName}"}',
    }

    html = admin_client.get(
        "/admin/scheduling_recurring/recurringschedule/preview/", query
    ).content.decode()

    assert "Payload at the first" in html
    assert "&quot;by&quot;: &quot;nightly&quot;" in html
    assert "03:00:00.000+01:00" in html


def test_the_fire_preview_names_a_bad_payload_template(admin_client):
    query = {
        "cron": "0 3 * * *",
        "timezone": "UTC",
        "starts_at_0": "2030-01-01",
        "starts_at_1": "00:00:00",
        "payload_template": '{"a": "${nope}"}',
    }

    html = admin_client.get(
        "/admin/scheduling_recurring/recurringschedule/preview/", query
    ).content.decode()

    assert "payload: unknown variable ${nope}" in html
