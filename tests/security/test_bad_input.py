"""Bad input across the API: every refusal is a 400 whose body names the field.

The first tests pin the server errors the schemathesis run (test_fuzz.py) and its follow-up
probes found; the rest walk each kind of bad value over every endpoint that takes one.
"""

import json
from typing import Any

import pytest

from scheduling.ops.api.pagination import MAX_LIMIT
from scheduling.ops.api.parsers import MAX_JSON_DEPTH
from scheduling.ops.api.serializers import MAX_FILTER_TEXT, MAX_FILTER_VALUES
from tests.security.world import World

QUEUE = {"type": "queue", "queue": "reports"}


def refused(response: Any, field: str) -> dict[str, Any]:
    assert response.status_code == 400, (response.status_code, response.content[:500])
    body = response.json()
    assert field in body, body
    return body


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# --- server errors found by the fuzzer and its probes ----------------------------------------


def test_a_limit_beyond_bigint_is_capped_and_an_offset_beyond_it_is_a_400(api, world):
    response = api.get("/api/schedules/", {"limit": str(10**25)})
    assert response.status_code == 200
    assert len(response.json()["results"]) <= MAX_LIMIT
    refused(api.get("/api/jobs/", {"offset": str(10**25)}), "offset")


def test_an_invitation_patch_without_a_status_is_a_400_naming_it(api, world):
    response = api.patch(f"/api/invitations/{world.ids['invitations']}/", {}, format="json")
    refused(response, "status")


def test_a_form_encoded_null_payload_template_is_a_400_naming_it(api, world):
    response = api.patch("/api/schedules/daily/", {"payload_template": "null"}, format="multipart")
    refused(response, "payload_template")


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 100_000])
def test_a_json_body_nested_too_deeply_is_a_400(api, world, depth):
    body = '{"filter": {"status": "pending"}, "reason": ' + nested(depth) + "}"
    response = api.post("/api/scheduled-purchases/cancel/", body, content_type="application/json")
    assert response.status_code == 400
    assert "nested" in response.json()["detail"]


def test_form_encoded_json_nested_too_deeply_is_a_400_naming_the_field(api, world):
    body = {"payload_template": nested(5000)}
    refused(api.patch("/api/schedules/daily/", body, format="multipart"), "payload_template")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"payload": {"a": "x\x00"}}, "payload"),
        ({"payload": {"a\x00": 1}}, "payload"),
        ({"labels": {"team": "a\x00"}}, "labels"),
    ],
)
def test_a_nul_in_a_job_is_a_400_naming_the_field(api, world, change, field):
    body = {"schedules": [], "callback": QUEUE, **change}
    refused(api.put("/api/jobs/nul-job/", body, format="json"), field)


@pytest.mark.parametrize("name", ["key", "key_prefix", "label.team", "payload.report"])
def test_a_nul_in_a_job_filter_is_a_400_naming_it(api, world, name):
    refused(api.get("/api/jobs/", {name: "a\x00"}), name)
    refused(api.post("/api/jobs/cancel/", {"filter": {name: "a\x00"}}, format="json"), "filter")


def test_a_nul_in_a_job_key_is_not_found(api, world):
    assert api.get("/api/jobs/a%00b/").status_code == 404


def test_a_nul_in_a_payload_template_is_a_400_naming_it(api, world):
    response = api.patch(
        "/api/schedules/daily/", {"payload_template": {"a": "\x00"}}, format="json"
    )
    refused(response, "payload_template")


# --- naive and malformed datetimes, everywhere one is accepted -------------------------------

NAIVE = "2030-01-01T10:00:00"
BAD_DATETIMES = [NAIVE, "2030-13-01T10:00:00Z", "2030-02-30T10:00:00Z", "next tuesday", ""]


