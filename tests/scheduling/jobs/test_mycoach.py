"""MyCoach's v2 scheduler requests work verbatim on POST /api/jobs/ (issue #16).

The request's shape is the one the issue quotes from MyCoach's clients:

    POST {"key": "training-invitations-$trainingId", "schedules": [...],
          "callback": {"type": "rabbitmq", "data": {"queue": "training.invitations.notifications",
                                                    "payload": {...}}}}

The instants follow MyCoach's own write-up of the need (Clem, "Building a distributed
scheduler", dev.to/imclem/building-a-distributed-scheduler-oap, 2020): a notification 90, 75,
60, 45, 30 and 15 minutes before the training. The copy of that article we could read stops
before its request examples, so the payload's fields (`{...}` in the issue) are ours.
"""

import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from celery import Celery, current_app
from django.core.exceptions import ImproperlyConfigured
from kombu import Exchange, Queue

from scheduling.delivery.publishing import make_publisher
from scheduling.delivery.publishing.kombu_producer import KombuPublisher
from scheduling.delivery.sweep.run import sweep
from scheduling.jobs.models import Job, ScheduledJobRun
from scheduling.jobs.services import job_put
from scheduling.rows.conf import scheduling_settings
from scheduling.time.times import iso_utc
from tests.amqp import AMQP_URL, use_rabbitmq
from tests.conftest import client_for, start_worker, stop_process, wait_for
from tests.scheduling.jobs.conftest import JOBS, put_job, user_with
from tests.scheduling.jobs.test_job_delivery import node_lines, start_node

pytestmark = pytest.mark.django_db

Status = ScheduledJobRun.Status
TRAINING_STARTS = datetime(2030, 3, 12, 18, 0, tzinfo=UTC)
BEFORE = (90, 75, 60, 45, 30, 15)  # minutes before the training, as in MyCoach's write-up
QUEUE = "training.invitations.notifications"
PAYLOAD = {"trainingId": 42, "title": "Séance du mardi", "players": [7, 9]}
SWEEP_LABEL = "scheduling_jobs.ScheduledJobRun"


def invitation_times(starts: datetime) -> list[str]:
    return [iso_utc(starts - timedelta(minutes=minutes)) for minutes in BEFORE]


def mycoach_body(
    training_id: int = 42, starts: datetime = TRAINING_STARTS, payload: Any = None
) -> dict[str, Any]:
    """MyCoach's scheduler request for one training's invitation reminders."""
    return {
        "key": f"training-invitations-{training_id}",
        "schedules": invitation_times(starts),
        "callback": {
            "type": "rabbitmq",
            "data": {"queue": QUEUE, "payload": PAYLOAD if payload is None else payload},
        },
    }


def post(client: Any, body: Any) -> Any:
    return client.post(JOBS, body, format="json")


def pending_instants(key: str) -> list[str]:
    runs = ScheduledJobRun.objects.filter(job__key=key, status=Status.PENDING)
    return [iso_utc(run.due_at) for run in runs.order_by("due_at")]


# --- POST /api/jobs/ -------------------------------------------------------------------------


def test_mycoachs_request_creates_the_job_with_one_pending_run_per_instant(api):
    response = post(api, mycoach_body())

    assert response.status_code == 201, response.content
    assert response["Location"] == "http://testserver/api/jobs/training-invitations-42/"
    job = Job.objects.get()
    assert job.key == "training-invitations-42"
    assert job.callback == {"type": "rabbitmq", "data": {"queue": QUEUE}}
    assert job.payload == PAYLOAD
    assert pending_instants(job.key) == sorted(invitation_times(TRAINING_STARTS))
    body = response.json()
    assert body["schedules"] == sorted(invitation_times(TRAINING_STARTS))
    assert (body["callback"], body["payload"]) == (job.callback, PAYLOAD)


