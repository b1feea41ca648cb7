"""A django.tasks task stored as a keyed job cannot be redirected (issue 40, finding 1): its task
path, arguments and backend are fixed at enqueue over REST and in the admin; the worker runs
only a @task the code defines (never an import of stored text); and every change of a job's
fields is in its runs' history with the actor and the fields changed."""

import sys
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from scheduling.jobs.backends.known import UnknownTask
from scheduling.jobs.models import Job, ScheduledJobRun
from scheduling.rows.djangotasks import RUN_TASK
from scheduling.rows.history.timeline import timeline
from tests.conftest import client_for
from tests.scheduling.jobs.conftest import JOBS, put_job, user_with
from tests.scheduling.jobs.test_django_tasks import run_tasks
from tests.testapp import taskfuncs

pytestmark = pytest.mark.django_db

ADMIN_JOBS = "/admin/scheduling_jobs/job/"


@pytest.fixture
def apiu(db: None) -> APIClient:
    """A non-staff API user with every permission of the keyed jobs (the finding's user)."""
    user = user_with("apiu", "view_job", "add_job", "change_job", "delete_job")
    assert not user.is_staff
    return client_for(user)


def task_job(result: Any) -> Job:
    return Job.objects.get(key=f"task:{result.id}")


def edits(run: ScheduledJobRun) -> list[tuple[str, str, Any]]:
    """The run's entries that record a change of its job: (kind, actor, fields)."""
    return [
        (entry.kind, entry.actor, entry.detail["fields"])
        for entry in timeline(run)
        if "fields" in entry.detail
    ]


# --- REST: fixed at enqueue ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"labels": {"task": "os.system", "queue_name": "default", "backend": "default"}}, "task"),
        ({"labels": {"task": "tests.testapp.taskfuncs.fail"}},
         "backend, labels.queue_name, labels.task"),
        ({"labels": {"task": "tests.testapp.taskfuncs.add", "queue_name": "default",
                     "backend": "other"}}, "backend"),
        ({"payload": {"args": ["rm -rf /"], "kwargs": {}}}, "args"),
    ],
)  # fmt: skip
def test_a_patch_of_a_tasks_path_arguments_or_backend_is_refused(
    apiu: APIClient, body: dict[str, Any], path: str
) -> None:
    job = task_job(taskfuncs.add.enqueue(2, 3))
    before = (job.labels, job.payload, job.callback)

    response = apiu.patch(f"{JOBS}{job.key}/", body, format="json")

    assert response.status_code == 400, response.content
    (field, [message]), = response.json().items()  # fmt: skip
    assert field == next(iter(body))
    assert message.startswith(f"{field}.{path}: fixed at enqueue for a django.tasks task")
    assert "'tests.testapp.taskfuncs.add'" in message
    job.refresh_from_db()
    assert (job.labels, job.payload, job.callback) == before
    assert edits(job.runs.get()) == []


def test_a_put_over_a_tasks_job_is_refused_naming_the_callback(apiu: APIClient) -> None:
    job = task_job(taskfuncs.add.enqueue(2, 3))

    response = put_job(
        apiu,
        job.key,
        callback={"type": "queue", "queue": "reminders"},
        payload=job.payload,
        labels=job.labels,
    )

    assert response.status_code == 400, response.content
    assert response.json()["callback"][0].startswith("callback: fixed at enqueue")
    job.refresh_from_db()
    assert job.callback["task"] == RUN_TASK
    assert job.runs.get().status == "pending"


def test_no_api_callback_can_name_the_task_runner(apiu: APIClient) -> None:
    response = put_job(apiu, "mine", callback={"type": "task", "task": RUN_TASK})

    assert response.status_code == 400
    assert "internal" in response.json()["callback"][0]


def test_a_tasks_run_may_still_be_rescheduled_and_the_patch_of_equal_values_passes(
    apiu: APIClient,
) -> None:
    result = taskfuncs.add.enqueue(2, 3)
    job = task_job(result)
    label = {"label.task": "tests.testapp.taskfuncs.add"}

    same = apiu.patch(f"{JOBS}{job.key}/", {"labels": job.labels}, format="json")
    moved = apiu.post(
        f"{JOBS}reschedule/", {"filter": label, "due_at": "2030-01-01T09:00:00Z"}, format="json"
    )

    assert same.status_code == 200, same.content
    assert moved.json() == {"count": 1}
    run = job.runs.get()
    assert run.due_at.isoformat() == "2030-01-01T09:00:00+00:00"
    assert [(e.kind, e.actor) for e in timeline(run)][-1] == ("rescheduled", "api:apiu")


# --- REST: plain jobs as before, and the history of every change ------------------------------


def test_a_plain_jobs_patch_is_accepted_and_recorded_with_the_actor_and_fields(
    apiu: APIClient,
) -> None:
    put_job(apiu, "plain", payload={"a": 1}, labels={"team": "a"})

    response = apiu.patch(
        f"{JOBS}plain/", {"labels": {"team": "b"}, "payload": {"a": 1}}, format="json"
    )

    assert response.status_code == 200, response.content
    assert response.json()["labels"] == {"team": "b"}
    run = Job.objects.get(key="plain").runs.get()
    assert edits(run) == [("rescheduled", "api:apiu", ["labels"])]


