import json
from datetime import UTC, datetime, timedelta

import pytest
from rest_framework.test import APIClient

from scheduling.jobs.models import Job, ScheduledJobRun
from tests.conftest import client_for
from tests.scheduling.jobs.conftest import JOBS, put_job, user_with

pytestmark = pytest.mark.django_db

Status = ScheduledJobRun.Status
T1 = "2030-01-01T09:00:00Z"
T2 = "2030-01-01T10:00:00Z"
T3 = "2030-01-01T11:00:00Z"


def job(key):
    return Job.objects.get(key=key)


def statuses(key):
    return [(run.due_at, run.status) for run in job(key).runs.order_by("due_at", "pk")]


def at(text):
    return datetime.fromisoformat(text)


def keys(response):
    assert response.status_code == 200, response.content
    return sorted(item["key"] for item in response.json()["results"])


# --- PUT, GET, PATCH, DELETE -------------------------------------------------------------


def test_put_creates_a_job_and_answers_it_with_its_runs(api):
    response = put_job(
        api,
        "training-42",
        schedules=["2030-01-01T10:00:00+01:00", T2],
        payload={"training": {"id": 42}},
        labels={"team": "falcons"},
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["key"] == "training-42"
    assert body["callback"] == {"type": "queue", "queue": "reminders"}
    assert body["payload"] == {"training": {"id": 42}}
    assert body["labels"] == {"team": "falcons"}
    assert body["schedules"] == [T1, T2]
    assert [(run["due_at"], run["status"], run["version"]) for run in body["runs"]] == [
        (T1, "pending", 1),
        (T2, "pending", 1),
    ]
    run = body["runs"][0]
    assert run["message_id"] == f"training-42:{run['id']}:v1"


def test_put_again_answers_200_and_replaces_the_pending_runs(api):
    put_job(api, "k", schedules=[T1, T2])

    response = put_job(api, "k", schedules=[T2, T3])

    assert response.status_code == 200, response.content
    assert response.json()["schedules"] == [T2, T3]
    assert statuses("k") == [
        (at(T1), Status.CANCELLED),
        (at(T2), Status.PENDING),
        (at(T3), Status.PENDING),
    ]


def test_put_is_idempotent(api):
    first = put_job(api, "k", schedules=[T1, T2]).json()

    second = put_job(api, "k", schedules=[T1, T2]).json()

    assert second["runs"] == first["runs"]


def test_delivered_runs_stay_as_history_through_a_replace(api):
    put_job(api, "k", schedules=[T1, T2])
    job("k").runs.filter(due_at=at(T1)).update(status=Status.DELIVERED)

    body = put_job(api, "k", schedules=[T1, T3]).json()

    assert body["schedules"] == [T3]
    assert [(run["due_at"], run["status"]) for run in body["runs"]] == [
        (T1, "delivered"),
        (T2, "cancelled"),
        (T3, "pending"),
    ]


def test_get_answers_the_job_or_404(api):
    put_job(api, "k", payload={"a": 1})

    assert api.get(f"{JOBS}k/").json()["payload"] == {"a": 1}
    assert api.get(f"{JOBS}nope/").status_code == 404


def test_keys_may_hold_dots_colons_and_at_signs(api):
    assert put_job(api, "svc.orders:42@eu").status_code == 201

    assert api.get(f"{JOBS}svc.orders:42@eu/").json()["key"] == "svc.orders:42@eu"


def test_patch_replaces_payload_and_labels_and_keeps_the_runs(api):
    put_job(api, "k", payload={"a": 1}, labels={"team": "x"})
    before = [(run.pk, run.version) for run in job("k").runs.all()]

    response = api.patch(f"{JOBS}k/", {"payload": {"a": 2}}, format="json")

    assert response.status_code == 200, response.content
    assert (response.json()["payload"], response.json()["labels"]) == ({"a": 2}, {"team": "x"})
    assert [(run.pk, run.version) for run in job("k").runs.all()] == before


def test_patch_of_an_unknown_key_is_404(api):
    assert api.patch(f"{JOBS}nope/", {"payload": {}}, format="json").status_code == 404


def test_patch_refuses_schedules_pointing_to_put(api):
    put_job(api, "k")

    response = api.patch(f"{JOBS}k/", {"schedules": [T1]}, format="json")

    assert response.status_code == 400
    assert "PUT the job" in response.json()["schedules"][0]


def test_delete_cancels_pending_runs_keeps_history_and_a_later_put_schedules_again(api):
    put_job(api, "k", schedules=[T1, T2])
    job("k").runs.filter(due_at=at(T1)).update(status=Status.DELIVERED)

    response = api.delete(f"{JOBS}k/")

    assert response.status_code == 200, response.content
    assert response.json()["schedules"] == []
    assert statuses("k") == [(at(T1), Status.DELIVERED), (at(T2), Status.CANCELLED)]
    assert put_job(api, "k", schedules=[T2]).status_code == 200
    assert statuses("k")[-1] == (at(T2), Status.PENDING)


def test_delete_of_an_unknown_key_is_404(api):
    assert api.delete(f"{JOBS}nope/").status_code == 404


# --- listing and filters -----------------------------------------------------------------


@pytest.fixture
def three_jobs(api):
    put_job(api, "a", labels={"team": "x"}, payload={"training": {"id": 42}})
    put_job(api, "b", labels={"team": "y"}, payload={"training": {"id": "42", "kind": "indoor"}})
    put_job(api, "c", labels={"team": "x", "tier": "gold"}, payload={"flag": True})
    job("b").runs.update(status=Status.DELIVERED)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", ["a", "b", "c"]),
        ("label.team=x", ["a", "c"]),
        ("label.team=x&label.team=y", ["a", "b", "c"]),
        ("label.team=x&label.tier=gold", ["c"]),
        ("payload.training.id=42", ["a", "b"]),
        ("payload.training.kind=indoor", ["b"]),
        ("payload.flag=true", ["c"]),
        ("status=pending", ["a", "c"]),
        ("status=delivered", ["b"]),
        ("status=delivered,pending", ["a", "b", "c"]),
        ("key_prefix=b", ["b"]),
        ("key=a&key=c", ["a", "c"]),
        ("label.team=x&status=pending&limit=1&offset=1", ["c"]),
    ],
)
def test_the_list_filters_on_labels_nested_payload_fields_status_and_keys(
    api, three_jobs, query, expected
):
    assert keys(api.get(f"{JOBS}?{query}")) == expected


