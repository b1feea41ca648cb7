"""The machine's RabbitMQ for the tests that publish through it (.ci/test starts it)."""

import os
import socket
from typing import Any

import pytest
from celery import Celery

AMQP_URL = os.environ.get("TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672//")


def amqp_app() -> Celery:
    app = Celery("amqp-test", broker=AMQP_URL, set_as_current=False)
    app.conf.broker_transport_options = {"confirm_publish": True}
    return app


def use_rabbitmq(monkeypatch: pytest.MonkeyPatch, *empty_queues: str) -> Celery:
    """Point every process this test starts at RabbitMQ, with `empty_queues` deleted first."""
    try:
        socket.create_connection(("127.0.0.1", 5672), timeout=2).close()
    except OSError:
        pytest.fail("RabbitMQ is not running on 127.0.0.1:5672 (.ci/test starts it)")
    # Celery's broker_url prefers this variable over the app's own configuration.
    monkeypatch.setenv("CELERY_BROKER_URL", AMQP_URL)
    app = amqp_app()
    with app.connection_for_write() as conn:
        channel: Any = conn.default_channel
        for name in empty_queues:
            channel.queue_delete(name)
    return app
