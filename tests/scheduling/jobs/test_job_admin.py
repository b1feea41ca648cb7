from datetime import UTC, datetime

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.messages import get_messages

from scheduling.jobs.models import Job, ScheduledJobRun
from scheduling.jobs.services import job_put

pytestmark = pytest.mark.django_db

Status = ScheduledJobRun.Status
RUNS = "/admin/scheduling_jobs/scheduledjobrun/"
JOBS = "/admin/scheduling_jobs/job/"
T1 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)


def put(key, callback=None, **fields):
    callback = callback or {"type": "queue", "queue": "reminders"}
    fields = {"payload": {}, "labels": {}, **fields}
    return job_put(key=key, schedules=[T1], callback=callback, **fields)[0]


def words(page):
    return {word for word in ("queue-job", "task-job", "Pending") if word in page}


def messages_of(response):
    return [str(message) for message in get_messages(response.wsgi_request)]


def test_the_runs_changelist_shows_the_job_and_filters_by_callback_type(admin_client):
    put("queue-job")
    put("task-job", callback={"type": "task", "task": "billing.charge"})

    page = admin_client.get(RUNS).content.decode()
    filtered = admin_client.get(RUNS + "?callback=task").content.decode()
    searched = admin_client.get(RUNS + "?q=queue-job").content.decode()

    assert {"queue-job", "task-job", "Pending"} <= words(page)
    assert ("task-job" in filtered, "queue-job" in filtered) == (True, False)
    assert ("queue-job" in searched, "task-job" in searched) == (True, False)


def test_the_framework_actions_work_on_runs(admin_client):
    run = put("k").runs.get()

    admin_client.post(RUNS, {"action": "cancel_rows", ACTION_CHECKBOX_NAME: [run.pk], "index": 0})

    run.refresh_from_db()
    assert run.status == Status.CANCELLED


def test_the_job_page_shows_its_runs_inline(admin_client):
    job = put("k")

    page = admin_client.get(f"{JOBS}{job.pk}/change/").content.decode()

    assert "Scheduled job runs" in page
    assert "Jan. 1, 2030" in page


def test_payload_and_labels_are_edited_through_the_service_and_checked(admin_client):
    job = put("k")
    url = f"{JOBS}{job.pk}/change/"

    refused = admin_client.post(url, {**inline_management(), "payload": "[1]", "labels": "{}"})
    saved = admin_client.post(
        url, {**inline_management(), "payload": '{"a": 1}', "labels": '{"team": "x"}'}
    )

    assert "payload: enter a JSON object" in refused.content.decode()
    assert saved.status_code == 302
    job.refresh_from_db()
    assert (job.payload, job.labels) == ({"a": 1}, {"team": "x"})


def inline_management():
    prefix = "runs"
    return {
        f"{prefix}-TOTAL_FORMS": "1",
        f"{prefix}-INITIAL_FORMS": "1",
        f"{prefix}-MIN_NUM_FORMS": "0",
        f"{prefix}-MAX_NUM_FORMS": "1000",
    }


def test_the_cancel_jobs_action_cancels_their_pending_runs(admin_client):
    chosen, other = put("a"), put("b")

    response = admin_client.post(
        JOBS, {"action": "cancel_jobs", ACTION_CHECKBOX_NAME: [chosen.pk], "index": 0}, follow=True
    )

    assert messages_of(response) == ["Cancelled 1 scheduled job run."]
    assert chosen.runs.get().status == Status.CANCELLED
    assert other.runs.get().status == Status.PENDING
    assert Job.objects.count() == 2


def test_jobs_cannot_be_added_in_the_admin(admin_client):
    assert admin_client.get(f"{JOBS}add/").status_code == 403


def test_the_jobs_list_names_each_callback_and_filters_runs_by_rabbitmq(admin_client):
    put("queue-job")
    callback = {"type": "rabbitmq", "data": {"queue": "training.invitations.notifications"}}
    put("mycoach-job", callback=callback, payload={"trainingId": 42})

    jobs = admin_client.get(JOBS).content.decode()
    filtered = admin_client.get(RUNS + "?callback=rabbitmq").content.decode()

    assert "payload on training.invitations.notifications" in jobs
    assert "queue reminders" in jobs
    assert ("mycoach-job" in filtered, "queue-job" in filtered) == (True, False)