@pytest.mark.parametrize(
    ("query", "field", "fragment"),
    [
        ("labels.team=x", "labels.team", "accepted: label.<name>"),
        ("label.bad%20name=x", "label.bad name", "Label names are"),
        ("payload.a..b=1", "payload.a..b", "payload.training.id"),
        ("status=done", "status", "pending, delivered"),
    ],
)
def test_a_bad_filter_is_refused_naming_it(api, query, field, fragment):
    response = api.get(f"{JOBS}?{query}")

    assert response.status_code == 400
    assert fragment in response.json()[field][0]


# --- bulk actions ------------------------------------------------------------------------


def test_bulk_cancel_over_a_label_filter(api, three_jobs):
    response = api.post(
        f"{JOBS}cancel/", {"filter": {"label.team": "x"}, "reason": "season over"}, format="json"
    )

    assert response.json() == {"count": 2}
    assert statuses("a") == [(at(T1), Status.CANCELLED)]
    assert job("a").runs.get().cancel_reason == "season over"
    assert statuses("b") == [(at(T1), Status.DELIVERED)]


def test_bulk_reschedule_shifts_the_runs_of_jobs_matching_a_payload_field(api, three_jobs):
    response = api.post(
        f"{JOBS}reschedule/",
        {"filter": {"payload.training.id": 42}, "shift": "PT2H"},
        format="json",
    )

    assert response.json() == {"count": 1}  # b's run matched too, but was delivered
    run = job("a").runs.get()
    assert (run.due_at, run.version) == (at(T1) + timedelta(hours=2), 2)