def test_the_same_request_again_answers_200_and_changes_nothing(api):
    post(api, mycoach_body())
    runs_before = list(ScheduledJobRun.objects.values_list("pk", "due_at", "version", "status"))

    again = post(api, mycoach_body())

    assert again.status_code == 200, again.content
    assert Job.objects.count() == 1
    after = list(ScheduledJobRun.objects.values_list("pk", "due_at", "version", "status"))
    assert after == runs_before


def test_a_request_for_a_moved_training_replaces_its_pending_runs(api):
    post(api, mycoach_body())
    moved = TRAINING_STARTS + timedelta(hours=2)

    response = post(api, mycoach_body(starts=moved, payload={"trainingId": 42, "moved": True}))

    assert response.status_code == 200, response.content
    assert pending_instants("training-invitations-42") == sorted(invitation_times(moved))
    cancelled = ScheduledJobRun.objects.filter(status=Status.CANCELLED)
    assert sorted(iso_utc(run.due_at) for run in cancelled) == sorted(
        invitation_times(TRAINING_STARTS)
    )
    assert Job.objects.get().payload == {"trainingId": 42, "moved": True}


def test_each_training_is_its_own_job(api):
    post(api, mycoach_body(training_id=42))
    post(api, mycoach_body(training_id=43))

    assert sorted(Job.objects.values_list("key", flat=True)) == [
        "training-invitations-42",
        "training-invitations-43",
    ]
    assert ScheduledJobRun.objects.filter(status=Status.PENDING).count() == 2 * len(BEFORE)


def test_post_and_put_by_key_address_the_same_job(api):
    post(api, mycoach_body())
    body = mycoach_body()
    key = body.pop("key")

    response = api.put(f"{JOBS}{key}/", body, format="json")

    assert response.status_code == 200, response.content
    assert ScheduledJobRun.objects.count() == len(BEFORE)


def test_delete_by_key_cancels_the_pending_runs_of_a_cancelled_training(api):
    post(api, mycoach_body())

    response = api.delete(f"{JOBS}training-invitations-42/")

    assert response.status_code == 200
    assert pending_instants("training-invitations-42") == []
    assert ScheduledJobRun.objects.filter(status=Status.CANCELLED).count() == len(BEFORE)


def test_what_get_answers_can_be_put_back_unchanged(api):
    post(api, mycoach_body())
    shown = api.get(f"{JOBS}training-invitations-42/").json()
    assert shown["callback"] == {"type": "rabbitmq", "data": {"queue": QUEUE}}

    body = {name: shown[name] for name in ("schedules", "callback", "payload", "labels")}
    response = api.put(f"{JOBS}training-invitations-42/", body, format="json")

    assert response.status_code == 200, response.content
    assert Job.objects.get().payload == PAYLOAD
    assert ScheduledJobRun.objects.filter(status=Status.PENDING).count() == len(BEFORE)


def test_instants_as_javascript_writes_them_or_with_an_offset_are_accepted(api):
    # new Date(...).toISOString() in a Node client: milliseconds and Z.
    body = changed(schedules=["2030-03-12T16:30:00.000Z", "2030-03-12T18:45:00.000+02:00"])

    assert post(api, body).status_code == 201
    assert pending_instants(body["key"]) == ["2030-03-12T16:30:00Z", "2030-03-12T16:45:00Z"]


def test_the_payload_may_be_left_out_and_is_then_empty(api):
    body = mycoach_body()
    del body["callback"]["data"]["payload"]

    assert post(api, body).status_code == 201
    assert Job.objects.get().payload == {}


def test_the_list_filters_on_the_payload_mycoach_sent(api):
    post(api, mycoach_body(training_id=42, payload={"trainingId": 42}))
    post(api, mycoach_body(training_id=43, payload={"trainingId": 43}))

    response = api.get(JOBS, {"payload.trainingId": "43"})

    assert [job["key"] for job in response.json()["results"]] == ["training-invitations-43"]


