"""What the sweep publishes for keyed jobs, read back by consumers that are not Python:
`redis-cli BRPOP` on the Redis broker, and a Node script (amqplib) on RabbitMQ."""

import base64
import json
import subprocess
from datetime import datetime, timedelta
from typing import Any

import pytest
from celery import Celery
from django.conf import settings
from django.utils import timezone

from scheduling.delivery.publishing.kombu_producer import KombuPublisher
from scheduling.delivery.sweep.run import sweep
from scheduling.jobs.models import Job, ScheduledJobRun
from scheduling.time.times import iso_utc
from tests.amqp import AMQP_URL, use_rabbitmq
from tests.conftest import queued_messages, wait_for
from tests.scheduling.jobs.conftest import JOBS, put_job

pytestmark = pytest.mark.django_db


def ago(seconds: float) -> str:
    return iso_utc(timezone.now() - timedelta(seconds=seconds))


def redis_cli_brpop(queue: str) -> dict[str, Any]:
    """What a shell consumer gets: `redis-cli BRPOP <queue>`, parsed as JSON."""
    command = ["redis-cli", "-u", settings.CELERY_BROKER_URL, "--raw", "BRPOP", queue, "5"]
    output = subprocess.run(command, capture_output=True, text=True, check=True, timeout=20)
    name, raw = output.stdout.splitlines()
    assert name == queue
    return json.loads(raw)


def test_a_queue_callback_is_plain_json_on_the_redis_list_named_after_the_queue(api):
    scheduled_for = ago(5)
    put_job(
        api,
        "training-42",
        schedules=[scheduled_for],
        callback={"type": "queue", "queue": "reminders"},
        payload={"training": {"id": 42}},
        labels={"team": "falcons"},
    )

    assert sweep(ScheduledJobRun).delivered == 1

    body = redis_cli_brpop("reminders")
    run = ScheduledJobRun.objects.get()
    assert set(body) == {"id", "key", "scheduled_for", "published_at", "payload", "labels"}
    assert body["id"] == f"training-42:{run.pk}:v1"
    assert body["key"] == "training-42"
    assert body["scheduled_for"] == scheduled_for.replace("+00:00", "Z")
    assert datetime.fromisoformat(body["published_at"]) >= datetime.fromisoformat(scheduled_for)
    assert (body["payload"], body["labels"]) == ({"training": {"id": 42}}, {"team": "falcons"})
    assert run.status == ScheduledJobRun.Status.DELIVERED


def test_nothing_is_published_before_its_instant(api, broker):
    put_job(api, "later", schedules=[iso_utc(timezone.now() + timedelta(minutes=5))])

    assert sweep(ScheduledJobRun).delivered == 0

    assert broker.llen("reminders") == 0


def test_a_pending_run_publishes_the_payload_of_the_latest_patch(api):
    put_job(api, "k", schedules=[ago(1)], payload={"text": "old"}, labels={"v": "1"})
    api.patch(f"{JOBS}k/", {"payload": {"text": "new"}, "labels": {"v": "2"}}, format="json")

    sweep(ScheduledJobRun)

    body = redis_cli_brpop("reminders")
    assert (body["payload"], body["labels"]) == ({"text": "new"}, {"v": "2"})


def test_a_rescheduled_run_is_published_with_its_new_version_in_the_id(api):
    put_job(api, "k", schedules=[ago(60)])
    api.post(f"{JOBS}reschedule/", {"filter": {"key": "k"}, "shift": "PT30S"}, format="json")

    sweep(ScheduledJobRun)

    assert redis_cli_brpop("reminders")["id"].endswith(":v2")


def test_a_cancelled_job_publishes_nothing(api, broker):
    put_job(api, "k", schedules=[ago(1)])
    api.delete(f"{JOBS}k/")

    assert sweep(ScheduledJobRun).delivered == 0
    assert broker.llen("reminders") == 0


