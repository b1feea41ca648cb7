"""Names that end up in an email subject are one line (issue #26, finding 4): an artist name or
a title with a newline or another control character is refused at input, by the API and the
admin alike, naming the field; a row stored before that rule is emailed with the subject
cleaned, never failing at send time with BadHeaderError."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.test import Client
from django.utils import timezone

from purchases.models import Artist, Purchase, Release, ScheduledPurchase, Track
from purchases.services import purchase_create
from scheduling.delivery.testing import run_due
from tests.purchases.factories import (
    AccountFactory,
    ArtistFactory,
    CustomerFactory,
    ReleaseFactory,
    TrackFactory,
)

pytestmark = pytest.mark.django_db

BAD = ["Ann\nBcc: all@example.com", "Ann\rLee", "Ann\tLee", "Ann\x00", "Ann\u2028Lee", "Ann\x85Lee"]
ONE_LINE = "Enter one line of text without control characters"


@pytest.mark.parametrize("name", BAD)
def test_the_api_refuses_an_artist_name_with_a_control_character(api, name):
    account = AccountFactory()

    response = api.post("/api/artists/", {"name": name, "account": account.pk}, format="json")

    assert response.status_code == 400, response.content
    assert response.json()["name"][0].startswith(ONE_LINE)
    assert not Artist.objects.exists()


def test_the_api_refuses_a_release_title_with_a_newline_on_create_and_on_change(api):
    release = ReleaseFactory(title="Blue")
    body = {"artist": release.artist_id, "title": "Blue\nSky", "release_date": "2030-01-01T00:00Z"}

    created = api.post("/api/releases/", body, format="json")
    changed = api.patch(f"/api/releases/{release.pk}/", {"title": "Blue\nSky"}, format="json")

    assert (created.status_code, changed.status_code) == (400, 400)
    assert created.json()["title"][0].startswith(ONE_LINE)
    assert changed.json()["title"][0].startswith(ONE_LINE)
    assert list(Release.objects.values_list("title", flat=True)) == ["Blue"]


def test_the_api_trims_a_trailing_newline(api):
    account = AccountFactory()

    response = api.post("/api/artists/", {"name": "Ann\r\n", "account": account.pk}, format="json")

    assert response.status_code == 201, response.content
    assert Artist.objects.get().name == "Ann"


def test_one_line_names_with_any_letters_are_accepted(api):
    account = AccountFactory()
    name = "Sigur Rós - Ágætis byrjun (日本盤)"

    response = api.post("/api/artists/", {"name": name, "account": account.pk}, format="json")

    assert response.status_code == 201, response.content


@pytest.fixture
def admin_client(db: None) -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("boss", "", "pw"))
    return client


def test_the_admin_refuses_an_artist_name_with_a_newline(admin_client):
    account = AccountFactory()

    response = admin_client.post(
        "/admin/purchases/artist/add/", {"name": "Ann\nLee", "account": account.pk}
    )

    assert response.status_code == 200  # the form again
    assert ONE_LINE in response.content.decode()
    assert not Artist.objects.exists()


def test_the_admin_refuses_a_track_title_with_a_newline(admin_client):
    track = TrackFactory(title="Intro")
    release = track.release
    response = admin_client.post(
        f"/admin/purchases/release/{release.pk}/change/",
        {
            "artist": release.artist_id,
            "title": release.title,
            "release_date_0": release.release_date.strftime("%Y-%m-%d"),
            "release_date_1": release.release_date.strftime("%H:%M:%S"),
            "tracks-TOTAL_FORMS": "1",
            "tracks-INITIAL_FORMS": "1",
            "tracks-0-id": track.pk,
            "tracks-0-release": release.pk,
            "tracks-0-position": track.position,
            "tracks-0-title": "Intro\nOutro",
        },
    )

    assert response.status_code == 200, response.get("Location")
    assert ONE_LINE in response.content.decode()
    assert Track.objects.get().title == "Intro"


def test_a_name_stored_before_the_rule_is_cleaned_in_the_subject_and_the_email_goes():
    artist = ArtistFactory()
    Artist.objects.filter(pk=artist.pk).update(name="Ann\r\nBcc: all@example.com")
    release = ReleaseFactory(artist=artist, title="Blue", release_date=timezone.now())
    purchase = purchase_create(customer=CustomerFactory(), release=release)

    handled = run_due(ScheduledPurchase, now=timezone.now() + timedelta(minutes=1))

    (message,) = mail.outbox
    assert handled == 1
    assert message.subject == "Your download: Ann Bcc: all@example.com - Blue"
    assert message.bcc == []
    row = ScheduledPurchase.objects.get(purchase=purchase)
    assert (row.status, row.last_error) == (ScheduledPurchase.Status.DELIVERED, "")
    assert row.handled_at is not None
    assert Purchase.objects.get().status == Purchase.Status.PAID
