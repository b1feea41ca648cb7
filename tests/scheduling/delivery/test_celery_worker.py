"""A stock Celery worker (a real subprocess) consumes what the sweep publishes."""

import os

import pytest
from celery import current_app

from scheduling.delivery.sweep.run import sweep
from tests.conftest import start_worker, stop_process, wait_for
from tests.factories import make_due_pings
from tests.testapp.models import PingEffect, ScheduledPing

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_a_real_worker_handles_every_published_event_once(celery_worker_process, broker):
    pks = make_due_pings(50)

    assert sweep(ScheduledPing).delivered == 50

    wait_for(lambda: PingEffect.objects.count() >= 50 and broker.llen("testapp") == 0)
    handled = ScheduledPing.objects.filter(pk__in=pks, handled_at__isnull=False).count()
    assert handled == 50
    assert sorted(PingEffect.objects.values_list("event_id", flat=True)) == sorted(
        f"testapp.scheduledping:{pk}:v1" for pk in pks
    )


def test_an_event_published_twice_has_its_effect_once(celery_worker_process, broker):
    pks = make_due_pings(20)
    sweep(ScheduledPing)
    # Simulate at-least-once publishing: the same messages again, as after a crash before commit.
    for raw in broker.lrange("testapp", 0, -1):
        broker.lpush("testapp", raw)

    wait_for(lambda: broker.llen("testapp") == 0 and PingEffect.objects.count() >= 20)
    wait_for(lambda: _worker_saw(celery_worker_process, 40), timeout=30)

    effects = list(PingEffect.objects.values_list("event_id", flat=True))
    assert len(effects) == len(set(effects)) == len(pks)


def _worker_saw(process, count: int) -> bool:
    from tests.conftest import ROOT

    log = (ROOT / ".run" / "test-worker.log").read_text()
    return log.count("succeeded in") >= count


def test_a_plain_worker_consumes_every_project_queue(subprocess_env, broker):
    # No -Q: the sweep task on the scheduling queue and the events on the domain's queue.
    pks = make_due_pings(10)
    worker = start_worker(subprocess_env, None, f"plain-worker-{os.environ['TEST_REDIS_PAIR']}")
    try:
        current_app.send_task(
            "scheduling.sweep", args=["testapp.ScheduledPing"], queue="scheduling"
        )
        wait_for(lambda: PingEffect.objects.count() >= len(pks), timeout=60)
    finally:
        stop_process(worker)

    assert ScheduledPing.objects.filter(pk__in=pks, handled_at__isnull=False).count() == 10