def test_bulk_reschedule_to_a_time(api, three_jobs):
    response = api.post(
        f"{JOBS}reschedule/", {"filter": {"key": ["a", "c"]}, "due_at": T3}, format="json"
    )

    assert response.json() == {"count": 2}
    assert job("c").runs.get().due_at == at(T3)


@pytest.mark.parametrize(
    ("body", "field", "fragment"),
    [
        ({"filter": {}, "shift": "PT1H"}, "filter", '"all": true'),
        ({"filter": {"colour": "red"}, "shift": "PT1H"}, "filter", "Unknown filter"),
        ({"filter": {"status": "nope"}, "shift": "PT1H"}, "filter", "pending, delivered"),
        ({"filter": {"key": "a"}, "shift": "2 hours"}, "shift", "ISO 8601 duration"),
        ({"filter": {"key": "a"}}, "due_at", "exactly one"),
    ],
)
def test_a_bad_bulk_body_is_refused_naming_the_field(api, three_jobs, body, field, fragment):
    response = api.post(f"{JOBS}reschedule/", body, format="json")

    assert response.status_code == 400
    assert fragment in str(response.json()[field])
    assert job("a").runs.get().version == 1


def test_bulk_over_all_jobs_needs_all_true(api, three_jobs):
    response = api.post(f"{JOBS}cancel/", {"filter": {}, "all": True}, format="json")

    assert response.json() == {"count": 2}


# --- validation --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field", "fragment"),
    [
        ({"schedules": ["2030-01-01T09:00:00"]}, "schedules", "no offset"),
        ({"schedules": ["next week"]}, "schedules", "2026-12-24T14:00:00Z"),
        ({"schedules": "2030-01-01T09:00:00Z"}, "schedules", "Enter a list"),
        ({"schedules": [T1, "2030-01-01T10:00:00+01:00"]}, "schedules", "Each instant once"),
        ({"callback": {"type": "email", "to": "x"}}, "callback", '{"type": "queue"'),
        ({"callback": {"type": "queue", "queue": "a/b"}}, "callback", "letters, digits"),
        ({"callback": {"type": "queue", "queue": "purchases"}}, "callback", "Celery"),
        ({"callback": {"type": "queue"}}, "callback", "queue: enter"),
        ({"callback": {"type": "task", "task": "x y"}}, "callback", "dotted Celery task"),
        ({"callback": "reminders"}, "callback", '{"type": "queue"'),
        ({"payload": "text"}, "payload", "JSON object"),
        ({"labels": {"team": 3}}, "labels", "team: enter a string"),
        ({"labels": {"bad name": "x"}}, "labels", "Label names are"),
        ({"payloads": {}}, "payloads", "Unknown field; accepted: schedules"),
    ],
)
def test_a_bad_put_is_refused_naming_the_field_and_the_accepted_form(api, body, field, fragment):
    response = put_job(api, "k", **body)

    assert response.status_code == 400, response.content
    assert fragment in str(response.json()[field])
    assert not Job.objects.exists()


def test_schedules_and_callback_are_required(api):
    response = api.put(f"{JOBS}k/", {}, format="json")

    assert response.status_code == 400
    assert set(response.json()) == {"schedules", "callback"}


def test_a_malformed_instant_is_named_by_its_position(api):
    response = put_job(api, "k", schedules=[T1, "2030-13-01T00:00:00Z"])

    assert response.status_code == 400
    assert "2026-12-24T14:00:00Z" in response.json()["schedules"]["1"][0]


@pytest.mark.parametrize("key", ["has%20space", "cancel%3F", "x" * 201])
def test_a_key_with_odd_characters_is_refused(api, key):
    response = put_job(api, key)

    assert response.status_code == 400
    assert "letters, digits" in response.json()["key"][0]


