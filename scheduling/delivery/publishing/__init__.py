"""Publishing a batch of Celery task messages on one broker connection.

Why not `send_task` per row: Celery's `send_task` spends most of its time on per-message
routing, signals and envelope work, and kombu's `Producer.batch()` only part of it (figures in
docs/benchmarks.md). So with Redis as the broker we build the standard protocol-2 message from
the shape Celery's own `app.amqp.as_task_v2` gives each task, wrap it in kombu's Redis envelope
and push the whole batch in one round trip (`redis_batch`); a stock Celery worker consumes it
unchanged. Every other broker (RabbitMQ with publisher confirms, the embedded filesystem broker)
goes through kombu's producer on one connection (`kombu_producer`).
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from celery import Celery, current_app

from scheduling.delivery.publishing.base import PreparedMessage, Publisher, PublishError
from scheduling.delivery.publishing.kombu_producer import KombuPublisher
from scheduling.delivery.publishing.redis_batch import RedisBatchPublisher

__all__ = ["PreparedMessage", "PublishError", "Publisher", "make_publisher", "shared_publisher"]

REDIS_SCHEMES = ("redis", "rediss", "unix", "sentinel")

_shared: dict[tuple[int, str, float], Publisher] = {}


def shared_publisher(timeout: float) -> Publisher:
    """One publisher per process and broker: a beat tick every second must not reconnect.

    Keyed by pid so that a forked worker process never shares its parent's sockets.
    """
    key = (os.getpid(), current_app.conf.broker_url or "", timeout)
    if key not in _shared:
        _shared[key] = make_publisher(timeout)
    return _shared[key]


def make_publisher(timeout: float, app: Celery | None = None) -> Publisher:
    app = app or current_app
    broker_url = app.conf.broker_url or ""
    if urlsplit(broker_url).scheme in REDIS_SCHEMES:
        return RedisBatchPublisher(app, broker_url, timeout)
    return KombuPublisher(app, timeout)
