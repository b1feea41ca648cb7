from datetime import UTC, datetime, timedelta

import pytest
from django.http import HttpRequest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from purchases.models import Purchase, ScheduledPurchase
from purchases.services import purchase_create
from tests.conftest import client_for
from tests.purchases.factories import (
    ArtistFactory,
    CustomerFactory,
    ReleaseFactory,
    TrackFactory,
)

pytestmark = pytest.mark.django_db

Status = ScheduledPurchase.Status
RELEASE_DAY = datetime(2030, 3, 1, 9, 0, tzinfo=UTC)
SCHEDULED = "/api/scheduled-purchases/"


def sold(release=None, **customer):
    release = release or ReleaseFactory(release_date=RELEASE_DAY)
    return purchase_create(customer=CustomerFactory(**customer), release=release)


def ids(response):
    assert response.status_code == 200, response.content
    return sorted(row["id"] for row in response.json()["results"])


def whole_release_row(purchase):
    return purchase.scheduled.get(track=None)


# --- authentication and permissions ------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/api/releases/", "/api/purchases/", SCHEDULED, "/api/customers/"]
)
def test_anonymous_requests_are_refused(path):
    response = APIClient().get(path)

    assert response.status_code == 403
    assert response.json()["detail"] == "Authentication credentials were not provided."


def test_an_unknown_token_is_refused():
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token nope")

    response = client.get(SCHEDULED)

    # 403, not 401: session authentication comes first in the settings and sends no challenge.
    assert response.status_code == 403
    assert response.json()["detail"] == "Invalid token."


def test_a_token_authenticates(clerk):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=clerk).key}")

    assert client.get(SCHEDULED).status_code == 200


def test_session_authentication_works_and_bulk_posts_need_csrf(clerk):
    client = APIClient(enforce_csrf_checks=True)
    client.login(request=HttpRequest(), username="clerk", password="pw")  # django-axes asks

    assert client.get(SCHEDULED).status_code == 200
    response = client.post(SCHEDULED + "cancel/", {"filter": {"artist": 1}}, format="json")
    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]


def test_a_user_without_the_view_permission_cannot_list(django_user_model):
    nobody = django_user_model.objects.create_user("nobody")

    assert client_for(nobody).get(SCHEDULED).status_code == 403


def test_bulk_actions_need_the_change_permission(viewer):
    purchase = sold()
    client = client_for(viewer)

    assert client.get(SCHEDULED).status_code == 200
    for action, body in (
        ("reschedule", {"filter": {"purchase": purchase.pk}, "shift": "P1D"}),
        ("cancel", {"filter": {"purchase": purchase.pk}}),
    ):
        response = client.post(f"{SCHEDULED}{action}/", body, format="json")
        assert response.status_code == 403
    assert client.post(f"/api/purchases/{purchase.pk}/refund/").status_code == 403
    assert whole_release_row(purchase).status == Status.PENDING


# --- domain resources --------------------------------------------------------------------


def test_creating_a_purchase_schedules_its_emails(api):
    release = ReleaseFactory(release_date=RELEASE_DAY)
    TrackFactory(release=release, release_date=RELEASE_DAY - timedelta(days=10))
    customer = CustomerFactory()

    response = api.post(
        "/api/purchases/", {"customer": customer.pk, "release": release.pk}, format="json"
    )

    assert response.status_code == 201, response.content
    assert response.json()["status"] == "paid"
    purchase = Purchase.objects.get(pk=response.json()["id"])
    assert purchase.scheduled.count() == 2


def test_patching_a_release_date_moves_its_rows(api):
    purchase = sold()
    release = purchase.release

    response = api.patch(
        f"/api/releases/{release.pk}/",
        {"release_date": "2030-03-08T09:00:00+01:00", "title": "Renamed"},
        format="json",
    )

    assert response.status_code == 200, response.content
    assert response.json()["release_date"] == "2030-03-08T08:00:00Z"
    row = whole_release_row(purchase)
    assert (row.due_at, row.version) == (datetime(2030, 3, 8, 8, 0, tzinfo=UTC), 2)
    release.refresh_from_db()
    assert release.title == "Renamed"


