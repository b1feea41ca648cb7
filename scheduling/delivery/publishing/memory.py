"""A publisher with no broker: it keeps what the sweep publishes, for scheduling.delivery.testing to run
in-process. Messages go through JSON as on the wire, so a handler gets what a worker would."""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from scheduling.delivery.publishing.base import PreparedMessage
from scheduling.rows.outgoing import OutgoingJson, OutgoingMessage, dumps


class MemoryPublisher:
    def __init__(self) -> None:
        self.published: list[PreparedMessage] = []

    def prepare(self, message: OutgoingMessage) -> PreparedMessage:
        """The payload as a consumer decodes it; raises, as a broker's publisher does, for a
        message that cannot be serialised."""
        body = message.body if isinstance(message, OutgoingJson) else message.kwargs
        return PreparedMessage(message, orjson.loads(dumps(body)))

    def publish(self, batch: Sequence[PreparedMessage]) -> dict[int, str]:
        self.published.extend(batch)
        return {}

    def backlog(self, queues: Sequence[str]) -> dict[str, int]:
        """What this publisher holds for each queue: nothing consumes it until a run takes it."""
        return {queue: sum(p.queue == queue for p in self.published) for queue in queues}

    def close(self) -> None:
        self.published.clear()
