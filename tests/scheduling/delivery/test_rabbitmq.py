"""RabbitMQ as the broker, by URL: kombu's producer with publisher confirms, a real worker."""

import pytest
from celery import Celery

from scheduling.delivery.publishing import make_publisher
from scheduling.delivery.publishing.kombu_producer import KombuPublisher
from scheduling.delivery.sweep.run import sweep
from tests.amqp import AMQP_URL, use_rabbitmq
from tests.conftest import start_worker, stop_process, wait_for
from tests.factories import make_due_pings
from tests.testapp.models import PingEffect, ScheduledPing

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def rabbitmq(monkeypatch) -> Celery:
    return use_rabbitmq(monkeypatch, "testapp")  # Celery declares it as it needs


def test_the_sweep_publishes_to_rabbitmq_and_a_worker_consumes(rabbitmq, subprocess_env):
    pks = make_due_pings(40)
    publisher = make_publisher(timeout=5.0, app=rabbitmq)
    assert isinstance(publisher, KombuPublisher)

    result = sweep(ScheduledPing, publisher=publisher)
    publisher.close()
    assert result.delivered == 40

    worker = start_worker(
        {**subprocess_env, "CELERY_BROKER_URL": AMQP_URL}, "testapp", "test-worker-amqp"
    )
    try:
        wait_for(lambda: PingEffect.objects.count() >= 40)
    finally:
        stop_process(worker)
    assert sorted(PingEffect.objects.values_list("event_id", flat=True)) == sorted(
        f"testapp.scheduledping:{pk}:v1" for pk in pks
    )


def test_an_unreachable_rabbitmq_fails_fast_and_keeps_rows_pending(monkeypatch):
    monkeypatch.setenv("CELERY_BROKER_URL", "amqp://guest:guest@127.0.0.1:1//")
    make_due_pings(5)
    app = Celery("amqp-down", broker="amqp://guest:guest@127.0.0.1:1//", set_as_current=False)

    result = sweep(ScheduledPing, publisher=KombuPublisher(app, timeout=1.0))

    assert result.delivered == 0
    assert "broker did not take the batch" in result.error
    assert ScheduledPing.objects.pending().count() == 5
