"""A write answers with the row only to a user who may view it (204 otherwise), and schedule
and job writes have a budget per user (429 past it); reads spend none of it."""

from typing import Any

import pytest

from scheduling.jobs.models import Job
from scheduling.recurring.models import RecurringSchedule
from tests.conftest import client_for, users_of

QUEUE = {"type": "queue", "queue": "reports"}
JOB = "/api/jobs/nightly-report/"


def jobs_user(*codenames: str) -> Any:
    return client_for(users_of("scheduling_jobs")("writer", *codenames))


def test_a_patch_without_view_permission_answers_204_and_shows_nothing(world):
    api = jobs_user("add_job", "change_job")

    response = api.patch(JOB, {}, format="json")

    assert response.status_code == 204
    assert response.content == b""
    assert api.get(JOB).status_code == 403


def test_the_patch_is_made_though_its_answer_is_empty(world):
    api = jobs_user("add_job", "change_job")

    response = api.patch(JOB, {"labels": {"team": "b"}}, format="json")

    assert response.status_code == 204
    assert Job.objects.get(key="nightly-report").labels == {"team": "b"}


@pytest.mark.parametrize(("key", "location"), [("new-job", True), ("nightly-report", False)])
def test_put_and_post_without_view_permission_answer_204(world, key, location):
    api = jobs_user("add_job", "change_job")
    body = {"schedules": ["2030-01-01T00:00:00Z"], "callback": QUEUE}

    put = api.put(f"/api/jobs/{key}/", body, format="json")
    post = api.post("/api/jobs/", {**body, "key": key}, format="json")

    assert (put.status_code, put.content, post.status_code, post.content) == (204, b"", 204, b"")
    assert post.has_header("Location")
    assert Job.objects.filter(key=key).exists()


def test_a_delete_without_view_permission_answers_204(world):
    api = jobs_user("delete_job")
    assert api.delete(JOB).status_code == 204


def test_with_view_permission_the_answer_is_the_job(world):
    api = jobs_user("add_job", "change_job", "view_job")

    response = api.patch(JOB, {}, format="json")

    assert response.status_code == 200
    assert response.json()["payload"] == {"report": "sales"}


def test_a_schedule_edit_without_view_permission_answers_204(world):
    user = users_of("scheduling_recurring")("editor", "change_recurringschedule")
    api = client_for(user)

    response = api.patch("/api/schedules/daily/", {"payload_template": {"v": 2}}, format="json")

    assert (response.status_code, response.content) == (204, b"")
    assert RecurringSchedule.objects.get(name="daily").payload_template == {"v": 2}


# --- budgets per user ---------------------------------------------------------------------------


def test_job_writes_answer_429_past_their_rate_and_reads_stay_free(world, superuser, settings):
    settings.SCHEDULING_JOB_WRITE_THROTTLE_RATE = "2/min"
    api = client_for(superuser)

    answers = [api.patch(JOB, {}, format="json").status_code for _ in range(3)]

    assert answers == [200, 200, 429]
    assert api.get(JOB).status_code == 200
    assert (
        api.put("/api/jobs/other/", {"schedules": [], "callback": QUEUE}, format="json").status_code
        == 429
    )


def test_schedule_writes_have_their_own_budget_per_user(
    world, superuser, settings, django_user_model
):
    settings.SCHEDULING_SCHEDULE_WRITE_THROTTLE_RATE = "2/min"
    api = client_for(superuser)
    other = client_for(django_user_model.objects.create_superuser("other", "", "pw"))

    answers = [
        api.patch("/api/schedules/daily/", {"enabled": flag}, format="json").status_code
        for flag in (False, True, False)
    ]

    assert answers == [200, 200, 429]
    assert api.post("/api/schedules/daily/trigger/").status_code == 429
    assert api.get("/api/schedules/daily/").status_code == 200
    assert api.patch(JOB, {}, format="json").status_code == 200  # the jobs' budget is apart
    assert other.patch("/api/schedules/daily/", {}, format="json").status_code == 200
