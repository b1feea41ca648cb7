"""A broker that is down or silent makes the sweep fail fast; the rows stay pending."""

import socket
import time
from collections.abc import Iterator

import pytest
from celery import current_app

from scheduling.delivery.publishing.redis_batch import RedisBatchPublisher
from scheduling.delivery.sweep.run import sweep
from scheduling.rows.models import ScheduledEvent
from tests.conftest import queued_task_ids
from tests.factories import make_due_pings
from tests.testapp.models import ScheduledPing

pytestmark = pytest.mark.django_db

Status = ScheduledEvent.Status


@pytest.fixture
def silent_broker() -> Iterator[str]:
    """A TCP port that accepts connections and never answers: a hung broker."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    yield f"redis://127.0.0.1:{server.getsockname()[1]}/0"
    server.close()


@pytest.fixture
def closed_port() -> str:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return f"redis://127.0.0.1:{port}/0"


@pytest.mark.parametrize("broker_url", ["silent_broker", "closed_port"])
def test_an_unreachable_broker_fails_the_sweep_fast_and_keeps_rows_pending(
    request, broker_url, broker
):
    pks = make_due_pings(30)
    publisher = RedisBatchPublisher(current_app, request.getfixturevalue(broker_url), timeout=1.0)

    started = time.monotonic()
    result = sweep(ScheduledPing, publisher=publisher)
    elapsed = time.monotonic() - started

    assert elapsed < 10, "a dead broker must not hang the sweep"
    assert result.delivered == 0
    assert "broker did not take the batch" in result.error
    rows = ScheduledPing.objects.filter(pk__in=pks)
    assert rows.filter(status=Status.PENDING).count() == 30
    assert all("broker did not take the batch" in row.last_error for row in rows)
    assert {row.attempts for row in rows} == {0}

    recovered = sweep(ScheduledPing)

    assert recovered.delivered == 30
    assert len(queued_task_ids(broker, "testapp")) == 30
    assert set(rows.values_list("last_error", flat=True)) == {""}
