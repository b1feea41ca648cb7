"""REST: /api/schedules/ by name, preview, trigger, occurrences, and bad input refused."""

from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from scheduling.recurring.models import RecurringSchedule, ScheduledOccurrence
from tests.conftest import CURRENT_TIME, client_for, users_of
from tests.scheduling.recurring.conftest import json_bodies, make_schedule, pending, sweep_at

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("frozen_clock")]

URL = "/api/schedules/"
VALID = {"name": "nightly-export", "cron": "0 3 * * *", "timezone": "Europe/Paris", "queue": "q"}


user_with = users_of("scheduling_recurring")


@pytest.fixture
def api_user() -> User:
    actions = ("view", "add", "change", "delete")
    codenames = (*(f"{action}_recurringschedule" for action in actions), "view_scheduledoccurrence")
    return user_with("operator", *codenames)


@pytest.fixture
def viewer_api() -> APIClient:
    return client_for(user_with("viewer", "view_recurringschedule"))


def test_anonymous_requests_are_refused():
    assert APIClient().get(URL).status_code == 403


def test_create_materialises_the_next_fire_and_answers_with_it(api):
    response = api.post(URL, {**VALID, "payload_template": {"day": "${todaysDate}"}}, format="json")

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["next_fire_at"] == "2026-11-23T02:00:00Z"  # 03:00 in Paris
    assert body["version"] == 1
    assert body["misfire_policy"] == "fire_once"
    schedule = RecurringSchedule.objects.get(name="nightly-export")
    assert [row.due_at for row in pending(schedule)] == [datetime(2026, 11, 23, 2, tzinfo=UTC)]


def test_schedules_are_read_updated_and_deleted_by_name(api):
    api.post(URL, VALID, format="json")

    assert api.get(URL + "nightly-export/").json()["cron"] == "0 3 * * *"
    response = api.patch(URL + "nightly-export/", {"cron": "0 4 * * *"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["version"] == 2
    assert response.json()["next_fire_at"] == "2026-11-23T03:00:00Z"

    assert api.delete(URL + "nightly-export/").status_code == 204
    assert ScheduledOccurrence.objects.count() == 0
    assert api.get(URL + "nightly-export/").status_code == 404


def test_editing_only_the_payload_bumps_the_version_and_keeps_the_next_fire_time(api):
    created = api.post(URL, VALID, format="json").json()

    response = api.patch(URL + "nightly-export/", {"payload_template": {"a": 1}}, format="json")

    assert response.json()["version"] == 2
    assert response.json()["next_fire_at"] == created["next_fire_at"]
    [occurrence] = ScheduledOccurrence.objects.filter(status="pending")
    assert occurrence.schedule_version == 2


def test_saving_unchanged_values_keeps_the_version(api):
    api.post(URL, VALID, format="json")

    response = api.put(URL + "nightly-export/", VALID, format="json")

    assert response.json()["version"] == 1


def test_disabling_over_rest_cancels_the_next_fire(api):
    api.post(URL, VALID, format="json")

    response = api.patch(URL + "nightly-export/", {"enabled": False}, format="json")

    assert response.json()["next_fire_at"] is None
    assert ScheduledOccurrence.objects.filter(status="pending").count() == 0


def test_max_lateness_is_iso_8601_both_ways(api):
    response = api.post(URL, {**VALID, "max_lateness": "PT15M"}, format="json")

    assert response.json()["max_lateness"] == "PT15M"


def test_catchup_window_is_iso_8601_both_ways_with_a_one_day_default(api):
    default = api.post(URL, VALID, format="json").json()
    chosen = api.post(
        URL, {**VALID, "name": "six-hours", "catchup_window": "PT6H"}, format="json"
    ).json()

    assert (default["catchup_window"], chosen["catchup_window"]) == ("P1D", "PT6H")


def test_template_timezone_defaults_to_the_schedule_timezone_and_is_set_apart(api):
    default = api.post(URL, VALID, format="json").json()
    bridge = {
        **VALID,
        "name": "bridge",
        "cron": "0 0 * * * ?",
        "timezone": "UTC",
        "template_timezone": "America/Los_Angeles",
    }
    apart = api.post(URL, bridge, format="json").json()
    cleared = api.patch(URL + "bridge/", {"template_timezone": None}, format="json").json()

    assert default["template_timezone"] == ""
    assert RecurringSchedule.objects.get(name="nightly-export").variables_timezone == (
        "Europe/Paris"
    )
    assert (apart["timezone"], apart["template_timezone"]) == ("UTC", "America/Los_Angeles")
    assert cleared["template_timezone"] == ""


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"cron": "0 3 * *"}, "cron", "cron has 4 fields; expected 5"),
        ({"cron": "0 25 * * *"}, "cron", 'hour field "25" is not valid; expected 0-23'),
        ({"cron": "@every 1 hour"}, "cron", "@every duration '1 hour' is not valid"),
        ({"timezone": "Europe/Pariss"}, "timezone", "is not a known IANA time zone name"),
        ({"task": "reports.build"}, "task", "Set exactly one target"),
        ({"queue": ""}, "queue", "Set exactly one target"),
        ({"payload_template": {"a": "${nope}"}}, "payload_template", "unknown variable ${nope}"),
        ({"starts_at": "2026-12-01T00:00:00"}, "starts_at", "has no offset"),
        ({"ends_at": "2026-01-01T00:00:00Z"}, "ends_at", "must be after starts_at"),
        ({"max_lateness": "15 minutes"}, "max_lateness", "Enter an ISO 8601 duration"),
        ({"max_lateness": "-PT5M"}, "max_lateness", "positive duration"),
        ({"catchup_window": "one day"}, "catchup_window", "Enter an ISO 8601 duration"),
        ({"catchup_window": "-PT5M"}, "catchup_window", "positive duration of at most 366"),
        ({"catchup_window": "P400D"}, "catchup_window", "at most 366 days, e.g. P1D"),
        ({"template_timezone": "Seattle"}, "template_timezone", "not a known IANA time zone"),
        ({"misfire_policy": "later"}, "misfire_policy", "is not a valid choice"),
        ({"name": "Nightly Export!"}, "name", "slug"),
        ({"cron": "@at 2020-01-01T00:00:00Z"}, "cron", "never fires"),
        ({"cron": "@at 2150-01-01T00:00:00Z"}, "cron", "years run 1970-2099"),
        ({"starts_at": "9999-12-31T23:59:59-12:00"}, "starts_at", "out of range"),
    ],
)
def test_bad_input_is_refused_naming_the_field(api, change, field, message):
    response = api.post(URL, {**VALID, **change}, format="json")

    assert response.status_code == 400, response.content
    assert message in " ".join(response.json()[field])
    assert RecurringSchedule.objects.count() == 0


