"""The Redis publisher: prebuilt Celery messages in kombu's Redis envelope, a whole batch pushed
in one round trip (one pipelined LPUSH per queue), to a plain Redis or the master its Sentinels
name. A stock Celery worker consumes the messages unchanged."""

from __future__ import annotations

import itertools
import os
import socket
from collections import defaultdict
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import redis
from celery import Celery
from redis.backoff import NoBackoff
from redis.retry import Retry
from redis.sentinel import Sentinel

from scheduling.delivery.publishing.base import PreparedMessage, PublishError, json_body
from scheduling.delivery.publishing.envelope import EnvelopeTemplate, TaskMessageShape
from scheduling.rows.outgoing import OutgoingJson, OutgoingMessage, OutgoingTask

# Replies that say the server cannot take writes now, whatever the queue: a replica (a master
# demoted by a failover), no replica in reach under min-replicas-to-write, a replica cut off
# from its master, a server still loading its data. The batch fails as a whole and is published
# again on the next tick; it is not the messages' fault, so it costs them no attempt.
SERVER_STATE_ERRORS = ("READONLY", "NOREPLICAS", "MASTERDOWN", "LOADING")


class RedisBatchPublisher:
    def __init__(self, app: Celery, broker_url: str, timeout: float) -> None:
        self.app = app
        self.amqp = app.amqp
        self.origin = f"scheduling@{socket.gethostname()}"
        self.shapes: dict[str, TaskMessageShape] = {}
        self.templates: dict[tuple[str, str, tuple[str, ...]], EnvelopeTemplate] = {}
        # Delivery tags: 128 random bits per publisher (a forked process makes its own), then a
        # counter; unique like uuid4s at a tenth of their cost. next() on a count is atomic.
        self.tag_prefix = os.urandom(16).hex()
        self.tags = itertools.count()
        options = app.conf.broker_transport_options or {}
        self.key_prefix = str(options.get("global_keyprefix", ""))
        # No automatic retry: a retried pipeline may double-publish, and a dead broker must
        # fail within `timeout`, not within several of them.
        connection: dict[str, Any] = {
            "socket_timeout": timeout,
            "socket_connect_timeout": timeout,
            "retry": Retry(NoBackoff(), 0),
        }
        if urlsplit(broker_url).scheme == "sentinel":
            self.client = sentinel_master(broker_url, options, connection)
        else:
            self.client = redis.Redis.from_url(broker_url, **connection)

    def prepare(self, message: OutgoingMessage) -> PreparedMessage:
        if isinstance(message, OutgoingJson):
            # Pushed as is on the list named after the queue: `BRPOP queue` gets the JSON.
            return PreparedMessage(message, json_body(message))
        tag = f"{self.tag_prefix}{next(self.tags):x}"
        return PreparedMessage(message, self._template(message).render(message, tag))

    def _template(self, task: OutgoingTask) -> EnvelopeTemplate:
        header_names = tuple(name for name, _ in task.headers)
        key = (task.task_name, task.queue, header_names)
        template = self.templates.get(key)
        if template is None:
            template = self.templates[key] = EnvelopeTemplate(
                self._shape(task.task_name), task.queue, header_names
            )
        return template

    def _shape(self, task_name: str) -> TaskMessageShape:
        shape = self.shapes.get(task_name)
        if shape is None:
            shape = self.shapes[task_name] = TaskMessageShape(self.amqp, task_name, self.origin)
        return shape

    def publish(self, batch: Sequence[PreparedMessage]) -> dict[int, str]:
        by_queue: dict[str, list[int]] = defaultdict(list)
        for index, prepared in enumerate(batch):
            by_queue[self.key_prefix + prepared.queue].append(index)
        pipeline = self.client.pipeline(transaction=False)
        for queue, indexes in by_queue.items():
            # Workers BRPOP from the tail: LPUSH of a list keeps the batch's order.
            pipeline.lpush(queue, *(batch[index].payload for index in indexes))
        try:
            # Connection errors still raise; a command error (e.g. WRONGTYPE: the queue's name
            # holds another kind of key) comes back in place and fails only that queue's rows.
            results = pipeline.execute(raise_on_error=False)
        except redis.RedisError as exc:
            raise PublishError(f"broker did not take the batch: {exc}") from exc
        for result in results:
            if isinstance(result, redis.ResponseError) and str(result).startswith(
                SERVER_STATE_ERRORS
            ):
                raise PublishError(f"broker did not take the batch: {result}")
        return {
            index: f"broker refused the message for queue {queue!r}: {result}"
            for (queue, indexes), result in zip(by_queue.items(), results, strict=True)
            if isinstance(result, redis.ResponseError)
            for index in indexes
        }

    def backlog(self, queues: Sequence[str]) -> dict[str, int]:
        pipeline = self.client.pipeline(transaction=False)
        for queue in queues:
            pipeline.llen(self.key_prefix + queue)
        try:
            lengths = pipeline.execute(raise_on_error=False)
        except redis.RedisError as exc:
            raise PublishError(f"broker did not answer the queues' lengths: {exc}") from exc
        # A key of another type (WRONGTYPE) holds no message of ours: publishing there fails
        # that queue's rows on its own.
        return {
            queue: length if isinstance(length, int) else 0
            for queue, length in zip(queues, lengths, strict=True)
        }

    def close(self) -> None:
        self.client.close()


def sentinel_master(broker_url: str, options: dict[str, Any], connection: dict[str, Any]) -> Any:
    """A client of the master that the Sentinels of a kombu `sentinel://h1:p1;sentinel://h2:p2`
    URL name for the transport option `master_name`, as kombu's Sentinel transport reads them:
    the database and credentials from the first URL. A new connection asks the Sentinels again,
    so after a failover the next batch goes to the new master."""
    urls = [urlsplit(part) for part in broker_url.split(";") if part]
    if "master_name" not in options:
        raise ValueError("a sentinel:// broker needs the transport option 'master_name'")
    sentinels = Sentinel(
        [(url.hostname or "127.0.0.1", url.port or 26379) for url in urls],
        sentinel_kwargs={
            "socket_timeout": connection["socket_timeout"],
            "socket_connect_timeout": connection["socket_connect_timeout"],
            **(options.get("sentinel_kwargs") or {}),
        },
    )
    first = urls[0]
    return sentinels.master_for(
        options["master_name"],
        db=int(first.path.strip("/") or 0),
        username=first.username or None,
        password=first.password or None,
        **connection,
    )