def test_the_number_of_instants_and_payload_bytes_are_limited_by_settings(api, settings):
    settings.SCHEDULING_JOB_MAX_INSTANTS = 2
    settings.SCHEDULING_JOB_MAX_PAYLOAD_BYTES = 20

    too_many = put_job(api, "k", schedules=[T1, T2, T3])
    too_big = put_job(api, "k", payload={"text": "x" * 20})

    assert "At most 2 instants per job; got 3" in too_many.json()["schedules"][0]
    assert "payload: at most 20 bytes of JSON; got 31" in too_big.json()["payload"][0]


def test_patch_validates_like_put(api):
    put_job(api, "k")

    response = api.patch(f"{JOBS}k/", {"labels": {"team": ["x"]}}, format="json")

    assert response.status_code == 400
    assert "labels" in response.json()


# --- authentication, permissions, schema --------------------------------------------------


def test_anonymous_requests_are_refused():
    assert APIClient().get(JOBS).status_code == 403
    assert put_job(APIClient(), "k").status_code == 403


def test_reading_needs_the_view_permission_and_put_needs_add_and_change(api):
    put_job(api, "k")
    reader = client_for(user_with("reader", "view_job"))
    changer = client_for(user_with("changer", "view_job", "change_job"))

    assert reader.get(f"{JOBS}k/").status_code == 200
    assert put_job(reader, "k").status_code == 403
    assert put_job(changer, "k").status_code == 403
    assert changer.patch(f"{JOBS}k/", {"payload": {}}, format="json").status_code == 200
    assert changer.delete(f"{JOBS}k/").status_code == 403
    assert reader.post(f"{JOBS}cancel/", {"filter": {"key": "k"}}, format="json").status_code == 403
    assert changer.post(f"{JOBS}cancel/", {"filter": {"key": "k"}}, format="json").json() == {
        "count": 1
    }


def test_the_jobs_api_is_in_the_openapi_schema(api):
    response = api.get("/api/schema/", {"format": "json"})

    paths = response.json()["paths"]
    assert set(paths["/api/jobs/{key}/"]) >= {"get", "put", "patch", "delete"}
    assert "post" in paths["/api/jobs/cancel/"]
    assert "post" in paths["/api/jobs/reschedule/"]
    list_parameters = {p["name"] for p in paths["/api/jobs/"]["get"]["parameters"]}
    assert {"status", "key_prefix", "limit", "offset"} <= list_parameters


def test_times_in_answers_are_utc_with_z(api):
    body = put_job(api, "k", schedules=["2030-06-01T12:00:00+02:00"]).json()

    assert body["schedules"] == ["2030-06-01T10:00:00Z"]
    assert body["created_at"].endswith("Z")
    assert datetime.fromisoformat(body["runs"][0]["due_at"]) == datetime(2030, 6, 1, 10, tzinfo=UTC)


# --- refused inputs: empty filters, text PostgreSQL refuses, deep bodies ---------------------


@pytest.mark.parametrize(
    ("selection", "name"),
    [
        ({"key": []}, "key"),
        ({"key_prefix": ""}, "key_prefix"),
        ({"key_prefix": []}, "key_prefix"),
        ({"key_prefix": " "}, "key_prefix"),
        ({"label.team": []}, "label.team"),
        ({"payload.x": []}, "payload.x"),
        ({"label.team": ["x", ""]}, "label.team"),
    ],
)
def test_a_bulk_filter_with_an_empty_value_is_refused_naming_it(api, three_jobs, selection, name):
    for action, extra in (("cancel", {}), ("reschedule", {"shift": "PT1H"})):
        response = api.post(f"{JOBS}{action}/", {"filter": selection, **extra}, format="json")

        assert response.status_code == 400, response.content
        assert "empty filter" in response.json()["filter"][name][0]
    assert statuses("a") == [(at(T1), Status.PENDING)]