def datetime_writes(world: World) -> list[tuple[str, str, Any, str]]:
    """(method, url, body with the value in it, field the 400 must name)."""
    scheduled = {"filter": {"status": "pending"}}
    return [
        ("post", "/api/scheduled-purchases/reschedule/", {**scheduled, "due_at": "{}"}, "due_at"),
        (
            "post",
            "/api/scheduled-training-notifications/reschedule/",
            {**scheduled, "due_at": "{}"},
            "due_at",
        ),
        ("post", "/api/jobs/reschedule/", {"filter": {"key": "a"}, "due_at": "{}"}, "due_at"),
        ("put", "/api/jobs/dates/", {"schedules": ["{}"], "callback": QUEUE}, "schedules"),
        (
            "post",
            "/api/trainings/",
            {"team": world.ids["teams"], "start_at": "{}", "end_at": "2030-01-01T12:00:00Z"},
            "start_at",
        ),
        ("patch", f"/api/trainings/{world.ids['trainings']}/", {"end_at": "{}"}, "end_at"),
        (
            "patch",
            f"/api/releases/{world.ids['releases']}/",
            {"release_date": "{}"},
            "release_date",
        ),
        ("patch", "/api/schedules/daily/", {"starts_at": "{}"}, "starts_at"),
        ("patch", "/api/schedules/daily/", {"ends_at": "{}"}, "ends_at"),
    ]


def with_value(body: Any, value: str) -> Any:
    return json.loads(json.dumps(body).replace('"{}"', json.dumps(value)))


@pytest.mark.parametrize("value", BAD_DATETIMES)
def test_a_naive_or_malformed_datetime_is_a_400_naming_the_field(api, world, value):
    for method, url, body, field in datetime_writes(world):
        response = getattr(api, method)(url, with_value(body, value), format="json")
        refused(response, field)


@pytest.mark.parametrize("value", [NAIVE, "2030-13-01T10:00:00Z", "soon"])
@pytest.mark.parametrize(
    ("url", "field"),
    [
        ("/api/scheduled-purchases/", "due_after"),
        ("/api/scheduled-training-notifications/", "due_before"),
        ("/api/trainings/", "start_after"),
    ],
)
def test_a_naive_or_malformed_datetime_filter_is_a_400_naming_it(api, world, url, field, value):
    refused(api.get(url, {field: value}), field)


# --- time zones and DST gaps -------------------------------------------------------------------


def new_schedule(**fields: Any) -> dict[str, Any]:
    return {"name": "probe", "cron": "0 3 * * *", "timezone": "UTC", "queue": "q", **fields}


@pytest.mark.parametrize(
    "zone", ["Mars/Olympus", "../../etc/passwd", "UTC+1", "A" * 5000, "utc\x00"]
)
def test_an_unknown_time_zone_is_a_400_naming_it(api, world, zone):
    refused(api.post("/api/schedules/", new_schedule(timezone=zone), format="json"), "timezone")


def test_a_cron_wall_time_in_the_spring_gap_fires_at_the_end_of_the_gap(api, world):
    """Documented in scheduling/recurring/cron/dst.py: no refusal, and no lost or early fire."""
    body = new_schedule(
        cron="30 2 30 3 *", timezone="Europe/Paris", starts_at="2031-01-01T00:00:00Z"
    )
    assert api.post("/api/schedules/", body, format="json").status_code == 201
    fire_times = api.get("/api/schedules/probe/preview/?count=1").json()["fire_times"]
    assert fire_times == [{"at": "2031-03-30T01:00:00Z", "local": "2031-03-30T03:00:00+02:00"}]


def test_an_at_local_time_in_the_spring_gap_fires_at_the_end_of_the_gap(api, world):
    body = new_schedule(cron="@at 2031-03-30T02:30:00", timezone="Europe/Paris")
    response = api.post("/api/schedules/", body, format="json")
    assert response.status_code == 201
    assert response.json()["next_fire_at"] == "2031-03-30T01:00:00Z"


