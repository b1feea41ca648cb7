"""The generic API's retry over REST confirms lateness; its history endpoint and actors."""

from datetime import timedelta

import pytest
from django.utils import timezone

from scheduling.rows.history.models import EventHistory, Kind
from scheduling.rows.states import Status
from tests.factories import ScheduledPingFactory

pytestmark = pytest.mark.django_db

URL = "/api/events/testapp/scheduledping/"


def expired_ping(days_late):
    due_at = timezone.now() - timedelta(days=days_late)
    return ScheduledPingFactory(status=Status.EXPIRED, due_at=due_at)


def retry(client, row, **body):
    return client.post(f"{URL}retry/", {"filter": {"ping": row.ping_id}, **body}, format="json")


def test_a_retry_past_max_lateness_answers_400_naming_allow_late_and_changes_nothing(api):
    row = expired_ping(days_late=3)

    response = retry(api, row)

    assert response.status_code == 400
    (message,) = response.json()["allow_late"]
    assert "max_lateness (1 day, 0:00:00)" in message
    row.refresh_from_db()
    assert (row.status, row.version) == (Status.EXPIRED, 1)
    assert not EventHistory.objects.filter(row_id=row.pk, kind=Kind.RETRIED).exists()


def test_allow_late_retries_it_and_the_history_names_the_user(api):
    row = expired_ping(days_late=3)

    response = retry(api, row, allow_late=True)

    assert response.json() == {"count": 1}
    row.refresh_from_db()
    assert row.status == Status.PENDING
    timeline = api.get(f"{URL}{row.pk}/history/").json()["results"]
    assert [e["kind"] for e in timeline] == ["scheduled", "retried"]
    assert timeline[-1]["actor"] == "api:admin"


def test_a_retry_within_max_lateness_needs_no_flag(api):
    row = expired_ping(days_late=0)

    assert retry(api, row).json() == {"count": 1}


def test_allow_late_must_be_a_boolean(api):
    response = retry(api, expired_ping(days_late=3), allow_late="perhaps")

    assert response.status_code == 400
    assert "allow_late" in response.json()