def test_a_patch_may_replace_the_payload_inside_a_rabbitmq_callback(api):
    post(api, mycoach_body())
    callback = {"type": "rabbitmq", "data": {"queue": QUEUE, "payload": {"trainingId": 7}}}

    response = api.patch(f"{JOBS}training-invitations-42/", {"callback": callback}, format="json")

    assert response.status_code == 200, response.content
    job = Job.objects.get()
    assert (job.callback, job.payload) == (
        {"type": "rabbitmq", "data": {"queue": QUEUE}},
        {"trainingId": 7},
    )


def test_the_service_takes_the_same_callback_from_python():
    body = mycoach_body()
    at = [datetime.fromisoformat(text) for text in body["schedules"]]

    job, created = job_put(key=body["key"], schedules=at, callback=body["callback"])

    assert created
    assert (job.callback, job.payload) == ({"type": "rabbitmq", "data": {"queue": QUEUE}}, PAYLOAD)
    # The caller keeps its own dict: the payload is taken from a copy.
    assert body["callback"]["data"]["payload"] == PAYLOAD


def test_python_callers_are_trusted_with_tasks_of_other_codebases():
    callback = {"type": "task", "task": "billing.charge"}

    job, _ = job_put(key="invoice-7", schedules=[TRAINING_STARTS], callback=callback)

    assert job.callback["task"] == "billing.charge"


# --- bad bodies: 400 naming the field --------------------------------------------------------


def with_callback_data(**data: Any) -> dict[str, Any]:
    body = mycoach_body()
    body["callback"]["data"] = data
    return body


def changed(**fields: Any) -> dict[str, Any]:
    return {**mycoach_body(), **fields}


def without(name: str) -> dict[str, Any]:
    body = mycoach_body()
    del body[name]
    return body


@pytest.mark.parametrize(
    ("body", "field", "fragment"),
    [
        (without("key"), "key", "required"),
        (changed(key="training invitations 42"), "key", "letters, digits"),
        (changed(key="cancel"), "key", "reserved"),
        (changed(key=42), "key", "letters, digits"),
        (without("schedules"), "schedules", "required"),
        (changed(schedules=["2030-03-12T16:30:00"]), "schedules", "no offset"),
        (changed(schedules=[1899190800]), "schedules", "2026-12-24T14:00:00Z"),
        (changed(schedules="2030-03-12T16:30:00Z"), "schedules", "Enter a list"),
        (without("callback"), "callback", "required"),
        (changed(callback={"type": "amqp"}), "callback", '{"type": "rabbitmq", "data"'),
        (changed(callback={"type": "rabbitmq", "queue": QUEUE}), "callback", "Unknown queue"),
        (changed(callback={"type": "rabbitmq"}), "callback", "data: enter"),
        (changed(callback={"type": "rabbitmq", "data": QUEUE}), "callback", "data: enter"),
        (with_callback_data(payload={}), "callback", "data.queue: enter 1 to 200"),
        (with_callback_data(queue="a/b"), "callback", "data.queue: enter 1 to 200"),
        (with_callback_data(queue="celeryev"), "callback", "data.queue: names starting"),
        (with_callback_data(queue="amq.topic"), "callback", "data.queue: names starting"),
        (with_callback_data(queue="scheduling"), "callback", "data.queue: 'scheduling' carries"),
        (
            with_callback_data(queue=QUEUE, exchange="x"),
            "callback",
            "Unknown data.exchange; accepted: data.payload, data.queue",
        ),
        (
            with_callback_data(queue=QUEUE, payload=[1]),
            "callback",
            "callback.data.payload: enter a JSON",
        ),
        (changed(payload={"a": 1}), "payload", "Give the payload once"),
        (changed(schedule=[]), "schedule", "Unknown field; accepted: key, schedules, callback"),
        ([mycoach_body()], "non_field_errors", "Expected a dictionary"),
    ],
)
def test_a_bad_body_is_refused_naming_the_field(api, body, field, fragment):
    response = post(api, body)

    assert response.status_code == 400, response.content
    assert fragment in str(response.json()[field]), response.json()
    assert not Job.objects.exists()


