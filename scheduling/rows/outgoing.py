"""What a scheduled row publishes: a Celery task message or a plain JSON body.

Plain data, free of broker code, so models can say what they publish and only the publisher
(the publishing package) talks to a broker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson


@dataclass(frozen=True)
class OutgoingTask:
    """A Celery task message for `task_name`, routed to `queue`; its task id is the event id."""

    task_name: str
    queue: str
    task_id: str
    kwargs: dict[str, Any]
    # Message headers besides Celery's own: the W3C trace context (`traceparent`, `tracestate`)
    # where a tracing SDK records (docs/tracing.md).
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class OutgoingJson:
    """A plain JSON body on `queue`, for consumers in any language (no Celery envelope)."""

    queue: str
    body: dict[str, Any]
    # The AMQP message_id property, where the broker has message properties (RabbitMQ): a
    # consumer of a body without an id of its own (a rabbitmq callback) can dedupe by it.
    message_id: str = ""


OutgoingMessage = OutgoingTask | OutgoingJson


def dumps(value: Any) -> bytes:
    """Compact JSON; orjson is ~10x faster than json here, which is a third of a message's cost.

    OPT_NON_STR_KEYS turns int keys into strings, as json.dumps would.
    """
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