def test_patching_only_the_title_leaves_the_rows_alone(api):
    purchase = sold()

    api.patch(f"/api/releases/{purchase.release_id}/", {"title": "New"}, format="json")

    assert whole_release_row(purchase).version == 1


@pytest.mark.parametrize(
    "value", ["2030-03-08T09:00:00", "2030-03-08", "next week", "2030-13-01T00:00Z"]
)
def test_a_naive_or_malformed_release_date_is_refused_naming_the_field(api, value):
    release = ReleaseFactory(release_date=RELEASE_DAY)

    response = api.patch(f"/api/releases/{release.pk}/", {"release_date": value}, format="json")

    assert response.status_code == 400
    (message,) = response.json()["release_date"]
    assert "2026-12-24T14:00:00Z" in message
    release.refresh_from_db()
    assert release.release_date == RELEASE_DAY


@pytest.mark.parametrize(
    "value",
    [
        "0001-01-01T00:30:00+01:00",
        "1969-12-31T23:59:59Z",
        "9001-01-01T00:00:00Z",
        "9999-12-31T23:30:00-01:00",
    ],
)
def test_a_release_date_that_cannot_be_stored_is_refused_before_anything_moves(api, value):
    purchase = sold()
    release = purchase.release

    response = api.patch(f"/api/releases/{release.pk}/", {"release_date": value}, format="json")

    assert response.status_code == 400
    (message,) = response.json()["release_date"]
    assert "1970 to 9000" in message
    release.refresh_from_db()
    assert release.release_date == RELEASE_DAY
    assert (whole_release_row(purchase).due_at, whole_release_row(purchase).version) == (
        RELEASE_DAY,
        1,
    )
    assert api.get(f"/api/releases/{release.pk}/").status_code == 200
    assert api.get(SCHEDULED).status_code == 200


def test_a_release_date_with_a_large_offset_is_stored_in_utc(api):
    purchase = sold()

    response = api.patch(
        f"/api/releases/{purchase.release_id}/",
        {"release_date": "2030-03-08T09:00:00+16:00"},
        format="json",
    )

    assert response.status_code == 200, response.content
    assert response.json()["release_date"] == "2030-03-07T17:00:00Z"
    assert whole_release_row(purchase).due_at == datetime(2030, 3, 7, 17, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"due_after": "0001-01-01T00:00:00+01:00"}, "due_after"),
        ({"due_before": "9500-01-01T00:00Z"}, "due_before"),
    ],
)
def test_an_out_of_range_due_filter_is_a_400_naming_it(api, params, field):
    response = api.get(SCHEDULED, params)

    assert response.status_code == 400
    assert list(response.json()) == [field]


def test_a_bulk_reschedule_out_of_range_is_refused(api):
    purchase = sold()

    response = api.post(
        f"{SCHEDULED}reschedule/",
        {"filter": {"purchase": purchase.pk}, "due_at": "0001-01-01T00:30:00+01:00"},
        format="json",
    )

    assert response.status_code == 400
    assert "1970 to 9000" in response.json()["due_at"][0]
    assert whole_release_row(purchase).version == 1


def test_refunding_cancels_the_pending_emails(api):
    purchase = sold()

    response = api.post(f"/api/purchases/{purchase.pk}/refund/")

    assert response.status_code == 200
    assert response.json()["cancelled"] == 1
    assert response.json()["purchase"]["status"] == "refunded"
    assert whole_release_row(purchase).status == Status.CANCELLED


def test_purchases_cannot_be_edited_or_deleted(api):
    purchase = sold()

    assert api.patch(f"/api/purchases/{purchase.pk}/", {"status": "paid"}).status_code == 405
    assert api.delete(f"/api/purchases/{purchase.pk}/").status_code == 405


def test_deleting_a_release_that_has_purchases_is_a_conflict(api):
    purchase = sold()

    response = api.delete(f"/api/releases/{purchase.release_id}/")

    assert response.status_code == 409
    assert "purchases" in response.json()["detail"]


def test_the_store_resources_are_listed(api):
    artist = ArtistFactory()
    sold(ReleaseFactory(artist=artist))

    for path in ("accounts", "artists", "releases", "customers", "purchases"):
        assert api.get(f"/api/{path}/").json()["count"] == 1
    assert api.get("/api/artists/", {"account": artist.account_id}).json()["count"] == 1


