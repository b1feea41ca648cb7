"""A worker killed mid-handler: the message comes back and the user-visible effect happens once."""

import time

import pytest
from django.db import connection

from scheduling.delivery.sweep.run import sweep
from tests.conftest import start_worker, stop_process, wait_for
from tests.faults.checker import check
from tests.faults.conftest import fallen_due, insert_pings, published_ids
from tests.testapp.models import PingEffect, ScheduledPing

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

VISIBILITY_TIMEOUT = 5.0
SLOW_HANDLER = 3.0


def test_a_worker_killed_mid_handler_still_has_the_effect_happen_once(
    subprocess_env, broker, fault_report
):
    with connection.cursor() as cursor:
        # Due first, so the first worker takes it first; its handler sleeps inside handle_once.
        insert_pings(cursor, 1, due="now() - interval '10 minutes'", name=f"slow:{SLOW_HANDLER}")
        insert_pings(cursor, 50)
    assert sweep(ScheduledPing).delivered == 51
    published = published_ids(broker)
    env = {
        **subprocess_env,
        "TEST_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT),
        "PGAPPNAME": "fault-worker",
    }

    first = start_worker(env, "testapp", "fault-worker-1")
    second = None
    try:
        wait_for(_slow_handler_running, timeout=60, interval=0.05)
        assert PingEffect.objects.filter(ping__name__startswith="slow:").count() == 0
        first.kill()
        first.wait()
        killed_at = time.monotonic()
        # Another worker: the killed one's unacked messages come back to it.
        second = start_worker(env, "testapp", "fault-worker-2")
        wait_for(lambda: PingEffect.objects.count() >= 51, timeout=120, interval=0.1)
        redelivered_after = time.monotonic() - killed_at
        wait_for(lambda: _nothing_unacked(broker), timeout=60, interval=0.2)
    finally:
        stop_process(first)
        if second is not None:
            stop_process(second)

    consumed = list(PingEffect.objects.values_list("event_id", flat=True))
    with connection.cursor() as cursor:
        verdict = check(fallen_due(cursor), published, consumed)
    fault_report(
        verdict, visibility_timeout=VISIBILITY_TIMEOUT, effect_after_kill=redelivered_after
    )
    assert verdict.clean, verdict.summary()
    assert ScheduledPing.objects.filter(handled_at__isnull=True).count() == 0


def _slow_handler_running() -> bool:
    # Only the slow handler keeps a transaction open for more than a second.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM pg_stat_activity WHERE application_name = 'fault-worker'"
            " AND xact_start < statement_timestamp() - interval '1 second'"
        )
        return cursor.fetchone() is not None


def _nothing_unacked(broker) -> bool:
    return broker.llen("testapp") == 0 and not broker.hlen("unacked")