def test_a_task_callback_is_an_ordinary_celery_task_message(api, broker, settings):
    settings.SCHEDULING_EXTERNAL_TASKS = ["billing.*"]  # the billing service's workers run it
    put_job(
        api,
        "invoice-7",
        schedules=[ago(1)],
        callback={"type": "task", "task": "billing.charge", "queue": "billing"},
        payload={"invoice": 7},
    )

    sweep(ScheduledJobRun)

    (message,) = queued_messages(broker, "billing")
    run = ScheduledJobRun.objects.get()
    assert message["headers"]["task"] == "billing.charge"
    assert (
        message["headers"]["id"] == run.event_id == f"scheduling_jobs.scheduledjobrun:{run.pk}:v1"
    )
    args, kwargs, _ = json.loads(base64.b64decode(message["body"]))
    assert args == []
    event = kwargs["event"]
    assert (event["model"], event["pk"], event["version"]) == (
        "scheduling_jobs.scheduledjobrun",
        run.pk,
        1,
    )
    assert event["data"] == {"key": "invoice-7", "payload": {"invoice": 7}, "labels": {}}


def test_a_row_whose_stored_callback_went_bad_fails_alone(api, settings):
    settings.SCHEDULING_MAX_ATTEMPTS = 1
    put_job(api, "good", schedules=[ago(2)])
    put_job(api, "bad", schedules=[ago(1)])
    Job.objects.filter(key="bad").update(callback={"type": "carrier-pigeon"})

    result = sweep(ScheduledJobRun)

    assert (result.delivered, result.failed) == (1, 1)
    assert "unknown callback" in ScheduledJobRun.objects.get(job__key="bad").last_error


# --- RabbitMQ, read by Node ----------------------------------------------------------------


@pytest.fixture
def rabbitmq(monkeypatch: pytest.MonkeyPatch) -> Celery:
    return use_rabbitmq(monkeypatch, "jobs-node")


def start_node(script: Any, queue: str, count: int) -> subprocess.Popen[str]:
    command = ["node", str(script), AMQP_URL, queue, str(count), "60"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    assert process.stderr.readline().startswith("listening"), "the Node consumer did not start"
    return process


def node_lines(process: subprocess.Popen[str]) -> list[dict[str, Any]]:
    stdout, stderr = process.communicate(timeout=90)
    assert process.returncode == 0, stderr
    return [json.loads(line) for line in stdout.splitlines()]


@pytest.mark.slow
def test_a_node_consumer_receives_the_json_from_rabbitmq_not_before_its_instant(
    api, rabbitmq, node_consumer
):
    node = start_node(node_consumer, "jobs-node", 2)
    soon = timezone.now() + timedelta(seconds=2)
    schedules = [iso_utc(soon), iso_utc(soon + timedelta(seconds=1))]
    put_job(
        api,
        "match-9",
        schedules=schedules,
        callback={"type": "queue", "queue": "jobs-node"},
        payload={"match": {"id": 9}},
        labels={"league": "north"},
    )
    publisher = KombuPublisher(rabbitmq, timeout=5.0)

    def all_delivered() -> bool:
        sweep(ScheduledJobRun, publisher=publisher)
        return not ScheduledJobRun.objects.pending().exists()

    try:
        wait_for(all_delivered, timeout=30)
    finally:
        publisher.close()

    lines = node_lines(node)
    runs = list(ScheduledJobRun.objects.order_by("due_at"))
    assert [line["body"]["id"] for line in lines] == [f"match-9:{run.pk}:v1" for run in runs]
    for line, scheduled_for in zip(lines, schedules, strict=True):
        assert line["content_type"] == "application/json"
        assert line["delivery_mode"] == 2
        body = line["body"]
        assert body["scheduled_for"] == scheduled_for
        assert (body["payload"], body["labels"]) == ({"match": {"id": 9}}, {"league": "north"})
        received = datetime.fromisoformat(line["received_at"].replace("Z", "+00:00"))
        late = received - datetime.fromisoformat(scheduled_for)
        # Never early; on time within the test's polling sweep (every 0.2 s) and a wide margin.
        assert timedelta(0) <= late < timedelta(seconds=3), late


@pytest.mark.slow
def test_a_message_published_while_no_consumer_runs_waits_in_the_durable_queue(
    api, rabbitmq, node_consumer
):
    put_job(api, "k", schedules=[ago(1)], callback={"type": "queue", "queue": "jobs-node"})
    publisher = KombuPublisher(rabbitmq, timeout=5.0)
    assert sweep(ScheduledJobRun, publisher=publisher).delivered == 1
    publisher.close()

    with rabbitmq.connection_for_write() as conn:
        declared = conn.default_channel.queue_declare("jobs-node", passive=True)
    assert declared.message_count == 1

    (line,) = node_lines(start_node(node_consumer, "jobs-node", 1))
    assert line["body"]["key"] == "k"
