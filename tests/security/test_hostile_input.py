"""Issue 26's hostile inputs: what one request may set off is bounded, and every bad value is
a 400 naming the field and the accepted form, never a 500 or a row that fails forever."""

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from scheduling.recurring.models import RecurringSchedule, ScheduledOccurrence
from tests.security.test_bad_input import new_schedule, refused

SCHEDULES = "/api/schedules/"
FLOOD = {
    "name": "flood",
    "cron": "* * * * * ?",
    "timezone": "UTC",
    "queue": "q",
    "misfire_policy": "fire_all",
    "catchup_window": "P366D",
    "starts_at": "2000-01-01T00:00:00Z",
}


def raw_json(api: Any, method: str, url: str, text: str) -> Any:
    """A body sent as written: JSON escapes such as a lone \\ud800 reach the parser intact."""
    return getattr(api, method)(url, text, content_type="application/json")


def message(response: Any, field: str) -> str:
    return " ".join(refused(response, field)[field])


# --- finding 1: one request starts a flood ----------------------------------------------------


def test_the_flood_request_is_a_400_naming_catchup_window_and_inserts_nothing(api, world):
    before = (RecurringSchedule.objects.count(), ScheduledOccurrence.objects.count())

    text = message(api.post(SCHEDULES, FLOOD, format="json"), "catchup_window")

    assert "would publish up to 31622460 occurrences" in text
    assert "at most 10000 (SCHEDULING_MAX_CATCHUP_FIRES)" in text
    assert "shorten catchup_window to at most PT2H45M" in text
    after = (RecurringSchedule.objects.count(), ScheduledOccurrence.objects.count())
    assert after == before


def test_a_window_the_cap_allows_is_accepted(api, world):
    body = {**FLOOD, "catchup_window": "PT2H45M", "starts_at": "2030-01-01T00:00:00Z"}
    assert api.post(SCHEDULES, body, format="json").status_code == 201


@pytest.mark.parametrize("method", ["put", "patch"])
def test_an_edit_that_would_flood_is_a_400_naming_catchup_window(api, world, method):
    change = {k: v for k, v in FLOOD.items() if k != "name"}
    body = {**change, "name": "daily"} if method == "put" else change
    response = getattr(api, method)(f"{SCHEDULES}daily/", body, format="json")
    assert "SCHEDULING_MAX_CATCHUP_FIRES" in message(response, "catchup_window")
    assert RecurringSchedule.objects.get(name="daily").cron == "0 3 * * *"


def test_the_orm_and_its_services_refuse_the_flood_too(db):
    fields = {
        **FLOOD,
        "catchup_window": timedelta(days=366),
        "starts_at": datetime(2000, 1, 1, tzinfo=UTC),
    }
    with pytest.raises(ValidationError) as refusal:
        RecurringSchedule.objects.create(**fields)
    assert "SCHEDULING_MAX_CATCHUP_FIRES" in refusal.value.message_dict["catchup_window"][0]
    assert not RecurringSchedule.objects.exists()


def test_the_admin_form_refuses_the_flood(admin_client, db):
    form = {
        **FLOOD,
        "template_timezone": "",
        "task": "",
        "payload_template": "{}",
        "enabled": "on",
        "catchup_window": "366 00:00:00",
        "starts_at_0": "2000-01-01",
        "starts_at_1": "00:00:00",
    }
    response = admin_client.post("/admin/scheduling_recurring/recurringschedule/add/", form)
    assert response.status_code == 200
    assert "SCHEDULING_MAX_CATCHUP_FIRES" in response.content.decode()
    assert not RecurringSchedule.objects.exists()


def test_a_cron_beyond_the_hourly_limit_is_a_400_naming_cron(api, world, settings):
    settings.SCHEDULING_MAX_FIRES_PER_HOUR = 60
    response = api.post(SCHEDULES, new_schedule(cron="*/30 * * * * ?"), format="json")
    text = message(response, "cron")
    assert "fires up to 120 times an hour; at most 60 (SCHEDULING_MAX_FIRES_PER_HOUR)" in text
    ok = api.post(SCHEDULES, new_schedule(cron="* * * * *"), format="json")
    assert ok.status_code == 201


def test_disabling_a_schedule_saved_before_the_cap_is_accepted(api, world):
    RecurringSchedule.objects.filter(name="daily").update(
        cron="* * * * * ?", misfire_policy="fire_all", catchup_window=timedelta(days=366)
    )
    response = api.patch(f"{SCHEDULES}daily/", {"enabled": False}, format="json")
    assert response.status_code == 200, response.json()


# --- finding 2: templates without a size limit ------------------------------------------------


def test_a_payload_template_over_the_payload_limit_is_a_400_naming_it(api, world, settings):
    settings.SCHEDULING_JOB_MAX_PAYLOAD_BYTES = 1000
    body = new_schedule(payload_template={"text": "x" * 1000})
    assert "at most 1000 bytes of JSON" in message(
        api.post(SCHEDULES, body, format="json"), "payload_template"
    )


def test_a_template_that_renders_over_the_limit_is_a_400_naming_it(api, world, settings):
    settings.SCHEDULING_JOB_MAX_PAYLOAD_BYTES = 1000
    template = {"at": "${processTime}" * 60}  # 849 bytes of JSON; each time 29 characters
    body = new_schedule(payload_template=template)
    text = message(api.post(SCHEDULES, body, format="json"), "payload_template")
    assert "renders to 1749 bytes of JSON at every fire; at most 1000" in text


