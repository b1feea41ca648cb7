"""The publisher for RabbitMQ and every broker but Redis: kombu's producer on one connection,
with publisher confirms where the broker gives them."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Sequence
from typing import Any

from amqp.exceptions import MessageNacked
from celery import Celery
from kombu import Queue
from kombu.exceptions import KombuError

from scheduling.delivery.publishing.base import (
    PreparedMessage,
    PublishError,
    json_body,
    task_message,
)
from scheduling.rows.outgoing import OutgoingJson, OutgoingMessage, dumps


def close_quietly(channel: Any) -> None:
    with contextlib.suppress(Exception):  # a channel the broker closed already
        channel.close()


class KombuPublisher:
    def __init__(self, app: Celery, timeout: float) -> None:
        self.app = app
        self.amqp = app.amqp
        self.timeout = timeout
        self.origin = f"scheduling@{socket.gethostname()}"
        self.connection = app.connection_for_write()
        self.producer: Any = None

    def prepare(self, message: OutgoingMessage) -> PreparedMessage:
        if isinstance(message, OutgoingJson):
            return PreparedMessage(message, json_body(message))
        built = task_message(self.amqp, message, self.origin)
        dumps(built.body)  # refuse what cannot be serialised, row by row
        return PreparedMessage(message, built)

    def publish(self, batch: Sequence[PreparedMessage]) -> dict[int, str]:
        errors: tuple[type[BaseException], ...] = (
            *self.connection.connection_errors,
            KombuError,
            OSError,
        )
        try:
            self.connection.ensure_connection(max_retries=1, timeout=self.timeout)  # type: ignore[arg-type]
            return self._send_all(batch)
        except errors as exc:
            self._reset()
            raise PublishError(f"broker did not take the batch: {exc}") from exc

    def _send_all(self, batch: Sequence[PreparedMessage]) -> dict[int, str]:
        refused = {}
        for index, prepared in enumerate(batch):
            try:
                self._send(self._producer(), prepared)
            except self.connection.channel_errors as exc:
                # A channel-level refusal (e.g. the queue exists with other arguments) closes
                # the channel: note it for this row and carry on with a fresh one.
                refused[index] = f"broker refused the message for queue {prepared.queue!r}: {exc}"
                self.producer = None
            except MessageNacked as exc:
                # A negative publisher confirm (e.g. a full queue that rejects publishes): this
                # message only; the channel stays usable.
                refused[index] = f"broker nacked the message for queue {prepared.queue!r}: {exc}"
        return refused

    def _send(self, producer: Any, prepared: PreparedMessage) -> None:
        message = prepared.message
        if isinstance(message, OutgoingJson):
            self._send_json(producer, message, prepared.payload)
            return
        self.amqp.send_task_message(
            producer,
            message.task_name,
            prepared.payload,
            queue=self.amqp.queues[message.queue],
            retry=False,
            timeout=self.timeout,
            confirm_timeout=self.timeout,
        )

    def _send_json(self, producer: Any, message: OutgoingJson, body: str) -> None:
        # Default exchange, routing key = queue name: the message lands in that durable queue.
        properties = {"message_id": message.message_id} if message.message_id else {}
        producer.publish(
            body,
            exchange="",
            routing_key=message.queue,
            content_type="application/json",
            content_encoding="utf-8",
            delivery_mode=2,
            declare=[self._json_queue(message.queue)],
            retry=False,
            timeout=self.timeout,
            confirm_timeout=self.timeout,
            **properties,
        )

    def _json_queue(self, name: str) -> Queue:
        # With quorum queues on (CELERY_BROKER_QUORUM_QUEUES), a JSON queue is one as well; its
        # consumers must declare it with the same x-queue-type (or passively).
        queue_type = self.app.conf.task_create_missing_queue_type
        arguments = {"x-queue-type": queue_type} if queue_type == "quorum" else None
        return Queue(name, durable=True, auto_delete=False, queue_arguments=arguments)

    def backlog(self, queues: Sequence[str]) -> dict[str, int]:
        """A passive queue_declare per queue gives its message count (RabbitMQ: the messages
        ready for consumers); a queue not declared yet holds none."""
        errors: tuple[type[BaseException], ...] = (
            *self.connection.connection_errors,
            KombuError,
            OSError,
        )
        try:
            self.connection.ensure_connection(max_retries=1, timeout=self.timeout)  # type: ignore[arg-type]
            return {queue: self._message_count(queue) for queue in queues}
        except errors as exc:
            self._reset()
            raise PublishError(f"broker did not answer the queues' lengths: {exc}") from exc

    def _message_count(self, queue: str) -> int:
        channel: Any = self.connection.channel()
        try:
            return int(channel.queue_declare(queue=queue, passive=True).message_count)
        except self.connection.channel_errors:
            return 0  # NOT_FOUND: no such queue yet (the refusal closed the channel)
        except NotImplementedError:
            return 0  # a transport without passive declares (the filesystem broker): unbounded
        finally:
            close_quietly(channel)

    def _producer(self) -> Any:
        if self.producer is None:
            self.producer = self.amqp.Producer(self.connection.channel())
        return self.producer

    def _reset(self) -> None:
        self.producer = None
        self.connection.close()
        self.connection = self.app.connection_for_write()

    def close(self) -> None:
        self.connection.close()
