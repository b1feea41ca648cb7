"""Calendars over REST (/api/calendars/) and in the admin: round trips of every field, their
next excluded spans, and bad values refused with a 400 naming the field and the form."""

import pytest

from scheduling.time.calendars.models import Calendar
from tests.conftest import client_for, users_of

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("frozen_clock")]

URL = "/api/calendars/"
ADMIN = "/admin/scheduling/calendar/"
FULL = {
    "name": "paris-office",
    "description": "Closed days and nights of the Paris office",
    "timezone": "Europe/Paris",
    "holidays": ["2026-12-24"],
    "holiday_rules": ["FREQ=YEARLY;BYMONTH=12;BYMONTHDAY=25", "FREQ=YEARLY;BYEASTER=1"],
    "daily_windows": ["22:00-07:00"],
    "weekdays": ["SAT", "SUN"],
    "composition": [],
}


def test_a_calendar_round_trips_every_field(api):
    created = api.post(URL, FULL, format="json")

    assert created.status_code == 201, created.content
    body = api.get(URL + "paris-office/").json()
    assert {name: body[name] for name in FULL} == FULL
    assert body["created_at"] == "2026-11-22T12:00:00Z"


def test_values_are_stored_in_their_plain_form(api):
    body = {
        "name": "lax",
        "weekdays": ["saturday", "Sun"],
        "holiday_rules": ["rrule:freq=yearly;bymonth=7;bymonthday=4"],
    }

    response = api.post(URL, body, format="json")

    assert response.status_code == 201, response.content
    stored = Calendar.objects.get(name="lax")
    assert stored.weekdays == ["SAT", "SUN"]
    assert stored.holiday_rules == ["FREQ=YEARLY;BYMONTH=7;BYMONTHDAY=4"]
    assert stored.timezone == "UTC"


def test_a_calendar_is_updated_composed_and_deleted_by_name(api):
    api.post(URL, FULL, format="json")
    api.post(URL, {"name": "weekends", "weekdays": ["SAT", "SUN"]}, format="json")
    steps = [{"op": "exclude", "calendar": "weekends"}]

    response = api.patch(URL + "paris-office/", {"composition": steps}, format="json")

    assert response.status_code == 200, response.content
    assert response.json()["composition"] == steps
    assert api.delete(URL + "weekends/").status_code == 400  # paris-office composes it
    assert api.delete(URL + "paris-office/").status_code == 204
    assert api.delete(URL + "weekends/").status_code == 204


def test_the_next_excluded_spans_are_served(api):
    api.post(URL, {**FULL, "daily_windows": [], "weekdays": []}, format="json")

    response = api.get(URL + "paris-office/spans/", {"count": 2})

    assert response.status_code == 200
    assert response.json() == {
        "calendar": "paris-office",
        "timezone": "Europe/Paris",
        "spans": [
            {
                "start": "2026-12-23T23:00:00Z",
                "end": "2026-12-25T23:00:00Z",  # the 24th and Christmas, one span
                "local_start": "2026-12-24T00:00:00+01:00",
                "local_end": "2026-12-26T00:00:00+01:00",
            },
            {
                "start": "2027-03-28T22:00:00Z",  # Easter Monday, after the spring change
                "end": "2027-03-29T22:00:00Z",
                "local_start": "2027-03-29T00:00:00+02:00",
                "local_end": "2027-03-30T00:00:00+02:00",
            },
        ],
    }