@pytest.mark.parametrize("query", ["key_prefix=", "key=", "label.team=", "payload.x=%20"])
def test_a_list_filter_with_an_empty_value_is_refused_naming_it(api, three_jobs, query):
    response = api.get(f"{JOBS}?{query}")

    assert response.status_code == 400
    assert "empty filter" in response.json()[query.split("=")[0]][0]


@pytest.mark.parametrize("name", ["label.a", "payload.a", "key", "key_prefix"])
def test_a_nul_in_a_filter_value_is_refused_naming_it(api, three_jobs, name):
    listed = api.get(f"{JOBS}?{name}=%00")
    cancelled = api.post(f"{JOBS}cancel/", {"filter": {name: "a\x00"}}, format="json")

    assert listed.status_code == 400
    assert name in listed.json()
    assert cancelled.status_code == 400
    assert name in cancelled.json()["filter"]


@pytest.mark.parametrize("name", ["label.a", "payload.a", "key", "key_prefix"])
def test_a_lone_surrogate_in_a_bulk_filter_is_refused_naming_it(api, three_jobs, name):
    body = json.dumps({"filter": {name: "\ud800"}})  # ASCII JSON: "\ud800" escaped
    response = api.post(f"{JOBS}cancel/", body, content_type="application/json")

    assert response.status_code == 400, response.content
    assert "UTF-8" in response.json()["filter"][name][0]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('{"payload": {"a": "\\u0000"}}', "payload"),
        ('{"payload": {"\\u0000": 1}}', "payload"),
        ('{"payload": {"a": "\\ud800"}}', "payload"),
        ('{"payload": {"n": 18446744073709551616}}', "payload"),
        ('{"labels": {"a": "\\u0000"}}', "labels"),
        ('{"labels": {"a": "\\ud800"}}', "labels"),
    ],
)
def test_payloads_and_labels_postgresql_or_the_broker_refuse_are_400s(api, body, field):
    schedules = '{"schedules": [], "callback": {"type": "queue", "queue": "q"}, '
    put = api.put(f"{JOBS}k/", schedules + body[1:], content_type="application/json")
    put_job(api, "k")
    patch = api.patch(f"{JOBS}k/", body, content_type="application/json")

    assert (put.status_code, patch.status_code) == (400, 400), (put.content, patch.content)
    assert field in put.json()
    assert field in patch.json()


def test_a_payload_nested_deeper_than_the_limit_is_refused_naming_it(api):
    payload: dict = {}
    for _ in range(40):
        payload = {"a": payload}

    response = put_job(api, "k", payload=payload)

    assert response.status_code == 400
    assert "at most 32 levels" in response.json()["payload"][0]


@pytest.mark.parametrize("key", ["%00", "a%00b", "%ED%A0%80", "x" * 201])
def test_a_key_no_job_can_have_is_404_on_get_patch_and_delete(api, key):
    assert api.get(f"{JOBS}{key}/").status_code == 404
    assert api.patch(f"{JOBS}{key}/", {"payload": {}}, format="json").status_code == 404
    assert api.delete(f"{JOBS}{key}/").status_code == 404


@pytest.mark.parametrize(
    ("method", "path"),
    [("put", "k/"), ("patch", "k/"), ("post", "cancel/"), ("post", "reschedule/")],
)
def test_a_deeply_nested_body_is_a_400(api, method, path):
    put_job(api, "k")
    body = "[" * 5000 + "]" * 5000

    response = getattr(api, method)(f"{JOBS}{path}", body, content_type="application/json")

    assert response.status_code == 400
    assert "nested" in response.json()["detail"]


def test_the_jobs_api_accepts_json_bodies_only(api):
    schema = api.get("/api/schema/", {"format": "json"}).json()["paths"]

    assert set(schema["/api/jobs/{key}/"]["put"]["requestBody"]["content"]) == {"application/json"}
    assert set(schema["/api/jobs/cancel/"]["post"]["requestBody"]["content"]) == {
        "application/json"
    }
    form = api.put(f"{JOBS}k/", {"schedules": T1}, format="multipart")
    assert form.status_code == 415