def test_a_duplicate_name_is_refused(api):
    api.post(URL, VALID, format="json")

    response = api.post(URL, VALID, format="json")

    assert response.status_code == 400
    assert "name" in response.json()


def test_a_bad_update_changes_nothing(api):
    api.post(URL, VALID, format="json")

    response = api.patch(URL + "nightly-export/", {"cron": "0 3 * * * * * *"}, format="json")

    assert response.status_code == 400
    assert RecurringSchedule.objects.get().cron == "0 3 * * *"


def test_preview_lists_the_next_fire_times(api):
    api.post(URL, {**VALID, "cron": "0 9 * * MON-FRI"}, format="json")

    response = api.get(URL + "nightly-export/preview/?count=3")

    assert response.status_code == 200
    assert response.json() == {
        "schedule": "nightly-export",
        "timezone": "Europe/Paris",
        "fire_times": [
            {"at": "2026-11-23T08:00:00Z", "local": "2026-11-23T09:00:00+01:00"},
            {"at": "2026-11-24T08:00:00Z", "local": "2026-11-24T09:00:00+01:00"},
            {"at": "2026-11-25T08:00:00Z", "local": "2026-11-25T09:00:00+01:00"},
        ],
    }
    assert len(api.get(URL + "nightly-export/preview/").json()["fire_times"]) == 10


def test_preview_stops_at_the_fires_max_fires_leaves(api):
    api.post(URL, {**VALID, "cron": "0 9 * * MON-FRI", "max_fires": 3}, format="json")
    RecurringSchedule.objects.update(fire_count=1)

    response = api.get(URL + "nightly-export/preview/?count=5")

    assert [fire["at"] for fire in response.json()["fire_times"]] == [
        "2026-11-23T08:00:00Z",
        "2026-11-24T08:00:00Z",
    ]


@pytest.mark.parametrize("count", ["0", "abc", "1001", "-1"])
def test_preview_refuses_a_bad_count(api, count):
    api.post(URL, VALID, format="json")

    response = api.get(URL + f"nightly-export/preview/?count={count}")

    assert response.status_code == 400
    assert "count" in response.json()


def test_trigger_fires_once_now_and_leaves_the_timeline_alone(api, broker):
    api.post(URL, VALID, format="json")

    response = api.post(URL + "nightly-export/trigger/")

    assert response.status_code == 202
    sweep_at(CURRENT_TIME)
    [body] = json_bodies(broker, "q")
    assert body["id"] == response.json()["id"]
    assert body["manual"] is True
    assert api.get(URL + "nightly-export/").json()["next_fire_at"] == "2026-11-23T02:00:00Z"


def test_triggering_needs_the_change_permission(viewer_api):
    make_schedule(name="report")

    assert viewer_api.get(URL + "report/").status_code == 200
    assert viewer_api.post(URL + "report/trigger/").status_code == 403
    assert viewer_api.patch(URL + "report/", {"enabled": False}, format="json").status_code == 403


def test_occurrences_are_listed_newest_first(api):
    schedule = make_schedule(name="report")
    sweep_at(CURRENT_TIME.replace(minute=1))

    rows = api.get(URL + "report/occurrences/").json()["results"]

    assert [row["status"] for row in rows] == ["pending", "delivered"]
    assert rows[1]["fire_id"] == f"report-{int(CURRENT_TIME.timestamp()) + 60}"
    assert rows[0]["schedule_version"] == schedule.version


def test_the_list_filters_on_enabled(api):
    make_schedule(name="on")
    make_schedule(name="off", enabled=False)

    names = [row["name"] for row in api.get(URL + "?enabled=false").json()["results"]]

    assert names == ["off"]


def test_the_openapi_schema_describes_the_schedules(api):
    response = api.get("/api/schema/?format=json")

    assert response.status_code == 200
    paths = response.json()["paths"]
    assert "/api/schedules/{name}/preview/" in paths
    assert "/api/schedules/{name}/trigger/" in paths