def test_a_payload_over_the_limit_is_refused_naming_data_payload(api, settings):
    settings.SCHEDULING_JOB_MAX_PAYLOAD_BYTES = 20

    response = post(api, mycoach_body(payload={"text": "x" * 20}))

    assert response.status_code == 400
    assert "callback.data.payload: at most 20 bytes" in response.json()["callback"][0]


def test_post_needs_the_add_and_the_change_permission(db):
    for codenames in (("add_job",), ("change_job",)):
        user = user_with("-".join(codenames), *codenames)
        assert post(client_for(user), mycoach_body()).status_code == 403
    both = user_with("both", "add_job", "change_job")
    # Without view_job the job is made and the answer is empty (docs/keyed-jobs.md).
    assert post(client_for(both), mycoach_body()).status_code == 204


# --- task callbacks: a task the project does not know ----------------------------------------


def task_job(client: Any, task: str, key: str = "task-job") -> Any:
    callback = {"type": "task", "task": task}
    return put_job(client, key, callback=callback, schedules=invitation_times(TRAINING_STARTS))


def test_a_task_the_project_does_not_know_is_refused_with_the_accepted_form(api):
    response = task_job(api, "testapp.note_jobrun")

    assert response.status_code == 400
    (message,) = response.json()["callback"]
    assert message.startswith("task: 'testapp.note_jobrun' is not a task of this project's")
    assert "Did you mean 'testapp.note_job_run'" in message
    assert "SCHEDULING_EXTERNAL_TASKS" in message
    assert not Job.objects.exists()


def test_the_same_refusal_on_post(api):
    body = {**mycoach_body(), "callback": {"type": "task", "task": "billing.charge"}}

    response = post(api, body)

    assert response.status_code == 400
    assert "is not a task of this project's Celery app" in response.json()["callback"][0]


def test_a_registered_task_is_accepted(api):
    assert task_job(api, "testapp.note_job_run").status_code == 201


@pytest.mark.parametrize("declared", [["billing.charge"], ["billing.*"], ["*.charge", "x"]])
def test_a_task_declared_external_is_accepted(api, settings, declared):
    settings.SCHEDULING_EXTERNAL_TASKS = declared

    response = task_job(api, "billing.charge")

    assert response.status_code == 201, response.content
    assert Job.objects.get().callback["task"] == "billing.charge"


def test_an_external_pattern_does_not_reach_other_tasks(api, settings):
    settings.SCHEDULING_EXTERNAL_TASKS = ["billing.*"]

    assert task_job(api, "billingx.charge").status_code == 400
    assert task_job(api, "reports.billing.charge").status_code == 400


@pytest.mark.parametrize("value", ["billing.*", ["billing.*", ""], [3]])
def test_a_bad_external_tasks_setting_is_refused_naming_it(settings, value):
    settings.SCHEDULING_EXTERNAL_TASKS = value

    with pytest.raises(ImproperlyConfigured, match=r"^SCHEDULING_EXTERNAL_TASKS=.* a list of task"):
        scheduling_settings()


def test_internal_tasks_stay_refused_whatever_is_declared(api, settings):
    settings.SCHEDULING_EXTERNAL_TASKS = ["*"]

    response = task_job(api, "scheduling.sweep")

    assert response.status_code == 400
    assert "is internal" in response.json()["callback"][0]


# --- delivery by a real Celery worker's sweep, on RabbitMQ and on Redis ----------------------


def due_body() -> dict[str, Any]:
    """MyCoach's request for a training that started 91 minutes ago: every instant is due."""
    return mycoach_body(starts=datetime.now(UTC) - timedelta(minutes=91))


def sweep_queue() -> str:
    # The worker sweeps from a queue of this run's own: test runs sharing the RabbitMQ server
    # must not take each other's sweep tasks (each sweeps its own database).
    return f"jobs-mycoach-sweep-{os.environ['TEST_REDIS_PAIR']}"


