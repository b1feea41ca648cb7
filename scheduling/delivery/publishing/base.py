"""What every publisher shares: the protocol the sweep calls, the prepared message, the error
that rolls a batch back, and the Celery pieces both publishers build messages from."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from scheduling.rows.outgoing import OutgoingJson, OutgoingMessage, OutgoingTask, dumps


class PublishError(Exception):
    """The broker did not take the batch; nothing in it may be considered published."""


@dataclass
class PreparedMessage:
    message: OutgoingMessage
    payload: Any = field(repr=False)

    @property
    def queue(self) -> str:
        return self.message.queue


class Publisher(Protocol):
    def prepare(self, message: OutgoingMessage) -> PreparedMessage:
        """Serialise one message; raises for a message that can never be sent."""
        ...

    def publish(self, batch: Sequence[PreparedMessage]) -> dict[int, str]:
        """Send the batch; return {index: reason} for messages the broker refused one by one.

        Raises PublishError when the broker took none of it (unreachable, timed out).
        """
        ...

    def backlog(self, queues: Sequence[str]) -> dict[str, int]:
        """Messages waiting on each plain-JSON queue (0 for one that does not exist).

        Raises PublishError when the broker cannot be asked.
        """
        ...

    def close(self) -> None: ...


def json_body(message: OutgoingJson) -> str:
    return dumps(message.body).decode()


def task_message(amqp: Any, task: OutgoingTask, origin: str) -> Any:
    """The protocol-2 message, built by Celery (`amqp` is `app.amqp`, fetched once: it is a
    locked cached property, costly to read per message)."""
    message = amqp.as_task_v2(
        task.task_id,
        task.task_name,
        kwargs=task.kwargs,
        argsrepr="()",
        kwargsrepr=kwargs_repr(task),
        origin=origin,
    )
    message.headers.update(task.headers)
    return message


def kwargs_repr(task: OutgoingTask) -> str:
    # Only the event ids go to logs and monitors; payloads may hold personal data.
    events = task.kwargs.get("events")
    if events:  # a batch message: its first event's id and how many it carries
        return f"{{'events': [{events[0].get('id')!r}, ...]}} ({len(events)} events)"
    event_id = task.kwargs.get("event", {}).get("id", task.task_id)
    return f"{{'event': {event_id!r}}}"
