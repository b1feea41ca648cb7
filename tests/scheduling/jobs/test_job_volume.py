"""A keyed job's volume is bounded (issue #40): instants long past are refused, one API user's
pending runs and bytes are capped, a full queue target keeps its rows pending, handlers are
refused as callbacks, and rows created already due are late only from their creation."""

from datetime import timedelta

import pytest
from django.utils import timezone

from scheduling.delivery import metrics
from scheduling.delivery.sweep.run import sweep
from scheduling.jobs.models import Job, ScheduledJobRun
from scheduling.jobs.services import job_put
from scheduling.rows.history.models import EventHistory
from scheduling.rows.states import Status
from scheduling.time.times import iso_utc
from tests.scheduling.jobs.conftest import JOB_PERMISSIONS, JOBS, put_job, user_with

QUEUE = {"type": "queue", "queue": "reminders"}


def instants(count, *, start):
    return [iso_utc(start + timedelta(seconds=n)) for n in range(count)]


# --- instants long past ---------------------------------------------------------------------


def test_an_instant_older_than_the_bound_is_a_400_naming_schedules_and_the_setting(api):
    response = put_job(api, "old", schedules=["2020-01-01T00:00:00Z", "2030-01-01T00:00:00Z"])

    assert response.status_code == 400
    message = response.json()["schedules"][0]
    assert "2020-01-01T00:00:00Z is more than 86400 s in the past" in message
    assert "SCHEDULING_JOB_MAX_PAST" in message
    assert not Job.objects.exists()


def test_an_instant_within_the_bound_is_scheduled_and_published_at_once(api):
    an_hour_ago = iso_utc(timezone.now() - timedelta(hours=1))

    assert put_job(api, "recent", schedules=[an_hour_ago]).status_code == 201
    assert sweep(ScheduledJobRun).delivered == 1


def test_an_old_instant_already_delivered_may_be_listed_again(api, settings):
    an_hour_ago = iso_utc(timezone.now() - timedelta(hours=1))
    put_job(api, "retried", schedules=[an_hour_ago])
    sweep(ScheduledJobRun)
    settings.SCHEDULING_JOB_MAX_PAST = 60  # the instant is now past the bound

    response = put_job(api, "retried", schedules=[an_hour_ago], payload={"v": 2})

    assert response.status_code == 200
    assert [run.status for run in ScheduledJobRun.objects.all()] == [Status.DELIVERED]


# --- per-user caps --------------------------------------------------------------------------


def test_a_users_pending_runs_are_capped_across_their_jobs(api, settings):
    settings.SCHEDULING_JOB_MAX_PENDING_RUNS_PER_USER = 10
    start = timezone.now() + timedelta(days=1)
    assert put_job(api, "a", schedules=instants(6, start=start)).status_code == 201

    refused = put_job(api, "b", schedules=instants(5, start=start))

    assert refused.status_code == 400
    assert "11 pending runs; at most 10" in refused.json()["schedules"][0]
    assert not Job.objects.filter(key="b").exists()  # the whole write rolled back
    assert put_job(api, "b", schedules=instants(4, start=start)).status_code == 201


def test_a_users_pending_bytes_are_capped_and_a_patch_of_a_bigger_payload_too(api, settings):
    settings.SCHEDULING_JOB_MAX_PENDING_BYTES_PER_USER = 10_000
    start = timezone.now() + timedelta(days=1)
    payload = {"blob": "x" * 900}  # about 1 KB a run

    assert put_job(api, "a", schedules=instants(9, start=start), payload=payload).status_code == 201
    refused = put_job(api, "b", schedules=instants(2, start=start), payload=payload)
    patched = api.patch(f"{JOBS}a/", {"payload": {"blob": "x" * 2000}}, format="json")

    assert refused.status_code == 400
    assert "SCHEDULING_JOB_MAX_PENDING_BYTES_PER_USER" in refused.json()["schedules"][0]
    assert patched.status_code == 400
    assert "at most 10,000" in patched.json()["payload"][0]
    assert Job.objects.get(key="a").payload == payload


def test_a_users_plain_json_queues_are_capped_so_the_broker_stays_bounded(api, settings):
    settings.SCHEDULING_JOB_MAX_QUEUES_PER_USER = 2
    start = timezone.now() + timedelta(days=1)
    for key, queue in (("a", "q1"), ("b", "q2"), ("c", "q2")):
        callback = {"type": "queue", "queue": queue}
        assert (
            put_job(api, key, schedules=instants(1, start=start), callback=callback).status_code
            == 201
        )

    refused = put_job(
        api, "d", schedules=instants(1, start=start), callback={"type": "queue", "queue": "q3"}
    )

    assert refused.status_code == 400
    assert "3 plain-JSON queues; at most 2" in refused.json()["callback"][0]
    assert not Job.objects.filter(key="d").exists()
    assert api.delete(f"{JOBS}a/").status_code in (200, 204)  # its run cancelled: q1 is free
    assert (
        put_job(
            api, "d", schedules=instants(1, start=start), callback={"type": "queue", "queue": "q3"}
        ).status_code
        == 201
    )


