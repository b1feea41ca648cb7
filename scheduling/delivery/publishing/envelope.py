"""The Redis publisher's messages: Celery's protocol-2 message for a task name, built once, and
kombu's Redis envelope around it, serialised once as a template cut around the fields that
differ from message to message."""

from __future__ import annotations

import base64
import re
from typing import Any

from scheduling.delivery.publishing.base import kwargs_repr, task_message
from scheduling.rows.outgoing import OutgoingTask, dumps


class TaskMessageShape:
    """Celery's protocol-2 message for one task name, built once by Celery's own `as_task_v2`;
    each message then copies it and sets only what depends on the task id and kwargs.

    `as_task_v2` re-derives the same twenty headers for every message; copying them is a
    fraction of that. A test compares the two field by field, so a Celery upgrade that changes
    the shape shows.
    """

    def __init__(self, amqp: Any, task_name: str, origin: str) -> None:
        shape = task_message(amqp, OutgoingTask(task_name, "", "", {}), origin)
        self.headers: dict[str, Any] = shape.headers
        self.properties: dict[str, Any] = shape.properties
        self.args, _, self.embed = shape.body

    def build(self, task: OutgoingTask) -> tuple[dict[str, Any], dict[str, Any], bytes]:
        """(headers, properties, serialised body) for `task`."""
        task_id = task.task_id
        headers = {**self.headers, "id": task_id, "root_id": task_id, **dict(task.headers)}
        headers["kwargsrepr"] = kwargs_repr(task)
        properties = {**self.properties, "correlation_id": task_id}
        return headers, properties, dumps((self.args, task.kwargs, self.embed))


# A field an envelope template leaves open: serialised as a JSON string it reads
# "\u0000scheduling:<name>\u0000", which no real value can produce (orjson escapes NUL so).
PLACEHOLDER = re.compile(rb'"\\u0000scheduling:(\w+)\\u0000"')


def placeholder(name: str) -> str:
    return f"\x00scheduling:{name}\x00"


def redis_envelope(
    body: str, headers: dict[str, Any], properties: dict[str, Any], tag: str, queue: str
) -> dict[str, Any]:
    """Kombu's Redis envelope around a protocol-2 message whose `body` is base64 already."""
    return {
        "body": body,
        "content-encoding": "utf-8",
        "content-type": "application/json",
        "headers": headers,
        "properties": {
            **properties,
            "delivery_mode": 2,
            "priority": 0,
            "body_encoding": "base64",
            # Kombu's Redis transport keys unacked messages by this tag; it only has to be
            # unique.
            "delivery_tag": tag,
            # As Celery's own publish to a queue: the default exchange, routed by queue name.
            # A worker that dies with the message unacked gets it restored by this; an
            # exchange nobody declared a binding for would make the restore drop it.
            "delivery_info": {"exchange": "", "routing_key": queue},
        },
    }


class EnvelopeTemplate:
    """The serialised envelope of one task name and queue, cut around the fields that differ
    from message to message (body, task id, kwargsrepr, delivery tag).

    Building the envelope as a dict and serialising it spends most of its time copying and
    encoding the same twenty headers; joining the template's pieces around the few fields
    skips that. A test holds it to the dict-built envelope.
    """

    def __init__(
        self, shape: TaskMessageShape, queue: str, extra_headers: tuple[str, ...] = ()
    ) -> None:
        task_id, kwargsrepr = placeholder("id"), placeholder("kwargsrepr")
        headers = {**shape.headers, "id": task_id, "root_id": task_id, "kwargsrepr": kwargsrepr}
        headers.update({name: placeholder(f"header_{name}") for name in extra_headers})
        properties = {**shape.properties, "correlation_id": task_id}
        envelope = redis_envelope(
            placeholder("body"), headers, properties, placeholder("tag"), queue
        )
        pieces = PLACEHOLDER.split(dumps(envelope))
        self.first: bytes = pieces[0]
        self.rest = [
            (name.decode(), text) for name, text in zip(pieces[1::2], pieces[2::2], strict=True)
        ]
        self.args, self.embed = shape.args, shape.embed

    def render(self, task: OutgoingTask, tag: str) -> bytes:
        body = dumps((self.args, task.kwargs, self.embed))
        values = {
            "body": b'"' + base64.b64encode(body) + b'"',  # base64 needs no JSON escaping
            "id": dumps(task.task_id),
            "kwargsrepr": dumps(kwargs_repr(task)),
            "tag": dumps(tag),
            **{f"header_{name}": dumps(value) for name, value in task.headers},
        }
        out = [self.first]
        for name, text in self.rest:
            out += (values[name], text)
        return b"".join(out)