@pytest.mark.parametrize("action", ["cancel", "reschedule"])
def test_a_put_to_a_bulk_action_says_the_key_is_reserved(api, action):
    response = put_job(api, action)

    assert response.status_code == 400
    assert "reserved" in response.json()["key"][0]
    assert not Job.objects.exists()


# --- bounded answers ----------------------------------------------------------------------


def test_a_job_answers_its_pending_runs_and_its_50_latest_others(api):
    put_job(api, "k", schedules=[T2])
    start = at(T1) - timedelta(days=100)
    ScheduledJobRun.objects.bulk_create(
        ScheduledJobRun(job=job("k"), due_at=start + timedelta(hours=n), status=Status.CANCELLED)
        for n in range(60)
    )

    body = api.get(f"{JOBS}k/").json()
    runs = body["runs"]
    assert len(runs) == 51
    assert runs[-1]["due_at"] == T2
    assert runs[0]["due_at"] == (start + timedelta(hours=10)).isoformat().replace("+00:00", "Z")
    assert body["schedules"] == [T2]


def test_the_list_shows_each_jobs_next_ten_instants_and_its_runs_counted(api):
    instants = [(at(T2) + timedelta(minutes=n)).isoformat() for n in range(25)]
    put_job(api, "k", schedules=instants)
    ScheduledJobRun.objects.bulk_create(
        ScheduledJobRun(job=job("k"), due_at=at(T1) - timedelta(hours=n), status=Status.CANCELLED)
        for n in range(1, 4)
    )

    (listed,) = api.get(JOBS).json()["results"]

    assert "runs" not in listed
    assert listed["schedules"] == [
        (at(T2) + timedelta(minutes=n)).isoformat().replace("+00:00", "Z") for n in range(10)
    ]
    assert listed["run_counts"] == {
        "pending": 25,
        "delivered": 0,
        "cancelled": 3,
        "expired": 0,
        "failed": 0,
    }


def test_the_list_limit_is_capped(api, three_jobs, monkeypatch):
    from scheduling.jobs.api import JobViewSet

    monkeypatch.setattr(JobViewSet.pagination_class, "max_limit", 2)

    assert len(api.get(f"{JOBS}?limit=1000").json()["results"]) == 2


def test_the_list_holds_at_most_100_jobs_a_page(api):
    Job.objects.bulk_create(
        Job(key=f"many-{n:03d}", callback={"type": "queue", "queue": "q"}) for n in range(101)
    )

    answer = api.get(f"{JOBS}?limit=1000").json()

    assert (answer["count"], len(answer["results"])) == (101, 100)


def test_the_status_filter_has_an_index():
    from django.db import connection

    with connection.cursor() as cursor:
        indexes = connection.introspection.get_constraints(cursor, "scheduled_job_run")

    assert indexes["scheduled_job_run_job_status"]["columns"] == ["job_id", "status"]


def test_an_expired_instant_put_again_is_pending_again(api):
    put_job(api, "k", schedules=[T1])
    job("k").runs.update(status=Status.EXPIRED)

    body = put_job(api, "k", schedules=[T1]).json()

    assert body["schedules"] == [T1]
    assert statuses("k") == [(at(T1), Status.EXPIRED), (at(T1), Status.PENDING)]


def test_a_bulk_shift_that_would_carry_runs_out_of_range_is_a_400_naming_shift(api):
    put_job(api, "early", schedules=[T1])
    job("early").runs.update(due_at=datetime(1970, 1, 2, tzinfo=UTC))  # past any PUT's bound

    response = api.post(
        f"{JOBS}reschedule/", {"filter": {"key": ["early"]}, "shift": "-P2D"}, format="json"
    )

    assert response.status_code == 400
    assert "out of range" in response.json()["shift"][0]
    assert job("early").runs.get().due_at == datetime(1970, 1, 2, tzinfo=UTC)
