"""Who changed a purchase's emails over REST, and each row's timeline at its history URL."""

from datetime import UTC, datetime, timedelta

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from purchases.models import ScheduledPurchase
from purchases.services import purchase_create
from scheduling.ops.api.views import ScheduledEventViewSet
from scheduling.rows.actors import current_actor
from scheduling.rows.history.models import EventHistory, Kind
from tests.conftest import client_for, users_of
from tests.purchases.factories import CustomerFactory, ReleaseFactory

user_with = users_of("purchases")

pytestmark = pytest.mark.django_db

RELEASE_DAY = datetime(2030, 3, 1, 9, 0, tzinfo=UTC)
SCHEDULED = "/api/scheduled-purchases/"


def sold(email):
    release = ReleaseFactory(release_date=RELEASE_DAY)
    return purchase_create(customer=CustomerFactory(email=email), release=release)


def entries(row, kind=None):
    logged = EventHistory.objects.filter(model="purchases.scheduledpurchase", row_id=row.pk)
    return list(logged.filter(kind=kind) if kind else logged)


def shift_by_email(client, email, shift="P1D"):
    body = {"filter": {"customer_email": email}, "shift": shift}
    response = client.post(SCHEDULED + "reschedule/", body, format="json")
    assert response.status_code == 200, response.content
    return response


def test_a_bulk_shift_by_customer_email_records_the_user_and_both_due_times(api):
    ann, bob = sold("ann@example.com"), sold("bob@example.com")

    shift_by_email(api, "ann@example.com")

    row = ann.scheduled.get(track=None)
    (moved,) = entries(row)
    assert (moved.kind, moved.actor) == (Kind.RESCHEDULED, "api:clerk")
    before = datetime.fromisoformat(moved.detail["before"])
    after = datetime.fromisoformat(moved.detail["after"])
    assert (before, after) == (RELEASE_DAY, RELEASE_DAY + timedelta(days=1))
    assert not any(entries(other) for other in bob.scheduled.all())
    assert current_actor() == "code"  # the request's actor ends with it


def test_a_token_authenticated_call_records_the_token(clerk):
    purchase = sold("ann@example.com")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=clerk).key}")

    shift_by_email(client, "ann@example.com")

    assert {e.actor for e in entries(purchase.scheduled.get(track=None))} == {"api:clerk (token)"}


def test_a_refund_over_rest_records_the_user(api):
    purchase = sold("ann@example.com")

    assert api.post(f"/api/purchases/{purchase.pk}/refund/").status_code == 200

    cancelled = entries(purchase.scheduled.get(track=None), Kind.CANCELLED)
    assert [e.actor for e in cancelled] == ["api:clerk"]


def test_the_history_url_answers_the_timeline_oldest_first(api):
    purchase = sold("ann@example.com")
    shift_by_email(api, "ann@example.com")
    shift_by_email(api, "ann@example.com", "-PT1H")
    row = purchase.scheduled.get(track=None)

    listed = api.get(SCHEDULED, {"purchase": purchase.pk})
    url = next(r["history_url"] for r in listed.json()["results"] if r["id"] == row.pk)
    timeline = api.get(url)

    assert url == f"http://testserver/api/events/purchases/scheduledpurchase/{row.pk}/history/"
    assert timeline.status_code == 200
    assert (timeline.json()["count"], timeline.json()["next"]) == (3, None)
    body = timeline.json()["results"]
    assert [e["kind"] for e in body] == ["scheduled", "rescheduled", "rescheduled"]
    assert [e["at"] for e in body] == sorted(e["at"] for e in body)
    assert set(body[1]) == {"at", "kind", "attempt", "version", "actor", "detail"}
    assert [e["actor"] for e in body[1:]] == ["api:clerk", "api:clerk"]


def test_the_generic_list_links_each_row_to_its_history(api):
    row = sold("ann@example.com").scheduled.get(track=None)
    url = "/api/events/purchases/scheduledpurchase/"

    listed = {r["id"]: r for r in api.get(url, {"purchase": row.purchase_id}).json()["results"]}

    assert listed[row.pk]["history_url"] == f"http://testserver{url}{row.pk}/history/"


def test_the_history_needs_the_view_permission_and_an_existing_row(viewer):
    row = sold("ann@example.com").scheduled.get(track=None)
    path = f"/api/events/purchases/scheduledpurchase/{row.pk}/history/"
    nobody = client_for(user_with("nobody"))

    assert client_for(viewer).get(path).status_code == 200
    assert nobody.get(path).status_code == 403
    assert APIClient().get(path).status_code == 403
    missing = f"/api/events/purchases/scheduledpurchase/{row.pk + 1000}/history/"
    assert client_for(viewer).get(missing).status_code == 404


def test_an_exception_in_the_view_does_not_leave_the_actor_behind(api, monkeypatch):
    def broken(self, body):
        assert current_actor() == "api:clerk"
        raise RuntimeError("boom")

    monkeypatch.setattr(ScheduledEventViewSet, "bulk_cancel", broken)
    api.raise_request_exception = True
    sold("ann@example.com")
    body = {"filter": {"customer_email": "ann@example.com"}}

    with pytest.raises(RuntimeError):
        api.post(SCHEDULED + "cancel/", body, format="json")

    assert current_actor() == "code"
    assert ScheduledPurchase.objects.filter(status="cancelled").count() == 0