# --- scheduled rows: filters ---------------------------------------------------------------


def test_scheduled_rows_filter_by_business_facts(api):
    artist = ArtistFactory()
    mine = sold(ReleaseFactory(artist=artist, release_date=RELEASE_DAY), email="a@label.test")
    sibling = sold(ReleaseFactory(artist=ArtistFactory(account=artist.account)))
    other = sold()
    row = whole_release_row(mine).pk
    sibling_row = whole_release_row(sibling).pk

    assert ids(api.get(SCHEDULED, {"artist": artist.pk})) == [row]
    assert ids(api.get(SCHEDULED, {"account": artist.account_id})) == sorted([row, sibling_row])
    assert ids(api.get(SCHEDULED, {"release": mine.release_id})) == [row]
    assert ids(api.get(SCHEDULED, {"customer": mine.customer_id})) == [row]
    assert ids(api.get(SCHEDULED, {"customer_email": "A@LABEL.test"})) == [row]
    assert ids(api.get(SCHEDULED, {"purchase": other.pk})) == [whole_release_row(other).pk]


def test_scheduled_rows_filter_by_status_time_and_track(api):
    release = ReleaseFactory(release_date=RELEASE_DAY)
    single = TrackFactory(release=release, release_date=RELEASE_DAY - timedelta(days=7))
    purchase = sold(release)
    track_row = purchase.scheduled.get(track=single).pk
    whole = whole_release_row(purchase).pk
    ScheduledPurchase.objects.filter(pk=whole).update(status=Status.FAILED)

    assert ids(api.get(SCHEDULED, {"track": single.pk})) == [track_row]
    assert ids(api.get(SCHEDULED, {"status": "failed"})) == [whole]
    assert ids(api.get(SCHEDULED + "?status=failed&status=pending")) == sorted([track_row, whole])
    assert ids(api.get(SCHEDULED, {"due_before": "2030-03-01T09:00:00Z"})) == [track_row]
    assert ids(api.get(SCHEDULED, {"due_after": "2030-03-01T10:00:00+01:00"})) == [whole]


def test_a_row_shows_its_event_id_and_bookkeeping(api):
    row = whole_release_row(sold())

    body = api.get(f"{SCHEDULED}{row.pk}/").json()

    assert body["event_id"] == f"purchases.scheduledpurchase:{row.pk}:v1"
    assert body["due_at"] == "2030-03-01T09:00:00Z"
    assert (body["status"], body["version"], body["track"]) == ("pending", 1, None)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"due_after": "2030-03-01T09:00:00"}, "due_after"),
        ({"due_before": "soon"}, "due_before"),
        ({"status": "lost"}, "status"),
        ({"artist": "x"}, "artist"),
    ],
)
def test_a_bad_filter_value_is_a_400_naming_the_field(api, params, field):
    response = api.get(SCHEDULED, params)

    assert response.status_code == 400
    assert list(response.json()) == [field]


# --- scheduled rows: bulk actions ----------------------------------------------------------


def test_bulk_reschedule_to_a_time_moves_the_selected_pending_rows(api):
    artist = ArtistFactory()
    mine, other = sold(ReleaseFactory(artist=artist)), sold()

    response = api.post(
        SCHEDULED + "reschedule/",
        {"filter": {"artist": artist.pk}, "due_at": "2031-01-01T00:00:00Z"},
        format="json",
    )

    assert response.json() == {"count": 1}
    assert whole_release_row(mine).due_at == datetime(2031, 1, 1, tzinfo=UTC)
    assert whole_release_row(other).due_at == RELEASE_DAY


def test_bulk_shift_moves_rows_by_an_iso_duration(api):
    artist = ArtistFactory()
    first = sold(ReleaseFactory(artist=artist, release_date=RELEASE_DAY))
    second = sold(ReleaseFactory(artist=artist, release_date=RELEASE_DAY + timedelta(days=1)))

    response = api.post(
        SCHEDULED + "reschedule/",
        {"filter": {"account": artist.account_id}, "shift": "-PT2H"},
        format="json",
    )

    assert response.json() == {"count": 2}
    assert whole_release_row(first).due_at == RELEASE_DAY - timedelta(hours=2)
    assert whole_release_row(second).due_at == RELEASE_DAY + timedelta(days=1, hours=-2)


