"""The statements one `POST /api/purchases/` costs: counted, so an N+1 or a second lookup
shows as a failing test (the speed itself is the bench's `create` scenario)."""

from datetime import UTC, datetime, timedelta

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from purchases.models import Purchase, ScheduledPurchase
from tests.purchases.factories import CustomerFactory, ReleaseFactory, TrackFactory

pytestmark = pytest.mark.django_db

RELEASE_DAY = datetime(2030, 3, 1, 9, 0, tzinfo=UTC)
# The token with its user (1), the user's and their groups' permissions (2), the release
# share-locked (1), one INSERT of the purchase (its customer checked in it) and every scheduled
# row (1), and the savepoint pair the test's own transaction turns the atomic block into (2; in
# production a BEGIN and a COMMIT).
QUERIES_PER_SALE = 7


@pytest.fixture
def token_client(clerk) -> APIClient:
    """Authenticated as a real API client is: by its token header, looked up per request."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=clerk).key}")
    return client


def post_sale(client, customer, release):
    return client.post(
        "/api/purchases/", {"customer": customer.pk, "release": release.pk}, format="json"
    )


@pytest.mark.parametrize("staggered_tracks", [0, 1, 5])
def test_a_sale_costs_the_same_statements_however_many_tracks_it_schedules(
    token_client, django_assert_num_queries, staggered_tracks
):
    release = ReleaseFactory(release_date=RELEASE_DAY)
    for days in range(staggered_tracks):
        TrackFactory(release=release, release_date=RELEASE_DAY - timedelta(days=days + 1))
    customer = CustomerFactory()

    with django_assert_num_queries(QUERIES_PER_SALE):
        response = post_sale(token_client, customer, release)

    assert response.status_code == 201, response.content
    purchase = Purchase.objects.get(pk=response.json()["id"])
    assert purchase.scheduled.count() == 1 + staggered_tracks
    assert response.json()["release"] == release.pk


def test_an_unknown_release_is_refused_naming_the_field(token_client):
    response = token_client.post(
        "/api/purchases/", {"customer": CustomerFactory().pk, "release": 999999}, format="json"
    )

    assert response.status_code == 400
    assert response.json() == {"release": ['Invalid pk "999999" - object does not exist.']}
    assert not Purchase.objects.exists()
    assert not ScheduledPurchase.objects.exists()


@pytest.mark.parametrize("release", ["x", True, [1], {"id": 1}])
def test_a_release_that_is_not_an_id_is_refused_naming_the_field(token_client, release):
    response = token_client.post(
        "/api/purchases/", {"customer": CustomerFactory().pk, "release": release}, format="json"
    )

    assert response.status_code == 400
    assert response.json()["release"][0].startswith("Incorrect type. Expected pk value")


def test_an_unknown_customer_is_refused_naming_the_field(token_client):
    release = ReleaseFactory(release_date=RELEASE_DAY)

    response = token_client.post(
        "/api/purchases/", {"customer": 999999, "release": release.pk}, format="json"
    )

    assert response.status_code == 400
    assert response.json() == {"customer": ['Invalid pk "999999" - object does not exist.']}
