"""Redis, as the lock store, down: sweeps go ahead without the lock, say so, and double nothing."""

import pytest
from django.db import connection

from tests.conftest import delivered_by, wait_for
from tests.faults.checker import check
from tests.faults.conftest import fallen_due, insert_pings, published_ids, scale, statuses, sweeper

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

WITHOUT_LOCK = "sweeping scheduling:sweep:testapp.scheduledping:0 without the lock"


def test_sweepers_with_the_lock_store_down_proceed_without_it_and_publish_each_row_once(
    subprocess_env, dedicated_redis, broker, fault_report
):
    with connection.cursor() as cursor:
        insert_pings(cursor, scale() // 2)
    env = {**subprocess_env, "REDIS_URL": dedicated_redis.url, "SCHEDULING_BATCH_SIZE": "200"}
    dedicated_redis.stop(save=False)

    # One slot: with the lock up, two of these would be locked out. Without it, all three run.
    sweepers = [sweeper(env) for _ in range(3)]
    outputs = [process.communicate(timeout=300)[0] for process in sweepers]

    assert all(process.returncode == 0 for process in sweepers), outputs
    assert all(WITHOUT_LOCK in output for output in outputs), outputs
    assert not any("locked out" in output for output in outputs)
    with connection.cursor() as cursor:
        verdict = check(fallen_due(cursor), published_ids(broker))
        assert statuses(cursor) == {"delivered": scale() // 2}
    per_sweeper = [delivered_by(output) for output in outputs]
    fault_report(verdict, sweepers_without_lock=3, delivered_per_sweeper=per_sweeper)
    assert verdict.clean, verdict.summary()


def test_a_lock_store_lost_mid_sweep_stops_that_sweep_and_the_next_goes_on_without_it(
    subprocess_env, dedicated_redis, broker, fault_report
):
    with connection.cursor() as cursor:
        insert_pings(cursor, scale() // 2)
    env = {**subprocess_env, "REDIS_URL": dedicated_redis.url, "SCHEDULING_BATCH_SIZE": "200"}

    process = sweeper(env)
    wait_for(lambda: broker.llen("testapp") > 0 or process.poll() is not None, interval=0.005)
    dedicated_redis.stop(save=False)
    output = process.communicate(timeout=300)[0]

    assert process.returncode == 0, output
    assert "lost the lock scheduling:sweep:testapp.scheduledping:0" in output
    assert WITHOUT_LOCK in output
    with connection.cursor() as cursor:
        verdict = check(fallen_due(cursor), published_ids(broker))
        assert statuses(cursor) == {"delivered": scale() // 2}
    fault_report(verdict)
    assert verdict.clean, verdict.summary()