def rabbitmq_bodies(app: Celery) -> list[tuple[Any, str, str]]:
    """Every message waiting in MyCoach's queue, read with kombu: (parsed body, content type,
    the message_id property)."""
    bodies = []
    with app.connection_for_read() as conn:
        queue = Queue(QUEUE, durable=True)(conn.default_channel)
        while (message := queue.get(no_ack=True, accept=["json"])) is not None:
            message_id = message.properties.get("message_id", "")
            bodies.append((message.decode(), message.content_type or "", message_id))
    return bodies


def redis_bodies(broker: Any) -> list[tuple[Any, str, str]]:
    """Every JSON body on the Redis list of that name, oldest first (a list has no properties)."""
    raws = reversed(broker.lrange(QUEUE, 0, -1))
    return [(json.loads(raw), "application/json", "") for raw in raws]


@pytest.fixture
def rabbitmq_app(monkeypatch: pytest.MonkeyPatch) -> Iterator[Celery]:
    app = use_rabbitmq(monkeypatch, QUEUE, sweep_queue())
    with app.connection_for_write() as conn:
        channel: Any = conn.default_channel
        # Declared as the worker will declare it, so a sweep task sent before the worker is
        # ready waits in it.
        Queue(sweep_queue(), Exchange(sweep_queue()), sweep_queue())(channel).declare()
    yield app
    with app.connection_for_write() as conn:
        channel = conn.default_channel
        channel.queue_delete(sweep_queue())


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "broker_name", [pytest.param("rabbitmq", marks=pytest.mark.rabbitmq), "redis"]
)
def test_a_worker_sweep_publishes_the_payload_as_sent_once_per_instant(
    request, api, subprocess_env, broker, broker_name
):
    rabbitmq = broker_name == "rabbitmq"
    sender = request.getfixturevalue("rabbitmq_app") if rabbitmq else current_app
    env = {**subprocess_env, "CELERY_BROKER_URL": AMQP_URL} if rabbitmq else subprocess_env
    body = due_body()
    assert post(api, body).status_code == 201
    worker = start_worker(env, sweep_queue(), f"jobs-mycoach-{broker_name}")
    try:
        sender.send_task("scheduling.sweep", args=[SWEEP_LABEL], queue=sweep_queue())
        wait_for(lambda: not ScheduledJobRun.objects.pending().exists())
    finally:
        stop_process(worker)
    # The same request again (a client retrying) schedules nothing already delivered: the
    # next sweep, on the same broker, publishes nothing.
    assert post(api, body).status_code == 200
    publisher = make_publisher(timeout=5.0, app=sender)
    try:
        assert sweep(ScheduledJobRun, publisher=publisher).delivered == 0
    finally:
        publisher.close()

    bodies = rabbitmq_bodies(sender) if rabbitmq else redis_bodies(broker)
    assert [(body, kind) for body, kind, _ in bodies] == [(PAYLOAD, "application/json")] * len(
        BEFORE
    )
    if rabbitmq:  # the body is the payload alone; a consumer dedupes by the message's id
        runs = ScheduledJobRun.objects.select_related("job")
        assert sorted(message_id for _, _, message_id in bodies) == sorted(
            run.message_id for run in runs
        )
    assert ScheduledJobRun.objects.filter(status=Status.DELIVERED).count() == len(BEFORE)


@pytest.mark.slow
def test_a_node_consumer_on_rabbitmq_reads_the_payload_as_mycoach_sent_it(
    api, rabbitmq_app, node_consumer
):
    node = start_node(node_consumer, QUEUE, 1)
    body = {**mycoach_body(), "schedules": [iso_utc(datetime.now(UTC) - timedelta(seconds=1))]}
    assert post(api, body).status_code == 201
    publisher = KombuPublisher(rabbitmq_app, timeout=5.0)
    try:
        assert sweep(ScheduledJobRun, publisher=publisher).delivered == 1
    finally:
        publisher.close()

    (line,) = node_lines(node)
    assert line["body"] == PAYLOAD
    assert (line["content_type"], line["delivery_mode"]) == ("application/json", 2)
