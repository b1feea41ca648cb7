"""Plain JSON messages on a named queue: what a consumer in any language reads."""

import json
import subprocess
from datetime import timedelta
from typing import Any

import pytest
from celery import Celery
from django.utils import timezone

from scheduling.delivery.publishing.kombu_producer import KombuPublisher
from scheduling.delivery.sweep.run import sweep
from scheduling.rows.outgoing import OutgoingJson
from tests.amqp import AMQP_URL, amqp_app
from tests.testapp.models import Ping, ScheduledNotice

pytestmark = pytest.mark.django_db


def make_notice(queue: str = "notices") -> ScheduledNotice:
    ping = Ping.objects.create(name=queue)
    due = timezone.now() - timedelta(seconds=1)
    return ScheduledNotice.objects.create(ping=ping, target_queue=queue, due_at=due)


def test_a_json_row_is_pushed_as_plain_json_on_the_redis_list_named_after_its_queue(broker):
    notice = make_notice()

    assert sweep(ScheduledNotice).delivered == 1

    _, raw = broker.brpop(["notices"], timeout=2)
    body = json.loads(raw)
    assert body["id"] == notice.event_id
    assert body["ping"] == notice.ping_id
    assert body["scheduled_for"].endswith("Z")
    assert "headers" not in body  # no Celery envelope


@pytest.mark.rabbitmq
def test_a_json_row_goes_to_a_durable_rabbitmq_queue_as_a_persistent_json_message(monkeypatch):
    monkeypatch.setenv("CELERY_BROKER_URL", AMQP_URL)
    app: Celery = amqp_app()
    with app.connection_for_write() as conn:
        channel: Any = conn.default_channel
        channel.queue_delete("notices-amqp")
    notice = make_notice("notices-amqp")

    publisher = KombuPublisher(app, timeout=5.0)
    assert sweep(ScheduledNotice, publisher=publisher).delivered == 1
    publisher.close()

    with app.connection_for_write() as conn:
        channel = conn.default_channel
        message = channel.basic_get("notices-amqp", no_ack=True)
        declared = channel.queue_declare("notices-amqp", passive=True)
    assert declared.message_count == 0
    assert message.content_type == "application/json"
    assert message.properties["delivery_mode"] == 2
    assert json.loads(message.body)["id"] == notice.event_id


def test_the_json_body_is_compact_and_verbatim():
    from scheduling.delivery.publishing.base import json_body

    assert json_body(OutgoingJson(queue="q", body={"a": [1, "x"]})) == '{"a":[1,"x"]}'


def test_a_queue_the_redis_broker_refuses_fails_only_its_own_rows(broker):
    broker.set("taken-by-a-string", "not a list")  # LPUSH answers WRONGTYPE for this queue
    refused = make_notice("taken-by-a-string")
    fine = make_notice("notices")

    result = sweep(ScheduledNotice)

    assert (result.delivered, result.retrying, result.error) == (1, 1, "")
    refused.refresh_from_db()
    assert refused.status == ScheduledNotice.Status.PENDING
    assert refused.attempts == 1
    assert "WRONGTYPE" in refused.last_error
    assert json.loads(broker.rpop("notices"))["id"] == fine.event_id


@pytest.mark.rabbitmq
def test_a_queue_rabbitmq_refuses_fails_only_its_own_rows(monkeypatch):
    monkeypatch.setenv("CELERY_BROKER_URL", AMQP_URL)
    app: Celery = amqp_app()
    with app.connection_for_write() as conn:
        channel: Any = conn.default_channel
        channel.queue_delete("notices-amqp")
        channel.queue_delete("notices-transient")
        channel.queue_declare("notices-transient", durable=False, auto_delete=False)
    refused = make_notice("notices-transient")  # we declare durable: PRECONDITION_FAILED
    fine = make_notice("notices-amqp")

    publisher = KombuPublisher(app, timeout=5.0)
    result = sweep(ScheduledNotice, publisher=publisher)
    publisher.close()

    assert (result.delivered, result.retrying) == (1, 1)
    refused.refresh_from_db()
    assert "PRECONDITION_FAILED" in refused.last_error
    with app.connection_for_write() as conn:
        message = conn.default_channel.basic_get("notices-amqp", no_ack=True)
    assert json.loads(message.body)["id"] == fine.event_id


@pytest.fixture
def queue_that_rejects_publishes():
    """A RabbitMQ policy makes `notices-full` hold nothing and nack every publish."""
    policy = ["rabbitmqctl", "-q", "set_policy", "notices-full", "^notices-full$"]
    rules = '{"max-length": 0, "overflow": "reject-publish"}'
    subprocess.run([*policy, rules, "--apply-to", "queues"], check=True, timeout=60)
    yield "notices-full"
    subprocess.run(["rabbitmqctl", "-q", "clear_policy", "notices-full"], check=True, timeout=60)


@pytest.mark.slow
@pytest.mark.rabbitmq
def test_a_message_rabbitmq_nacks_fails_only_its_own_row(monkeypatch, queue_that_rejects_publishes):
    monkeypatch.setenv("CELERY_BROKER_URL", AMQP_URL)
    app: Celery = amqp_app()
    with app.connection_for_write() as conn:
        channel: Any = conn.default_channel
        channel.queue_delete("notices-amqp")
    refused = make_notice(queue_that_rejects_publishes)
    fine = make_notice("notices-amqp")

    publisher = KombuPublisher(app, timeout=5.0)
    result = sweep(ScheduledNotice, publisher=publisher)
    publisher.close()

    assert (result.delivered, result.retrying, result.error) == (1, 1, "")
    refused.refresh_from_db()
    assert "nacked" in refused.last_error
    with app.connection_for_write() as conn:
        message = conn.default_channel.basic_get("notices-amqp", no_ack=True)
    assert json.loads(message.body)["id"] == fine.event_id