def test_a_naive_local_starts_at_is_a_400_naming_it(api, world):
    body = new_schedule(timezone="Europe/Paris", starts_at="2031-03-30T02:30:00")
    refused(api.post("/api/schedules/", body, format="json"), "starts_at")


# --- oversized payloads and bulk filters -------------------------------------------------------


def test_an_oversized_job_payload_is_a_400_naming_it(api, world, settings):
    settings.SCHEDULING_JOB_MAX_PAYLOAD_BYTES = 1000
    body = {"schedules": [], "callback": QUEUE, "payload": {"text": "x" * 2000}}
    refused(api.put("/api/jobs/big/", body, format="json"), "payload")


def test_too_many_job_instants_or_labels_are_a_400_naming_them(api, world):
    instants = [f"2030-01-01T00:{i // 60:02d}:{i % 60:02d}Z" for i in range(1001)]
    body = {"schedules": instants, "callback": QUEUE}
    refused(api.put("/api/jobs/many/", body, format="json"), "schedules")
    labels = {f"l{i}": "v" for i in range(100)}
    body = {"schedules": [], "callback": QUEUE, "labels": labels}
    refused(api.put("/api/jobs/many/", body, format="json"), "labels")


def test_a_body_over_the_upload_limit_is_refused_without_a_server_error(api, world):
    body = {"schedules": [], "callback": QUEUE, "payload": {"text": "x" * 3_000_000}}
    response = api.put("/api/jobs/huge/", body, format="json")
    assert response.status_code == 400
    assert response.json()["detail"].startswith("body: the request body is larger than")


BULK_URLS = [
    "/api/scheduled-purchases/cancel/",
    "/api/scheduled-purchases/reschedule/",
    "/api/scheduled-training-notifications/cancel/",
    "/api/jobs/cancel/",
    "/api/jobs/reschedule/",
]


@pytest.mark.parametrize("url", BULK_URLS)
@pytest.mark.parametrize(
    "selection",
    [
        {"status": ["pending"] * 10_000},
        {"key": [f"k{i}" for i in range(MAX_FILTER_VALUES + 1)]},
        {"customer_email": "x" * 1_000_000},
        {"status": "p" * (MAX_FILTER_TEXT + 1)},
        {f"label.l{i}": "v" for i in range(100)},
    ],
    ids=["10k-values", "too-many-keys", "huge-string", "long-string", "too-many-filters"],
)
def test_an_oversized_bulk_filter_is_a_400_naming_it(api, world, url, selection):
    body = {"filter": selection, "shift": "PT1H"}
    refused(api.post(url, body, format="json"), "filter")


# --- negative and zero durations where they are not allowed ------------------------------------


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"max_lateness": "-PT15M"}, "max_lateness"),
        ({"max_lateness": "PT0S"}, "max_lateness"),
        ({"cron": "@every -5m"}, "cron"),
        ({"cron": "@every 0s"}, "cron"),
        ({"starts_at": "2031-01-02T00:00:00Z", "ends_at": "2031-01-01T00:00:00Z"}, "ends_at"),
    ],
)
def test_a_negative_duration_on_a_schedule_is_a_400_naming_it(api, world, change, field):
    refused(api.post("/api/schedules/", new_schedule(**change), format="json"), field)


def test_a_training_that_ends_before_it_starts_is_a_400_naming_end_at(api, world):
    body = {
        "team": world.ids["teams"],
        "start_at": "2030-01-01T10:00:00Z",
        "end_at": "2030-01-01T09:00:00Z",
    }
    refused(api.post("/api/trainings/", body, format="json"), "end_at")


@pytest.mark.parametrize("url", ["/api/scheduled-purchases/reschedule/", "/api/jobs/reschedule/"])
@pytest.mark.parametrize("shift", ["PT0S", "-P36600D", "7 days", "-"])
def test_a_zero_oversized_or_non_iso_shift_is_a_400_naming_it(api, world, url, shift):
    body = {"filter": {"status": "pending"}, "shift": shift}
    refused(api.post(url, body, format="json"), "shift")
