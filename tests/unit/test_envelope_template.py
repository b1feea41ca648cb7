"""The Redis publisher renders each envelope from a per-task template cut around the fields that
vary; these tests hold it to the envelope built as a dict and serialised whole."""

import base64

import orjson
import pytest
from celery import current_app

from scheduling.delivery.publishing.envelope import (
    EnvelopeTemplate,
    TaskMessageShape,
    redis_envelope,
)
from scheduling.rows.outgoing import OutgoingTask

ORIGIN = "scheduling@test-host"


def outgoing(event_id: str, data: dict[str, object]) -> OutgoingTask:
    event = {"id": event_id, "data": data}
    return OutgoingTask("testapp.handle_ping", "testapp", event_id, {"event": event})


@pytest.mark.parametrize(
    "task",
    [
        outgoing("testapp.scheduledping:1:v1", {"ping": "hello"}),
        outgoing("testapp.scheduledping:2:v7", {"quote": '"\\\n\x00', "ü": "é", "n": [1, None]}),
        outgoing('odd "id"\\', {}),
    ],
)
def test_a_rendered_envelope_is_the_dict_built_one(task):
    shape = TaskMessageShape(current_app.amqp, task.task_name, ORIGIN)
    headers, properties, body = shape.build(task)
    expected = redis_envelope(
        base64.b64encode(body).decode(), headers, properties, "tag-1", task.queue
    )

    rendered = EnvelopeTemplate(shape, task.queue).render(task, "tag-1")

    assert orjson.loads(rendered) == expected
    assert list(orjson.loads(rendered)) == list(expected)


def test_one_template_serves_many_messages_without_leaking_between_them():
    shape = TaskMessageShape(current_app.amqp, "testapp.handle_ping", ORIGIN)
    template = EnvelopeTemplate(shape, "testapp")

    first = orjson.loads(template.render(outgoing("a:1:v1", {"n": 1}), "t1"))
    second = orjson.loads(template.render(outgoing("a:2:v1", {"n": 2}), "t2"))

    assert (first["headers"]["root_id"], second["headers"]["root_id"]) == ("a:1:v1", "a:2:v1")
    assert (first["properties"]["delivery_tag"], second["properties"]["delivery_tag"]) == (
        "t1",
        "t2",
    )
    assert orjson.loads(base64.b64decode(second["body"]))[1]["event"]["data"] == {"n": 2}