@pytest.mark.parametrize(
    ("field", "value", "form"),
    [
        ("name", "two words", "slug"),
        ("timezone", "Europe/Atlantis", "IANA time zone"),
        ("holidays", ["25/12/2026"], "YYYY-MM-DD"),
        ("holidays", "2026-12-25", "list"),
        ("holiday_rules", ["FREQ=HOURLY;BYMINUTE=0"], "YEARLY or MONTHLY"),
        ("holiday_rules", ["FREQ=YEARLY;BYMONTH=4;BYMONTHDAY=31"], "never falls on a date"),
        ("daily_windows", ["10pm-7am"], "HH:MM-HH:MM"),
        ("weekdays", ["someday"], "SAT"),
        ("composition", [{"op": "union", "calendar": "x"}], "include"),
        ("composition", [{"op": "include", "calendar": "nowhere"}], "no calendar is named"),
        ("composition", [{"op": "include", "calendar": "paris-office"}], "a cycle"),
    ],
)
def test_bad_values_answer_400_naming_the_field(api, field, value, form):
    response = api.post(URL, {**FULL, field: value}, format="json")

    assert response.status_code == 400
    errors = response.json()
    assert list(errors) == [field], errors
    assert form in str(errors[field])
    assert not Calendar.objects.exists()


# Superscript two, Arabic-Indic and fullwidth five pass str.isdigit(); int() refuses the first
# and reads the others as 5.
@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"count": "0"}, "count"),
        ({"count": "²"}, "count"),
        ({"count": "\u0665"}, "count"),
        ({"count": "\uff15"}, "count"),
        ({"after": "x"}, "after"),
    ],
)
def test_the_spans_query_is_checked(api, query, field):
    api.post(URL, FULL, format="json")

    response = api.get(URL + "paris-office/spans/", query)

    assert response.status_code == 400
    assert field in response.json()


def test_reading_needs_the_view_permission_and_writing_the_add_one():
    Calendar.objects.create(name="weekends", weekdays=["SAT"])
    viewer = client_for(users_of("scheduling")("viewer", "view_calendar"))

    assert viewer.get(URL + "weekends/").status_code == 200
    assert viewer.post(URL, {"name": "x"}, format="json").status_code == 403
    assert client_for(None).get(URL).status_code == 403


def admin_form(**fields):
    data = {
        "name": "paris-office",
        "description": "",
        "timezone": "Europe/Paris",
        "holidays": "2026-12-24\n2026-12-31",
        "holiday_rules": "FREQ=YEARLY;BYMONTH=12;BYMONTHDAY=25",
        "daily_windows": "22:00-07:00",
        "weekdays": "sat, sun",
        "composition": "",
    }
    return {**data, **fields}


def test_the_admin_adds_a_calendar_from_lines_and_shows_its_next_spans(admin_client):
    response = admin_client.post(ADMIN + "add/", admin_form())

    assert response.status_code == 302, response.content.decode()[:3000]
    stored = Calendar.objects.get(name="paris-office")
    assert stored.holidays == ["2026-12-24", "2026-12-31"]
    assert stored.weekdays == ["SAT", "SUN"]
    page = admin_client.get(ADMIN + f"{stored.pk}/change/").content.decode()
    # Friday night, the weekend and Monday morning make one span.
    assert "Fri 2026-11-20 22:00 CET to Mon 2026-11-23 07:00 CET" in page
    assert "2026-12-24\n2026-12-31" in page


def test_the_admin_names_the_field_it_refuses(admin_client):
    response = admin_client.post(ADMIN + "add/", admin_form(composition="union weekends"))

    assert response.status_code == 200
    assert "enter one step a line" in response.content.decode()
    assert not Calendar.objects.exists()


def test_the_admin_lists_what_uses_a_calendar_instead_of_deleting_it(admin_client):
    weekends = Calendar.objects.create(name="weekends", weekdays=["SAT", "SUN"])
    Calendar.objects.create(name="office", composition=[{"op": "include", "calendar": "weekends"}])

    page = admin_client.get(ADMIN + f"{weekends.pk}/delete/").content.decode()

    assert "weekends: used by calendar office" in page
    refused = admin_client.post(ADMIN + f"{weekends.pk}/delete/", {"post": "yes"})
    assert "weekends: used by calendar office" in refused.content.decode()
    assert Calendar.objects.filter(name="weekends").exists()