def test_bulk_cancel_by_customer_email_records_the_reason(api):
    fraud = sold(email="mallory@fraud.test")
    honest = sold()

    response = api.post(
        SCHEDULED + "cancel/",
        {"filter": {"customer_email": "mallory@fraud.test"}, "reason": "fraud"},
        format="json",
    )

    assert response.json() == {"count": 1}
    row = whole_release_row(fraud)
    assert (row.status, row.cancel_reason) == (Status.CANCELLED, "fraud")
    assert whole_release_row(honest).status == Status.PENDING


def test_bulk_actions_leave_delivered_rows_alone(api):
    purchase = sold()
    ScheduledPurchase.objects.update(status=Status.DELIVERED)

    response = api.post(SCHEDULED + "cancel/", {"filter": {"purchase": purchase.pk}}, format="json")

    assert response.json() == {"count": 0}
    assert whole_release_row(purchase).status == Status.DELIVERED


@pytest.mark.parametrize("body", [{"filter": {}}, {"filter": {"customer_email": ""}}, {}])
def test_an_empty_filter_is_refused_unless_all_is_true(api, body):
    sold(), sold()

    refused = api.post(SCHEDULED + "cancel/", body, format="json")
    assert refused.status_code == 400
    assert list(refused.json()) == ["filter"]
    assert ScheduledPurchase.objects.pending().count() == 2

    accepted = api.post(SCHEDULED + "cancel/", {"filter": {}, **body, "all": True}, format="json")
    assert accepted.json() == {"count": 2}


@pytest.mark.parametrize(
    ("body", "field", "hint"),
    [
        ({"due_at": "2031-01-01T00:00:00"}, "due_at", "2026-12-24T14:00:00Z"),
        ({"due_at": "tomorrow"}, "due_at", "2026-12-24T14:00:00Z"),
        ({"shift": "7 days"}, "shift", "P7D"),
        ({"shift": "PT0S"}, "shift", "zero"),
        ({"shift": "P9999999999D"}, "shift", "100 years"),
        ({"shift": "-P36526D"}, "shift", "100 years"),
        ({}, "due_at", "exactly one"),
        ({"due_at": "2031-01-01T00:00:00Z", "shift": "P1D"}, "due_at", "exactly one"),
    ],
)
def test_a_bad_reschedule_body_is_a_400_naming_the_field(api, body, field, hint):
    purchase = sold()

    response = api.post(
        SCHEDULED + "reschedule/", {"filter": {"purchase": purchase.pk}, **body}, format="json"
    )

    assert response.status_code == 400
    assert hint in str(response.json()[field])
    assert whole_release_row(purchase).version == 1


@pytest.mark.parametrize(
    ("selection", "hint"),
    [
        ({"artst": 1}, "Unknown filter artst"),
        ({"due_after": "2030-01-01T00:00:00"}, "due_after"),
        ({"artist": "abc"}, "artist"),
        ({"artist": {"id": 1}}, "artist"),
    ],
)
def test_a_bad_filter_in_a_bulk_body_is_a_400_naming_it(api, selection, hint):
    sold()

    response = api.post(SCHEDULED + "cancel/", {"filter": selection}, format="json")

    assert response.status_code == 400
    assert hint in str(response.json()["filter"])
    assert ScheduledPurchase.objects.pending().count() == 1


def test_the_schema_documents_the_endpoints(api):
    response = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")

    paths = response.json()["paths"]
    for path in (
        "/api/accounts/",
        "/api/artists/",
        "/api/releases/{id}/",
        "/api/customers/",
        "/api/purchases/",
        "/api/purchases/{id}/refund/",
        "/api/scheduled-purchases/",
        "/api/scheduled-purchases/reschedule/",
        "/api/scheduled-purchases/cancel/",
    ):
        assert path in paths
    reschedule = paths["/api/scheduled-purchases/reschedule/"]["post"]
    assert reschedule["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/BulkReschedule"
    )
    filters = {p["name"] for p in paths["/api/scheduled-purchases/"]["get"]["parameters"]}
    assert {"status", "due_after", "due_before", "artist", "account", "customer_email"} <= filters
