"""Plain JSON messages on a named queue: what a consumer in any language reads."""

import json
from datetime import timedelta
from typing import Any

import pytest
from celery import Celery
from django.utils import timezone

from scheduling.broker import KombuPublisher, OutgoingJson
from scheduling.dispatch import sweep
from tests.scheduling.test_rabbitmq import AMQP_URL, amqp_app
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
    from scheduling.broker import json_body

    assert json_body(OutgoingJson(queue="q", body={"a": [1, "x"]})) == '{"a":[1,"x"]}'
