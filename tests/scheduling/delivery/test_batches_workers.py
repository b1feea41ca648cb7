"""Batches handled by real Celery workers, one of them killed (SIGKILL) mid-batch: every row ends
handled once (at-least-once), or each effect happens at most once and only the row whose effect
was under way is left for a person (at-most-once)."""

from collections import Counter

import pytest
from django.db import connection
from django.db.models import Q

from scheduling.delivery.sweep.run import sweep
from tests.conftest import message_events, queued_messages, start_worker, stop_process, wait_for
from tests.scheduling.delivery.test_batches import make_once_rows, make_pings
from tests.testapp.models import PingEffect, ScheduledOnce, ScheduledPing

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

BATCH = 5
VISIBILITY_TIMEOUT = 5.0  # seconds before the killed worker's unacked message comes back
SLOW = 4.0  # the handler sleeps this long on a "slow:" ping: long enough to be killed there


@pytest.fixture
def env(subprocess_env):
    return {
        **subprocess_env,
        "TEST_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT),
        "PGAPPNAME": "batch-worker",
    }


def kill_mid_batch(env, running, done):
    """A worker killed once `running()`; a second one then works until `done()`."""
    first = start_worker(env, "testapp", "batch-worker-1")
    second = None
    try:
        wait_for(running, timeout=60, interval=0.05)
        first.kill()
        first.wait()
        second = start_worker(env, "testapp", "batch-worker-2")
        wait_for(done, timeout=120, interval=0.2)
    finally:
        stop_process(first)
        if second is not None:
            stop_process(second)


def slow_effect_running():
    # Only a handler sleeping in its effect keeps a transaction open for more than a second.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM pg_stat_activity WHERE application_name = 'batch-worker'"
            " AND xact_start < statement_timestamp() - interval '1 second'"
        )
        return cursor.fetchone() is not None


# The declarative handler (testapp.declared_*) is the same whatever the batch size: each test runs
# it in single messages (0) and in batches, beside the lower-level handle_batch handler.
HANDLERS = [
    pytest.param(BATCH, "testapp.handle_{}_batch", id="handle_batch"),
    pytest.param(BATCH, "testapp.declared_{}", id="declared-batch"),
    pytest.param(0, "testapp.declared_{}", id="declared-single"),
]


@pytest.mark.parametrize(("size", "task"), HANDLERS)
def test_a_worker_killed_mid_batch_leaves_every_row_handled_once(
    monkeypatch, env, broker, size, task
):
    monkeypatch.setattr(ScheduledPing, "handler_batch_size", size)
    monkeypatch.setattr(ScheduledPing, "handler_task", task.format("ping"))
    # The first batch sleeps in its third row's effect, that row locked, two effects committed.
    make_pings(ScheduledPing, ["a", "b", f"slow:{SLOW}", "c", "d", *(f"e{i}" for i in range(7))])
    assert sweep(ScheduledPing).delivered == 12
    published = [e["id"] for m in queued_messages(broker, "testapp") for e in message_events(m)]

    def all_handled():
        return not ScheduledPing.objects.filter(handled_at__isnull=True).exists()

    # The redelivered batch sleeps again, and is left to finish.
    kill_mid_batch(env, slow_effect_running, all_handled)

    effects = Counter(PingEffect.objects.values_list("event_id", flat=True))
    assert sorted(effects) == sorted(published)
    # Each row commits with its effect (issue 40; the whole batch's transaction before): the
    # killed batch's first two stay handled, the slow one's rolled back and ran again.
    assert set(effects.values()) == {1}


@pytest.mark.parametrize(("size", "task"), HANDLERS)
def test_an_at_most_once_worker_killed_mid_batch_sends_each_once_and_leaves_one_row(
    monkeypatch, env, broker, size, task
):
    monkeypatch.setattr(ScheduledOnce, "handler_batch_size", size)
    monkeypatch.setattr(ScheduledOnce, "handler_task", task.format("once_ping"))
    make_once_rows(["a", "b", f"slow:{SLOW}", "c", "d", *(f"e{i}" for i in range(7))])
    assert sweep(ScheduledOnce).delivered == 12

    def in_flight():
        return ScheduledOnce.objects.filter(
            effect_started_at__isnull=False, handled_at__isnull=True
        )

    def slow_effect_begun():
        return in_flight().filter(ping__name__startswith="slow:").exists() and (
            slow_effect_running()
        )

    def rest_handled():
        return (
            ScheduledOnce.objects.filter(~Q(ping__name__startswith="slow:"))
            .filter(handled_at__isnull=True)
            .count()
            == 0
        )

    kill_mid_batch(env, slow_effect_begun, rest_handled)

    effects = Counter(PingEffect.objects.values_list("event_id", flat=True))
    assert set(effects.values()) == {1}  # every effect at most once
    assert len(effects) == 12  # the slow one's effect had happened before the kill
    (left,) = in_flight()  # for a person: only the row whose effect was under way
    assert left.ping.name.startswith("slow:")
