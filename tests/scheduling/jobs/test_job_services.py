from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.core.exceptions import ImproperlyConfigured

from scheduling.jobs.models import Job, ScheduledJobRun
from scheduling.jobs.services import (
    JobError,
    JobFilter,
    job_cancel_many,
    job_delete,
    job_patch,
    job_put,
    job_reschedule_many,
)
from tests.conftest import check_django

pytestmark = pytest.mark.django_db

Status = ScheduledJobRun.Status
T1 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)
T2 = T1 + timedelta(hours=1)
T3 = T1 + timedelta(hours=2)
QUEUE = {"type": "queue", "queue": "reminders"}


def put(key="job-1", schedules=(T1, T2), **fields):
    fields = {"callback": QUEUE, "payload": {}, "labels": {}, **fields}
    return job_put(key=key, schedules=list(schedules), **fields)


def runs(job, status=None):
    rows = job.runs.order_by("due_at", "pk")
    return list(rows.filter(status=status) if status else rows)


def pending_times(job):
    return [run.due_at for run in runs(job, Status.PENDING)]


def deliver(job, at):
    job.runs.filter(due_at=at, status=Status.PENDING).update(status=Status.DELIVERED)


def test_a_new_key_creates_the_job_with_one_pending_run_per_instant():
    job, created = put(payload={"a": 1}, labels={"team": "x"})

    assert created
    assert (job.payload, job.labels, job.callback) == ({"a": 1}, {"team": "x"}, QUEUE)
    assert pending_times(job) == [T1, T2]


def test_putting_the_same_body_again_changes_nothing():
    job, _ = put()
    before = [(run.pk, run.version) for run in runs(job)]

    job, created = put()

    assert not created
    assert [(run.pk, run.version) for run in runs(job)] == before


def test_instants_are_compared_as_instants_whatever_their_offset():
    job, _ = put(schedules=[T1])
    plus_one = timezone(timedelta(hours=1))

    put(schedules=[T1.astimezone(plus_one)])

    assert len(runs(job)) == 1


def test_a_replace_keeps_matching_pending_runs_cancels_the_rest_and_adds_new_ones():
    job, _ = put(schedules=[T1, T2])
    kept = job.runs.get(due_at=T2)

    put(schedules=[T2, T3])

    assert pending_times(job) == [T2, T3]
    assert job.runs.get(due_at=T2, status=Status.PENDING).pk == kept.pk
    (cancelled,) = runs(job, Status.CANCELLED)
    assert (cancelled.due_at, cancelled.cancel_reason) == (T1, "replaced by a PUT of the job")


def test_delivered_runs_stay_as_history_and_are_not_scheduled_again():
    job, _ = put(schedules=[T1, T2])
    deliver(job, T1)

    put(schedules=[T1, T2, T3])

    assert [(run.due_at, run.status) for run in runs(job)] == [
        (T1, Status.DELIVERED),
        (T2, Status.PENDING),
        (T3, Status.PENDING),
    ]


def test_a_put_without_a_delivered_instant_leaves_its_history_alone():
    job, _ = put(schedules=[T1, T2])
    deliver(job, T1)

    put(schedules=[])

    assert [(run.due_at, run.status) for run in runs(job)] == [
        (T1, Status.DELIVERED),
        (T2, Status.CANCELLED),
    ]


def test_a_cancelled_instant_is_scheduled_again_by_a_later_put():
    job, _ = put(schedules=[T1])
    job_delete(key=job.key)

    put(schedules=[T1])

    assert [run.status for run in runs(job)] == [Status.CANCELLED, Status.PENDING]


def test_a_replace_also_replaces_callback_payload_and_labels():
    put(payload={"a": 1}, labels={"team": "x"})

    job, _ = put(callback={"type": "queue", "queue": "other"}, payload={"b": 2})

    job.refresh_from_db()
    assert (job.callback["queue"], job.payload, job.labels) == ("other", {"b": 2}, {})


def test_two_pending_runs_moved_to_one_instant_become_one_on_the_next_put():
    job, _ = put(schedules=[T1, T2])
    job.runs.reschedule(T3)

    put(schedules=[T3])

    assert pending_times(job) == [T3]
    assert len(runs(job, Status.CANCELLED)) == 1


def test_patch_replaces_the_fields_given_and_leaves_the_runs_alone():
    job, _ = put(payload={"a": 1}, labels={"team": "x"})
    before = [(run.pk, run.version, run.status) for run in runs(job)]

    job_patch(key=job.key, payload={"a": 2})

    job.refresh_from_db()
    assert (job.payload, job.labels) == ({"a": 2}, {"team": "x"})
    assert [(run.pk, run.version, run.status) for run in runs(job)] == before