def test_a_put_records_the_fields_and_instants_it_changed(apiu: APIClient) -> None:
    put_job(apiu, "plain", schedules=["2030-01-01T09:00:00Z"], payload={"a": 1})

    put_job(
        apiu,
        "plain",
        schedules=["2030-01-01T09:00:00Z", "2030-01-02T09:00:00Z"],
        payload={"a": 2},
    )
    put_job(
        apiu,
        "plain",
        schedules=["2030-01-01T09:00:00Z", "2030-01-02T09:00:00Z"],
        payload={"a": 2},
    )  # the same again: nothing changed, nothing recorded

    first, second = Job.objects.get(key="plain").runs.order_by("due_at")
    assert edits(first) == [("rescheduled", "api:apiu", ["payload", "schedules"])]
    assert edits(second) == [("rescheduled", "api:apiu", ["payload", "schedules"])]
    assert timeline(first)[0].detail == {"due_at": "2030-01-01T09:00:00+00:00"}


def test_a_change_of_a_job_with_nothing_pending_is_told_to_its_newest_run(
    apiu: APIClient,
) -> None:
    put_job(apiu, "done")
    apiu.delete(f"{JOBS}done/")

    apiu.patch(f"{JOBS}done/", {"payload": {"late": True}}, format="json")

    run = Job.objects.get(key="done").runs.get()
    assert edits(run) == [("rescheduled", "api:apiu", ["payload"])]


# --- the admin -----------------------------------------------------------------------------


@pytest.fixture
def admin_user(db: None) -> User:
    return User.objects.create_superuser("boss", password="pw")


def change_form(client: Any, job: Job, **fields: str) -> Any:
    management = {
        "runs-TOTAL_FORMS": "0",
        "runs-INITIAL_FORMS": "0",
        "runs-MIN_NUM_FORMS": "0",
        "runs-MAX_NUM_FORMS": "1000",
    }
    return client.post(f"{ADMIN_JOBS}{job.pk}/change/", {**management, **fields})


def test_the_admin_shows_a_tasks_payload_and_labels_read_only(
    client: Any, admin_user: User
) -> None:
    client.force_login(admin_user)
    job = task_job(taskfuncs.add.enqueue(2, 3))

    page = client.get(f"{ADMIN_JOBS}{job.pk}/change/")
    saved = change_form(
        client, job, payload='{"args": [40, 2], "kwargs": {}}', labels='{"task": "os.system"}'
    )

    form = page.context["adminform"].form
    assert set(form.fields).isdisjoint({"payload", "labels"})
    assert "tests.testapp.taskfuncs.add" in page.content.decode()  # shown, not editable
    assert saved.status_code == 302
    job.refresh_from_db()
    assert job.payload == {"args": [2, 3], "kwargs": {}}
    assert job.labels["task"] == "tests.testapp.taskfuncs.add"
    assert edits(job.runs.get()) == []


def test_an_admin_edit_of_a_plain_job_is_recorded_with_the_user_and_fields(
    client: Any, admin_user: User, apiu: APIClient
) -> None:
    client.force_login(admin_user)
    put_job(apiu, "plain", payload={"a": 1}, labels={"team": "a"})
    job = Job.objects.get(key="plain")

    saved = change_form(client, job, payload='{"a": 2}', labels='{"team": "a"}')

    assert saved.status_code == 302
    job.refresh_from_db()
    assert job.payload == {"a": 2}
    assert edits(job.runs.get()) == [("rescheduled", "admin:boss", ["payload"])]


# --- the worker: a stored name is looked up, never imported ------------------------------------


@pytest.mark.parametrize(
    "stored",
    [
        "this.s",  # importing `this` prints the Zen of Python
        "os.system",
        "tests.testapp.taskfuncs.handled_events",  # defined, but no @task
        "scheduling.jobs.backends.SchedulingBackend",
    ],
)
def test_a_task_name_altered_in_the_database_runs_nothing_and_records_why(stored: str) -> None:
    zen_imported = "this" in sys.modules
    result = taskfuncs.add.enqueue(2, 3)
    job = task_job(result)
    Job.objects.filter(pk=job.pk).update(labels={**job.labels, "task": stored})

    assert run_tasks() == 0

    run = job.runs.get()
    assert (run.status, run.attempts, run.handled_at) == ("pending", 1, None)
    assert run.last_error.startswith(f"UnknownTask: task {stored!r}: no @task of that path")
    failure = [entry for entry in timeline(run) if entry.kind == "handling_failed"]
    assert failure[0].detail["error_type"] == "UnknownTask"
    assert ("this" in sys.modules) == zen_imported
    with pytest.raises(UnknownTask):
        taskfuncs.add.get_result(result.id)


def test_a_backend_altered_in_the_database_runs_nothing() -> None:
    job = task_job(taskfuncs.fail.enqueue("boom"))
    Job.objects.filter(pk=job.pk).update(labels={**job.labels, "backend": "immediate"})

    assert run_tasks() == 0

    run = job.runs.get()
    assert run.last_error.startswith("UnknownTask: backend 'immediate': not a SchedulingBackend")


def test_a_task_defined_in_code_still_runs_by_its_stored_name() -> None:
    result = taskfuncs.add.enqueue(2, 3)

    assert run_tasks() == 1

    assert taskfuncs.add.get_result(result.id).return_value == 5
