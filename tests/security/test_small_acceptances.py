"""The small acceptances of the second hostile round, refused: time zones that are no place,
a duration ending in T, a fullwidth digit as a row id; and under DEBUG, the API's bodies over
Django's upload limits answered JSON, not the HTML debug page."""

from urllib.parse import urlencode

import pytest

from scheduling.time.parsing import parse_shift
from scheduling.time.zones import UnknownTimeZone, time_zone
from tests.security.test_bad_input import QUEUE, refused

SCHEDULE = {"cron": "0 9 * * *", "queue": "reports"}


@pytest.mark.parametrize("name", ["localtime", "Factory", "posixrules", "posix/Europe/Paris"])
def test_a_zone_name_that_is_no_place_is_refused(name):
    with pytest.raises(UnknownTimeZone):
        time_zone(name)


@pytest.mark.parametrize("name", ["localtime", "Factory"])
def test_the_api_refuses_them_naming_the_field(api, world, name):
    body = {**SCHEDULE, "name": "tz", "timezone": name}
    refused(api.post("/api/schedules/", body, format="json"), "timezone")
    refused(
        api.post("/api/calendars/", {"name": "tz", "timezone": name}, format="json"), "timezone"
    )


@pytest.mark.parametrize("text", ["P1DT", "PT", "-P1DT", "p1dt"])
def test_a_duration_ending_in_t_is_no_duration(text):
    assert parse_shift(text) is None


def test_the_api_refuses_it_naming_the_field(api, world):
    body = {"filter": {"status": "pending"}, "shift": "P1DT"}
    refused(api.post("/api/scheduled-purchases/reschedule/", body, format="json"), "shift")


@pytest.mark.parametrize("resource", ["purchases", "scheduled-purchases", "players"])
def test_a_fullwidth_digit_is_no_row_id(api, world, resource):
    row = world.ids[resource]
    fullwidth = "".join(chr(ord(digit) - ord("0") + 0xFF10) for digit in str(row))

    assert api.get(f"/api/{resource}/{row}/").status_code == 200
    assert api.get(f"/api/{resource}/{fullwidth}/").status_code == 404


def test_nor_in_the_generic_history_route(api, world):
    row = world.ids["scheduled-purchases"]
    url = "/api/events/purchases/scheduledpurchase/{}/history/"

    assert api.get(url.format(row)).status_code == 200
    assert api.get(url.format(chr(0xFF10 + int(row) % 10))).status_code == 404


def test_nor_in_the_admin(admin_client, world):
    row = world.ids["purchases"]
    fullwidth = "".join(chr(ord(digit) - ord("0") + 0xFF10) for digit in row)
    url = "/admin/purchases/purchase/{}/change/"

    assert admin_client.get(url.format(row)).status_code == 200
    assert admin_client.get(url.format(fullwidth)).status_code == 404


@pytest.mark.parametrize("debug", [False, True])
def test_a_body_over_the_size_limit_answers_json(api, world, settings, debug):
    settings.DEBUG = debug
    body = {"schedules": [], "callback": QUEUE, "payload": {"text": "x" * 3_000_000}}

    response = api.put("/api/jobs/huge/", body, format="json")

    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert "DATA_UPLOAD_MAX_MEMORY_SIZE" in response.json()["detail"]


@pytest.mark.parametrize("debug", [False, True])
def test_too_many_fields_answer_json(api, world, settings, debug):
    settings.DEBUG = debug
    fields = urlencode({f"f{i}": "x" for i in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 1)})

    response = api.patch(
        "/api/schedules/daily/", fields, content_type="application/x-www-form-urlencoded"
    )

    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert "more than 1000 fields (DATA_UPLOAD_MAX_NUMBER_FIELDS)" in response.json()["detail"]