def test_each_user_has_a_cap_of_their_own_and_code_has_none(api, settings):
    settings.SCHEDULING_JOB_MAX_PENDING_RUNS_PER_USER = 3
    start = timezone.now() + timedelta(days=1)
    other = user_with("other", *JOB_PERMISSIONS)
    job_put(
        key="by-code", schedules=[start + timedelta(seconds=n) for n in range(5)], callback=QUEUE
    )

    assert put_job(api, "mine", schedules=instants(3, start=start)).status_code == 201
    other_api = type(api)()
    other_api.force_authenticate(other)
    assert put_job(other_api, "theirs", schedules=instants(3, start=start)).status_code == 201
    assert Job.objects.get(key="by-code").owner is None


# --- a full queue target --------------------------------------------------------------------


def test_a_full_queue_keeps_the_rest_pending_and_says_so(api, broker, settings, caplog):
    settings.SCHEDULING_QUEUE_TARGET_MAX_BACKLOG = 3
    broker.lpush("reminders", "an old message nobody read")
    put_job(api, "k", schedules=instants(5, start=timezone.now() - timedelta(minutes=1)))

    result = sweep(ScheduledJobRun)

    assert (result.delivered, result.held) == (2, 3)
    assert broker.llen("reminders") == 3
    held = ScheduledJobRun.objects.filter(status=Status.PENDING)
    assert held.count() == 3
    assert all(run.due_at > timezone.now() and run.business_due_at for run in held)
    assert "3 rows held back; reminders: 3 messages waiting or more" in caplog.text
    entry = EventHistory.objects.filter(row_id=held.first().pk, detail__how="queue backlog")
    assert entry.exists()


def test_held_rows_go_out_once_the_queue_has_room_and_other_queues_are_not_held(
    api, broker, settings
):
    settings.SCHEDULING_QUEUE_TARGET_MAX_BACKLOG = 2
    due = instants(3, start=timezone.now() - timedelta(minutes=1))
    put_job(api, "full", schedules=due)
    put_job(api, "other", schedules=due[:1], callback={"type": "queue", "queue": "elsewhere"})
    sweep(ScheduledJobRun)
    assert broker.llen("elsewhere") == 1
    broker.delete("reminders")  # the consumer caught up
    ScheduledJobRun.objects.filter(status=Status.PENDING).update(due_at=timezone.now())

    assert sweep(ScheduledJobRun).delivered == 1
    assert broker.llen("reminders") == 1
    assert not ScheduledJobRun.objects.filter(status=Status.PENDING).exists()


def test_a_put_again_keeps_a_held_run_as_it_is(api, broker, settings):
    settings.SCHEDULING_QUEUE_TARGET_MAX_BACKLOG = 1
    broker.lpush("reminders", "waiting")
    due = instants(1, start=timezone.now() - timedelta(minutes=1))
    put_job(api, "k", schedules=due)
    sweep(ScheduledJobRun)
    held = ScheduledJobRun.objects.get()

    put_job(api, "k", schedules=due)

    assert list(ScheduledJobRun.objects.values_list("pk", "status")) == [(held.pk, "pending")]


# --- handlers are no callbacks --------------------------------------------------------------


@pytest.mark.parametrize(
    "task",
    [
        "purchases.send_fulfillment_email",
        "purchases.send_fulfillment_emails",
        "trainings.send_training_reminder",
        "trainings.send_training_reminders",
    ],
)
def test_a_handler_of_a_scheduled_model_is_refused_as_a_callback(api, task):
    response = put_job(api, "k", callback={"type": "task", "task": task})

    assert response.status_code == 400
    assert f"task: {task!r} handles" in response.json()["callback"][0]


def test_a_task_of_the_project_that_handles_no_model_is_accepted(api):
    callback = {"type": "task", "task": "testapp.note_job_run"}

    assert put_job(api, "k", callback=callback).status_code == 201


# --- lateness from creation -----------------------------------------------------------------


def test_a_row_created_already_due_is_late_from_its_creation_not_its_instant(api):
    put_job(api, "k", schedules=[iso_utc(timezone.now() - timedelta(hours=20))])

    late = metrics.snapshot(ScheduledJobRun).oldest_due_seconds

    assert 0 <= late < 60


def test_a_row_created_ahead_is_late_from_its_instant(api):
    put_job(api, "k", schedules=[iso_utc(timezone.now() + timedelta(hours=1))])
    ScheduledJobRun.objects.update(
        due_at=timezone.now() - timedelta(minutes=10),
        created_at=timezone.now() - timedelta(hours=1),
    )

    assert 600 <= metrics.oldest_due_seconds(ScheduledJobRun) < 660
