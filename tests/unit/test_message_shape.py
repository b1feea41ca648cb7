"""The Redis publisher builds task messages from a per-task shape instead of calling Celery's
`as_task_v2` for every row; these tests hold the two to the same message, field by field."""

import pytest
from celery import current_app

from scheduling.delivery.publishing.base import task_message
from scheduling.delivery.publishing.envelope import TaskMessageShape
from scheduling.rows.outgoing import OutgoingTask, dumps

ORIGIN = "scheduling@test-host"


def outgoing(event_id: str, data: dict[str, object]) -> OutgoingTask:
    event = {"id": event_id, "data": data}
    return OutgoingTask("testapp.handle_ping", "testapp", event_id, {"event": event})


@pytest.mark.parametrize(
    "task",
    [
        outgoing("testapp.scheduledping:1:v1", {"ping": "hello"}),
        outgoing("testapp.scheduledping:2:v7", {"nested": {"list": [1, 2.5, None]}, "ü": "é"}),
    ],
)
def test_a_shaped_message_is_the_one_celery_builds(task):
    celery_built = task_message(current_app.amqp, task, ORIGIN)
    shape = TaskMessageShape(current_app.amqp, task.task_name, ORIGIN)

    headers, properties, body = shape.build(task)

    assert headers == celery_built.headers
    assert properties == celery_built.properties
    assert body == dumps(celery_built.body)


def test_one_shape_serves_many_messages_without_leaking_between_them():
    shape = TaskMessageShape(current_app.amqp, "testapp.handle_ping", ORIGIN)
    first, second = outgoing("a:1:v1", {"n": 1}), outgoing("a:2:v1", {"n": 2})

    first_headers, first_properties, _ = shape.build(first)
    second_headers, second_properties, _ = shape.build(second)

    assert (first_headers["id"], second_headers["id"]) == ("a:1:v1", "a:2:v1")
    assert (first_properties["correlation_id"], second_properties["correlation_id"]) == (
        "a:1:v1",
        "a:2:v1",
    )
    assert shape.headers["id"] == ""  # the shape itself is never written to