def test_delete_cancels_pending_runs_and_keeps_the_job_and_its_history():
    job, _ = put(schedules=[T1, T2])
    deliver(job, T1)

    assert job_delete(key=job.key) == 1

    assert Job.objects.filter(key=job.key).exists()
    assert [run.status for run in runs(job)] == [Status.DELIVERED, Status.CANCELLED]


def test_patch_and_delete_of_an_unknown_key_raise_does_not_exist():
    with pytest.raises(Job.DoesNotExist):
        job_patch(key="nope", payload={})
    with pytest.raises(Job.DoesNotExist):
        job_delete(key="nope")


def test_bulk_cancel_touches_only_pending_runs_of_the_selected_jobs():
    chosen, _ = put("a", labels={"team": "x"})
    other, _ = put("b", labels={"team": "y"})
    deliver(chosen, T1)

    count = job_cancel_many(selection=JobFilter(labels={"team": ["x"]}), reason="team left")

    assert count == 1
    assert [run.status for run in runs(chosen)] == [Status.DELIVERED, Status.CANCELLED]
    assert len(runs(other, Status.PENDING)) == 2


def test_bulk_reschedule_shifts_pending_runs_of_jobs_matching_a_payload_field():
    chosen, _ = put("a", payload={"training": {"id": 42}})
    put("b", payload={"training": {"id": 43}})

    selection = JobFilter(payload={("training", "id"): ["42"]})
    count = job_reschedule_many(selection=selection, shift=timedelta(hours=2))

    assert count == 2
    moved = [(run.due_at, run.version) for run in runs(chosen)]
    assert moved == [(T1 + timedelta(hours=2), 2), (T2 + timedelta(hours=2), 2)]
    assert pending_times(Job.objects.get(key="b")) == [T1, T2]


def test_bulk_reschedule_to_a_time():
    job, _ = put(schedules=[T1])

    job_reschedule_many(selection=JobFilter(keys=[job.key]), due_at=T3)

    assert pending_times(job) == [T3]


@pytest.mark.parametrize(
    ("selection", "expected"),
    [
        (JobFilter(labels={"team": ["x"]}), ["a", "c"]),
        (JobFilter(labels={"team": ["x", "y"]}), ["a", "b", "c"]),
        (JobFilter(labels={"team": ["x"], "tier": ["gold"]}), ["c"]),
        (JobFilter(payload={("training", "id"): ["42"]}), ["a", "b"]),
        (JobFilter(payload={("training", "id"): ['"42"']}), []),
        (JobFilter(payload={("training", "kind"): ["indoor"]}), ["b"]),
        (JobFilter(payload={("flag",): ["true"]}), ["c"]),
        (JobFilter(payload={("training",): ["42"]}), []),
        (JobFilter(key_prefix="a"), ["a"]),
        (JobFilter(keys=["b", "c"]), ["b", "c"]),
        (JobFilter(statuses=["delivered"]), ["b"]),
    ],
)
def test_filters_select_jobs_by_labels_payload_keys_and_run_status(selection, expected):
    put("a", labels={"team": "x"}, payload={"training": {"id": 42}})
    b, _ = put("b", labels={"team": "y"}, payload={"training": {"id": "42", "kind": "indoor"}})
    put("c", labels={"team": "x", "tier": "gold"}, payload={"flag": True})
    deliver(b, T1)

    assert sorted(selection.jobs().values_list("key", flat=True)) == expected


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"key": "has space"}, "key"),
        ({"key": "cancel"}, "key"),
        ({"schedules": [datetime(2030, 1, 1)]}, "schedules"),
        ({"schedules": [T1, T1]}, "schedules"),
        ({"callback": {"type": "email"}}, "callback"),
        ({"callback": {"type": "queue", "queue": "a b"}}, "callback"),
        ({"callback": {"type": "queue", "queue": "purchases"}}, "callback"),
        ({"callback": {"type": "queue", "queue": "unacked"}}, "callback"),
        ({"callback": {"type": "queue", "queue": "amq.direct"}}, "callback"),
        ({"callback": {"type": "queue", "queue": "q", "extra": 1}}, "callback"),
        ({"callback": {"type": "task", "task": "no spaces please"}}, "callback"),
        ({"callback": {"type": "task", "task": "scheduling.sweep"}}, "callback"),
        ({"payload": [1, 2]}, "payload"),
        ({"labels": {"team": 1}}, "labels"),
        ({"labels": {"bad name": "x"}}, "labels"),
    ],
)
def test_the_service_refuses_bad_values_naming_the_field(fields, field):
    with pytest.raises(JobError) as error:
        put(**fields)

    assert error.value.field == field
    assert not Job.objects.exists()