# --- findings 3 and 4: values PostgreSQL, the broker or a consumer cannot take -----------------

SURROGATE_TEMPLATES = [
    ('{"a": "\\ud800"}', "payload_template.a: a string holds a lone surrogate"),
    ('{"\\ud800": 1}', 'payload_template["\\ud800"]: a key holds a lone surrogate'),
    ('{"a": {"b": ["x", "\\udfff"]}}', "payload_template.a.b[1]: a string holds a lone"),
]


@pytest.mark.parametrize(("template", "where"), SURROGATE_TEMPLATES)
@pytest.mark.parametrize("method", ["post", "patch"])
def test_a_lone_surrogate_in_a_payload_template_is_a_400_naming_where(
    api, world, template, where, method
):
    url = SCHEDULES if method == "post" else f"{SCHEDULES}daily/"
    body = json.dumps(new_schedule()).replace(
        '"queue": "q"', f'"queue": "q", "payload_template": {template}'
    )
    text = message(raw_json(api, method, url, body), "payload_template")
    assert where in text
    assert "valid UTF-8" in text


def test_a_lone_surrogate_in_a_form_encoded_template_is_a_400_naming_it(api, world):
    body = {"payload_template": '{"a": "\\ud800"}'}
    response = api.patch(f"{SCHEDULES}daily/", body, format="multipart")
    assert "lone surrogate" in message(response, "payload_template")


@pytest.mark.parametrize(
    ("value", "accepted"),
    [
        ("1" + "0" * 400, "signed 64 bits"),
        ("-9223372036854775809", "signed 64 bits"),
        ("1e400", "finite number"),
    ],
)
def test_a_number_beyond_64_bits_is_a_400_in_templates_and_jobs_alike(api, world, value, accepted):
    template = f'{{"name": "big", "cron": "0 3 * * *", "queue": "q", "payload_template": {{"n": {value}}}}}'
    assert accepted in message(raw_json(api, "post", SCHEDULES, template), "payload_template")
    job = f'{{"schedules": [], "callback": {{"type": "queue", "queue": "q"}}, "payload": {{"n": {value}}}}}'
    assert accepted in message(raw_json(api, "put", "/api/jobs/big/", job), "payload")
    assert not RecurringSchedule.objects.filter(name="big").exists()


def test_a_lone_surrogate_in_a_job_payload_or_label_is_a_400_naming_where(api, world):
    job = '{"schedules": [], "callback": {"type": "queue", "queue": "q"}, "payload": {"a": ["\\ud800"]}}'
    assert "payload.a[0]: a string holds a lone surrogate" in message(
        raw_json(api, "put", "/api/jobs/odd/", job), "payload"
    )
    patch = '{"labels": {"team": "\\udc00"}}'
    assert "lone surrogate" in message(
        raw_json(api, "patch", "/api/jobs/nightly-report/", patch), "labels"
    )


def test_a_lone_surrogate_in_a_bulk_filter_is_a_400_naming_it(api, world):
    body = '{"filter": {"customer_email": "\\ud800"}, "reason": "x"}'
    refused(raw_json(api, "post", "/api/scheduled-purchases/cancel/", body), "filter")


def test_an_unknown_task_is_a_400_naming_task_in_schedules_as_in_jobs(api, world):
    body = new_schedule(queue="", task="nonexistent.task")
    text = message(api.post(SCHEDULES, body, format="json"), "task")
    assert "is not a task of this project's Celery app" in text
    job = {"schedules": [], "callback": {"type": "task", "task": "nonexistent.task"}}
    refused(api.put("/api/jobs/unknown-task/", job, format="json"), "callback")


@pytest.mark.parametrize("window", ["P1D\n", "P1D ", "P\uff11D", "P1D\nP2D"])
def test_a_catchup_window_with_trailing_junk_is_a_400_naming_it(api, world, window):
    body = new_schedule(misfire_policy="fire_all", catchup_window=window)
    assert "ISO 8601 duration" in message(
        api.post(SCHEDULES, body, format="json"), "catchup_window"
    )


@pytest.mark.parametrize(
    "value", ["2031-01-01T00:00:00Z\n", "\uff12\uff10\uff13\uff11-01-01T00:00:00Z"]
)
def test_a_datetime_with_trailing_junk_or_other_digits_is_a_400_naming_it(api, world, value):
    refused(api.post(SCHEDULES, new_schedule(starts_at=value), format="json"), "starts_at")


# --- integer query parameters: ASCII digits only ----------------------------------------------


@pytest.mark.parametrize("count", ["%C2%B2", "%D9%A5", "%EF%BC%95", "-1", "1e2", "0"])
def test_a_preview_count_in_other_digits_is_a_400_naming_count(api, world, count):
    response = api.get(f"{SCHEDULES}daily/preview/?count={count}")
    assert "digits 0-9" in message(response, "count")


@pytest.mark.parametrize("name", ["limit", "offset"])
@pytest.mark.parametrize("value", ["\u0665", "\uff15", "\u00b2", "five"])
def test_limit_and_offset_in_other_digits_are_a_400_naming_them(api, world, name, value):
    for url in (SCHEDULES, "/api/jobs/", "/api/scheduled-purchases/"):
        assert "digits 0-9" in message(api.get(url, {name: value}), name)


def test_a_number_filter_in_other_digits_is_a_400_naming_it(api, world):
    refused(api.get("/api/scheduled-purchases/", {"artist": "\u0665"}), "artist")
    assert api.get("/api/scheduled-purchases/", {"artist": "5"}).status_code == 200