def test_limits_come_from_settings(settings):
    settings.SCHEDULING_JOB_MAX_INSTANTS = 2
    settings.SCHEDULING_JOB_MAX_PAYLOAD_BYTES = 10

    with pytest.raises(JobError, match="At most 2 instants per job; got 3"):
        put(schedules=[T1, T2, T3])
    with pytest.raises(JobError, match="payload: at most 10 bytes of JSON; got 18"):
        put(payload={"a": "0123456789"})
    put(payload={"a": "é"})  # 10 bytes in UTF-8


def test_a_task_callback_gets_its_queue_from_celerys_routes():
    job, _ = put(callback={"type": "task", "task": "billing.charge"})
    routed, _ = put("b", callback={"type": "task", "task": "billing.charge", "queue": "billing"})

    assert job.callback == {"type": "task", "task": "billing.charge", "queue": "celery"}
    assert routed.callback["queue"] == "billing"


def test_a_bad_limit_setting_is_refused_naming_it(settings):
    settings.SCHEDULING_JOB_MAX_INSTANTS = 0

    with pytest.raises(ImproperlyConfigured, match="SCHEDULING_JOB_MAX_INSTANTS=0 is not valid"):
        put()


def test_the_limits_are_read_from_the_environment():
    checked = check_django(SCHEDULING_JOB_MAX_PAYLOAD_BYTES="big")

    assert checked.returncode != 0
    assert "SCHEDULING_JOB_MAX_PAYLOAD_BYTES='big' is not valid" in checked.stderr


@pytest.mark.parametrize("status", [Status.EXPIRED, Status.FAILED])
def test_an_instant_never_delivered_is_pending_again_when_put_again(status):
    job, _ = put(schedules=[T1])
    job.runs.update(status=status)

    put(schedules=[T1])

    assert [run.status for run in runs(job)] == [status, Status.PENDING]


@pytest.mark.parametrize(
    "selection",
    [JobFilter(labels={"team": []}), JobFilter(payload={("a",): []})],
)
def test_a_filter_with_no_values_selects_no_job(selection):
    put(labels={"team": "x"}, payload={"a": 1})

    assert list(selection.jobs()) == []
    assert job_cancel_many(selection=selection) == 0


def nested(depth):
    value = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    ("fields", "field", "fragment"),
    [
        ({"payload": nested(33)}, "payload", "at most 32 levels"),
        ({"payload": nested(300)}, "payload", "at most 32 levels"),
        ({"payload": {"n": 2**64}}, "payload", "signed 64 bits"),
        ({"payload": {"text": "\ud800"}}, "payload", "lone surrogate"),
        ({"payload": {"\ud800": 1}}, "payload", "lone surrogate"),
        ({"payload": {"a\x00": 1}}, "payload", "null characters"),
        ({"payload": {"a": ["\x00"]}}, "payload", "null characters"),
        ({"labels": {"team": "\ud800"}}, "labels", "lone surrogate"),
        ({"labels": {"team": "a\x00"}}, "labels", "NUL"),
    ],
)
def test_a_payload_or_labels_the_broker_or_postgresql_refuses_are_refused(fields, field, fragment):
    with pytest.raises(JobError) as error:
        put(**fields)

    assert (error.value.field, fragment in error.value.message) == (field, True)
    assert not Job.objects.exists()


def test_a_payload_of_32_levels_and_64_bit_numbers_is_accepted():
    job, _ = put(payload={**nested(32), "big": 2**63 - 1, "small": -(2**63)})

    assert Job.objects.get().payload == job.payload


@pytest.mark.parametrize(
    "callback",
    [
        {"type": "queue", "queue": "scheduling:sweep:scheduling_jobs.scheduledjobrun:0"},
        {"type": "task", "task": "billing.charge", "queue": "scheduling:sweep:x"},
        {"type": "task", "task": "billing.charge", "queue": "unacked_index"},
        {"type": "task", "task": "billing.charge", "queue": "unacked"},
        {"type": "task", "task": "billing.charge", "queue": "amq.direct"},
        {"type": "task", "task": "billing.charge", "queue": "celeryev.x"},
        {"type": "queue", "queue": "unacked_mutex"},
        {"type": "queue", "queue": "celery.pidbox"},
    ],
)
def test_queue_names_of_the_framework_kombu_and_rabbitmq_are_refused_for_both_types(callback):
    with pytest.raises(JobError, match="queue: names starting with scheduling:") as error:
        put(callback=callback)

    assert error.value.field == "callback"
